/**
 * Every format two processes running libfiatomic share, in one place:
 *
 * - the packed key a context hands out for memory it exposes
 *   (fiatomic_mem_pack_key writes it, fiatomic_rkey_unpack checks it);
 * - the layout of exposed memory that peers map (ALLOCATE): the state word
 *   after the range and the lock table of its 32-byte elements;
 * - the active messages of target-side execution: a request for `count`
 *   consecutive elements, and the target's reply with the status and, for
 *   the fetch and compare families, the initial values.
 *
 * Both ends are the same build of libfiatomic on the same architecture, so
 * fields are in host order; magics (and versions) catch anything else, and
 * every field is checked by its reader before use.
 */
#ifndef FIATOMIC_WIRE_H_
#define FIATOMIC_WIRE_H_

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------ */
/* The packed key                                                            */

/* The header of a packed key, followed by UCP's rkey buffer (rkey_size
 * bytes; none with FIATOMIC_KEY_F_NO_RKEY). */
typedef struct fiatomic_key_hdr {
    uint32_t magic;    /* FIATOMIC_KEY_MAGIC */
    uint32_t rkey_size;
    uint64_t nonce;    /* the exposing context; same one -> direct ok */
    uint64_t address;
    uint64_t length;
    uint64_t token;    /* the region's secret for target-side requests */
    uint64_t region;   /* the region's handle at the exposing context:
                          generation << 32 | (slot index + 1) */
    uint32_t flags;    /* FIATOMIC_KEY_F_* */
    uint32_t reserved; /* 0 */
} fiatomic_key_hdr_t;

#define FIATOMIC_KEY_MAGIC 0xf1a70112u

/* Key flags */
#define FIATOMIC_KEY_F_TARGET  0x1 /* the exposing context executes
                                      requests */
#define FIATOMIC_KEY_F_STATE   0x2 /* a state word follows the range at the
                                      next 8-byte boundary */
#define FIATOMIC_KEY_F_NO_RKEY 0x4 /* target-only: no UCP rkey follows */
#define FIATOMIC_KEY_F_WIDE_LOCKS 0x8 /* a lock table for 32-byte elements
                                         follows the state word (at
                                         FIATOMIC_WIDE_LOCKS_OFFSET) */
#define FIATOMIC_KEY_F_NO_UCP_AMO 0x10 /* the exposing context has no UCP
                                         atomics (NO_ONESIDED): target-side
                                         or direct only */
#define FIATOMIC_KEY_F_NO_READ  0x20 /* peers may not read the memory
                                        (target-only memory) */
#define FIATOMIC_KEY_F_NO_WRITE 0x40 /* peers may not write it (likewise) */
#define FIATOMIC_KEY_F_DENY    (FIATOMIC_KEY_F_NO_READ | \
                                FIATOMIC_KEY_F_NO_WRITE)
#define FIATOMIC_KEY_F_ALL     (FIATOMIC_KEY_F_TARGET | FIATOMIC_KEY_F_STATE | \
                                FIATOMIC_KEY_F_NO_RKEY | \
                                FIATOMIC_KEY_F_WIDE_LOCKS | \
                                FIATOMIC_KEY_F_NO_UCP_AMO | \
                                FIATOMIC_KEY_F_DENY)

/* ------------------------------------------------------------------------ */
/* Exposed memory that peers map                                             */

/* Where the state word of a range lies: the region's token while exposed,
 * 0 after. */
#define FIATOMIC_STATE_OFFSET(_length) (((_length) + 7) & ~(uint64_t)7)

/* Lock words of a table of locks for 32-byte elements (in memory peers map,
 * and a context's own): every actor on such memory must hash alike. */
#define FIATOMIC_WIDE_LOCKS_SHIFT 6
#define FIATOMIC_WIDE_LOCKS       (1u << FIATOMIC_WIDE_LOCKS_SHIFT)

/*
 * The lock table of the 32-byte elements of memory peers map (ALLOCATE),
 * at the first 64-byte boundary after the state word: a layout word (magic,
 * version, number of locks: a peer maps the table only if it is exactly
 * this), the pid namespace of the exposing process (its pids are the lock
 * owners), then the lock words (fiatomic_wide_lock.c). Change the version
 * with the layout.
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

/* ------------------------------------------------------------------------ */
/* Target-side active messages                                               */

#define FIATOMIC_WIRE_REQ_MAGIC   0xf1a7a3e0u
#define FIATOMIC_WIRE_REPLY_MAGIC 0xf1a7a3e1u
#define FIATOMIC_WIRE_VERSION     2

/* The active messages, by their id's offset from the AM id every peer's
 * context is created with (fiatomic_params_t am_id). */
#define FIATOMIC_WIRE_AM_REQUEST  0
#define FIATOMIC_WIRE_AM_REPLY    1

/* A message's payload (operands + compare values) stays below this, so it
 * goes eagerly; larger arrays are split into several messages in flight. */
#define FIATOMIC_WIRE_MAX_PAYLOAD 4096

/* A target keeps at most this many replies to one peer in flight (in UCP's
 * hands) and holds at most FIATOMIC_TARGET_HELD_MAX bytes of its requests
 * beyond them; past both it drops that peer's requests. An initiator that
 * keeps no more messages in flight per endpoint is never dropped. */
#define FIATOMIC_TARGET_REPLIES_MAX 256
#define FIATOMIC_TARGET_HELD_MAX    (1024 * 1024)

typedef struct fiatomic_wire_req {
    uint32_t magic;
    uint8_t  version;
    uint8_t  family;    /* fiatomic_family_t */
    uint8_t  op;        /* enum fi_op */
    uint8_t  datatype;  /* enum fi_datatype */
    uint32_t count;     /* elements, >= 1 */
    uint32_t reserved;  /* 0 */
    uint64_t region;    /* the region's handle at the target (index and
                           generation), from its packed key */
    uint64_t token;     /* the region's secret, from its packed key */
    uint64_t raddr;     /* first element */
    uint64_t id;        /* the initiator's message id, echoed */
    /* followed by count operands (not for ATOMIC_READ), then count compare
     * values (compare family) */
} fiatomic_wire_req_t;

typedef struct fiatomic_wire_reply {
    uint32_t magic;
    int32_t  status;    /* ucs_status_t */
    uint64_t id;
    uint32_t count;     /* fetched values that follow (0 on error) */
    uint32_t reserved;
} fiatomic_wire_reply_t;

/* The largest reply: header + a full payload of fetched values. */
#define FIATOMIC_WIRE_REPLY_MAX \
    (sizeof(fiatomic_wire_reply_t) + FIATOMIC_WIRE_MAX_PAYLOAD)

#endif
