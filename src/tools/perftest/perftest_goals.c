/**
 * The performance goals, measured in one run and judged MET / NOT MET.
 * Each goal is named after the ratio it judges ("native-latency-vs-ucp":
 * fiatomic's latency of a native cell over raw UCP's, "direct-" the same
 * cells executed direct on shared memory; "-vs-fadd": over raw
 * UCP's 64-bit fetch-add; "speedup-vs-ofi-*": libfabric's latency over
 * fiatomic's; "prov-*": this project's libfabric provider, called through
 * libfabric as any libfabric program calls it, on memory the target
 * registered with fi_mr_reg, against libfabric's own providers and against
 * its own fetch-add).
 *
 * Every ratio compares measurements of the same run and session, taken
 * close together: the reference (raw UCP fetch-add of a u64, "native
 * fetch-add") is measured several times spread over the sweep and its
 * median used; a cell that misses a goal on the first pass is measured
 * again, interleaved with its reference, before it is counted. Latency is
 * the "typical" latency (median of batch averages, perftest_measure.c),
 * which a loaded 2-core machine's scheduler stalls do not move.
 */
#include "perftest.h"
#include "fiatomic_ref.h"

#include <stdlib.h>
#include <string.h>

#define PERF_GOAL_REPEATS  9    /* interleaved pairs of a confirmation */
#define PERF_GOAL_WINDOW   64   /* outstanding calls of the rate goals */
#define PERF_GOAL_ARRAY    1024 /* array1024-latency-vs-single */
#define PERF_GOAL_MAX      32

typedef enum {
    PERF_API_FIA,
    PERF_API_UCP,
    PERF_API_OFI,   /* libfabric's provider for the transport */
    PERF_API_PROV   /* this project's provider, through libfabric */
} perf_api_t;

/* the session's libfabric clients: the transport's reference provider,
 * then this project's */
#define PERF_GOAL_OFI_REF   0
#define PERF_GOAL_OFI_PROV  1
#define PERF_GOAL_PROV_NAME "fiatomic"
/* the provider's variable that places registered memory in shared memory */
#define PERF_GOAL_PROV_SHARE "FI_FIATOMIC_MR_SHARE"
#define PERF_GOAL_PROV_REPEATS 3 /* confirmation pairs of the prov- goals */

typedef struct {
    char       name[32];
    char       transport[16];
    char       what[128];
    double     value;
    int        at_most;   /* value <= limit, else value >= limit */
    double     limit;
    char       detail[160];
    int        met;
} perf_goal_t;

typedef struct {
    const perf_opts_t *o;
    perf_session_t    *s;
    const char        *tl;
    const char        *ref_tl;     /* the transport a provider stands for */
    size_t            iters;       /* latency calls per measurement */
    size_t            rate_iters;  /* calls of a rate measurement */
    size_t            warmup;
    perf_goal_t       goals[PERF_GOAL_MAX];
    unsigned          num_goals;
} perf_goals_t;

static const perf_cell_t perf_goal_fadd = {
    FIATOMIC_FAMILY_FETCH, FI_SUM, FI_UINT64
};

/* Every goal, by name (--goal picks some). */
static const char *const perf_goal_all[] = {
    "direct-latency-vs-ucp", "direct-rate-vs-ucp", "native-latency-vs-ucp",
    "native-rate-vs-ucp", "cell-latency-vs-fadd", "cell32-latency-vs-fadd",
    "wide16-latency-vs-fadd", "speedup-vs-ofi-shm",
    "emulated-latency-vs-fadd", "emulated-rate-vs-fadd",
    "speedup-vs-ofi-tcp", "array1024-latency-vs-single", "mallocs-per-call",
    "rss-growth-mib", "contended-cas-rate-14-vs-2", "prov-speedup-vs-ofi-shm",
    "prov-speedup-vs-ofi-tcp", "prov-only-cells-vs-prov-fadd"
};

int perf_goal_known(const char *name)
{
    unsigned i;

    for (i = 0; i < sizeof(perf_goal_all) / sizeof(perf_goal_all[0]); ++i) {
        if (!strcmp(name, perf_goal_all[i])) {
            return 1;
        }
    }
    return 0;
}

const char *perf_goal_names(void)
{
    static char names[512];
    size_t len = 0;
    unsigned i;

    if (names[0] == '\0') {
        for (i = 0; i < sizeof(perf_goal_all) / sizeof(perf_goal_all[0]);
             ++i) {
            len += snprintf(names + len, sizeof(names) - len, "%s%s",
                            i ? ", " : "", perf_goal_all[i]);
        }
    }
    return names;
}

/* Whether goal `name` is measured in this run (--goal, default all). */
static int perf_goal_wanted(const perf_goals_t *g, const char *name)
{
    unsigned i;

    if (g->o->num_goal_names == 0) {
        return 1;
    }
    for (i = 0; i < g->o->num_goal_names; ++i) {
        if (!strcmp(g->o->goal_names[i], name)) {
            return 1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Measuring                                                                 */

static int perf_goal_once(perf_goals_t *g, perf_api_t api,
                          const perf_params_t *p, perf_result_t *res)
{
    const char *provider;
    perf_driver_t drv;
    int ret;

    switch (api) {
    case PERF_API_FIA:
        ret = perf_drv_fia_init(&drv, g->s, p);
        break;
    case PERF_API_UCP:
        ret = perf_drv_ucp_init(&drv, g->s, p);
        break;
    case PERF_API_PROV:
        ret = perf_drv_ofi_init(&drv, g->s, PERF_GOAL_OFI_PROV, p,
                                PERF_GOAL_PROV_NAME);
        break;
    default:
        provider = perf_drv_ofi_provider_for(g->ref_tl ? g->ref_tl : g->tl);
        ret      = (provider == NULL) ? -1 :
                   perf_drv_ofi_init(&drv, g->s, PERF_GOAL_OFI_REF, p,
                                     provider);
        break;
    }
    if (ret != 0) {
        return -1;
    }

    ret = perf_measure(&drv, p, res);
    drv.cleanup(drv.arg);
    return ret;
}

static void perf_goal_params(perf_goals_t *g, const perf_cell_t *cell,
                             size_t count, unsigned window, size_t iters,
                             perf_params_t *p)
{
    p->cell   = *cell;
    p->count  = count;
    p->window = window;
    p->iters  = iters;
    p->warmup = (g->warmup < iters) ? g->warmup : iters;
}

static int perf_double_cmp(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x > y) - (x < y);
}

static double perf_median(double *v, unsigned n)
{
    qsort(v, n, sizeof(*v), perf_double_cmp);
    return (n % 2) ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A and B measured `repeats` times, interleaved (A B A B ...); medians of
 * the typical latencies, and (ratio_p, when not NULL) the median of the
 * pairs' ratios A / B: each pair ran back to back, under the same load,
 * so the drift of a shared machine's load cancels in its ratio. Returns -1
 * when either cannot be measured. */
static int perf_goal_pair(perf_goals_t *g, perf_api_t api_a,
                          const perf_params_t *pa, perf_api_t api_b,
                          const perf_params_t *pb, unsigned repeats,
                          double *a_p, double *b_p, double *ratio_p)
{
    double a[PERF_GOAL_REPEATS], b[PERF_GOAL_REPEATS];
    double ratio[PERF_GOAL_REPEATS];
    perf_result_t res;
    unsigned r;

    for (r = 0; r < repeats; ++r) {
        if (perf_goal_once(g, api_a, pa, &res)) {
            return -1;
        }
        a[r] = res.lat_typical;
        if (perf_goal_once(g, api_b, pb, &res)) {
            return -1;
        }
        b[r]     = res.lat_typical;
        ratio[r] = a[r] / b[r];
    }
    *a_p = perf_median(a, repeats);
    *b_p = perf_median(b, repeats);
    if (ratio_p != NULL) {
        *ratio_p = perf_median(ratio, repeats);
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Reporting                                                                 */

static void perf_goal_add(perf_goals_t *g, const char *name, const char *what,
                          double value, int at_most, double limit,
                          const char *detail)
{
    perf_goal_t *goal;

    if ((g->num_goals == PERF_GOAL_MAX) || !perf_goal_wanted(g, name)) {
        return;
    }
    goal          = &g->goals[g->num_goals++];
    snprintf(goal->name, sizeof(goal->name), "%s", name);
    goal->value   = value;
    goal->at_most = at_most;
    goal->limit   = limit;
    goal->met     = at_most ? (value <= limit) : (value >= limit);
    snprintf(goal->transport, sizeof(goal->transport), "%s", g->tl);
    snprintf(goal->what, sizeof(goal->what), "%s", what);
    snprintf(goal->detail, sizeof(goal->detail), "%s", detail);
    printf("GOAL %-27s %-6s %-44s x%-9.4g (%s %.3g) %-8s %s\n", name, g->tl,
           what, value, at_most ? "<=" : ">=", limit,
           goal->met ? "MET" : "NOT MET", detail);
    fflush(stdout);
}

static void perf_goal_progress(perf_goals_t *g, const char *what,
                               unsigned done, unsigned total)
{
    if (g->o->progress && ((done % 25 == 0) || (done == total))) {
        fprintf(stderr, "[%s] %s %u/%u\n", g->tl, what, done, total);
    }
}

/* ------------------------------------------------------------------------ */
/* Sweeps                                                                    */

typedef int (*perf_cell_filter_t)(perf_goals_t *g, const perf_row_t *row);

/* The cells of this session the filter keeps. */
static unsigned perf_goal_cells(perf_goals_t *g, perf_cell_filter_t filter,
                                perf_cell_t *cells, unsigned max)
{
    perf_cell_t cell;
    perf_row_t row;
    unsigned n = 0;

    for (cell.family = 0; cell.family < FIATOMIC_FAMILY_LAST; ++cell.family) {
        for (cell.op = 0; cell.op < FI_ATOMIC_OP_LAST; ++cell.op) {
            for (cell.datatype = 0; cell.datatype <= FI_UINT128;
                 ++cell.datatype) {
                if ((perf_row_query(g->s, &cell, &row) == 0) &&
                    (row.strategy != FIATOMIC_STRATEGY_NONE) &&
                    filter(g, &row) && (n < max)) {
                    cells[n++] = cell;
                }
            }
        }
    }
    return n;
}

static int perf_filter_ucp(perf_goals_t *g, const perf_row_t *row)
{
    return perf_drv_ucp_has(&row->cell);
}

static int perf_filter_all(perf_goals_t *g, const perf_row_t *row)
{
    return 1;
}

static int perf_filter_emulated(perf_goals_t *g, const perf_row_t *row)
{
    return row->strategy != FIATOMIC_STRATEGY_NATIVE;
}

/* The 32-byte cells (long double complex): executed under a lock every
 * actor takes (direct on shared memory). */
static int perf_filter_size32(perf_goals_t *g, const perf_row_t *row)
{
    return row->cell.datatype == FI_LONG_DOUBLE_COMPLEX;
}

/* Rate sweeps over tcp take ~0.1 s a cell: every emulated cell of four
 * representative datatypes (8-byte integer and float, 16-byte integer,
 * 32-byte complex: every strategy and element size class of the library). */
static int perf_filter_emulated_rep(perf_goals_t *g, const perf_row_t *row)
{
    int dt = row->cell.datatype;

    return perf_filter_emulated(g, row) &&
           ((dt == FI_UINT64) || (dt == FI_DOUBLE) || (dt == FI_UINT128) ||
            (dt == FI_LONG_DOUBLE_COMPLEX));
}

/* The reference: raw UCP fetch-add u64, measured `n` times. */
static int perf_goal_ref(perf_goals_t *g, unsigned window, size_t iters,
                         double *samples, unsigned n)
{
    perf_params_t p;
    perf_result_t res;
    unsigned i;

    perf_goal_params(g, &perf_goal_fadd, 1, window, iters, &p);
    for (i = 0; i < n; ++i) {
        if (perf_goal_once(g, PERF_API_UCP, &p, &res)) {
            return -1;
        }
        samples[i] = res.lat_typical;
    }
    return 0;
}

/*
 * Compare every cell with a reference (api_b on ref_cell, or on the same
 * cell when ref_cell is NULL), measured right before it. ratio = A / B. The
 * worst ratio is reported; cells past the limit on the first pass are
 * re-measured, interleaved with the reference, 5 times.
 */
typedef struct {
    perf_api_t        api_a;
    perf_api_t        api_b;
    const perf_cell_t *ref_cell;   /* NULL: the same cell */
    unsigned          window;
    size_t            iters;
    int               at_most;
    double            limit;
    int               invert;      /* judge B / A instead (faster than) */
    unsigned          repeats;     /* confirmation pairs; 0: the default */
} perf_sweep_t;

static void perf_goal_sweep(perf_goals_t *g, const char *name,
                            const char *what,
                            const perf_sweep_t *sw, const perf_cell_t *cells,
                            unsigned n)
{
    double a, b, ratio, worst = 0, sum = 0;
    perf_params_t pa, pb;
    unsigned i, measured = 0, missed = 0;
    char worst_name[64] = "-", detail[128];
    int first = 1, bad;

    if (!perf_goal_wanted(g, name)) {
        return;
    }
    for (i = 0; i < n; ++i) {
        perf_goal_params(g, &cells[i], 1, sw->window, sw->iters, &pa);
        perf_goal_params(g, sw->ref_cell ? sw->ref_cell : &cells[i], 1,
                         sw->window, sw->iters, &pb);
        perf_goal_progress(g, what, i + 1, n);

        /* the reference (the same cell, or ref_cell) right before: the
         * load of this shared machine drifts over a sweep */
        if (perf_goal_pair(g, sw->api_a, &pa, sw->api_b, &pb, 1, &a, &b,
                           NULL)) {
            continue; /* e.g. libfabric lacks the cell */
        }

        ratio = sw->invert ? b / a : a / b;
        bad   = sw->at_most ? (ratio > sw->limit) : (ratio < sw->limit);
        if (bad) { /* confirm: the median ratio of interleaved pairs */
            if (perf_goal_pair(g, sw->api_a, &pa, sw->api_b, &pb,
                               sw->repeats ? sw->repeats : PERF_GOAL_REPEATS,
                               &a, &b, &ratio) == 0) {
                ratio = sw->invert ? 1.0 / ratio : ratio;
            } else {
                ratio = sw->invert ? b / a : a / b;
            }
            bad = sw->at_most ? (ratio > sw->limit) : (ratio < sw->limit);
        }

        ++measured;
        missed += bad;
        sum    += ratio;
        if (first || (sw->at_most ? (ratio > worst) : (ratio < worst))) {
            worst = ratio;
            first = 0;
            perf_cell_str(&cells[i], worst_name, sizeof(worst_name));
        }
    }

    if (measured == 0) {
        printf("GOAL %-27s %-6s %-44s not measured (no cells)\n", name,
               g->tl, what);
        return;
    }
    snprintf(detail, sizeof(detail), "worst %s; mean x%.3f; %u/%u cells "
             "miss", worst_name, sum / measured, missed, measured);
    perf_goal_add(g, name, what, worst, sw->at_most, sw->limit, detail);
}

/* ------------------------------------------------------------------------ */
/* The goals                                                                 */

/* The cells UCP has natively (4/8-byte integers, READ/WRITE of any 4/8-byte
 * type) against raw UCP, latency and rate (64 in flight):
 *  - shared memory (posix/sysv): libfiatomic executes them direct, CPU
 *    atomics on the mapped element without UCP's request machinery, and
 *    must beat UCP: direct-latency-vs-ucp <= 0.8, direct-rate-vs-ucp >=
 *    1.25;
 *  - elsewhere: through UCP, within 5% of it: native-latency-vs-ucp <=
 *    1.05, native-rate-vs-ucp >= 0.95. */
static void perf_goal_native(perf_goals_t *g, int shm)
{
    perf_cell_t cells[64];
    unsigned n = perf_goal_cells(g, perf_filter_ucp, cells, 64);
    perf_sweep_t sw;

    memset(&sw, 0, sizeof(sw));
    sw.api_a   = PERF_API_FIA;
    sw.api_b   = PERF_API_UCP;
    sw.window  = 1;
    sw.iters   = g->iters;
    sw.at_most = 1;
    sw.limit   = shm ? 0.8 : 1.05;
    perf_goal_sweep(g, shm ? "direct-latency-vs-ucp" : "native-latency-vs-ucp",
                    shm ? "direct: latency / raw UCP" :
                          "native cells: latency / raw UCP", &sw, cells, n);

    sw.window  = PERF_GOAL_WINDOW;
    sw.iters   = g->rate_iters;
    sw.at_most = 0;
    sw.limit   = shm ? 1.25 : 0.95;
    sw.invert  = 1; /* rate ratio = UCP time / fiatomic time */
    perf_goal_sweep(g, shm ? "direct-rate-vs-ucp" : "native-rate-vs-ucp",
                    shm ? "direct: rate (64 in flight) / raw UCP" :
                          "native cells: rate (64 in flight) / raw UCP",
                    &sw, cells, n);
}

static int perf_filter_16_bytes(perf_goals_t *g, const perf_row_t *row)
{
    return fiatomic_ref_datatype_size(row->cell.datatype) == 16;
}

/* A sweep of fiatomic calls against the native fetch-add (raw UCP, u64),
 * one call at a time, each cell at most limit times the fetch-add */
static void perf_sweep_latency_vs_fadd(perf_goals_t *g, perf_sweep_t *sw,
                                       double limit)
{
    memset(sw, 0, sizeof(*sw));
    sw->api_a    = PERF_API_FIA;
    sw->api_b    = PERF_API_UCP;
    sw->ref_cell = &perf_goal_fadd;
    sw->window   = 1;
    sw->iters    = g->iters;
    sw->at_most  = 1;
    sw->limit    = limit;
}

/* A latency goal of the cells that pass filter against the native fetch-add
 * (raw UCP, u64), one call at a time */
static void perf_goal_latency_vs_fadd(perf_goals_t *g, const char *name,
                                      const char *what,
                                      perf_cell_filter_t filter, double limit)
{
    static perf_cell_t cells[FIATOMIC_REF_DATATYPE_COUNT *
                             FIATOMIC_REF_OP_COUNT * FIATOMIC_FAMILY_LAST];
    unsigned n = perf_goal_cells(g, filter, cells,
                                 sizeof(cells) / sizeof(cells[0]));
    perf_sweep_t sw;

    perf_sweep_latency_vs_fadd(g, &sw, limit);
    perf_goal_sweep(g, name, what, &sw, cells, n);
}

/* wide16-latency-vs-fadd: shared memory, every cell of 16-byte elements
 * (int128, double complex, long double: one cmpxchg16b) <= 1.5x native
 * fetch-add */
static void perf_goal_wide16(perf_goals_t *g)
{
    perf_goal_latency_vs_fadd(g, "wide16-latency-vs-fadd",
                              "16-byte cells: latency / native fetch-add",
                              perf_filter_16_bytes, 1.5);
}

/* cell-latency-vs-fadd, cell32-latency-vs-fadd, speedup-vs-ofi-shm: shared
 * memory, every cell and the 32-byte cells alone <= 2x native fetch-add,
 * every cell >= 5x faster than libfabric shm */
static void perf_goal_shm(perf_goals_t *g)
{
    static perf_cell_t cells[FIATOMIC_REF_DATATYPE_COUNT *
                             FIATOMIC_REF_OP_COUNT * FIATOMIC_FAMILY_LAST];
    unsigned n;
    double ref[6];
    perf_sweep_t sw;

    if (!perf_goal_wanted(g, "cell-latency-vs-fadd") &&
        !perf_goal_wanted(g, "cell32-latency-vs-fadd") &&
        !(g->o->baseline_ofi && perf_goal_wanted(g, "speedup-vs-ofi-shm"))) {
        return;
    }
    if (perf_goal_ref(g, 1, g->iters, ref, 3)) {
        printf("GOAL %-27s %-6s cannot measure the native fetch-add\n",
               "cell-latency-vs-fadd", g->tl);
        return;
    }

    printf("       %-6s native fetch-add (raw UCP, u64): %.4f us\n", g->tl,
           perf_median(ref, 3));
    perf_goal_latency_vs_fadd(g, "cell-latency-vs-fadd",
                              "every cell: latency / native fetch-add",
                              perf_filter_all, 2.0);
    /* the same ratio judged on the 15 long double complex cells alone, the
     * slowest class (a lock around each) */
    perf_goal_latency_vs_fadd(g, "cell32-latency-vs-fadd",
                              "32-byte cells: latency / native fetch-add",
                              perf_filter_size32, 2.0);

    if (g->o->baseline_ofi) {
        n = perf_goal_cells(g, perf_filter_all, cells,
                            sizeof(cells) / sizeof(cells[0]));
        memset(&sw, 0, sizeof(sw));
        sw.api_a   = PERF_API_FIA;
        sw.api_b   = PERF_API_OFI;
        sw.window  = 1;
        sw.iters   = g->iters / 2; /* libfabric shm: ~1.5 us a call */
        sw.at_most = 0;
        sw.limit   = 5.0;
        sw.invert  = 1; /* speed-up = libfabric time / fiatomic time */
        perf_goal_sweep(g, "speedup-vs-ofi-shm",
                        "libfabric shm latency / fiatomic", &sw, cells,
                        n);
    }
}

/* emulated-latency-vs-fadd, emulated-rate-vs-fadd, speedup-vs-ofi-tcp: tcp,
 * emulated cells <= 1.3x native fetch-add, rate >= 0.8x native, faster than
 * tcp;ofi_rxm */
static void perf_goal_tcp(perf_goals_t *g)
{
    static perf_cell_t cells[FIATOMIC_REF_DATATYPE_COUNT *
                             FIATOMIC_REF_OP_COUNT * FIATOMIC_FAMILY_LAST];
    unsigned n = perf_goal_cells(g, perf_filter_emulated, cells,
                                 sizeof(cells) / sizeof(cells[0]));
    unsigned n_all;
    double ref[6], rate_ref[6];
    perf_sweep_t sw;

    if (!perf_goal_wanted(g, "emulated-latency-vs-fadd") &&
        !perf_goal_wanted(g, "emulated-rate-vs-fadd") &&
        !(g->o->baseline_ofi && perf_goal_wanted(g, "speedup-vs-ofi-tcp"))) {
        return;
    }
    if (perf_goal_ref(g, 1, g->iters, ref, 3) ||
        perf_goal_ref(g, PERF_GOAL_WINDOW, g->rate_iters, rate_ref, 3)) {
        printf("GOAL %-27s %-6s cannot measure the native fetch-add\n",
               "emulated-latency-vs-fadd", g->tl);
        return;
    }
    printf("       %-6s native fetch-add (raw UCP, u64): %.3f us, with %d "
           "in flight %.3f us per call\n", g->tl, perf_median(ref, 3),
           PERF_GOAL_WINDOW, perf_median(rate_ref, 3));

    perf_sweep_latency_vs_fadd(g, &sw, 1.3);
    perf_goal_sweep(g, "emulated-latency-vs-fadd",
                    "emulated cells: latency / native fetch-add", &sw,
                    cells, n);

    n = perf_goal_cells(g, perf_filter_emulated_rep, cells,
                        sizeof(cells) / sizeof(cells[0]));
    sw.window    = PERF_GOAL_WINDOW;
    sw.iters     = g->rate_iters;
    sw.at_most   = 0;
    sw.limit     = 0.8;
    sw.invert    = 1;
    perf_goal_sweep(g, "emulated-rate-vs-fadd",
                    "emulated cells (u64 f64 u128 cld): rate / native",
                    &sw, cells, n);

    if (g->o->baseline_ofi) {
        n_all = perf_goal_cells(g, perf_filter_all, cells,
                                sizeof(cells) / sizeof(cells[0]));
        memset(&sw, 0, sizeof(sw));
        sw.api_a   = PERF_API_FIA;
        sw.api_b   = PERF_API_OFI;
        sw.window  = 1;
        sw.iters   = g->iters;
        sw.at_most = 0;
        sw.limit   = 1.0;
        sw.invert  = 1;
        perf_goal_sweep(g, "speedup-vs-ofi-tcp",
                        "tcp;ofi_rxm latency / fiatomic", &sw, cells,
                        n_all);
    }
}

/* array1024-latency-vs-single: count 1024 of SUM u64 over tcp within 10x
 * the count-1 latency */
static void perf_goal_array(perf_goals_t *g)
{
    perf_params_t pa, pb;
    double a, b;
    char detail[96];

    if (!perf_goal_wanted(g, "array1024-latency-vs-single")) {
        return;
    }
    perf_goal_params(g, &perf_goal_fadd, PERF_GOAL_ARRAY, 1, g->iters / 10,
                     &pa);
    perf_goal_params(g, &perf_goal_fadd, 1, 1, g->iters, &pb);
    if (perf_goal_pair(g, PERF_API_FIA, &pa, PERF_API_FIA, &pb,
                       PERF_GOAL_REPEATS, &a, &b, NULL)) {
        printf("GOAL %-27s %-6s cannot measure\n",
               "array1024-latency-vs-single", g->tl);
        return;
    }
    snprintf(detail, sizeof(detail), "fetch SUM UINT64: count 1024 %.2f us, "
             "count 1 %.2f us", a, b);
    perf_goal_add(g, "array1024-latency-vs-single",
                  "count 1024 latency / count 1", a / b, 1, 10.0,
                  detail);
}

/* mallocs-per-call, rss-growth-mib: no allocation per call in steady
 * state, RSS flat. `calls` scale with -n (default 10000: 1e7 calls on
 * shared memory, 2e5 over tcp). */
static void perf_goal_memory(perf_goals_t *g, size_t calls,
                             const perf_cell_t *cell, unsigned window)
{
    uint64_t rss0, rss1, srss0, srss1, m0, m1, sm0, sm1;
    perf_params_t p;
    perf_result_t res;
    char what[128], detail[160], name[64];
    double per_call;
    int counted = perf_malloc_count_works();

    if (!perf_goal_wanted(g, "mallocs-per-call") &&
        !perf_goal_wanted(g, "rss-growth-mib")) {
        return;
    }
    /* warm-up first: caches and pools reach their steady size */
    perf_goal_params(g, cell, 1, window, calls / 10, &p);
    if (perf_goal_once(g, PERF_API_FIA, &p, &res) ||
        perf_session_server_rss(g->s, &srss0, &sm0)) {
        return;
    }
    rss0 = perf_rss_bytes();
    m0   = perf_malloc_calls();
    perf_goal_params(g, cell, 1, window, calls, &p);
    p.warmup = 0;
    if (perf_goal_once(g, PERF_API_FIA, &p, &res) ||
        perf_session_server_rss(g->s, &srss1, &sm1)) {
        return;
    }
    rss1 = perf_rss_bytes();
    m1   = perf_malloc_calls();

    /* the measurement's own buffers (2 small arrays) are the only
     * allocations of the tool in that span */
    per_call = (double)((m1 - m0) + (sm1 - sm0)) / (double)calls;
    snprintf(what, sizeof(what), "allocations per call: %.0e of %s, W %u",
             (double)calls, perf_cell_str(cell, name, sizeof(name)), window);
    snprintf(detail, sizeof(detail), "RSS %+lld KiB here, %+lld KiB target; "
             "%s", ((long long)rss1 - (long long)rss0) / 1024,
             ((long long)srss1 - (long long)srss0) / 1024,
             counted ? "" : "mallocs not counted in this build");
    perf_goal_add(g, "mallocs-per-call", what, counted ? per_call : 0, 1,
                  0.001, detail);
    perf_goal_add(g, "rss-growth-mib", "RSS growth (MiB, both processes)",
                  (double)(((long long)rss1 - (long long)rss0) +
                           ((long long)srss1 - (long long)srss0)) /
                  (1 << 20), 1, 1.0, "");
}

/* contended-cas-rate-14-vs-2: tcp, initiators running the CAS loop on one
 * word: the aggregate rate of 14 must not fall below that of 2 (a failed
 * CAS costs a round trip there). Best of 2 interleaved rounds: a stall
 * only lowers a rate. */
static void perf_goal_contention(perf_goals_t *g)
{
    static const unsigned counts[2] = {2, 14};
    perf_scale_summary_t sum;
    perf_opts_t o = *g->o;
    double best[2] = {0, 0}, retries = 0, handoffs = 0;
    char detail[160];
    int over = 0, lost = 0;
    unsigned r, i;

    if (!perf_goal_wanted(g, "contended-cas-rate-14-vs-2")) {
        return;
    }
    o.params.cell             = perf_goal_fadd;
    o.params.count            = 1;
    o.params.window           = 1;
    o.params.warmup           = 200;
    o.scale_seconds           = 1.0;
    o.num_scale_strategies    = 1;
    o.scale_strategies[0]     = (char*)"cas";
    for (r = 0; r < 2; ++r) {
        for (i = 0; i < 2; ++i) {
            if (perf_scale_once(&o, g->s, counts[i], 1, &sum)) {
                printf("GOAL %-27s %-6s cannot measure: %s\n",
                       "contended-cas-rate-14-vs-2", g->tl, sum.msg);
                return;
            }
            best[i] = (sum.aggregate > best[i]) ? sum.aggregate : best[i];
            lost   |= !sum.check;
            if (i == 1) {
                over     |= sum.oversubscribed;
                retries  += sum.retries_per_call / 2;
                handoffs += sum.handoffs_per_call / 2;
            }
        }
    }
    snprintf(detail, sizeof(detail), "2: %.0f/s, 14: %.0f/s; at 14 %.2f "
             "failed CAS + %.2f hand-offs per call%s%s", best[0], best[1],
             retries, handoffs, over ? "; oversubscribed: 15 processes on "
             "fewer CPUs" : "", lost ? "; FINAL VALUE WRONG" : "");
    perf_goal_add(g, "contended-cas-rate-14-vs-2",
                  "CAS loop, 1 word: rate of 14 initiators / 2",
                  lost ? 0 : best[1] / best[0], 0, 1.0, detail);
}

/* ------------------------------------------------------------------------ */
/* This project's libfabric provider                                         */

/* The datatypes the prov-speedup goals sweep (every op and family of each):
 * one of each class libfabric's util atomics have, 4- and 8-byte integer,
 * floating point, complex. */
static int perf_filter_prov_rep(perf_goals_t *g, const perf_row_t *row)
{
    int dt = row->cell.datatype;

    return (dt == FI_INT32) || (dt == FI_UINT64) || (dt == FI_DOUBLE) ||
           (dt == FI_FLOAT_COMPLEX);
}

/* Whether the transport's reference provider has the cell: 1 it has, 0 it
 * lacks it, -1 it cannot be opened. */
static int perf_goal_ref_has(perf_goals_t *g, const perf_cell_t *cell)
{
    const char *provider = perf_drv_ofi_provider_for(g->ref_tl);
    perf_driver_t drv;
    perf_params_t p;
    int ret;

    if (provider == NULL) {
        return -1;
    }
    perf_goal_params(g, cell, 1, 1, 1, &p);
    ret = perf_drv_ofi_init(&drv, g->s, PERF_GOAL_OFI_REF, &p, provider);
    if (ret == 0) {
        drv.cleanup(drv.arg);
        return 1;
    }
    return (ret == -1) ? 0 : -1;
}

/*
 * prov-speedup-vs-ofi-shm / -tcp: the reference provider's latency over
 * this provider's, cell by cell, on the cells both have (of the datatypes
 * perf_filter_prov_rep keeps): >= 2 on shared memory, >= 1 over tcp.
 * prov-only-cells-vs-prov-fadd: every cell the reference lacks, its
 * latency through this provider over this provider's own fetch-add (u64):
 * <= 2.
 */
static void perf_goals_prov_sweeps(perf_goals_t *g, int shm)
{
    static perf_cell_t cells[FIATOMIC_REF_DATATYPE_COUNT *
                             FIATOMIC_REF_OP_COUNT * FIATOMIC_FAMILY_LAST];
    static perf_cell_t only[FIATOMIC_REF_DATATYPE_COUNT *
                            FIATOMIC_REF_OP_COUNT * FIATOMIC_FAMILY_LAST];
    const char *name = shm ? "prov-speedup-vs-ofi-shm" :
                             "prov-speedup-vs-ofi-tcp";
    unsigned n, n_only = 0, i;
    perf_sweep_t sw;
    int has;

    memset(&sw, 0, sizeof(sw));
    sw.window  = 1;
    sw.iters   = g->iters;
    sw.repeats = PERF_GOAL_PROV_REPEATS;

    if (perf_goal_wanted(g, name)) {
        n = perf_goal_cells(g, perf_filter_prov_rep, cells,
                            sizeof(cells) / sizeof(cells[0]));
        sw.api_a   = PERF_API_PROV;
        sw.api_b   = PERF_API_OFI;
        sw.at_most = 0;
        sw.limit   = shm ? 2.0 : 1.0;
        sw.invert  = 1; /* speed-up = libfabric's time / the provider's */
        perf_goal_sweep(g, name, shm ?
                        "libfabric shm latency / fiatomic provider, its "
                        "region shared" :
                        "tcp;ofi_rxm latency / fiatomic provider", &sw,
                        cells, n);
    }

    if (!perf_goal_wanted(g, "prov-only-cells-vs-prov-fadd")) {
        return;
    }
    n = perf_goal_cells(g, perf_filter_all, cells,
                        sizeof(cells) / sizeof(cells[0]));
    for (i = 0; i < n; ++i) {
        has = perf_goal_ref_has(g, &cells[i]);
        if (has < 0) {
            printf("GOAL %-27s %-6s not measured (libfabric's %s cannot be "
                   "opened)\n", "prov-only-cells-vs-prov-fadd", g->tl,
                   perf_drv_ofi_provider_for(g->ref_tl));
            return;
        }
        if (!has) {
            only[n_only++] = cells[i];
        }
    }
    sw.api_a    = PERF_API_PROV;
    sw.api_b    = PERF_API_PROV;
    sw.ref_cell = &perf_goal_fadd;
    sw.at_most  = 1;
    sw.limit    = 2.0;
    sw.invert   = 0;
    perf_goal_sweep(g, "prov-only-cells-vs-prov-fadd",
                    "cells only it has: latency / its fetch-add", &sw, only,
                    n_only);
}

/* The prov- goals of transport tl, in a session of their own, over that
 * transport alone: over shared memory the provider connects by its domains'
 * published worker addresses (fi_fiatomic(7)), with no tcp lanes beside,
 * whose progress took half of both processes' cycles. */
static int perf_goals_prov(const perf_opts_t *o, const char *tl, int shm,
                           perf_goals_t *g)
{
    char tls[128];
    perf_session_t s;
    perf_params_t p;
    perf_result_t res;
    double fadd;

    /* named, or with every goal when there is a provider path to find
     * it in (it is no part of libfabric's own) */
    if (((o->num_goal_names == 0) &&
         (!o->baseline_ofi || (getenv("FI_PROVIDER_PATH") == NULL))) ||
        !perf_drv_ofi_available() ||
        (!perf_goal_wanted(g, shm ? "prov-speedup-vs-ofi-shm" :
                                    "prov-speedup-vs-ofi-tcp") &&
         !perf_goal_wanted(g, "prov-only-cells-vs-prov-fadd"))) {
        return 0;
    }
    snprintf(tls, sizeof(tls), "%s", tl);
    /* on shared memory the provider places the region the target
     * registered (its own page-aligned allocation, as SOS's heap is) in
     * shared memory: peers then execute with CPU atomics in it. The
     * target process inherits the variable; libfabric's shm ignores it. */
    if (setenv("UCX_TLS", tls, 1) ||
        (shm && setenv(PERF_GOAL_PROV_SHARE, "1", 1)) ||
        perf_session_open(&s, o)) {
        fprintf(stderr, PERF_NAME ": cannot run over %s\n", tls);
        unsetenv(PERF_GOAL_PROV_SHARE);
        return -1;
    }
    g->s      = &s;
    g->ref_tl = tl;
    /* the provider's calls take microseconds on both transports */
    g->iters  = o->params.iters / 5;
    g->warmup = g->iters / 10;
    printf("\n=== goals of the libfabric provider '%s' over %s (UCX_TLS=%s%s):"
           " %zu calls per latency measurement ===\n", PERF_GOAL_PROV_NAME,
           tl, tls, shm ? ", " PERF_GOAL_PROV_SHARE "=1" : "", g->iters);

    perf_goal_params(g, &perf_goal_fadd, 1, 1, g->iters, &p);
    if (perf_goal_once(g, PERF_API_PROV, &p, &res)) {
        printf("GOAL %-27s %-6s not measured (the libfabric provider '%s' "
               "cannot be opened: FI_PROVIDER_PATH?)\n",
               shm ? "prov-speedup-vs-ofi-shm" : "prov-speedup-vs-ofi-tcp",
               g->tl, PERF_GOAL_PROV_NAME);
    } else {
        fadd = res.lat_typical;
        if (perf_goal_once(g, PERF_API_OFI, &p, &res) == 0) {
            printf("       %-6s fetch-add (u64): provider %s %.3f us, "
                   "libfabric %s %.3f us\n", g->tl, PERF_GOAL_PROV_NAME,
                   fadd, perf_drv_ofi_provider_for(tl), res.lat_typical);
        }
        perf_goals_prov_sweeps(g, shm);
    }
    perf_session_close(&s);
    unsetenv(PERF_GOAL_PROV_SHARE);
    g->ref_tl = NULL;
    return 0;
}

static int perf_goals_transport(const perf_opts_t *o, const char *tl,
                                perf_goals_t *g)
{
    static const perf_cell_t cswap_lt = {
        FIATOMIC_FAMILY_COMPARE, FI_CSWAP_LT, FI_DOUBLE
    };
    int shm = (strstr(tl, "posix") != NULL) || (strstr(tl, "sysv") != NULL);
    int tcp = (strstr(tl, "tcp") != NULL);
    perf_session_t s;

    if (setenv("UCX_TLS", tl, 1) || perf_session_open(&s, o)) {
        fprintf(stderr, PERF_NAME ": cannot run over %s\n", tl);
        return -1;
    }

    g->s      = &s;
    g->tl     = tl;
    /* a tcp call costs ~10-20 us, a shared-memory one ~0.05: over tcp
     * fewer calls, but enough for the typical latency to be the median of
     * ~60 batches (a shared machine's scheduler stalls a few of them) */
    g->iters      = o->params.iters / (tcp ? 10 : 1);
    g->rate_iters = tcp ? o->params.iters * 4 / 5 : o->params.iters * 2;
    g->warmup     = g->iters / 10;
    printf("\n=== goals over %s (UCX_TLS=%s): %zu calls per latency "
           "measurement, %zu per rate measurement ===\n", tl, tl, g->iters,
           g->rate_iters);

    perf_goal_native(g, shm);
    if (shm) {
        perf_goal_shm(g);
        perf_goal_wide16(g);
        perf_goal_memory(g, o->params.iters * 1000, &cswap_lt, 1);
    }
    if (tcp) {
        perf_goal_tcp(g);
        perf_goal_array(g);
        perf_goal_memory(g, o->params.iters * 20, &cswap_lt,
                         PERF_GOAL_WINDOW);
        perf_goal_contention(g);
    }

    perf_session_close(&s);
    g->s = NULL;
    return perf_goals_prov(o, tl, shm, g);
}

int perf_goals_run(const perf_opts_t *o)
{
    perf_goals_t *g = calloc(1, sizeof(*g));
    unsigned i, met = 0, errors = 0;

    if (g == NULL) {
        return -1;
    }
    g->o = o;
    printf("fiatomic_perftest --goals: ratios of one run; latency = typical "
           "(median of batch averages), post to completion at the target;\n"
           "  each cell against its reference measured right before it; a "
           "cell past its limit is measured again in %d interleaved pairs\n"
           "  and judged on the median of the pairs' ratios (the load of a "
           "shared machine drifts, a pair shares it)\n", PERF_GOAL_REPEATS);
    for (i = 0; i < o->num_transports; ++i) {
        errors += (perf_goals_transport(o, o->transports[i], g) != 0);
    }

    printf("\n%-27s %-6s %-44s %10s %8s  %s\n", "goal", "tl", "measured",
           "value", "target", "verdict");
    for (i = 0; i < g->num_goals; ++i) {
        printf("%-27s %-6s %-44s %10.4g %3s %5.3g  %s\n", g->goals[i].name,
               g->goals[i].transport, g->goals[i].what, g->goals[i].value,
               g->goals[i].at_most ? "<=" : ">=", g->goals[i].limit,
               g->goals[i].met ? "MET" : "NOT MET");
        met += g->goals[i].met;
    }
    printf("\nGOALS: %u of %u MET%s\n", met, g->num_goals,
           errors ? " (some transports could not run)" : "");
    free(g);
    return errors ? -1 : 0;
}
