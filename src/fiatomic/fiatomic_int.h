/**
 * libfiatomic internals: objects, the element state machine, and the
 * interfaces between the post path, the strategies and the matrix.
 */
#ifndef FIATOMIC_INT_H_
#define FIATOMIC_INT_H_

#include "fiatomic.h"
#include "fiatomic_target.h"
#include "fiatomic_types.h"

#include <ucs/datastruct/list.h>
#include <ucs/debug/log_def.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#define FIATOMIC_API __attribute__((visibility("default")))

#define FIATOMIC_GUESS_SLOTS 256  /* CAS-loop guesses per endpoint */

/* Internal invariants only, never user input (that gets a status). */
#ifdef NDEBUG
#  define fiatomic_assertv(_cond, _fmt, ...) do { } while (0)
#else
#  define fiatomic_assertv(_cond, _fmt, ...) \
    do { \
        if (!(_cond)) { \
            ucs_error("fiatomic: assertion %s failed: " _fmt, #_cond, \
                      ## __VA_ARGS__); \
            abort(); \
        } \
    } while (0)
#endif
#define fiatomic_assert(_cond) fiatomic_assertv(_cond, "%s", "")

/* ------------------------------------------------------------------------ */
/* Combine functions (fiatomic_combine.c)                                    */

/**
 * Apply op to one element: *value holds the target's current value on entry
 * and the value to store on exit. operand/compare may be NULL when the op
 * does not use them. Pure: no memory other than *value is touched.
 */
typedef void (*fiatomic_combine_fn_t)(void *value, const void *operand,
                                      const void *compare);

#define FIATOMIC_DECL_COMBINE_CELL(_dt, _T, _U, _sfx, _tcls, _op, _ocls) \
    FIATOMIC_IF_##_ocls##_##_tcls( \
        void fiatomic_combine_##_op##_##_sfx(void *value, \
                                             const void *operand, \
                                             const void *compare);)
#define FIATOMIC_DECL_COMBINE_ROW(_op_enum, _op, _ocls, _fam) \
    FIATOMIC_FOREACH_DATATYPE(FIATOMIC_DECL_COMBINE_CELL, _op, _ocls)
FIATOMIC_FOREACH_OP(FIATOMIC_DECL_COMBINE_ROW)
#undef FIATOMIC_DECL_COMBINE_ROW
#undef FIATOMIC_DECL_COMBINE_CELL

/* ------------------------------------------------------------------------ */
/* CPU executors of cells (fiatomic_cpu_cell.c)                              */

/**
 * Execute the cell's op on the element at ptr with CPU atomics; its old
 * value goes to *old (element size bytes, naturally aligned). operand and
 * compare are NULL when the op does not use them.
 */
typedef void (*fiatomic_cpu_fn_t)(void *ptr, const void *operand,
                                  const void *compare, void *old);

/* Element sizes with a CPU executor: all but 32 bytes (long double
 * complex, executed under a lock: fiatomic_cpu.c). Expands its argument or
 * not, by a datatype's short name. */
#define FIATOMIC_IF_CPU_CELL_i8(...)   __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_u8(...)   __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_i16(...)  __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_u16(...)  __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_i32(...)  __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_u32(...)  __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_i64(...)  __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_u64(...)  __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_f32(...)  __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_f64(...)  __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_c32(...)  __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_c64(...)  __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_f80(...)  __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_c80(...)
#define FIATOMIC_IF_CPU_CELL_i128(...) __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_u128(...) __VA_ARGS__

#define FIATOMIC_DECL_CPU_CELL(_dt, _T, _U, _sfx, _tcls, _op, _ocls) \
    FIATOMIC_IF_##_ocls##_##_tcls(FIATOMIC_IF_CPU_CELL_##_sfx( \
        void fiatomic_cpu_##_op##_##_sfx(void *ptr, const void *operand, \
                                         const void *compare, void *old);))
#define FIATOMIC_DECL_CPU_CELL_ROW(_op_enum, _op, _ocls, _fam) \
    FIATOMIC_FOREACH_DATATYPE(FIATOMIC_DECL_CPU_CELL, _op, _ocls)
FIATOMIC_FOREACH_OP(FIATOMIC_DECL_CPU_CELL_ROW)
#undef FIATOMIC_DECL_CPU_CELL_ROW
#undef FIATOMIC_DECL_CPU_CELL

/* ------------------------------------------------------------------------ */
/* Cells (fiatomic_matrix.c)                                                 */

/**
 * One (family, op, datatype) cell, resolved once from the lists: what every
 * layer needs to know about it. Constant; passed by pointer.
 */
typedef struct fiatomic_cell {
    fiatomic_combine_fn_t combine;  /* NULL: not a cell of fi_atomic(3) */
    fiatomic_cpu_fn_t     cpu;      /* CPU executor; NULL for 32 bytes */
    uint8_t               family;   /* fiatomic_family_t */
    uint8_t               op;       /* enum fi_op */
    uint8_t               datatype; /* enum fi_datatype */
    uint8_t               size;     /* element bytes */
    uint8_t               align;    /* natural alignment: size, 16 at most */
    uint8_t               tcls;     /* FIATOMIC_TCLS_* */
    int8_t                ucp_op;   /* ucp_atomic_op_t that is exactly the
                                       op on this type, or -1 */
    uint16_t              index;    /* in fiatomic_cells, flattened */
} fiatomic_cell_t;

extern const fiatomic_cell_t
fiatomic_cells[FIATOMIC_FAMILY_LAST][FIATOMIC_OP_COUNT]
              [FIATOMIC_DATATYPE_COUNT];

/** The cell, or NULL when (family, op, datatype) is not one (out-of-range
 *  values included). */
static inline const fiatomic_cell_t *
fiatomic_cell_get(int family, int op, int datatype)
{
    const fiatomic_cell_t *cell;

    if (((unsigned)family >= FIATOMIC_FAMILY_LAST) ||
        ((unsigned)op >= FIATOMIC_OP_COUNT) ||
        ((unsigned)datatype >= FIATOMIC_DATATYPE_COUNT)) {
        return NULL;
    }
    cell = &fiatomic_cells[family][op][datatype];
    return (cell->combine != NULL) ? cell : NULL;
}

/** The library supports (family, op, datatype) at all (any configuration):
 *  false for out-of-range enum values too. */
bool fiatomic_cell_defined(fiatomic_family_t family, int op, int datatype);
/** Element size of a datatype, 0 if out of range. */
size_t fiatomic_datatype_size(int datatype);
/** Natural alignment of an element: its size, 16 for 32-byte elements. */
size_t fiatomic_datatype_alignment(int datatype);
/** The query flag word (0/FI_FETCH_ATOMIC/FI_COMPARE_ATOMIC) -> family;
 *  false for invalid combinations. */
bool fiatomic_family_from_flags(uint64_t flags, fiatomic_family_t *family_p);

/* ------------------------------------------------------------------------ */
/* Objects                                                                   */

typedef enum {
    FIATOMIC_DOMAIN_CPU,    /* UCP's atomics are CPU atomics (shm, self, or
                               software atomics executed by the target) */
    FIATOMIC_DOMAIN_DEVICE  /* UCP's atomics are executed by a device */
} fiatomic_domain_t;

typedef struct fiatomic_am_msg fiatomic_am_msg_t;

/* Slots of target-side messages awaiting their reply; a message id is
 * (generation << 32) | (slot + 1), so a late or forged reply is dropped. */
typedef struct fiatomic_msg_slot {
    fiatomic_am_msg_t *msg;
    uint32_t          generation;
} fiatomic_msg_slot_t;

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
    uint64_t            op_timeout_ns; /* target-side operations;
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
    unsigned            num_eps;    /* not yet freed (zombies included) */
    unsigned            num_mems;
    bool                destroyed;  /* fiatomic_destroy() was called: freed
                                       when the last endpoint drains */
    ucs_list_link_t     free_reqs;  /* request cache: no malloc per op */
    unsigned            num_free_reqs;
    /* target-side execution */
    bool                am_enabled; /* handlers registered (UCP_FEATURE_AM) */
    unsigned            am_id;      /* + FIATOMIC_WIRE_AM_* */
    fiatomic_regions_t  regions;    /* exposed to target-side requests */
    uint64_t            wide_locks[FIATOMIC_WIDE_LOCKS]; /* 32-byte
                                       elements of memory without a shared
                                       lock table (fiatomic_wide_lock.c) */
    ucs_list_link_t     free_replies; /* small reply buffers (target) */
    unsigned            num_free_replies;
    unsigned            replies_inflight; /* replies UCP is still sending
                                             and requests it is receiving */
    struct kh_fiatomic_peers_s *peers; /* the target's peers by reply ep
                                          (fiatomic_target_serve.c) */
    uint64_t            requests_dropped; /* of peers past their bound */
    fiatomic_msg_slot_t *msg_slots;   /* in the initiator */
    unsigned            num_msg_slots;
    ucs_list_link_t     free_msgs;
    unsigned            num_free_msgs;
};

struct fiatomic_mem {
    fiatomic_h fia;
    ucp_mem_h  memh;      /* NULL: target-only, not registered with UCP */
    void       *address;
    size_t     length;
    unsigned   region;
    void       *owned;    /* target-only memory the library allocated */
    uint64_t   *state;    /* NULL, or the state word peers that map the
                             memory see: the region's token while exposed,
                             0 after (fiatomic_mem.c) */
    struct fiatomic_wide_locks *wide_locks; /* NULL, or the lock table of
                             its 32-byte elements, in the mapping */
};

/* Key flags */
#define FIATOMIC_KEY_F_TARGET  0x1 /* the exposing context executes
                                      requests */
#define FIATOMIC_KEY_F_STATE   0x2 /* a state word follows the range at the
                                      next 8-byte boundary */
#define FIATOMIC_KEY_F_NO_RKEY 0x4 /* target-only: no UCP rkey follows */
#define FIATOMIC_KEY_F_WIDE_LOCKS 0x8 /* a lock table for 32-byte elements
                                         follows the state word (at
                                         FIATOMIC_WIDE_LOCKS_OFFSET) */
#define FIATOMIC_KEY_F_ALL     (FIATOMIC_KEY_F_TARGET | FIATOMIC_KEY_F_STATE | \
                                FIATOMIC_KEY_F_NO_RKEY | \
                                FIATOMIC_KEY_F_WIDE_LOCKS)

/* Where the state word of a range lies. */
#define FIATOMIC_STATE_OFFSET(_length) (((_length) + 7) & ~(uint64_t)7)

/*
 * The lock table of the 32-byte elements of memory peers map (ALLOCATE),
 * at the first 64-byte boundary after the state word: a layout word (magic,
 * version, number of locks: a peer maps the table only if it is exactly
 * this), the pid namespace of the exposing process (its pids are the lock
 * owners), then the lock words (fiatomic_wide_lock.c). Part of the mapping
 * format peers agree on: change the version with the layout.
 */
#define FIATOMIC_WIDE_LOCKS_VERSION 1
#define FIATOMIC_WIDE_LOCKS_LAYOUT \
    ((0xf1a710c5ull << 32) | ((uint64_t)FIATOMIC_WIDE_LOCKS_VERSION << 16) | \
     FIATOMIC_WIDE_LOCKS)
typedef struct fiatomic_wide_locks {
    uint64_t layout;       /* FIATOMIC_WIDE_LOCKS_LAYOUT once initialized */
    uint64_t pid_ns;       /* the exposing process's pid namespace */
    uint64_t reserved[6];  /* 0 */
    uint64_t word[FIATOMIC_WIDE_LOCKS]; /* 0, or the holder's pid */
} fiatomic_wide_locks_t;
#define FIATOMIC_WIDE_LOCKS_OFFSET(_length) \
    ((FIATOMIC_STATE_OFFSET(_length) + sizeof(uint64_t) + 63) & ~(uint64_t)63)
/* What a mapped range takes beyond its length (state word, lock table). */
#define FIATOMIC_MAP_EXTRA \
    (FIATOMIC_WIDE_LOCKS_OFFSET(0) + 64 + sizeof(fiatomic_wide_locks_t))

/* The packed key a target hands out (followed by the UCP rkey buffer). */
typedef struct fiatomic_key_hdr {
    uint32_t magic;
    uint32_t rkey_size;
    uint64_t nonce;    /* the exposing context; same one -> direct ok */
    uint64_t address;
    uint64_t length;
    uint64_t token;    /* the region's secret for target-side requests */
    uint32_t region;
    uint32_t flags;    /* FIATOMIC_KEY_F_* */
} fiatomic_key_hdr_t;

#define FIATOMIC_KEY_MAGIC 0xf1a70111u

typedef struct fiatomic_rkey {
    ucp_rkey_h rkey;         /* NULL: target-only key */
    uint64_t   address;      /* exposed range at the target */
    uint64_t   length;
    uint8_t    *local_base;  /* non-NULL: the range is mapped here (direct) */
    bool       same_context; /* exposed by this very context */
    bool       sw_amo;       /* UCP's atomics on it are software atomics,
                                executed by the target's CPU on progress */
    bool       target_ok;    /* target-side requests can be sent */
    uint32_t   region;
    uint64_t   token;
    const uint64_t *state;   /* the mapped state word, or NULL */
    fiatomic_wide_locks_t *wide_locks; /* the lock table of its 32-byte
                                elements that every actor takes, or NULL */
    /* fiatomic_select() per cell, filled on first use: the post path
     * decides with one lookup (FIATOMIC_STRATEGY_LAST = not yet known) */
    uint8_t    strategy[FIATOMIC_FAMILY_LAST][FIATOMIC_OP_COUNT]
                       [FIATOMIC_DATATYPE_COUNT];
} fiatomic_rkey_t;

/* The user's uint64_t key is (generation << 32) | (slot index + 1): 0 is
 * never valid, and a released key is caught when its slot is reused. */
typedef struct fiatomic_key_slot {
    fiatomic_rkey_t *key;        /* NULL when free */
    uint32_t        generation;
} fiatomic_key_slot_t;

/* Completion counters (fiatomic_cntr.c). Written with the context's lock
 * held (or by its only thread), read by anyone without it. */
struct fiatomic_cntr {
    fiatomic_h fia;
    uint64_t   value;    /* atomic: operations completed successfully */
    uint64_t   errors;   /* atomic: operations completed with an error */
    unsigned   bound;    /* endpoints (zombies included) counting into it */
};

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
    bool              unflushed;       /* posts completed locally only */
    bool              wireup_flushed;  /* the flush before the first
                                          software atomic was asked for */
    fiatomic_key_slot_t *slots;
    unsigned          num_slots;
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
    ucs_list_link_t   am_pending;      /* target-side messages awaiting a
                                          reply */
    bool              probe_inflight;  /* liveness probe of the target */
    uint64_t          cas_attempts;    /* CAS-loop counters (fiatomic_ep_query) */
    uint64_t          cas_retries;
    uint64_t          cas_handoffs;
    struct {
        uint64_t word_addr;
        uint64_t value;
        unsigned word_size;
        unsigned contended; /* elements on the word that still go to the
                               target at once (fiatomic_exec_cas.c) */
    }                 guess[FIATOMIC_GUESS_SLOTS]; /* last value seen per
                                          word, the first CAS's expectation */
};

/* ------------------------------------------------------------------------ */
/* Requests and elements                                                     */

typedef enum {
    FIATOMIC_REQ_OP,
    FIATOMIC_REQ_FLUSH,     /* of one endpoint */
    FIATOMIC_REQ_CTX_FLUSH  /* of every endpoint: ep NULL, one FLUSH child
                               per endpoint */
} fiatomic_req_kind_t;

/* Request flags */
enum {
    FIATOMIC_REQ_F_USER      = UCS_BIT(0), /* handed to the user */
    FIATOMIC_REQ_F_FREED     = UCS_BIT(1), /* user called request_free */
    FIATOMIC_REQ_F_COMPLETED = UCS_BIT(2),
    FIATOMIC_REQ_F_FENCE     = UCS_BIT(3), /* FI_FENCE */
    FIATOMIC_REQ_F_DELIVERY  = UCS_BIT(4), /* complete at target */
    FIATOMIC_REQ_F_SILENT    = UCS_BIT(5), /* inject / no FI_COMPLETION */
    FIATOMIC_REQ_F_STARTED   = UCS_BIT(6),
    FIATOMIC_REQ_F_POSTING   = UCS_BIT(7), /* the post call has not returned */
    FIATOMIC_REQ_F_LISTED    = UCS_BIT(8), /* in ep->outstanding_list */
    FIATOMIC_REQ_F_COUNTED   = UCS_BIT(9), /* in ep->ops_inflight */
    FIATOMIC_REQ_F_CHILD     = UCS_BIT(10) /* an endpoint flush of a
                                              context flush (parent) */
};

typedef struct fiatomic_req fiatomic_req_t;

typedef struct fiatomic_elem {
    fiatomic_req_t      *req;
    fiatomic_rkey_t     *key;
    uint64_t            raddr;      /* element's remote address */
    const void          *operand;   /* NULL for ATOMIC_READ */
    const void          *compare;   /* compare family only */
    void                *result;    /* fetch/compare families only */
    fiatomic_strategy_t strategy;
    /* CAS-loop state (fiatomic_exec_cas.c): the enclosing word and the
     * element inside it */
    uint64_t            word_addr;
    unsigned            word_size;  /* 4 or 8 */
    unsigned            shift;      /* bit offset of the element in the word */
    uint64_t            expected;   /* value the CAS compares against */
    uint64_t            reply;      /* UCP reply buffer */
    bool                observed;   /* expected was read from the target */
    uint8_t             failures;   /* CASes of this element that failed */
} fiatomic_elem_t;

struct fiatomic_req {
    ucs_list_link_t          list;      /* ep outstanding/deferred, or cache */
    fiatomic_h               fia;       /* owns the cache it returns to */
    fiatomic_ep_h            ep;        /* NULL for a context flush */
    fiatomic_req_t           *parent;   /* F_CHILD: the context flush */
    fiatomic_req_kind_t      kind;
    unsigned                 flags;     /* FIATOMIC_REQ_F_* */
    const fiatomic_cell_t    *cell;     /* NULL for a flush */
    size_t                   count;
    /* same-address ordering (fiatomic_order.c), on ordered endpoints */
    uint64_t                 order_lo;  /* extent at the target */
    uint64_t                 order_hi;
    bool                     order_native; /* every element native */
    uint8_t                  order_kind;   /* reads / writes */
    size_t                   remaining; /* elements not yet done */
    ucs_status_t             status;
    fiatomic_send_callback_t cb;
    void                     *user_data;
    fiatomic_elem_t          *elems;
    size_t                   elems_capacity;
    uint8_t                  *copy;     /* FI_INJECT copies of operands */
    size_t                   copy_capacity;
};

/* fiatomic_request.c */
fiatomic_req_t *fiatomic_req_get(fiatomic_ep_h ep, size_t count,
                                 size_t copy_bytes);
/** A request of the context itself (no endpoint, no elements). */
fiatomic_req_t *fiatomic_req_get_fia(fiatomic_h fia);
void fiatomic_req_put(fiatomic_req_t *req);
/** The request no longer counts against its endpoint's operations in
 *  flight (completed, or never started). */
void fiatomic_req_uncount(fiatomic_req_t *req);
/** An element finished (status UCS_OK or an error). */
void fiatomic_elem_done(fiatomic_elem_t *elem, ucs_status_t status);
void fiatomic_req_cache_purge(fiatomic_h fia);

/* fiatomic_ep.c */
/** Start a request now, or defer it behind a fence/flush. */
void fiatomic_ep_submit(fiatomic_ep_h ep, fiatomic_req_t *req);
/** A started request completed: drives fences, flushes and zombie eps. */
void fiatomic_ep_req_done(fiatomic_ep_h ep, fiatomic_req_t *req);
void fiatomic_ep_inflight_add(fiatomic_ep_h ep);
void fiatomic_ep_inflight_remove(fiatomic_ep_h ep);
/** Flush the endpoint once before its first software atomic (UCX 1.13.1's
 *  tcp wireup, fiatomic_ep.c); later posts wait behind it. */
ucs_status_t fiatomic_ep_wireup_flush(fiatomic_ep_h ep);
/* fiatomic_order.c */
/** Record what ordering needs to know of a laid-out request. */
void fiatomic_order_prepare(fiatomic_req_t *req);
/** An earlier operation on the endpoint, started or waiting, that the
 *  request overlaps in a way the endpoint orders has not completed. */
bool fiatomic_order_must_wait(fiatomic_ep_h ep, const fiatomic_req_t *req);

/* fiatomic_key.c */
/** Forget every key's cached strategies (the endpoint's lanes changed). */
void fiatomic_ep_keys_reset(fiatomic_ep_h ep);
/** Release every key of an endpoint being freed. */
void fiatomic_ep_keys_free(fiatomic_ep_h ep);

/** Issue one UCP atomic on behalf of an element (user_data = elem). */
ucs_status_ptr_t fiatomic_ucp_amo(fiatomic_elem_t *elem, ucp_atomic_op_t op,
                                  const void *buffer, unsigned size,
                                  uint64_t raddr, void *reply,
                                  ucp_send_nbx_callback_t cb);

/* ------------------------------------------------------------------------ */
/* Strategies: each fiatomic_exec_*.c exports one table; only the selector
 * (fiatomic_select.c) chooses among them. */

typedef struct fiatomic_strategy_ops {
    fiatomic_strategy_t id;
    const char          *name;
    /** Can execute the cell on some endpoint (a property of the cell). */
    bool   (*supports)(const fiatomic_cell_t *cell);
    /** Computes fi_atomic(3)'s result for the cell, atomically with every
     *  other strategy usable there, on this endpoint and key when the call
     *  carries `flags` (FI_*). */
    bool   (*usable)(const fiatomic_ep_h ep, const fiatomic_rkey_t *key,
                     const fiatomic_cell_t *cell, uint64_t flags);
    /** Start elements [first, first + count) of req, all of this strategy;
     *  returns how many it took (at least 1). Each element taken reaches
     *  fiatomic_elem_done() exactly once, possibly before this returns. */
    size_t (*start)(fiatomic_req_t *req, size_t first, size_t count);
    /** Completion needs the target to progress its worker. */
    bool   (*needs_target_progress)(const fiatomic_rkey_t *key);
} fiatomic_strategy_ops_t;

extern const fiatomic_strategy_ops_t fiatomic_native_ops;
extern const fiatomic_strategy_ops_t fiatomic_cas_ops;
extern const fiatomic_strategy_ops_t fiatomic_direct_ops;
extern const fiatomic_strategy_ops_t fiatomic_target_ops;

/* fiatomic_select.c: the only place that chooses */
/** The table of a strategy (NULL for NONE or out of range). */
const fiatomic_strategy_ops_t *fiatomic_strategy_ops(fiatomic_strategy_t id);
/** The strategy of one element of the cell on ep/key, whatever the call's
 *  flags: what the call does and what fiatomic_query_cell() reports. */
fiatomic_strategy_t fiatomic_select(fiatomic_ep_h ep,
                                    const fiatomic_rkey_t *key,
                                    const fiatomic_cell_t *cell);
/** The strategy of a call's `count` elements under one key (an array may
 *  take another strategy than one element, never a less capable one). */
/** A CAS-loop element on this key may go to the target under contention:
 *  target-side execution is atomic with UCP's own atomics there. */
bool fiatomic_select_contention_target(fiatomic_ep_h ep,
                                       const fiatomic_rkey_t *key,
                                       const fiatomic_cell_t *cell);
fiatomic_strategy_t fiatomic_select_call(fiatomic_ep_h ep,
                                         fiatomic_rkey_t *key,
                                         const fiatomic_cell_t *cell,
                                         size_t count);
/** Whether every endpoint and key this context can have executes the cell
 *  (fi_query_atomic). */
bool fiatomic_select_configured(fiatomic_h fia, const fiatomic_cell_t *cell);

/** fiatomic_select() for the key's cache, logged at UCX's debug level (the
 *  highest one release builds of UCX print): the strategy of each cell of
 *  each key shows once. */
fiatomic_strategy_t fiatomic_select_for_key(fiatomic_ep_h ep,
                                            const fiatomic_rkey_t *key,
                                            const fiatomic_cell_t *cell);

/** fiatomic_select(), cached in the key: the post path decides with one
 *  lookup. */
static inline fiatomic_strategy_t
fiatomic_select_cached(fiatomic_ep_h ep, fiatomic_rkey_t *key,
                       const fiatomic_cell_t *cell)
{
    uint8_t *cached = (uint8_t*)key->strategy + cell->index;

    if (ucs_unlikely(*cached == FIATOMIC_STRATEGY_LAST)) {
        *cached = fiatomic_select_for_key(ep, key, cell);
    }
    return (fiatomic_strategy_t)*cached;
}

/** The strategy a call's elements under one key take, logged at UCX's
 *  request trace level (UCX_LOG_LEVEL=req), as UCP logs its requests; a
 *  UCX built with --enable-logging=trace* (or debug) prints it. */
#define fiatomic_trace_call(_ep, _key, _cell, _count, _strategy) \
    ucs_trace_req("fiatomic: ep %p key %p %s %s %s x%zu: %s", (_ep), \
                  (_key), fiatomic_family_name((_cell)->family), \
                  fiatomic_op_name((_cell)->op), \
                  fiatomic_datatype_name((_cell)->datatype), \
                  (size_t)(_count), fiatomic_strategy_name(_strategy))


/* fiatomic_ucx_compat.c: what UCP has no query for, UCX-version workarounds */
/** The atomicity domain of the ep's atomic lanes, whether its atomics need
 *  the target's progress and whether a lane is shared memory or self. */
void fiatomic_ucx_ep_detect_lanes(fiatomic_ep_h ep);
/** Which kinds of atomic lanes the context's transports can give. */
void fiatomic_ucx_context_detect_tls(fiatomic_h fia);
/** Whether UCP's atomics are missing on endpoints with the peer error
 *  mode (UCX version and protocol selection of the context). */
void fiatomic_ucx_context_detect_amo(fiatomic_h fia);
/** UCP's atomic op (fetching or not) is missing or gives wrong results on
 *  this ep's lanes with this UCX: not to be used. */
bool fiatomic_ucx_amo_broken(fiatomic_ep_h ep, ucp_atomic_op_t op,
                             bool fetch);

/* fiatomic_cpu.c: one element with CPU atomics in place */
/** Zero the padding bytes of an x87 long double (complex) value: whatever
 *  the caller's stack held there is not sent anywhere. */
void fiatomic_clear_padding(int datatype, void *value);
bool fiatomic_cpu_has_size(size_t size);
/** 1..16-byte elements (32-byte ones: fiatomic_wide_apply). */
void fiatomic_cpu_apply(const fiatomic_cell_t *cell, void *ptr,
                        const void *operand, const void *compare, void *old);

/* fiatomic_wide_lock.c: 32-byte elements under a lock every actor takes */
/** Initialize the lock table of memory this context allocated. */
void fiatomic_wide_locks_init(fiatomic_wide_locks_t *table);
/** The table at ptr in memory a peer exposed and this process maps, if its
 *  layout is this library's and its owners' pids are meaningful here. */
fiatomic_wide_locks_t *fiatomic_wide_locks_map(void *ptr);
/** One 32-byte element at `ptr`, `offset` bytes into its exposed range,
 *  under the lock of `table` (NULL: memory only this process executes on,
 *  under its context's own lock words `own_locks`). UCS_ERR_TIMED_OUT
 *  (nothing done) if a live process holds the lock for `timeout_ns`. */
ucs_status_t fiatomic_wide_apply(uint64_t *own_locks, uint64_t timeout_ns,
                                 const fiatomic_cell_t *cell,
                                 fiatomic_wide_locks_t *table,
                                 uint64_t offset, void *ptr,
                                 const void *operand, const void *compare,
                                 void *old);

/* fiatomic_atomicx_check.c: warn once when UCX_TLS names atomicx and it is
 * not loaded */
void fiatomic_check_atomicx_loaded(void);

/* fiatomic_target_*.c, the target-side strategy: fiatomic_target.h */

/* fiatomic_random.c: the kernel's CSPRNG */
ucs_status_t fiatomic_random_bytes(void *buf, size_t length);
/** A nonzero 64-bit secret, independent of every other one. */
ucs_status_t fiatomic_random_token(uint64_t *token_p);

/* fiatomic_context.c */
/** The last endpoint of a destroyed context drained: free the context. */
void fiatomic_context_release(fiatomic_h fia);
/** Free it now (nothing refers to it any more). */
void fiatomic_context_free(fiatomic_h fia);

/* fiatomic_ep.c: the context flush */
/** An endpoint flush of a context flush completed. */
void fiatomic_ctx_flush_child_done(fiatomic_req_t *child);
/** Probe the targets of every endpoint whose replies are overdue. */
void fiatomic_ctx_check_overdue(fiatomic_h fia);

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
/** An endpoint is freed: it no longer counts into its counter. */
void fiatomic_cntr_ep_freed(fiatomic_ep_h ep);

/* fiatomic_lock.c: the context's lock (multi-threaded workers only) */
ucs_status_t fiatomic_lock_init(fiatomic_h fia);
void fiatomic_lock_cleanup(fiatomic_h fia);
void fiatomic_lock_acquire(fiatomic_h fia);
bool fiatomic_lock_try(fiatomic_h fia);
/** Runs the callbacks queued meanwhile; frees a context whose last user
 *  went away while it was held. */
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

/* UCP callbacks: true when this thread may run it now (*locked: it holds
 * the lock, release with fiatomic_leave); false when another thread holds
 * the lock: the call was queued for it, return at once. */
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

/* ------------------------------------------------------------------------ */
/* Keys (fiatomic_key.c), inline: every operation looks its key up         */

/** The slot of a user's key, or NULL when it names none (never unpacked,
 *  released, or out of range). */
static inline fiatomic_key_slot_t *
fiatomic_ep_slot_lookup(fiatomic_ep_h ep, uint64_t key)
{
    uint64_t index = (key & UINT32_MAX);
    fiatomic_key_slot_t *slot;

    if (ucs_unlikely((index == 0) || (index > ep->num_slots))) {
        return NULL;
    }

    slot = &ep->slots[index - 1];
    if (ucs_unlikely((slot->key == NULL) ||
                     (slot->generation != (key >> 32)))) {
        return NULL;
    }
    return slot;
}

static inline fiatomic_rkey_t *fiatomic_ep_key_lookup(fiatomic_ep_h ep,
                                                      uint64_t key)
{
    fiatomic_key_slot_t *slot = fiatomic_ep_slot_lookup(ep, key);

    return (slot != NULL) ? slot->key : NULL;
}

/** Whether the memory of a key is still exposed, where this process can
 *  tell (always true where it cannot). Operations of strategies other than
 *  target (whose target checks itself) on a key of unexposed memory fail
 *  with UCS_ERR_INVALID_PARAM and change nothing. */
static inline bool fiatomic_key_live(fiatomic_ep_h ep,
                                     const fiatomic_rkey_t *key)
{
    if (key->same_context) {
        return fiatomic_region_find(ep->fia, key->region, key->token,
                                    key->address, key->length) != NULL;
    } else if (key->state != NULL) {
        return __atomic_load_n(key->state, __ATOMIC_ACQUIRE) == key->token;
    }
    return true; /* only UCP could tell (README, "Security") */
}

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

#endif
