/**
 * Callbacks that find the context's lock busy (fiatomic_lock.c): UCP's
 * send, receive and active-message callbacks try the lock, and when another
 * thread holds it they are queued (a copy of an active message's data when
 * UCP does not keep it) for that thread to run before it lets the lock go.
 * The copies of queued active messages are bounded
 * (FIATOMIC_DEFERRED_BYTES_MAX): past that a message is dropped and
 * counted. After queueing, a callback tries the lock once more and lets it
 * go (fiatomic_lock_release): the holder may have left in between.
 */
#include "core/fiatomic_deferred.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* Bytes of target-side messages copied while the lock was busy: what a
 * flood of peers can make us hold between two releases of the lock. */
#define FIATOMIC_DEFERRED_BYTES_MAX (64ul << 20)

static void fiatomic_deferred_push(fiatomic_h fia, fiatomic_deferred_t *d)
{
    pthread_mutex_lock(&fia->lock.queue_lock);
    d->next          = NULL;
    *fia->lock.tail  = d;
    fia->lock.tail   = &d->next;
    __atomic_store_n(&fia->lock.queued_bytes,
                     fia->lock.queued_bytes + d->cost, __ATOMIC_RELAXED);
    __atomic_store_n(&fia->lock.pending, true, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&fia->lock.queue_lock);
}

/* After queueing: the holder may have let the lock go after it last looked
 * at the queue (and before we set `pending`); then we hold it now and run
 * the queue ourselves. Not for an active message whose data UCP keeps for
 * us: the handler must return to UCP before that data may be released; such
 * a message runs at the next release of the lock (any call, any callback). */
static void fiatomic_deferred_kick(fiatomic_h fia)
{
    if (fiatomic_lock_try(fia)) {
        fiatomic_lock_release(fia);
    }
}

/* A queue entry; on no memory the caller tries the lock again. */
static fiatomic_deferred_t *fiatomic_deferred_alloc(size_t extra)
{
    return calloc(1, sizeof(fiatomic_deferred_t) + extra);
}

/* NULL with the lock taken, else a queue entry for the callback: a
 * completion must not be lost, so on no memory the lock is tried again. */
static fiatomic_deferred_t *fiatomic_cb_lock_or_entry(fiatomic_h fia)
{
    fiatomic_deferred_t *d;

    for (;;) {
        if (fiatomic_lock_try(fia)) {
            return NULL;
        }
        d = fiatomic_deferred_alloc(0);
        if (d != NULL) {
            return d;
        }
        sched_yield();
    }
}

bool fiatomic_cb_enter_send(fiatomic_h fia, ucp_send_nbx_callback_t fn,
                            void *request, ucs_status_t status,
                            void *user_data)
{
    fiatomic_deferred_t *d = fiatomic_cb_lock_or_entry(fia);

    if (d == NULL) {
        return true;
    }

    d->kind    = FIATOMIC_DEFERRED_SEND;
    d->fn.send = fn;
    d->request = request;
    d->status  = status;
    d->arg     = user_data;
    fiatomic_deferred_push(fia, d);
    fiatomic_deferred_kick(fia);
    return false;
}

bool fiatomic_cb_enter_recv(fiatomic_h fia, ucp_am_recv_data_nbx_callback_t fn,
                            void *request, ucs_status_t status, size_t length,
                            void *user_data)
{
    fiatomic_deferred_t *d = fiatomic_cb_lock_or_entry(fia);

    if (d == NULL) {
        return true;
    }

    d->kind    = FIATOMIC_DEFERRED_RECV;
    d->fn.recv = fn;
    d->request = request;
    d->status  = status;
    d->length  = length;
    d->arg     = user_data;
    fiatomic_deferred_push(fia, d);
    fiatomic_deferred_kick(fia);
    return false;
}

bool fiatomic_cb_enter_am(fiatomic_h fia, ucp_am_recv_callback_t fn,
                          void *arg, void *data, size_t length,
                          const ucp_am_recv_param_t *param,
                          ucs_status_t *status_p)
{
    bool rndv = param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV;
    bool kept = param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA;
    ucp_am_recv_param_t queued_param = *param;
    fiatomic_deferred_t *d;
    size_t cost, queued;

    if (fiatomic_lock_try(fia)) {
        return true;
    }

    if (rndv) {
        /* A rendezvous is declined here, inside UCP's callback, never kept
         * for later: outside the callback UCX declines one with
         * ucp_am_data_release(), which sends the sender its answer without
         * the worker's thread lock (UCX 1.13 to 1.22), racing the thread
         * that progresses the worker (a duplicate answer, a corrupted tcp
         * endpoint). The handler later sees an empty message from the same
         * sender instead: what it answers a refused request with. */
        queued_param.recv_attr &= ~(uint64_t)UCP_AM_RECV_ATTR_FLAG_RNDV;
        length = 0;
    }
    /* our copy costs its bytes and the entry itself: a flood of empty
     * messages is bounded too */
    cost = kept ? 0 : (sizeof(*d) + length);
    queued = __atomic_load_n(&fia->lock.queued_bytes, __ATOMIC_RELAXED);
    if (queued + cost > FIATOMIC_DEFERRED_BYTES_MAX) {
        d = NULL; /* a flood while the lock is busy: dropped */
    } else {
        d = fiatomic_deferred_alloc(kept ? 0 : length);
    }
    if (d == NULL) {
        ucs_debug("fiatomic: active message dropped (context busy, %zu "
                  "bytes queued)", queued);
        __atomic_fetch_add(&fia->messages_dropped, 1, __ATOMIC_RELAXED);
        /* UCS_OK inside UCP's callback: UCP declines a rendezvous and
         * frees kept data itself (releasing it here too would do it
         * twice) */
        *status_p = UCS_OK;
        return false;
    }

    d->kind    = FIATOMIC_DEFERRED_AM;
    d->fn.am   = fn;
    d->arg     = arg;
    d->length  = length;
    d->param   = queued_param;
    d->kept    = kept;
    d->cost    = cost;
    if (kept) {
        d->data = data;
    } else {
        if (length > 0) {
            memcpy(d->copy, data, length);
        }
        d->data = d->copy;
    }
    fiatomic_deferred_push(fia, d);
    if (!kept) {
        fiatomic_deferred_kick(fia); /* our copy: may run right here */
    }
    *status_p = kept ? UCS_INPROGRESS : UCS_OK;
    return false;
}
