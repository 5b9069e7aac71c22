/**
 * Initiator endpoints: lifecycle, fences and the completion of requests
 * (fiatomic_ep.c), flushes (fiatomic_flush.c), same-address ordering
 * (fiatomic_order.c), the operation timeout (fiatomic_ep_timeout.c), the
 * counters they count into (fiatomic_cntr.c), and the state each strategy
 * keeps on them.
 */
#ifndef FIATOMIC_EP_H_
#define FIATOMIC_EP_H_

#include "core/fiatomic_context.h"

#include <time.h>

typedef enum {
    FIATOMIC_DOMAIN_CPU,    /* UCP's atomics are CPU atomics (shm, self, or
                               software atomics executed by the target) */
    FIATOMIC_DOMAIN_DEVICE  /* UCP's atomics are executed by a device */
} fiatomic_domain_t;

/* Completion counters (fiatomic_cntr.c). Written with the context's lock
 * held (or by its only thread), read by anyone without it. */
struct fiatomic_cntr {
    fiatomic_h fia;
    uint64_t   value;    /* atomic: operations completed successfully */
    uint64_t   errors;   /* atomic: operations completed with an error */
    unsigned   bound;    /* endpoints (zombies included) counting into it */
};

/*
 * The state of an endpoint that belongs to one strategy: only that
 * strategy's file changes it, except where noted.
 */

/* native (fiatomic_exec_native.c) */
typedef struct fiatomic_ep_native {
    bool     unflushed;  /* posts completed locally only: a fence or flush
                            flushes the UCP endpoint first (fiatomic_ep.c
                            clears it then; fiatomic_flush.c sets it for the
                            flush before the first software atomic) */
} fiatomic_ep_native_t;

/* target-side (fiatomic_target_send.c) */
typedef struct fiatomic_ep_target {
    ucs_list_link_t am_pending;     /* messages awaiting a reply, oldest
                                       first */
    bool            probe_inflight; /* liveness probe of the target */
} fiatomic_ep_target_t;

/* CAS loop (fiatomic_exec_cas.c) */
#define FIATOMIC_GUESS_SLOTS 256  /* CAS-loop guesses per endpoint */
typedef struct fiatomic_ep_cas {
    uint64_t attempts;  /* counters, read by fiatomic_ep_query */
    uint64_t retries;
    uint64_t handoffs;
    struct {
        uint64_t word_addr;
        uint64_t value;
        unsigned word_size;
        unsigned contended; /* elements on the word that still go to the
                               target at once */
    }        guess[FIATOMIC_GUESS_SLOTS]; /* last value seen per word, the
                                             first CAS's expectation */
} fiatomic_ep_cas_t;

struct fiatomic_ep {
    fiatomic_h        fia;
    ucs_list_link_t   list;            /* in fia->eps while not destroyed */
    fiatomic_cntr_h   cntr;            /* bound counter, or NULL */
    ucp_ep_h          ucp_ep;
    unsigned          flags;           /* FIATOMIC_EP_FLAG_* */
    fiatomic_domain_t domain;
    bool              needs_progress;  /* UCP's atomics need target CPU */
    bool              sm_amo;          /* an amo lane is a shared-memory or
                                          self transport (uct_sm) */
    bool              ucp_amo_ok;      /* UCP executes atomics on it */
    bool              destroyed;       /* user destroyed it; zombie until
                                          in-flight UCP operations drain */
    bool              closed;          /* destroyed, or failed: every call
                                          fails at once (the one flag the
                                          fast paths test) */
    ucs_status_t      failed;          /* UCS_OK, or why it failed (a UCP
                                          operation or barrier overdue,
                                          fiatomic_ep_timeout.c) */
    unsigned          polls;           /* fiatomic_request_check_status
                                          calls, for FIATOMIC_EP_CHECK_EVERY */
    fiatomic_ep_native_t native;       /* fiatomic_exec_native.c */
    bool              wireup_flushed;  /* the flush before the first
                                          software atomic was asked for */
    fiatomic_handle_table_t keys;      /* fiatomic_key.c: the user's
                                          uint64_t key is a handle */
    ucs_status_t      flush_status;    /* of the last ucp flush */
    unsigned          inflight;        /* elements with UCP ops in flight */
    size_t            ops_inflight;    /* operation requests posted and not
                                          completed (back-pressure) */
    unsigned          outstanding;     /* started, not completed requests */
    ucs_list_link_t   outstanding_list;
    ucs_list_link_t   deferred;        /* behind a fence or a flush */
    bool              flushing;        /* a ucp flush for a fence or a
                                          flush request is running */
    uint64_t          msg_order;       /* FI_ORDER_ATOMIC_* asked for */
    unsigned          deferred_barriers; /* fences and flushes deferred */
    bool              progressing;     /* in fiatomic_ep_progress_deferred */
    bool              progress_again;  /* ... and called again meanwhile */
    ucs_status_t      silent_error;    /* first error of an operation that
                                          reports no completion; the next
                                          flush returns it */
    fiatomic_ep_target_t target;       /* fiatomic_target_send.c */
    fiatomic_ep_cas_t cas;             /* fiatomic_exec_cas.c */
};

/* fiatomic_cntr.c */
/** Count one operation of the endpoint that completed with `status`. */
static inline void fiatomic_cntr_count(fiatomic_ep_h ep, ucs_status_t status)
{
    fiatomic_cntr_h cntr = ep->cntr;
    uint64_t *word;

    if (cntr == NULL) {
        return;
    }
    /* one writer at a time (the lock, or the only thread): no locked
     * instruction on the fast path; readers load atomically */
    word = (status == UCS_OK) ? &cntr->value : &cntr->errors;
    __atomic_store_n(word, __atomic_load_n(word, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELEASE);
}

/* fiatomic_ep.c: the path of a request, and its completion */
/** Start a request now, or defer it behind a fence/flush (complete it at
 *  once with the failure on a failed endpoint). */
void fiatomic_ep_submit(fiatomic_ep_h ep, fiatomic_req_t *req);
/** A started request completed: drives fences, flushes and zombie eps. */
void fiatomic_ep_req_done(fiatomic_ep_h ep, fiatomic_req_t *req);
/** Report a request's completion (req->status) to whoever owns it. */
void fiatomic_req_complete(fiatomic_req_t *req);
void fiatomic_ep_inflight_add(fiatomic_ep_h ep);
void fiatomic_ep_inflight_remove(fiatomic_ep_h ep);
/** An endpoint flush of a context flush completed. */
void fiatomic_ctx_flush_child_done(fiatomic_req_t *child);
/** A context flush's count of children still flushing drops by one (the
 *  last one completes it). */
void fiatomic_ctx_flush_finish(fiatomic_req_t *parent);

/* fiatomic_flush.c */
/** Flush the endpoint once before its first software atomic (UCX 1.13.1's
 *  tcp wireup); later posts wait behind it. */
ucs_status_t fiatomic_ep_wireup_flush(fiatomic_ep_h ep);

/* fiatomic_order.c */
/** Record what ordering needs to know of a laid-out request. */
void fiatomic_order_prepare(fiatomic_req_t *req);
/** An earlier operation on the endpoint, started or waiting, that the
 *  request overlaps in a way the endpoint orders has not completed. */
bool fiatomic_order_must_wait(fiatomic_ep_h ep, const fiatomic_req_t *req);

/* fiatomic_ep_timeout.c: the operation timeout of UCP's own operations */
/** Monotonic nanoseconds, a few milliseconds coarse: for timeouts. */
static inline uint64_t fiatomic_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}
/* Polls of a request between two looks at its endpoint's timeout */
#define FIATOMIC_EP_CHECK_EVERY 64
/** Time out what the endpoint waits for: target-side messages
 *  (fiatomic_target_check_overdue), and an operation with a UCP atomic in
 *  flight or a barrier waiting for UCP longer than the operation timeout,
 *  which fails the endpoint (fiatomic_ep_fail). */
void fiatomic_ep_check_overdue(fiatomic_ep_h ep);
/** The endpoint fails with `status`: everything waiting or in flight on it
 *  is reported now, exactly once; UCP's operations still in flight keep
 *  their requests until UCP hands them back; every later call fails. */
void fiatomic_ep_fail(fiatomic_ep_h ep, ucs_status_t status);

/* fiatomic_context_overdue.c */
/** Probe the targets of every endpoint whose replies are overdue. */
void fiatomic_ctx_check_overdue(fiatomic_h fia);

/* fiatomic_ucx_compat.c: the endpoint's lanes and UCX-version workarounds */
/** The atomicity domain of the ep's atomic lanes, whether its atomics need
 *  the target's progress and whether a lane is shared memory or self. */
void fiatomic_ucx_ep_detect_lanes(fiatomic_ep_h ep);
/** UCP's atomic op (fetching or not) is missing or gives wrong results on
 *  this ep's lanes with this UCX: not to be used. */
bool fiatomic_ucx_amo_broken(fiatomic_ep_h ep, ucp_atomic_op_t op,
                             bool fetch);

#endif
