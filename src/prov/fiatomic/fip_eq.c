/**
 * Event queues (fi_eq(3)), opened on the fabric. The provider itself puts
 * no event there: address vector inserts complete before they return (no
 * FI_EVENT), registrations too, and FI_EP_RDM endpoints have no connection
 * events. What a queue holds is what the program wrote with fi_eq_write
 * (opened with FI_WRITE), at most its size and FIP_EQ_DATA_MAX bytes each,
 * so no peer can make it grow. fi_eq_read takes the oldest event (FI_PEEK
 * leaves it there), fi_eq_readerr finds no error event, fi_eq_sread waits
 * bounded by its timeout (fip_wait.c). Endpoints and address vectors bind
 * it (fip_eq_bind), and it cannot close while bound (-FI_EBUSY).
 */
#include "fip.h"

#include <stdlib.h>
#include <string.h>

/* one event the program wrote: its data follows */
struct fip_eq_event {
    fip_eq_event_t *next;
    uint32_t       event;
    size_t         len;
    uint8_t        data[];
};

static fip_eq_t *fip_eq_of(struct fid_eq *eq_fid)
{
    return fip_container_of(eq_fid, fip_eq_t, eq_fid);
}

int fip_eq_bind(fip_eq_t *eq, fip_fabric_t *fabric, uint64_t flags)
{
    /* fi_ep_bind and fi_av_bind take no flags for an event queue */
    if ((flags != 0) || (eq->fabric != fabric)) {
        return -FI_EINVAL;
    }
    __atomic_add_fetch(&eq->bound, 1, __ATOMIC_RELEASE);
    return 0;
}

void fip_eq_unbind(fip_eq_t *eq)
{
    __atomic_sub_fetch(&eq->bound, 1, __ATOMIC_RELEASE);
}

/* the oldest event into buf (under lock): its length, -FI_EAGAIN when
 * none, -FI_ETOOSMALL when it does not fit (it stays queued) */
static ssize_t fip_eq_take_locked(fip_eq_t *eq, uint32_t *event, void *buf,
                                  size_t len, uint64_t flags)
{
    fip_eq_event_t *ev = eq->head;

    if (ev == NULL) {
        return -FI_EAGAIN;
    }
    if (ev->len > len) {
        return -FI_ETOOSMALL;
    }
    *event = ev->event;
    if (ev->len > 0) {
        memcpy(buf, ev->data, ev->len);
    }
    if (flags & FI_PEEK) {
        return (ssize_t)ev->len;
    }
    eq->head = ev->next;
    if (eq->head == NULL) {
        eq->tail = NULL;
    }
    --eq->count;
    len = ev->len;
    free(ev);
    return (ssize_t)len;
}

static int fip_eq_read_args(uint32_t *event, void *buf, size_t len,
                            uint64_t flags)
{
    if ((event == NULL) || ((buf == NULL) && (len > 0)) ||
        (flags & ~(uint64_t)FI_PEEK)) {
        return -FI_EINVAL;
    }
    return 0;
}

static ssize_t fip_eq_read(struct fid_eq *eq_fid, uint32_t *event,
                           void *buf, size_t len, uint64_t flags)
{
    fip_eq_t *eq = fip_eq_of(eq_fid);
    ssize_t ret;

    ret = fip_eq_read_args(event, buf, len, flags);
    if (ret != 0) {
        return ret;
    }
    pthread_mutex_lock(&eq->lock);
    ret = fip_eq_take_locked(eq, event, buf, len, flags);
    pthread_mutex_unlock(&eq->lock);
    return ret;
}

static ssize_t fip_eq_readerr(struct fid_eq *eq_fid,
                              struct fi_eq_err_entry *buf, uint64_t flags)
{
    if ((buf == NULL) || (flags != 0)) {
        return -FI_EINVAL;
    }
    /* the provider reports no asynchronous error, and fi_eq_write queues
     * no error event */
    return -FI_EAGAIN;
}

static ssize_t fip_eq_write(struct fid_eq *eq_fid, uint32_t event,
                            const void *buf, size_t len, uint64_t flags)
{
    fip_eq_t *eq = fip_eq_of(eq_fid);
    fip_eq_event_t *ev;

    /* fi_eq(3): without FI_WRITE at open the program may not write */
    if (!(eq->flags & FI_WRITE) || (flags != 0) ||
        ((buf == NULL) && (len > 0)) || (len > FIP_EQ_DATA_MAX)) {
        return -FI_EINVAL;
    }
    ev = malloc(sizeof(*ev) + len);
    if (ev == NULL) {
        return -FI_ENOMEM;
    }
    ev->next  = NULL;
    ev->event = event;
    ev->len   = len;
    if (len > 0) {
        memcpy(ev->data, buf, len);
    }

    pthread_mutex_lock(&eq->lock);
    if (eq->count >= eq->size) {
        /* full: nothing is lost, the program reads and writes again */
        pthread_mutex_unlock(&eq->lock);
        free(ev);
        return -FI_EAGAIN;
    }
    if (eq->tail == NULL) {
        eq->head = ev;
    } else {
        eq->tail->next = ev;
    }
    eq->tail = ev;
    ++eq->count;
    pthread_cond_broadcast(&eq->cond);
    pthread_mutex_unlock(&eq->lock);
    return (ssize_t)len;
}

/* what fi_eq_sread's looks read into */
typedef struct {
    fip_eq_t *eq;
    uint32_t *event;
    void     *buf;
    size_t   len;
    uint64_t flags;
} fip_eq_sread_t;

static ssize_t fip_eq_sread_look(void *arg)
{
    fip_eq_sread_t *sread = arg;
    ssize_t ret;

    /* no progress to drive: only the program's writes fill the queue */
    pthread_mutex_lock(&sread->eq->lock);
    ret = fip_eq_take_locked(sread->eq, sread->event, sread->buf, sread->len,
                             sread->flags);
    pthread_mutex_unlock(&sread->eq->lock);
    return ret;
}

static ssize_t fip_eq_sread_idle(void *arg)
{
    return (((fip_eq_sread_t*)arg)->eq->head == NULL) ? -FI_EAGAIN : 0;
}

static ssize_t fip_eq_sread(struct fid_eq *eq_fid, uint32_t *event,
                            void *buf, size_t len, int timeout_ms,
                            uint64_t flags)
{
    fip_eq_t *eq         = fip_eq_of(eq_fid);
    int64_t deadline     = fip_wait_deadline(timeout_ms);
    fip_eq_sread_t sread = {eq, event, buf, len, flags};
    ssize_t ret;

    if (eq->wait_obj == FI_WAIT_NONE) {
        return -FI_ENOSYS;
    }
    ret = fip_eq_read_args(event, buf, len, flags);
    if (ret != 0) {
        return ret;
    }
    ret = fip_wait_loop(&eq->lock, &eq->cond, deadline, fip_eq_sread_look,
                        fip_eq_sread_idle, &sread);
    /* a read that found nothing in time answers -FI_EAGAIN */
    return (ret == -FI_ETIMEDOUT) ? -FI_EAGAIN : ret;
}

static const char *fip_eq_strerror(struct fid_eq *eq_fid, int prov_errno,
                                   const void *err_data, char *buf,
                                   size_t len)
{
    return fip_prov_strerror(prov_errno, buf, len);
}

static int fip_eq_close(struct fid *fid)
{
    fip_eq_t *eq = fip_container_of(fid, fip_eq_t, eq_fid.fid);
    fip_eq_event_t *ev;

    if (__atomic_load_n(&eq->bound, __ATOMIC_ACQUIRE) != 0) {
        return -FI_EBUSY;
    }
    /* events never read are lost (fi_eq(3)) */
    while ((ev = eq->head) != NULL) {
        eq->head = ev->next;
        free(ev);
    }
    pthread_mutex_lock(&eq->fabric->lock);
    --eq->fabric->eqs;
    pthread_mutex_unlock(&eq->fabric->lock);
    fip_wait_destroy(&eq->lock, &eq->cond);
    free(eq);
    return 0;
}

static struct fi_ops fip_eq_fi_ops = FIP_FI_OPS_CLOSE_ONLY(fip_eq_close);

static struct fi_ops_eq fip_eq_ops = {
    .size     = sizeof(struct fi_ops_eq),
    .read     = fip_eq_read,
    .readerr  = fip_eq_readerr,
    .write    = fip_eq_write,
    .sread    = fip_eq_sread,
    .strerror = fip_eq_strerror
};

int fip_eq_open(struct fid_fabric *fabric_fid, struct fi_eq_attr *attr,
                struct fid_eq **eq_p, void *context)
{
    fip_fabric_t *fabric = fip_container_of(fabric_fid, fip_fabric_t,
                                            fabric_fid);
    fip_eq_t *eq;
    int ret;

    if ((attr == NULL) || (eq_p == NULL)) {
        return -FI_EINVAL;
    }
    /* FI_AFFINITY's signaling_vector is a hint the provider may ignore */
    if (attr->flags & ~(uint64_t)(FI_WRITE | FI_AFFINITY)) {
        return -FI_EINVAL;
    }
    ret = fip_wait_obj_check(attr->wait_obj);
    if (ret != 0) {
        return ret;
    }
    if (attr->size > FIP_EQ_MAX) {
        return -FI_EINVAL;
    }

    eq = calloc(1, sizeof(*eq));
    if (eq == NULL) {
        return -FI_ENOMEM;
    }
    fip_wait_init(&eq->lock, &eq->cond);

    eq->fabric   = fabric;
    eq->wait_obj = attr->wait_obj;
    eq->flags    = attr->flags;
    /* size 0: the provider's choice (fi_pingpong opens with a zeroed
     * size) */
    eq->size     = (attr->size != 0) ? attr->size : FIP_EQ_DEFAULT_SIZE;
    eq->eq_fid.fid.fclass  = FI_CLASS_EQ;
    eq->eq_fid.fid.context = context;
    eq->eq_fid.fid.ops     = &fip_eq_fi_ops;
    eq->eq_fid.ops         = &fip_eq_ops;
    pthread_mutex_lock(&fabric->lock);
    ++fabric->eqs;
    pthread_mutex_unlock(&fabric->lock);
    *eq_p = &eq->eq_fid;
    return 0;
}
