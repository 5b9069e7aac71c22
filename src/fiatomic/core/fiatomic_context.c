/**
 * The end of a context's life: it is freed once fiatomic_destroy() was
 * called and its last endpoint and reply are gone, on a multi-threaded
 * worker when its lock is let go (fiatomic_lock.c asks for it). It is
 * started in api/fiatomic_create.c.
 */
#include "core/fiatomic_context.h"
#include "core/fiatomic_request.h"

#include <stdlib.h>

void fiatomic_lock_release(fiatomic_h fia)
{
    if (fiatomic_lock_unlock(fia)) {
        /* the last user of a destroyed context was a callback: nothing can
         * reach it any more */
        fiatomic_context_free(fia);
    }
}

void fiatomic_context_free(fiatomic_h fia)
{
    fia->target->free(fia);
    fiatomic_req_cache_purge(fia);
    fiatomic_lock_cleanup(fia);
    free(fia);
}

void fiatomic_context_release(fiatomic_h fia)
{
    if (fia->destroyed && (fia->num_eps == 0) &&
        (fia->replies_inflight == 0)) {
        if (fia->mt) {
            /* its lock is held: freed when it is let go */
            fia->free_pending = true;
        } else {
            fiatomic_context_free(fia);
        }
    }
}
