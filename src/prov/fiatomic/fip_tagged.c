/**
 * Tagged messages (fi_tagged(3)) on FI_EP_RDM endpoints with FI_TAGGED:
 * fi_tsend, fi_tsendv, fi_tsendmsg, fi_tinject, fi_tsenddata,
 * fi_tinjectdata, fi_trecv, fi_trecvv and fi_trecvmsg. Each call is its
 * untagged twin of fip_msg.c with a tag: the message carries it, and
 * fip_msg.c matches it to the oldest tagged receive whose tag equals it in
 * the bits the receive does not ignore (and, with FI_DIRECTED_RECV, whose
 * source it takes). fi_trecvmsg with FI_PEEK reports the oldest waiting
 * message the receive matches without taking it (or FI_ENOMSG); with
 * FI_PEEK | FI_CLAIM it also claims it for a later fi_trecvmsg with
 * FI_CLAIM and the same context, which receives it (or drops it, with
 * FI_DISCARD); FI_PEEK | FI_DISCARD drops it (fip_msg.c does all three).
 */
#include "fip.h"

static fip_ep_t *fip_tagged_ep(struct fid_ep *ep_fid)
{
    return fip_container_of(ep_fid, fip_ep_t, ep_fid);
}

/* a fi_msg_tagged as fip_msg.c's fi_msg */
static void fip_tagged_untag(struct fi_msg *msg,
                             const struct fi_msg_tagged *tmsg)
{
    fip_msg_fill(msg, tmsg->msg_iov, tmsg->desc, tmsg->iov_count,
                    tmsg->addr, tmsg->context, tmsg->data);
}

static ssize_t fip_tagged_recvv(struct fid_ep *ep_fid, const struct iovec *iov,
                                void **desc, size_t count, fi_addr_t src,
                                uint64_t tag, uint64_t ignore, void *context)
{
    fip_ep_t *ep = fip_tagged_ep(ep_fid);
    struct fi_msg msg;

    if ((iov == NULL) && (count > 0)) {
        return -FI_EINVAL;
    }
    fip_msg_fill(&msg, iov, desc, count, src, context, 0);
    return fip_msg_recv_post(ep, &msg, ep->rx_op_flags, 1, tag, ignore);
}

static ssize_t fip_tagged_recv(struct fid_ep *ep_fid, void *buf, size_t len,
                               void *desc, fi_addr_t src, uint64_t tag,
                               uint64_t ignore, void *context)
{
    struct iovec iov = {buf, len};

    return fip_tagged_recvv(ep_fid, &iov, &desc, 1, src, tag, ignore,
                            context);
}

static ssize_t fip_tagged_recvmsg(struct fid_ep *ep_fid,
                                  const struct fi_msg_tagged *tmsg,
                                  uint64_t flags)
{
    struct fi_msg msg;

    if (tmsg == NULL) {
        return -FI_EINVAL;
    }
    fip_tagged_untag(&msg, tmsg);
    return fip_msg_recv_post(fip_tagged_ep(ep_fid), &msg, flags, 1,
                             tmsg->tag, tmsg->ignore);
}

static ssize_t fip_tagged_sendv(struct fid_ep *ep_fid, const struct iovec *iov,
                                void **desc, size_t count, fi_addr_t dest,
                                uint64_t tag, void *context)
{
    fip_ep_t *ep = fip_tagged_ep(ep_fid);
    struct fi_msg msg;

    if ((iov == NULL) && (count > 0)) {
        return -FI_EINVAL;
    }
    fip_msg_fill(&msg, iov, desc, count, dest, context, 0);
    return fip_msg_send_post(ep, &msg, ep->op_flags, 1, tag);
}

static ssize_t fip_tagged_send(struct fid_ep *ep_fid, const void *buf,
                               size_t len, void *desc, fi_addr_t dest,
                               uint64_t tag, void *context)
{
    struct iovec iov = {(void*)buf, len};

    return fip_tagged_sendv(ep_fid, &iov, &desc, 1, dest, tag, context);
}

static ssize_t fip_tagged_sendmsg(struct fid_ep *ep_fid,
                                  const struct fi_msg_tagged *tmsg,
                                  uint64_t flags)
{
    struct fi_msg msg;

    if (tmsg == NULL) {
        return -FI_EINVAL;
    }
    fip_tagged_untag(&msg, tmsg);
    return fip_msg_send_post(fip_tagged_ep(ep_fid), &msg, flags, 1,
                             tmsg->tag);
}

static ssize_t fip_tagged_inject(struct fid_ep *ep_fid, const void *buf,
                                 size_t len, fi_addr_t dest, uint64_t tag)
{
    fip_ep_t *ep     = fip_tagged_ep(ep_fid);
    struct iovec iov = {(void*)buf, len};
    struct fi_msg msg;

    fip_msg_fill(&msg, &iov, NULL, 1, dest, NULL, 0);
    return fip_msg_send_post(ep, &msg, FI_INJECT | ep->op_flags, 1, tag);
}

static ssize_t fip_tagged_senddata(struct fid_ep *ep_fid, const void *buf,
                                   size_t len, void *desc, uint64_t data,
                                   fi_addr_t dest, uint64_t tag,
                                   void *context)
{
    fip_ep_t *ep     = fip_tagged_ep(ep_fid);
    struct iovec iov = {(void*)buf, len};
    struct fi_msg msg;

    fip_msg_fill(&msg, &iov, &desc, 1, dest, context, data);
    return fip_msg_send_post(ep, &msg, FI_REMOTE_CQ_DATA | ep->op_flags, 1,
                             tag);
}

static ssize_t fip_tagged_injectdata(struct fid_ep *ep_fid, const void *buf,
                                     size_t len, uint64_t data,
                                     fi_addr_t dest, uint64_t tag)
{
    fip_ep_t *ep     = fip_tagged_ep(ep_fid);
    struct iovec iov = {(void*)buf, len};
    struct fi_msg msg;

    fip_msg_fill(&msg, &iov, NULL, 1, dest, NULL, data);
    return fip_msg_send_post(ep, &msg,
                             FI_INJECT | FI_REMOTE_CQ_DATA | ep->op_flags, 1,
                             tag);
}

struct fi_ops_tagged fip_tagged_ops = {
    .size       = sizeof(struct fi_ops_tagged),
    .recv       = fip_tagged_recv,
    .recvv      = fip_tagged_recvv,
    .recvmsg    = fip_tagged_recvmsg,
    .send       = fip_tagged_send,
    .sendv      = fip_tagged_sendv,
    .sendmsg    = fip_tagged_sendmsg,
    .inject     = fip_tagged_inject,
    .senddata   = fip_tagged_senddata,
    .injectdata = fip_tagged_injectdata
};
