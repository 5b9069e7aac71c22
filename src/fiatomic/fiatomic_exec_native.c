/**
 * Native strategy: one ucp_atomic_op_nbx per element, for the cells where
 * UCP has exactly the operation (4- and 8-byte elements):
 *   SUM/BOR/BAND/BXOR on integers -> ADD/OR/AND/XOR (fetching in the fetch
 *   family), ATOMIC_WRITE -> SWAP and ATOMIC_READ -> fetching ADD of 0 for
 *   any 4/8-byte type (bits untouched), CSWAP on integers -> CSWAP.
 * Floats never use native CSWAP: UCP compares bits, fi_atomic compares values
 * (-0.0 == +0.0, NaN != NaN).
 * Atomicity domain: UCP's own, whatever transport executes it.
 */
#include "fiatomic_int.h"

#include <string.h>

static const uint64_t fiatomic_zero = 0;

static bool fiatomic_native_map(fiatomic_family_t family, int op, int datatype,
                                ucp_atomic_op_t *uop_p)
{
    size_t size  = fiatomic_datatype_size(datatype);
    bool integer = (fiatomic_datatype_class(datatype) == FIATOMIC_TCLS_INT);

    if (((size != 4) && (size != 8)) ||
        !fiatomic_cell_defined(family, op, datatype)) {
        return false;
    }

    switch (op) {
    case FI_SUM:
        *uop_p = UCP_ATOMIC_OP_ADD;
        return integer;
    case FI_BOR:
        *uop_p = UCP_ATOMIC_OP_OR;
        return integer;
    case FI_BAND:
        *uop_p = UCP_ATOMIC_OP_AND;
        return integer;
    case FI_BXOR:
        *uop_p = UCP_ATOMIC_OP_XOR;
        return integer;
    case FI_CSWAP:
        *uop_p = UCP_ATOMIC_OP_CSWAP;
        return integer;
    case FI_ATOMIC_WRITE:
        *uop_p = UCP_ATOMIC_OP_SWAP;
        return true;
    case FI_ATOMIC_READ:
        *uop_p = UCP_ATOMIC_OP_ADD;
        return true;
    default:
        return false;
    }
}

bool fiatomic_native_has(fiatomic_family_t family, int op, int datatype)
{
    ucp_atomic_op_t uop;

    return fiatomic_native_map(family, op, datatype, &uop);
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

static bool fiatomic_native_fetches(const fiatomic_elem_t *elem,
                                    ucp_atomic_op_t uop)
{
    /* SWAP and CSWAP always reply; a base-family post asks for a reply only
     * when its completion must mean "done at the target". */
    return (elem->req->family != FIATOMIC_FAMILY_BASE) ||
           (uop == UCP_ATOMIC_OP_SWAP) || (uop == UCP_ATOMIC_OP_CSWAP) ||
           (elem->req->flags & FIATOMIC_REQ_F_DELIVERY);
}

static void fiatomic_native_finish(fiatomic_elem_t *elem, bool fetched,
                                   ucs_status_t status)
{
    fiatomic_req_t *req = elem->req;

    if (status == UCS_OK) {
        if (elem->result != NULL) {
            memcpy(elem->result, &elem->reply, req->elem_size);
        }
        if (!fetched) {
            req->ep->unflushed = true; /* completed locally only */
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
    fiatomic_native_cb(request, status, user_data, true);
}

static void fiatomic_native_post_cb(void *request, ucs_status_t status,
                                    void *user_data)
{
    fiatomic_native_cb(request, status, user_data, false);
}

void fiatomic_native_start(fiatomic_elem_t *elem)
{
    fiatomic_req_t *req = elem->req;
    unsigned size       = (unsigned)req->elem_size;
    const void *buffer  = elem->operand;
    ucp_atomic_op_t uop = UCP_ATOMIC_OP_ADD;
    ucs_status_ptr_t sptr;
    bool fetch;

    if (!fiatomic_native_map(req->family, req->op, req->datatype, &uop)) {
        fiatomic_assertv(0, "no native op for op %d datatype %d", req->op,
                    req->datatype);
        fiatomic_elem_done(elem, UCS_ERR_UNSUPPORTED);
        return;
    }

    fetch = fiatomic_native_fetches(elem, uop);
    if (req->op == FI_ATOMIC_READ) {
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
        fiatomic_ep_inflight_add(req->ep);
    } else {
        fiatomic_native_finish(elem, fetch, UCS_PTR_STATUS(sptr));
    }
}
