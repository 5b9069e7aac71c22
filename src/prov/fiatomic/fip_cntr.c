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

/* what fi_cntr_wait waits for */
typedef struct {
    fip_cntr_t *cntr;
    uint64_t   threshold;
    uint64_t   errors;     /* the error count when the wait began */
} fip_cntr_wait_t;

static ssize_t fip_cntr_wait_look(void *arg)
{
    fip_cntr_wait_t *wait = arg;
    struct fid_cntr *fid  = &wait->cntr->cntr_fid;

    fip_domain_progress(wait->cntr->domain);
    if (fip_cntr_readerr(fid) != wait->errors) {
        return -FI_EAVAIL;
    }
    return (fip_cntr_read(fid) >= wait->threshold) ? 0 : -FI_EAGAIN;
}

static ssize_t fip_cntr_wait_idle(void *arg)
{
    fip_cntr_wait_t *wait = arg;

    return ((__atomic_load_n(&wait->cntr->value, __ATOMIC_ACQUIRE) <
             wait->threshold) &&
            (__atomic_load_n(&wait->cntr->errors, __ATOMIC_ACQUIRE) ==
             wait->errors)) ? -FI_EAGAIN : 0;
}

static int fip_cntr_wait(struct fid_cntr *cntr_fid, uint64_t threshold,
                         int timeout_ms)
{
    fip_cntr_t *cntr     = fip_container_of(cntr_fid, fip_cntr_t, cntr_fid);
    fip_cntr_wait_t wait = {cntr, threshold, fip_cntr_readerr(cntr_fid)};
    int64_t deadline     = fip_wait_deadline(timeout_ms);

    return (int)fip_wait_loop(&cntr->lock, &cntr->cond, deadline,
                              fip_cntr_wait_look, fip_cntr_wait_idle, &wait);
}

static int fip_cntr_close(struct fid *fid)
{
    fip_cntr_t *cntr = fip_container_of(fid, fip_cntr_t, cntr_fid.fid);

    if (__atomic_load_n(&cntr->bound, __ATOMIC_ACQUIRE) != 0) {
        return -FI_EBUSY;
    }
    fip_domain_child_remove(cntr->domain);
    fip_wait_destroy(&cntr->lock, &cntr->cond);
    free(cntr);
    return 0;
}

static struct fi_ops fip_cntr_fi_ops = FIP_FI_OPS_CLOSE_ONLY(fip_cntr_close);

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
        /* waits sleep on the counter's own condition variable; a counter
         * answers -FI_ENOSYS for any other value */
        if (fip_wait_obj_check(attr->wait_obj) != 0) {
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
