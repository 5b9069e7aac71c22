/**
 * Keys of initiator endpoints (fiatomic_key.c): what a packed key was
 * unpacked into, the slots that the user's uint64_t names, and the lookup
 * every operation makes.
 */
#ifndef FIATOMIC_KEY_H_
#define FIATOMIC_KEY_H_

#include "core/fiatomic_ep.h"

struct fiatomic_rkey {
    ucp_rkey_h rkey;         /* NULL: target-only key */
    uint64_t   address;      /* exposed range at the target */
    uint64_t   length;
    uint8_t    *local_base;  /* non-NULL: the range is mapped here (direct) */
    bool       same_context; /* exposed by this very context */
    bool       sw_amo;       /* UCP's atomics on it are software atomics,
                                executed by the target's CPU on progress */
    bool       target_ok;    /* target-side requests can be sent */
    bool       no_ucp_amo;   /* the exposing context has no UCP atomics:
                                they would never complete there */
    uint32_t   denied;       /* FIATOMIC_KEY_F_NO_READ / NO_WRITE: the
                                accesses the memory does not grant */
    uint64_t   region;       /* the region's handle and token at the */
    uint64_t   token;        /* target (target-side requests name both) */
    const uint64_t *state;   /* the mapped state word, or NULL */
    fiatomic_wide_locks_t *wide_locks; /* the lock table of its 32-byte
                                elements that every actor takes, or NULL */
    /* fiatomic_select() per cell, filled on first use: the post path
     * decides with one lookup (FIATOMIC_STRATEGY_LAST = not yet known) */
    uint8_t    strategy[FIATOMIC_FAMILY_LAST][FIATOMIC_OP_COUNT]
                       [FIATOMIC_DATATYPE_COUNT];
};

/* fiatomic_key_table.c */
/** Forget every key's cached strategies (the endpoint's lanes changed). */
void fiatomic_ep_keys_reset(fiatomic_ep_h ep);
/** Release every key of an endpoint being freed. */
void fiatomic_ep_keys_free(fiatomic_ep_h ep);
/** Let go of the UCP rkey of a key (the key itself is the caller's). */
void fiatomic_key_rkey_destroy(fiatomic_rkey_t *key);

/* Inline: every operation looks its key up. */

/** The key a user's uint64_t names (a handle of ep->keys), or NULL when it
 *  names none (never unpacked, released, or out of range). */
static inline fiatomic_rkey_t *fiatomic_ep_key_lookup(fiatomic_ep_h ep,
                                                      uint64_t key)
{
    return (fiatomic_rkey_t*)fiatomic_handle_get(&ep->keys, key);
}

/** Whether the memory of a key is still exposed, where this process can
 *  tell (always true where it cannot). Operations of strategies other than
 *  target (whose target checks itself) on a key of unexposed memory fail
 *  with UCS_ERR_INVALID_PARAM and change nothing. */
static inline bool fiatomic_key_live(fiatomic_ep_h ep,
                                     const fiatomic_rkey_t *key)
{
    if (key->same_context) {
        return fiatomic_region_find(&ep->fia->regions, key->region, key->token,
                                    key->address, key->length) != NULL;
    } else if (key->state != NULL) {
        return __atomic_load_n(key->state, __ATOMIC_ACQUIRE) == key->token;
    }
    return true; /* only UCP could tell (README, "Security") */
}

#endif
