/**
 * Completion queues (fi_cq(3)), their waiting side: opening with the
 * context, msg and data formats, reads that find the queue empty
 * (-FI_EAGAIN), fi_cq_sread bounded by its timeout in short slices
 * (progressing the domain under manual progress) and cut short by
 * fi_cq_signal (-FI_ECANCELED), and binding to endpoints. No call of the
 * provider completes anything yet (endpoints transfer nothing), so the
 * queue holds no entries: the entry store comes with the first transfer.
 */
#include "fip.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* longest sleep of fi_cq_sread between two looks at the queue */
#define FIP_CQ_WAIT_SLICE_NS 1000000L

static fip_cq_t *fip_cq_of(struct fid_cq *cq_fid)
{
    return fip_container_of(cq_fid, fip_cq_t, cq_fid);
}

static int64_t fip_cq_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static ssize_t fip_cq_readfrom(struct fid_cq *cq_fid, void *buf,
                               size_t count, fi_addr_t *src_addr)
{
    fip_cq_t *cq = fip_cq_of(cq_fid);

    if ((buf == NULL) && (count > 0)) {
        return -FI_EINVAL;
    }
    fip_domain_progress(cq->domain);
    return -FI_EAGAIN;
}

static ssize_t fip_cq_read(struct fid_cq *cq_fid, void *buf, size_t count)
{
    return fip_cq_readfrom(cq_fid, buf, count, NULL);
}

static ssize_t fip_cq_readerr(struct fid_cq *cq_fid,
                              struct fi_cq_err_entry *buf, uint64_t flags)
{
    if (buf == NULL) {
        return -FI_EINVAL;
    }
    return -FI_EAGAIN;
}

static ssize_t fip_cq_sreadfrom(struct fid_cq *cq_fid, void *buf,
                                size_t count, fi_addr_t *src_addr,
                                const void *cond, int timeout_ms)
{
    fip_cq_t *cq     = fip_cq_of(cq_fid);
    int64_t deadline = (timeout_ms < 0) ? INT64_MAX :
                       fip_cq_now_ns() + (int64_t)timeout_ms * 1000000L;
    int64_t now, sleep_ns;
    struct timespec ts;
    ssize_t ret;

    if (cq->wait_obj == FI_WAIT_NONE) {
        return -FI_ENOSYS;
    }
    for (;;) {
        ret = fip_cq_readfrom(cq_fid, buf, count, src_addr);
        if (ret != -FI_EAGAIN) {
            return ret;
        }
        pthread_mutex_lock(&cq->lock);
        if (cq->signaled) {
            cq->signaled = 0;
            pthread_mutex_unlock(&cq->lock);
            return -FI_ECANCELED;
        }
        now = fip_cq_now_ns();
        if (now >= deadline) {
            pthread_mutex_unlock(&cq->lock);
            return -FI_EAGAIN;
        }
        sleep_ns = deadline - now;
        if (sleep_ns > FIP_CQ_WAIT_SLICE_NS) {
            sleep_ns = FIP_CQ_WAIT_SLICE_NS;
        }
        now       += sleep_ns;
        ts.tv_sec  = now / 1000000000L;
        ts.tv_nsec = now % 1000000000L;
        (void)pthread_cond_timedwait(&cq->cond, &cq->lock, &ts);
        pthread_mutex_unlock(&cq->lock);
    }
}

static ssize_t fip_cq_sread(struct fid_cq *cq_fid, void *buf, size_t count,
                            const void *cond, int timeout_ms)
{
    return fip_cq_sreadfrom(cq_fid, buf, count, NULL, cond, timeout_ms);
}

static int fip_cq_signal(struct fid_cq *cq_fid)
{
    fip_cq_t *cq = fip_cq_of(cq_fid);

    pthread_mutex_lock(&cq->lock);
    cq->signaled = 1;
    pthread_cond_broadcast(&cq->cond);
    pthread_mutex_unlock(&cq->lock);
    return 0;
}

static const char *fip_cq_strerror(struct fid_cq *cq_fid, int prov_errno,
                                   const void *err_data, char *buf,
                                   size_t len)
{
    static const char *unknown = "fiatomic: unknown provider error";

    if ((buf == NULL) || (len == 0)) {
        return unknown;
    }
    snprintf(buf, len, "fiatomic: provider error %d", prov_errno);
    return buf;
}

static int fip_cq_close(struct fid *fid)
{
    fip_cq_t *cq = fip_container_of(fid, fip_cq_t, cq_fid.fid);

    if (__atomic_load_n(&cq->bound, __ATOMIC_ACQUIRE) != 0) {
        return -FI_EBUSY;
    }
    fip_domain_child_remove(cq->domain);
    pthread_cond_destroy(&cq->cond);
    pthread_mutex_destroy(&cq->lock);
    free(cq);
    return 0;
}

static struct fi_ops fip_cq_fi_ops = {
    .size     = sizeof(struct fi_ops),
    .close    = fip_cq_close,
    .bind     = fip_nosys_bind,
    /* no file descriptor or wait set to hand out (FI_GETWAIT) */
    .control  = fip_nosys_control,
    .ops_open = fip_nosys_ops_open,
    .tostr    = fip_nosys_tostr,
    .ops_set  = fip_nosys_ops_set
};

static struct fi_ops_cq fip_cq_ops = {
    .size      = sizeof(struct fi_ops_cq),
    .read      = fip_cq_read,
    .readfrom  = fip_cq_readfrom,
    .readerr   = fip_cq_readerr,
    .sread     = fip_cq_sread,
    .sreadfrom = fip_cq_sreadfrom,
    .signal    = fip_cq_signal,
    .strerror  = fip_cq_strerror
};

int fip_cq_open(struct fid_domain *domain_fid, struct fi_cq_attr *attr,
                struct fid_cq **cq_p, void *context)
{
    fip_domain_t *domain = fip_container_of(domain_fid, fip_domain_t,
                                            domain_fid);
    pthread_condattr_t cond_attr;
    fip_cq_t *cq;

    if ((attr == NULL) || (cq_p == NULL)) {
        return -FI_EINVAL;
    }
    switch (attr->format) {
    case FI_CQ_FORMAT_UNSPEC:
        /* the provider's choice, told back to the program */
        attr->format = FI_CQ_FORMAT_CONTEXT;
        break;
    case FI_CQ_FORMAT_CONTEXT:
    case FI_CQ_FORMAT_MSG:
    case FI_CQ_FORMAT_DATA:
        break;
    case FI_CQ_FORMAT_TAGGED:
        /* no tagged messages */
        return -FI_ENOSYS;
    default:
        return -FI_EINVAL;
    }
    switch (attr->wait_obj) {
    case FI_WAIT_NONE:
    case FI_WAIT_UNSPEC:
    case FI_WAIT_MUTEX_COND:
    case FI_WAIT_YIELD:
        break;
    case FI_WAIT_FD:
    case FI_WAIT_SET:
    case FI_WAIT_POLLFD:
        return -FI_ENOSYS;
    default:
        return -FI_EINVAL;
    }
    if (attr->size > FIP_CQ_MAX) {
        return -FI_EINVAL;
    }
    /* no affinity, no threshold wakeups */
    if ((attr->flags != 0) || (attr->wait_cond != FI_CQ_COND_NONE)) {
        return -FI_ENOSYS;
    }

    cq = calloc(1, sizeof(*cq));
    if (cq == NULL) {
        return -FI_ENOMEM;
    }
    pthread_mutex_init(&cq->lock, NULL);
    pthread_condattr_init(&cond_attr);
    pthread_condattr_setclock(&cond_attr, CLOCK_MONOTONIC);
    pthread_cond_init(&cq->cond, &cond_attr);
    pthread_condattr_destroy(&cond_attr);

    cq->domain            = domain;
    cq->format            = attr->format;
    cq->wait_obj          = attr->wait_obj;
    cq->cq_fid.fid.fclass = FI_CLASS_CQ;
    cq->cq_fid.fid.context = context;
    cq->cq_fid.fid.ops    = &fip_cq_fi_ops;
    cq->cq_fid.ops        = &fip_cq_ops;
    fip_domain_child_add(domain);
    *cq_p = &cq->cq_fid;
    return 0;
}
