/**
 * Driver: the raw ucp_atomic_op_nbx equivalent of a cell, for the cells UCP
 * has natively (4/8-byte elements, count 1), on a UCP-allocated region of
 * the same target: the baseline fiatomic's native strategy must match.
 */
#include "perftest.h"
#include "fiatomic_ref.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    perf_session_t  *s;
    perf_params_t   p;
    perf_slots_t    slots;
    ucp_atomic_op_t uop;
    unsigned        size;
    int             always_reply; /* SWAP, CSWAP, fetching families */
} perf_drv_ucp_t;

static const uint64_t perf_drv_ucp_zero = 0;

static int perf_drv_ucp_map(const perf_cell_t *cell, ucp_atomic_op_t *uop_p)
{
    size_t size = fiatomic_ref_datatype_size(cell->datatype);
    int integer = (fiatomic_ref_datatype_class(cell->datatype) ==
                   FIATOMIC_REF_CLASS_INT);

    if (((size != 4) && (size != 8)) ||
        !fiatomic_ref_cell_defined(cell->family, cell->op, cell->datatype)) {
        return 0;
    }

    switch (cell->op) {
    case FI_SUM:          *uop_p = UCP_ATOMIC_OP_ADD;   return integer;
    case FI_BOR:          *uop_p = UCP_ATOMIC_OP_OR;    return integer;
    case FI_BAND:         *uop_p = UCP_ATOMIC_OP_AND;   return integer;
    case FI_BXOR:         *uop_p = UCP_ATOMIC_OP_XOR;   return integer;
    case FI_CSWAP:        *uop_p = UCP_ATOMIC_OP_CSWAP; return integer;
    case FI_ATOMIC_WRITE: *uop_p = UCP_ATOMIC_OP_SWAP;  return 1;
    case FI_ATOMIC_READ:  *uop_p = UCP_ATOMIC_OP_ADD;   return 1;
    default:                                            return 0;
    }
}

int perf_drv_ucp_has(const perf_cell_t *cell)
{
    ucp_atomic_op_t uop;

    return perf_drv_ucp_map(cell, &uop);
}

static ucs_status_t perf_drv_ucp_post(void *arg, unsigned slot, int delivery,
                                      void **req_p)
{
    perf_drv_ucp_t *d   = arg;
    size_t off          = slot * d->slots.stride;
    const void *buffer  = d->slots.operand + off;
    void *reply         = d->slots.result + off;
    ucp_request_param_t param;
    ucs_status_ptr_t sptr;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype     = ucp_dt_make_contig(d->size);
    if (d->p.cell.op == FI_ATOMIC_READ) {
        buffer = &perf_drv_ucp_zero;
    } else if (d->uop == UCP_ATOMIC_OP_CSWAP) {
        /* buffer = compare value; reply = in: new value, out: old one */
        memcpy(reply, d->slots.operand + off, d->size);
        buffer = d->slots.compare + off;
    }
    if (d->always_reply || delivery) {
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        param.reply_buffer  = reply;
    }

    sptr = ucp_atomic_op_nbx(d->s->ucp_ep, d->uop, buffer, 1,
                             d->s->ucp_base + off, d->s->ucp_rkey, &param);
    if (UCS_PTR_IS_PTR(sptr)) {
        *req_p = sptr;
        return UCS_OK;
    }
    *req_p = NULL;
    return UCS_PTR_STATUS(sptr);
}

static ucs_status_t perf_drv_ucp_test(void *arg, void *req)
{
    ucs_status_t status = ucp_request_check_status(req);

    if (status != UCS_INPROGRESS) {
        ucp_request_free(req);
    }
    return status;
}

static void perf_drv_ucp_progress(void *arg)
{
    perf_drv_ucp_t *d = arg;

    ucp_worker_progress(d->s->node.worker);
}

static ucs_status_t perf_drv_ucp_flush(void *arg)
{
    perf_drv_ucp_t *d = arg;
    ucp_request_param_t param;
    ucs_status_ptr_t sptr;
    ucs_status_t status;

    param.op_attr_mask = 0;
    sptr = ucp_ep_flush_nbx(d->s->ucp_ep, &param);
    if (!UCS_PTR_IS_PTR(sptr)) {
        return UCS_PTR_STATUS(sptr);
    }
    while ((status = ucp_request_check_status(sptr)) == UCS_INPROGRESS) {
        ucp_worker_progress(d->s->node.worker);
    }
    ucp_request_free(sptr);
    return status;
}

static void perf_drv_ucp_cleanup(void *arg)
{
    perf_drv_ucp_t *d = arg;

    perf_slots_cleanup(&d->slots);
    free(d);
}

int perf_drv_ucp_init(perf_driver_t *drv, perf_session_t *s,
                      const perf_params_t *p)
{
    perf_drv_ucp_t *d;
    void *zero;

    if ((p->count != 1) ||
        (perf_slot_stride(p) * p->window > PERF_UCP_REGION_SIZE)) {
        return -1;
    }

    d = calloc(1, sizeof(*d));
    if ((d == NULL) || !perf_drv_ucp_map(&p->cell, &d->uop) ||
        perf_slots_init(&d->slots, p)) {
        free(d);
        return -1;
    }

    zero = calloc(1, d->slots.stride * p->window);
    if ((zero == NULL) ||
        perf_session_write(s, PERF_REGION_UCP, 0, zero,
                           d->slots.stride * p->window)) {
        free(zero);
        perf_drv_ucp_cleanup(d);
        return -1;
    }
    free(zero);

    d->s            = s;
    d->p            = *p;
    d->size         = (unsigned)fiatomic_ref_datatype_size(p->cell.datatype);
    d->always_reply = (p->cell.family != FIATOMIC_FAMILY_BASE) ||
                      (d->uop == UCP_ATOMIC_OP_SWAP) ||
                      (d->uop == UCP_ATOMIC_OP_CSWAP);
    drv->name       = "ucp";
    drv->arg        = d;
    drv->post       = perf_drv_ucp_post;
    drv->test       = perf_drv_ucp_test;
    drv->progress   = perf_drv_ucp_progress;
    drv->flush      = perf_drv_ucp_flush;
    drv->cleanup    = perf_drv_ucp_cleanup;
    return 0;
}
