/**
 * Matrix mode: every cell of fi_atomic(3) on every transport asked for, each
 * in a fresh loopback session (UCX_TLS is read at ucp_init, and the target
 * process must use the same transports). Cells the library executes are
 * verified and timed; the others are counted as unsupported.
 */
#include "perftest.h"
#include "fiatomic_ref.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    unsigned defined;      /* cells of fi_atomic(3) */
    unsigned run;          /* supported here, run */
    unsigned ok;
    unsigned failed;
    unsigned unsupported;
} perf_matrix_stats_t;

static void perf_matrix_progress(const perf_opts_t *o, const char *tl,
                                 unsigned done, unsigned total,
                                 const perf_cell_t *cell)
{
    char name[64];

    if (!o->progress) {
        return;
    }
    if (isatty(STDERR_FILENO)) {
        fprintf(stderr, "\r[%s] %u/%u %-28s", tl, done, total,
                cell ? perf_cell_str(cell, name, sizeof(name)) : "done");
        if (cell == NULL) {
            fprintf(stderr, "\n");
        }
    } else if ((cell == NULL) || (done % 50 == 0)) {
        fprintf(stderr, "[%s] %u/%u cells\n", tl, done, total);
    }
}

/* Cells the library executes here, for the progress total. */
static unsigned perf_matrix_count(perf_session_t *s)
{
    perf_cell_t cell;
    perf_row_t row;
    unsigned n = 0;

    for (cell.family = 0; cell.family < FIATOMIC_FAMILY_LAST; ++cell.family) {
        for (cell.op = 0; cell.op < FI_ATOMIC_OP_LAST; ++cell.op) {
            for (cell.datatype = 0; cell.datatype <= FI_UINT128;
                 ++cell.datatype) {
                n += (perf_row_query(s, &cell, &row) == 0) &&
                     (row.strategy != FIATOMIC_STRATEGY_NONE);
            }
        }
    }
    return n;
}

/* Returns 1 when the cell was run. */
static int perf_matrix_cell(perf_session_t *s, const perf_opts_t *o,
                             const char *tl, const perf_cell_t *cell,
                             perf_matrix_stats_t *st)
{
    int defined = fiatomic_ref_cell_defined(cell->family, cell->op,
                                            cell->datatype);
    perf_params_t p = o->params;
    perf_row_t row;
    int known;

    known    = (perf_row_query(s, cell, &row) == 0);
    st->defined += defined;
    if (!known || (row.strategy == FIATOMIC_STRATEGY_NONE)) {
        st->unsupported += defined;
        return 0;
    }

    ++st->run;
    if (!defined) {
        /* the library claims a cell the man page does not have */
        row.failed = 1;
        snprintf(row.msg, sizeof(row.msg), "not a cell of fi_atomic(3)");
    } else {
        p.cell = *cell;
        perf_row_run(s, o, &p, &row);
    }

    if (row.failed) {
        ++st->failed;
    } else {
        ++st->ok;
    }
    perf_report_table_row(o, tl, &row);
    fflush(stdout);
    return 1;
}

static int perf_matrix_transport(const perf_opts_t *o, const char *tl,
                                 perf_matrix_stats_t *st)
{
    perf_session_t s;
    perf_cell_t cell;
    unsigned total;

    if (setenv("UCX_TLS", tl, 1) ||
        ((o->strategy != NULL) &&
         setenv("FIATOMIC_STRATEGY", o->strategy, 1))) {
        return -1;
    }
    if (perf_session_open(&s, o)) {
        fprintf(stderr, PERF_NAME ": cannot run over %s\n", tl);
        return -1;
    }

    total = perf_matrix_count(&s);
    if (o->fmt == PERF_FMT_TEXT) {
        printf("\n=== transport %s (UCX_TLS=%s), FIATOMIC_STRATEGY=%s: %u "
               "cells supported; count %zu, %zu iterations + %zu warm-up, "
               "latency = post to completion at the target ===\n", tl, tl,
               getenv("FIATOMIC_STRATEGY") ? getenv("FIATOMIC_STRATEGY") :
               "auto", total, o->params.count, o->params.iters,
               o->params.warmup);
        perf_report_table_header(o, tl);
    }

    for (cell.family = 0; cell.family < FIATOMIC_FAMILY_LAST; ++cell.family) {
        for (cell.op = 0; cell.op < FI_ATOMIC_OP_LAST; ++cell.op) {
            for (cell.datatype = 0; cell.datatype <= FI_UINT128;
                 ++cell.datatype) {
                if (perf_matrix_cell(&s, o, tl, &cell, st)) {
                    perf_matrix_progress(o, tl, st->run, total, &cell);
                }
            }
        }
    }
    perf_matrix_progress(o, tl, st->run, total, NULL);
    perf_session_close(&s);

    if (o->fmt == PERF_FMT_TEXT) {
        printf("--- %s: %u cells run, %u verified ok, %u FAIL, %u of %u "
               "cells of fi_atomic(3) unsupported here\n", tl, st->run,
               st->ok, st->failed, st->unsupported, st->defined);
    }
    return 0;
}

int perf_matrix_run(const perf_opts_t *o)
{
    perf_matrix_stats_t st[PERF_MAX_TRANSPORTS];
    unsigned i, ok = 0, failed = 0, errors = 0;

    memset(st, 0, sizeof(st));
    if (o->fmt == PERF_FMT_CSV) {
        perf_report_csv_header(o);
    }

    for (i = 0; i < o->num_transports; ++i) {
        if (perf_matrix_transport(o, o->transports[i], &st[i])) {
            ++errors;
        }
        ok     += st[i].ok;
        failed += st[i].failed;
    }

    fprintf(o->fmt == PERF_FMT_CSV ? stderr : stdout, "\nSUMMARY:");
    for (i = 0; i < o->num_transports; ++i) {
        fprintf(o->fmt == PERF_FMT_CSV ? stderr : stdout, " %s %u/%u ok%s",
                o->transports[i], st[i].ok, st[i].run,
                (i + 1 < o->num_transports) ? ";" : "");
    }
    fprintf(o->fmt == PERF_FMT_CSV ? stderr : stdout,
            " -- %u cells verified ok, %u FAIL, %u transport errors: %s\n",
            ok, failed, errors, (failed || errors) ? "FAILED" : "PASSED");
    return (errors > 0) ? -1 : (int)failed;
}
