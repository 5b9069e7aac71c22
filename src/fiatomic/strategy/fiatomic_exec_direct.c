/**
 * Direct strategy: the target memory is mapped in this process (shared
 * memory reached through ucp_rkey_ptr, or memory this very context exposed)
 * and UCP's atomics on it are CPU atomics (or, for 16/32-byte elements, out
 * of UCP's reach), so CPU atomics in place (fiatomic_cpu.c) are in the same
 * atomicity domain. No round trip, no target progress.
 */
#include "cell/fiatomic_cpu.h"
#include "core/fiatomic_strategy.h"

#include <string.h>

static bool fiatomic_direct_supports(const fiatomic_cell_t *cell)
{
    return fiatomic_cpu_has_size(cell->size);
}

/*
 * CPU atomics on 1..8-byte elements are atomic with respect to UCP's own
 * only when UCP's are CPU atomics too (one actor, fi_atomic(3)). 16/32-byte
 * elements are out of UCP's reach, so only our CPU paths touch them. A
 * 32-byte element is executed under a lock every actor on its memory takes:
 * direct where this process maps the memory's lock table (ALLOCATE memory),
 * or from the exposing context itself.
 */
static bool fiatomic_direct_usable(const fiatomic_ep_h ep,
                                   const fiatomic_rkey_t *key,
                                   const fiatomic_cell_t *cell,
                                   uint64_t flags)
{
    return fiatomic_direct_supports(cell) && (key->rkey != NULL) &&
           (key->local_base != NULL) &&
           ((cell->size <= 8) ? (ep->domain == FIATOMIC_DOMAIN_CPU) :
                                ((cell->size == 16) || key->same_context ||
                                 (key->wide_locks != NULL)));
}

static bool fiatomic_direct_needs_target_progress(const fiatomic_rkey_t *key)
{
    return false;
}

static size_t fiatomic_direct_start(fiatomic_req_t *req, size_t first,
                                    size_t count)
{
    fiatomic_elem_t *elem = &req->elems[first];
    fiatomic_rkey_t *key  = elem->key;
    uint64_t offset       = elem->raddr - key->address;
    uint8_t old[FIATOMIC_MAX_ELEM_SIZE];
    ucs_status_t status;

    if (req->cell->size == 32) {
        status = fiatomic_wide_apply(req->fia->wide_locks,
                                     req->fia->op_timeout_ns, req->cell,
                                     key->wide_locks, offset,
                                     key->local_base + offset,
                                     elem->operand, elem->compare, old);
    } else {
        fiatomic_cpu_apply(req->cell, key->local_base + offset,
                           elem->operand, elem->compare, old);
        status = UCS_OK;
    }
    if ((status == UCS_OK) && (elem->result != NULL)) {
        memcpy(elem->result, old, req->cell->size);
    }
    fiatomic_elem_done(elem, status);
    return 1;
}

const fiatomic_strategy_ops_t fiatomic_direct_ops = {
    .id                    = FIATOMIC_STRATEGY_DIRECT,
    .name                  = "direct",
    .supports              = fiatomic_direct_supports,
    .usable                = fiatomic_direct_usable,
    .start                 = fiatomic_direct_start,
    .needs_target_progress = fiatomic_direct_needs_target_progress
};
