/**
 * Endpoints (fi_endpoint(3)), FI_EP_RDM: several per domain, each with an
 * id in its domain and a random nonce, and so an address of its own
 * (fi_getname: the domain's listener, the id, the nonce; or, over
 * same-host transports alone, the domain's published worker address;
 * fip_addr.c). An
 * endpoint binds one address vector, an event queue (which gets no
 * events: fip_eq.c), a completion queue per direction
 * (FI_TRANSMIT, FI_RECV) and a counter per direction flag (FI_SEND, FI_RECV,
 * FI_READ, FI_WRITE, FI_REMOTE_READ, FI_REMOTE_WRITE), before it is
 * enabled; it enables once it has an address vector (-FI_ENOAV before).
 * Its atomic calls are fip_atomic.c's, RMA fip_rma.c's, messages
 * fip_msg.c's (with FI_MSG in its capabilities, else -FI_ENOSYS), tagged
 * messages fip_tagged.c's (with FI_TAGGED, else -FI_ENOSYS); the rest
 * answer -FI_ENOSYS (fip_ep_nosys.c) and getinfo offers none of it. An open
 * endpoint keeps its domain and what it binds from closing; closing it
 * waits (bounded) for its operations in flight.
 */
#include "fip.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

static fip_ep_t *fip_ep_of_fid(struct fid *fid)
{
    return fip_container_of(fid, fip_ep_t, ep_fid.fid);
}

/* how long fi_close waits for the endpoint's operations in flight */
#define FIP_EP_CLOSE_TIMEOUT_MS 10000

static int fip_ep_close(struct fid *fid)
{
    fip_ep_t *ep     = fip_ep_of_fid(fid);
    int64_t deadline = fip_wait_deadline(FIP_EP_CLOSE_TIMEOUT_MS);
    int i;

    if ((ep->msg || ep->tagged) && ep->enabled) {
        /* no message reaches it from here on */
        fip_msg_ep_remove(ep);
        ep->enabled = 0;
    }
    /* the operations in flight complete into its queues and counters */
    while (__atomic_load_n(&ep->inflight, __ATOMIC_ACQUIRE) != 0) {
        if (fip_now_ns() >= deadline) {
            return -FI_EBUSY;
        }
        if (ep->domain->data_progress == FI_PROGRESS_MANUAL) {
            fip_domain_worker_progress(ep->domain);
        } else {
            sched_yield();
        }
    }

    if (ep->eq != NULL) {
        fip_eq_unbind(ep->eq);
    }
    if (ep->av != NULL) {
        pthread_mutex_lock(&ep->av->lock);
        --ep->av->bound;
        pthread_mutex_unlock(&ep->av->lock);
    }
    if (ep->tx_cq != NULL) {
        __atomic_sub_fetch(&ep->tx_cq->bound, 1, __ATOMIC_RELEASE);
    }
    if (ep->rx_cq != NULL) {
        __atomic_sub_fetch(&ep->rx_cq->bound, 1, __ATOMIC_RELEASE);
    }
    for (i = 0; i < FIP_EP_CNTRS; ++i) {
        if (ep->cntrs[i] != NULL) {
            __atomic_sub_fetch(&ep->cntrs[i]->bound, 1, __ATOMIC_RELEASE);
        }
    }
    fip_msg_ep_cleanup(ep);
    pthread_mutex_destroy(&ep->rx_lock);
    fip_domain_child_remove(ep->domain);
    free(ep);
    return 0;
}

/* a CQ per direction (FI_TRANSMIT, FI_RECV), each bound once */
static int fip_ep_bind_cq(fip_ep_t *ep, fip_cq_t *cq, uint64_t flags)
{
    const uint64_t allowed = FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION;

    if ((cq->domain != ep->domain) || (flags & ~allowed) ||
        !(flags & (FI_TRANSMIT | FI_RECV))) {
        return -FI_EINVAL;
    }
    if (((flags & FI_TRANSMIT) && (ep->tx_cq != NULL)) ||
        ((flags & FI_RECV) && (ep->rx_cq != NULL))) {
        return -FI_EINVAL;
    }
    if (flags & FI_TRANSMIT) {
        ep->tx_cq = cq;
        __atomic_add_fetch(&cq->bound, 1, __ATOMIC_RELEASE);
    }
    if (flags & FI_RECV) {
        ep->rx_cq        = cq;
        ep->rx_selective = !!(flags & FI_SELECTIVE_COMPLETION);
        __atomic_add_fetch(&cq->bound, 1, __ATOMIC_RELEASE);
    }
    ep->cq_flags |= flags & FI_SELECTIVE_COMPLETION;
    return 0;
}

/* a counter per direction flag, each direction bound once */
static int fip_ep_bind_cntr(fip_ep_t *ep, fip_cntr_t *cntr, uint64_t flags)
{
    static const uint64_t dirs[FIP_EP_CNTRS] = FIP_EP_CNTR_FLAGS;
    uint64_t all = 0;
    int i;

    for (i = 0; i < FIP_EP_CNTRS; ++i) {
        all |= dirs[i];
    }
    if ((cntr->domain != ep->domain) || (flags == 0) || (flags & ~all)) {
        return -FI_EINVAL;
    }
    for (i = 0; i < FIP_EP_CNTRS; ++i) {
        if ((flags & dirs[i]) && (ep->cntrs[i] != NULL)) {
            return -FI_EINVAL;
        }
    }
    for (i = 0; i < FIP_EP_CNTRS; ++i) {
        if (flags & dirs[i]) {
            ep->cntrs[i] = cntr;
            __atomic_add_fetch(&cntr->bound, 1, __ATOMIC_RELEASE);
        }
    }
    return 0;
}

static int fip_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    fip_ep_t *ep = fip_ep_of_fid(fid);
    fip_eq_t *eq;
    fip_av_t *av;
    int ret;

    if (bfid == NULL) {
        return -FI_EINVAL;
    }
    /* bindings are made before the endpoint is enabled */
    if (ep->enabled) {
        return -FI_EINVAL;
    }
    switch (bfid->fclass) {
    case FI_CLASS_AV:
        av = fip_container_of(bfid, fip_av_t, av_fid.fid);
        if ((flags != 0) || (av->domain != ep->domain)) {
            return -FI_EINVAL;
        }
        if ((ep->av != NULL) || ep->enabled) {
            return -FI_EINVAL;
        }
        pthread_mutex_lock(&av->lock);
        ++av->bound;
        pthread_mutex_unlock(&av->lock);
        ep->av = av;
        return 0;
    case FI_CLASS_EQ:
        /* one queue; FI_EP_RDM has no connection events, and address
         * vector inserts complete before they return: nothing goes there */
        eq = fip_container_of(bfid, fip_eq_t, eq_fid.fid);
        if (ep->eq != NULL) {
            return -FI_EINVAL;
        }
        ret = fip_eq_bind(eq, ep->domain->fabric, flags);
        if (ret == 0) {
            ep->eq = eq;
        }
        return ret;
    case FI_CLASS_CQ:
        return fip_ep_bind_cq(ep, fip_container_of(bfid, fip_cq_t,
                                                   cq_fid.fid), flags);
    case FI_CLASS_CNTR:
        return fip_ep_bind_cntr(ep, fip_container_of(bfid, fip_cntr_t,
                                                     cntr_fid.fid), flags);
    default:
        return -FI_EINVAL;
    }
}

static int fip_ep_control(struct fid *fid, int command, void *arg)
{
    fip_ep_t *ep = fip_ep_of_fid(fid);

    switch (command) {
    case FI_ENABLE:
        if (ep->av == NULL) {
            return -FI_ENOAV;
        }
        if (ep->enabled) {
            return 0;
        }
        ep->enabled = 1;
        if (ep->msg || ep->tagged) {
            fip_msg_ep_add(ep);
        }
        return 0;
    default:
        return -FI_ENOSYS;
    }
}

static int fip_ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
    fip_ep_t *ep = fip_ep_of_fid(fid);
    uint8_t packed[FIP_ADDR_LEN];
    size_t given;

    if (addrlen == NULL) {
        return -FI_EINVAL;
    }
    fip_addr_pack(&ep->addr, packed);
    given    = *addrlen;
    *addrlen = FIP_ADDR_LEN;
    if ((addr == NULL) || (given < FIP_ADDR_LEN)) {
        return -FI_ETOOSMALL;
    }
    memcpy(addr, packed, FIP_ADDR_LEN);
    return 0;
}

static int fip_ep_setname(fid_t fid, void *addr, size_t addrlen)
{
    return -FI_ENOSYS;
}

static int fip_ep_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
    return -FI_ENOSYS;
}

static int fip_ep_connect(struct fid_ep *ep, const void *addr,
                          const void *param, size_t paramlen)
{
    return -FI_ENOSYS;
}

static int fip_ep_listen(struct fid_pep *pep)
{
    return -FI_ENOSYS;
}

static int fip_ep_accept(struct fid_ep *ep, const void *param,
                         size_t paramlen)
{
    return -FI_ENOSYS;
}

static int fip_ep_reject(struct fid_pep *pep, fid_t handle,
                         const void *param, size_t paramlen)
{
    return -FI_ENOSYS;
}

static int fip_ep_shutdown(struct fid_ep *ep, uint64_t flags)
{
    return -FI_ENOSYS;
}

static int fip_ep_join(struct fid_ep *ep, const void *addr, uint64_t flags,
                       struct fid_mc **mc, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_ep_cancel(fid_t fid, void *context)
{
    return -FI_ENOSYS;
}

static int fip_ep_getopt(fid_t fid, int level, int optname, void *optval,
                         size_t *optlen)
{
    return -FI_ENOPROTOOPT;
}

static int fip_ep_setopt(fid_t fid, int level, int optname,
                         const void *optval, size_t optlen)
{
    return -FI_ENOPROTOOPT;
}

static int fip_ep_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
                      struct fid_ep **ep, void *context)
{
    return -FI_ENOSYS;
}

static int fip_ep_rx_ctx(struct fid_ep *sep, int index,
                         struct fi_rx_attr *attr, struct fid_ep **ep,
                         void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_ep_size_left(struct fid_ep *ep)
{
    return -FI_ENOSYS;
}

static struct fi_ops fip_ep_fi_ops = {
    .size     = sizeof(struct fi_ops),
    .close    = fip_ep_close,
    .bind     = fip_ep_bind,
    .control  = fip_ep_control,
    .ops_open = fip_nosys_ops_open,
    .tostr    = fip_nosys_tostr,
    .ops_set  = fip_nosys_ops_set
};

static struct fi_ops_ep fip_ep_ops = {
    .size         = sizeof(struct fi_ops_ep),
    .cancel       = fip_ep_cancel,
    .getopt       = fip_ep_getopt,
    .setopt       = fip_ep_setopt,
    .tx_ctx       = fip_ep_ctx,
    .rx_ctx       = fip_ep_rx_ctx,
    .rx_size_left = fip_ep_size_left,
    .tx_size_left = fip_ep_size_left
};

static struct fi_ops_cm fip_ep_cm_ops = {
    .size     = sizeof(struct fi_ops_cm),
    .setname  = fip_ep_setname,
    .getname  = fip_ep_getname,
    .getpeer  = fip_ep_getpeer,
    .connect  = fip_ep_connect,
    .listen   = fip_ep_listen,
    .accept   = fip_ep_accept,
    .reject   = fip_ep_reject,
    .shutdown = fip_ep_shutdown,
    .join     = fip_ep_join
};

int fip_ep_nonce(uint64_t *nonce_p)
{
    uint64_t nonce;

    do {
        if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce)) {
            return -FI_EOTHER;
        }
    } while (nonce == 0);
    *nonce_p = nonce;
    return 0;
}

int fip_ep_open(struct fid_domain *domain_fid, struct fi_info *info,
                struct fid_ep **ep_p, void *context)
{
    fip_domain_t *domain;
    fip_ep_t *ep;
    int ret;

    if ((domain_fid == NULL) || (info == NULL) || (ep_p == NULL)) {
        return -FI_EINVAL;
    }
    domain = fip_container_of(domain_fid, fip_domain_t, domain_fid);
    if ((info->ep_attr != NULL) && (info->ep_attr->type != FI_EP_RDM) &&
        (info->ep_attr->type != FI_EP_UNSPEC)) {
        return -FI_EINVAL;
    }
    /* only what an offer gives */
    ret = fip_getinfo_check_open(domain->fabric->fabric_fid.api_version,
                                 info);
    if (ret != 0) {
        return ret;
    }

    ep = calloc(1, sizeof(*ep));
    if (ep == NULL) {
        return -FI_ENOMEM;
    }
    ret = fip_ep_nonce(&ep->addr.nonce);
    if (ret != 0) {
        goto err_free;
    }

    pthread_mutex_lock(&domain->lock);
    if (!domain->local && (fip_listen_start(domain) != 0)) {
        /* no connection manager to listen with: same-host peers only */
        domain->local = 1;
    }
    ret = domain->local ? fip_publish_start(domain) : 0;
    if (ret == 0) {
        if (domain->local) {
            ep->addr.family = FIP_ADDR_FAMILY_LOCAL;
            ep->addr.pid    = (uint32_t)getpid();
            ep->addr.host   = fip_publish_host();
            /* the domain's, which names its file; the id tells its
             * endpoints apart */
            ep->addr.nonce  = domain->nonce;
        } else {
            ep->addr.family = FIP_ADDR_FAMILY_IPV4;
            ep->addr.ipv4   = domain->listen_ipv4;
            ep->addr.port   = domain->listen_port;
        }
        ep->addr.ep_id = domain->next_ep_id++;
    }
    pthread_mutex_unlock(&domain->lock);
    if (ret != 0) {
        goto err_free;
    }

    ep->domain                = domain;
    /* an info without capabilities asks for all the offer has */
    ep->msg                   = (info->caps == 0) ||
                                !!(info->caps & FI_MSG);
    ep->tagged                = (info->caps == 0) ||
                                !!(info->caps & FI_TAGGED);
    ep->directed              = (info->caps == 0) ||
                                !!(info->caps & FI_DIRECTED_RECV);
    pthread_mutex_init(&ep->rx_lock, NULL);
    ep->op_flags              = (info->tx_attr != NULL) ?
                                info->tx_attr->op_flags : 0;
    ep->rx_op_flags           = (info->rx_attr != NULL) ?
                                info->rx_attr->op_flags : 0;
    ep->ep_fid.fid.fclass     = FI_CLASS_EP;
    ep->ep_fid.fid.context    = context;
    ep->ep_fid.fid.ops        = &fip_ep_fi_ops;
    ep->ep_fid.ops            = &fip_ep_ops;
    ep->ep_fid.cm             = &fip_ep_cm_ops;
    ep->ep_fid.msg            = ep->msg ? &fip_msg_ops :
                                &fip_nosys_msg_ops;
    ep->ep_fid.rma            = &fip_rma_ops;
    ep->ep_fid.tagged         = ep->tagged ? &fip_tagged_ops :
                                &fip_nosys_tagged_ops;
    ep->ep_fid.atomic         = &fip_atomic_ops;
    ep->ep_fid.collective     = &fip_nosys_collective_ops;
    fip_domain_child_add(domain);
    *ep_p = &ep->ep_fid;
    return 0;

err_free:
    free(ep);
    return ret;
}
