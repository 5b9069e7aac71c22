/**
 * The atomic calls of an endpoint (fi_atomic(3)): every form (plain,
 * vector, msg, inject; base, fetch, compare) funnels into one path that
 * resolves the destination (address vector, connection made on first use,
 * fip_peer.c), resolves each remote key at its peer (fip_key.c) and posts
 * the libfiatomic call with a completion callback. Every operation is
 * delivery-complete in libfiatomic (FI_DELIVERY_COMPLETE), so that the
 * counter it is counted into (FI_WRITE for fi_atomic, FI_READ for the
 * fetching calls) counts it only once its update is visible at the
 * target, as a quiet built on fi_cntr_wait needs. Completions become
 * entries of the transmit queue (unless selective completion leaves them
 * out, or FI_INJECT); failures become error entries always.
 * fi_*atomicvalid answer from libfiatomic's own query, which the calls
 * follow.
 */
#include "fip.h"

#include <stdlib.h>
#include <string.h>

/* the flags a call passes on to libfiatomic */
#define FIP_ATOMIC_PASS_FLAGS (FI_INJECT | FI_FENCE)

static fip_ep_t *fip_atomic_ep(struct fid_ep *ep_fid)
{
    return fip_container_of(ep_fid, fip_ep_t, ep_fid);
}

static size_t fip_atomic_dt_size(enum fi_datatype datatype)
{
    switch (datatype) {
    case FI_INT8: case FI_UINT8:
        return 1;
    case FI_INT16: case FI_UINT16:
        return 2;
    case FI_INT32: case FI_UINT32: case FI_FLOAT:
        return 4;
    case FI_INT64: case FI_UINT64: case FI_DOUBLE: case FI_FLOAT_COMPLEX:
        return 8;
    case FI_DOUBLE_COMPLEX: case FI_INT128: case FI_UINT128:
        return 16;
    case FI_LONG_DOUBLE:
        return sizeof(long double);
    case FI_LONG_DOUBLE_COMPLEX:
        return 2 * sizeof(long double);
    default:
        return 0;
    }
}

void fip_op_complete(fip_op_t *op, ucs_status_t status)
{
    fip_ep_t *ep = op->ep;
    fip_cntr_t *cntr;
    int err, error;

    if (status != UCS_OK) {
        err     = -fiatomic_status_to_fi_errno(status);
        op->err = (err > 0) ? err : FI_EOTHER;
    }
    if ((op->staged_to != NULL) && (op->err == 0)) {
        fip_atomic_unstage(op);
    }
    cntr  = op->cntr;
    error = (op->err != 0);
    /* the entry first: a program that saw the counter move finds it */
    if ((op->cq != NULL) && (op->err || op->report)) {
        fip_cq_push(op->cq, op);
    } else {
        free(op);
    }
    if (cntr != NULL) {
        fip_cntr_inc(cntr, error);
    }
    /* the endpoint may close once this reaches 0: not used after it */
    __atomic_sub_fetch(&ep->inflight, 1, __ATOMIC_RELEASE);
}

static void fip_op_cb(void *request, ucs_status_t status, void *user_data)
{
    fiatomic_request_free(request);
    fip_op_complete(user_data, status);
}

fip_op_t *fip_op_alloc(fip_ep_t *ep, int reading, void *context,
                       uint64_t flags, uint64_t cq_flags, void *buf,
                       size_t extra)
{
    fip_op_t *op = calloc(1, sizeof(*op) + extra);

    if (op == NULL) {
        return NULL;
    }
    op->ep      = ep;
    op->cq      = ep->tx_cq;
    op->cntr    = ep->cntrs[reading ? FIP_EP_CNTR_READ : FIP_EP_CNTR_WRITE];
    op->context = context;
    op->flags   = cq_flags;
    op->buf     = buf;
    /* fi_cq(3): with selective completion only FI_COMPLETION reports a
     * success; an injected operation never does */
    op->report  = !(flags & FI_INJECT) &&
                  (!(ep->cq_flags & FI_SELECTIVE_COMPLETION) ||
                   (flags & FI_COMPLETION));
    __atomic_add_fetch(&ep->inflight, 1, __ATOMIC_RELAXED);
    return op;
}

void fip_op_cancel(fip_op_t *op)
{
    __atomic_sub_fetch(&op->ep->inflight, 1, __ATOMIC_RELEASE);
    free(op);
}

static fip_op_t *fip_op_new(fip_ep_t *ep, fiatomic_family_t family,
                            void *context, uint64_t flags, void *result,
                            size_t extra)
{
    int fetching = (family != FIATOMIC_FAMILY_BASE);

    return fip_op_alloc(ep, fetching, context, flags,
                        FI_ATOMIC | (fetching ? FI_READ : FI_WRITE), result,
                        extra);
}

int fip_ep_peer(fip_ep_t *ep, fi_addr_t dest, fip_peer_t **peer_p)
{
    fip_addr_t addr;
    int ret;

    ret = fip_av_get(ep->av, dest, &addr);
    if (ret != 0) {
        return ret;
    }
    return fip_peer_get(ep->domain, &addr, peer_p);
}

/* The remote access an operation needs, as fi_mr(3) registers it: it
 * reads when it returns data (fetch and compare families) and writes when it
 * may update the target (every op but FI_ATOMIC_READ). */
static uint64_t fip_atomic_access(fiatomic_family_t family, enum fi_op op)
{
    return ((family != FIATOMIC_FAMILY_BASE) ? FI_REMOTE_READ : 0) |
           ((op != FI_ATOMIC_READ) ? FI_REMOTE_WRITE : 0);
}

/* the remote side of a call: its peer, and each rma_iov translated to
 * libfiatomic's key and the peer's address, with the access it needs */
static int fip_atomic_target(fip_ep_t *ep, fi_addr_t dest, uint64_t access,
                             const struct fi_rma_ioc *rma_iov, size_t count,
                             struct fi_rma_ioc *out, fip_peer_t **peer_p)
{
    size_t i;
    int ret;

    if ((rma_iov == NULL) || (count == 0) || (count > FIP_IOV_LIMIT)) {
        return -FI_EINVAL;
    }
    ret = fip_ep_peer(ep, dest, peer_p);
    if (ret != 0) {
        return ret;
    }
    for (i = 0; i < count; ++i) {
        out[i].count = rma_iov[i].count;
        /* the region's bounds per element are libfiatomic's to check */
        ret = fip_peer_key(ep->domain, *peer_p, rma_iov[i].key,
                           rma_iov[i].addr, 1, access, &out[i].key,
                           &out[i].addr);
        if (ret != 0) {
            return ret;
        }
    }
    return 0;
}

static size_t fip_atomic_elements(const struct fi_ioc *iov, size_t count)
{
    size_t total = 0;
    size_t i;

    for (i = 0; i < count; ++i) {
        total += iov[i].count;
    }
    return total;
}

static ssize_t fip_atomic_post(fip_ep_t *ep, fiatomic_family_t family,
                               const struct fi_msg_atomic *msg,
                               const struct fi_ioc *comparev,
                               size_t compare_count, struct fi_ioc *resultv,
                               size_t result_count, uint64_t flags)
{
    fiatomic_request_param_t param = {0};
    struct fi_rma_ioc rma[FIP_IOV_LIMIT];
    struct fi_msg_atomic fmsg;
    fip_atomic_staged_t staged;
    ucs_status_ptr_t sptr;
    fip_peer_t *peer;
    uint64_t fflags;
    size_t bytes, size, stage;
    fip_op_t *op;
    int ret;

    if (msg == NULL) {
        return -FI_EINVAL;
    }
    if (!ep->enabled) {
        return -FI_EOPBADSTATE;
    }
    if ((msg->iov_count > FIP_IOV_LIMIT) ||
        ((msg->iov_count > 0) && (msg->msg_iov == NULL))) {
        return -FI_EINVAL;
    }
    if (flags & FI_INJECT) {
        /* every family: fi_atomic(3)'s FI_INJECT gives back the source and
         * compare buffers at return (libfiatomic takes their values at the
         * call), never the result buffer; each within the inject size */
        bytes = fip_atomic_elements(msg->msg_iov, msg->iov_count) *
                fip_atomic_dt_size(msg->datatype);
        if ((comparev != NULL) &&
            (fip_atomic_elements(comparev, compare_count) *
             fip_atomic_dt_size(msg->datatype) > bytes)) {
            bytes = fip_atomic_elements(comparev, compare_count) *
                    fip_atomic_dt_size(msg->datatype);
        }
        if (bytes > FIP_INJECT_SIZE) {
            return -FI_EINVAL;
        }
    }
    ret = fip_atomic_target(ep, msg->addr,
                            fip_atomic_access(family, msg->op), msg->rma_iov,
                            msg->rma_iov_count, rma, &peer);
    if (ret != 0) {
        return ret;
    }

    size  = fip_atomic_dt_size(msg->datatype);
    stage = fip_atomic_stage_bytes(size, msg, comparev, compare_count,
                                   resultv, result_count);
    op = fip_op_new(ep, family, msg->context, flags,
                    ((resultv != NULL) && (result_count > 0)) ?
                    resultv[0].addr : NULL, stage);
    if (op == NULL) {
        return -FI_ENOMEM;
    }
    fmsg         = *msg;
    fmsg.rma_iov = rma;
    if (stage > 0) {
        fip_atomic_stage(op, size, &fmsg, &staged, &comparev,
                         &compare_count, &resultv, &result_count);
    }
    fflags       = (flags & FIP_ATOMIC_PASS_FLAGS) | FI_DELIVERY_COMPLETE;
    param.op_attr_mask = FIATOMIC_OP_ATTR_FIELD_CALLBACK |
                         FIATOMIC_OP_ATTR_FIELD_USER_DATA |
                         FIATOMIC_OP_ATTR_FIELD_FLAGS;
    param.cb        = fip_op_cb;
    param.user_data = op;
    param.flags     = fflags;

    switch (family) {
    case FIATOMIC_FAMILY_FETCH:
        sptr = fiatomic_fetch_atomicmsg_nbx(peer->fep, &fmsg, resultv,
                                            result_count, fflags, &param);
        break;
    case FIATOMIC_FAMILY_COMPARE:
        sptr = fiatomic_compare_atomicmsg_nbx(peer->fep, &fmsg, comparev,
                                              compare_count, resultv,
                                              result_count, fflags, &param);
        break;
    default:
        sptr = fiatomic_atomicmsg_nbx(peer->fep, &fmsg, fflags, &param);
        break;
    }

    if (sptr == NULL) {
        /* complete already: no callback comes */
        fip_op_complete(op, UCS_OK);
        return 0;
    }
    if (UCS_PTR_IS_ERR(sptr)) {
        /* nothing started: reported here, never counted */
        fip_op_cancel(op);
        ret = fiatomic_status_to_fi_errno(UCS_PTR_STATUS(sptr));
        return (ret != 0) ? ret : -FI_EOTHER;
    }
    return 0;
}

/* one fi_msg_atomic from the plain and vector forms' arguments */
static void fip_atomic_msg(struct fi_msg_atomic *msg, const struct fi_ioc *iov,
                           void **desc, size_t count, fi_addr_t dest,
                           struct fi_rma_ioc *rma, uint64_t addr,
                           uint64_t key, enum fi_datatype datatype,
                           enum fi_op op, void *context)
{
    memset(msg, 0, sizeof(*msg));
    rma->addr          = addr;
    rma->key           = key;
    rma->count         = (iov != NULL) ? fip_atomic_elements(iov, count) : 0;
    msg->msg_iov       = iov;
    msg->desc          = desc;
    msg->iov_count     = count;
    msg->addr          = dest;
    msg->rma_iov       = rma;
    msg->rma_iov_count = 1;
    msg->datatype      = datatype;
    msg->op            = op;
    msg->context       = context;
}

/* ---- fi_atomic ---------------------------------------------------------- */

static ssize_t fip_atomic_writev(struct fid_ep *ep_fid,
                                 const struct fi_ioc *iov, void **desc,
                                 size_t count, fi_addr_t dest, uint64_t addr,
                                 uint64_t key, enum fi_datatype datatype,
                                 enum fi_op op, void *context)
{
    fip_ep_t *ep = fip_atomic_ep(ep_fid);
    struct fi_msg_atomic msg;
    struct fi_rma_ioc rma;

    if ((iov == NULL) || (count == 0)) {
        return -FI_EINVAL;
    }
    fip_atomic_msg(&msg, iov, desc, count, dest, &rma, addr, key, datatype,
                   op, context);
    return fip_atomic_post(ep, FIATOMIC_FAMILY_BASE, &msg, NULL, 0, NULL, 0,
                           ep->op_flags);
}

static ssize_t fip_atomic_write(struct fid_ep *ep_fid, const void *buf,
                                size_t count, void *desc, fi_addr_t dest,
                                uint64_t addr, uint64_t key,
                                enum fi_datatype datatype, enum fi_op op,
                                void *context)
{
    struct fi_ioc iov = {(void*)buf, count};

    return fip_atomic_writev(ep_fid, &iov, &desc, 1, dest, addr, key,
                             datatype, op, context);
}

static ssize_t fip_atomic_writemsg(struct fid_ep *ep_fid,
                                   const struct fi_msg_atomic *msg,
                                   uint64_t flags)
{
    return fip_atomic_post(fip_atomic_ep(ep_fid), FIATOMIC_FAMILY_BASE, msg,
                           NULL, 0, NULL, 0, flags);
}

static ssize_t fip_atomic_inject(struct fid_ep *ep_fid, const void *buf,
                                 size_t count, fi_addr_t dest, uint64_t addr,
                                 uint64_t key, enum fi_datatype datatype,
                                 enum fi_op op)
{
    struct fi_ioc iov = {(void*)buf, count};
    struct fi_msg_atomic msg;
    struct fi_rma_ioc rma;

    fip_atomic_msg(&msg, &iov, NULL, 1, dest, &rma, addr, key, datatype, op,
                   NULL);
    return fip_atomic_post(fip_atomic_ep(ep_fid), FIATOMIC_FAMILY_BASE, &msg,
                           NULL, 0, NULL, 0, FI_INJECT);
}

/* ---- fi_fetch_atomic ---------------------------------------------------- */

static ssize_t fip_atomic_readwritev(struct fid_ep *ep_fid,
                                     const struct fi_ioc *iov, void **desc,
                                     size_t count, struct fi_ioc *resultv,
                                     void **result_desc, size_t result_count,
                                     fi_addr_t dest, uint64_t addr,
                                     uint64_t key, enum fi_datatype datatype,
                                     enum fi_op op, void *context)
{
    fip_ep_t *ep = fip_atomic_ep(ep_fid);
    struct fi_msg_atomic msg;
    struct fi_rma_ioc rma;

    /* FI_ATOMIC_READ takes no operand: its count is the results' */
    if ((resultv == NULL) || (result_count == 0)) {
        return -FI_EINVAL;
    }
    fip_atomic_msg(&msg, iov, desc, count, dest, &rma, addr, key, datatype,
                   op, context);
    if (iov == NULL) {
        rma.count = fip_atomic_elements(resultv, result_count);
    }
    return fip_atomic_post(ep, FIATOMIC_FAMILY_FETCH, &msg, NULL, 0, resultv,
                           result_count, ep->op_flags);
}

static ssize_t fip_atomic_readwrite(struct fid_ep *ep_fid, const void *buf,
                                    size_t count, void *desc, void *result,
                                    void *result_desc, fi_addr_t dest,
                                    uint64_t addr, uint64_t key,
                                    enum fi_datatype datatype, enum fi_op op,
                                    void *context)
{
    struct fi_ioc iov    = {(void*)buf, count};
    struct fi_ioc resiov = {result, count};

    return fip_atomic_readwritev(ep_fid, (buf != NULL) ? &iov : NULL, &desc,
                                 (buf != NULL) ? 1 : 0, &resiov,
                                 &result_desc, 1, dest, addr, key, datatype,
                                 op, context);
}

static ssize_t fip_atomic_readwritemsg(struct fid_ep *ep_fid,
                                       const struct fi_msg_atomic *msg,
                                       struct fi_ioc *resultv,
                                       void **result_desc,
                                       size_t result_count, uint64_t flags)
{
    if ((resultv == NULL) || (result_count == 0) ||
        (result_count > FIP_IOV_LIMIT)) {
        return -FI_EINVAL;
    }
    return fip_atomic_post(fip_atomic_ep(ep_fid), FIATOMIC_FAMILY_FETCH, msg,
                           NULL, 0, resultv, result_count, flags);
}

/* ---- fi_compare_atomic -------------------------------------------------- */

static ssize_t fip_atomic_compwritev(struct fid_ep *ep_fid,
                                     const struct fi_ioc *iov, void **desc,
                                     size_t count,
                                     const struct fi_ioc *comparev,
                                     void **compare_desc,
                                     size_t compare_count,
                                     struct fi_ioc *resultv,
                                     void **result_desc, size_t result_count,
                                     fi_addr_t dest, uint64_t addr,
                                     uint64_t key, enum fi_datatype datatype,
                                     enum fi_op op, void *context)
{
    fip_ep_t *ep = fip_atomic_ep(ep_fid);
    struct fi_msg_atomic msg;
    struct fi_rma_ioc rma;

    if ((iov == NULL) || (count == 0) || (comparev == NULL) ||
        (compare_count == 0) || (compare_count > FIP_IOV_LIMIT) ||
        (resultv == NULL) || (result_count == 0) ||
        (result_count > FIP_IOV_LIMIT)) {
        return -FI_EINVAL;
    }
    fip_atomic_msg(&msg, iov, desc, count, dest, &rma, addr, key, datatype,
                   op, context);
    return fip_atomic_post(ep, FIATOMIC_FAMILY_COMPARE, &msg, comparev,
                           compare_count, resultv, result_count,
                           ep->op_flags);
}

static ssize_t fip_atomic_compwrite(struct fid_ep *ep_fid, const void *buf,
                                    size_t count, void *desc,
                                    const void *compare, void *compare_desc,
                                    void *result, void *result_desc,
                                    fi_addr_t dest, uint64_t addr,
                                    uint64_t key, enum fi_datatype datatype,
                                    enum fi_op op, void *context)
{
    struct fi_ioc iov    = {(void*)buf, count};
    struct fi_ioc cmpiov = {(void*)compare, count};
    struct fi_ioc resiov = {result, count};

    return fip_atomic_compwritev(ep_fid, &iov, &desc, 1, &cmpiov,
                                 &compare_desc, 1, &resiov, &result_desc, 1,
                                 dest, addr, key, datatype, op, context);
}

static ssize_t fip_atomic_compwritemsg(struct fid_ep *ep_fid,
                                       const struct fi_msg_atomic *msg,
                                       const struct fi_ioc *comparev,
                                       void **compare_desc,
                                       size_t compare_count,
                                       struct fi_ioc *resultv,
                                       void **result_desc,
                                       size_t result_count, uint64_t flags)
{
    if ((comparev == NULL) || (compare_count == 0) ||
        (compare_count > FIP_IOV_LIMIT) || (resultv == NULL) ||
        (result_count == 0) || (result_count > FIP_IOV_LIMIT)) {
        return -FI_EINVAL;
    }
    return fip_atomic_post(fip_atomic_ep(ep_fid), FIATOMIC_FAMILY_COMPARE,
                           msg, comparev, compare_count, resultv,
                           result_count, flags);
}

/* ---- fi_*atomicvalid ---------------------------------------------------- */

static int fip_atomic_writevalid(struct fid_ep *ep_fid,
                                 enum fi_datatype datatype, enum fi_op op,
                                 size_t *count)
{
    return fiatomic_atomicvalid(fip_atomic_ep(ep_fid)->domain->fia,
                                datatype, op, count);
}

static int fip_atomic_readwritevalid(struct fid_ep *ep_fid,
                                     enum fi_datatype datatype,
                                     enum fi_op op, size_t *count)
{
    return fiatomic_fetch_atomicvalid(fip_atomic_ep(ep_fid)->domain->fia,
                                      datatype, op, count);
}

static int fip_atomic_compwritevalid(struct fid_ep *ep_fid,
                                     enum fi_datatype datatype,
                                     enum fi_op op, size_t *count)
{
    return fiatomic_compare_atomicvalid(fip_atomic_ep(ep_fid)->domain->fia,
                                        datatype, op, count);
}

struct fi_ops_atomic fip_atomic_ops = {
    .size           = sizeof(struct fi_ops_atomic),
    .write          = fip_atomic_write,
    .writev         = fip_atomic_writev,
    .writemsg       = fip_atomic_writemsg,
    .inject         = fip_atomic_inject,
    .readwrite      = fip_atomic_readwrite,
    .readwritev     = fip_atomic_readwritev,
    .readwritemsg   = fip_atomic_readwritemsg,
    .compwrite      = fip_atomic_compwrite,
    .compwritev     = fip_atomic_compwritev,
    .compwritemsg   = fip_atomic_compwritemsg,
    .writevalid     = fip_atomic_writevalid,
    .readwritevalid = fip_atomic_readwritevalid,
    .compwritevalid = fip_atomic_compwritevalid
};
