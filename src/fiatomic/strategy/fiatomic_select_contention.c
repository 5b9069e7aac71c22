/**
 * The selector's answer to the CAS loop (fiatomic_exec_cas.c): whether an
 * element whose CAS keeps failing may go to the target instead. Apart from
 * the selector, whose table names the CAS loop's: the target's strategy is
 * the only one it asks about (fiatomic_select.h).
 */
#include "strategy/fiatomic_select.h"

/*
 * Under contention a CAS loop over software atomics (tcp) pays a network
 * round trip per failed attempt, and the target's CPU serves every one of
 * them: with many initiators on one word the retries take the target's
 * time from the operations that succeed, and the aggregate rate falls below
 * that of two initiators. Where UCP's atomics on the key are executed by the
 * target's CPU anyway, target-side execution is atomic with them and with
 * every CAS (the same CPU, one atomic instruction per element) and costs one
 * round trip that cannot fail: the loop hands a contended element over
 * (fiatomic_exec_cas.c). Never on a device's atomics (the target's CPU is
 * not atomic with the NIC) nor where UCP's atomics are CPU atomics on
 * memory the initiator maps (a failed CAS there costs a cache miss, not a
 * round trip).
 */
bool fiatomic_select_contention_target(fiatomic_ep_h ep,
                                       const fiatomic_rkey_t *key,
                                       const fiatomic_cell_t *cell)
{
    return ep->fia->cas_handoff && key->sw_amo && (key->rkey != NULL) &&
           fiatomic_select_ops_usable(&fiatomic_target_ops, ep, key, cell);
}
