/**
 * atomicx: interface (one device port), its configuration and capabilities,
 * its progress (the completion queue: how a work completion finishes an op or
 * continues its CAS loop), and the interface flush and fence.
 */

#include "atomicx.h"
#include "atomicx_amo.h"

#include <ucs/debug/log.h>
#include <ucs/sys/string.h>
#include <math.h>
#include <string.h>
#include <stdlib.h>


static ucs_config_field_t uct_atomicx_iface_config_table[] = {
    {"", "", NULL, ucs_offsetof(uct_atomicx_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"TX_QUEUE_LEN", "128",
     "Send queue length of each endpoint (RC QP): atomics in flight per\n"
     "endpoint.",
     ucs_offsetof(uct_atomicx_iface_config_t, tx_queue_len),
     UCS_CONFIG_TYPE_UINT},

    {"MAX_OPS", "1024",
     "Atomics in flight per interface, all endpoints together.",
     ucs_offsetof(uct_atomicx_iface_config_t, max_ops), UCS_CONFIG_TYPE_UINT},

    {"GID_INDEX", "auto",
     "GID table index used on RoCE ports; \"auto\" takes the first RoCE v2\n"
     "GID with an IPv4 address, else the first RoCE v2 GID, else the first\n"
     "valid one.",
     ucs_offsetof(uct_atomicx_iface_config_t, gid_index),
     UCS_CONFIG_TYPE_ULUNITS},

    {"TIMEOUT", "1.0s",
     "Transport retransmission timeout (rounded up to 4.096us * 2^N).",
     ucs_offsetof(uct_atomicx_iface_config_t, timeout), UCS_CONFIG_TYPE_TIME},

    {"RETRY_COUNT", "7",
     "Transport retries before an endpoint fails (0..7).",
     ucs_offsetof(uct_atomicx_iface_config_t, retry_count),
     UCS_CONFIG_TYPE_UINT},

    {"SL", "0",
     "Service level.",
     ucs_offsetof(uct_atomicx_iface_config_t, sl), UCS_CONFIG_TYPE_UINT},

    {"SELFTEST_TIMEOUT", "30s",
     "How long the byte-order self-test at interface creation may take.",
     ucs_offsetof(uct_atomicx_iface_config_t, selftest_timeout),
     UCS_CONFIG_TYPE_TIME},

    {NULL}
};


/* Software devices (soft-RoCE, soft-iWARP) are far slower than NICs */
static int uct_atomicx_is_soft_device(const char *dev_name)
{
    return !strncmp(dev_name, "rxe", 3) || !strncmp(dev_name, "siw", 3);
}


static double uct_atomicx_port_bandwidth(const struct ibv_port_attr *attr)
{
    double lane_gbps, lanes;

    switch (attr->active_speed) {
    case 1:   lane_gbps = 2.5;   break;
    case 2:   lane_gbps = 5.0;   break;
    case 4:
    case 8:   lane_gbps = 10.0;  break;
    case 16:  lane_gbps = 14.0;  break;
    case 32:  lane_gbps = 25.0;  break;
    case 64:  lane_gbps = 50.0;  break;
    case 128: lane_gbps = 100.0; break;
    default:  lane_gbps = 10.0;  break;
    }

    switch (attr->active_width) {
    case 2:  lanes = 4;  break;
    case 4:  lanes = 8;  break;
    case 8:  lanes = 12; break;
    case 16: lanes = 2;  break;
    default: lanes = 1;  break;
    }

    return lane_gbps * lanes * 1e9 / 8;
}


static ucs_status_t uct_atomicx_iface_query(uct_iface_h tl_iface,
                                            uct_iface_attr_t *attr)
{
    uct_atomicx_iface_t *iface = ucs_derived_of(tl_iface, uct_atomicx_iface_t);
    /* Exactly the ops uct_atomicx_ep_atomic*() implement */
    uint64_t op_flags  = UCS_BIT(UCT_ATOMIC_OP_ADD) |
                         UCS_BIT(UCT_ATOMIC_OP_AND) |
                         UCS_BIT(UCT_ATOMIC_OP_OR)  |
                         UCS_BIT(UCT_ATOMIC_OP_XOR);
    uint64_t fop_flags = op_flags | UCS_BIT(UCT_ATOMIC_OP_SWAP) |
                         UCS_BIT(UCT_ATOMIC_OP_CSWAP);

    uct_base_iface_query(&iface->super, attr);

    attr->iface_addr_len         = 0;
    attr->device_addr_len        = sizeof(uct_atomicx_dev_addr_t);
    attr->ep_addr_len            = sizeof(uct_atomicx_ep_addr_t);
    attr->max_conn_priv          = 0;
    /* Peer failure: a QP whose transport retries run out completes every
     * op in flight with UCS_ERR_ENDPOINT_TIMEOUT and reports the endpoint
     * to the error handler once. UCP selects a lane for an endpoint that
     * asks for UCP_ERR_HANDLING_MODE_PEER only with this flag; without it
     * such an endpoint would fall back to software atomics, which a peer
     * worker that selected device atomics never answers. */
    attr->cap.flags              = UCT_IFACE_FLAG_ATOMIC_DEVICE |
                                   UCT_IFACE_FLAG_PENDING |
                                   UCT_IFACE_FLAG_CONNECT_TO_EP |
                                   UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE;
    attr->cap.atomic32.op_flags  = op_flags;
    attr->cap.atomic32.fop_flags = fop_flags;
    attr->cap.atomic64.op_flags  = op_flags;
    attr->cap.atomic64.fop_flags = fop_flags;

    /* One round trip per native op; a CAS loop takes one more round trip
     * when its first guess of the word is wrong */
    attr->latency                = ucs_linear_func_make(iface->config.latency,
                                                        0);
    attr->overhead               = uct_atomicx_is_soft_device(
                                           ucs_derived_of(iface->super.md,
                                                          uct_atomicx_md_t)
                                                   ->dev_name) ? 2e-6 : 0.2e-6;
    attr->bandwidth.dedicated    = 0;
    attr->bandwidth.shared       = iface->config.bandwidth;
    attr->priority               = 0;
    return UCS_OK;
}


static ucs_status_t uct_atomicx_iface_get_device_address(uct_iface_h tl_iface,
                                                         uct_device_addr_t *addr)
{
    uct_atomicx_iface_t *iface = ucs_derived_of(tl_iface, uct_atomicx_iface_t);

    memcpy(addr, &iface->dev_addr, sizeof(iface->dev_addr));
    return UCS_OK;
}


int uct_atomicx_iface_is_reachable(const uct_iface_h tl_iface,
                                   const uct_device_addr_t *dev_addr,
                                   const uct_iface_addr_t *iface_addr)
{
    uct_atomicx_iface_t *iface = ucs_derived_of(tl_iface, uct_atomicx_iface_t);
    uct_atomicx_dev_addr_t remote;

    if (dev_addr == NULL) {
        return 0;
    }

    /* RoCE reaches RoCE (routable GIDs); IB reaches the same subnet */
    memcpy(&remote, dev_addr, sizeof(remote));
    if (remote.is_global != iface->dev_addr.is_global) {
        return 0;
    }

    return remote.is_global ||
           (remote.gid.global.subnet_prefix ==
            iface->dev_addr.gid.global.subnet_prefix);
}


/* ------------------------------------------------------------------------
 * Progress: the completion queue of the interface. Every op holds exactly
 * one signaled WR, whose wr_id is the op's descriptor index (its result
 * slot); a completion finishes the op or posts the next attempt of its CAS
 * loop, and then the ops held back and the requests pending on every
 * endpoint get their turn.
 */

/* One work completion: finish the op, or post the next CAS of its loop */
static void uct_atomicx_iface_handle_wc(uct_atomicx_iface_t *iface,
                                        const struct ibv_wc *wc)
{
    uct_atomicx_op_t *op = &iface->ops[wc->wr_id];
    uct_atomicx_ep_t *ep = op->ep;
    uint64_t word;
    ucs_status_t status;

    if (ep == NULL) {
        /* The endpoint was destroyed while this WR was in flight */
        ucs_assert(op->in_use);
        uct_atomicx_op_release(iface, op);
        return;
    }

    ++ep->sq_avail;

    if (ucs_unlikely(wc->status != IBV_WC_SUCCESS)) {
        status = uct_atomicx_wc_status(wc->status);
        if (status != UCS_ERR_CANCELED) {
            ucs_debug("qp 0x%x: op %zu failed: %s (vendor err 0x%x)",
                      ep->qp->qp_num, op - iface->ops,
                      ibv_wc_status_str(wc->status), wc->vendor_err);
        }
        uct_atomicx_ep_set_error(ep, status);
        uct_atomicx_op_complete(iface, op,
                                (ep->status != UCS_OK) ? ep->status : status,
                                0);
        return;
    }

    word = uct_atomicx_reply_to_host(iface->results[wc->wr_id],
                                     iface->reply_order == UCT_ATOMICX_REPLY_BE);
    ep->cache_addr = op->word_addr;

    if (op->native) {
        if (op->opcode == UCT_ATOMIC_OP_ADD) {
            ep->cache_value = word + op->value;
        } else {
            ep->cache_value = (word == op->compare) ? op->value : word;
        }
        uct_atomicx_op_complete(iface, op, UCS_OK, word);
        return;
    }

    if (word == op->expected) {
        /* The CAS took effect */
        ep->cache_value = op->desired;
        uct_atomicx_op_complete(iface, op, UCS_OK, word);
        return;
    }

    ep->cache_value = word;
    op->expected    = word;
    op->desired     = uct_atomicx_word_combine(op->opcode, op->size, op->shift,
                                               word, op->value, op->compare);
    if (op->desired == word) {
        /* The failed CAS read the word atomically, and the op leaves it as
         * it is (e.g. a CSWAP whose compare does not match) */
        uct_atomicx_op_complete(iface, op, UCS_OK, word);
        return;
    }

    if (ep->status != UCS_OK) {
        uct_atomicx_op_complete(iface, op, ep->status, 0);
        return;
    }

    status = uct_atomicx_op_post(iface, op);
    if (status != UCS_OK) {
        uct_atomicx_ep_set_error(ep, status);
        uct_atomicx_op_complete(iface, op, status, 0);
    }
}


static void uct_atomicx_iface_report_errors(uct_atomicx_iface_t *iface)
{
    uct_atomicx_ep_t *ep, *tmp;

    ucs_list_for_each_safe(ep, tmp, &iface->ep_list, list) {
        if ((ep->status != UCS_OK) && !ep->err_reported) {
            ep->err_reported = 1;
            uct_iface_handle_ep_err(&iface->super.super, &ep->super.super,
                                    ep->status);
        }
    }
}


unsigned uct_atomicx_iface_progress(uct_iface_h tl_iface)
{
    uct_atomicx_iface_t *iface = ucs_derived_of(tl_iface, uct_atomicx_iface_t);
    struct ibv_wc wc[16];
    uct_atomicx_ep_t *ep;
    int i, n;

    n = ibv_poll_cq(iface->cq, ucs_static_array_size(wc), wc);
    if (ucs_unlikely(n < 0)) {
        ucs_error("ibv_poll_cq() failed: %d", n);
        n = 0;
    }

    for (i = 0; i < n; ++i) {
        uct_atomicx_iface_handle_wc(iface, &wc[i]);
    }

    if (n > 0) {
        uct_atomicx_iface_report_errors(iface);
    }

    /* Also without new completions: a request queued while the endpoint
     * had resources, or put back by a callback that could not go on, must
     * not wait for a completion that may never come */
    if ((n > 0) || (iface->num_pending > 0) || (iface->num_held > 0)) {
        ucs_list_for_each(ep, &iface->ep_list, list) {
            uct_atomicx_ep_release_held(ep);
            uct_atomicx_ep_dispatch_pending(ep);
        }
    }

    return n;
}


/* ------------------------------------------------------------------------
 * Interface flush and fence: over every endpoint of the interface
 */

/* Like UCX's RC transports: the interface is flushed when every endpoint
 * is; an endpoint that has ops in flight or requests pending makes the
 * interface flush UCS_INPROGRESS (UCP's worker flush calls it again), and an
 * endpoint that failed, with nothing in flight, does not hold it back (its
 * error goes to the error handler). Returns only UCS_OK or UCS_INPROGRESS. */
ucs_status_t uct_atomicx_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                     uct_completion_t *comp)
{
    uct_atomicx_iface_t *iface = ucs_derived_of(tl_iface, uct_atomicx_iface_t);
    uct_atomicx_ep_t *ep;

    if (comp != NULL) {
        return UCS_ERR_UNSUPPORTED;
    }

    ucs_list_for_each(ep, &iface->ep_list, list) {
        if ((ep->outstanding > 0) ||
            ((ep->status == UCS_OK) && !ucs_queue_is_empty(&ep->pending_q))) {
            return UCS_INPROGRESS;
        }
    }

    return UCS_OK;
}


ucs_status_t uct_atomicx_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    uct_atomicx_iface_t *iface = ucs_derived_of(tl_iface, uct_atomicx_iface_t);
    uct_atomicx_ep_t *ep;

    ucs_list_for_each(ep, &iface->ep_list, list) {
        uct_atomicx_ep_fence(&ep->super.super, flags);
    }
    return UCS_OK;
}


/* ::ffff:a.b.c.d */
static int uct_atomicx_gid_is_ipv4(const union ibv_gid *gid)
{
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                       0xff, 0xff};

    return !memcmp(gid->raw, prefix, sizeof(prefix));
}


static ucs_status_t uct_atomicx_iface_select_gid(uct_atomicx_iface_t *iface,
                                                 unsigned long gid_index)
{
    uct_atomicx_md_t *md = ucs_derived_of(iface->super.md, uct_atomicx_md_t);
    struct ibv_gid_entry entry;
    int index, found = -1, found_v2 = 0;

    if (iface->port_attr.link_layer != IBV_LINK_LAYER_ETHERNET) {
        index = (gid_index == UCS_ULUNITS_AUTO) ? 0 : (int)gid_index;
        if (ibv_query_gid(md->ctx, iface->port_num, index,
                          &iface->dev_addr.gid) != 0) {
            ucs_error("%s:%d: ibv_query_gid(%d) failed: %m", md->dev_name,
                      iface->port_num, index);
            return UCS_ERR_IO_ERROR;
        }
        iface->gid_index          = index;
        iface->dev_addr.is_global = 0;
        return UCS_OK;
    }

    if (gid_index != UCS_ULUNITS_AUTO) {
        found = (int)gid_index;
    } else {
        for (index = 0; index < iface->port_attr.gid_tbl_len; ++index) {
            if (ibv_query_gid_ex(md->ctx, iface->port_num, index, &entry,
                                 0) != 0) {
                continue; /* an empty entry */
            }
            /* Like UCX: RoCE v2 with an IPv4 address, else RoCE v2 */
            if ((entry.gid_type == IBV_GID_TYPE_ROCE_V2) &&
                uct_atomicx_gid_is_ipv4(&entry.gid)) {
                found = index;
                break;
            }
            if ((entry.gid_type == IBV_GID_TYPE_ROCE_V2) && !found_v2) {
                found    = index;
                found_v2 = 1;
            } else if (found < 0) {
                found = index;
            }
        }
    }

    if ((found < 0) ||
        (ibv_query_gid(md->ctx, iface->port_num, found,
                       &iface->dev_addr.gid) != 0)) {
        ucs_error("%s:%d: no usable RoCE GID (is the netdev up with an "
                  "address?)", md->dev_name, iface->port_num);
        return UCS_ERR_NO_DEVICE;
    }

    iface->gid_index          = found;
    iface->dev_addr.is_global = 1;
    return UCS_OK;
}


static uint8_t uct_atomicx_timeout_exp(double timeout)
{
    double exp = ceil(log2(timeout / 4.096e-6));

    return (uint8_t)ucs_min(ucs_max(exp, 1.0), 31.0);
}


static uct_iface_ops_t uct_atomicx_iface_ops;


static UCS_CLASS_INIT_FUNC(uct_atomicx_iface_t, uct_md_h tl_md,
                           uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    uct_atomicx_iface_config_t *config =
            ucs_derived_of(tl_config, uct_atomicx_iface_config_t);
    uct_atomicx_md_t *md = ucs_derived_of(tl_md, uct_atomicx_md_t);
    const char *dev_name, *colon;
    size_t results_size;
    ucs_status_t status;
    unsigned i;
    int port;

    UCT_CHECK_PARAM(params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE,
                    "UCT_IFACE_PARAM_FIELD_OPEN_MODE is not defined");
    if (!(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("atomicx supports only UCT_IFACE_OPEN_MODE_DEVICE");
        return UCS_ERR_UNSUPPORTED;
    }

    UCS_CLASS_CALL_SUPER_INIT(
            uct_base_iface_t, &uct_atomicx_iface_ops,
            uct_atomicx_iface_internal_ops, tl_md, worker, params,
            tl_config UCS_STATS_ARG(
                    (params->field_mask & UCT_IFACE_PARAM_FIELD_STATS_ROOT) ?
                            params->stats_root : NULL)
            UCS_STATS_ARG(UCT_ATOMICX_NAME));

    dev_name = params->mode.device.dev_name;
    colon    = strrchr(dev_name, ':');
    port     = (colon == NULL) ? 0 : atoi(colon + 1);
    if ((colon == NULL) || ((size_t)(colon - dev_name) != strlen(md->dev_name))
        || strncmp(dev_name, md->dev_name, colon - dev_name) ||
        (port < 1) || (port > md->dev_attr.phys_port_cnt)) {
        ucs_error("atomicx: invalid device %s for md %s", dev_name,
                  md->dev_name);
        return UCS_ERR_NO_DEVICE;
    }

    if ((config->max_ops == 0) || (config->tx_queue_len == 0) ||
        (config->retry_count > 7) || (config->sl > 15)) {
        ucs_error("atomicx: invalid configuration (MAX_OPS %u TX_QUEUE_LEN "
                  "%u RETRY_COUNT %u SL %u)", config->max_ops,
                  config->tx_queue_len, config->retry_count, config->sl);
        return UCS_ERR_INVALID_PARAM;
    }

    self->port_num = port;
    if (ibv_query_port(md->ctx, self->port_num, &self->port_attr) != 0) {
        ucs_error("ibv_query_port(%s) failed: %m", dev_name);
        return UCS_ERR_IO_ERROR;
    }

    memset(&self->dev_addr, 0, sizeof(self->dev_addr));
    self->dev_addr.lid = self->port_attr.lid;
    status = uct_atomicx_iface_select_gid(self, config->gid_index);
    if (status != UCS_OK) {
        return status;
    }

    self->config.tx_queue_len  = ucs_min(config->tx_queue_len,
                                         (unsigned)md->dev_attr.max_qp_wr);
    self->config.max_ops       = config->max_ops;
    self->config.timeout       = uct_atomicx_timeout_exp(config->timeout);
    self->config.retry_count   = config->retry_count;
    self->config.sl            = config->sl;
    self->config.path_mtu      = self->port_attr.active_mtu;
    self->config.max_rd_atomic = ucs_min(ucs_min(md->dev_attr.max_qp_rd_atom,
                                         md->dev_attr.max_qp_init_rd_atom),
                                         255);
    self->config.latency       = uct_atomicx_is_soft_device(md->dev_name) ?
                                 20e-6 : 2e-6;
    self->config.bandwidth     = uct_atomicx_port_bandwidth(&self->port_attr);
    ucs_list_head_init(&self->ep_list);

    self->cq = ibv_create_cq(md->ctx, self->config.max_ops + 1, NULL, NULL, 0);
    if (self->cq == NULL) {
        ucs_error("%s: ibv_create_cq(%u) failed: %m", dev_name,
                  self->config.max_ops + 1);
        return UCS_ERR_IO_ERROR;
    }

    self->ops = ucs_calloc(self->config.max_ops, sizeof(*self->ops),
                           "atomicx ops");
    if (self->ops == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto err_destroy_cq;
    }

    /* One result slot per op, then the self-test's result and target */
    results_size = (self->config.max_ops + 2) * sizeof(uint64_t);
    if (posix_memalign((void**)&self->results, 64,
                       results_size) != 0) {
        status = UCS_ERR_NO_MEMORY;
        goto err_free_ops;
    }
    memset(self->results, 0, results_size);

    self->results_mr = ibv_reg_mr(md->pd, self->results, results_size,
                                  IBV_ACCESS_LOCAL_WRITE |
                                  IBV_ACCESS_REMOTE_READ |
                                  IBV_ACCESS_REMOTE_WRITE |
                                  IBV_ACCESS_REMOTE_ATOMIC);
    if (self->results_mr == NULL) {
        ucs_error("%s: ibv_reg_mr(results) failed: %m", dev_name);
        status = UCS_ERR_IO_ERROR;
        goto err_free_results;
    }

    self->num_free    = self->config.max_ops;
    self->free_head   = 0;
    self->num_pending = 0;
    for (i = 0; i < self->config.max_ops; ++i) {
        self->ops[i].next_free = i + 1;
    }

    status = uct_atomicx_selftest(self, config->selftest_timeout);
    if (status != UCS_OK) {
        goto err_dereg;
    }

    ucs_debug("created atomicx iface %p on %s gid index %d mtu %d "
              "max_rd_atomic %d reply %s", self, dev_name, self->gid_index,
              128 << self->config.path_mtu, self->config.max_rd_atomic,
              (self->reply_order == UCT_ATOMICX_REPLY_BE) ? "big-endian" :
                                                            "host order");
    return UCS_OK;

err_dereg:
    ibv_dereg_mr(self->results_mr);
err_free_results:
    free(self->results);
err_free_ops:
    ucs_free(self->ops);
err_destroy_cq:
    ibv_destroy_cq(self->cq);
    return status;
}


static UCS_CLASS_CLEANUP_FUNC(uct_atomicx_iface_t)
{
    if (!ucs_list_is_empty(&self->ep_list)) {
        ucs_warn("atomicx iface %p closed with %zu endpoints", self,
                 ucs_list_length(&self->ep_list));
    }

    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    ibv_dereg_mr(self->results_mr);
    free(self->results);
    ucs_free(self->ops);
    if (ibv_destroy_cq(self->cq) != 0) {
        ucs_warn("ibv_destroy_cq() failed: %m");
    }
}


UCS_CLASS_DEFINE(uct_atomicx_iface_t, uct_base_iface_t);

static UCS_CLASS_DEFINE_NEW_FUNC(uct_atomicx_iface_t, uct_iface_t, uct_md_h,
                                 uct_worker_h, const uct_iface_params_t*,
                                 const uct_iface_config_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_atomicx_iface_t, uct_iface_t);


/* The bcopy slots return ssize_t; atomicx has no bcopy operations */
static ssize_t uct_atomicx_ssize_unsupported()
{
    return UCS_ERR_UNSUPPORTED;
}


static uct_iface_ops_t uct_atomicx_iface_ops = {
    .ep_put_short             = UCT_ATOMICX_FUNC(uct_ep_put_short_func_t,
                                        ucs_empty_function_return_unsupported),
    .ep_put_bcopy             = UCT_ATOMICX_FUNC(uct_ep_put_bcopy_func_t,
                                        uct_atomicx_ssize_unsupported),
    .ep_put_zcopy             = UCT_ATOMICX_FUNC(uct_ep_put_zcopy_func_t,
                                        ucs_empty_function_return_unsupported),
    .ep_get_short             = UCT_ATOMICX_FUNC(uct_ep_get_short_func_t,
                                        ucs_empty_function_return_unsupported),
    .ep_get_bcopy             = UCT_ATOMICX_FUNC(uct_ep_get_bcopy_func_t,
                                        ucs_empty_function_return_unsupported),
    .ep_get_zcopy             = UCT_ATOMICX_FUNC(uct_ep_get_zcopy_func_t,
                                        ucs_empty_function_return_unsupported),
    .ep_am_short              = UCT_ATOMICX_FUNC(uct_ep_am_short_func_t,
                                        ucs_empty_function_return_unsupported),
    .ep_am_short_iov          = UCT_ATOMICX_FUNC(uct_ep_am_short_iov_func_t,
                                        ucs_empty_function_return_unsupported),
    .ep_am_bcopy              = UCT_ATOMICX_FUNC(uct_ep_am_bcopy_func_t,
                                        uct_atomicx_ssize_unsupported),
    .ep_am_zcopy              = UCT_ATOMICX_FUNC(uct_ep_am_zcopy_func_t,
                                        ucs_empty_function_return_unsupported),
    .ep_atomic_cswap64        = uct_atomicx_ep_atomic_cswap64,
    .ep_atomic_cswap32        = uct_atomicx_ep_atomic_cswap32,
    .ep_atomic32_post         = uct_atomicx_ep_atomic32_post,
    .ep_atomic64_post         = uct_atomicx_ep_atomic64_post,
    .ep_atomic32_fetch        = uct_atomicx_ep_atomic32_fetch,
    .ep_atomic64_fetch        = uct_atomicx_ep_atomic64_fetch,
    .ep_tag_eager_short       = UCT_ATOMICX_FUNC(uct_ep_tag_eager_short_func_t,
                                        ucs_empty_function_return_unsupported),
    .ep_tag_eager_bcopy       = UCT_ATOMICX_FUNC(uct_ep_tag_eager_bcopy_func_t,
                                        uct_atomicx_ssize_unsupported),
    .ep_tag_eager_zcopy       = UCT_ATOMICX_FUNC(uct_ep_tag_eager_zcopy_func_t,
                                        ucs_empty_function_return_unsupported),
    .ep_tag_rndv_zcopy        = UCT_ATOMICX_FUNC(uct_ep_tag_rndv_zcopy_func_t,
                                        ucs_empty_function_return_ptr_no_resource),
    .ep_tag_rndv_cancel       = UCT_ATOMICX_FUNC(uct_ep_tag_rndv_cancel_func_t,
                                        ucs_empty_function_return_unsupported),
    .ep_tag_rndv_request      = UCT_ATOMICX_FUNC(uct_ep_tag_rndv_request_func_t,
                                        ucs_empty_function_return_unsupported),
    .iface_tag_recv_zcopy     = UCT_ATOMICX_FUNC(uct_iface_tag_recv_zcopy_func_t,
                                        ucs_empty_function_return_unsupported),
    .iface_tag_recv_cancel    = UCT_ATOMICX_FUNC(uct_iface_tag_recv_cancel_func_t,
                                        ucs_empty_function_return_unsupported),
    .ep_pending_add           = uct_atomicx_ep_pending_add,
    .ep_pending_purge         = uct_atomicx_ep_pending_purge,
    .ep_flush                 = uct_atomicx_ep_flush,
    .ep_fence                 = uct_atomicx_ep_fence,
    .ep_check                 = UCT_ATOMICX_FUNC(uct_ep_check_func_t,
                                        ucs_empty_function_return_unsupported),
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(uct_atomicx_ep_t),
    .ep_connect               = UCT_ATOMICX_FUNC(uct_ep_connect_func_t,
                                        ucs_empty_function_return_unsupported),
    .ep_disconnect            = UCT_ATOMICX_FUNC(uct_ep_disconnect_func_t,
                                        ucs_empty_function_return_unsupported),
    .cm_ep_conn_notify        = UCT_ATOMICX_FUNC(uct_cm_ep_conn_notify_func_t,
                                        ucs_empty_function_return_unsupported),
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(uct_atomicx_ep_t),
    .ep_get_address           = uct_atomicx_ep_get_address,
    .ep_connect_to_ep         = uct_atomicx_ep_connect_to_ep,
    .iface_accept             = UCT_ATOMICX_FUNC(uct_iface_accept_func_t,
                                        ucs_empty_function_return_unsupported),
    .iface_reject             = UCT_ATOMICX_FUNC(uct_iface_reject_func_t,
                                        ucs_empty_function_return_unsupported),
    .iface_flush              = uct_atomicx_iface_flush,
    .iface_fence              = uct_atomicx_iface_fence,
    .iface_progress_enable    = uct_base_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = uct_atomicx_iface_progress,
    .iface_event_fd_get       = UCT_ATOMICX_FUNC(uct_iface_event_fd_get_func_t,
                                        ucs_empty_function_return_unsupported),
    .iface_event_arm          = UCT_ATOMICX_FUNC(uct_iface_event_arm_func_t,
                                        ucs_empty_function_return_unsupported),
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(uct_atomicx_iface_t),
    .iface_query              = uct_atomicx_iface_query,
    .iface_get_device_address = uct_atomicx_iface_get_device_address,
    .iface_get_address        = UCT_ATOMICX_FUNC(uct_iface_get_address_func_t,
                                        ucs_empty_function_return_success),
    .iface_is_reachable       = uct_atomicx_iface_is_reachable
};


UCT_TL_DEFINE_ENTRY(&uct_atomicx_component, atomicx,
                    uct_atomicx_query_tl_devices, uct_atomicx_iface_t,
                    UCT_ATOMICX_CFG_PREFIX, uct_atomicx_iface_config_table,
                    uct_atomicx_iface_config_t);
