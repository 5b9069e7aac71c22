/**
 * The bounded wait that completion queues (fi_cq_sread), counters
 * (fi_cntr_wait) and event queues (fi_eq_sread) share: a deadline from the
 * program's timeout, and sleeps of at most FIP_WAIT_SLICE_NS on the
 * object's condition variable, so that between two slices the caller looks
 * again and, under manual progress, progresses the domain (fip_wait_loop);
 * the lock and condition variable those objects wait on, and the wait
 * objects they may be opened with.
 */
#include "fip.h"

#include <time.h>

void fip_wait_init(pthread_mutex_t *lock, pthread_cond_t *cond)
{
    pthread_condattr_t cond_attr;

    pthread_mutex_init(lock, NULL);
    /* the clock fip_wait_slice's deadlines are on */
    pthread_condattr_init(&cond_attr);
    pthread_condattr_setclock(&cond_attr, CLOCK_MONOTONIC);
    pthread_cond_init(cond, &cond_attr);
    pthread_condattr_destroy(&cond_attr);
}

int64_t fip_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000L + ts.tv_nsec;
}

int64_t fip_wait_deadline(int timeout_ms)
{
    return (timeout_ms < 0) ? INT64_MAX :
           fip_now_ns() + (int64_t)timeout_ms * 1000000L;
}

int fip_wait_slice(pthread_mutex_t *lock, pthread_cond_t *cond,
                   int64_t deadline)
{
    int64_t now = fip_now_ns();
    int64_t sleep_ns;
    struct timespec ts;

    if (now >= deadline) {
        return -FI_ETIMEDOUT;
    }
    sleep_ns = deadline - now;
    if (sleep_ns > FIP_WAIT_SLICE_NS) {
        sleep_ns = FIP_WAIT_SLICE_NS;
    }
    now       += sleep_ns;
    ts.tv_sec  = now / 1000000000L;
    ts.tv_nsec = now % 1000000000L;
    (void)pthread_cond_timedwait(cond, lock, &ts);
    return 0;
}

void fip_wait_destroy(pthread_mutex_t *lock, pthread_cond_t *cond)
{
    pthread_cond_destroy(cond);
    pthread_mutex_destroy(lock);
}

int fip_wait_obj_check(enum fi_wait_obj wait_obj)
{
    switch (wait_obj) {
    case FI_WAIT_NONE:
    case FI_WAIT_UNSPEC:
    case FI_WAIT_MUTEX_COND:
    case FI_WAIT_YIELD:
        return 0;
    case FI_WAIT_FD:
    case FI_WAIT_SET:
    case FI_WAIT_POLLFD:
        return -FI_ENOSYS;
    default:
        return -FI_EINVAL;
    }
}

ssize_t fip_wait_loop(pthread_mutex_t *lock, pthread_cond_t *cond,
                      int64_t deadline, fip_wait_look_func_t look,
                      fip_wait_look_func_t idle_locked, void *arg)
{
    int timed_out = 0;
    ssize_t ret;

    for (;;) {
        ret = look(arg);
        if (ret != -FI_EAGAIN) {
            return ret;
        }
        if (timed_out) {
            return -FI_ETIMEDOUT;
        }
        pthread_mutex_lock(lock);
        ret = idle_locked(arg);
        if (ret == -FI_EAGAIN) {
            ret = fip_wait_slice(lock, cond, deadline);
        }
        pthread_mutex_unlock(lock);
        if (ret == -FI_ETIMEDOUT) {
            timed_out = 1;
        } else if (ret != 0) {
            return ret;
        }
    }
}
