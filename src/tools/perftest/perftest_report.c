/**
 * Output: the single-cell box in ucx_perftest's layout, the matrix tables
 * (one per transport) and CSV.
 */
#include "perftest.h"

#include <string.h>

const char *perf_short_name(const char *fi_name)
{
    if (fi_name == NULL) {
        return "?";
    }
    return strncmp(fi_name, "FI_", 3) ? fi_name : fi_name + 3;
}

const char *perf_cell_str(const perf_cell_t *cell, char *buf, size_t max)
{
    snprintf(buf, max, "%s %s %s", fiatomic_family_name(cell->family),
             perf_short_name(fiatomic_op_name(cell->op)),
             perf_short_name(fiatomic_datatype_name(cell->datatype)));
    return buf;
}

void perf_report_single_header(void)
{
    printf("+--------------+--------------+------------------------------"
           "------------------------------+-------------+\n"
           "|              |              |                   latency (usec)"
           "                           | msg rate    |\n"
           "+--------------+--------------+----------+----------+----------+"
           "----------+----------+---------+-------------+\n"
           "|    Stage     | # iterations |  typical | 50.0%%ile |  overall |"
           " 90.0%%ile | 99.0%%ile |     min |  (calls/s)  |\n"
           "+--------------+--------------+----------+----------+----------+"
           "----------+----------+---------+-------------+\n");
}

void perf_report_single(const char *stage, const perf_result_t *r)
{
    printf("%-14s %14zu %10.3f %10.3f %10.3f %10.3f %10.3f %9.3f %13.0f\n",
           stage, r->iters, r->lat_typical, r->lat_median, r->lat_avg,
           r->lat_p90, r->lat_p99, r->lat_min, r->rate);
}

void perf_report_table_header(const perf_opts_t *o, const char *transport)
{
    char col[80];
    unsigned i;

    printf("%-8s %-10s %-14s %-8s %-6s %10s %10s %10s %10s",
           "family", "op", "datatype", "strategy", "check", "typical_us",
           "median_us", "avg_us", "p99_us");
    if (o->baseline_ucp) {
        printf(" %10s %7s", "ucp_us", "x_ucp");
    }
    for (i = 0; i < perf_row_num_ofi(o); ++i) {
        if (o->num_ofi_providers == 0) {
            printf(" %10s %7s", "ofi_us", "x_ofi");
        } else { /* as wide as the provider's name needs */
            snprintf(col, sizeof(col), "%s_us", perf_row_ofi_name(o, i));
            printf(" %10s %7s", col, "x");
        }
    }
    printf("\n");
}

static void perf_report_ratio(int has, const perf_result_t *base,
                              const perf_result_t *fia)
{
    if (has) {
        printf(" %10.3f %7.2f", base->lat_typical,
               fia->lat_typical / base->lat_typical);
    } else {
        printf(" %10s %7s", "-", "-");
    }
}

void perf_report_table_row(const perf_opts_t *o, const char *transport,
                           const perf_row_t *row)
{
    const perf_cell_t *c = &row->cell;
    const char *check    = (row->verified < 0) ? "-" :
                           row->verified ? "ok" : "FAIL";
    unsigned i;

    if (o->fmt == PERF_FMT_CSV) {
        printf("%s,%s,%s,%s,%s,%d,%s,%zu,%u,%zu", transport,
               fiatomic_family_name(c->family), fiatomic_op_name(c->op),
               fiatomic_datatype_name(c->datatype),
               fiatomic_strategy_name(row->strategy), row->needs_progress,
               row->failed ? "FAIL" : check, o->params.count,
               o->params.window, o->params.iters);
        if (row->has_fia) {
            printf(",%.4f,%.4f,%.4f,%.4f,%.4f,%.0f", row->fia.lat_typical,
                   row->fia.lat_median, row->fia.lat_avg, row->fia.lat_p90,
                   row->fia.lat_p99, row->fia.rate);
        } else {
            printf(",,,,,,");
        }
        /* the ratios with significant digits: a fixed 3 decimals wrote a
         * libfabric provider 10^4 times slower (a loaded machine) as 0 */
        if (row->has_ucp) {
            printf(",%.4f,%.4g", row->ucp.lat_typical,
                   row->fia.lat_typical / row->ucp.lat_typical);
        } else {
            printf(",,");
        }
        for (i = 0; i < perf_row_num_ofi(o); ++i) {
            if (row->has_ofi[i]) {
                printf(",%.4f,%.4g", row->ofi[i].lat_typical,
                       row->fia.lat_typical / row->ofi[i].lat_typical);
            } else {
                printf(",,");
            }
        }
        if (!o->baseline_ofi) {
            printf(",,"); /* the columns the header names */
        }
        printf("\n");
        return;
    }

    printf("%-8s %-10s %-14s %-8s %-6s", fiatomic_family_name(c->family),
           perf_short_name(fiatomic_op_name(c->op)),
           perf_short_name(fiatomic_datatype_name(c->datatype)),
           fiatomic_strategy_name(row->strategy),
           row->failed ? "FAIL" : check);
    if (row->has_fia) {
        printf(" %10.3f %10.3f %10.3f %10.3f", row->fia.lat_typical,
               row->fia.lat_median, row->fia.lat_avg, row->fia.lat_p99);
    } else {
        printf(" %10s %10s %10s %10s", "-", "-", "-", "-");
    }
    if (o->baseline_ucp) {
        perf_report_ratio(row->has_ucp, &row->ucp, &row->fia);
    }
    for (i = 0; i < perf_row_num_ofi(o); ++i) {
        perf_report_ratio(row->has_ofi[i], &row->ofi[i], &row->fia);
    }
    printf("\n");
    if (row->failed) {
        printf("    FAIL: %s\n", row->msg);
    }
}

void perf_report_csv_header(const perf_opts_t *o)
{
    unsigned i;

    printf("transport,family,op,datatype,strategy,needs_target_progress,"
           "verified,count,window,iters,lat_typical_us,lat_median_us,"
           "lat_avg_us,lat_p90_us,lat_p99_us,rate_calls_per_s,"
           "ucp_typical_us,x_ucp");
    if (o->num_ofi_providers == 0) {
        printf(",ofi_typical_us,x_ofi\n");
        return;
    }
    /* --providers: a pair of columns per provider, named after it */
    for (i = 0; i < o->num_ofi_providers; ++i) {
        printf(",%s_typical_us,x_%s", o->ofi_providers[i],
               o->ofi_providers[i]);
    }
    printf("\n");
}
