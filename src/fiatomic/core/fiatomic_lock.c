/**
 * The context's lock, taken only when its UCP worker is multi-threaded
 * (UCS_THREAD_MODE_MULTI): a recursive mutex around every state change of
 * the context, its endpoints and requests; letting it go runs the callbacks
 * queued while it was busy (fiatomic_lock_defer.c queues them).
 *
 * Lock order: an API call holds the context's lock while it calls into UCP,
 * which takes the worker's lock. A thread in ucp_worker_progress() holds the
 * worker's lock while UCP calls our callbacks, so a callback that waited for
 * the context's lock could deadlock against a poster waiting for the
 * worker's. Callbacks therefore only try the lock: when another thread holds
 * it, the call is queued and that thread runs it before it lets the lock go
 * (lock or defer). Nothing ever waits for the context's lock while holding
 * the worker's. A context whose last user went away while its lock was held
 * is freed when the lock is let go: the lock says so, the context frees
 * itself (fiatomic_lock_release, fiatomic_context.c).
 */
#include "core/fiatomic_deferred.h"

#include <stdlib.h>

/* A thread's identity for the recursive lock: the address of its copy. */
static __thread char fiatomic_thread_token;

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
