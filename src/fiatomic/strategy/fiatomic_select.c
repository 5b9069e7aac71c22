/**
 * The selector: the only place that chooses a strategy. The call, the
 * per-endpoint query (fiatomic_query_cell) and the context query
 * (fi_query_atomic) all ask it the same question, so a cell reported
 * supported is executed by a strategy that computes fi_atomic(3)'s result,
 * and a forced strategy that cannot is reported unsupported.
 */
#include "strategy/fiatomic_select.h"

#include <string.h>

static const fiatomic_strategy_ops_t *const
fiatomic_strategy_table[FIATOMIC_STRATEGY_LAST] = {
    [FIATOMIC_STRATEGY_NATIVE] = &fiatomic_native_ops,
    [FIATOMIC_STRATEGY_CAS]    = &fiatomic_cas_ops,
    [FIATOMIC_STRATEGY_DIRECT] = &fiatomic_direct_ops,
    [FIATOMIC_STRATEGY_TARGET] = &fiatomic_target_ops
};

const fiatomic_strategy_ops_t *fiatomic_strategy_ops(fiatomic_strategy_t id)
{
    return (((int)id <= FIATOMIC_STRATEGY_NONE) ||
            (id >= FIATOMIC_STRATEGY_LAST)) ? NULL :
           fiatomic_strategy_table[id];
}

static bool fiatomic_select_usable(fiatomic_strategy_t id, fiatomic_ep_h ep,
                                   const fiatomic_rkey_t *key,
                                   const fiatomic_cell_t *cell)
{
    return fiatomic_select_ops_usable(fiatomic_strategy_ops(id), ep, key,
                                      cell);
}

/* Preference order when no strategy is forced. */
static fiatomic_strategy_t fiatomic_select_auto(fiatomic_ep_h ep,
                                                const fiatomic_rkey_t *key,
                                                const fiatomic_cell_t *cell)
{
    bool target = fiatomic_select_usable(FIATOMIC_STRATEGY_TARGET, ep, key,
                                         cell);

    if (fiatomic_select_usable(FIATOMIC_STRATEGY_DIRECT, ep, key, cell)) {
        return FIATOMIC_STRATEGY_DIRECT; /* a local atomic, no round trip */
    } else if (fiatomic_select_usable(FIATOMIC_STRATEGY_NATIVE, ep, key,
                                      cell)) {
        return FIATOMIC_STRATEGY_NATIVE;
    } else if (target && ((cell->size > 8) || key->sw_amo)) {
        /* UCP's atomics need the target's CPU anyway: one round trip
         * instead of a CAS loop's two or more. */
        return FIATOMIC_STRATEGY_TARGET;
    } else if (fiatomic_select_usable(FIATOMIC_STRATEGY_CAS, ep, key, cell)) {
        return FIATOMIC_STRATEGY_CAS;
    } else if (target) {
        return FIATOMIC_STRATEGY_TARGET;
    }
    return FIATOMIC_STRATEGY_NONE;
}

fiatomic_strategy_t fiatomic_select(fiatomic_ep_h ep,
                                    const fiatomic_rkey_t *key,
                                    const fiatomic_cell_t *cell)
{
    fiatomic_strategy_t forced = ep->fia->forced;

    if (forced == FIATOMIC_STRATEGY_NONE) {
        return fiatomic_select_auto(ep, key, cell);
    }
    return fiatomic_select_usable(forced, ep, key, cell) ? forced :
           FIATOMIC_STRATEGY_NONE;
}

fiatomic_strategy_t fiatomic_select_for_key(fiatomic_ep_h ep,
                                            const fiatomic_rkey_t *key,
                                            const fiatomic_cell_t *cell)
{
    fiatomic_strategy_t strategy = fiatomic_select(ep, key, cell);

    ucs_debug("fiatomic: ep %p key %p (%s%s%s) %s %s %s: %s%s", ep, key,
              key->sw_amo ? "software atomics" : "UCP atomic lane",
              key->local_base ? ", mapped" : "",
              key->target_ok ? ", target-side ok" : "",
              fiatomic_family_name(cell->family), fiatomic_op_name(cell->op),
              fiatomic_datatype_name(cell->datatype),
              fiatomic_strategy_name(strategy),
              (ep->fia->forced != FIATOMIC_STRATEGY_NONE) ?
              " (FIATOMIC_STRATEGY)" : "");
    return strategy;
}

fiatomic_strategy_t fiatomic_select_call(fiatomic_ep_h ep,
                                         fiatomic_rkey_t *key,
                                         const fiatomic_cell_t *cell,
                                         size_t count)
{
    fiatomic_strategy_t strategy = fiatomic_select_cached(ep, key, cell);

    /* An array whose cell is native over software atomics (tcp) goes to
     * the target in one message instead of one UCP round trip per
     * element. */
    if ((count > 1) && (strategy == FIATOMIC_STRATEGY_NATIVE) &&
        (ep->fia->forced == FIATOMIC_STRATEGY_NONE) && key->sw_amo &&
        fiatomic_select_usable(FIATOMIC_STRATEGY_TARGET, ep, key, cell)) {
        return FIATOMIC_STRATEGY_TARGET;
    }
    return strategy;
}

/* ------------------------------------------------------------------------ */
/* The context query: every kind of endpoint and key the context can have   */

/*
 * The endpoints a context's transports can give, each with a key that
 * promises nothing the memory may not give (not mapped here: direct is a
 * property of a key, and fiatomic_query_cell answers for one):
 *  - software atomics (no atomic lane, or memory the shared-memory
 *    transport did not allocate): always possible;
 *  - UCP's own atomic lanes with CPU atomics (shm, self);
 *  - atomic lanes on a device.
 */
typedef enum {
    FIATOMIC_PROFILE_SW,
    FIATOMIC_PROFILE_CPU_AMO,
    FIATOMIC_PROFILE_DEVICE,
    FIATOMIC_PROFILE_LAST
} fiatomic_profile_t;

static bool fiatomic_profile_possible(fiatomic_h fia, fiatomic_profile_t p)
{
    switch (p) {
    case FIATOMIC_PROFILE_SW:
        return true;
    case FIATOMIC_PROFILE_CPU_AMO:
        return fia->tl_cpu_amo;
    default:
        return fia->tl_device;
    }
}

static void fiatomic_profile_make(fiatomic_h fia, fiatomic_profile_t p,
                                  bool ucp_amo_ok, struct fiatomic_ep *ep,
                                  fiatomic_rkey_t *key)
{
    memset(ep, 0, sizeof(*ep));
    memset(key, 0, sizeof(*key));
    ep->fia            = fia;
    ep->domain         = (p == FIATOMIC_PROFILE_DEVICE) ?
                         FIATOMIC_DOMAIN_DEVICE : FIATOMIC_DOMAIN_CPU;
    ep->needs_progress = (p == FIATOMIC_PROFILE_SW);
    ep->sm_amo         = (p == FIATOMIC_PROFILE_CPU_AMO);
    ep->ucp_amo_ok     = ucp_amo_ok;
    /* a key of a peer like us: UCP can reach it, and it takes target-side
     * requests when we can send them */
    key->rkey          = (ucp_rkey_h)(uintptr_t)key; /* never used */
    key->sw_amo        = (p == FIATOMIC_PROFILE_SW);
    key->target_ok     = fia->am_enabled;
}

/*
 * Where UCP has no atomics on endpoints with the peer error mode (UCX 1.22's
 * v2 protocols, fiatomic_ucx_compat.c), an endpoint of each profile may be
 * one of those too: the context cannot know which error mode its endpoints
 * will have, so a cell only UCP's atomics execute is not reported
 * supported (fiatomic_query_cell answers for one endpoint).
 */
bool fiatomic_select_configured(fiatomic_h fia, const fiatomic_cell_t *cell)
{
    struct fiatomic_ep ep;
    fiatomic_rkey_t key;
    int p, amo;

    for (p = 0; p < FIATOMIC_PROFILE_LAST; ++p) {
        if (!fiatomic_profile_possible(fia, (fiatomic_profile_t)p)) {
            continue;
        }
        for (amo = fia->ucp_amo_peer_err_broken ? 0 : 1; amo <= 1; ++amo) {
            fiatomic_profile_make(fia, (fiatomic_profile_t)p, amo, &ep, &key);
            if (fiatomic_select(&ep, &key, cell) == FIATOMIC_STRATEGY_NONE) {
                return false;
            }
        }
    }
    return true;
}
