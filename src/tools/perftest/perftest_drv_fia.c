/**
 * Driver: the call under test through libfiatomic (fi_atomic,
 * fi_fetch_atomic or fi_compare_atomic form by family).
 */
#include "perftest.h"

#include <stdlib.h>

typedef struct {
    perf_session_t *s;
    perf_params_t  p;
    perf_slots_t   slots;
} perf_drv_fia_t;

static ucs_status_t perf_drv_fia_post(void *arg, unsigned slot, int delivery,
                                      void **req_p)
{
    perf_drv_fia_t *d          = arg;
    const perf_cell_t *cell    = &d->p.cell;
    size_t off                 = slot * d->slots.stride;
    uint64_t raddr             = d->s->base + off;
    fiatomic_request_param_t param;
    ucs_status_ptr_t sptr;

    /* With delivery, a base-family call completes only when done at the
     * target (one round trip), which is what its latency means. */
    param.op_attr_mask = FIATOMIC_OP_ATTR_FIELD_FLAGS;
    param.flags        = delivery ? FI_DELIVERY_COMPLETE : 0;

    switch (cell->family) {
    case FIATOMIC_FAMILY_BASE:
        sptr = fiatomic_atomic_nbx(d->s->ep, d->slots.operand + off,
                                   d->p.count, raddr, d->s->key,
                                   cell->datatype, cell->op, &param);
        break;
    case FIATOMIC_FAMILY_FETCH:
        sptr = fiatomic_fetch_atomic_nbx(d->s->ep, d->slots.operand + off,
                                         d->p.count, d->slots.result + off,
                                         raddr, d->s->key, cell->datatype,
                                         cell->op, &param);
        break;
    default:
        sptr = fiatomic_compare_atomic_nbx(d->s->ep, d->slots.operand + off,
                                           d->p.count,
                                           d->slots.compare + off,
                                           d->slots.result + off, raddr,
                                           d->s->key, cell->datatype,
                                           cell->op, &param);
        break;
    }

    if (UCS_PTR_IS_PTR(sptr)) {
        *req_p = sptr;
        return UCS_OK;
    }
    *req_p = NULL;
    return UCS_PTR_STATUS(sptr);
}

static ucs_status_t perf_drv_fia_test(void *arg, void *req)
{
    ucs_status_t status = fiatomic_request_check_status(req);

    if (status != UCS_INPROGRESS) {
        fiatomic_request_free(req);
    }
    return status;
}

static void perf_drv_fia_progress(void *arg)
{
    perf_drv_fia_t *d = arg;

    ucp_worker_progress(d->s->node.worker);
}

static ucs_status_t perf_drv_fia_flush(void *arg)
{
    perf_drv_fia_t *d = arg;

    return perf_session_flush(d->s);
}

static void perf_drv_fia_cleanup(void *arg)
{
    perf_drv_fia_t *d = arg;

    perf_slots_cleanup(&d->slots);
    free(d);
}

int perf_drv_fia_init(perf_driver_t *drv, perf_session_t *s,
                      const perf_params_t *p)
{
    perf_drv_fia_t *d = calloc(1, sizeof(*d));
    void *zero;

    if ((d == NULL) || perf_slots_init(&d->slots, p)) {
        free(d);
        return -1;
    }

    /* every measurement starts from targets at 0 (perf_bench_operand) */
    zero = calloc(1, d->slots.stride * p->window);
    if ((zero == NULL) ||
        (!s->no_reset && perf_session_write(s, PERF_REGION_FIATOMIC, 0, zero,
                           d->slots.stride * p->window))) {
        free(zero);
        perf_drv_fia_cleanup(d);
        return -1;
    }
    free(zero);

    d->s          = s;
    d->p          = *p;
    drv->name     = "fiatomic";
    drv->arg      = d;
    drv->post     = perf_drv_fia_post;
    drv->test     = perf_drv_fia_test;
    drv->progress = perf_drv_fia_progress;
    drv->flush    = perf_drv_fia_flush;
    drv->cleanup  = perf_drv_fia_cleanup;
    return 0;
}
