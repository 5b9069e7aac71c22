/**
 * An endpoint's key table, below the unpacking of keys (fiatomic_key.c):
 * releasing a key (the user's call) or every key of an endpoint being
 * freed, and forgetting every key's cached strategies when the endpoint's
 * lanes may have changed, which also decides again whether UCP executes a
 * key's atomics as software atomics.
 */
#include "core/fiatomic_key.h"

#include <stdlib.h>
#include <string.h>

void fiatomic_key_rkey_destroy(fiatomic_rkey_t *key)
{
    if (key->rkey != NULL) {
        ucp_rkey_destroy(key->rkey);
    }
}

void fiatomic_ep_keys_free(fiatomic_ep_h ep)
{
    fiatomic_rkey_t *key;
    uint32_t i;

    for (i = 0; i < ep->keys.size; ++i) {
        key = fiatomic_handle_at(&ep->keys, i);
        if (key != NULL) {
            fiatomic_key_rkey_destroy(key);
            free(key);
        }
    }
    fiatomic_handle_table_cleanup(&ep->keys);
}

/* UCP executes atomics on memory its CPU-atomic transport cannot reach
 * (posix/sysv on memory they did not allocate) as software atomics, as it
 * does when there is no atomic lane at all (tcp). */
static void fiatomic_key_set_sw_amo(fiatomic_ep_h ep, fiatomic_rkey_t *key)
{
    key->sw_amo = ep->needs_progress ||
                  ((ep->domain == FIATOMIC_DOMAIN_CPU) &&
                   (key->local_base == NULL));
}

void fiatomic_ep_keys_reset(fiatomic_ep_h ep)
{
    fiatomic_rkey_t *key;
    uint32_t i;

    for (i = 0; i < ep->keys.size; ++i) {
        key = fiatomic_handle_at(&ep->keys, i);
        if (key != NULL) {
            fiatomic_key_set_sw_amo(ep, key);
            memset(key->strategy, FIATOMIC_STRATEGY_LAST,
                   sizeof(key->strategy));
        }
    }
}

FIATOMIC_API ucs_status_t fiatomic_rkey_release(fiatomic_ep_h ep, uint64_t key)
{
    fiatomic_rkey_t *rkey;
    bool locked;

    if (ep == NULL) {
        return UCS_ERR_INVALID_PARAM;
    }

    locked = fiatomic_enter(ep->fia);
    rkey   = fiatomic_handle_remove(&ep->keys, key);
    if (rkey != NULL) {
        fiatomic_key_rkey_destroy(rkey);
        free(rkey);
    }
    fiatomic_leave(ep->fia, locked);
    return (rkey != NULL) ? UCS_OK : UCS_ERR_INVALID_PARAM;
}
