/**
 * Scaling mode: N initiator processes (perftest_scale_initiator.c) on one
 * target, all on the same elements or each on its own, for each N of the
 * sweep. Every initiator has its own UCP context and endpoint, warms up,
 * and all start and stop together (CLOCK_MONOTONIC times sent by this
 * coordinator); each counts what completed. Reported per point: the
 * aggregate rate (all calls / timed span), per-initiator rates (mean, min,
 * max) and Jain's fairness index (sum x)^2 / (N sum x^2), 1 when every
 * initiator got the same share, 1/N when one got everything; the CAS-loop
 * retries and hand-offs per call. Then the target's elements are read
 * through the control channel (the target's CPU, not UCX) and compared
 * with the reference model: every call of every initiator applies the same
 * operand, so whatever the interleaving an element that took K calls must
 * hold f^K(0) (a lost or doubled update shows for SUM, PROD, LXOR, BXOR).
 *
 * Initiators and the target timeshare when there are more of them than
 * CPUs: those points are marked, their rates describe the machine.
 */
#define _GNU_SOURCE
#include "perftest.h"
#include "fiatomic_ref.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Bounded waits of the coordinator. */
#define PERF_SCALE_SETUP_MS  (120 * 1000) /* connect + warm up, loaded */
#define PERF_SCALE_EXTRA_MS  (60 * 1000)  /* past the timed span */
#define PERF_SCALE_EXIT_MS   (30 * 1000)  /* an initiator's exit */
#define PERF_SCALE_LEAD_NS   (20ull * 1000 * 1000) /* GO to start */

typedef struct {
    pid_t            pid;
    int              fd;
    int              state;   /* last message type; 0: none yet */
    perf_scale_msg_t msg;
} perf_scale_proc_t;

typedef struct {
    const perf_opts_t *o;
    perf_session_t    *s;
    size_t            stride;     /* bytes per slot (perf_slot_stride) */
    size_t            span;       /* one initiator's elements */
    long              cpus;
} perf_scale_t;

/* One point of the sweep. */
typedef struct {
    const char *elements;         /* "same", "disjoint" */
    unsigned   n;
    double     seconds;           /* the longest initiator's timed span */
    double     aggregate;
    double     mean, min, max, jain;
    double     retries_per_call, handoffs_per_call;
    uint64_t   calls;
    int        strategies[FIATOMIC_STRATEGY_LAST + 1];
    int        check;             /* 1 ok, 0 FAIL */
    char       msg[512];
} perf_scale_point_t;

/* ------------------------------------------------------------------------ */
/* Initiator processes                                                       */

static void perf_scale_kill(perf_scale_proc_t *procs, unsigned n)
{
    unsigned i;

    for (i = 0; i < n; ++i) {
        if (procs[i].pid > 0) {
            kill(procs[i].pid, SIGKILL);
            waitpid(procs[i].pid, NULL, 0);
            procs[i].pid = -1;
        }
        if (procs[i].fd >= 0) {
            close(procs[i].fd);
            procs[i].fd = -1;
        }
    }
}

/* Wait (bounded) for every initiator to exit; 0 when all exited with 0. */
static int perf_scale_reap(perf_scale_proc_t *procs, unsigned n, int quiet)
{
    uint64_t end = perf_scale_clock_ns() +
                   (uint64_t)PERF_SCALE_EXIT_MS * 1000000ull;
    int status, ret = 0;
    unsigned i;
    pid_t pid;

    for (i = 0; i < n; ++i) {
        while (procs[i].pid > 0) {
            pid = waitpid(procs[i].pid, &status, WNOHANG);
            if (pid == procs[i].pid) {
                if ((!WIFEXITED(status) || WEXITSTATUS(status)) && !quiet) {
                    fprintf(stderr, PERF_NAME ": initiator %u exited "
                            "abnormally (status 0x%x)\n", i, status);
                    ret = -1;
                }
                procs[i].pid = -1;
            } else if ((pid < 0) && (errno != EINTR)) {
                procs[i].pid = -1;
            } else if (perf_scale_clock_ns() > end) {
                fprintf(stderr, PERF_NAME ": initiator %u did not exit in "
                        "%d s: killed\n", i, PERF_SCALE_EXIT_MS / 1000);
                ret = -1;
                break;
            } else {
                usleep(1000);
            }
        }
    }
    perf_scale_kill(procs, n); /* what is left, and the fds */
    return ret;
}

static int perf_scale_spawn(perf_scale_t *sc, perf_scale_proc_t *proc,
                            unsigned index, uint64_t offset)
{
    const perf_opts_t *o = sc->o;
    posix_spawn_file_actions_t actions;
    perf_scale_task_t task;
    char fd_arg[16];
    char *argv[4];
    uint64_t base;
    int sv[2];

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
        perror(PERF_NAME ": socketpair");
        return -1;
    }
    snprintf(fd_arg, sizeof(fd_arg), "%d", sv[1]);
    argv[0] = (char*)PERF_NAME;
    argv[1] = (char*)"--scale-initiator";
    argv[2] = fd_arg;
    argv[3] = NULL;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addclose(&actions, sv[0]);
    if (posix_spawn(&proc->pid, o->self_exe, &actions, NULL, argv, environ)) {
        perror(PERF_NAME ": posix_spawn");
        posix_spawn_file_actions_destroy(&actions);
        close(sv[0]);
        close(sv[1]);
        proc->pid = -1;
        return -1;
    }
    posix_spawn_file_actions_destroy(&actions);
    close(sv[1]);
    proc->fd    = sv[0];
    proc->state = 0;

    memset(&task, 0, sizeof(task));
    task.cell      = o->params.cell;
    task.count     = o->params.count;
    task.window    = o->params.window;
    task.index     = index;
    task.warmup    = o->params.warmup;
    task.report_us = perf_measure_report_seconds() * 1e6;
    if (o->num_scale_strategies > 0) {
        snprintf(task.strategy, sizeof(task.strategy), "%s",
                 o->scale_strategies[index % o->num_scale_strategies]);
    }

    /* the target's bootstrap, with this initiator's elements as base */
    base = sc->s->base + offset;
    if (perf_ctl_send_blob(proc->fd, &task, sizeof(task)) ||
        perf_ctl_send_blob(proc->fd, sc->s->address_buf,
                           sc->s->address_len) ||
        perf_ctl_send_blob(proc->fd, sc->s->key_buf, sc->s->key_len) ||
        perf_ctl_send_blob(proc->fd, &base, sizeof(base)) ||
        perf_ctl_send_blob(proc->fd, sc->s->ucp_rkey_buf,
                           sc->s->ucp_rkey_len) ||
        perf_ctl_send_blob(proc->fd, &sc->s->ucp_base,
                           sizeof(sc->s->ucp_base))) {
        fprintf(stderr, PERF_NAME ": initiator %u did not start\n", index);
        return -1;
    }
    return 0;
}

/* Read messages until every initiator reached `want` (READY or DONE), or
 * the deadline. Progress messages update the counts; with report, a
 * progress line goes to stderr at most every report interval. */
static int perf_scale_gather(perf_scale_t *sc, perf_scale_proc_t *procs,
                             unsigned n, uint32_t want, uint64_t deadline,
                             const char *what, double span_s)
{
    struct pollfd pfd[PERF_SCALE_MAX_INITIATORS];
    uint64_t now, start = perf_scale_clock_ns(), last = start, calls;
    unsigned i, left;
    int ret, fresh = 0; /* a progress report came since the last line */

    for (;;) {
        left = 0;
        for (i = 0; i < n; ++i) {
            pfd[i].fd      = (procs[i].state == (int)want) ? -1 : procs[i].fd;
            pfd[i].events  = POLLIN;
            pfd[i].revents = 0;
            left          += (pfd[i].fd >= 0);
        }
        if (left == 0) {
            return 0;
        }
        now = perf_scale_clock_ns();
        if (now > deadline) {
            for (i = 0; i < n; ++i) {
                if (procs[i].state != (int)want) {
                    fprintf(stderr, PERF_NAME ": initiator %u: no answer "
                            "(%s) in time\n", i, what);
                }
            }
            return -1;
        }
        ret = poll(pfd, n, 100);
        if ((ret < 0) && (errno != EINTR)) {
            perror(PERF_NAME ": poll");
            return -1;
        }
        for (i = 0; (ret > 0) && (i < n); ++i) {
            if (pfd[i].revents == 0) {
                continue;
            }
            if (perf_ctl_read_all(procs[i].fd, &procs[i].msg,
                                  sizeof(procs[i].msg))) {
                fprintf(stderr, PERF_NAME ": initiator %u died (%s)\n", i,
                        what);
                return -1;
            }
            procs[i].msg.error[sizeof(procs[i].msg.error) - 1] = '\0';
            if (procs[i].msg.type == PERF_SCALE_FAILED) {
                fprintf(stderr, PERF_NAME ": %s\n", procs[i].msg.error);
                return -1;
            }
            if (procs[i].msg.type != PERF_SCALE_PROGRESS) {
                procs[i].state = (int)procs[i].msg.type;
            } else {
                fresh = 1;
            }
        }
        now = perf_scale_clock_ns();
        /* a line only on news from the initiators: the count of a span
         * that ends before their first report would read 0 */
        if ((want == PERF_SCALE_DONE) && fresh &&
            (perf_measure_report_seconds() > 0) &&
            ((double)(now - last) >= perf_measure_report_seconds() * 1e9)) {
            for (i = 0, calls = 0; i < n; ++i) {
                calls += procs[i].msg.calls;
            }
            fprintf(stderr, PERF_NAME ": %s: %.1f/%.1f s, %llu calls so "
                    "far\n", what, (double)(now - start) / 1e9, span_s,
                    (unsigned long long)calls);
            last  = now;
            fresh = 0;
        }
    }
}

/* ------------------------------------------------------------------------ */
/* The reference: f^K(0) per element                                         */

static int perf_scale_check(perf_scale_t *sc, perf_scale_proc_t *procs,
                            unsigned n, int same, perf_scale_point_t *pt)
{
    const perf_cell_t *cell = &sc->o->params.cell;
    size_t size   = fiatomic_ref_datatype_size(cell->datatype);
    size_t count  = sc->o->params.count;
    unsigned window = sc->o->params.window;
    uint8_t operand[PERF_MAX_ELEM_SIZE], compare[PERF_MAX_ELEM_SIZE];
    uint8_t expected[PERF_MAX_ELEM_SIZE], prev[PERF_MAX_ELEM_SIZE];
    char a[96], b[96], name[64];
    unsigned areas = same ? 1 : n, area, i, k;
    uint8_t *actual;
    uint64_t calls, c;
    size_t e;

    actual = malloc(sc->span * areas);
    if ((actual == NULL) ||
        perf_session_read(sc->s, PERF_REGION_FIATOMIC, 0, actual,
                          sc->span * areas)) {
        free(actual);
        snprintf(pt->msg, sizeof(pt->msg), "cannot read the target");
        return -1;
    }
    perf_bench_operand(cell, operand, compare);

    for (area = 0; area < areas; ++area) {
        for (k = 0; k < window; ++k) {
            calls = 0;
            for (i = 0; i < n; ++i) {
                if (same || (i == area)) {
                    calls += procs[i].msg.slot_calls[k];
                }
            }
            memset(expected, 0, sizeof(expected));
            for (c = 0; c < calls; ++c) {
                memcpy(prev, expected, size);
                fiatomic_ref_apply(cell->family, cell->op, cell->datatype,
                                   expected, operand, compare, NULL);
                if (fiatomic_ref_bits_equal(cell->datatype, prev, expected)) {
                    break; /* a fixed point: f^K is this for every K left */
                }
            }
            for (e = 0; e < count; ++e) {
                const uint8_t *got = actual + area * sc->span +
                                     k * sc->stride + e * size;
                if (!fiatomic_ref_result_equal(cell->op, cell->datatype,
                                               expected, got)) {
                    fiatomic_ref_format(cell->datatype, expected, a,
                                        sizeof(a));
                    fiatomic_ref_format(cell->datatype, got, b, sizeof(b));
                    snprintf(pt->msg, sizeof(pt->msg), "%s, %s elements, "
                             "slot %u element %zu after %llu calls: "
                             "expected %s, target holds %s",
                             perf_cell_str(cell, name, sizeof(name)),
                             pt->elements, k, e, (unsigned long long)calls,
                             a, b);
                    free(actual);
                    return -1;
                }
            }
        }
    }
    free(actual);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* One point                                                                 */

static int perf_scale_point(perf_scale_t *sc, unsigned n, int same,
                            perf_scale_point_t *pt)
{
    const perf_opts_t *o = sc->o;
    perf_scale_proc_t procs[PERF_SCALE_MAX_INITIATORS];
    uint64_t setup_deadline, span_ns, attempts = 0, retries = 0;
    uint64_t handoffs = 0;
    perf_scale_go_t go;
    double sum = 0, sum2 = 0, rate;
    char what[64];
    void *zero;
    unsigned i;
    int st;

    memset(pt, 0, sizeof(*pt));
    pt->elements = same ? "same" : "disjoint";
    pt->n        = n;
    snprintf(what, sizeof(what), "%s elements, %u initiator%s",
             pt->elements, n, (n == 1) ? "" : "s");

    /* every point starts from elements at 0 */
    zero = calloc(1, sc->span * (same ? 1 : n));
    if ((zero == NULL) ||
        perf_session_write(sc->s, PERF_REGION_FIATOMIC, 0, zero,
                           sc->span * (same ? 1 : n))) {
        free(zero);
        snprintf(pt->msg, sizeof(pt->msg), "cannot reset the target");
        return -1;
    }
    free(zero);

    for (i = 0; i < n; ++i) {
        procs[i].pid = -1;
        procs[i].fd  = -1;
        memset(&procs[i].msg, 0, sizeof(procs[i].msg));
    }
    for (i = 0; i < n; ++i) {
        if (perf_scale_spawn(sc, &procs[i], i, same ? 0 : i * sc->span)) {
            goto err;
        }
    }

    setup_deadline = perf_scale_clock_ns() +
                     (uint64_t)PERF_SCALE_SETUP_MS * 1000000ull;
    if (perf_scale_gather(sc, procs, n, PERF_SCALE_READY, setup_deadline,
                          what, o->scale_seconds)) {
        goto err;
    }

    span_ns     = (uint64_t)(o->scale_seconds * 1e9);
    go.start_ns = perf_scale_clock_ns() + PERF_SCALE_LEAD_NS;
    go.end_ns   = go.start_ns + span_ns;
    for (i = 0; i < n; ++i) {
        if (perf_ctl_write_all(procs[i].fd, &go, sizeof(go))) {
            fprintf(stderr, PERF_NAME ": initiator %u died\n", i);
            goto err;
        }
    }
    if (perf_scale_gather(sc, procs, n, PERF_SCALE_DONE,
                          go.end_ns + (uint64_t)PERF_SCALE_EXTRA_MS *
                          1000000ull, what, o->scale_seconds)) {
        goto err;
    }
    if (perf_scale_reap(procs, n, 0)) {
        snprintf(pt->msg, sizeof(pt->msg), "an initiator failed to exit");
        return -1;
    }

    if (getenv("FIATOMIC_PERFTEST_SCALE_MISCOUNT") != NULL) {
        /* the test's proof that the final check can fail: one call more
         * counted than made looks like an update the target lost */
        ++procs[0].msg.slot_calls[0];
    }
    pt->min = -1;
    for (i = 0; i < n; ++i) {
        const perf_scale_msg_t *m = &procs[i].msg;

        pt->seconds = (m->seconds > pt->seconds) ? m->seconds : pt->seconds;
        pt->calls  += m->calls;
        attempts   += m->cas_attempts;
        retries    += m->cas_retries;
        handoffs   += m->cas_handoffs;
        st          = ((m->strategy >= 0) &&
                       (m->strategy < FIATOMIC_STRATEGY_LAST)) ?
                      m->strategy : FIATOMIC_STRATEGY_LAST;
        ++pt->strategies[st];
    }
    for (i = 0; i < n; ++i) {
        rate     = (double)procs[i].msg.calls / pt->seconds;
        sum     += rate;
        sum2    += rate * rate;
        pt->min  = ((pt->min < 0) || (rate < pt->min)) ? rate : pt->min;
        pt->max  = (rate > pt->max) ? rate : pt->max;
    }
    (void)attempts;
    pt->aggregate         = (double)pt->calls / pt->seconds;
    pt->mean              = sum / n;
    pt->jain              = (sum2 > 0) ? (sum * sum) / (n * sum2) : 0;
    pt->retries_per_call  = pt->calls ? (double)retries / pt->calls : 0;
    pt->handoffs_per_call = pt->calls ? (double)handoffs / pt->calls : 0;
    pt->check             = (perf_scale_check(sc, procs, n, same, pt) == 0);
    return 0;

err:
    /* Closing the channels ends every initiator the normal way (endpoints
     * closed after a flush); a killed one would leave the target's UCX
     * with a broken connection (UCX 1.13.1 can abort in that case). */
    for (i = 0; i < n; ++i) {
        if (procs[i].fd >= 0) {
            close(procs[i].fd);
            procs[i].fd = -1;
        }
    }
    (void)perf_scale_reap(procs, n, 1);
    if (pt->msg[0] == '\0') {
        snprintf(pt->msg, sizeof(pt->msg), "%s: the run failed", what);
    }
    return -1;
}

/* ------------------------------------------------------------------------ */
/* Report                                                                    */

static const char *perf_scale_strategy_list(const perf_scale_point_t *pt,
                                            char *buf, size_t max)
{
    size_t len = 0;
    int st;

    buf[0] = '\0';
    for (st = 0; (st <= FIATOMIC_STRATEGY_LAST) && (len < max); ++st) {
        if (pt->strategies[st] == 0) {
            continue;
        }
        len += snprintf(buf + len, max - len, "%s%s", len ? "+" : "",
                        (st < FIATOMIC_STRATEGY_LAST) ?
                        fiatomic_strategy_name(st) : "unsupported");
        if ((pt->strategies[st] != (int)pt->n) && (len < max)) {
            len += snprintf(buf + len, max - len, "x%d", pt->strategies[st]);
        }
    }
    return buf;
}

static void perf_scale_header(const perf_scale_t *sc)
{
    const perf_opts_t *o = sc->o;
    char name[64];

    if (o->fmt == PERF_FMT_CSV) {
        printf("transport,elements,initiators,cpus,oversubscribed,family,op,"
               "datatype,count,window,strategies,seconds,calls,"
               "aggregate_calls_per_s,per_initiator_mean,per_initiator_min,"
               "per_initiator_max,jain,cas_retries_per_call,"
               "cas_handoffs_per_call,final\n");
        return;
    }
    printf("+ %s: scaling, %s, count %zu, window %u, UCX_TLS=%s, %.2f s per "
           "point, %ld CPUs online\n", PERF_NAME,
           perf_cell_str(&o->params.cell, name, sizeof(name)),
           o->params.count, o->params.window, sc->s->transport,
           o->scale_seconds, sc->cpus);
    printf("%-9s %10s %13s %12s %12s %12s %6s %10s %10s %-14s %s\n",
           "elements", "initiators", "aggregate/s", "mean/s", "min/s",
           "max/s", "jain", "retry/call", "handoff/c", "strategy", "final");
    fflush(stdout);
}

static void perf_scale_row(const perf_scale_t *sc,
                           const perf_scale_point_t *pt)
{
    const perf_opts_t *o = sc->o;
    int over = (long)pt->n + 1 > sc->cpus;
    char strategies[96];

    perf_scale_strategy_list(pt, strategies, sizeof(strategies));
    if (o->fmt == PERF_FMT_CSV) {
        printf("%s,%s,%u,%ld,%d,%s,%s,%s,%zu,%u,%s,%.3f,%llu,%.0f,%.0f,%.0f,"
               "%.0f,%.4f,%.4f,%.4f,%s\n", sc->s->transport, pt->elements,
               pt->n, sc->cpus, over,
               fiatomic_family_name(o->params.cell.family),
               fiatomic_op_name(o->params.cell.op),
               fiatomic_datatype_name(o->params.cell.datatype),
               o->params.count, o->params.window, strategies, pt->seconds,
               (unsigned long long)pt->calls, pt->aggregate, pt->mean,
               pt->min, pt->max, pt->jain, pt->retries_per_call,
               pt->handoffs_per_call, pt->check ? "ok" : "FAIL");
    } else {
        printf("%-9s %9u%s %13.0f %12.0f %12.0f %12.0f %6.3f %10.3f %10.3f "
               "%-14s %s\n", pt->elements, pt->n, over ? "*" : " ",
               pt->aggregate, pt->mean, pt->min, pt->max, pt->jain,
               pt->retries_per_call, pt->handoffs_per_call, strategies,
               pt->check ? "ok" : "FAIL");
    }
    if (!pt->check) {
        printf("    FAIL: %s\n", pt->msg);
    }
    fflush(stdout);
}

static void perf_scale_init(perf_scale_t *sc, const perf_opts_t *o,
                            perf_session_t *s)
{
    memset(sc, 0, sizeof(*sc));
    sc->o      = o;
    sc->s      = s;
    sc->stride = perf_slot_stride(&o->params);
    sc->span   = sc->stride * o->params.window;
    sc->cpus   = sysconf(_SC_NPROCESSORS_ONLN);
}

int perf_scale_once(const perf_opts_t *o, perf_session_t *s, unsigned n,
                    int same, perf_scale_summary_t *sum)
{
    perf_scale_point_t pt;
    perf_scale_t sc;

    perf_scale_init(&sc, o, s);
    memset(sum, 0, sizeof(*sum));
    if (perf_scale_point(&sc, n, same, &pt)) {
        snprintf(sum->msg, sizeof(sum->msg), "%s", pt.msg);
        return -1;
    }
    sum->aggregate         = pt.aggregate;
    sum->jain              = pt.jain;
    sum->retries_per_call  = pt.retries_per_call;
    sum->handoffs_per_call = pt.handoffs_per_call;
    sum->check             = pt.check;
    sum->oversubscribed    = ((long)n + 1 > sc.cpus);
    snprintf(sum->msg, sizeof(sum->msg), "%s", pt.msg);
    return 0;
}

int perf_scale_run(const perf_opts_t *o)
{
    perf_session_t s;
    perf_scale_point_t pt;
    perf_scale_t sc;
    unsigned p, max_n = 0;
    int same, failed = 0, over = 0;

    perf_scale_init(&sc, o, &s);
    for (p = 0; p < o->num_scale_counts; ++p) {
        max_n = (o->scale_counts[p] > max_n) ? o->scale_counts[p] : max_n;
    }
    if (sc.span * max_n > PERF_REGION_SIZE) {
        fprintf(stderr, PERF_NAME ": %u initiators x window %u x count %zu "
                "need more than the %u MiB of target memory the test uses; "
                "lower -W, -c or the initiator count\n", max_n,
                o->params.window, o->params.count, PERF_REGION_SIZE >> 20);
        return -1;
    }

    if (perf_session_open(&s, o)) {
        return -1;
    }
    perf_scale_header(&sc);
    for (same = 1; same >= 0; --same) {
        if ((same && !o->scale_same) || (!same && !o->scale_disjoint)) {
            continue;
        }
        for (p = 0; p < o->num_scale_counts; ++p) {
            if (perf_scale_point(&sc, o->scale_counts[p], same, &pt)) {
                fprintf(stderr, PERF_NAME ": %s\n", pt.msg);
                perf_session_close(&s);
                return -1;
            }
            perf_scale_row(&sc, &pt);
            failed += !pt.check;
            over   |= ((long)pt.n + 1 > sc.cpus);
        }
    }
    if (over && (o->fmt != PERF_FMT_CSV)) {
        printf("* more initiators + 1 target than the %ld CPUs online: the "
               "processes timeshare, the rates show the machine's scheduler "
               "as much as the library\n", sc.cpus);
    }
    perf_session_close(&s);
    return failed;
}
