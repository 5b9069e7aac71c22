/**
 * atomicx: memory domain (one per verbs device with atomics) and component.
 */

#include "atomicx.h"

#include <ucs/sys/string.h>
#include <ucs/debug/log.h>
#include <string.h>


ucs_config_field_t uct_atomicx_md_config_table[] = {
    {"", "", NULL, ucs_offsetof(uct_atomicx_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {NULL}
};


/* Remote atomics need remote read/write too: a fetched value is a read */
#define UCT_ATOMICX_MR_ACCESS \
    (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | \
     IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)


static int uct_atomicx_device_usable(struct ibv_device *device)
{
    struct ibv_device_attr attr;
    struct ibv_context *ctx;
    int ret;

    ctx = ibv_open_device(device);
    if (ctx == NULL) {
        ucs_debug("ibv_open_device(%s) failed: %m",
                  ibv_get_device_name(device));
        return 0;
    }

    ret = ibv_query_device(ctx, &attr);
    ibv_close_device(ctx);
    if (ret != 0) {
        ucs_debug("ibv_query_device(%s) failed: %m",
                  ibv_get_device_name(device));
        return 0;
    }

    ucs_debug("device %s atomic_cap %d", ibv_get_device_name(device),
              attr.atomic_cap);
    return attr.atomic_cap != IBV_ATOMIC_NONE;
}


/*
 * Does UCX_TLS ask for atomicx by name? Then a user who finds atomicx without
 * resources is told why at UCX's default log level (WARN), once per process;
 * otherwise (UCX_TLS unset, "all", "^atomicx", ...) a host without a device
 * is normal and only debug logs say so.
 */
static int uct_atomicx_tls_named(void)
{
    const char *tls = getenv("UCX_TLS");
    size_t len      = strlen(UCT_ATOMICX_NAME);
    const char *p;

    if ((tls == NULL) || (tls[0] == '^')) {
        return 0;
    }
    for (p = tls; p != NULL; p = strchr(p, ',')) {
        p += (*p == ',');
        if (!strncmp(p, UCT_ATOMICX_NAME, len) &&
            ((p[len] == '\0') || (p[len] == ',') || (p[len] == ':'))) {
            return 1;
        }
    }
    return 0;
}

/* The one line that says why atomicx has no resource. */
static void uct_atomicx_warn_no_resource(const char *why)
{
    static int warned = 0;

    if (!uct_atomicx_tls_named()) {
        ucs_debug("%s", why);
    } else if (!warned) {
        warned = 1;
        ucs_warn("%s", why);
    }
}


static ucs_status_t
uct_atomicx_query_md_resources(uct_component_t *component,
                               uct_md_resource_desc_t **resources_p,
                               unsigned *num_resources_p)
{
    uct_md_resource_desc_t *resources;
    struct ibv_device **devices;
    int i, num_devices;
    unsigned count;
    char names[128], why[256];
    size_t len;

    devices = ibv_get_device_list(&num_devices);
    if (devices == NULL) {
        ucs_debug("ibv_get_device_list() failed: %m");
        num_devices = 0;
    }

    resources = ucs_calloc(ucs_max(num_devices, 1), sizeof(*resources),
                           "atomicx md resources");
    if (resources == NULL) {
        if (devices != NULL) {
            ibv_free_device_list(devices);
        }
        return UCS_ERR_NO_MEMORY;
    }

    count    = 0;
    names[0] = '\0';
    for (i = 0, len = 0; i < num_devices; ++i) {
        if (len < sizeof(names)) {
            len += snprintf(names + len, sizeof(names) - len, "%s%s",
                            len ? " " : "", ibv_get_device_name(devices[i]));
        }
        if (uct_atomicx_device_usable(devices[i])) {
            ucs_snprintf_zero(resources[count].md_name,
                              sizeof(resources[count].md_name), "%s%s",
                              UCT_ATOMICX_MD_PREFIX,
                              ibv_get_device_name(devices[i]));
            ++count;
        }
    }

    if (devices != NULL) {
        ibv_free_device_list(devices);
    }

    if (count == 0) {
        ucs_free(resources);
        resources = NULL;
        if (num_devices == 0) {
            snprintf(why, sizeof(why), "atomicx is loaded but has no "
                     "device: no RDMA verbs device found");
        } else {
            snprintf(why, sizeof(why), "atomicx is loaded but has no "
                     "device: none of the %d verbs device(s) (%s) has "
                     "remote atomics (atomic_cap NONE)", num_devices, names);
        }
        uct_atomicx_warn_no_resource(why);
    }

    *resources_p     = resources;
    *num_resources_p = count;
    return UCS_OK;
}


void uct_atomicx_md_close(uct_md_h tl_md)
{
    uct_atomicx_md_t *md = ucs_derived_of(tl_md, uct_atomicx_md_t);

    ibv_dealloc_pd(md->pd);
    ibv_close_device(md->ctx);
    ucs_free(md);
}


ucs_status_t uct_atomicx_md_query(uct_md_h tl_md, uct_atomicx_md_attr_t *attr)
{
#if ATOMICX_UCT_MD_QUERY_V2
    uct_md_base_md_query(attr); /* every field its default */
    attr->reg_alignment                        = 1;
#else
    attr->cap.alloc_mem_types                  = 0;
    attr->cap.detect_mem_types                 = 0;
    attr->cap.max_alloc                        = 0;
#endif
    UCT_ATOMICX_MD_CAP(attr, flags)            = UCT_MD_FLAG_REG |
                                                 UCT_MD_FLAG_NEED_RKEY;
    UCT_ATOMICX_MD_CAP(attr, reg_mem_types)    =
            UCS_BIT(UCS_MEMORY_TYPE_HOST);
    UCT_ATOMICX_MD_CAP(attr, access_mem_types) =
            UCS_BIT(UCS_MEMORY_TYPE_HOST);
    UCT_ATOMICX_MD_CAP(attr, max_reg)          = ULONG_MAX;
    attr->rkey_packed_size                     = sizeof(uint32_t);
    /* ibv_reg_mr pins pages: a syscall plus a per-page cost */
    attr->reg_cost                             = ucs_linear_func_make(16e-6,
                                                                      0.06e-9);
    memset(&attr->local_cpus, 0xff, sizeof(attr->local_cpus));
    return UCS_OK;
}


ucs_status_t uct_atomicx_mem_reg(uct_md_h tl_md, void *address, size_t length,
                                 UCT_ATOMICX_MEM_REG_ARGS, uct_mem_h *memh_p)
{
    uct_atomicx_md_t *md = ucs_derived_of(tl_md, uct_atomicx_md_t);
    struct ibv_mr *mr;

    mr = ibv_reg_mr(md->pd, address, ucs_max(length, 1),
                    UCT_ATOMICX_MR_ACCESS);
    if (mr == NULL) {
        uct_md_log_mem_reg_error(UCT_ATOMICX_MEM_REG_FLAGS,
                                 "%s: ibv_reg_mr(address %p length %zu) "
                                 "failed: %m", md->dev_name, address, length);
        return UCS_ERR_IO_ERROR;
    }

    ucs_trace("%s: registered %p..%p lkey 0x%x rkey 0x%x", md->dev_name,
              address, UCS_PTR_BYTE_OFFSET(address, length), mr->lkey,
              mr->rkey);
    *memh_p = mr;
    return UCS_OK;
}


ucs_status_t
uct_atomicx_mem_dereg(uct_md_h tl_md, const uct_md_mem_dereg_params_t *params)
{
    struct ibv_mr *mr;

    UCT_MD_MEM_DEREG_CHECK_PARAMS(params, 0);

    mr = params->memh;
    if (ibv_dereg_mr(mr) != 0) {
        ucs_warn("ibv_dereg_mr(%p) failed: %m", mr);
        return UCS_ERR_IO_ERROR;
    }

    return UCS_OK;
}


ucs_status_t
uct_atomicx_mkey_pack(uct_md_h tl_md, uct_mem_h memh,
                      UCT_ATOMICX_MKEY_PACK_ARGS
                      const uct_md_mkey_pack_params_t *params,
                      void *rkey_buffer)
{
    const struct ibv_mr *mr = memh;
    uint32_t rkey           = mr->rkey;

    memcpy(rkey_buffer, &rkey, sizeof(rkey));
    return UCS_OK;
}


static ucs_status_t uct_atomicx_rkey_unpack(uct_component_t *component,
                                            const void *rkey_buffer,
                                            UCT_ATOMICX_RKEY_UNPACK_ARGS
                                            uct_rkey_t *rkey_p,
                                            void **handle_p)
{
    uint32_t rkey;

    memcpy(&rkey, rkey_buffer, sizeof(rkey));
    *rkey_p   = rkey;
    *handle_p = NULL;
    return UCS_OK;
}


static ucs_status_t uct_atomicx_md_open(uct_component_t *component,
                                        const char *md_name,
                                        const uct_md_config_t *config,
                                        uct_md_h *md_p)
{
    size_t prefix_len = strlen(UCT_ATOMICX_MD_PREFIX);
    struct ibv_device **devices, *device;
    uct_atomicx_md_t *md;
    ucs_status_t status;
    int i, num_devices;

    if (strncmp(md_name, UCT_ATOMICX_MD_PREFIX, prefix_len) != 0) {
        ucs_error("invalid atomicx md name %s", md_name);
        return UCS_ERR_NO_DEVICE;
    }

    devices = ibv_get_device_list(&num_devices);
    if (devices == NULL) {
        ucs_error("ibv_get_device_list() failed: %m");
        return UCS_ERR_NO_DEVICE;
    }

    device = NULL;
    for (i = 0; i < num_devices; ++i) {
        if (!strcmp(ibv_get_device_name(devices[i]), md_name + prefix_len)) {
            device = devices[i];
        }
    }

    if (device == NULL) {
        ucs_error("verbs device %s not found", md_name + prefix_len);
        status = UCS_ERR_NO_DEVICE;
        goto err_free_list;
    }

    md = ucs_calloc(1, sizeof(*md), "atomicx md");
    if (md == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto err_free_list;
    }

    md->ctx = ibv_open_device(device);
    if (md->ctx == NULL) {
        ucs_error("ibv_open_device(%s) failed: %m", md_name + prefix_len);
        status = UCS_ERR_IO_ERROR;
        goto err_free_md;
    }

    if (ibv_query_device(md->ctx, &md->dev_attr) != 0) {
        ucs_error("ibv_query_device(%s) failed: %m", md_name + prefix_len);
        status = UCS_ERR_IO_ERROR;
        goto err_close;
    }

    md->pd = ibv_alloc_pd(md->ctx);
    if (md->pd == NULL) {
        ucs_error("ibv_alloc_pd(%s) failed: %m", md_name + prefix_len);
        status = UCS_ERR_IO_ERROR;
        goto err_close;
    }

    ucs_strncpy_zero(md->dev_name, md_name + prefix_len,
                     sizeof(md->dev_name));
    md->super.ops       = &uct_atomicx_md_ops;
    md->super.component = &uct_atomicx_component;
    ibv_free_device_list(devices);

    ucs_debug("opened atomicx md %s atomic_cap %d max_qp_rd_atom %d",
              md_name, md->dev_attr.atomic_cap, md->dev_attr.max_qp_rd_atom);
    *md_p = &md->super;
    return UCS_OK;

err_close:
    ibv_close_device(md->ctx);
err_free_md:
    ucs_free(md);
err_free_list:
    ibv_free_device_list(devices);
    return status;
}


ucs_status_t
uct_atomicx_query_tl_devices(uct_md_h tl_md,
                             uct_tl_device_resource_t **tl_devices_p,
                             unsigned *num_tl_devices_p)
{
    uct_atomicx_md_t *md = ucs_derived_of(tl_md, uct_atomicx_md_t);
    uct_tl_device_resource_t *devices;
    struct ibv_port_attr port_attr;
    char why[256];
    unsigned count;
    uint8_t port;

    devices = ucs_calloc(md->dev_attr.phys_port_cnt, sizeof(*devices),
                         "atomicx tl devices");
    if (devices == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    count = 0;
    for (port = 1; port <= md->dev_attr.phys_port_cnt; ++port) {
        if (ibv_query_port(md->ctx, port, &port_attr) != 0) {
            ucs_debug("ibv_query_port(%s:%d) failed: %m", md->dev_name, port);
            continue;
        }

        if (port_attr.state != IBV_PORT_ACTIVE) {
            ucs_debug("%s:%d is not active", md->dev_name, port);
            continue;
        }

        ucs_snprintf_zero(devices[count].name, sizeof(devices[count].name),
                          "%s:%d", md->dev_name, port);
        devices[count].type       = UCT_DEVICE_TYPE_NET;
        devices[count].sys_device = UCS_SYS_DEVICE_ID_UNKNOWN;
        ++count;
    }

    if (count == 0) {
        ucs_free(devices);
        devices = NULL;
        snprintf(why, sizeof(why), "atomicx: %s has remote atomics but none "
                 "of its %d port(s) is active", md->dev_name,
                 md->dev_attr.phys_port_cnt);
        uct_atomicx_warn_no_resource(why);
    }

    *tl_devices_p     = devices;
    *num_tl_devices_p = count;
    return UCS_OK;
}


uct_component_t uct_atomicx_component = {
    .query_md_resources = uct_atomicx_query_md_resources,
    .md_open            = uct_atomicx_md_open,
    .cm_open            = UCT_ATOMICX_FUNC(uct_component_cm_open_func_t,
                                  ucs_empty_function_return_unsupported),
    .rkey_unpack        = uct_atomicx_rkey_unpack,
    .rkey_ptr           = UCT_ATOMICX_FUNC(uct_component_rkey_ptr_func_t,
                                  ucs_empty_function_return_unsupported),
    .rkey_release       = UCT_ATOMICX_FUNC(uct_component_rkey_release_func_t,
                                  ucs_empty_function_return_success),
#if ATOMICX_UCT_COMPONENT_RKEY_COMPARE
    .rkey_compare       = uct_atomicx_rkey_compare,
#endif
    .name               = UCT_ATOMICX_NAME,
    .md_config          = {
        .name           = "atomicx memory domain",
        .prefix         = UCT_ATOMICX_CFG_PREFIX,
        .table          = uct_atomicx_md_config_table,
        .size           = sizeof(uct_atomicx_md_config_t),
    },
    .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(
                                  &uct_atomicx_component),
    .flags              = 0,
    .md_vfs_init        = UCT_ATOMICX_FUNC(uct_component_md_vfs_init_func_t,
                                  ucs_empty_function)
};

