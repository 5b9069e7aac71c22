/**
 * Completion queues (fi_cq(3)): the entries of the operations that
 * completed (the operation's own memory, fip_op_t, queued by fip_cq_push
 * and freed when read), in the context, msg, data and tagged formats, and
 * error
 * entries read with fi_cq_readerr; a read with an error entry waiting
 * answers -FI_EAVAIL. fi_cq_sread waits bounded by its timeout
 * (fip_wait.c, progressing the domain under manual progress) and is cut
 * short by fi_cq_signal (-FI_ECANCELED).
 */
#include "fip.h"

#include <stdlib.h>
#include <string.h>

static fip_cq_t *fip_cq_of(struct fid_cq *cq_fid)
{
    return fip_container_of(cq_fid, fip_cq_t, cq_fid);
}

void fip_cq_push(fip_cq_t *cq, fip_op_t *op)
{
    fip_op_t **head = op->err ? &cq->err_head : &cq->head;
    fip_op_t **tail = op->err ? &cq->err_tail : &cq->tail;

    op->next = NULL;
    pthread_mutex_lock(&cq->lock);
    if (*tail == NULL) {
        *head = op;
    } else {
        (*tail)->next = op;
    }
    *tail = op;
    pthread_cond_broadcast(&cq->cond);
    pthread_mutex_unlock(&cq->lock);
}

/* one entry in the queue's format at `dst` */
static void fip_cq_fill(const fip_cq_t *cq, const fip_op_t *op, void *dst)
{
    struct fi_cq_tagged_entry *tagged = dst;
    struct fi_cq_data_entry *data     = dst;
    struct fi_cq_msg_entry *msg       = dst;
    struct fi_cq_entry *ctx           = dst;

    switch (cq->format) {
    case FI_CQ_FORMAT_TAGGED:
        memset(tagged, 0, sizeof(*tagged));
        tagged->op_context = op->context;
        tagged->flags      = op->flags;
        tagged->buf        = op->buf;
        tagged->len        = op->len;
        tagged->data       = op->data;
        tagged->tag        = op->tag;
        break;
    case FI_CQ_FORMAT_DATA:
        memset(data, 0, sizeof(*data));
        data->op_context = op->context;
        data->flags      = op->flags;
        data->buf        = op->buf;
        data->len        = op->len;
        data->data       = op->data;
        break;
    case FI_CQ_FORMAT_MSG:
        memset(msg, 0, sizeof(*msg));
        msg->op_context = op->context;
        msg->flags      = op->flags;
        msg->len        = op->len;
        break;
    default:
        ctx->op_context = op->context;
        break;
    }
}

static size_t fip_cq_entry_size(const fip_cq_t *cq)
{
    switch (cq->format) {
    case FI_CQ_FORMAT_TAGGED:
        return sizeof(struct fi_cq_tagged_entry);
    case FI_CQ_FORMAT_DATA:
        return sizeof(struct fi_cq_data_entry);
    case FI_CQ_FORMAT_MSG:
        return sizeof(struct fi_cq_msg_entry);
    default:
        return sizeof(struct fi_cq_entry);
    }
}

static ssize_t fip_cq_readfrom(struct fid_cq *cq_fid, void *buf,
                               size_t count, fi_addr_t *src_addr)
{
    fip_cq_t *cq = fip_cq_of(cq_fid);
    size_t size  = fip_cq_entry_size(cq);
    fip_op_t *op;
    ssize_t n = 0;

    if ((buf == NULL) && (count > 0)) {
        return -FI_EINVAL;
    }
    fip_domain_progress(cq->domain);

    pthread_mutex_lock(&cq->lock);
    if (cq->err_head != NULL) {
        pthread_mutex_unlock(&cq->lock);
        return -FI_EAVAIL;
    }
    while ((n < (ssize_t)count) && (cq->head != NULL)) {
        op       = cq->head;
        cq->head = op->next;
        if (cq->head == NULL) {
            cq->tail = NULL;
        }
        fip_cq_fill(cq, op, (char*)buf + (size_t)n * size);
        if (src_addr != NULL) {
            /* FI_SOURCE: a receive's sender in its endpoint's AV */
            src_addr[n] = (op->flags & FI_RECV) ? op->src : FI_ADDR_NOTAVAIL;
        }
        free(op);
        ++n;
    }
    pthread_mutex_unlock(&cq->lock);
    return (n > 0) ? n : -FI_EAGAIN;
}

static ssize_t fip_cq_read(struct fid_cq *cq_fid, void *buf, size_t count)
{
    return fip_cq_readfrom(cq_fid, buf, count, NULL);
}

static ssize_t fip_cq_readerr(struct fid_cq *cq_fid,
                              struct fi_cq_err_entry *buf, uint64_t flags)
{
    fip_cq_t *cq = fip_cq_of(cq_fid);
    fip_op_t *op;

    if (buf == NULL) {
        return -FI_EINVAL;
    }
    pthread_mutex_lock(&cq->lock);
    op = cq->err_head;
    if (op != NULL) {
        cq->err_head = op->next;
        if (cq->err_head == NULL) {
            cq->err_tail = NULL;
        }
    }
    pthread_mutex_unlock(&cq->lock);
    if (op == NULL) {
        return -FI_EAGAIN;
    }
    /* err_data and its size stay the program's (API >= 1.5): no data */
    buf->op_context = op->context;
    buf->flags      = op->flags;
    buf->len        = op->len;
    buf->buf        = op->buf;
    buf->data       = op->data;
    buf->tag        = op->tag;
    buf->olen       = op->olen;
    buf->err        = op->err;
    buf->prov_errno = -op->err;
    if (FI_VERSION_GE(cq->domain->fabric->fabric_fid.api_version,
                      FI_VERSION(1, 5))) {
        buf->err_data_size = 0;
    } else {
        buf->err_data = NULL;
    }
    free(op);
    return 1;
}

/* what fi_cq_sreadfrom's looks read into */
typedef struct {
    struct fid_cq *cq_fid;
    void          *buf;
    size_t        count;
    fi_addr_t     *src_addr;
} fip_cq_sread_t;

static ssize_t fip_cq_sread_look(void *arg)
{
    fip_cq_sread_t *sread = arg;

    return fip_cq_readfrom(sread->cq_fid, sread->buf, sread->count,
                           sread->src_addr);
}

static ssize_t fip_cq_sread_idle(void *arg)
{
    fip_cq_t *cq = fip_cq_of(((fip_cq_sread_t*)arg)->cq_fid);

    if (cq->signaled) {
        cq->signaled = 0;
        return -FI_ECANCELED;
    }
    return ((cq->head == NULL) && (cq->err_head == NULL)) ? -FI_EAGAIN : 0;
}

static ssize_t fip_cq_sreadfrom(struct fid_cq *cq_fid, void *buf,
                                size_t count, fi_addr_t *src_addr,
                                const void *cond, int timeout_ms)
{
    fip_cq_t *cq         = fip_cq_of(cq_fid);
    int64_t deadline     = fip_wait_deadline(timeout_ms);
    fip_cq_sread_t sread = {cq_fid, buf, count, src_addr};
    ssize_t ret;

    if (cq->wait_obj == FI_WAIT_NONE) {
        return -FI_ENOSYS;
    }
    ret = fip_wait_loop(&cq->lock, &cq->cond, deadline, fip_cq_sread_look,
                        fip_cq_sread_idle, &sread);
    /* a read that found nothing in time answers -FI_EAGAIN */
    return (ret == -FI_ETIMEDOUT) ? -FI_EAGAIN : ret;
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
    return fip_prov_strerror(prov_errno, buf, len);
}

static int fip_cq_close(struct fid *fid)
{
    fip_cq_t *cq = fip_container_of(fid, fip_cq_t, cq_fid.fid);

    fip_op_t *op;

    if (__atomic_load_n(&cq->bound, __ATOMIC_ACQUIRE) != 0) {
        return -FI_EBUSY;
    }
    /* entries never read */
    while ((op = cq->head) != NULL) {
        cq->head = op->next;
        free(op);
    }
    while ((op = cq->err_head) != NULL) {
        cq->err_head = op->next;
        free(op);
    }
    fip_domain_child_remove(cq->domain);
    fip_wait_destroy(&cq->lock, &cq->cond);
    free(cq);
    return 0;
}

static struct fi_ops fip_cq_fi_ops = FIP_FI_OPS_CLOSE_ONLY(fip_cq_close);

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
    fip_cq_t *cq;
    int ret;

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
    case FI_CQ_FORMAT_TAGGED:
        break;
    default:
        return -FI_EINVAL;
    }
    ret = fip_wait_obj_check(attr->wait_obj);
    if (ret != 0) {
        return ret;
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
    fip_wait_init(&cq->lock, &cq->cond);

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
