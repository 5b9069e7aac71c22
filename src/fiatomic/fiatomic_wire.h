/**
 * The wire format of target-side execution: one active message carries a
 * request for `count` consecutive elements; the target's reply carries the
 * status and, for the fetch and compare families, the initial values.
 * Both ends are the same build of libfiatomic on the same architecture, so
 * fields are in host order; the magic and version catch anything else.
 */
#ifndef FIATOMIC_WIRE_H_
#define FIATOMIC_WIRE_H_

#include <stddef.h>
#include <stdint.h>

#define FIATOMIC_WIRE_REQ_MAGIC   0xf1a7a3e0u
#define FIATOMIC_WIRE_REPLY_MAGIC 0xf1a7a3e1u
#define FIATOMIC_WIRE_VERSION     1

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

/* Lock words of a table of locks for 32-byte elements (in memory peers map,
 * and a context's own): every actor on such memory must hash alike. */
#define FIATOMIC_WIDE_LOCKS_SHIFT 6
#define FIATOMIC_WIDE_LOCKS       (1u << FIATOMIC_WIDE_LOCKS_SHIFT)

typedef struct fiatomic_wire_req {
    uint32_t magic;
    uint8_t  version;
    uint8_t  family;    /* fiatomic_family_t */
    uint8_t  op;        /* enum fi_op */
    uint8_t  datatype;  /* enum fi_datatype */
    uint32_t count;     /* elements, >= 1 */
    uint32_t region;    /* exposed region index at the target */
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
