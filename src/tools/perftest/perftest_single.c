/**
 * Single-cell mode: one (family, op, datatype) with the given count, window
 * and iterations, printed in ucx_perftest's layout (or one CSV row), with
 * the baselines of the same run and their ratios.
 */
#include "perftest.h"

#include <stdlib.h>

/* Why a --baseline libfabric row has no libfabric figures. */
static void perf_single_no_ofi(perf_session_t *s)
{
    const char *tl       = perf_session_lane_tl(s);
    const char *provider = perf_drv_ofi_provider_for(tl);

    if (provider == NULL) {
        printf("  (no libfabric baseline: UCP uses %s here, and the tool "
               "has a libfabric provider for shared memory (shm) and tcp "
               "(tcp;ofi_rxm) only)\n", tl);
    } else {
        printf("  (no libfabric %s equivalent for this cell)\n", provider);
    }
}

static void perf_single_ratio(const char *name, int has,
                              const perf_result_t *base,
                              const perf_result_t *fia)
{
    if (has) {
        printf("  fiatomic / %-9s typical latency x%.3f, median x%.3f, "
               "overall x%.3f, message rate x%.3f\n", name,
               fia->lat_typical / base->lat_typical,
               fia->lat_median / base->lat_median,
               fia->lat_avg / base->lat_avg, fia->rate / base->rate);
    }
}

int perf_single_run(const perf_opts_t *o)
{
    perf_params_t p = o->params;
    perf_session_t s;
    perf_row_t row, row_ordered;
    int has_ordered = 0;
    char name[64], stage[80];
    unsigned i;

    if (perf_session_open(&s, o)) {
        return -1;
    }

    if ((perf_row_query(&s, &p.cell, &row) != 0) ||
        (row.strategy == FIATOMIC_STRATEGY_NONE)) {
        fprintf(stderr, PERF_NAME ": %s is not supported here\n",
                perf_cell_str(&p.cell, name, sizeof(name)));
        perf_session_close(&s);
        return -1;
    }
    perf_row_run(&s, o, &p, &row);
    if (o->ordered && row.has_fia && (perf_session_swap_ordered(&s) == 0)) {
        perf_row_query(&s, &p.cell, &row_ordered);
        perf_row_run(&s, o, &p, &row_ordered);
        perf_session_swap_ordered(&s);
        has_ordered = row_ordered.has_fia;
        row.failed |= row_ordered.failed;
    }

    if (o->fmt == PERF_FMT_CSV) {
        perf_report_csv_header(o);
        perf_report_table_row(o, s.transport, &row);
    } else {
        printf("+ %s: %s, count %zu, window %u, strategy %s%s, UCX_TLS=%s\n",
               PERF_NAME, perf_cell_str(&p.cell, name, sizeof(name)),
               p.count, p.window, fiatomic_strategy_name(row.strategy),
               row.needs_progress ? " (needs target progress)" : "",
               s.transport);
        if (row.verified >= 0) {
            printf("+ verified against fiatomic_ref: %s%s%s\n",
                   row.verified ? "ok" : "FAIL",
                   row.verified ? "" : ": ", row.verified ? "" : row.msg);
        }
        if (row.has_fia) {
            perf_report_single_header();
            perf_report_single("Final:", &row.fia);
            if (has_ordered) {
                perf_report_single("Final (ord):", &row_ordered.fia);
            }
            if (row.has_ucp) {
                perf_report_single("Final (ucp):", &row.ucp);
            }
            for (i = 0; i < perf_row_num_ofi(o); ++i) {
                if (row.has_ofi[i]) {
                    /* "Final (ofi):" for the provider of the transport */
                    snprintf(stage, sizeof(stage), "Final (%s):",
                             o->num_ofi_providers ?
                             perf_row_ofi_name(o, i) : "ofi");
                    perf_report_single(stage, &row.ofi[i]);
                }
            }
            if (has_ordered) {
                printf("  ordered / unordered typical latency x%.3f, "
                       "median x%.3f, overall x%.3f, message rate x%.3f\n",
                       row_ordered.fia.lat_typical / row.fia.lat_typical,
                       row_ordered.fia.lat_median / row.fia.lat_median,
                       row_ordered.fia.lat_avg / row.fia.lat_avg,
                       row_ordered.fia.rate / row.fia.rate);
            }
            perf_single_ratio("ucp", row.has_ucp, &row.ucp, &row.fia);
            for (i = 0; i < perf_row_num_ofi(o); ++i) {
                perf_single_ratio(perf_row_ofi_name(o, i), row.has_ofi[i],
                                  &row.ofi[i], &row.fia);
            }
            if (o->baseline_ucp && !row.has_ucp) {
                printf("  (no raw UCP equivalent for this cell)\n");
            }
            for (i = 0; i < perf_row_num_ofi(o); ++i) {
                if (row.has_ofi[i]) {
                    continue;
                } else if (o->num_ofi_providers) {
                    printf("  (no libfabric %s equivalent for this cell)\n",
                           perf_row_ofi_name(o, i));
                } else {
                    perf_single_no_ofi(&s);
                }
            }
            if (row.failed) { /* a provider named that is not there */
                printf("FAIL: %s\n", row.msg);
            }
        } else if (row.failed) {
            printf("FAIL: %s\n", row.msg);
        }
    }

    perf_session_close(&s);
    return row.failed ? 1 : 0;
}
