/**
 * An operation made of several UCP requests (fip_rma.c: one per contiguous
 * piece and a flush; fip_msg.c: a send and a flush): op->pending counts the
 * pieces still running plus one hold while the operation is being posted,
 * op->status keeps the first failure, and the last piece to end completes
 * the operation.
 */
#include "fip.h"

void fip_op_piece_done(fip_op_t *op, ucs_status_t status)
{
    ucs_status_t ok = UCS_OK;

    if (status != UCS_OK) {
        /* the first failure is the operation's */
        __atomic_compare_exchange_n(&op->status, &ok, status, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    }
    if (__atomic_sub_fetch(&op->pending, 1, __ATOMIC_ACQ_REL) == 0) {
        fip_op_complete(op, __atomic_load_n(&op->status, __ATOMIC_ACQUIRE));
    }
}

void fip_op_piece_cb(void *request, ucs_status_t status, void *user_data)
{
    ucp_request_free(request);
    fip_op_piece_done(user_data, status);
}

/* A piece about to be posted is counted first: under automatic progress
 * another thread can run its callback before the UCP call returns here.
 * (Counted after the call, such a piece once took the posting hold's
 * count, the operation completed and was freed while still being posted,
 * and completed again: a double free.) */
void fip_op_piece_starting(fip_op_t *op)
{
    __atomic_add_fetch(&op->pending, 1, __ATOMIC_RELAXED);
}

void fip_op_piece_started(fip_op_t *op, ucs_status_ptr_t sptr)
{
    ucs_status_t ok = UCS_OK;

    if (UCS_PTR_IS_PTR(sptr)) {
        return; /* its callback ends it */
    }
    if (UCS_PTR_IS_ERR(sptr)) {
        __atomic_compare_exchange_n(&op->status, &ok, UCS_PTR_STATUS(sptr),
                                    0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    }
    /* done or failed at once: the posting hold keeps the operation */
    __atomic_sub_fetch(&op->pending, 1, __ATOMIC_ACQ_REL);
}
