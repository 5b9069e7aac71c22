/**
 * libfiatomic: libfabric's remote atomic matrix (fi_atomic(3)) executed over
 * UCP, with a UCP-style non-blocking interface.
 *
 * Enum values (enum fi_op, enum fi_datatype), structures (struct fi_ioc,
 * struct fi_rma_ioc, struct fi_msg_atomic, struct fi_atomic_attr) and flag bits
 * (FI_INJECT, FI_FENCE, ...) are libfabric's own, from <rdma/fi_atomic.h>, so
 * libfabric code ports by renaming calls. libfabric itself is not linked.
 *
 * Return conventions, as in UCP:
 *  - functions returning ucs_status_t return UCS_OK or a negative status;
 *  - operations return ucs_status_ptr_t: NULL when complete, an error pointer
 *    (UCS_PTR_IS_ERR / UCS_PTR_STATUS), or a request. A request is completed
 *    by ucp_worker_progress() on the worker the fiatomic context is bound to;
 *    test it with fiatomic_request_check_status() and release it with
 *    fiatomic_request_free() (which may be called before completion: the
 *    operation then finishes in the background, as with ucp_request_free()).
 *  - fiatomic_status_to_fi_errno() converts a status to -FI_E*.
 *
 * Fetched values (result buffers) are valid when completion is reported.
 * Atomicity is per element, never across an array (fi_atomic(3)).
 *
 * Threads (UCP's own rule): a context follows the thread mode of its UCP
 * worker, which fiatomic_create() reads with ucp_worker_query().
 *  - UCS_THREAD_MODE_SINGLE or SERIALIZED: the context, its endpoints,
 *    memory, counters and requests are used by one thread at a time, the
 *    one that progresses the worker. No lock is taken anywhere.
 *  - UCS_THREAD_MODE_MULTI: every call marked "Thread-safe" may be made
 *    from any number of threads at once, on the same or different
 *    endpoints, concurrently with ucp_worker_progress() in other threads.
 *    Calls on one context are serialised by a lock of the context (one
 *    thread at a time inside the library; UCP's own work is not).
 *    Thread-safe: the operation calls (fiatomic_atomic_nbx ...
 *    fiatomic_compare_atomicmsg_nbx, fiatomic_inject_atomic),
 *    fiatomic_ep_flush_nbx, fiatomic_flush_nbx,
 *    fiatomic_request_check_status, fiatomic_request_free,
 *    fiatomic_ep_create, fiatomic_ep_query, fiatomic_rkey_unpack,
 *    fiatomic_mem_expose, fiatomic_mem_query, fiatomic_mem_pack_key,
 *    fiatomic_key_release, fiatomic_cntr_open, fiatomic_ep_bind_cntr,
 *    fiatomic_cntr_read, fiatomic_cntr_readerr, fiatomic_cntr_wait, the
 *    queries (fiatomic_query_atomic, fiatomic_*atomicvalid,
 *    fiatomic_query_cell) and the name and status conversions.
 *    Thread-safe, but ending an object (as free()): fiatomic_ep_destroy,
 *    fiatomic_rkey_release, fiatomic_mem_unexpose, fiatomic_cntr_close
 *    must not race with another thread's calls on that endpoint, key,
 *    memory or counter; fiatomic_request_free likewise for its request.
 *    Not thread-safe: fiatomic_create (nothing to share yet) and
 *    fiatomic_destroy (no other call on the context may be running or
 *    follow).
 * Completion callbacks: with a multi-threaded worker, a callback runs in a
 * thread that progresses the worker or, when another thread is inside the
 * library at that moment, in that thread before its call returns; never
 * two callbacks of one context at once. A callback may post operations,
 * flush, check and free requests and read counters (the lock is
 * recursive); it must not call ucp_worker_progress() (UCP's rule),
 * fiatomic_cntr_wait(), fiatomic_destroy() or fiatomic_ep_destroy(), nor
 * wait for another thread.
 */
#ifndef FIATOMIC_H_
#define FIATOMIC_H_

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_errno.h>
#include <ucp/api/ucp.h>

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FIATOMIC_VERSION_STRING "0.1.0"

/** Per-worker context: thread-safe when its worker is UCS_THREAD_MODE_MULTI
 *  (see "Threads" above), else used by one thread at a time. */
typedef struct fiatomic_context *fiatomic_h;
/** Initiator endpoint: a ucp_ep_h plus its keys and outstanding operations. */
typedef struct fiatomic_ep      *fiatomic_ep_h;
/** Memory this process exposes to remote atomics (target side). */
typedef struct fiatomic_mem     *fiatomic_mem_h;
/** Completion and error counters of operations (fi_cntr). */
typedef struct fiatomic_cntr    *fiatomic_cntr_h;


/**
 * Execution strategy of one (family, op, datatype) cell on one endpoint/key.
 * The environment variable FIATOMIC_STRATEGY=auto|native|cas|direct|target
 * forces one (for tests and benchmarks); a cell the forced strategy cannot
 * execute atomically is reported unsupported and fails with -FI_EOPNOTSUPP.
 *
 * Atomicity domains (fi_atomic(3): one actor per target memory): native and
 * cas are in UCP's own domain (CPU or device); direct and target are CPU
 * atomics, used for 1..8-byte elements only when UCP's atomics on that
 * memory are CPU atomics too. 16- and 32-byte elements cannot be reached by
 * UCP atomics at all and always take direct or target.
 */
typedef enum fiatomic_strategy {
    FIATOMIC_STRATEGY_NONE   = 0, /**< cell not supported */
    FIATOMIC_STRATEGY_NATIVE = 1, /**< one ucp_atomic_op_nbx per element */
    FIATOMIC_STRATEGY_CAS    = 2, /**< UCP compare-and-swap loop */
    FIATOMIC_STRATEGY_DIRECT = 3, /**< CPU atomics in place, through
                                       ucp_rkey_ptr() (shared memory) */
    FIATOMIC_STRATEGY_TARGET = 4, /**< an active message; the target's CPU
                                       executes it and replies (1 round
                                       trip, needs target progress) */
    FIATOMIC_STRATEGY_LAST
} fiatomic_strategy_t;

/** Which family of calls a cell belongs to; FI_FETCH_ATOMIC/FI_COMPARE_ATOMIC
 *  as query flags map to these. */
typedef enum fiatomic_family {
    FIATOMIC_FAMILY_BASE    = 0, /**< fi_atomic: no result */
    FIATOMIC_FAMILY_FETCH   = 1, /**< fi_fetch_atomic: initial value returned */
    FIATOMIC_FAMILY_COMPARE = 2, /**< fi_compare_atomic: initial value returned */
    FIATOMIC_FAMILY_LAST
} fiatomic_family_t;


/* ------------------------------------------------------------------------ */
/* Context                                                                   */

enum fiatomic_params_field {
    FIATOMIC_PARAM_FIELD_MAX_COUNT    = UCS_BIT(0), /**< max_count field */
    FIATOMIC_PARAM_FIELD_AM_ID        = UCS_BIT(1), /**< am_id field */
    FIATOMIC_PARAM_FIELD_MAX_INFLIGHT = UCS_BIT(2), /**< max_inflight field */
    FIATOMIC_PARAM_FIELD_OP_TIMEOUT   = UCS_BIT(3), /**< op_timeout field */
    FIATOMIC_PARAM_FIELD_FLAGS        = UCS_BIT(4)  /**< flags field */
};

enum fiatomic_params_flags {
    /** The UCP context was created without UCP_FEATURE_RMA, AMO32 and
     *  AMO64 (UCP has no query for a context's features): the context never
     *  calls UCP's RMA or atomics (no native or CAS-loop strategy), memory
     *  it exposes is not registered with UCP unless ALLOCATE asks it (then
     *  only for peers that map it: the direct strategy), and its keys tell
     *  initiators to send it no UCP atomics either. Every cell executes
     *  target-side or direct. Needs UCP_FEATURE_AM. */
    FIATOMIC_PARAM_FLAG_NO_ONESIDED = UCS_BIT(0)
};

typedef struct fiatomic_params {
    uint64_t field_mask;  /**< FIATOMIC_PARAM_FIELD_* */
    size_t   max_count;   /**< elements per call, 1..FIATOMIC_MAX_COUNT_LIMIT
                               (else UCS_ERR_INVALID_PARAM); default 4096 */
    unsigned am_id;       /**< active message ids am_id and am_id + 1 are
                               fiatomic's (target-side execution); default
                               FIATOMIC_AM_ID_DEFAULT. Same on all peers. */
    size_t   max_inflight; /**< operations (calls) in flight per endpoint,
                               1..FIATOMIC_MAX_INFLIGHT_LIMIT (else
                               UCS_ERR_INVALID_PARAM); default
                               FIATOMIC_MAX_INFLIGHT_DEFAULT. A call beyond
                               it returns UCS_ERR_NO_RESOURCE (-FI_EAGAIN
                               through fiatomic_status_to_fi_errno) and
                               sends nothing; it succeeds again once
                               ucp_worker_progress() has completed some. */
    double   op_timeout;  /**< seconds an operation of any strategy, a
                               flush or a fence waits for its target before
                               it completes with UCS_ERR_TIMED_OUT (> 0,
                               INFINITY for none,
                               else UCS_ERR_INVALID_PARAM). Default: the
                               environment variable FIATOMIC_OP_TIMEOUT
                               ("2.5", "500ms", "inf"), else
                               FIATOMIC_OP_TIMEOUT_DEFAULT. A timed-out
                               operation's outcome is unknown: the target
                               may have executed it, or may still (a
                               stopped target that resumes). A target-side
                               operation times out alone; UCP's own
                               operations (native, cas, flushes) cannot be
                               cancelled: their timeout fails the endpoint
                               (every later call on it fails at once,
                               fiatomic(3)). The timeout is checked
                               whenever the library is called (posting,
                               fiatomic_request_check_status, flush,
                               fiatomic_cntr_wait) and when replies or
                               liveness probes complete in
                               ucp_worker_progress(). */
    unsigned flags;       /**< FIATOMIC_PARAM_FLAG_*; default 0 */
} fiatomic_params_t;

#define FIATOMIC_MAX_COUNT_DEFAULT    4096
#define FIATOMIC_MAX_COUNT_LIMIT      (1u << 20)
#define FIATOMIC_MAX_INFLIGHT_DEFAULT 1024
#define FIATOMIC_MAX_INFLIGHT_LIMIT   (1u << 20)
#define FIATOMIC_AM_ID_DEFAULT     1008
#define FIATOMIC_OP_TIMEOUT_DEFAULT 30.0 /* seconds */

/**
 * Bind a fiatomic context to a UCP worker. The UCP context must have been
 * created with UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64 and UCP_FEATURE_RMA,
 * or with UCP_FEATURE_AM alone and FIATOMIC_PARAM_FLAG_NO_ONESIDED (UCP's
 * software RMA and atomics, which such features register on every
 * active-message lane, reach any address of the process: without them only
 * the validated target-side execution and shared memory reach it); with
 * UCP_FEATURE_AM too, the context executes target-side requests for the
 * memory it exposes and can send them (16/32-byte datatypes need this, and
 * over transports whose atomics are software atomics, such as tcp, it makes
 * every emulated cell one round trip).
 */
ucs_status_t fiatomic_create(ucp_context_h context, ucp_worker_h worker,
                             const fiatomic_params_t *params,
                             fiatomic_h *fia_p);

/** Destroy a context; release its endpoints and exposed memory first. If
 *  UCP still holds operations of its endpoints (a dead peer, a worker not
 *  progressed), the context is freed when UCP releases the last of them
 *  (at the latest in ucp_worker_destroy). */
void fiatomic_destroy(fiatomic_h fia);


/* ------------------------------------------------------------------------ */
/* Target side: exposing memory                                              */

enum fiatomic_mem_params_field {
    FIATOMIC_MEM_PARAM_FIELD_ADDRESS = UCS_BIT(0),
    FIATOMIC_MEM_PARAM_FIELD_LENGTH  = UCS_BIT(1),
    FIATOMIC_MEM_PARAM_FIELD_FLAGS   = UCS_BIT(2)
};

enum fiatomic_mem_flags {
    /** Let UCP allocate the memory (ucp_mem_map with UCP_MEM_MAP_ALLOCATE).
     *  On shared-memory transports only such memory can be mapped by the
     *  peer, which enables the direct strategy (CPU atomics in place). */
    FIATOMIC_MEM_FLAG_ALLOCATE = UCS_BIT(0),
    /** The safe mode: the memory is not registered with UCP and its packed
     *  key carries no UCP rkey, so no peer can reach it with UCP's RMA or
     *  atomics (UCX's software RMA and atomics do not check addresses).
     *  Every cell executes through the exposing context's validated
     *  target-side execution (one round trip, needs target progress and
     *  UCP_FEATURE_AM; else UCS_ERR_UNSUPPORTED). With ALLOCATE, the library
     *  allocates it (zeroed). With FIATOMIC_STRATEGY forcing another
     *  strategy, no cell is supported on its keys. See README,
     *  "Security". */
    FIATOMIC_MEM_FLAG_TARGET_ONLY = UCS_BIT(1),
    /** Peers may not read the memory: operations that return data (the
     *  fetch and compare families, FI_ATOMIC_READ among them) are refused.
     *  An atomic reads when it returns data and writes when it may update
     *  the target (every op but FI_ATOMIC_READ). Memory with either
     *  NO_REMOTE_* flag is exposed as with FIATOMIC_MEM_FLAG_TARGET_ONLY
     *  (a UCP rkey would grant peers both accesses): no rkey, every cell
     *  through the target-side execution, which refuses a request that
     *  needs an access the memory lacks, changes nothing and answers
     *  UCS_ERR_REJECTED. Its packed key carries the restriction, so the
     *  initiator refuses such an operation (UCS_ERR_REJECTED) before
     *  anything is sent. Default: peers may read and write. */
    FIATOMIC_MEM_FLAG_NO_REMOTE_READ  = UCS_BIT(2),
    /** Peers may not write the memory: every operation but FI_ATOMIC_READ
     *  is refused (as NO_REMOTE_READ describes). */
    FIATOMIC_MEM_FLAG_NO_REMOTE_WRITE = UCS_BIT(3)
};

typedef struct fiatomic_mem_params {
    uint64_t field_mask; /**< FIATOMIC_MEM_PARAM_FIELD_* */
    void     *address;   /**< memory to expose (not with ALLOCATE) */
    size_t   length;     /**< bytes, required */
    unsigned flags;      /**< FIATOMIC_MEM_FLAG_* */
} fiatomic_mem_params_t;

/** Expose memory for remote atomics: peers may read and write it unless
 *  FIATOMIC_MEM_FLAG_NO_REMOTE_READ / NO_REMOTE_WRITE restrict them. */
ucs_status_t fiatomic_mem_expose(fiatomic_h fia,
                                 const fiatomic_mem_params_t *params,
                                 fiatomic_mem_h *mem_p);

/** Address and length of exposed memory (useful with ALLOCATE). */
ucs_status_t fiatomic_mem_query(fiatomic_mem_h mem, void **address_p,
                                size_t *length_p);

/**
 * Pack a key that lets a peer reach this memory. The key carries the address
 * range, so the initiator refuses out-of-range or misaligned elements before
 * anything is sent. Release with fiatomic_key_release().
 */
ucs_status_t fiatomic_mem_pack_key(fiatomic_mem_h mem, void **key_p,
                                   size_t *size_p);

void fiatomic_key_release(void *key);

/** Stop exposing memory (and free it with ALLOCATE). */
ucs_status_t fiatomic_mem_unexpose(fiatomic_mem_h mem);


/* ------------------------------------------------------------------------ */
/* Initiator side: endpoints and keys                                        */

enum fiatomic_ep_params_field {
    FIATOMIC_EP_PARAM_FIELD_FLAGS     = UCS_BIT(0), /**< flags */
    FIATOMIC_EP_PARAM_FIELD_MSG_ORDER = UCS_BIT(1)  /**< msg_order */
};

/** The orderings an endpoint can be asked for (fi_endpoint(3) msg_order). */
#define FIATOMIC_EP_MSG_ORDER_SUPPORTED \
    (FI_ORDER_ATOMIC_RAR | FI_ORDER_ATOMIC_RAW | FI_ORDER_ATOMIC_WAR | \
     FI_ORDER_ATOMIC_WAW)

enum fiatomic_ep_flags {
    /** As FI_SELECTIVE_COMPLETION: the *msg calls report completion only
     *  with FI_COMPLETION; other operations complete silently and are
     *  waited for by fiatomic_ep_flush_nbx(). */
    FIATOMIC_EP_FLAG_SELECTIVE_COMPLETION = UCS_BIT(0),
    /** The ucp_ep_h was created with UCP_ERR_HANDLING_MODE_PEER. UCP has
     *  no query for an endpoint's error mode, and UCX 1.22's protocols
     *  execute no UCP atomics on such an endpoint; without this flag the
     *  library infers the mode from the endpoint's keepalive lane, which a
     *  client's endpoint to a socket address gets only when its wireup
     *  ends. Setting it on an endpoint without the mode only keeps the
     *  native and cas strategies off it on UCX >= 1.22. */
    FIATOMIC_EP_FLAG_PEER_ERR_MODE        = UCS_BIT(1)
};

typedef struct fiatomic_ep_params {
    uint64_t field_mask; /**< FIATOMIC_EP_PARAM_FIELD_* */
    unsigned flags;      /**< FIATOMIC_EP_FLAG_* */
    /**
     * Same-address atomic ordering, libfabric's FI_ORDER_ATOMIC_RAR / RAW /
     * WAR / WAW bits (others give UCS_ERR_UNSUPPORTED); default none. An
     * atomic reads when it returns data (fetch and compare families) and
     * writes when it may update the target (all ops but FI_ATOMIC_READ).
     * With FI_ORDER_ATOMIC_RAW, for one, an operation that reads bytes an
     * earlier operation on this endpoint writes (even partly: the extents
     * at the target intersect) executes after it, whatever strategies the
     * two take, and so for the other bits. Operations that do not overlap
     * are not delayed, nor are two single-UCP-atomic (native) operations on
     * an endpoint whose transport already executes them in posting order.
     * Ordering holds between operations of one endpoint only: operations
     * of other endpoints, contexts or processes on the same memory are
     * unordered with respect to them (FI_FENCE or a flush orders
     * everything). On an ordered endpoint every operation completes at the
     * target (as with FI_DELIVERY_COMPLETE). A vector operation's extent is
     * its whole span, from its lowest to its highest element.
     */
    uint64_t msg_order;
} fiatomic_ep_params_t;

enum fiatomic_ep_attr_field {
    FIATOMIC_EP_ATTR_FIELD_MSG_ORDER           = UCS_BIT(0),
    FIATOMIC_EP_ATTR_FIELD_MSG_ORDER_SUPPORTED = UCS_BIT(1),
    FIATOMIC_EP_ATTR_FIELD_CAS_STATS           = UCS_BIT(2)
};

typedef struct fiatomic_ep_attr {
    uint64_t field_mask;          /**< FIATOMIC_EP_ATTR_FIELD_*: which fields
                                       to fill */
    uint64_t msg_order;           /**< the orderings the endpoint guarantees
                                       (FI_ORDER_ATOMIC_*): those asked for
                                       at creation; none otherwise */
    uint64_t msg_order_supported; /**< the orderings an endpoint can be
                                       asked for */
    /* FIATOMIC_EP_ATTR_FIELD_CAS_STATS: the CAS-loop strategy's work on
     * this endpoint since its creation (contention shows as retries) */
    uint64_t cas_attempts;        /**< compare-and-swaps issued */
    uint64_t cas_retries;         /**< of them, those that failed because
                                       the element had changed (the loop
                                       goes on from the value seen) */
    uint64_t cas_handoffs;        /**< elements the loop handed to
                                       target-side execution under
                                       contention */
} fiatomic_ep_attr_t;

/**
 * Create an initiator endpoint over a connected ucp_ep_h. To get errors
 * (instead of waiting forever) when the peer dies, create the ucp_ep_h with
 * UCP_ERR_HANDLING_MODE_PEER.
 */
ucs_status_t fiatomic_ep_create(fiatomic_h fia, ucp_ep_h ucp_ep,
                                const fiatomic_ep_params_t *params,
                                fiatomic_ep_h *ep_p);

/** What an endpoint guarantees (fields selected by attr->field_mask). */
ucs_status_t fiatomic_ep_query(fiatomic_ep_h ep, fiatomic_ep_attr_t *attr);

/**
 * Destroy an endpoint. Operations not started yet (behind a fence) and
 * target-side operations awaiting their reply complete with
 * UCS_ERR_CANCELED; operations inside UCP complete as UCP completes them
 * (close the ucp_ep_h to end them). Flush first to wait for everything.
 * The ucp_ep_h stays the caller's.
 */
void fiatomic_ep_destroy(fiatomic_ep_h ep);

/**
 * Unpack a peer's key for this endpoint. *key_p is the libfabric-style
 * uint64_t key to pass as `key` and in struct fi_rma_ioc. A key is valid only
 * on the endpoint that unpacked it; anything else gives -FI_EINVAL.
 */
ucs_status_t fiatomic_rkey_unpack(fiatomic_ep_h ep, const void *key_buffer,
                                  size_t size, uint64_t *key_p);

/** Release an unpacked key. Operations using it must have completed. */
ucs_status_t fiatomic_rkey_release(fiatomic_ep_h ep, uint64_t key);


/* ------------------------------------------------------------------------ */
/* Operations                                                                */

typedef void (*fiatomic_send_callback_t)(void *request, ucs_status_t status,
                                         void *user_data);

enum fiatomic_op_attr_field {
    FIATOMIC_OP_ATTR_FIELD_CALLBACK  = UCS_BIT(0), /**< cb */
    FIATOMIC_OP_ATTR_FIELD_USER_DATA = UCS_BIT(1), /**< user_data */
    FIATOMIC_OP_ATTR_FIELD_FLAGS     = UCS_BIT(2)  /**< flags */
};

/** The ucp_request_param_t of fiatomic. */
typedef struct fiatomic_request_param {
    uint32_t                 op_attr_mask; /**< FIATOMIC_OP_ATTR_FIELD_* */
    uint64_t                 flags;        /**< FI_INJECT, FI_FENCE,
                                                FI_COMPLETION, FI_MORE,
                                                FI_TRANSMIT_COMPLETE,
                                                FI_DELIVERY_COMPLETE */
    fiatomic_send_callback_t cb;        /**< called on completion when the
                                             call returned a request */
    void                     *user_data; /**< passed to cb */
} fiatomic_request_param_t;

/*
 * Completion of the base family means the operand buffers may be reused (as
 * UCP's non-fetching atomics); the update is visible at the target after
 * fiatomic_ep_flush_nbx() or when the call carried FI_DELIVERY_COMPLETE.
 * Fetch and compare completions imply the update was done at the target.
 *
 * `addr` is the remote virtual address, `key` from fiatomic_rkey_unpack().
 */

/* fi_atomic */
ucs_status_ptr_t fiatomic_atomic_nbx(fiatomic_ep_h ep, const void *buf,
                                     size_t count, uint64_t addr,
                                     uint64_t key, enum fi_datatype datatype,
                                     enum fi_op op,
                                     const fiatomic_request_param_t *param);

/* fi_atomicv: iov[] local, rma_iov[] remote; element totals must match. */
ucs_status_ptr_t fiatomic_atomicv_nbx(fiatomic_ep_h ep,
                                      const struct fi_ioc *iov,
                                      size_t iov_count,
                                      const struct fi_rma_ioc *rma_iov,
                                      size_t rma_iov_count,
                                      enum fi_datatype datatype,
                                      enum fi_op op,
                                      const fiatomic_request_param_t *param);

/* fi_atomicmsg: msg->context becomes the callback's user_data when param
 * gives none; msg->addr, msg->desc and msg->data are ignored. */
ucs_status_ptr_t fiatomic_atomicmsg_nbx(fiatomic_ep_h ep,
                                        const struct fi_msg_atomic *msg,
                                        uint64_t flags,
                                        const fiatomic_request_param_t *param);

/* fi_inject_atomic: buf reusable on return, no completion reported; the
 * operation is waited for by fiatomic_ep_flush_nbx(). */
ucs_status_t fiatomic_inject_atomic(fiatomic_ep_h ep, const void *buf,
                                    size_t count, uint64_t addr, uint64_t key,
                                    enum fi_datatype datatype, enum fi_op op);

/* fi_fetch_atomic */
ucs_status_ptr_t fiatomic_fetch_atomic_nbx(fiatomic_ep_h ep, const void *buf,
                                           size_t count, void *result,
                                           uint64_t addr, uint64_t key,
                                           enum fi_datatype datatype,
                                           enum fi_op op,
                                           const fiatomic_request_param_t *param);

ucs_status_ptr_t fiatomic_fetch_atomicv_nbx(fiatomic_ep_h ep,
                                            const struct fi_ioc *iov,
                                            size_t iov_count,
                                            struct fi_ioc *resultv,
                                            size_t result_count,
                                            const struct fi_rma_ioc *rma_iov,
                                            size_t rma_iov_count,
                                            enum fi_datatype datatype,
                                            enum fi_op op,
                                            const fiatomic_request_param_t *param);

ucs_status_ptr_t fiatomic_fetch_atomicmsg_nbx(fiatomic_ep_h ep,
                                              const struct fi_msg_atomic *msg,
                                              struct fi_ioc *resultv,
                                              size_t result_count,
                                              uint64_t flags,
                                              const fiatomic_request_param_t *param);

/* fi_compare_atomic */
ucs_status_ptr_t fiatomic_compare_atomic_nbx(fiatomic_ep_h ep,
                                             const void *buf, size_t count,
                                             const void *compare,
                                             void *result, uint64_t addr,
                                             uint64_t key,
                                             enum fi_datatype datatype,
                                             enum fi_op op,
                                             const fiatomic_request_param_t *param);

ucs_status_ptr_t fiatomic_compare_atomicv_nbx(fiatomic_ep_h ep,
                                              const struct fi_ioc *iov,
                                              size_t iov_count,
                                              const struct fi_ioc *comparev,
                                              size_t compare_count,
                                              struct fi_ioc *resultv,
                                              size_t result_count,
                                              const struct fi_rma_ioc *rma_iov,
                                              size_t rma_iov_count,
                                              enum fi_datatype datatype,
                                              enum fi_op op,
                                              const fiatomic_request_param_t *param);

ucs_status_ptr_t fiatomic_compare_atomicmsg_nbx(fiatomic_ep_h ep,
                                                const struct fi_msg_atomic *msg,
                                                const struct fi_ioc *comparev,
                                                size_t compare_count,
                                                struct fi_ioc *resultv,
                                                size_t result_count,
                                                uint64_t flags,
                                                const fiatomic_request_param_t *param);

/**
 * Complete every operation posted on the endpoint so far (inject and silent
 * ones included) and make their updates visible at the target.
 */
ucs_status_ptr_t fiatomic_ep_flush_nbx(fiatomic_ep_h ep,
                                       const fiatomic_request_param_t *param);

/**
 * Quiet across a context (shmem_quiet, a window's completion): complete
 * every operation posted so far on every endpoint of the context (inject
 * and silent ones included) and make their updates visible at the targets,
 * as one fiatomic_ep_flush_nbx() per endpoint would. Completes with
 * UCS_OK, or with the first error any of those endpoint flushes reports
 * (an error of a silent operation, a failed peer). Operations posted after
 * this call are not waited for; endpoints created after it are not
 * flushed. Request, callback and return as fiatomic_ep_flush_nbx().
 * Thread-safe.
 */
ucs_status_ptr_t fiatomic_flush_nbx(fiatomic_h fia,
                                    const fiatomic_request_param_t *param);

/** UCS_INPROGRESS while running, else the final status. Thread-safe. */
ucs_status_t fiatomic_request_check_status(void *request);

/** Release a request (completed or not). */
void fiatomic_request_free(void *request);

/**
 * Look at what every endpoint of the context waits for, as the library's
 * own calls do: an overdue target-side reply makes its endpoint probe the
 * target (an endpoint UCP found failed then fails what awaits a reply), and
 * an operation past the operation timeout ends with UCS_ERR_TIMED_OUT.
 * For a program that waits by calling ucp_worker_progress() alone (its own
 * completion queues and counters): call it now and then while it waits, or
 * a reply that never comes (a target that died or stopped) is never
 * waited out. Thread-safe; not from a callback.
 */
void fiatomic_check_overdue(fiatomic_h fia);


/* ------------------------------------------------------------------------ */
/* Counters (fi_cntr)                                                        */

/*
 * A counter counts the operations of the endpoints bound to it: `value`
 * those that completed successfully, `errors` those that completed with an
 * error. Design: a counter is an object of the context, bound to any
 * number of its endpoints (fi_cntr_open + fi_ep_bind), not a fixed pair per
 * endpoint or per context: with one endpoint per peer, a per-endpoint
 * counter would make an OpenSHMEM quiet or an MPI window completion read N
 * counters, and a per-context one could not separate two windows or two
 * shmem contexts on one worker. One counter bound to every endpoint is the
 * per-context counter; one per endpoint is the per-peer one.
 *
 * What counts: every operation call (plain, vector, msg, inject; fetch and
 * compare too) that did not return an error counts exactly once, when it
 * completes, whether or not its completion is reported (inject, selective
 * completion): into `value` when it succeeded, `errors` when it failed
 * (e.g. the peer died, UCS_ERR_CANCELED when its endpoint was destroyed
 * first). A call that returns an error status is never counted (nothing
 * was started, or the error is reported right there). Completion means
 * what the operation's own completion means (a base-family operation
 * without FI_DELIVERY_COMPLETE counts when its buffer is reusable; flush to
 * make it visible at the target). Flushes are not counted.
 *
 * Reading needs no progress and no lock: fiatomic_cntr_read() and
 * fiatomic_cntr_readerr() are atomic loads, safe from any thread in any
 * mode. Counters only grow, by one per operation; they wrap at 2^64.
 */

/** Open a counter (both values 0). Thread-safe. */
ucs_status_t fiatomic_cntr_open(fiatomic_h fia, fiatomic_cntr_h *cntr_p);

/** Close a counter; UCS_ERR_BUSY while an endpoint is bound to it (unbind
 *  or destroy them first; a destroyed endpoint stays bound until its last
 *  operation drained). */
ucs_status_t fiatomic_cntr_close(fiatomic_cntr_h cntr);

/**
 * Bind an endpoint's operations to a counter of the same context (NULL:
 * unbind). An endpoint counts into one counter at most; binding replaces
 * the previous one. UCS_ERR_BUSY while the endpoint has operations in
 * flight (flush first): every operation counts into the counter bound when
 * it was posted. UCS_ERR_INVALID_PARAM for a counter of another context.
 * Thread-safe.
 */
ucs_status_t fiatomic_ep_bind_cntr(fiatomic_ep_h ep, fiatomic_cntr_h cntr);

/** Operations completed successfully (fi_cntr_read). Thread-safe, no
 *  progress. */
uint64_t fiatomic_cntr_read(fiatomic_cntr_h cntr);

/** Operations completed with an error (fi_cntr_readerr). Thread-safe, no
 *  progress. */
uint64_t fiatomic_cntr_readerr(fiatomic_cntr_h cntr);

/**
 * fi_cntr_wait: progress the context's worker (ucp_worker_progress) until
 * the counter's value reaches `threshold`. Returns 0 then; -FI_EAVAIL as
 * soon as the error count grew during the wait (read it with
 * fiatomic_cntr_readerr()); -FI_ETIMEDOUT after `timeout_ms` milliseconds
 * (0: check once after one progress call; negative: no limit, as
 * libfabric's, and then only the peers' failure detection bounds it:
 * create endpoints with UCP_ERR_HANDLING_MODE_PEER); -FI_EINVAL for a NULL
 * counter. Also checks overdue target-side operations, as flushes do.
 * Thread-safe (several threads may wait at once); not from a callback.
 */
int fiatomic_cntr_wait(fiatomic_cntr_h cntr, uint64_t threshold,
                       int timeout_ms);


/* ------------------------------------------------------------------------ */
/* Queries                                                                   */

/**
 * fi_query_atomic: flags 0, FI_FETCH_ATOMIC or FI_COMPARE_ATOMIC (not both);
 * FI_TAGGED gives -FI_EOPNOTSUPP. Returns 0 and fills attr (count, size) when
 * every endpoint and key of this context executes the cell, with every call
 * form and flag, under the configuration (UCP features and transports, a
 * forced strategy); else a negative -FI_E* value. What depends on the
 * target memory is left out here: the direct strategy (so a forced direct
 * strategy reports nothing here) and, without UCP_FEATURE_AM, 16- and
 * 32-byte cells on shared memory; fiatomic_query_cell() answers for one
 * endpoint and key.
 */
int fiatomic_query_atomic(fiatomic_h fia, enum fi_datatype datatype,
                          enum fi_op op, struct fi_atomic_attr *attr,
                          uint64_t flags);

/* fi_atomicvalid / fi_fetch_atomicvalid / fi_compare_atomicvalid */
int fiatomic_atomicvalid(fiatomic_h fia, enum fi_datatype datatype,
                         enum fi_op op, size_t *count);
int fiatomic_fetch_atomicvalid(fiatomic_h fia, enum fi_datatype datatype,
                               enum fi_op op, size_t *count);
int fiatomic_compare_atomicvalid(fiatomic_h fia, enum fi_datatype datatype,
                                 enum fi_op op, size_t *count);

typedef struct fiatomic_cell_info {
    fiatomic_strategy_t strategy;              /**< NONE if unsupported */
    int                 needs_target_progress; /**< completion needs the
                                                    target to call
                                                    ucp_worker_progress */
} fiatomic_cell_info_t;

/**
 * How a cell executes on this endpoint with this key: the strategy the
 * current configuration selects for one element (the same decision the call
 * takes, whatever its flags; an array over software atomics may go
 * target-side in one message instead) and whether completion needs the
 * target to progress. A strategy other than NONE means every call form and
 * flag computes fi_atomic(3)'s result. Returns 0, or a negative -FI_E* for a
 * bad family/op/datatype/key.
 */
int fiatomic_query_cell(fiatomic_ep_h ep, uint64_t key,
                        fiatomic_family_t family, enum fi_datatype datatype,
                        enum fi_op op, fiatomic_cell_info_t *info);

/** Names as libfabric spells them ("FI_SUM", "FI_UINT64"); NULL if out of
 *  range. */
const char *fiatomic_op_name(enum fi_op op);
const char *fiatomic_datatype_name(enum fi_datatype datatype);
const char *fiatomic_family_name(fiatomic_family_t family); /* "base", ... */
const char *fiatomic_strategy_name(fiatomic_strategy_t strategy);

/** ucs_status_t -> -FI_E* (0 for UCS_OK and UCS_INPROGRESS). */
int fiatomic_status_to_fi_errno(ucs_status_t status);

/**
 * List the library's environment settings (FIATOMIC_*) on `stream`, as
 * ucx_info -c lists UCX's: for each a comment with its meaning, syntax and
 * default, then NAME=value with the value in effect (the environment's,
 * else the default). fiatomic_info -c prints this.
 */
void fiatomic_config_print(FILE *stream);

#ifdef __cplusplus
}
#endif

#endif
