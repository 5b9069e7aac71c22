/**
 * The target-side strategy, one unit (its wire formats: fiatomic_wire.h):
 *
 *   fiatomic_target_send.c   the initiator's half: elements into request
 *                            messages, the reply handler, the probe of a
 *                            target whose replies are overdue
 *   fiatomic_target_serve.c  the target's half: the request handler, the
 *                            bounds that keep a peer from growing the
 *                            process, replies; the unit's handlers on and off
 *   fiatomic_target_exec.c   the request decoder and executor
 *
 * The region table it executes on is the core's (core/fiatomic_region.h).
 * Each active message handler is registered by an entry beside its
 * definition (FIATOMIC_TARGET_DEFINE_AM). The region table, the decoder and
 * the executor read nothing of a context, so a harness (the fuzzer) drives
 * them with a table of its own and no context at all.
 */
#ifndef FIATOMIC_TARGET_H_
#define FIATOMIC_TARGET_H_

#include "core/fiatomic_context.h"

/* ------------------------------------------------------------------------ */
/* The decoder and the executor (fiatomic_target_exec.c)                     */

/** Decode, check and execute one request message; writes the reply into
 *  reply (FIATOMIC_WIRE_REPLY_MAX bytes) and returns its length. Touches
 *  nothing outside the region the request names with its token. */
size_t fiatomic_target_execute(const fiatomic_regions_t *regions,
                               const void *msg, size_t length, void *reply);

/* ------------------------------------------------------------------------ */
/* Active message handlers                                                   */

/* One handler of the unit, registered on the context's worker at the
 * context's AM id + `offset` for as long as target-side execution is on. */
typedef struct fiatomic_target_am {
    unsigned               offset; /* FIATOMIC_WIRE_AM_* */
    ucp_am_recv_callback_t cb;
} fiatomic_target_am_t;

/* Defines the entry of handler `_cb` for the messages at `_offset`, beside
 * the handler's definition. */
#define FIATOMIC_TARGET_DEFINE_AM(_name, _offset, _cb) \
    const fiatomic_target_am_t fiatomic_target_am_##_name = { \
        .offset = (_offset), \
        .cb     = (_cb) \
    }

extern const fiatomic_target_am_t fiatomic_target_am_request; /* serve.c */
extern const fiatomic_target_am_t fiatomic_target_am_reply;   /* send.c */

/* ------------------------------------------------------------------------ */
/* The rest of the library                                                   */

/** fiatomic_create(): the region table's set-up, the peers table, the
 *  handlers on (without UCP_FEATURE_AM: target-side execution off). */
ucs_status_t fiatomic_target_init(fiatomic_h fia);
/** fiatomic_destroy(): handlers off, held requests and caches dropped. */
void fiatomic_target_cleanup(fiatomic_h fia);
/** The context is freed. */
void fiatomic_target_free(fiatomic_h fia);
/** The initiator's message slots and cache are freed. */
void fiatomic_target_msgs_cleanup(fiatomic_h fia);

/** The core's way in (core/fiatomic_context.h), plugged in by create. */
extern const fiatomic_target_hooks_t fiatomic_target_hooks;

/** Probe the target if a reply awaited on the ep is overdue. */
void fiatomic_target_check_overdue(fiatomic_ep_h ep);
/** Fail every target-side message of the ep still awaiting its reply. */
void fiatomic_target_ep_fail(fiatomic_ep_h ep, ucs_status_t status);

#endif
