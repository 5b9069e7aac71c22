/**
 * The timed loops, the same for every driver.
 *
 * window 1 (latency): one call at a time; a base-family call carries
 * FI_DELIVERY_COMPLETE so that every family's latency is "done at the
 * target", as for a fetch-add.
 * window W > 1 (rate): W calls in flight on W separate targets; base calls
 * complete locally and a flush at the end of each batch (inside the timed
 * span) waits for the updates.
 *
 * Three views of the same run:
 *  - percentiles of post-to-completion times of sampled calls (at most
 *    PERF_LAT_SAMPLES calls carry timestamps, so a shared-memory call of
 *    ~20 ns is not dominated by reading the clock);
 *  - average: whole timed span / calls (ucx_perftest's "overall");
 *  - typical: the run is cut into small batches (16 calls, or 2 windows,
 *    and at least 5 us by the warm-up's pace) and the median batch average
 *    is taken. It is as precise as the
 *    average and, like the median, immune to the scheduler stalls of a
 *    loaded 2-core machine (a stall spoils one batch); the goals use it.
 * The message rate is the overall one (calls / timed span = 1 / average),
 * as ucx_perftest's. A measurement running longer than the report interval
 * (a second by default) prints a progress line on stderr every interval
 * (checked between batches).
 * Nothing is allocated per call.
 */
#include "perftest.h"

#include <stdlib.h>
#include <string.h>

#define PERF_LAT_SAMPLES 8192
#define PERF_MAX_BATCHES 65536 /* longer runs get longer batches */
#define PERF_BATCH_MIN_US 5.0  /* ~12000 TSC ticks: steps of 0.2% at most */

/* A progress line every second by default (--report-interval) */
static double perf_report_us = 1e6;

void perf_measure_report_interval(double seconds)
{
    perf_report_us = seconds * 1e6;
}

double perf_measure_report_seconds(void)
{
    return perf_report_us / 1e6;
}

typedef struct {
    uint64_t *samples;
    size_t   num;
    size_t   every;   /* timestamps on one call in `every` */
    size_t   seen;
} perf_samples_t;

static int perf_take(perf_samples_t *sm)
{
    return (sm != NULL) && ((sm->seen++ % sm->every) == 0);
}

static int perf_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;

    return (x > y) - (x < y);
}

static int perf_double_cmp(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x > y) - (x < y);
}

/* One call at a time. */
static ucs_status_t perf_run_latency(perf_driver_t *drv, size_t n,
                                     perf_samples_t *sm)
{
    ucs_status_t status;
    uint64_t t0 = 0;
    size_t i;
    void *req;
    int take;

    for (i = 0; i < n; ++i) {
        take = perf_take(sm);
        if (take) {
            t0 = perf_time_now();
        }
        status = drv->post(drv->arg, 0, 1, &req);
        if ((status == UCS_OK) && (req != NULL)) {
            while ((status = drv->test(drv->arg, req)) == UCS_INPROGRESS) {
                drv->progress(drv->arg);
            }
        }
        if (status != UCS_OK) {
            return status;
        }
        if (take) {
            sm->samples[sm->num++] = perf_time_now() - t0;
        }
    }
    return UCS_OK;
}

/* `window` calls in flight until n have completed. tpost[k] is 0 when slot
 * k's call is not sampled. */
static ucs_status_t perf_run_window(perf_driver_t *drv, unsigned window,
                                    void **reqs, uint64_t *tpost, size_t n,
                                    perf_samples_t *sm)
{
    size_t posted = 0, done = 0;
    ucs_status_t status;
    unsigned k;

    memset(reqs, 0, window * sizeof(*reqs));
    while (done < n) {
        for (k = 0; (k < window) && (posted < n); ++k) {
            if (reqs[k] != NULL) {
                continue;
            }
            tpost[k] = perf_take(sm) ? perf_time_now() : 0;
            status   = drv->post(drv->arg, k, 0, &reqs[k]);
            if (status != UCS_OK) {
                return status;
            }
            ++posted;
            if (reqs[k] == NULL) {
                ++done;
                if (tpost[k] != 0) {
                    sm->samples[sm->num++] = perf_time_now() - tpost[k];
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
            reqs[k] = NULL;
            ++done;
            if (tpost[k] != 0) {
                sm->samples[sm->num++] = perf_time_now() - tpost[k];
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

/* Batches of 16 calls, or 2 windows' worth, and at least
 * PERF_BATCH_MIN_US long by the warm-up's pace (`call_us`, 0 when there was
 * none): the clock read twice per batch (the TSC, which a virtual machine
 * may advance in steps of ~10 ns) must not quantize a batch average (16
 * shared-memory calls of 0.03 us are only ~50 steps: a median landing on 2%
 * steps). At most PERF_MAX_BATCHES. */
static size_t perf_num_batches(const perf_params_t *p, double call_us)
{
    size_t min_batch = (p->window > 1) ? 2 * (size_t)p->window : 16;
    size_t nb;

    if ((call_us > 0) && (min_batch * call_us < PERF_BATCH_MIN_US)) {
        min_batch = (size_t)(PERF_BATCH_MIN_US / call_us) + 1;
    }
    nb = p->iters / min_batch;
    return (nb < 1) ? 1 : (nb > PERF_MAX_BATCHES) ? PERF_MAX_BATCHES : nb;
}

/* "fiatomic_perftest: fiatomic fetch SUM UINT64: 1234/10000 calls, ..." */
static void perf_progress_line(perf_driver_t *drv, const perf_params_t *p,
                               size_t done, uint64_t total)
{
    double us = perf_time_to_us(total);
    char name[64];

    fprintf(stderr, PERF_NAME ": %s %s: %zu/%zu calls, overall %.3f us, "
            "%.0f calls/s\n", drv->name,
            perf_cell_str(&p->cell, name, sizeof(name)), done, p->iters,
            us / (double)done, (double)done * 1e6 / us);
}

int perf_measure(perf_driver_t *drv, const perf_params_t *p,
                 perf_result_t *res)
{
    unsigned window = (p->window > 0) ? p->window : 1;
    size_t nb       = perf_num_batches(p, 0);
    double *batch, call_us;
    perf_samples_t sm;
    ucs_status_t status;
    uint64_t *tpost, total = 0, t0, reported = 0;
    size_t b, n, left;
    void **reqs;
    int ret = -1;

    memset(&sm, 0, sizeof(sm));
    sm.every   = (p->iters + PERF_LAT_SAMPLES - 1) / PERF_LAT_SAMPLES;
    sm.every   = (sm.every > 0) ? sm.every : 1;
    sm.samples = malloc(sizeof(*sm.samples) * (p->iters / sm.every + 1));
    reqs       = calloc(window, sizeof(*reqs));
    tpost      = calloc(window, sizeof(*tpost));
    batch      = calloc(nb, sizeof(*batch));
    if ((sm.samples == NULL) || (reqs == NULL) || (tpost == NULL) ||
        (batch == NULL) || (p->iters == 0)) {
        goto out;
    }

    t0      = perf_time_now();
    status  = perf_run(drv, p, reqs, tpost, p->warmup, NULL);
    call_us = (p->warmup > 0) ?
              perf_time_to_us(perf_time_now() - t0) / (double)p->warmup : 0;
    nb      = perf_num_batches(p, call_us); /* at most the first count */
    for (b = 0, left = p->iters; (status == UCS_OK) && (b < nb); ++b) {
        n         = (b + 1 == nb) ? left : p->iters / nb;
        t0        = perf_time_now();
        status    = perf_run(drv, p, reqs, tpost, n, &sm);
        t0        = perf_time_now() - t0;
        total    += t0;
        left     -= n;
        batch[b]  = perf_time_to_us(t0) / (double)n;
        if ((status == UCS_OK) && (b + 1 < nb) && (perf_report_us > 0) &&
            (perf_time_to_us(total - reported) >= perf_report_us)) {
            perf_progress_line(drv, p, p->iters - left, total);
            reported = total;
        }
    }
    if (status != UCS_OK) {
        fprintf(stderr, PERF_NAME ": %s: %s\n", drv->name,
                ucs_status_string(status));
        goto out;
    }

    qsort(sm.samples, sm.num, sizeof(*sm.samples), perf_u64_cmp);
    qsort(batch, nb, sizeof(*batch), perf_double_cmp);
    memset(res, 0, sizeof(*res));
    res->iters       = p->iters;
    res->lat_avg     = perf_time_to_us(total) / (double)p->iters;
    res->lat_typical = (nb % 2) ? batch[nb / 2] :
                       (batch[nb / 2 - 1] + batch[nb / 2]) / 2;
    res->rate        = 1e6 / res->lat_avg; /* overall, as ucx_perftest */
    res->lat_min     = perf_time_to_us(sm.samples[0]);
    res->lat_median  = perf_pct(&sm, 50);
    res->lat_p90     = perf_pct(&sm, 90);
    res->lat_p99     = perf_pct(&sm, 99);
    res->lat_max     = perf_time_to_us(sm.samples[sm.num - 1]);
    ret = 0;

out:
    free(batch);
    free(sm.samples);
    free(reqs);
    free(tpost);
    return ret;
}
