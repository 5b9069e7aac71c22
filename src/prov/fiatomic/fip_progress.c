/**
 * FI_PROGRESS_AUTO: one thread per domain progresses its UCP worker, so
 * that operations complete, peers' target-side atomics execute and the
 * key service answers while the program does something else. It spins
 * while there is work; once idle it yields, then sleeps in growing steps
 * up to FIP_PROGRESS_SLEEP_MAX_NS, so an idle domain costs little CPU and
 * fi_close stops the thread within one such sleep.
 */
#include "fip.h"

#include <sched.h>
#include <time.h>

/* idle rounds spent yielding before the thread sleeps */
#define FIP_PROGRESS_YIELDS        256
#define FIP_PROGRESS_SLEEP_MIN_NS  1000L
#define FIP_PROGRESS_SLEEP_MAX_NS  100000L

static void *fip_progress_main(void *arg)
{
    fip_domain_t *domain = arg;
    long sleep_ns        = FIP_PROGRESS_SLEEP_MIN_NS;
    unsigned idle        = 0;
    struct timespec ts;

    while (!__atomic_load_n(&domain->progress_stop, __ATOMIC_ACQUIRE)) {
        fip_domain_check_overdue(domain);
        if (fip_domain_worker_progress(domain) != 0) {
            idle     = 0;
            sleep_ns = FIP_PROGRESS_SLEEP_MIN_NS;
            continue;
        }
        if (++idle < FIP_PROGRESS_YIELDS) {
            sched_yield();
            continue;
        }
        ts.tv_sec  = 0;
        ts.tv_nsec = sleep_ns;
        nanosleep(&ts, NULL);
        if (sleep_ns < FIP_PROGRESS_SLEEP_MAX_NS) {
            sleep_ns *= 2;
        }
    }
    return NULL;
}

int fip_progress_start(fip_domain_t *domain)
{
    domain->progress_stop = 0;
    if (pthread_create(&domain->progress_thread, NULL, fip_progress_main,
                       domain) != 0) {
        return -FI_EOTHER;
    }
    domain->progress_running = 1;
    return 0;
}

void fip_progress_stop(fip_domain_t *domain)
{
    if (!domain->progress_running) {
        return;
    }
    __atomic_store_n(&domain->progress_stop, 1, __ATOMIC_RELEASE);
    pthread_join(domain->progress_thread, NULL);
    domain->progress_running = 0;
}
