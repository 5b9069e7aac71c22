/**
 * The bounded wait that completion queues (fi_cq_sread) and counters
 * (fi_cntr_wait) share: a deadline from the program's timeout, and sleeps
 * of at most FIP_WAIT_SLICE_NS on the object's condition variable, so that
 * between two slices the caller looks again and, under manual progress,
 * progresses the domain.
 */
#include "fip.h"

#include <time.h>

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
