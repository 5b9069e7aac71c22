/**
 * The context: one per UCP worker; its settings, caches and tables (made by
 * api/fiatomic_create.c, freed by fiatomic_context.c), the hooks of the
 * layers above the core, its lock for multi-threaded workers
 * (fiatomic_lock.c) and what it learns of UCX (fiatomic_ucx_compat.c).
 */
#ifndef FIATOMIC_CONTEXT_H_
#define FIATOMIC_CONTEXT_H_

#include "base/fiatomic_handle.h"
#include "base/fiatomic_int.h"
#include "core/fiatomic_region.h"

#include <pthread.h>

typedef struct fiatomic_deferred fiatomic_deferred_t;

/* The context's lock (fiatomic_lock.c), used only when the worker is
 * multi-threaded. */
typedef struct fiatomic_lock {
    pthread_mutex_t     mutex;
    uintptr_t           owner;        /* atomic: the holding thread, 0 */
    unsigned            depth;        /* recursion, the holder's */
    pthread_mutex_t     queue_lock;   /* leaf: guards the queue below */
    fiatomic_deferred_t *head;        /* callbacks that found it busy */
    fiatomic_deferred_t **tail;
    size_t              queued_bytes; /* copies of active messages queued */
    bool                pending;      /* atomic: the queue is not empty */
} fiatomic_lock_t;

/* The context's caches: objects kept for reuse, beyond these counts freed
 * (fiatomic_freelist_t). */
#define FIATOMIC_REQ_CACHE_MAX   1024 /* requests, fiatomic_request.c */
#define FIATOMIC_REPLY_CACHE_MAX 256  /* small replies,
                                         fiatomic_target_serve.c */
#define FIATOMIC_MSG_CACHE_MAX   256  /* target-side messages,
                                         fiatomic_target_send.c */
/* Idle peers of the target kept, least recently used out first
 * (fiatomic_lru_t; ~100 bytes each with their table slot,
 * fiatomic_target_serve.c). */
#define FIATOMIC_IDLE_PEERS_MAX  1024

/* What the core asks of the target-side strategy, which sits above it: the
 * table is plugged in by fiatomic_create() (api/fiatomic_create.c), so the
 * core never names the target side (target/fiatomic_target.h). */
typedef struct fiatomic_target_hooks {
    /** The context is freed: the target's and initiator's tables go. */
    void (*free)(fiatomic_h fia);
    /** Probe the target if a reply awaited on the ep is overdue. */
    void (*check_overdue)(fiatomic_ep_h ep);
    /** Fail every target-side message of the ep awaiting its reply. */
    void (*ep_fail)(fiatomic_ep_h ep, ucs_status_t status);
} fiatomic_target_hooks_t;

struct fiatomic_context {
    ucp_context_h       ucp_context;
    ucp_worker_h        worker;
    bool                mt;         /* the worker is UCS_THREAD_MODE_MULTI:
                                       every call takes `lock` */
    bool                free_pending; /* free when the lock is let go */
    fiatomic_lock_t     lock;
    uint64_t            messages_dropped; /* atomic: active messages that
                                             found the lock busy and the
                                             queue full */
    ucs_list_link_t     eps;        /* endpoints not destroyed (flush) */
    unsigned            num_cntrs;  /* counters open */
    size_t              max_count;
    size_t              max_inflight; /* operations in flight per ep */
    uint64_t            op_timeout_ns; /* every operation, flush, fence;
                                          UINT64_MAX: none */
    fiatomic_strategy_t forced;     /* NONE = auto */
    bool                cas_handoff; /* FIATOMIC_CAS_HANDOFF */
    /* What endpoints of this context can be (its UCP transports): for
     * fi_query_atomic, which cannot know the endpoint */
    bool                tl_cpu_amo; /* a transport with CPU atomics (shm,
                                       self): endpoints may be in the CPU
                                       domain with UCP's own atomic lanes */
    bool                tl_device;  /* a transport that may execute atomics
                                       in a device */
    bool                ucp_amo_peer_err_broken; /* UCP has no atomics on
                                       endpoints with the peer error mode
                                       (fiatomic_ucx_compat.c) */
    bool                ucp_sm_fetch_bitwise_broken; /* UCP's fetching
                                       AND/OR/XOR on shared memory and self
                                       are wrong (fiatomic_ucx_compat.c) */
    uint64_t            nonce;      /* random; in this context's keys */
    bool                onesided;   /* UCP's RMA and atomics may be used
                                       (not FIATOMIC_PARAM_FLAG_NO_ONESIDED) */
    unsigned            num_eps;    /* not yet freed (zombies included) */
    unsigned            num_mems;
    bool                destroyed;  /* fiatomic_destroy() was called: freed
                                       when the last endpoint drains */
    fiatomic_freelist_t free_reqs;  /* request cache: no malloc per op */
    /* target-side execution */
    bool                am_enabled; /* handlers registered (UCP_FEATURE_AM) */
    unsigned            am_id;      /* + FIATOMIC_WIRE_AM_* */
    fiatomic_regions_t  regions;    /* exposed to target-side requests */
    uint64_t            wide_locks[FIATOMIC_WIDE_LOCKS]; /* 32-byte
                                       elements of memory without a shared
                                       lock table (fiatomic_wide_lock.c) */
    fiatomic_freelist_t free_replies; /* small reply buffers (target) */
    unsigned            replies_inflight; /* replies UCP is still sending
                                             and requests it is receiving */
    struct kh_fiatomic_peers_s *peers; /* the target's peers by reply ep
                                          (fiatomic_target_serve.c) */
    fiatomic_lru_t      idle_peers; /* of them, those with nothing in
                                       UCP's hands (at most
                                       FIATOMIC_IDLE_PEERS_MAX) */
    uint64_t            requests_dropped; /* of peers past their bound */
    fiatomic_handle_table_t msgs;   /* in the initiator: target-side
                                       messages awaiting their reply, named
                                       by the id the reply echoes */
    fiatomic_freelist_t free_msgs;
    /* The layers above the core, plugged in by fiatomic_create() (last
     * here: the fields the post path reads keep their offsets) */
    const fiatomic_target_hooks_t *target; /* never NULL */
    const struct fiatomic_strategy_ops
                        *strategy_ops[FIATOMIC_STRATEGY_LAST]; /* by id;
                                       NULL for NONE */
};

/* fiatomic_lock.c: the context's lock (multi-threaded workers only) */
ucs_status_t fiatomic_lock_init(fiatomic_h fia);
void fiatomic_lock_cleanup(fiatomic_h fia);
void fiatomic_lock_acquire(fiatomic_h fia);
bool fiatomic_lock_try(fiatomic_h fia);
/** Runs the callbacks queued meanwhile and lets the lock go; true when the
 *  context's last user went away while it was held: free it now. */
bool fiatomic_lock_unlock(fiatomic_h fia);
/** fiatomic_lock_unlock(), and the context freed when it says so
 *  (fiatomic_context.c). */
void fiatomic_lock_release(fiatomic_h fia);

/** An API call: take the lock of a multi-threaded context. Returns whether
 *  it was taken (pass to fiatomic_leave: the context may be freed by the
 *  call in single-threaded mode, and is not looked at again then). */
static UCS_F_ALWAYS_INLINE bool fiatomic_enter(fiatomic_h fia)
{
    if (ucs_likely(!fia->mt)) {
        return false;
    }
    fiatomic_lock_acquire(fia);
    return true;
}

static UCS_F_ALWAYS_INLINE void fiatomic_leave(fiatomic_h fia, bool locked)
{
    if (ucs_unlikely(locked)) {
        fiatomic_lock_release(fia);
    }
}

/* fiatomic_lock_defer.c: UCP callbacks: true when this thread may run it
 * now (*locked: it holds the lock, release with fiatomic_leave); false when
 * another thread holds the lock: the call was queued for it, return at
 * once. */
bool fiatomic_cb_enter_send(fiatomic_h fia, ucp_send_nbx_callback_t fn,
                            void *request, ucs_status_t status,
                            void *user_data);
bool fiatomic_cb_enter_recv(fiatomic_h fia, ucp_am_recv_data_nbx_callback_t fn,
                            void *request, ucs_status_t status, size_t length,
                            void *user_data);
/** For an active message handler: when queued, *status_p is what the
 *  handler returns to UCP (UCS_INPROGRESS when UCP's data is kept). */
bool fiatomic_cb_enter_am(fiatomic_h fia, ucp_am_recv_callback_t fn,
                          void *arg, void *data, size_t length,
                          const ucp_am_recv_param_t *param,
                          ucs_status_t *status_p);

#define FIATOMIC_CB_ENTER_SEND(_fia, _fn, _request, _status, _user_data, \
                               _locked) \
    do { \
        (_locked) = (_fia)->mt; \
        if (ucs_unlikely(_locked) && \
            !fiatomic_cb_enter_send((_fia), (_fn), (_request), (_status), \
                                    (_user_data))) { \
            return; \
        } \
    } while (0)

/* fiatomic_context.c */
/** The last endpoint of a destroyed context drained: free the context. */
void fiatomic_context_release(fiatomic_h fia);
/** Free it now (nothing refers to it any more). */
void fiatomic_context_free(fiatomic_h fia);

/* fiatomic_atomicx_check.c: warn once when UCX_TLS names atomicx and it is
 * not loaded */
void fiatomic_check_atomicx_loaded(void);

/* fiatomic_ucx_compat.c: what UCP has no query for, UCX-version workarounds (the context's; the endpoint's are in fiatomic_ep.h) */
/** Which kinds of atomic lanes the context's transports can give. */
void fiatomic_ucx_context_detect_tls(fiatomic_h fia);
/** Whether UCP's atomics are missing on endpoints with the peer error
 *  mode (UCX version and protocol selection of the context). */
void fiatomic_ucx_context_detect_amo(fiatomic_h fia);

#endif
