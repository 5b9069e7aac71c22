/**
 * The selector's one question, whether a strategy's table executes a cell
 * on an endpoint and key, inline for the two files that ask it: the
 * selector (fiatomic_select.c), which looks the table up by its id, and the
 * CAS loop's hand-over of a contended element to the target
 * (fiatomic_select_contention.c), which names the target's table (the
 * selector's table names the CAS loop's, which asks the hand-over).
 */
#ifndef FIATOMIC_SELECT_H_
#define FIATOMIC_SELECT_H_

#include "core/fiatomic_strategy.h"

/*
 * The operation flags that change how a strategy executes a cell (native
 * turns a base-family post into a fetching atomic for FI_DELIVERY_COMPLETE).
 * A strategy is usable for a cell only when it is under each of them: the
 * queries have no flags, so a call's flags never turn a supported cell into
 * a wrong result or a refusal.
 */
static const uint64_t fiatomic_select_flag_sets[] = {
    0, FI_DELIVERY_COMPLETE
};

static UCS_F_ALWAYS_INLINE bool
fiatomic_select_ops_usable(const fiatomic_strategy_ops_t *ops,
                           fiatomic_ep_h ep, const fiatomic_rkey_t *key,
                           const fiatomic_cell_t *cell)
{
    size_t i;

    if ((ops == NULL) || !ops->supports(cell)) {
        return false;
    }
    for (i = 0; i < ucs_static_array_size(fiatomic_select_flag_sets); ++i) {
        if (!ops->usable(ep, key, cell, fiatomic_select_flag_sets[i])) {
            return false;
        }
    }
    return true;
}

#endif
