/**
 * RMA (fi_rma(3)): fi_write, fi_writev, fi_writemsg, fi_inject_write,
 * fi_read, fi_readv and fi_readmsg over ucp_put_nbx and ucp_get_nbx with
 * the UCP rkey the key service brought (fip_key.c), the remote range
 * checked against the region and its remote access first. An operation is
 * one UCP request per contiguous piece (up to 4 local and 4 remote iov
 * entries); it completes when the last piece has. A write completes only
 * after a flush of the peer's UCP endpoint that follows its pieces, so a
 * counter counts it once the data is at the target, unless it asks only
 * FI_INJECT_COMPLETE or FI_TRANSMIT_COMPLETE (in the call's flags, else in
 * the endpoint's op_flags): it then completes when UCP has sent it.
 * Injected data is copied into the operation first.
 * Remote CQ data (fi_writedata, fi_inject_writedata) is not offered with
 * RMA (only messages carry it).
 */
#include "fip.h"

#include <stdlib.h>
#include <string.h>

static fip_ep_t *fip_rma_ep(struct fid_ep *ep_fid)
{
    return fip_container_of(ep_fid, fip_ep_t, ep_fid);
}

/* whether a write completes only at the target: asked, or no weaker level
 * named (a counter is then safe to quiet on, as SOS does) */
static int fip_rma_delivery(const fip_ep_t *ep, uint64_t flags)
{
    const uint64_t weaker = FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE;
    uint64_t level        = flags & (weaker | FI_DELIVERY_COMPLETE);

    if (level == 0) {
        level = ep->op_flags & (weaker | FI_DELIVERY_COMPLETE);
    }
    return (level == 0) || (level & FI_DELIVERY_COMPLETE);
}

static size_t fip_rma_iov_bytes(const struct iovec *iov, size_t count)
{
    size_t total = 0;
    size_t i;

    for (i = 0; i < count; ++i) {
        total += iov[i].iov_len;
    }
    return total;
}

static ssize_t fip_rma_post(fip_ep_t *ep, const struct fi_msg_rma *msg,
                            uint64_t flags, int reading)
{
    const uint64_t access = reading ? FI_REMOTE_READ : FI_REMOTE_WRITE;
    ucp_request_param_t param = {0};
    uint64_t raddr[FIP_IOV_LIMIT];
    ucp_rkey_h rkey[FIP_IOV_LIMIT];
    size_t total, remote = 0, li = 0, loff = 0, ri, roff, n;
    ucs_status_ptr_t sptr;
    fip_peer_t *peer;
    uint64_t fkey;
    fip_op_t *op;
    char *local;
    int ret, failed_at_once;

    if (msg == NULL) {
        return -FI_EINVAL;
    }
    if (!ep->enabled) {
        return -FI_EOPBADSTATE;
    }
    if ((msg->iov_count > FIP_IOV_LIMIT) || (msg->rma_iov_count == 0) ||
        (msg->rma_iov_count > FIP_IOV_LIMIT) || (msg->rma_iov == NULL) ||
        ((msg->iov_count > 0) && (msg->msg_iov == NULL))) {
        return -FI_EINVAL;
    }
    total = fip_rma_iov_bytes(msg->msg_iov, msg->iov_count);
    for (ri = 0; ri < msg->rma_iov_count; ++ri) {
        remote += msg->rma_iov[ri].len;
    }
    if ((total != remote) ||
        ((flags & FI_INJECT) && (reading || (total > FIP_INJECT_SIZE)))) {
        return -FI_EINVAL;
    }
    for (li = 0; li < msg->iov_count; ++li) {
        if ((msg->msg_iov[li].iov_base == NULL) &&
            (msg->msg_iov[li].iov_len > 0)) {
            return -FI_EINVAL;
        }
    }

    ret = fip_ep_peer(ep, msg->addr, &peer);
    if (ret != 0) {
        return ret;
    }
    for (ri = 0; ri < msg->rma_iov_count; ++ri) {
        ret = fip_peer_key(ep->domain, peer, msg->rma_iov[ri].key,
                           msg->rma_iov[ri].addr, msg->rma_iov[ri].len,
                           access, &fkey, &raddr[ri], &rkey[ri]);
        if (ret != 0) {
            return ret;
        }
    }

    op = fip_op_alloc(ep, reading, msg->context, flags,
                      FI_RMA | (reading ? FI_READ : FI_WRITE), NULL,
                      (flags & FI_INJECT) ? total : 0);
    if (op == NULL) {
        return -FI_ENOMEM;
    }
    op->pending = 1; /* held while posting */
    op->status  = UCS_OK;
    if (flags & FI_INJECT) {
        /* the program's buffer is its own again on return */
        local = (char*)(op + 1);
        for (li = 0, n = 0; li < msg->iov_count; ++li) {
            memcpy(local + n, msg->msg_iov[li].iov_base,
                   msg->msg_iov[li].iov_len);
            n += msg->msg_iov[li].iov_len;
        }
    }

    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send      = fip_op_piece_cb;
    param.user_data    = op;

    /* walk the local and remote lists together, one piece per overlap */
    li = loff = ri = roff = 0;
    n  = 0;
    while ((li < msg->iov_count) && (ri < msg->rma_iov_count) &&
           (__atomic_load_n(&op->status, __ATOMIC_ACQUIRE) == UCS_OK)) {
        size_t lrem = msg->msg_iov[li].iov_len - loff;
        size_t rrem = msg->rma_iov[ri].len - roff;
        size_t len  = (lrem < rrem) ? lrem : rrem;
        char *lbuf  = (flags & FI_INJECT) ? (char*)(op + 1) + n :
                      (char*)msg->msg_iov[li].iov_base + loff;

        if (len > 0) {
            fip_op_piece_starting(op);
            sptr = reading ?
                   ucp_get_nbx(peer->ucp_ep, lbuf, len, raddr[ri] + roff,
                               rkey[ri], &param) :
                   ucp_put_nbx(peer->ucp_ep, lbuf, len, raddr[ri] + roff,
                               rkey[ri], &param);
            fip_op_piece_started(op, sptr);
        }
        n    += len;
        loff += len;
        roff += len;
        if (loff == msg->msg_iov[li].iov_len) {
            ++li;
            loff = 0;
        }
        if (roff == msg->rma_iov[ri].len) {
            ++ri;
            roff = 0;
        }
    }

    failed_at_once = (__atomic_load_n(&op->status, __ATOMIC_ACQUIRE) !=
                      UCS_OK) &&
                     (__atomic_load_n(&op->pending, __ATOMIC_ACQUIRE) == 1);
    if (failed_at_once) {
        /* nothing runs: reported here, never counted */
        ret = fiatomic_status_to_fi_errno(op->status);
        fip_op_cancel(op);
        return (ret != 0) ? ret : -FI_EIO;
    }
    if (!reading && fip_rma_delivery(ep, flags) &&
        (__atomic_load_n(&op->status, __ATOMIC_ACQUIRE) == UCS_OK)) {
        /* the pieces are at the target once a flush after them is */
        fip_op_piece_starting(op);
        fip_op_piece_started(op, ucp_ep_flush_nbx(peer->ucp_ep, &param));
    }
    fip_op_piece_done(op, UCS_OK);
    return 0;
}

static void fip_rma_msg(struct fi_msg_rma *msg, const struct iovec *iov,
                        void **desc, size_t count, fi_addr_t peer,
                        struct fi_rma_iov *rma, uint64_t addr, uint64_t key,
                        void *context)
{
    memset(msg, 0, sizeof(*msg));
    rma->addr          = addr;
    rma->len           = (iov != NULL) ? fip_rma_iov_bytes(iov, count) : 0;
    rma->key           = key;
    msg->msg_iov       = iov;
    msg->desc          = desc;
    msg->iov_count     = count;
    msg->addr          = peer;
    msg->rma_iov       = rma;
    msg->rma_iov_count = 1;
    msg->context       = context;
}

static ssize_t fip_rma_readv(struct fid_ep *ep_fid, const struct iovec *iov,
                             void **desc, size_t count, fi_addr_t src,
                             uint64_t addr, uint64_t key, void *context)
{
    fip_ep_t *ep = fip_rma_ep(ep_fid);
    struct fi_msg_rma msg;
    struct fi_rma_iov rma;

    if ((iov == NULL) || (count == 0)) {
        return -FI_EINVAL;
    }
    fip_rma_msg(&msg, iov, desc, count, src, &rma, addr, key, context);
    return fip_rma_post(ep, &msg, ep->op_flags, 1);
}

static ssize_t fip_rma_read(struct fid_ep *ep_fid, void *buf, size_t len,
                            void *desc, fi_addr_t src, uint64_t addr,
                            uint64_t key, void *context)
{
    struct iovec iov = {buf, len};

    return fip_rma_readv(ep_fid, &iov, &desc, 1, src, addr, key, context);
}

static ssize_t fip_rma_readmsg(struct fid_ep *ep_fid,
                               const struct fi_msg_rma *msg, uint64_t flags)
{
    return fip_rma_post(fip_rma_ep(ep_fid), msg, flags, 1);
}

static ssize_t fip_rma_writev(struct fid_ep *ep_fid, const struct iovec *iov,
                              void **desc, size_t count, fi_addr_t dest,
                              uint64_t addr, uint64_t key, void *context)
{
    fip_ep_t *ep = fip_rma_ep(ep_fid);
    struct fi_msg_rma msg;
    struct fi_rma_iov rma;

    if ((iov == NULL) || (count == 0)) {
        return -FI_EINVAL;
    }
    fip_rma_msg(&msg, iov, desc, count, dest, &rma, addr, key, context);
    return fip_rma_post(ep, &msg, ep->op_flags, 0);
}

static ssize_t fip_rma_write(struct fid_ep *ep_fid, const void *buf,
                             size_t len, void *desc, fi_addr_t dest,
                             uint64_t addr, uint64_t key, void *context)
{
    struct iovec iov = {(void*)buf, len};

    return fip_rma_writev(ep_fid, &iov, &desc, 1, dest, addr, key, context);
}

static ssize_t fip_rma_writemsg(struct fid_ep *ep_fid,
                                const struct fi_msg_rma *msg, uint64_t flags)
{
    return fip_rma_post(fip_rma_ep(ep_fid), msg, flags, 0);
}

static ssize_t fip_rma_inject(struct fid_ep *ep_fid, const void *buf,
                              size_t len, fi_addr_t dest, uint64_t addr,
                              uint64_t key)
{
    fip_ep_t *ep     = fip_rma_ep(ep_fid);
    struct iovec iov = {(void*)buf, len};
    struct fi_msg_rma msg;
    struct fi_rma_iov rma;

    fip_rma_msg(&msg, &iov, NULL, 1, dest, &rma, addr, key, NULL);
    return fip_rma_post(ep, &msg, FI_INJECT | ep->op_flags, 0);
}

static ssize_t fip_rma_writedata(struct fid_ep *ep, const void *buf,
                                 size_t len, void *desc, uint64_t data,
                                 fi_addr_t dest, uint64_t addr, uint64_t key,
                                 void *context)
{
    /* no remote CQ data with RMA (only messages carry it) */
    return -FI_ENOSYS;
}

static ssize_t fip_rma_injectdata(struct fid_ep *ep, const void *buf,
                                  size_t len, uint64_t data, fi_addr_t dest,
                                  uint64_t addr, uint64_t key)
{
    return -FI_ENOSYS;
}

struct fi_ops_rma fip_rma_ops = {
    .size       = sizeof(struct fi_ops_rma),
    .read       = fip_rma_read,
    .readv      = fip_rma_readv,
    .readmsg    = fip_rma_readmsg,
    .write      = fip_rma_write,
    .writev     = fip_rma_writev,
    .writemsg   = fip_rma_writemsg,
    .inject     = fip_rma_inject,
    .writedata  = fip_rma_writedata,
    .injectdata = fip_rma_injectdata
};
