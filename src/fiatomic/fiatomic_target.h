/**
 * The target-side strategy, one unit (its wire formats: fiatomic_wire.h):
 *
 *   fiatomic_target_send.c   the initiator's half: elements into request
 *                            messages, the reply handler, the probe of a
 *                            target whose replies are overdue
 *   fiatomic_target_serve.c  the target's half: the request handler, the
 *                            bounds that keep a peer from growing the
 *                            process, replies; the unit's handlers on and off
 *   fiatomic_region.c        the region table: what requests may touch
 *   fiatomic_target_exec.c   the request decoder and executor
 *
 * Each active message handler is registered by an entry beside its
 * definition (FIATOMIC_TARGET_DEFINE_AM). The region table, the decoder and
 * the executor read nothing of a context, so a harness (the fuzzer) drives
 * them with a table of its own and no context at all.
 */
#ifndef FIATOMIC_TARGET_H_
#define FIATOMIC_TARGET_H_

#include "fiatomic.h"
#include "fiatomic_handle.h"
#include "fiatomic_wire.h"

/* ------------------------------------------------------------------------ */
/* The region table (fiatomic_region.c)                                      */

/*
 * A region a context exposes. Requests and keys name it by its handle in
 * the context's region table (fiatomic_handle.h: slot index and
 * generation, so a handle of memory since unexposed names nothing, even
 * once its slot holds other memory) and must present its token: 64 random
 * bits drawn for it alone, the secret a peer holding other keys of the
 * context cannot make up.
 */
typedef struct fiatomic_region {
    uint64_t                   handle;     /* in the table; 0: in none */
    uint64_t                   token;      /* never 0 */
    uint8_t                    *address;   /* the exposed range */
    uint64_t                   length;
    fiatomic_wide_locks_t      *wide_locks; /* the lock table of its 32-byte
                                              elements in the mapping, or
                                              NULL (own_locks below) */
    fiatomic_mem_h             mem;        /* the owner (which holds the
                                              region); not read by the
                                              decoder */
} fiatomic_region_t;

/* A context's regions, and what executing on them needs. */
typedef struct fiatomic_regions {
    fiatomic_handle_table_t table;      /* of fiatomic_region_t */
    uint64_t                *own_locks; /* FIATOMIC_WIDE_LOCKS lock words of
                                           the 32-byte elements of regions
                                           without a lock table
                                           (fiatomic_wide_lock.c) */
    uint64_t                timeout_ns; /* longest wait for a 32-byte
                                           element's lock: the context's
                                           operation timeout */
} fiatomic_regions_t;

/** An empty table; executing on its regions takes these lock words and
 *  waits at most timeout_ns for one. */
void fiatomic_regions_init(fiatomic_regions_t *regions, uint64_t *own_locks,
                           uint64_t timeout_ns);
/** Frees the table (not the regions). */
void fiatomic_regions_cleanup(fiatomic_regions_t *regions);
/** Expose a region (its range, wide_locks and mem filled in): draws its
 *  token, sets its handle. */
ucs_status_t fiatomic_region_add(fiatomic_regions_t *regions,
                                 fiatomic_region_t *region);
/** Unexpose a region: its handle and token name nothing from now on. */
void fiatomic_region_remove(fiatomic_regions_t *regions,
                            fiatomic_region_t *region);

/** The live region a handle names if its token is this one, else NULL:
 *  what a request must name (inline: every request looks its region up). */
static inline const fiatomic_region_t *
fiatomic_region_lookup(const fiatomic_regions_t *regions, uint64_t handle,
                       uint64_t token)
{
    const fiatomic_region_t *region = (const fiatomic_region_t*)
            fiatomic_handle_get(&regions->table, handle);

    /* a live region's token is never 0, so 0 matches none */
    return ((region != NULL) && (region->token == token)) ? region : NULL;
}

/** The owner of the live region `handle` if its token and range are
 *  exactly these, else NULL: how a key is recognised as this context's own
 *  (a peer can copy the nonce of any key it holds, not a live token). */
fiatomic_mem_h fiatomic_region_find(const fiatomic_regions_t *regions,
                                    uint64_t handle, uint64_t token,
                                    uint64_t address, uint64_t length);

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

/** Probe the target if a reply awaited on the ep is overdue. */
void fiatomic_target_check_overdue(fiatomic_ep_h ep);
/** Fail every target-side message of the ep still awaiting its reply. */
void fiatomic_target_ep_fail(fiatomic_ep_h ep, ucs_status_t status);

#endif
