/**
 * Same-address ordering (fi_endpoint(3) msg_order, FI_ORDER_ATOMIC_RAR/RAW/
 * WAR/WAW) on endpoints that ask for it: which earlier operation a later one
 * must wait for. The endpoint (fiatomic_ep.c) holds a waiting operation in
 * its deferred queue and starts it when the earlier ones it overlaps have
 * completed at the target.
 *
 * An atomic "reads" when it returns data (fetch and compare families) and
 * "writes" when it may update the target (every op but ATOMIC_READ), as
 * fi_endpoint(3) counts them. Two operations overlap when their byte extents
 * at the target intersect, even partly; an operation's extent runs from its
 * lowest to its highest element (a vector with gaps counts as its whole
 * span). Addresses are compared whatever the key: two keys of one memory
 * alias, and an extra wait between distinct memories is only a delay.
 *
 * No wait where the transport already orders: two operations that are both
 * native (one UCP atomic per element) on an endpoint whose atomics are CPU
 * atomics (shared memory and self execute them in place; software atomics
 * run in arrival order from one lane). Anything else (CAS loops, target-side
 * messages whose rendezvous may overtake an eager message, direct CPU
 * atomics that would run before an earlier operation reached the target,
 * device atomics) waits.
 */
#include "cell/fiatomic_cell.h"
#include "core/fiatomic_request.h"
#include "core/fiatomic_ep.h"

#include <ucs/sys/math.h>

#define FIATOMIC_ORDER_READS  0x1
#define FIATOMIC_ORDER_WRITES 0x2

void fiatomic_order_prepare(fiatomic_req_t *req)
{
    const fiatomic_cell_t *cell = req->cell;
    uint64_t lo = UINT64_MAX, hi = 0, end;
    bool native = true;
    size_t i;

    for (i = 0; i < req->count; ++i) {
        end = req->elems[i].raddr + cell->size;
        lo  = ucs_min(lo, req->elems[i].raddr);
        hi  = ucs_max(hi, end);
        native &= (req->elems[i].strategy == FIATOMIC_STRATEGY_NATIVE);
    }
    req->order_lo     = lo;
    req->order_hi     = hi;
    req->order_native = native;
    req->order_kind   = ((cell->family != FIATOMIC_FAMILY_BASE) ?
                         FIATOMIC_ORDER_READS : 0) |
                        ((cell->op != FI_ATOMIC_READ) ?
                         FIATOMIC_ORDER_WRITES : 0);
}

/* `later` must not execute before `earlier` has. */
static bool fiatomic_order_conflict(fiatomic_ep_h ep,
                                    const fiatomic_req_t *earlier,
                                    const fiatomic_req_t *later)
{
    uint64_t order = ep->msg_order;
    unsigned e     = earlier->order_kind, l = later->order_kind;

    if ((earlier->kind != FIATOMIC_REQ_OP) ||
        (earlier->order_hi <= later->order_lo) ||
        (later->order_hi <= earlier->order_lo)) {
        return false;
    }

    if (earlier->order_native && later->order_native &&
        (ep->domain == FIATOMIC_DOMAIN_CPU)) {
        return false; /* the transport executes them in posting order */
    }

    return ((order & FI_ORDER_ATOMIC_RAR) && (e & FIATOMIC_ORDER_READS) &&
            (l & FIATOMIC_ORDER_READS)) ||
           ((order & FI_ORDER_ATOMIC_RAW) && (e & FIATOMIC_ORDER_WRITES) &&
            (l & FIATOMIC_ORDER_READS)) ||
           ((order & FI_ORDER_ATOMIC_WAR) && (e & FIATOMIC_ORDER_READS) &&
            (l & FIATOMIC_ORDER_WRITES)) ||
           ((order & FI_ORDER_ATOMIC_WAW) && (e & FIATOMIC_ORDER_WRITES) &&
            (l & FIATOMIC_ORDER_WRITES));
}

bool fiatomic_order_must_wait(fiatomic_ep_h ep, const fiatomic_req_t *req)
{
    const fiatomic_req_t *other;

    /* started and not completed */
    ucs_list_for_each(other, &ep->outstanding_list, list) {
        if (fiatomic_order_conflict(ep, other, req)) {
            return true;
        }
    }

    /* posted before it and still waiting */
    ucs_list_for_each(other, &ep->deferred, list) {
        if (other == req) {
            break;
        } else if (fiatomic_order_conflict(ep, other, req)) {
            return true;
        }
    }
    return false;
}
