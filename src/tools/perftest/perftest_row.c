/**
 * One cell of the matrix: how the library executes it on this session,
 * whether it computes what the reference model says, and what it costs,
 * next to the baselines asked for.
 */
#include "perftest.h"
#include "fiatomic_ref.h"

#include <stdlib.h>
#include <string.h>

int perf_row_query(perf_session_t *s, const perf_cell_t *cell,
                   perf_row_t *row)
{
    fiatomic_cell_info_t info;

    memset(row, 0, sizeof(*row));
    row->cell     = *cell;
    row->verified = -1;
    if (fiatomic_query_cell(s->ep, s->key, cell->family, cell->datatype,
                            cell->op, &info) != 0) {
        return -1;
    }
    row->strategy       = info.strategy;
    row->needs_progress = info.needs_target_progress;
    return 0;
}

/* Returns 0, or -1 with row->msg set. */
static int perf_row_measure(perf_driver_t *drv, const perf_params_t *p,
                            perf_result_t *res, perf_row_t *row)
{
    int ret = perf_measure(drv, p, res);

    drv->cleanup(drv->arg);
    if (ret != 0) {
        snprintf(row->msg, sizeof(row->msg), "%s: measurement failed",
                 drv->name);
    }
    return ret;
}

unsigned perf_row_num_ofi(const perf_opts_t *o)
{
    if (!o->baseline_ofi) {
        return 0;
    }
    return o->num_ofi_providers ? o->num_ofi_providers : 1;
}

const char *perf_row_ofi_name(const perf_opts_t *o, unsigned index)
{
    return o->num_ofi_providers ? o->ofi_providers[index] : "libfabric";
}

void perf_row_run(perf_session_t *s, const perf_opts_t *o,
                  const perf_params_t *p, perf_row_t *row)
{
    const char *provider;
    perf_driver_t drv;
    unsigned i;
    int ret;

    if (o->verify) {
        row->verified = (perf_verify_cell(s, &p->cell, o->verify_count,
                                          row->msg, sizeof(row->msg)) == 0);
        if (!row->verified) {
            row->failed = 1;
            return; /* timing a wrong result means nothing */
        }
    }

    if (perf_drv_fia_init(&drv, s, p) ||
        perf_row_measure(&drv, p, &row->fia, row)) {
        row->failed = 1;
        return;
    }
    row->has_fia = 1;

    if (o->baseline_ucp && perf_drv_ucp_has(&p->cell) &&
        (perf_drv_ucp_init(&drv, s, p) == 0)) {
        row->has_ucp = (perf_row_measure(&drv, p, &row->ucp, row) == 0);
    }

    for (i = 0; i < perf_row_num_ofi(o); ++i) {
        /* by default the provider that matches the transport UCP uses,
         * not UCX_TLS's text (unset, or naming several) */
        provider = o->num_ofi_providers ? o->ofi_providers[i] :
                   perf_drv_ofi_provider_for(perf_session_lane_tl(s));
        if (provider == NULL) {
            continue;
        }
        ret = perf_drv_ofi_init(&drv, s, i, p, provider);
        if ((ret == -2) && o->num_ofi_providers) {
            /* one the user named that is not there is an error, not a
             * column of "-" */
            snprintf(row->msg, sizeof(row->msg), "libfabric provider '%s' "
                     "cannot be opened (FI_PROVIDER_PATH=%s)", provider,
                     getenv("FI_PROVIDER_PATH") ? getenv("FI_PROVIDER_PATH") :
                     "unset");
            row->failed = 1;
            return;
        }
        if (ret == 0) {
            row->has_ofi[i] = (perf_row_measure(&drv, p, &row->ofi[i],
                                                row) == 0);
        }
    }
}
