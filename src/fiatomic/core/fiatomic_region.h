/**
 * The memory a context exposes: the region table that target-side requests
 * and keys name (fiatomic_region.c, on the shared handle table) and the
 * exposed memory object that owns each region (fiatomic_mem.c). The
 * region table, like the target's decoder, reads nothing of a context.
 */
#ifndef FIATOMIC_REGION_H_
#define FIATOMIC_REGION_H_

#include "base/fiatomic_handle.h"
#include "base/fiatomic_int.h"
#include "base/fiatomic_wire.h"

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
    uint32_t                   denied;     /* FIATOMIC_KEY_F_NO_READ /
                                              NO_WRITE: the accesses peers
                                              lack */
    fiatomic_mem_h             mem;        /* the owner (which holds the
                                              region); not read by the
                                              decoder */
} fiatomic_region_t;

/** The accesses (FIATOMIC_KEY_F_NO_READ / NO_WRITE bits) an operation
 *  needs: it reads when it returns data (fetch and compare families) and
 *  writes when it may update the target (every op but FI_ATOMIC_READ). */
static inline uint32_t fiatomic_access_needed(int family, int op)
{
    return ((family != FIATOMIC_FAMILY_BASE) ? FIATOMIC_KEY_F_NO_READ : 0) |
           ((op != FI_ATOMIC_READ) ? FIATOMIC_KEY_F_NO_WRITE : 0);
}

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
/* Exposed memory (fiatomic_mem.c)                                          */

struct fiatomic_mem {
    fiatomic_h fia;
    ucp_mem_h  memh;      /* NULL: target-only, not registered with UCP */
    void       *address;
    size_t     length;
    fiatomic_region_t region; /* its entry in the context's region table */
    void       *owned;    /* target-only memory the library allocated */
    uint64_t   *state;    /* NULL, or the state word peers that map the
                             memory see: the region's token while exposed,
                             0 after (fiatomic_mem.c) */
    struct fiatomic_wide_locks *wide_locks; /* NULL, or the lock table of
                             its 32-byte elements, in the mapping */
};

#endif
