/**
 * The operation timeout of what an endpoint waits for in UCP, and the
 * endpoint's failure when it runs out.
 *
 * Target-side messages time out one by one (fiatomic_target_send.c): their
 * replies are matched by id, so an abandoned one leaves nothing behind and
 * the endpoint stays usable. UCP's own operations (the atomics of the
 * native and CAS strategies, the endpoint flushes behind fences, flushes
 * and the first software atomic) cannot be cancelled one by one, and a
 * peer that stopped or never progresses never completes them: an
 * operation with a UCP atomic in flight, or a request waiting behind a
 * barrier, older than the operation timeout fails the endpoint. Its
 * requests are reported at once, exactly once, with UCS_ERR_TIMED_OUT;
 * those whose elements UCP still holds are kept (F_ABANDONED) until UCP
 * hands the last one back, without writing the user's buffers again. The
 * UCP endpoint is the user's: it is not closed here.
 */
#include "core/fiatomic_strategy.h"

/* The oldest submission among the requests of the endpoint that wait for
 * UCP, or UINT64_MAX. Started requests are listed in start order, waiting
 * ones in submission order: only the heads are old enough to matter (a
 * later one is looked at once the earlier ones are gone). */
static uint64_t fiatomic_ep_oldest_ucp_wait(fiatomic_ep_h ep, uint64_t now,
                                            uint64_t timeout)
{
    uint64_t oldest = UINT64_MAX;
    fiatomic_req_t *req;

    ucs_list_for_each(req, &ep->outstanding_list, list) {
        if ((now - req->submit_ns) < timeout) {
            break; /* younger ones follow */
        }
        if (req->flags & FIATOMIC_REQ_F_UCP) {
            oldest = req->submit_ns;
            break;
        }
        /* target-side only: its messages time out by themselves */
    }

    ucs_list_for_each(req, &ep->deferred, list) {
        if ((req->kind == FIATOMIC_REQ_FLUSH) &&
            (req->flags & FIATOMIC_REQ_F_SILENT)) {
            continue; /* the flush before the first software atomic, from
                         the key's unpacking: nobody waits for it until
                         an operation is posted behind it */
        }
        if (req->submit_ns < oldest) {
            oldest = req->submit_ns;
        }
        break;
    }
    return oldest;
}

void fiatomic_ep_check_overdue(fiatomic_ep_h ep)
{
    uint64_t timeout = ep->fia->op_timeout_ns;
    uint64_t now, oldest;

    if (ep->closed) {
        return;
    }

    ep->fia->target->check_overdue(ep);
    if ((timeout == UINT64_MAX) || ep->closed ||
        (ucs_list_is_empty(&ep->outstanding_list) &&
         ucs_list_is_empty(&ep->deferred))) {
        return;
    }

    now    = fiatomic_now_ns();
    oldest = fiatomic_ep_oldest_ucp_wait(ep, now, timeout);
    if ((oldest != UINT64_MAX) && ((now - oldest) >= timeout)) {
        ucs_debug("fiatomic ep %p: an operation waited %.3f s for UCP: "
                  "the endpoint fails", ep, (now - oldest) / 1e9);
        fiatomic_ep_fail(ep, UCS_ERR_TIMED_OUT);
    }
}

/* A started request is reported with `status` now; UCP keeps the elements
 * it holds, and the request with them (fiatomic_elem_done). */
static void fiatomic_req_abandon(fiatomic_ep_h ep, fiatomic_req_t *req,
                                 ucs_status_t status)
{
    fiatomic_assert(req->flags & FIATOMIC_REQ_F_LISTED);
    req->flags &= ~FIATOMIC_REQ_F_LISTED;
    ucs_list_del(&req->list);
    --ep->outstanding;

    if (req->status == UCS_OK) {
        req->status = status;
    }
    req->flags |= FIATOMIC_REQ_F_ABANDONED;
    fiatomic_req_complete(req); /* may recycle: not touched after */
}

void fiatomic_ep_fail(fiatomic_ep_h ep, ucs_status_t status)
{
    fiatomic_req_t *req;

    if (ep->closed) {
        return;
    }

    fiatomic_assert(status != UCS_OK);
    ep->failed = status;
    ep->closed = true;
    /* the user's callbacks below may destroy the endpoint: it is freed by
     * the last fiatomic_ep_inflight_remove, ours at the end at the latest */
    fiatomic_ep_inflight_add(ep);

    /* awaited replies, then what never started, then what UCP holds */
    ep->fia->target->ep_fail(ep, status);

    ep->deferred_barriers = 0;
    while (!ucs_list_is_empty(&ep->deferred)) {
        req         = ucs_list_extract_head(&ep->deferred, fiatomic_req_t,
                                            list);
        req->status = status;
        fiatomic_req_complete(req);
    }

    while (!ucs_list_is_empty(&ep->outstanding_list)) {
        req = ucs_list_head(&ep->outstanding_list, fiatomic_req_t, list);
        fiatomic_req_abandon(ep, req, status);
    }

    fiatomic_ep_inflight_remove(ep); /* last: may free a destroyed ep */
}
