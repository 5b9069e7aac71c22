/**
 * One initiator process of a scaling run (perftest_scale.c): it gets the
 * target's bootstrap blobs and its task from the coordinator over a
 * socketpair, connects to the target itself (its own UCP context, worker
 * and endpoint, as a separate application would), warms up, says READY,
 * and at the coordinator's start time posts calls with `window` in flight
 * until the end time. It counts every call that completed per window slot,
 * warm-up included, so that the coordinator can compute what the target's
 * elements must hold; the rate counts the timed span only.
 */
#define _GNU_SOURCE
#include "perftest.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Calls between two looks at the clock (a clock_gettime() is ~20 ns, a
 * direct call on shared memory less). */
#define PERF_SCALE_CLOCK_EVERY 32
/* What is left in flight at the end time must complete within this. */
#define PERF_SCALE_DRAIN_NS    (30ull * 1000 * 1000 * 1000)

uint64_t perf_scale_clock_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

typedef struct {
    int               fd;
    perf_scale_task_t task;
    perf_params_t     p;
    perf_session_t    s;
    perf_driver_t     drv;
    perf_scale_msg_t  msg;
    void              *reqs[PERF_SCALE_MAX_WINDOW];
} perf_scale_init_t;

static int perf_scale_send(perf_scale_init_t *in, uint32_t type)
{
    in->msg.type = type;
    return perf_ctl_write_all(in->fd, &in->msg, sizeof(in->msg));
}

static void perf_scale_cas_stats(perf_scale_init_t *in, uint64_t *v)
{
    fiatomic_ep_attr_t attr;

    attr.field_mask = FIATOMIC_EP_ATTR_FIELD_CAS_STATS;
    if (fiatomic_ep_query(in->s.ep, &attr) != UCS_OK) {
        v[0] = v[1] = v[2] = 0;
        return;
    }
    v[0] = attr.cas_attempts;
    v[1] = attr.cas_retries;
    v[2] = attr.cas_handoffs;
}

/* Post and complete calls until `calls` have completed (warm-up) or, with
 * end_ns, until the end time; then wait for those in flight. Every call
 * that completed is counted on its slot; the timed ones in *done_p. */
static ucs_status_t perf_scale_loop(perf_scale_init_t *in, uint64_t calls,
                                    uint64_t end_ns, uint64_t *done_p)
{
    perf_driver_t *drv = &in->drv;
    unsigned window    = in->p.window;
    int delivery       = (window == 1); /* latency: done at the target */
    uint64_t posted = 0, done = 0, next_report = 0, now, drain_end = 0;
    ucs_status_t status;
    int stopping = 0;
    unsigned k;

    if (end_ns && (in->task.report_us > 0)) {
        next_report = perf_scale_clock_ns() +
                      (uint64_t)(in->task.report_us * 1000.0);
    }
    memset(in->reqs, 0, sizeof(in->reqs));
    for (;;) {
        for (k = 0; (k < window) && !stopping; ++k) {
            if (in->reqs[k] != NULL) {
                continue;
            }
            if (!end_ns && (posted == calls)) {
                stopping = 1;
                break;
            }
            if (end_ns && ((posted % PERF_SCALE_CLOCK_EVERY) == 0)) {
                now = perf_scale_clock_ns();
                if (now >= end_ns) {
                    stopping = 1;
                    break;
                }
                if (next_report && (now >= next_report)) {
                    in->msg.calls = done;
                    if (perf_scale_send(in, PERF_SCALE_PROGRESS)) {
                        return UCS_ERR_IO_ERROR;
                    }
                    next_report = now +
                                  (uint64_t)(in->task.report_us * 1000.0);
                }
            }
            status = drv->post(drv->arg, k, delivery, &in->reqs[k]);
            if (status != UCS_OK) {
                return status;
            }
            ++posted;
            if (in->reqs[k] == NULL) {
                ++done;
                ++in->msg.slot_calls[k];
            }
        }

        drv->progress(drv->arg);
        for (k = 0; k < window; ++k) {
            if (in->reqs[k] == NULL) {
                continue;
            }
            status = drv->test(drv->arg, in->reqs[k]);
            if (status == UCS_INPROGRESS) {
                continue;
            }
            in->reqs[k] = NULL;
            if (status != UCS_OK) {
                return status;
            }
            ++done;
            ++in->msg.slot_calls[k];
        }

        if (stopping) {
            if (done == posted) {
                break;
            }
            if (drain_end == 0) {
                drain_end = perf_scale_clock_ns() + PERF_SCALE_DRAIN_NS;
            } else if (perf_scale_clock_ns() > drain_end) {
                return UCS_ERR_TIMED_OUT; /* bounded, even if the library's
                                             own timeout is off */
            }
        }
    }
    *done_p = done;
    return drv->flush(drv->arg);
}

static int perf_scale_fail(perf_scale_init_t *in, const char *what,
                           ucs_status_t status)
{
    snprintf(in->msg.error, sizeof(in->msg.error), "initiator %u: %s%s%s",
             in->task.index, what, (status != UCS_OK) ? ": " : "",
             (status != UCS_OK) ? ucs_status_string(status) : "");
    (void)perf_scale_send(in, PERF_SCALE_FAILED);
    return 1;
}

static int perf_scale_initiator(perf_scale_init_t *in)
{
    fiatomic_cell_info_t info;
    char name[128], cell[64];
    perf_scale_go_t go;
    uint64_t before[3], after[3], done = 0, t0;
    ucs_status_t status;

    if (perf_drv_fia_init(&in->drv, &in->s, &in->p)) {
        return perf_scale_fail(in, "no buffers for the calls", UCS_OK);
    }
    in->msg.strategy = -1;
    if ((fiatomic_query_cell(in->s.ep, in->s.key, in->p.cell.family,
                             in->p.cell.datatype, in->p.cell.op, &info) != 0) ||
        (info.strategy == FIATOMIC_STRATEGY_NONE)) {
        snprintf(name, sizeof(name), "%s is not supported here%s%s",
                 perf_cell_str(&in->p.cell, cell, sizeof(cell)),
                 in->task.strategy[0] ? " with strategy " : "",
                 in->task.strategy);
        return perf_scale_fail(in, name, UCS_OK);
    }
    in->msg.strategy = info.strategy;

    status = perf_scale_loop(in, in->task.warmup, 0, &done);
    if (status != UCS_OK) {
        return perf_scale_fail(in, "warm-up", status);
    }
    if (perf_scale_send(in, PERF_SCALE_READY) ||
        perf_ctl_read_all(in->fd, &go, sizeof(go))) {
        return 1; /* the coordinator is gone */
    }

    while (perf_scale_clock_ns() < go.start_ns) {
        in->drv.progress(in->drv.arg); /* a common start */
    }
    perf_scale_cas_stats(in, before);
    t0     = perf_scale_clock_ns();
    status = perf_scale_loop(in, 0, go.end_ns, &done);
    in->msg.seconds = (double)(perf_scale_clock_ns() - t0) / 1e9;
    if (status != UCS_OK) {
        return perf_scale_fail(in, "timed calls", status);
    }
    perf_scale_cas_stats(in, after);
    in->msg.calls        = done;
    in->msg.cas_attempts = after[0] - before[0];
    in->msg.cas_retries  = after[1] - before[1];
    in->msg.cas_handoffs = after[2] - before[2];
    return perf_scale_send(in, PERF_SCALE_DONE) ? 1 : 0;
}

int perf_scale_initiator_main(int fd)
{
    perf_scale_init_t *in = calloc(1, sizeof(*in));
    perf_scale_task_t *t;
    size_t len = 0;
    int ret;

    if (in == NULL) {
        return 1;
    }
    in->fd = fd;
    t      = perf_ctl_recv_blob(fd, &len);
    if ((t == NULL) || (len != sizeof(*t)) || (t->window == 0) ||
        (t->window > PERF_SCALE_MAX_WINDOW) || (t->count == 0)) {
        free(t);
        free(in);
        return 1;
    }
    in->task = *t;
    free(t);
    in->task.strategy[sizeof(in->task.strategy) - 1] = '\0';
    if (in->task.strategy[0] != '\0') {
        setenv("FIATOMIC_STRATEGY", in->task.strategy, 1);
    }
    perf_measure_report_interval(0);
    in->p.cell   = in->task.cell;
    in->p.count  = in->task.count;
    in->p.window = in->task.window;

    if (perf_session_attach(&in->s, fd)) {
        ret = perf_scale_fail(in, "cannot reach the target", UCS_OK);
        free(in);
        return ret;
    }
    in->s.no_reset = 1;
    ret = perf_scale_initiator(in);
    if (in->drv.cleanup != NULL) {
        in->drv.cleanup(in->drv.arg);
    }
    perf_session_teardown(&in->s);
    free(in);
    return ret;
}
