/**
 * The context's lock, taken only when its UCP worker is multi-threaded
 * (UCS_THREAD_MODE_MULTI): a recursive mutex around every state change of
 * the context, its endpoints and requests.
 *
 * Lock order: an API call holds the context's lock while it calls into UCP,
 * which takes the worker's lock. A thread in ucp_worker_progress() holds the
 * worker's lock while UCP calls our callbacks, so a callback that waited for
 * the context's lock could deadlock against a poster waiting for the
 * worker's. Callbacks therefore only try the lock: when another thread holds
 * it, the call is queued and that thread runs it before it lets the lock go
 * (lock or defer). Nothing ever waits for the context's lock while holding
 * the worker's. The copies of queued active messages are bounded
 * (FIATOMIC_DEFERRED_BYTES_MAX): past that a message is dropped and
 * counted. A context whose last user went away while its lock was held is
 * freed when the lock is let go: the lock says so, the context frees itself
 * (fiatomic_lock_release, fiatomic_context.c).
 */
#include "core/fiatomic_context.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* A thread's identity for the recursive lock: the address of its copy. */
static __thread char fiatomic_thread_token;

/* Bytes of target-side messages copied while the lock was busy: what a
 * flood of peers can make us hold between two releases of the lock. */
#define FIATOMIC_DEFERRED_BYTES_MAX (64ul << 20)

typedef enum {
    FIATOMIC_DEFERRED_SEND, /* ucp_send_nbx_callback_t */
    FIATOMIC_DEFERRED_RECV, /* ucp_am_recv_data_nbx_callback_t */
    FIATOMIC_DEFERRED_AM    /* ucp_am_recv_callback_t */
} fiatomic_deferred_kind_t;

struct fiatomic_deferred {
    fiatomic_deferred_t      *next;
    fiatomic_deferred_kind_t kind;
    union {
        ucp_send_nbx_callback_t         send;
        ucp_am_recv_data_nbx_callback_t recv;
        ucp_am_recv_callback_t          am;
    }                        fn;
    void                     *request;   /* SEND, RECV */
    ucs_status_t             status;     /* SEND, RECV */
    size_t                   length;     /* RECV, AM */
    void                     *arg;       /* user_data (SEND, RECV), the
                                            handler's argument (AM) */
    void                     *data;      /* AM: UCP's kept data, or copy */
    ucp_am_recv_param_t      param;      /* AM */
    bool                     kept;       /* AM: UCP's data, returned
                                            UCS_INPROGRESS for */
    size_t                   cost;       /* bytes counted against the cap */
    uint8_t                  copy[];
};

static uintptr_t fiatomic_self(void)
{
    return (uintptr_t)&fiatomic_thread_token;
}

ucs_status_t fiatomic_lock_init(fiatomic_h fia)
{
    pthread_mutexattr_t attr;

    if (!fia->mt) {
        return UCS_OK;
    }

    if (pthread_mutexattr_init(&attr) != 0) {
        return UCS_ERR_NO_RESOURCE;
    }
    /* the recursion is ours (depth): a plain mutex underneath */
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_NORMAL);
    if (pthread_mutex_init(&fia->lock.mutex, &attr) != 0) {
        pthread_mutexattr_destroy(&attr);
        return UCS_ERR_NO_RESOURCE;
    }
    pthread_mutexattr_destroy(&attr);
    if (pthread_mutex_init(&fia->lock.queue_lock, NULL) != 0) {
        pthread_mutex_destroy(&fia->lock.mutex);
        return UCS_ERR_NO_RESOURCE;
    }
    fia->lock.head = NULL;
    fia->lock.tail = &fia->lock.head;
    return UCS_OK;
}

void fiatomic_lock_cleanup(fiatomic_h fia)
{
    if (fia->mt) {
        pthread_mutex_destroy(&fia->lock.queue_lock);
        pthread_mutex_destroy(&fia->lock.mutex);
    }
}

static bool fiatomic_lock_owned(fiatomic_h fia)
{
    return __atomic_load_n(&fia->lock.owner, __ATOMIC_RELAXED) ==
           fiatomic_self();
}

static void fiatomic_lock_taken(fiatomic_h fia)
{
    __atomic_store_n(&fia->lock.owner, fiatomic_self(), __ATOMIC_RELAXED);
    fia->lock.depth = 1;
}

void fiatomic_lock_acquire(fiatomic_h fia)
{
    if (fiatomic_lock_owned(fia)) {
        ++fia->lock.depth;
        return;
    }
    pthread_mutex_lock(&fia->lock.mutex);
    fiatomic_lock_taken(fia);
}

bool fiatomic_lock_try(fiatomic_h fia)
{
    if (fiatomic_lock_owned(fia)) {
        ++fia->lock.depth;
        return true;
    }
    if (pthread_mutex_trylock(&fia->lock.mutex) != 0) {
        return false;
    }
    fiatomic_lock_taken(fia);
    return true;
}

static fiatomic_deferred_t *fiatomic_deferred_pop(fiatomic_h fia)
{
    fiatomic_deferred_t *d;

    pthread_mutex_lock(&fia->lock.queue_lock);
    d = fia->lock.head;
    if (d != NULL) {
        fia->lock.head = d->next;
        if (fia->lock.head == NULL) {
            fia->lock.tail = &fia->lock.head;
        }
        __atomic_store_n(&fia->lock.queued_bytes,
                         fia->lock.queued_bytes - d->cost, __ATOMIC_RELAXED);
        __atomic_store_n(&fia->lock.pending, fia->lock.head != NULL,
                         __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&fia->lock.queue_lock);
    return d;
}

/* Run one queued callback, with the lock held. */
static void fiatomic_deferred_run(fiatomic_h fia, fiatomic_deferred_t *d)
{
    ucs_status_t status;

    switch (d->kind) {
    case FIATOMIC_DEFERRED_SEND:
        d->fn.send(d->request, d->status, d->arg);
        break;
    case FIATOMIC_DEFERRED_RECV:
        d->fn.recv(d->request, d->status, d->length, d->arg);
        break;
    case FIATOMIC_DEFERRED_AM:
        status = d->fn.am(d->arg, NULL, 0, d->data, d->length, &d->param);
        if (d->kept && (status != UCS_INPROGRESS)) {
            /* UCP kept its eager data for us and the handler is done with
             * it, as UCP does when a handler returns UCS_OK inside its
             * callback (a rendezvous is never kept: fiatomic_cb_enter_am) */
            ucp_am_data_release(fia->worker, d->data);
        }
        break;
    }
    free(d);
}

bool fiatomic_lock_unlock(fiatomic_h fia)
{
    fiatomic_deferred_t *d;

    if (fia->lock.depth > 1) {
        --fia->lock.depth;
        return false;
    }

    for (;;) {
        /* callbacks queued while we held it run before it is let go */
        while ((d = fiatomic_deferred_pop(fia)) != NULL) {
            fiatomic_deferred_run(fia, d);
        }
        if (fia->free_pending) {
            /* the last user of a destroyed context was a callback: nothing
             * can reach it any more */
            fia->lock.depth = 0;
            __atomic_store_n(&fia->lock.owner, 0, __ATOMIC_RELAXED);
            pthread_mutex_unlock(&fia->lock.mutex);
            return true;
        }
        fia->lock.depth = 0;
        __atomic_store_n(&fia->lock.owner, 0, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&fia->lock.mutex);
        /* a callback may have queued itself after our last look but before
         * the unlock: whoever gets the lock now runs it */
        if (!__atomic_load_n(&fia->lock.pending, __ATOMIC_ACQUIRE) ||
            !fiatomic_lock_try(fia)) {
            return false;
        }
    }
}

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
