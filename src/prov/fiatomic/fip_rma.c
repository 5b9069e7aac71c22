/**
 * RMA (fi_rma(3)): fi_write, fi_writev, fi_writemsg, fi_inject_write,
 * fi_read, fi_readv and fi_readmsg over the provider's own messages
 * (fip_rma_wire.c), which the target checks against its key table: the
 * key is resolved first (fip_key.c, cached) so that a range outside the
 * region, an access it lacks or a key the peer does not know is refused
 * here already; the target checks again, authoritatively, what it may have
 * closed since. An operation is one message per contiguous piece (up to 4
 * local and 4 remote iov entries, pieces of at most FIP_RMA_PIECE_MAX
 * bytes); it completes when the last piece's answer has come, so a write
 * completes (and is counted) once its bytes are at the target, whatever
 * completion level it asks (delivery complete, the strongest). Injected
 * data is copied into the operation first.
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

static size_t fip_rma_iov_bytes(const struct iovec *iov, size_t count)
{
    size_t total = 0;
    size_t i;

    for (i = 0; i < count; ++i) {
        total += iov[i].iov_len;
    }
    return total;
}

/* the pieces the local and remote lists make together: one per overlap,
 * cut at FIP_RMA_PIECE_MAX */
static size_t fip_rma_piece_count(const struct fi_msg_rma *msg)
{
    size_t li = 0, loff = 0, ri = 0, roff = 0, pieces = 0;

    while ((li < msg->iov_count) && (ri < msg->rma_iov_count)) {
        size_t lrem = msg->msg_iov[li].iov_len - loff;
        size_t rrem = msg->rma_iov[ri].len - roff;
        size_t len  = (lrem < rrem) ? lrem : rrem;

        if (len > FIP_RMA_PIECE_MAX) {
            len = FIP_RMA_PIECE_MAX;
        }
        pieces += (len > 0);
        loff   += len;
        roff   += len;
        if (loff == msg->msg_iov[li].iov_len) {
            ++li;
            loff = 0;
        }
        if (roff == msg->rma_iov[ri].len) {
            ++ri;
            roff = 0;
        }
    }
    return pieces;
}

static ssize_t fip_rma_post(fip_ep_t *ep, const struct fi_msg_rma *msg,
                            uint64_t flags, int reading)
{
    const uint64_t access = reading ? FI_REMOTE_READ : FI_REMOTE_WRITE;
    uint64_t raddr;
    size_t total, remote = 0, li = 0, loff = 0, ri, roff, n;
    size_t pieces, posted = 0, posted_bytes = 0;
    ucs_status_t nomem = UCS_ERR_NO_MEMORY, ok;
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
                           access, &fkey, &raddr);
        if (ret != 0) {
            return ret;
        }
    }

    pieces = fip_rma_piece_count(msg);
    ret    = fip_rma_wire_reserve(peer, pieces, total);
    if (ret != 0) {
        return ret;
    }
    op = fip_op_alloc(ep, reading, msg->context, flags,
                      FI_RMA | (reading ? FI_READ : FI_WRITE), NULL,
                      (flags & FI_INJECT) ? total : 0);
    if (op == NULL) {
        fip_rma_wire_unreserve(peer, pieces, total);
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

        if (len > FIP_RMA_PIECE_MAX) {
            len = FIP_RMA_PIECE_MAX;
        }
        if (len > 0) {
            if (fip_rma_wire_post(op, peer, reading, lbuf, len,
                                  msg->rma_iov[ri].key,
                                  msg->rma_iov[ri].addr + roff) != 0) {
                ok = UCS_OK;
                __atomic_compare_exchange_n(&op->status, &ok, nomem, 0,
                                            __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE);
                break;
            }
            ++posted;
            posted_bytes += len;
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
    /* the pieces never posted wait for nothing */
    fip_rma_wire_unreserve(peer, pieces - posted, total - posted_bytes);

    failed_at_once = (__atomic_load_n(&op->status, __ATOMIC_ACQUIRE) !=
                      UCS_OK) &&
                     (__atomic_load_n(&op->pending, __ATOMIC_ACQUIRE) == 1);
    if (failed_at_once) {
        /* nothing runs: reported here, never counted */
        ret = fiatomic_status_to_fi_errno(op->status);
        fip_op_cancel(op);
        return (ret != 0) ? ret : -FI_EIO;
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
