/**
 * Target-side execution: the regions a context exposes to target-side
 * requests, and the decoder and executor of one request.
 *
 * They read nothing of a context but its region table, so a harness (the
 * fuzzer) drives them with a table of its own and no context at all.
 */
#ifndef FIATOMIC_TARGET_H_
#define FIATOMIC_TARGET_H_

#include "fiatomic.h"
#include "fiatomic_wire.h"

struct fiatomic_wide_locks;

/* A region a context exposes: requests name it by index and must present
 * its token. */
typedef struct fiatomic_region {
    uint64_t                   token;      /* 0: the slot is free */
    uint8_t                    *address;   /* the exposed range */
    uint64_t                   length;
    struct fiatomic_wide_locks *wide_locks; /* the lock table of its 32-byte
                                              elements in the mapping, or
                                              NULL (own_locks below) */
    fiatomic_mem_h             mem;        /* the owner; not read by the
                                              decoder */
} fiatomic_region_t;

/* A context's regions by index, and what executing on them needs. */
typedef struct fiatomic_regions {
    fiatomic_region_t *slot;
    unsigned          count;
    uint64_t          *own_locks;  /* FIATOMIC_WIDE_LOCKS lock words of the
                                      32-byte elements of regions without a
                                      lock table (fiatomic_wide_lock.c) */
    uint64_t          timeout_ns;  /* longest wait for such a lock: the
                                      context's operation timeout */
} fiatomic_regions_t;

/** Expose `mem` as a new region of the table; sets mem's region index. */
ucs_status_t fiatomic_region_add(fiatomic_regions_t *regions,
                                 fiatomic_mem_h mem);
void fiatomic_region_remove(fiatomic_regions_t *regions, fiatomic_mem_h mem);
/** The live region `region` of this context if its token and range are
 *  exactly these, else NULL: how a key is recognised as this context's own
 *  (a peer can copy the nonce of any key it holds, not a live token). */
fiatomic_mem_h fiatomic_region_find(fiatomic_h fia, uint32_t region,
                                    uint64_t token, uint64_t address,
                                    uint64_t length);

/** Decode, check and execute one request message; writes the reply into
 *  reply (FIATOMIC_WIRE_REPLY_MAX bytes) and returns its length. Touches
 *  nothing outside the region the request names with its token. */
size_t fiatomic_target_execute(const fiatomic_regions_t *regions,
                               const void *msg, size_t length, void *reply);

#endif
