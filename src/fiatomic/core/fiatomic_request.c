/**
 * Requests: allocation from a per-context cache (no malloc per operation in
 * steady state) and back, and the count of operations in flight a request
 * holds on its endpoint. Their completion is fiatomic_ep.c's, the user's
 * calls on them fiatomic_request_user.c's.
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
