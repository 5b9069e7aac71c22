/**
 * The calls the user makes on a request that a post or a flush returned:
 * checking its status (a request still in progress makes its endpoint, or
 * for a context flush the whole context, look at what is overdue) and
 * freeing it (a request not yet completed finishes in the background and
 * is recycled when it completes).
 */
#include "core/fiatomic_request.h"
#include "core/fiatomic_ep.h"

/* Checking a request that may be overdue, or on a multi-threaded context:
 * out of line, so that the polling answers below need no stack frame. */
static UCS_F_NOINLINE ucs_status_t
fiatomic_request_check_slow(fiatomic_req_t *req)
{
    fiatomic_h fia = req->fia;
    ucs_status_t status;
    bool locked;

    locked = fiatomic_enter(fia);
    if (!(req->flags & FIATOMIC_REQ_F_COMPLETED)) {
        /* Waiting on it: a reply that should have come makes us look at
         * the target (a request not completed keeps its ep alive). */
        if (req->ep != NULL) {
            fiatomic_ep_check_overdue(req->ep);
        } else {
            fiatomic_ctx_check_overdue(fia);
        }
    }
    status = (req->flags & FIATOMIC_REQ_F_COMPLETED) ? req->status :
                                                       UCS_INPROGRESS;
    fiatomic_leave(fia, locked);
    return status;
}

FIATOMIC_API ucs_status_t fiatomic_request_check_status(void *request)
{
    fiatomic_req_t *req = request;

    if (req == NULL) {
        return UCS_ERR_INVALID_PARAM;
    }

    /* The answers of a polling loop, a few instructions each on a
     * single-threaded context: done, or in progress with no target-side
     * message of its endpoint to watch (a window of requests is tested
     * over and over while the network works); UCP's own operations are
     * looked at for the operation timeout one poll in
     * FIATOMIC_EP_CHECK_EVERY. */
    if (ucs_likely(!req->fia->mt)) {
        if (req->flags & FIATOMIC_REQ_F_COMPLETED) {
            return req->status;
        } else if ((req->ep != NULL) &&
                   ucs_list_is_empty(&req->ep->target.am_pending) &&
                   ((++req->ep->polls % FIATOMIC_EP_CHECK_EVERY) != 0)) {
            return UCS_INPROGRESS;
        }
    }
    return fiatomic_request_check_slow(req);
}

FIATOMIC_API void fiatomic_request_free(void *request)
{
    fiatomic_req_t *req = request;
    fiatomic_h fia;
    bool locked;

    if (req == NULL) {
        return;
    }

    fia    = req->fia;
    locked = fiatomic_enter(fia);
    if (req->flags & FIATOMIC_REQ_F_COMPLETED) {
        fiatomic_req_put(req);
    } else {
        /* Finishes in the background and is recycled on completion. */
        req->flags |= FIATOMIC_REQ_F_FREED;
    }
    fiatomic_leave(fia, locked);
}
