/**
 * Initiator endpoints: their life (create, query, destroy; a destroyed one
 * is freed once its last UCP operation drained) and the path of every
 * request posted on them: its start (each element to its strategy's table),
 * the deferred queue that holds it behind a fence, a flush or an earlier
 * operation on the same address (fiatomic_order.c), and its completion, all
 * of it here: an element done, the request done, and its report (the
 * user's callback, the counter, a silent request's error kept for the next
 * flush, a context flush's child to its parent). Completing a request lets
 * the deferred queue move, which starts requests, which may complete at
 * once: one loop, in one file. The flush calls are fiatomic_flush.c's, the
 * operation timeout fiatomic_ep_timeout.c's, the keys fiatomic_key.c's; the
 * atomicity domain of the UCP endpoint's lanes comes from
 * fiatomic_ucx_compat.c.
 */
#include "core/fiatomic_strategy.h"

#include <ucs/debug/log_def.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ucs_status_t fiatomic_ep_create_locked(fiatomic_h fia, ucp_ep_h ucp_ep,
                                              const fiatomic_ep_params_t *params,
                                              fiatomic_ep_h *ep_p)
{
    uint64_t msg_order = 0;
    fiatomic_ep_h ep;
    unsigned flags = 0;

    if ((fia == NULL) || (ucp_ep == NULL) || (ep_p == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }

    if ((params != NULL) && (params->field_mask & FIATOMIC_EP_PARAM_FIELD_FLAGS)) {
        if (params->flags & ~(FIATOMIC_EP_FLAG_SELECTIVE_COMPLETION |
                              FIATOMIC_EP_FLAG_PEER_ERR_MODE)) {
            return UCS_ERR_INVALID_PARAM;
        }
        flags = params->flags;
    }

    if ((params != NULL) &&
        (params->field_mask & FIATOMIC_EP_PARAM_FIELD_MSG_ORDER)) {
        if (params->msg_order & ~FIATOMIC_EP_MSG_ORDER_SUPPORTED) {
            return UCS_ERR_UNSUPPORTED; /* not an atomic ordering */
        }
        msg_order = params->msg_order;
    }

    ep = calloc(1, sizeof(*ep));
    if (ep == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    ep->fia          = fia;
    ep->ucp_ep       = ucp_ep;
    ep->flags        = flags;
    ep->msg_order    = msg_order;
    ep->silent_error = UCS_OK;
    ep->flush_status = UCS_OK;
    /* a key of another endpoint, even one freed before, names nothing */
    fiatomic_handle_table_init_unique(&ep->keys, UINT32_MAX);
    ucs_list_head_init(&ep->outstanding_list);
    ucs_list_head_init(&ep->deferred);
    ucs_list_head_init(&ep->target.am_pending);
    fiatomic_ucx_ep_detect_lanes(ep);
    ++fia->num_eps;
    ucs_list_add_tail(&fia->eps, &ep->list);
    *ep_p = ep;
    return UCS_OK;
}

FIATOMIC_API ucs_status_t fiatomic_ep_create(fiatomic_h fia, ucp_ep_h ucp_ep,
                                             const fiatomic_ep_params_t *params,
                                             fiatomic_ep_h *ep_p)
{
    ucs_status_t status;
    bool locked;

    if (fia == NULL) {
        return UCS_ERR_INVALID_PARAM;
    }
    locked = fiatomic_enter(fia);
    status = fiatomic_ep_create_locked(fia, ucp_ep, params, ep_p);
    fiatomic_leave(fia, locked);
    return status;
}

/* A freed endpoint no longer counts into its counter. */
static void fiatomic_cntr_ep_freed(fiatomic_ep_h ep)
{
    if (ep->cntr != NULL) {
        --ep->cntr->bound;
        ep->cntr = NULL;
    }
}

static void fiatomic_ep_free(fiatomic_ep_h ep)
{
    fiatomic_h fia;

    fiatomic_ep_keys_free(ep);
    fiatomic_cntr_ep_freed(ep);
    fia = ep->fia;
    free(ep);
    --fia->num_eps;
    fiatomic_context_release(fia); /* after fiatomic_destroy: the last one */
}

static void fiatomic_ep_progress_deferred(fiatomic_ep_h ep);

void fiatomic_ep_inflight_add(fiatomic_ep_h ep)
{
    ++ep->inflight;
}

/* Callers must not touch ep afterwards: a destroyed ep is freed here once its
 * last UCP operation has drained. */
void fiatomic_ep_inflight_remove(fiatomic_ep_h ep)
{
    fiatomic_assert(ep->inflight > 0);
    if (--ep->inflight > 0) {
        return;
    } else if (ep->destroyed) {
        fiatomic_ep_free(ep);
    } else if (!ucs_list_is_empty(&ep->deferred)) {
        /* a flush or a fence may have waited for the last UCP operation */
        fiatomic_ep_progress_deferred(ep);
    }
}

/* ------------------------------------------------------------------------ */
/* Request ordering: start, fence, flush, completion                         */

static void fiatomic_ep_progress_deferred(fiatomic_ep_h ep);

static void fiatomic_ep_start(fiatomic_ep_h ep, fiatomic_req_t *req)
{
    const fiatomic_strategy_ops_t *ops;
    fiatomic_elem_t *elem;
    size_t i;

    req->flags    |= FIATOMIC_REQ_F_STARTED;
    /* One extra count held while starting, so an element finishing at once
     * cannot complete the request before every element was started. */
    req->remaining = req->count + 1;

    for (i = 0; i < req->count; ) {
        elem = &req->elems[i];
        if ((elem->strategy != FIATOMIC_STRATEGY_TARGET) &&
            !fiatomic_key_live(ep, elem->key)) {
            /* the target refuses stale target-side requests itself */
            fiatomic_elem_done(elem, UCS_ERR_INVALID_PARAM);
            ++i;
            continue;
        }
        ops  = fiatomic_ctx_strategy_ops(ep->fia, elem->strategy);
        if (ops == NULL) {
            fiatomic_assertv(0, "invalid strategy %d", elem->strategy);
            fiatomic_elem_done(elem, UCS_ERR_INVALID_PARAM);
            ++i;
            continue;
        }
        /* consecutive elements may share one operation (target-side) */
        i += ops->start(req, i, req->count - i);
    }

    if (--req->remaining == 0) {
        fiatomic_req_complete(req); /* all in place: never listed */
        return;
    }

    /* Completions come from progress now; fences and flushes wait. */
    req->flags |= FIATOMIC_REQ_F_LISTED;
    ++ep->outstanding;
    ucs_list_add_tail(&ep->outstanding_list, &req->list);
}

/* Report a request's completion to whoever owns it. */
void fiatomic_req_complete(fiatomic_req_t *req)
{
    fiatomic_ep_h ep = req->ep;

    req->flags |= FIATOMIC_REQ_F_COMPLETED;
    fiatomic_req_uncount(req);
    if ((req->flags & FIATOMIC_REQ_F_SILENT) && (req->status != UCS_OK) &&
        (ep->silent_error == UCS_OK)) {
        ep->silent_error = req->status; /* nothing lost: flush reports it */
    }
    if ((req->kind == FIATOMIC_REQ_OP) &&
        !(req->flags & FIATOMIC_REQ_F_POSTING)) {
        /* completing while posting: the call counts it (or returns the
         * error, and then nothing is counted) */
        fiatomic_cntr_count(ep, req->status);
    }

    if (req->flags & FIATOMIC_REQ_F_CHILD) {
        fiatomic_ctx_flush_child_done(req); /* recycles it */
        return;
    }

    if (req->flags & FIATOMIC_REQ_F_USER) {
        if (req->cb != NULL) {
            req->cb(req, req->status, req->user_data);
        }
        if (req->flags & FIATOMIC_REQ_F_FREED) {
            fiatomic_req_put(req);
        }
    } else if (!(req->flags & FIATOMIC_REQ_F_POSTING)) {
        fiatomic_req_put(req); /* silent: nobody holds it */
    }
    /* else the post call still running returns the status itself */
}

void fiatomic_ep_req_done(fiatomic_ep_h ep, fiatomic_req_t *req)
{
    if (req->flags & FIATOMIC_REQ_F_LISTED) {
        req->flags &= ~FIATOMIC_REQ_F_LISTED;
        ucs_list_del(&req->list);
        --ep->outstanding;
    }
    fiatomic_req_complete(req);
    if (!ucs_list_is_empty(&ep->deferred)) {
        fiatomic_ep_progress_deferred(ep);
    }
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

static void fiatomic_ep_ucp_flush_done(fiatomic_ep_h ep, ucs_status_t status)
{
    ep->flushing     = false;
    ep->flush_status = status;
    if (status == UCS_OK) {
        ep->native.unflushed = false;
    }
    if (!ep->destroyed) {
        fiatomic_ep_progress_deferred(ep);
    }
    fiatomic_ep_inflight_remove(ep); /* last: may free a destroyed ep */
}

static void fiatomic_ep_ucp_flush_cb(void *request, ucs_status_t status,
                                     void *user_data)
{
    fiatomic_h fia = ((fiatomic_ep_h)user_data)->fia;
    bool locked;

    FIATOMIC_CB_ENTER_SEND(fia, fiatomic_ep_ucp_flush_cb, request, status,
                           user_data, locked);
    ucp_request_free(request);
    fiatomic_ep_ucp_flush_done(user_data, status);
    fiatomic_leave(fia, locked);
}

static void fiatomic_ep_ucp_flush_start(fiatomic_ep_h ep)
{
    ucp_request_param_t param;
    ucs_status_ptr_t sptr;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send      = fiatomic_ep_ucp_flush_cb;
    param.user_data    = ep;

    ep->flushing = true;
    fiatomic_ep_inflight_add(ep);
    sptr = ucp_ep_flush_nbx(ep->ucp_ep, &param);
    if (!UCS_PTR_IS_PTR(sptr)) {
        fiatomic_ep_ucp_flush_done(ep, UCS_PTR_STATUS(sptr));
    }
}

/* A barrier (flush request or fenced operation) at the head of the deferred
 * queue may pass once everything before it completed and any update that
 * completed only locally was flushed to the target. */
static bool fiatomic_ep_barrier_ready(fiatomic_ep_h ep)
{
    /* inflight: UCP still holds operations of ours (a target-side message
     * whose reply came before its send completion, a liveness probe, a
     * post): after a flush the user may close the endpoint, and nothing of
     * ours may be left in UCP then. */
    if ((ep->outstanding > 0) || ep->flushing || (ep->inflight > 0)) {
        return false;
    }

    /* A failed UCP flush is not retried for the same barrier: it passes
     * with the error (UCP fails a flush of a failed endpoint at once, and
     * retrying would spin here for ever). */
    if (ep->native.unflushed && (ep->flush_status == UCS_OK)) {
        fiatomic_ep_ucp_flush_start(ep);
        return false; /* progress resumes from the flush completion */
    }
    return true;
}

static bool fiatomic_req_is_barrier(const fiatomic_req_t *req)
{
    return (req->kind == FIATOMIC_REQ_FLUSH) ||
           (req->flags & FIATOMIC_REQ_F_FENCE);
}

/* Barriers pass in order, each once everything before it completed;
 * operations before the first barrier start as soon as no earlier
 * operation they are ordered after holds them back (ordered endpoints). */
static void fiatomic_ep_progress_once(fiatomic_ep_h ep)
{
    fiatomic_req_t *req, *tmp;
    ucs_status_t status;

again:
    while (!ucs_list_is_empty(&ep->deferred)) {
        req = ucs_list_head(&ep->deferred, fiatomic_req_t, list);
        if (!fiatomic_req_is_barrier(req)) {
            break;
        }
        if (!fiatomic_ep_barrier_ready(ep)) {
            return;
        }
        status = ep->flush_status;
        ep->flush_status = UCS_OK;
        ucs_list_del(&req->list);
        --ep->deferred_barriers;
        if (req->kind == FIATOMIC_REQ_FLUSH) {
            if (status == UCS_OK) {
                status           = ep->silent_error;
                ep->silent_error = UCS_OK;
            }
            req->status = status;
            fiatomic_req_complete(req);
        } else if (status != UCS_OK) {
            req->status = status; /* what it fences could not finish */
            fiatomic_req_complete(req);
        } else {
            fiatomic_ep_start(ep, req);
        }
    }

    ucs_list_for_each_safe(req, tmp, &ep->deferred, list) {
        if (fiatomic_req_is_barrier(req)) {
            if (req == ucs_list_head(&ep->deferred, fiatomic_req_t, list)) {
                goto again; /* everything before it started */
            }
            return; /* later operations wait behind it */
        } else if ((ep->msg_order != 0) && fiatomic_order_must_wait(ep, req)) {
            continue;
        }
        ucs_list_del(&req->list);
        fiatomic_ep_start(ep, req);
        if (ep->progress_again) {
            return; /* the list changed under us: the caller starts over */
        }
    }
}

static void fiatomic_ep_progress_deferred(fiatomic_ep_h ep)
{
    /* Starting a request may complete others and call back into the user,
     * who may post: one pass at a time, repeated while anything changed.
     * A failed endpoint starts nothing (fiatomic_ep_fail empties it). */
    if (ep->failed != UCS_OK) {
        return;
    } else if (ep->progressing) {
        ep->progress_again = true;
        return;
    }

    ep->progressing = true;
    do {
        ep->progress_again = false;
        fiatomic_ep_progress_once(ep);
    } while (ep->progress_again && !ep->closed);
    ep->progressing = false;
}

void fiatomic_ep_submit(fiatomic_ep_h ep, fiatomic_req_t *req)
{
    req->submit_ns = fiatomic_now_ns(); /* the operation timeout's start */
    if (ucs_unlikely(ep->failed != UCS_OK)) {
        /* a context flush's child (the only caller that may reach a failed
         * endpoint with a request of the user's) reports what is left of
         * its silent errors; anything else fails as the endpoint did */
        if (req->flags & FIATOMIC_REQ_F_CHILD) {
            req->status      = ep->silent_error;
            ep->silent_error = UCS_OK;
        } else {
            req->status = ep->failed;
        }
        fiatomic_req_complete(req);
        return;
    }

    if ((ep->msg_order != 0) && (req->kind == FIATOMIC_REQ_OP)) {
        fiatomic_order_prepare(req);
    }

    if (fiatomic_req_is_barrier(req)) {
        if (ucs_list_is_empty(&ep->deferred) && (ep->outstanding == 0) &&
            !ep->native.unflushed && !ep->flushing && (ep->inflight == 0)) {
            if (req->kind == FIATOMIC_REQ_FLUSH) {
                req->status      = ep->silent_error;
                ep->silent_error = UCS_OK;
                fiatomic_req_complete(req);
            } else {
                fiatomic_ep_start(ep, req);
            }
            return;
        }
        ++ep->deferred_barriers;
    } else {
        if ((ep->deferred_barriers == 0) &&
            ((ep->msg_order == 0) || !fiatomic_order_must_wait(ep, req))) {
            fiatomic_ep_start(ep, req);
            return;
        }
    }

    ucs_list_add_tail(&ep->deferred, &req->list);
    fiatomic_ep_progress_deferred(ep);
}

FIATOMIC_API ucs_status_t fiatomic_ep_query(fiatomic_ep_h ep,
                                            fiatomic_ep_attr_t *attr)
{
    /* what it reads is set at creation: no lock */
    if ((ep == NULL) || ep->destroyed || (attr == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }

    if (attr->field_mask & FIATOMIC_EP_ATTR_FIELD_MSG_ORDER) {
        /* what was asked for; nothing is ordered without asking (the
         * strategies of two calls may differ) */
        attr->msg_order = ep->msg_order;
    }
    if (attr->field_mask & FIATOMIC_EP_ATTR_FIELD_MSG_ORDER_SUPPORTED) {
        attr->msg_order_supported = FIATOMIC_EP_MSG_ORDER_SUPPORTED;
    }
    if (attr->field_mask & FIATOMIC_EP_ATTR_FIELD_CAS_STATS) {
        /* counters: a racing thread's increments may be missed, never
         * torn (aligned 64-bit words) */
        attr->cas_attempts = ep->cas.attempts;
        attr->cas_retries  = ep->cas.retries;
        attr->cas_handoffs = ep->cas.handoffs;
    }
    return UCS_OK;
}

/* ------------------------------------------------------------------------ */
/* Quiet across a context: one endpoint flush (a child) per endpoint, the
 * parent completing with the first error when the last child completed.
 * The parent's `remaining` counts its children, plus one while posting. */

void fiatomic_ctx_flush_finish(fiatomic_req_t *parent)
{
    if (--parent->remaining > 0) {
        return;
    }
    parent->flags |= FIATOMIC_REQ_F_COMPLETED;
    if (parent->flags & FIATOMIC_REQ_F_USER) {
        if (parent->cb != NULL) {
            parent->cb(parent, parent->status, parent->user_data);
        }
        if (parent->flags & FIATOMIC_REQ_F_FREED) {
            fiatomic_req_put(parent);
        }
    }
    /* else the call still running returns the status itself */
}

void fiatomic_ctx_flush_child_done(fiatomic_req_t *child)
{
    fiatomic_req_t *parent = child->parent;

    if ((child->status != UCS_OK) && (parent->status == UCS_OK)) {
        parent->status = child->status; /* the first error */
    }
    fiatomic_req_put(child);
    fiatomic_ctx_flush_finish(parent);
}

FIATOMIC_API void fiatomic_ep_destroy(fiatomic_ep_h ep)
{
    fiatomic_req_t *req;
    fiatomic_h fia;
    bool locked;

    if (ep == NULL) {
        return;
    }

    fia    = ep->fia;
    locked = fiatomic_enter(fia);
    ep->destroyed = true;
    ep->closed    = true;
    ucs_list_del(&ep->list);
    /* Replies still awaited will not be waited for. */
    fia->target->ep_fail(ep, UCS_ERR_CANCELED);
    /* Nothing deferred will ever start now. */
    ep->deferred_barriers = 0;
    while (!ucs_list_is_empty(&ep->deferred)) {
        req         = ucs_list_extract_head(&ep->deferred, fiatomic_req_t,
                                            list);
        req->status = UCS_ERR_CANCELED;
        fiatomic_req_complete(req);
    }

    /* Started operations finish (or fail) as UCP completes them; the ep is
     * freed when the last one drains. */
    if (ep->inflight == 0) {
        fiatomic_ep_free(ep);
    }
    fiatomic_leave(fia, locked);
}
