/**
 * atomicx: registration with libuct, guarded against an ABI mismatch.
 *
 * It registers itself from a constructor: UCX >= 1.22 runs it when it loads
 * the library as a module (from its module directory or UCX_PLUGIN_PATH);
 * UCX 1.13 loads only the modules named at its build time, so there it runs
 * when the library is linked or preloaded.
 */

#include "atomicx.h"

#include <ucs/debug/log.h>
#include <string.h>


static int uct_atomicx_registered = 0;


ucs_status_t uct_atomicx_abi_check(size_t iface_class_size,
                                   size_t ep_class_size)
{
    /* Both sizes depend on UCX's build configuration (ENABLE_STATS, ...):
     * a mismatch means this library was built against another UCX */
    if ((iface_class_size != sizeof(uct_base_iface_t)) ||
        (ep_class_size != sizeof(uct_base_ep_t))) {
        ucs_error("atomicx: built for another UCX (uct_base_iface_t %zu/%zu, "
                  "uct_base_ep_t %zu/%zu bytes in libuct/atomicx); not "
                  "registering the atomicx transport", iface_class_size,
                  sizeof(uct_base_iface_t), ep_class_size,
                  sizeof(uct_base_ep_t));
        return UCS_ERR_UNSUPPORTED;
    }

    return UCS_OK;
}


int uct_atomicx_is_registered(void)
{
    return uct_atomicx_registered;
}


/* Another copy of atomicx already registered: linked and also found in a
 * module directory, preloaded and also a module, ... */
static int uct_atomicx_other_copy_registered(void)
{
    uct_component_t *component;

    ucs_list_for_each(component, &uct_components_list, list) {
        if (!strcmp(component->name, UCT_ATOMICX_NAME)) {
            return 1;
        }
    }

    return 0;
}


static void UCS_F_CTOR uct_atomicx_init(void)
{
    if ((uct_atomicx_version_check() != UCS_OK) ||
        (uct_atomicx_abi_check(uct_base_iface_t_class.size,
                               uct_base_ep_t_class.size) != UCS_OK)) {
        return;
    }

    if (uct_atomicx_other_copy_registered()) {
        ucs_debug("atomicx: another copy of the transport is registered "
                  "already; this one stays unregistered");
        return;
    }

    uct_component_register(&uct_atomicx_component);
    uct_tl_register(&uct_atomicx_component, &uct_atomicx_tl);
    uct_atomicx_registered = 1;
}


static void UCS_F_DTOR uct_atomicx_cleanup(void)
{
    uct_component_t *component;

    if (!uct_atomicx_registered) {
        return;
    }

    uct_tl_unregister(&uct_atomicx_tl);
    ucs_list_del(&uct_atomicx_tl.list);
    uct_component_unregister(&uct_atomicx_component);

    /* UCX 1.13.1's uct_component_unregister() leaves the component in
     * uct_components_list, which would then point into unmapped memory.
     * Unlink it here unless a fixed libuct already did */
    ucs_list_for_each(component, &uct_components_list, list) {
        if (component == &uct_atomicx_component) {
            ucs_list_del(&uct_atomicx_component.list);
            break;
        }
    }

    uct_atomicx_registered = 0;
}
