/**
 * The libfabric baseline: the same (family, op, datatype) call through
 * libfabric providers between the same two processes: by default the one
 * for the transport, shm (for posix/sysv) or tcp;ofi_rxm (for tcp); with
 * --providers any named ones side by side, this project's fiatomic (found
 * through FI_PROVIDER_PATH) included. The target (server process)
 * allocates and registers its own region per provider, as a libfabric
 * program does, and reads its CQ in its progress loop, since shm and rxm
 * execute atomics in software at the target.
 */
#include "perftest.h"
#include "perftest_ofi.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <stdlib.h>
#include <string.h>

#define PERF_OFI_VERSION    FI_VERSION(1, 17)
#define PERF_OFI_REGION     (1u << 20)
#define PERF_OFI_MAX_ADDR   256
#define PERF_OFI_KEY        0x0fa7    /* when the provider takes ours */
#define PERF_OFI_CQ_BATCH   16

typedef struct {
    struct fi_info    *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av     *av;
    struct fid_cq     *cq;
    struct fid_ep     *ep;
} perf_ofi_ep_t;

/* What the target tells the initiator. */
typedef struct {
    uint64_t key;
    uint64_t base;     /* remote address of the region's first byte */
    uint64_t addrlen;
    uint8_t  addr[PERF_OFI_MAX_ADDR];
} perf_ofi_wire_t;

struct perf_ofi_target {
    perf_ofi_ep_t   e;
    void            *mem;
    struct fid_mr   *mr;
    perf_ofi_wire_t wire;
};

/* A slot's call in flight: the fi_context is what the CQ hands back. */
typedef struct {
    struct fi_context2 fctx;
    int                done;
    ucs_status_t       status;
} perf_ofi_req_t;

typedef struct perf_ofi_client {
    perf_ofi_ep_t   e;
    unsigned        index;    /* among the session's providers */
    char            provider[PERF_MAX_OFI_NAME + 1];
    fi_addr_t       peer;
    perf_ofi_wire_t wire;
} perf_ofi_client_t;

typedef struct {
    perf_session_t    *s;
    perf_ofi_client_t *c;
    perf_params_t     p;
    perf_slots_t      slots;
    struct fid_mr     *mr;       /* operand, compare and result buffers */
    void              *desc;
    perf_ofi_req_t    *reqs;     /* one per slot */
    int               no_delivery; /* provider refused FI_DELIVERY_COMPLETE */
} perf_drv_ofi_t;


/* ------------------------------------------------------------------------ */
/* Endpoint                                                                  */

static void perf_ofi_ep_close(perf_ofi_ep_t *e)
{
    if (e->ep != NULL) {
        fi_close(&e->ep->fid);
    }
    if (e->cq != NULL) {
        fi_close(&e->cq->fid);
    }
    if (e->av != NULL) {
        fi_close(&e->av->fid);
    }
    if (e->domain != NULL) {
        fi_close(&e->domain->fid);
    }
    if (e->fabric != NULL) {
        fi_close(&e->fabric->fid);
    }
    if (e->info != NULL) {
        fi_freeinfo(e->info);
    }
    memset(e, 0, sizeof(*e));
}

static int perf_ofi_ep_open(perf_ofi_ep_t *e, const char *provider)
{
    struct fi_cq_attr cq_attr = {0};
    struct fi_av_attr av_attr = {0};
    struct fi_info *hints;
    const char *node = NULL;
    uint64_t flags   = 0;
    int ret;

    memset(e, 0, sizeof(*e));
    hints = fi_allocinfo();
    if (hints == NULL) {
        return -1;
    }
    hints->caps                   = FI_ATOMIC;
    hints->ep_attr->type          = FI_EP_RDM;
    hints->domain_attr->mr_mode   = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
                                    FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    hints->fabric_attr->prov_name = strdup(provider);
    if (strstr(provider, "tcp") != NULL) {
        node  = "127.0.0.1"; /* localhost, as UCX's tcp here */
        flags = FI_SOURCE;
    }

    ret = fi_getinfo(PERF_OFI_VERSION, node, NULL, flags, hints, &e->info);
    fi_freeinfo(hints);
    if (ret != 0) {
        fprintf(stderr, PERF_NAME ": fi_getinfo(%s): %s\n", provider,
                fi_strerror(-ret));
        return -1;
    }

    cq_attr.format   = FI_CQ_FORMAT_CONTEXT;
    cq_attr.size     = 1024;
    av_attr.type     = FI_AV_TABLE;
    ret = fi_fabric(e->info->fabric_attr, &e->fabric, NULL);
    ret = ret ? ret : fi_domain(e->fabric, e->info, &e->domain, NULL);
    ret = ret ? ret : fi_av_open(e->domain, &av_attr, &e->av, NULL);
    ret = ret ? ret : fi_cq_open(e->domain, &cq_attr, &e->cq, NULL);
    ret = ret ? ret : fi_endpoint(e->domain, e->info, &e->ep, NULL);
    ret = ret ? ret : fi_ep_bind(e->ep, &e->av->fid, 0);
    ret = ret ? ret : fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV);
    ret = ret ? ret : fi_enable(e->ep);
    if (ret != 0) {
        fprintf(stderr, PERF_NAME ": libfabric %s setup: %s\n", provider,
                fi_strerror(-ret));
        perf_ofi_ep_close(e);
        return -1;
    }
    return 0;
}

static int perf_ofi_mr_reg(perf_ofi_ep_t *e, void *buf, size_t len,
                           uint64_t access, struct fid_mr **mr_p)
{
    int ret = fi_mr_reg(e->domain, buf, len, access, 0, PERF_OFI_KEY, 0,
                        mr_p, NULL);

    if (ret != 0) {
        fprintf(stderr, PERF_NAME ": fi_mr_reg: %s\n", fi_strerror(-ret));
        return -1;
    }
    return 0;
}


/* ------------------------------------------------------------------------ */
/* Target                                                                    */

int perf_ofi_target_open(const char *provider, perf_ofi_target_t **t_p)
{
    perf_ofi_target_t *t = calloc(1, sizeof(*t));
    size_t addrlen       = PERF_OFI_MAX_ADDR;

    if ((t == NULL) || perf_ofi_ep_open(&t->e, provider)) {
        free(t);
        return -1;
    }

    t->mem = aligned_alloc(4096, PERF_OFI_REGION);
    if ((t->mem == NULL) ||
        perf_ofi_mr_reg(&t->e, t->mem, PERF_OFI_REGION,
                        FI_REMOTE_READ | FI_REMOTE_WRITE, &t->mr) ||
        fi_getname(&t->e.ep->fid, t->wire.addr, &addrlen)) {
        perf_ofi_target_close(t);
        return -1;
    }
    memset(t->mem, 0, PERF_OFI_REGION);

    t->wire.key     = fi_mr_key(t->mr);
    t->wire.base    = (t->e.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
                      (uintptr_t)t->mem : 0;
    t->wire.addrlen = addrlen;
    *t_p = t;
    return 0;
}

void *perf_ofi_target_info(perf_ofi_target_t *t, size_t *len_p)
{
    *len_p = sizeof(t->wire);
    return &t->wire;
}

void *perf_ofi_target_memory(perf_ofi_target_t *t, size_t *len_p)
{
    *len_p = PERF_OFI_REGION;
    return t->mem;
}

void perf_ofi_target_progress(perf_ofi_target_t *t)
{
    struct fi_cq_entry entries[PERF_OFI_CQ_BATCH];
    struct fi_cq_err_entry err;

    if (fi_cq_read(t->e.cq, entries, PERF_OFI_CQ_BATCH) == -FI_EAVAIL) {
        memset(&err, 0, sizeof(err));
        (void)fi_cq_readerr(t->e.cq, &err, 0);
    }
}

void perf_ofi_target_close(perf_ofi_target_t *t)
{
    if (t->mr != NULL) {
        fi_close(&t->mr->fid);
    }
    perf_ofi_ep_close(&t->e);
    free(t->mem);
    free(t);
}


/* ------------------------------------------------------------------------ */
/* Initiator                                                                 */

int perf_drv_ofi_available(void)
{
    return 1;
}

const char *perf_drv_ofi_provider_for(const char *transport)
{
    if (strstr(transport, "tcp") != NULL) {
        return "tcp;ofi_rxm";
    } else if ((strstr(transport, "posix") != NULL) ||
               (strstr(transport, "sysv") != NULL)) {
        return "shm";
    }
    return NULL;
}

static void perf_ofi_client_close(perf_session_t *s, unsigned index)
{
    perf_msg_hdr_t hdr = {PERF_CMD_OFI_CLOSE, 0, index, 0};
    int32_t status;

    if (s->ofi[index] == NULL) {
        return;
    }
    perf_ofi_ep_close(&s->ofi[index]->e);
    free(s->ofi[index]);
    s->ofi[index] = NULL;
    (void)(perf_ctl_write_all(s->ctl_fd, &hdr, sizeof(hdr)) ||
           perf_ctl_read_all(s->ctl_fd, &status, sizeof(status)));
}

static perf_ofi_client_t *perf_ofi_client_open(perf_session_t *s,
                                               unsigned index,
                                               const char *provider)
{
    perf_msg_hdr_t hdr = {PERF_CMD_OFI_OPEN, 0, index, strlen(provider)};
    perf_ofi_client_t *c;
    void *blob;
    size_t len;
    int32_t status;

    if ((index >= PERF_MAX_OFI_PROVIDERS) ||
        (strlen(provider) >= sizeof(c->provider))) {
        return NULL;
    }
    if ((s->ofi[index] != NULL) &&
        !strcmp(s->ofi[index]->provider, provider)) {
        return s->ofi[index];
    }
    perf_ofi_client_close(s, index);

    c = calloc(1, sizeof(*c));
    if ((c == NULL) || perf_ofi_ep_open(&c->e, provider)) {
        free(c);
        return NULL;
    }
    c->index = index;
    snprintf(c->provider, sizeof(c->provider), "%s", provider);

    if (perf_ctl_write_all(s->ctl_fd, &hdr, sizeof(hdr)) ||
        perf_ctl_write_all(s->ctl_fd, provider, hdr.length) ||
        perf_ctl_read_all(s->ctl_fd, &status, sizeof(status)) ||
        (status != 0) ||
        ((blob = perf_ctl_recv_blob(s->ctl_fd, &len)) == NULL)) {
        fprintf(stderr, PERF_NAME ": the target could not open %s\n",
                provider);
        goto err_close;
    }
    if (len != sizeof(c->wire)) {
        free(blob);
        goto err_close;
    }
    memcpy(&c->wire, blob, len);
    free(blob);

    if (fi_av_insert(c->e.av, c->wire.addr, 1, &c->peer, 0, NULL) != 1) {
        fprintf(stderr, PERF_NAME ": fi_av_insert failed\n");
        goto err_close;
    }
    s->ofi[index] = c;
    return c;

err_close:
    perf_ofi_ep_close(&c->e);
    free(c);
    return NULL;
}

void perf_drv_ofi_close(perf_session_t *s)
{
    unsigned index;

    for (index = 0; index < PERF_MAX_OFI_PROVIDERS; ++index) {
        perf_ofi_client_close(s, index);
    }
}

static void perf_drv_ofi_progress(void *arg)
{
    perf_drv_ofi_t *d = arg;
    struct fi_cq_entry entries[PERF_OFI_CQ_BATCH];
    struct fi_cq_err_entry err;
    perf_ofi_req_t *req;
    ssize_t n, i;

    n = fi_cq_read(d->c->e.cq, entries, PERF_OFI_CQ_BATCH);
    for (i = 0; i < n; ++i) {
        req       = entries[i].op_context;
        req->done = 1;
    }
    if (n == -FI_EAVAIL) {
        memset(&err, 0, sizeof(err));
        if ((fi_cq_readerr(d->c->e.cq, &err, 0) > 0) &&
            (err.op_context != NULL)) {
            req         = err.op_context;
            req->done   = 1;
            req->status = UCS_ERR_IO_ERROR;
        }
    }
}

static ssize_t perf_drv_ofi_issue(perf_drv_ofi_t *d, unsigned slot,
                                  int delivery)
{
    const perf_cell_t *cell = &d->p.cell;
    size_t off              = slot * d->slots.stride;
    uint64_t raddr          = d->c->wire.base + off;
    void *ctx               = &d->reqs[slot].fctx;
    struct fi_ioc iov       = {d->slots.operand + off, d->p.count};
    struct fi_rma_ioc rma   = {raddr, d->p.count, d->c->wire.key};
    struct fi_msg_atomic msg;

    switch (cell->family) {
    case FIATOMIC_FAMILY_BASE:
        if (!delivery || d->no_delivery) {
            return fi_atomic(d->c->e.ep, iov.addr, d->p.count, d->desc,
                             d->c->peer, raddr, d->c->wire.key,
                             cell->datatype, cell->op, ctx);
        }
        memset(&msg, 0, sizeof(msg));
        msg.msg_iov       = &iov;
        msg.desc          = &d->desc;
        msg.iov_count     = 1;
        msg.addr          = d->c->peer;
        msg.rma_iov       = &rma;
        msg.rma_iov_count = 1;
        msg.datatype      = cell->datatype;
        msg.op            = cell->op;
        msg.context       = ctx;
        return fi_atomicmsg(d->c->e.ep, &msg,
                            FI_COMPLETION | FI_DELIVERY_COMPLETE);
    case FIATOMIC_FAMILY_FETCH:
        return fi_fetch_atomic(d->c->e.ep, iov.addr, d->p.count, d->desc,
                               d->slots.result + off, d->desc, d->c->peer,
                               raddr, d->c->wire.key, cell->datatype,
                               cell->op, ctx);
    default:
        return fi_compare_atomic(d->c->e.ep, iov.addr, d->p.count, d->desc,
                                 d->slots.compare + off, d->desc,
                                 d->slots.result + off, d->desc, d->c->peer,
                                 raddr, d->c->wire.key, cell->datatype,
                                 cell->op, ctx);
    }
}

static ucs_status_t perf_drv_ofi_post(void *arg, unsigned slot, int delivery,
                                      void **req_p)
{
    perf_drv_ofi_t *d   = arg;
    perf_ofi_req_t *req = &d->reqs[slot];
    ssize_t ret;

    req->done   = 0;
    req->status = UCS_OK;
    for (;;) {
        ret = perf_drv_ofi_issue(d, slot, delivery);
        if (ret == -FI_EAGAIN) {
            perf_drv_ofi_progress(d);
            continue;
        }
        if (((ret == -FI_EBADFLAGS) || (ret == -FI_EOPNOTSUPP)) &&
            delivery && !d->no_delivery &&
            (d->p.cell.family == FIATOMIC_FAMILY_BASE)) {
            /* the provider's default completion is then what it has */
            d->no_delivery = 1;
            continue;
        }
        break;
    }

    if (ret != 0) {
        *req_p = NULL;
        return UCS_ERR_IO_ERROR;
    }
    *req_p = req;
    return UCS_OK;
}

static ucs_status_t perf_drv_ofi_test(void *arg, void *request)
{
    perf_ofi_req_t *req = request;

    if (!req->done) {
        perf_drv_ofi_progress(arg);
    }
    return req->done ? req->status : UCS_INPROGRESS;
}

static ucs_status_t perf_drv_ofi_flush(void *arg)
{
    return UCS_OK; /* every call reported its completion already */
}

static void perf_drv_ofi_cleanup(void *arg)
{
    perf_drv_ofi_t *d = arg;

    if (d->mr != NULL) {
        fi_close(&d->mr->fid);
    }
    free(d->reqs);
    perf_slots_cleanup(&d->slots);
    free(d);
}

int perf_drv_ofi_init(perf_driver_t *drv, perf_session_t *s, unsigned index,
                      const perf_params_t *p, const char *provider)
{
    const perf_cell_t *cell = &p->cell;
    perf_drv_ofi_t *d;
    size_t max_count = 0;
    void *zero;
    int ret;

    if (perf_slot_stride(p) * p->window > PERF_OFI_REGION) {
        return -1;
    }

    d = calloc(1, sizeof(*d));
    if (d == NULL) {
        return -1;
    }
    d->s = s;
    d->p = *p;
    d->c = perf_ofi_client_open(s, index, provider);
    if (d->c == NULL) {
        free(d);
        return -2;
    }

    /* a cell the provider does not have is no baseline, not an error */
    switch (cell->family) {
    case FIATOMIC_FAMILY_BASE:
        ret = fi_atomicvalid(d->c->e.ep, cell->datatype, cell->op,
                             &max_count);
        break;
    case FIATOMIC_FAMILY_FETCH:
        ret = fi_fetch_atomicvalid(d->c->e.ep, cell->datatype, cell->op,
                                   &max_count);
        break;
    default:
        ret = fi_compare_atomicvalid(d->c->e.ep, cell->datatype, cell->op,
                                     &max_count);
        break;
    }
    if ((ret != 0) || (max_count < p->count)) {
        free(d);
        return -1;
    }

    /* one registration covers operands, compare values and results
     * (FI_MR_LOCAL) */
    d->reqs = calloc(p->window, sizeof(*d->reqs));
    if ((d->reqs == NULL) || perf_slots_init(&d->slots, p) ||
        perf_ofi_mr_reg(&d->c->e, d->slots.operand,
                        3 * d->slots.stride * p->window, FI_READ | FI_WRITE,
                        &d->mr)) {
        perf_drv_ofi_cleanup(d);
        return -1;
    }
    d->desc = fi_mr_desc(d->mr);

    zero = calloc(1, d->slots.stride * p->window);
    ret  = (zero == NULL) ||
           perf_session_write(s, (perf_region_t)(PERF_REGION_OFI + index), 0,
                              zero, d->slots.stride * p->window);
    free(zero);
    if (ret) {
        perf_drv_ofi_cleanup(d);
        return -1;
    }

    drv->name     = "libfabric";
    drv->arg      = d;
    drv->post     = perf_drv_ofi_post;
    drv->test     = perf_drv_ofi_test;
    drv->progress = perf_drv_ofi_progress;
    drv->flush    = perf_drv_ofi_flush;
    drv->cleanup  = perf_drv_ofi_cleanup;
    return 0;
}
