/**
 * Counters (fi_cntr(3)): a success and an error count that the program
 * reads, adds to, sets and waits on. The provider's own, not libfiatomic's
 * per-endpoint counter: a libfabric counter is bound per direction
 * (FI_READ, FI_WRITE, ...) and counts RMA and messages too. Reads are
 * atomic loads without a lock; updates take the counter's lock and wake its
 * waiters. A wait sleeps in short slices so that, under manual progress,
 * it progresses the domain between them, and returns -FI_EAVAIL as soon as
 * the error count grew.
 */
#include "fip.h"

#include <errno.h>
#include <stdlib.h>

static uint64_t fip_cntr_read(struct fid_cntr *cntr_fid)
{
    fip_cntr_t *cntr = fip_container_of(cntr_fid, fip_cntr_t, cntr_fid);

    /* under manual progress reading is how the program drives it */
    fip_domain_progress(cntr->domain);
    return __atomic_load_n(&cntr->value, __ATOMIC_ACQUIRE);
}

static uint64_t fip_cntr_readerr(struct fid_cntr *cntr_fid)
{
    fip_cntr_t *cntr = fip_container_of(cntr_fid, fip_cntr_t, cntr_fid);

    return __atomic_load_n(&cntr->errors, __ATOMIC_ACQUIRE);
}

static void fip_cntr_update(fip_cntr_t *cntr, uint64_t *field, int add,
                            uint64_t value)
{
    pthread_mutex_lock(&cntr->lock);
    if (add) {
        __atomic_add_fetch(field, value, __ATOMIC_RELEASE);
    } else {
        __atomic_store_n(field, value, __ATOMIC_RELEASE);
    }
    pthread_cond_broadcast(&cntr->cond);
    pthread_mutex_unlock(&cntr->lock);
}

void fip_cntr_inc(fip_cntr_t *cntr, int error)
{
    fip_cntr_update(cntr, error ? &cntr->errors : &cntr->value, 1, 1);
}

static int fip_cntr_add(struct fid_cntr *cntr_fid, uint64_t value)
{
    fip_cntr_t *cntr = fip_container_of(cntr_fid, fip_cntr_t, cntr_fid);

    fip_cntr_update(cntr, &cntr->value, 1, value);
    return 0;
}

static int fip_cntr_set(struct fid_cntr *cntr_fid, uint64_t value)
{
    fip_cntr_t *cntr = fip_container_of(cntr_fid, fip_cntr_t, cntr_fid);

    fip_cntr_update(cntr, &cntr->value, 0, value);
    return 0;
}

static int fip_cntr_adderr(struct fid_cntr *cntr_fid, uint64_t value)
{
    fip_cntr_t *cntr = fip_container_of(cntr_fid, fip_cntr_t, cntr_fid);

    fip_cntr_update(cntr, &cntr->errors, 1, value);
    return 0;
}

static int fip_cntr_seterr(struct fid_cntr *cntr_fid, uint64_t value)
{
    fip_cntr_t *cntr = fip_container_of(cntr_fid, fip_cntr_t, cntr_fid);

    fip_cntr_update(cntr, &cntr->errors, 0, value);
    return 0;
}

static int fip_cntr_wait(struct fid_cntr *cntr_fid, uint64_t threshold,
                         int timeout_ms)
{
    fip_cntr_t *cntr  = fip_container_of(cntr_fid, fip_cntr_t, cntr_fid);
    uint64_t errors   = fip_cntr_readerr(cntr_fid);
    int64_t deadline  = fip_wait_deadline(timeout_ms);
    int ret           = 0;

    for (;;) {
        fip_domain_progress(cntr->domain);
        if (fip_cntr_readerr(cntr_fid) != errors) {
            return -FI_EAVAIL;
        }
        if (fip_cntr_read(cntr_fid) >= threshold) {
            return 0;
        }
        if (ret != 0) {
            return ret;
        }
        pthread_mutex_lock(&cntr->lock);
        /* an update between the looks above and here has broadcast
         * already: look again under the lock before sleeping */
        if ((__atomic_load_n(&cntr->value, __ATOMIC_ACQUIRE) < threshold) &&
            (__atomic_load_n(&cntr->errors, __ATOMIC_ACQUIRE) == errors)) {
            ret = fip_wait_slice(&cntr->lock, &cntr->cond, deadline);
        }
        pthread_mutex_unlock(&cntr->lock);
    }
}

static int fip_cntr_close(struct fid *fid)
{
    fip_cntr_t *cntr = fip_container_of(fid, fip_cntr_t, cntr_fid.fid);

    if (__atomic_load_n(&cntr->bound, __ATOMIC_ACQUIRE) != 0) {
        return -FI_EBUSY;
    }
    fip_domain_child_remove(cntr->domain);
    pthread_cond_destroy(&cntr->cond);
    pthread_mutex_destroy(&cntr->lock);
    free(cntr);
    return 0;
}

static struct fi_ops fip_cntr_fi_ops = {
    .size     = sizeof(struct fi_ops),
    .close    = fip_cntr_close,
    .bind     = fip_nosys_bind,
    .control  = fip_nosys_control,
    .ops_open = fip_nosys_ops_open,
    .tostr    = fip_nosys_tostr,
    .ops_set  = fip_nosys_ops_set
};

static struct fi_ops_cntr fip_cntr_ops = {
    .size    = sizeof(struct fi_ops_cntr),
    .read    = fip_cntr_read,
    .readerr = fip_cntr_readerr,
    .add     = fip_cntr_add,
    .set     = fip_cntr_set,
    .wait    = fip_cntr_wait,
    .adderr  = fip_cntr_adderr,
    .seterr  = fip_cntr_seterr
};

int fip_cntr_open(struct fid_domain *domain_fid, struct fi_cntr_attr *attr,
                  struct fid_cntr **cntr_p, void *context)
{
    fip_domain_t *domain = fip_container_of(domain_fid, fip_domain_t,
                                            domain_fid);
    fip_cntr_t *cntr;

    if (cntr_p == NULL) {
        return -FI_EINVAL;
    }
    if (attr != NULL) {
        if (attr->flags != 0) {
            return -FI_EINVAL;
        }
        if (attr->events != FI_CNTR_EVENTS_COMP) {
            return -FI_ENOSYS;
        }
        /* waits sleep on the counter's own condition variable */
        switch (attr->wait_obj) {
        case FI_WAIT_NONE:
        case FI_WAIT_UNSPEC:
        case FI_WAIT_MUTEX_COND:
        case FI_WAIT_YIELD:
            break;
        default:
            return -FI_ENOSYS;
        }
    }

    cntr = calloc(1, sizeof(*cntr));
    if (cntr == NULL) {
        return -FI_ENOMEM;
    }
    fip_wait_init(&cntr->lock, &cntr->cond);

    cntr->domain                = domain;
    cntr->cntr_fid.fid.fclass   = FI_CLASS_CNTR;
    cntr->cntr_fid.fid.context  = context;
    cntr->cntr_fid.fid.ops      = &fip_cntr_fi_ops;
    cntr->cntr_fid.ops          = &fip_cntr_ops;
    fip_domain_child_add(domain);
    *cntr_p = &cntr->cntr_fid;
    return 0;
}
