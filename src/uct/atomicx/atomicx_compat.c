/**
 * atomicx: the glue between atomicx and the internal UCT API of the UCX
 * release it is built against (see atomicx_compat.h): the ops tables whose
 * members differ, and the newer entry points UCP calls with no fallback.
 */

#include "atomicx.h"

#include <ucs/debug/log.h>
#include <dlfcn.h>
#include <string.h>


uct_md_ops_t uct_atomicx_md_ops = {
    .close                  = uct_atomicx_md_close,
    .query                  = uct_atomicx_md_query,
    .mem_alloc              = UCT_ATOMICX_FUNC(uct_md_mem_alloc_func_t,
                                      ucs_empty_function_return_unsupported),
    .mem_free               = UCT_ATOMICX_FUNC(uct_md_mem_free_func_t,
                                      ucs_empty_function_return_unsupported),
    .mem_advise             = UCT_ATOMICX_FUNC(uct_md_mem_advise_func_t,
                                      ucs_empty_function_return_unsupported),
    .mem_reg                = uct_atomicx_mem_reg,
    .mem_dereg              = uct_atomicx_mem_dereg,
    .mem_query              = UCT_ATOMICX_FUNC(uct_md_mem_query_func_t,
                                      ucs_empty_function_return_unsupported),
    .mkey_pack              = uct_atomicx_mkey_pack,
#if ATOMICX_UCT_MD_OPS_IS_SOCKADDR_ACCESSIBLE
    .is_sockaddr_accessible = UCT_ATOMICX_FUNC(uct_md_is_sockaddr_accessible_func_t,
                                      ucs_empty_function_return_zero_int),
#endif
#if ATOMICX_UCT_MD_OPS_MEM_ATTACH
    .mem_attach             = UCT_ATOMICX_FUNC(uct_md_mem_attach_func_t,
                                      ucs_empty_function_return_unsupported),
#endif
#if ATOMICX_UCT_MD_OPS_MEM_ELEM_PACK
    .mem_elem_pack          = UCT_ATOMICX_FUNC(uct_md_mem_elem_pack_func_t,
                                      ucs_empty_function_return_unsupported),
#endif
    .detect_memory_type     = UCT_ATOMICX_FUNC(uct_md_detect_memory_type_func_t,
                                      ucs_empty_function_return_unsupported)
};


#if ATOMICX_UCT_BASE_IFACE_INTERNAL_OPS

/* UCX 1.13: a shared table of defaults; UCP uses the public ops */
uct_iface_internal_ops_t *uct_atomicx_iface_internal_ops =
        &uct_base_iface_internal_ops;

#else

#if ATOMICX_UCT_EP_CONNECT_TO_EP_V2
static ucs_status_t
uct_atomicx_ep_connect_to_ep_v2(uct_ep_h tl_ep,
                                const uct_device_addr_t *dev_addr,
                                const uct_ep_addr_t *ep_addr,
                                const uct_ep_connect_to_ep_params_t *params)
{
    /* Lengths the peer's address claims: shorter than ours is malformed */
    if (((params->field_mask &
          UCT_EP_CONNECT_TO_EP_PARAM_FIELD_DEVICE_ADDR_LENGTH) &&
         (params->device_addr_length < sizeof(uct_atomicx_dev_addr_t))) ||
        ((params->field_mask &
          UCT_EP_CONNECT_TO_EP_PARAM_FIELD_EP_ADDR_LENGTH) &&
         (params->ep_addr_length < sizeof(uct_atomicx_ep_addr_t)))) {
        ucs_error("atomicx: peer address too short (device %zu endpoint %zu "
                  "bytes)", params->device_addr_length,
                  params->ep_addr_length);
        return UCS_ERR_INVALID_ADDR;
    }

    return uct_atomicx_ep_connect_to_ep(tl_ep, dev_addr, ep_addr);
}
#endif


#if ATOMICX_UCT_IFACE_IS_REACHABLE_V2
static int
uct_atomicx_iface_is_reachable_v2(const uct_iface_h tl_iface,
                                  const uct_iface_is_reachable_params_t *params)
{
    if (!uct_iface_is_reachable_params_valid(
                params, UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR)) {
        return 0;
    }

    if (!uct_atomicx_iface_is_reachable(tl_iface, params->device_addr,
                                        NULL)) {
        uct_iface_fill_info_str_buf(params, "different link layer or subnet");
        return 0;
    }

    return uct_iface_scope_is_reachable(tl_iface, params);
}
#endif


#if ATOMICX_UCT_EP_IS_CONNECTED
/* Connected to exactly that peer endpoint: its device and its QP */
static int uct_atomicx_ep_is_connected(const uct_ep_h tl_ep,
                                       const uct_ep_is_connected_params_t *params)
{
    uct_atomicx_ep_t *ep = ucs_derived_of(tl_ep, uct_atomicx_ep_t);
    uct_atomicx_dev_addr_t dev_addr;
    uct_atomicx_ep_addr_t ep_addr;

    if (!ep->connected) {
        return 0;
    }

    if (params->field_mask & UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR) {
        memcpy(&dev_addr, params->device_addr, sizeof(dev_addr));
        if (memcmp(&dev_addr.gid, &ep->remote_dev.gid, sizeof(dev_addr.gid)) ||
            (dev_addr.lid != ep->remote_dev.lid)) {
            return 0;
        }
    }

    if (params->field_mask & UCT_EP_IS_CONNECTED_FIELD_EP_ADDR) {
        memcpy(&ep_addr, params->ep_addr, sizeof(ep_addr));
        if (ep_addr.qp_num != ep->remote_qp_num) {
            return 0;
        }
    }

    return 1;
}
#endif


static uct_iface_internal_ops_t uct_atomicx_internal_ops = {
#if ATOMICX_UCT_IFACE_QUERY_V2
    .iface_query_v2        = uct_iface_base_query_v2,
#endif
    .iface_estimate_perf   = uct_base_iface_estimate_perf,
    .iface_vfs_refresh     = UCT_ATOMICX_FUNC(uct_iface_vfs_refresh_func_t, ucs_empty_function),
    .ep_query              = UCT_ATOMICX_FUNC(uct_ep_query_func_t,
                                     ucs_empty_function_return_unsupported),
    .ep_invalidate         = UCT_ATOMICX_FUNC(uct_ep_invalidate_func_t,
                                     ucs_empty_function_return_unsupported),
#if ATOMICX_UCT_EP_CONNECT_TO_EP_V2
    .ep_connect_to_ep_v2   = uct_atomicx_ep_connect_to_ep_v2,
#endif
#if ATOMICX_UCT_IFACE_IS_REACHABLE_V2
    .iface_is_reachable_v2 = uct_atomicx_iface_is_reachable_v2,
#endif
#if ATOMICX_UCT_EP_IS_CONNECTED
    .ep_is_connected       = uct_atomicx_ep_is_connected,
#endif
#if ATOMICX_UCT_EP_GET_DEVICE_EP
    .ep_get_device_ep      = UCT_ATOMICX_FUNC(uct_ep_get_device_ep_func_t,
                                     ucs_empty_function_return_unsupported),
#endif
#if ATOMICX_UCT_EP_PUT_SGL_ZCOPY
    .ep_put_sgl_zcopy      = UCT_ATOMICX_FUNC(uct_ep_put_sgl_zcopy_func_t,
                                     ucs_empty_function_return_unsupported),
#endif
};

uct_iface_internal_ops_t *uct_atomicx_iface_internal_ops =
        &uct_atomicx_internal_ops;

#endif /* ATOMICX_UCT_BASE_IFACE_INTERNAL_OPS */


#if ATOMICX_UCT_COMPONENT_RKEY_COMPARE
ucs_status_t uct_atomicx_rkey_compare(uct_component_t *component,
                                      uct_rkey_t rkey1, uct_rkey_t rkey2,
                                      const uct_rkey_compare_params_t *params,
                                      int *result)
{
    if ((params->field_mask != 0) || (result == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }

    *result = (rkey1 > rkey2) ? 1 : (rkey1 < rkey2) ? -1 : 0;
    return UCS_OK;
}
#endif


ucs_status_t uct_atomicx_version_check(void)
{
    void (*get_version)(unsigned*, unsigned*, unsigned*);
    unsigned major, minor, release;

    /* libucp, when the process has it, reports the running release */
    *(void**)&get_version = dlsym(RTLD_DEFAULT, "ucp_get_version");
    if (get_version == NULL) {
        return UCS_OK;
    }

    get_version(&major, &minor, &release);
    if ((major != UCT_VERNO_MAJOR) || (minor != UCT_VERNO_MINOR)) {
        ucs_error("atomicx: built for UCX %d.%d, running with UCX %u.%u.%u; "
                  "not registering the atomicx transport", UCT_VERNO_MAJOR,
                  UCT_VERNO_MINOR, major, minor, release);
        return UCS_ERR_UNSUPPORTED;
    }

    return UCS_OK;
}
