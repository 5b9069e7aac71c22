/**
 * The context's look at what is overdue: each of its endpoints', in turn
 * (fiatomic_ep_check_overdue, fiatomic_ep_timeout.c), for the waits that
 * belong to the context rather than to one endpoint: a counter's
 * (fiatomic_cntr_wait), a context flush's (fiatomic_request_check_status),
 * and a program's that waits by progressing the worker alone
 * (fiatomic_check_overdue).
 */
#include "core/fiatomic_ep.h"

void fiatomic_ctx_check_overdue(fiatomic_h fia)
{
    fiatomic_ep_h ep, tmp;

    /* a callback of a request that failed may destroy its endpoint */
    ucs_list_for_each_safe(ep, tmp, &fia->eps, list) {
        fiatomic_ep_check_overdue(ep);
    }
}

FIATOMIC_API void fiatomic_check_overdue(fiatomic_h fia)
{
    bool locked;

    if ((fia == NULL) || fia->destroyed) {
        return;
    }

    locked = fiatomic_enter(fia);
    fiatomic_ctx_check_overdue(fia);
    fiatomic_leave(fia, locked);
}
