/**
 * Native strategy: one ucp_atomic_op_nbx per element, for the cells where
 * UCP has exactly the operation (cell->ucp_op, fiatomic_matrix.c):
 *   SUM/BOR/BAND/BXOR on integers -> ADD/OR/AND/XOR (fetching in the fetch
 *   family), ATOMIC_WRITE -> SWAP and ATOMIC_READ -> fetching ADD of 0 for
 *   any 4/8-byte type (bits untouched), CSWAP on integers -> CSWAP.
 * Atomicity domain: UCP's own, whatever transport executes it. The one
 * UCP atomic call (fiatomic_ucp_amo) is the CAS-loop strategy's too.
 */
#include "core/fiatomic_strategy.h"

#include <string.h>

static const uint64_t fiatomic_zero = 0;

static bool fiatomic_native_supports(const fiatomic_cell_t *cell)
{
    return cell->ucp_op >= 0;
}

/* A base-family post asks UCP for a reply (a fetching atomic) only when its
 * completion must mean "done at the target"; SWAP and CSWAP always reply. */
static bool fiatomic_native_fetches(const fiatomic_cell_t *cell,
                                    uint64_t flags)
{
    return (cell->family != FIATOMIC_FAMILY_BASE) ||
           (cell->ucp_op == UCP_ATOMIC_OP_SWAP) ||
           (cell->ucp_op == UCP_ATOMIC_OP_CSWAP) ||
           (flags & FI_DELIVERY_COMPLETE);
}

/* UCP has the operation, and it is right on this endpoint's lanes with this
 * UCX (fiatomic_ucx_compat.c). */
static bool fiatomic_native_usable(const fiatomic_ep_h ep,
                                   const fiatomic_rkey_t *key,
                                   const fiatomic_cell_t *cell,
                                   uint64_t flags)
{
    return fiatomic_native_supports(cell) && (key->rkey != NULL) &&
           !key->no_ucp_amo &&
           !fiatomic_ucx_amo_broken(ep, (ucp_atomic_op_t)cell->ucp_op,
                                    fiatomic_native_fetches(cell, flags));
}

static bool fiatomic_native_needs_target_progress(const fiatomic_rkey_t *key)
{
    return key->sw_amo;
}

ucs_status_ptr_t fiatomic_ucp_amo(fiatomic_elem_t *elem, ucp_atomic_op_t op,
                                  const void *buffer, unsigned size,
                                  uint64_t raddr, void *reply,
                                  ucp_send_nbx_callback_t cb)
{
    ucp_request_param_t param;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FIELD_DATATYPE;
    param.cb.send      = cb;
    param.user_data    = elem;
    param.datatype     = ucp_dt_make_contig(size);
    if (reply != NULL) {
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        param.reply_buffer  = reply;
    }

    return ucp_atomic_op_nbx(elem->req->ep->ucp_ep, op, buffer, 1, raddr,
                             elem->key->rkey, &param);
}

static void fiatomic_native_finish(fiatomic_elem_t *elem, bool fetched,
                                   ucs_status_t status)
{
    fiatomic_req_t *req = elem->req;

    if ((status == UCS_OK) && !(req->flags & FIATOMIC_REQ_F_ABANDONED)) {
        /* an abandoned request's owner was told it timed out: its result
         * buffer is no longer ours to write */
        if (elem->result != NULL) {
            memcpy(elem->result, &elem->reply, req->cell->size);
        }
        if (!fetched) {
            req->ep->native.unflushed = true; /* completed locally only */
        }
    }
    fiatomic_elem_done(elem, status);
}

static void fiatomic_native_cb(void *request, ucs_status_t status,
                               void *user_data, bool fetched)
{
    fiatomic_elem_t *elem = user_data;
    fiatomic_ep_h ep      = elem->req->ep;

    ucp_request_free(request);
    fiatomic_native_finish(elem, fetched, status);
    fiatomic_ep_inflight_remove(ep);
}

static void fiatomic_native_fetch_cb(void *request, ucs_status_t status,
                                     void *user_data)
{
    fiatomic_h fia = ((fiatomic_elem_t*)user_data)->req->fia;
    bool locked;

    FIATOMIC_CB_ENTER_SEND(fia, fiatomic_native_fetch_cb, request, status,
                           user_data, locked);
    fiatomic_native_cb(request, status, user_data, true);
    fiatomic_leave(fia, locked);
}

static void fiatomic_native_post_cb(void *request, ucs_status_t status,
                                    void *user_data)
{
    fiatomic_h fia = ((fiatomic_elem_t*)user_data)->req->fia;
    bool locked;

    FIATOMIC_CB_ENTER_SEND(fia, fiatomic_native_post_cb, request, status,
                           user_data, locked);
    fiatomic_native_cb(request, status, user_data, false);
    fiatomic_leave(fia, locked);
}

static size_t fiatomic_native_start(fiatomic_req_t *req, size_t first,
                                    size_t count)
{
    fiatomic_elem_t *elem       = &req->elems[first];
    const fiatomic_cell_t *cell = req->cell;
    unsigned size               = cell->size;
    ucp_atomic_op_t uop         = (ucp_atomic_op_t)cell->ucp_op;
    const void *buffer          = elem->operand;
    bool fetch                  = fiatomic_native_fetches(cell,
                                      (req->flags & FIATOMIC_REQ_F_DELIVERY) ?
                                      FI_DELIVERY_COMPLETE : 0);
    ucs_status_ptr_t sptr;

    fiatomic_assertv(cell->ucp_op >= 0, "no native op for op %d datatype %d",
                     cell->op, cell->datatype);
    if (cell->op == FI_ATOMIC_READ) {
        buffer = &fiatomic_zero;
    } else if (uop == UCP_ATOMIC_OP_CSWAP) {
        /* UCP: buffer = compare value, reply buffer = in: the new value,
         * out: the old one. */
        memcpy(&elem->reply, elem->operand, size);
        buffer = elem->compare;
    }

    sptr = fiatomic_ucp_amo(elem, uop, buffer, size, elem->raddr,
                            fetch ? &elem->reply : NULL,
                            fetch ? fiatomic_native_fetch_cb :
                                    fiatomic_native_post_cb);
    if (UCS_PTR_IS_PTR(sptr)) {
        req->flags |= FIATOMIC_REQ_F_UCP;
        fiatomic_ep_inflight_add(req->ep);
    } else {
        fiatomic_native_finish(elem, fetch, UCS_PTR_STATUS(sptr));
    }
    return 1;
}

const fiatomic_strategy_ops_t fiatomic_native_ops = {
    .id                    = FIATOMIC_STRATEGY_NATIVE,
    .name                  = "native",
    .supports              = fiatomic_native_supports,
    .usable                = fiatomic_native_usable,
    .start                 = fiatomic_native_start,
    .needs_target_progress = fiatomic_native_needs_target_progress
};
