/**
 * Requests: allocation from a per-context cache (no malloc per operation in
 * steady state) and back, the count of a request's elements still under way
 * (the last one to finish hands the request to its endpoint, fiatomic_ep.c,
 * which completes it), and the user-facing check/free calls.
 */
#include "core/fiatomic_request.h"
#include "core/fiatomic_ep.h"

#include <stdlib.h>

static ucs_status_t fiatomic_req_reserve(fiatomic_req_t *req, size_t count,
                                         size_t copy_bytes)
{
    void *ptr;

    if (count > req->elems_capacity) {
        ptr = realloc(req->elems, count * sizeof(*req->elems));
        if (ptr == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
        req->elems          = ptr;
        req->elems_capacity = count;
    }

    if (copy_bytes > req->copy_capacity) {
        ptr = realloc(req->copy, copy_bytes);
        if (ptr == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
        req->copy          = ptr;
        req->copy_capacity = copy_bytes;
    }

    return UCS_OK;
}

static fiatomic_req_t *fiatomic_req_alloc(fiatomic_h fia, fiatomic_ep_h ep,
                                          size_t count, size_t copy_bytes)
{
    ucs_list_link_t *link = fiatomic_freelist_get(&fia->free_reqs);
    fiatomic_req_t *req;

    if (link != NULL) {
        req = ucs_container_of(link, fiatomic_req_t, list);
    } else {
        req = calloc(1, sizeof(*req));
        if (req == NULL) {
            return NULL;
        }
    }

    if (fiatomic_req_reserve(req, count, copy_bytes) != UCS_OK) {
        free(req->elems);
        free(req->copy);
        free(req);
        return NULL;
    }

    req->fia       = fia;
    req->ep        = ep;
    req->parent    = NULL;
    req->kind      = FIATOMIC_REQ_OP;
    req->flags     = 0;
    req->count     = count;
    req->remaining = 0;
    req->status    = UCS_OK;
    req->cb        = NULL;
    req->user_data = NULL;
    return req;
}

fiatomic_req_t *fiatomic_req_get(fiatomic_ep_h ep, size_t count,
                                 size_t copy_bytes)
{
    return fiatomic_req_alloc(ep->fia, ep, count, copy_bytes);
}

fiatomic_req_t *fiatomic_req_get_fia(fiatomic_h fia)
{
    return fiatomic_req_alloc(fia, NULL, 0, 0);
}

static void fiatomic_req_release(fiatomic_req_t *req)
{
    free(req->elems);
    free(req->copy);
    free(req);
}

static void fiatomic_req_release_link(ucs_list_link_t *link)
{
    fiatomic_req_release(ucs_container_of(link, fiatomic_req_t, list));
}

void fiatomic_req_uncount(fiatomic_req_t *req)
{
    if (req->flags & FIATOMIC_REQ_F_COUNTED) {
        req->flags &= ~FIATOMIC_REQ_F_COUNTED;
        fiatomic_assert(req->ep->ops_inflight > 0);
        --req->ep->ops_inflight;
    }
}

void fiatomic_req_put(fiatomic_req_t *req)
{
    fiatomic_h fia = req->fia;

    if (ucs_unlikely(req->flags & FIATOMIC_REQ_F_ABANDONED) &&
        (req->remaining > 0)) {
        /* UCP still writes into its elements: recycled when it is done */
        req->flags |= FIATOMIC_REQ_F_ORPHAN;
        return;
    }

    fiatomic_req_uncount(req); /* never started (refused at layout) */

    if (!fiatomic_freelist_put(&fia->free_reqs, &req->list)) {
        fiatomic_req_release(req);
    }
}

void fiatomic_req_cache_purge(fiatomic_h fia)
{
    fiatomic_freelist_purge(&fia->free_reqs, fiatomic_req_release_link);
}

void fiatomic_elem_done(fiatomic_elem_t *elem, ucs_status_t status)
{
    fiatomic_req_t *req = elem->req;

    if ((status != UCS_OK) && (req->status == UCS_OK)) {
        req->status = status; /* the first error is the request's */
    }

    fiatomic_assert(req->remaining > 0);
    if (--req->remaining > 0) {
        return;
    } else if (ucs_unlikely(req->flags & FIATOMIC_REQ_F_ABANDONED)) {
        /* already reported (timed out); its owner may have let it go */
        if (req->flags & FIATOMIC_REQ_F_ORPHAN) {
            fiatomic_req_put(req);
        }
        return;
    }
    fiatomic_ep_req_done(req->ep, req);
}

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
