/**
 * The strategy interface: each strategy exports one table (native, CAS loop
 * and direct: strategy/fiatomic_exec_*.c; target-side:
 * target/fiatomic_target_send.c), which the core reaches only through the
 * context (fiatomic_ctx_strategy_ops); only the selector
 * (strategy/fiatomic_select.c, declared here for the layers above it)
 * chooses among them, and caches its answer in the key.
 */
#ifndef FIATOMIC_STRATEGY_H_
#define FIATOMIC_STRATEGY_H_

#include "cell/fiatomic_cell.h"
#include "core/fiatomic_context.h"
#include "core/fiatomic_key.h"
#include "core/fiatomic_request.h"

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

/** The table of a strategy as the context has it (NULL for NONE or out of
 *  range): how the core reaches a strategy, never by its name. */
static inline const fiatomic_strategy_ops_t *
fiatomic_ctx_strategy_ops(fiatomic_h fia, fiatomic_strategy_t id)
{
    return (((int)id <= FIATOMIC_STRATEGY_NONE) ||
            (id >= FIATOMIC_STRATEGY_LAST)) ? NULL : fia->strategy_ops[id];
}

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
fiatomic_strategy_t fiatomic_select_call(fiatomic_ep_h ep,
                                         fiatomic_rkey_t *key,
                                         const fiatomic_cell_t *cell,
                                         size_t count);
/** Whether every endpoint and key this context can have executes the cell
 *  (fi_query_atomic). */
bool fiatomic_select_configured(fiatomic_h fia, const fiatomic_cell_t *cell);
/* fiatomic_select_contention.c */
/** A CAS-loop element on this key may go to the target under contention:
 *  target-side execution is atomic with UCP's own atomics there. */
bool fiatomic_select_contention_target(fiatomic_ep_h ep,
                                       const fiatomic_rkey_t *key,
                                       const fiatomic_cell_t *cell);

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

/* fiatomic_exec_native.c, shared with the CAS loop */
/** Issue one UCP atomic on behalf of an element (user_data = elem). */
ucs_status_ptr_t fiatomic_ucp_amo(fiatomic_elem_t *elem, ucp_atomic_op_t op,
                                  const void *buffer, unsigned size,
                                  uint64_t raddr, void *reply,
                                  ucp_send_nbx_callback_t cb);

#endif
