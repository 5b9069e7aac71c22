/**
 * Completion counters (fi_cntr): objects of a context that endpoints are
 * bound to and count their operations into (fiatomic_cntr_count() in
 * fiatomic_ep.h, called where operations complete; a freed endpoint lets go
 * of its counter in fiatomic_ep.c). Reading is an atomic load; waiting
 * progresses the worker and looks at what is overdue across the context
 * (fiatomic_context_overdue.c).
 */
#include "core/fiatomic_ep.h"

#include <stdlib.h>
#include <time.h>

static uint64_t fiatomic_cntr_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

FIATOMIC_API ucs_status_t fiatomic_cntr_open(fiatomic_h fia,
                                             fiatomic_cntr_h *cntr_p)
{
    fiatomic_cntr_h cntr;
    bool locked;

    if ((fia == NULL) || (cntr_p == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }

    cntr = calloc(1, sizeof(*cntr));
    if (cntr == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    cntr->fia = fia;
    locked    = fiatomic_enter(fia);
    ++fia->num_cntrs;
    fiatomic_leave(fia, locked);
    *cntr_p = cntr;
    return UCS_OK;
}

FIATOMIC_API ucs_status_t fiatomic_cntr_close(fiatomic_cntr_h cntr)
{
    fiatomic_h fia;
    bool locked, busy;

    if (cntr == NULL) {
        return UCS_ERR_INVALID_PARAM;
    }

    fia    = cntr->fia;
    locked = fiatomic_enter(fia);
    busy   = (cntr->bound > 0);
    if (!busy) {
        --fia->num_cntrs;
    }
    fiatomic_leave(fia, locked);
    if (busy) {
        return UCS_ERR_BUSY;
    }
    free(cntr);
    return UCS_OK;
}

static ucs_status_t fiatomic_ep_bind_cntr_locked(fiatomic_ep_h ep,
                                                 fiatomic_cntr_h cntr)
{
    if (ep->destroyed || ((cntr != NULL) && (cntr->fia != ep->fia))) {
        return UCS_ERR_INVALID_PARAM;
    }

    if (cntr == ep->cntr) {
        return UCS_OK;
    }

    /* every operation counts into the counter bound when it was posted */
    if (ep->ops_inflight > 0) { /* deferred ones included */
        return UCS_ERR_BUSY;
    }

    if (ep->cntr != NULL) {
        --ep->cntr->bound;
    }
    ep->cntr = cntr;
    if (cntr != NULL) {
        ++cntr->bound;
    }
    return UCS_OK;
}

FIATOMIC_API ucs_status_t fiatomic_ep_bind_cntr(fiatomic_ep_h ep,
                                                fiatomic_cntr_h cntr)
{
    ucs_status_t status;
    bool locked;

    if (ep == NULL) {
        return UCS_ERR_INVALID_PARAM;
    }

    locked = fiatomic_enter(ep->fia);
    status = fiatomic_ep_bind_cntr_locked(ep, cntr);
    fiatomic_leave(ep->fia, locked);
    return status;
}

FIATOMIC_API uint64_t fiatomic_cntr_read(fiatomic_cntr_h cntr)
{
    return (cntr != NULL) ? __atomic_load_n(&cntr->value, __ATOMIC_ACQUIRE) :
                            0;
}

FIATOMIC_API uint64_t fiatomic_cntr_readerr(fiatomic_cntr_h cntr)
{
    return (cntr != NULL) ? __atomic_load_n(&cntr->errors, __ATOMIC_ACQUIRE) :
                            0;
}

/* Overdue target-side operations are looked at this often while waiting
 * (they are also looked at when their replies or probes complete). */
#define FIATOMIC_CNTR_WAIT_CHECK_EVERY 64

FIATOMIC_API int fiatomic_cntr_wait(fiatomic_cntr_h cntr, uint64_t threshold,
                                    int timeout_ms)
{
    uint64_t deadline = 0;
    uint64_t errors;
    unsigned spins;
    fiatomic_h fia;
    bool locked;

    if (cntr == NULL) {
        return -FI_EINVAL;
    }

    fia    = cntr->fia;
    errors = fiatomic_cntr_readerr(cntr);
    if (timeout_ms >= 0) {
        deadline = fiatomic_cntr_now_ns() + (uint64_t)timeout_ms * 1000000ull;
    }

    for (spins = 0;; ++spins) {
        if (fiatomic_cntr_read(cntr) >= threshold) {
            return 0;
        }
        if (fiatomic_cntr_readerr(cntr) != errors) {
            return -FI_EAVAIL;
        }
        if ((timeout_ms >= 0) && (spins > 0) &&
            (fiatomic_cntr_now_ns() >= deadline)) {
            return -FI_ETIMEDOUT;
        }

        /* not holding the context's lock: UCP's callbacks take it */
        ucp_worker_progress(fia->worker);
        if ((spins % FIATOMIC_CNTR_WAIT_CHECK_EVERY) ==
            (FIATOMIC_CNTR_WAIT_CHECK_EVERY - 1)) {
            locked = fiatomic_enter(fia);
            fiatomic_ctx_check_overdue(fia);
            fiatomic_leave(fia, locked);
        }
    }
}
