/**
 * The timed loops, the same for every driver.
 *
 * window 1 (latency): one call at a time; a base-family call carries
 * FI_DELIVERY_COMPLETE so that every family's latency is "done at the
 * target", as for a fetch-add.
 * window W > 1 (rate): W calls in flight on W separate targets; base calls
 * complete locally and a final flush (inside the timed span) waits for the
 * updates.
 * Latency samples are post-to-completion of each call; with long runs every
 * k-th is kept, so memory does not grow with the iteration count.
 */
#include "perftest.h"

#include <stdlib.h>
#include <string.h>

#define PERF_MAX_SAMPLES (1u << 20)

typedef struct {
    uint64_t *samples;
    size_t   num;
    size_t   every;   /* keep one sample in `every` */
    size_t   seen;
} perf_samples_t;

static void perf_sample(perf_samples_t *sm, uint64_t ticks)
{
    if ((sm->seen++ % sm->every) == 0) {
        sm->samples[sm->num++] = ticks;
    }
}

static int perf_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;

    return (x > y) - (x < y);
}

static ucs_status_t perf_wait(perf_driver_t *drv, void *req)
{
    ucs_status_t status;

    while ((status = drv->test(drv->arg, req)) == UCS_INPROGRESS) {
        drv->progress(drv->arg);
    }
    return status;
}

/* One call at a time: n calls, samples (if sm) per call. */
static ucs_status_t perf_run_latency(perf_driver_t *drv, size_t n,
                                     perf_samples_t *sm)
{
    ucs_status_t status;
    uint64_t t0;
    size_t i;
    void *req;

    for (i = 0; i < n; ++i) {
        t0     = perf_time_now();
        status = drv->post(drv->arg, 0, 1, &req);
        if ((status == UCS_OK) && (req != NULL)) {
            status = perf_wait(drv, req);
        }
        if (status != UCS_OK) {
            return status;
        }
        if (sm != NULL) {
            perf_sample(sm, perf_time_now() - t0);
        }
    }
    return UCS_OK;
}

/* `window` calls in flight until n have completed. */
static ucs_status_t perf_run_window(perf_driver_t *drv, unsigned window,
                                    void **reqs, uint64_t *tpost, size_t n,
                                    perf_samples_t *sm)
{
    size_t posted = 0, done = 0;
    ucs_status_t status;
    unsigned k;
    uint64_t t;

    memset(reqs, 0, window * sizeof(*reqs));
    while (done < n) {
        for (k = 0; (k < window) && (posted < n); ++k) {
            if (reqs[k] != NULL) {
                continue;
            }
            tpost[k] = perf_time_now();
            status   = drv->post(drv->arg, k, 0, &reqs[k]);
            if (status != UCS_OK) {
                return status;
            }
            ++posted;
            if (reqs[k] == NULL) {
                ++done;
                if (sm != NULL) {
                    perf_sample(sm, perf_time_now() - tpost[k]);
                }
            }
        }

        drv->progress(drv->arg);

        for (k = 0; k < window; ++k) {
            if (reqs[k] == NULL) {
                continue;
            }
            status = drv->test(drv->arg, reqs[k]);
            if (status == UCS_INPROGRESS) {
                continue;
            } else if (status != UCS_OK) {
                return status;
            }
            t       = perf_time_now();
            reqs[k] = NULL;
            ++done;
            if (sm != NULL) {
                perf_sample(sm, t - tpost[k]);
            }
        }
    }
    return drv->flush(drv->arg);
}

static ucs_status_t perf_run(perf_driver_t *drv, const perf_params_t *p,
                             void **reqs, uint64_t *tpost, size_t n,
                             perf_samples_t *sm)
{
    return (p->window <= 1) ? perf_run_latency(drv, n, sm) :
           perf_run_window(drv, p->window, reqs, tpost, n, sm);
}

static double perf_pct(const perf_samples_t *sm, double pct)
{
    size_t i = (size_t)(pct / 100.0 * (double)(sm->num - 1) + 0.5);

    return perf_time_to_us(sm->samples[i]);
}

int perf_measure(perf_driver_t *drv, const perf_params_t *p,
                 perf_result_t *res)
{
    unsigned window = (p->window > 0) ? p->window : 1;
    perf_samples_t sm;
    ucs_status_t status;
    uint64_t *tpost, t0, t1;
    void **reqs;
    int ret = -1;

    memset(&sm, 0, sizeof(sm));
    sm.every   = (p->iters + PERF_MAX_SAMPLES - 1) / PERF_MAX_SAMPLES;
    sm.every   = (sm.every > 0) ? sm.every : 1;
    sm.samples = malloc(sizeof(*sm.samples) *
                        (p->iters / sm.every + 1));
    reqs       = calloc(window, sizeof(*reqs));
    tpost      = calloc(window, sizeof(*tpost));
    if ((sm.samples == NULL) || (reqs == NULL) || (tpost == NULL) ||
        (p->iters == 0)) {
        goto out;
    }

    status = perf_run(drv, p, reqs, tpost, p->warmup, NULL);
    if (status == UCS_OK) {
        t0     = perf_time_now();
        status = perf_run(drv, p, reqs, tpost, p->iters, &sm);
        t1     = perf_time_now();
    }
    if (status != UCS_OK) {
        fprintf(stderr, PERF_NAME ": %s: %s\n", drv->name,
                ucs_status_string(status));
        goto out;
    }

    qsort(sm.samples, sm.num, sizeof(*sm.samples), perf_u64_cmp);
    memset(res, 0, sizeof(*res));
    res->iters      = p->iters;
    res->rate       = (double)p->iters / (perf_time_to_us(t1 - t0) / 1e6);
    res->lat_avg    = perf_time_to_us(t1 - t0) / (double)p->iters;
    res->lat_min    = perf_time_to_us(sm.samples[0]);
    res->lat_median = perf_pct(&sm, 50);
    res->lat_p90    = perf_pct(&sm, 90);
    res->lat_p99    = perf_pct(&sm, 99);
    res->lat_max    = perf_time_to_us(sm.samples[sm.num - 1]);
    ret = 0;

out:
    free(sm.samples);
    free(reqs);
    free(tpost);
    return ret;
}
