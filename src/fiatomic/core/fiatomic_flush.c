/**
 * The flushes: of one endpoint (a request that passes the endpoint's
 * deferred queue as a barrier, fiatomic_ep.c, once everything before it
 * completed and reached the target), of a whole context (one endpoint
 * flush per endpoint, children of one request: their completion is
 * fiatomic_ep.c's too), and the endpoint flush before the first software
 * atomic of an endpoint that UCX 1.13.1's tcp wireup needs (asked for by
 * key unpacking, fiatomic_key.c).
 */
#include "core/fiatomic_strategy.h"

/*
 * UCX 1.13.1's tcp transport crashes the target process (its receive path
 * returns a NULL buffer to its pool) when software-atomic posts and an
 * endpoint flush reach it over a second tcp lane (another network device)
 * while wireup is still connecting that lane. Before the first operation that
 * needs the target's progress anyway (UCP's software atomics), the endpoint
 * is flushed once: operations posted meanwhile wait behind that flush as
 * behind an FI_FENCE. Device atomics (atomicx) never wait for it: they must
 * not depend on the target's CPU. Its error, if any, is reported by the
 * user's next flush (a silent request).
 */
ucs_status_t fiatomic_ep_wireup_flush(fiatomic_ep_h ep)
{
    fiatomic_req_t *req = fiatomic_req_get(ep, 0, 0);

    if (req == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    req->kind          = FIATOMIC_REQ_FLUSH;
    req->flags         = FIATOMIC_REQ_F_SILENT;
    ep->wireup_flushed = true;
    ep->native.unflushed      = true; /* a UCP flush even with nothing posted */
    fiatomic_ep_submit(ep, req);
    return UCS_OK;
}

static void fiatomic_req_set_param(fiatomic_req_t *req,
                                   const fiatomic_request_param_t *param)
{
    if (param != NULL) {
        if (param->op_attr_mask & FIATOMIC_OP_ATTR_FIELD_CALLBACK) {
            req->cb = param->cb;
        }
        if (param->op_attr_mask & FIATOMIC_OP_ATTR_FIELD_USER_DATA) {
            req->user_data = param->user_data;
        }
    }
}

/* What a flush call returns once its request was submitted. */
static ucs_status_ptr_t fiatomic_flush_posted(fiatomic_req_t *req)
{
    ucs_status_t status;

    req->flags &= ~FIATOMIC_REQ_F_POSTING;
    if (req->flags & FIATOMIC_REQ_F_COMPLETED) {
        status = req->status;
        fiatomic_req_put(req);
        return UCS_STATUS_PTR(status);
    }

    req->flags |= FIATOMIC_REQ_F_USER;
    return req;
}

static ucs_status_ptr_t
fiatomic_ep_flush_locked(fiatomic_ep_h ep,
                         const fiatomic_request_param_t *param)
{
    fiatomic_req_t *req;

    if (ep->closed) {
        return UCS_STATUS_PTR(ep->destroyed ? UCS_ERR_INVALID_PARAM :
                                              ep->failed);
    }

    fiatomic_ep_check_overdue(ep);
    if (ep->failed != UCS_OK) {
        return UCS_STATUS_PTR(ep->failed); /* reported to every operation */
    }
    req = fiatomic_req_get(ep, 0, 0);
    if (req == NULL) {
        return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    }

    req->kind   = FIATOMIC_REQ_FLUSH;
    req->flags  = FIATOMIC_REQ_F_POSTING;
    /* A flush always reaches the target: base-family posts that completed
     * only locally are flushed before it completes. */
    fiatomic_req_set_param(req, param);
    fiatomic_ep_submit(ep, req);
    return fiatomic_flush_posted(req);
}

FIATOMIC_API ucs_status_ptr_t
fiatomic_ep_flush_nbx(fiatomic_ep_h ep, const fiatomic_request_param_t *param)
{
    ucs_status_ptr_t sptr;
    bool locked;

    if (ep == NULL) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }

    locked = fiatomic_enter(ep->fia);
    sptr   = fiatomic_ep_flush_locked(ep, param);
    fiatomic_leave(ep->fia, locked);
    return sptr;
}

static ucs_status_ptr_t
fiatomic_flush_locked(fiatomic_h fia, const fiatomic_request_param_t *param)
{
    fiatomic_req_t *parent, *child;
    fiatomic_ep_h ep, tmp;

    if (fia->destroyed) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }

    parent = fiatomic_req_get_fia(fia);
    if (parent == NULL) {
        return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    }

    parent->kind      = FIATOMIC_REQ_CTX_FLUSH;
    parent->flags     = FIATOMIC_REQ_F_POSTING;
    parent->remaining = 1;
    fiatomic_req_set_param(parent, param);

    /* a child's callback may destroy the endpoint it flushed */
    ucs_list_for_each_safe(ep, tmp, &fia->eps, list) {
        fia->target->check_overdue(ep);
        child = fiatomic_req_get(ep, 0, 0);
        if (child == NULL) {
            if (parent->status == UCS_OK) {
                parent->status = UCS_ERR_NO_MEMORY;
            }
            break;
        }
        child->kind   = FIATOMIC_REQ_FLUSH;
        child->flags  = FIATOMIC_REQ_F_CHILD;
        child->parent = parent;
        ++parent->remaining;
        fiatomic_ep_submit(ep, child); /* child not touched after this */
    }

    fiatomic_ctx_flush_finish(parent); /* the posting count */
    return fiatomic_flush_posted(parent);
}

FIATOMIC_API ucs_status_ptr_t
fiatomic_flush_nbx(fiatomic_h fia, const fiatomic_request_param_t *param)
{
    ucs_status_ptr_t sptr;
    bool locked;

    if (fia == NULL) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }

    locked = fiatomic_enter(fia);
    sptr   = fiatomic_flush_locked(fia, param);
    fiatomic_leave(fia, locked);
    return sptr;
}
