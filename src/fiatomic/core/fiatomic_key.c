/**
 * Keys of initiator endpoints, as UCP's rkeys are of its endpoints: the
 * packed key a target handed out is checked field by field and unpacked into
 * the endpoint's key table; the user's uint64_t is its handle there (a slot
 * and a generation, so a released key is refused). The lookup on every post
 * is inline (fiatomic_key.h); releasing keys is fiatomic_key_table.c's.
 * Unpacking a key forgets the strategies cached in every key of the
 * endpoint (its lanes may have changed since), and the first key that needs
 * the target's progress flushes the endpoint once (fiatomic_ep_wireup_flush,
 * fiatomic_flush.c).
 */
#include "cell/fiatomic_cpu.h"
#include "core/fiatomic_key.h"
#include "base/fiatomic_wire.h"

#include <ucs/debug/log_def.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/*
 * Every field of a packed key is checked before anything is done with it.
 * A key carrying this context's nonce claims to be ours, which would let the
 * direct strategy run in this process on the address it names: it is
 * accepted only if it names a live region of this context with exactly that
 * token and range (a peer sees the nonce in any key it was given, but cannot
 * make up a live token, and the range must be the region's own).
 */
static ucs_status_t fiatomic_key_hdr_check(fiatomic_h fia,
                                           const fiatomic_key_hdr_t *hdr,
                                           size_t size)
{
    if (hdr->magic != FIATOMIC_KEY_MAGIC) {
        ucs_diag("fiatomic: not a packed key (magic 0x%x)", hdr->magic);
        return UCS_ERR_INVALID_PARAM;
    }

    if (hdr->rkey_size != size - sizeof(*hdr)) {
        ucs_diag("fiatomic: key of %zu bytes says its UCP rkey has %u",
                 size, hdr->rkey_size);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((hdr->length == 0) || (hdr->address + hdr->length < hdr->address)) {
        ucs_diag("fiatomic: key with an empty or wrapping range 0x%" PRIx64
                 " + %" PRIu64, hdr->address, hdr->length);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((hdr->flags & ~FIATOMIC_KEY_F_ALL) || (hdr->reserved != 0)) {
        ucs_diag("fiatomic: key with unknown flags 0x%x or reserved bits "
                 "0x%x", hdr->flags, hdr->reserved);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((hdr->flags & (FIATOMIC_KEY_F_TARGET | FIATOMIC_KEY_F_STATE)) &&
        (hdr->token == 0)) {
        ucs_diag("fiatomic: target-side key without a token");
        return UCS_ERR_INVALID_PARAM;
    }

    if ((hdr->flags & FIATOMIC_KEY_F_NO_RKEY) ?
        ((hdr->rkey_size != 0) || !(hdr->flags & FIATOMIC_KEY_F_TARGET) ||
         (hdr->flags & FIATOMIC_KEY_F_STATE)) :
        (hdr->rkey_size == 0)) {
        ucs_diag("fiatomic: key with a UCP rkey of %u bytes and flags 0x%x",
                 hdr->rkey_size, hdr->flags);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((hdr->flags & FIATOMIC_KEY_F_DENY) &&
        !(hdr->flags & FIATOMIC_KEY_F_NO_RKEY)) {
        /* a UCP rkey grants both accesses: restricted memory has none */
        ucs_diag("fiatomic: key restricting access (flags 0x%x) with a UCP "
                 "rkey", hdr->flags);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((hdr->flags & FIATOMIC_KEY_F_STATE) &&
        (hdr->address + FIATOMIC_STATE_OFFSET(hdr->length) +
         sizeof(uint64_t) < hdr->address)) {
        ucs_diag("fiatomic: key whose state word wraps around");
        return UCS_ERR_INVALID_PARAM;
    }

    /* The lock table follows the state word: its end must not wrap
     * (the offsets are computed on a length that leaves room for it). */
    if ((hdr->flags & FIATOMIC_KEY_F_WIDE_LOCKS) &&
        (!(hdr->flags & FIATOMIC_KEY_F_STATE) ||
         (hdr->length > UINT64_MAX - FIATOMIC_MAP_EXTRA) ||
         (hdr->address + FIATOMIC_WIDE_LOCKS_OFFSET(hdr->length) +
          sizeof(fiatomic_wide_locks_t) < hdr->address))) {
        ucs_diag("fiatomic: key with a lock table but no state word, or "
                 "one that wraps around");
        return UCS_ERR_INVALID_PARAM;
    }

    if ((hdr->nonce == fia->nonce) &&
        (fiatomic_region_find(&fia->regions, hdr->region, hdr->token,
                              hdr->address, hdr->length) == NULL)) {
        ucs_diag("fiatomic: key claims to be this context's but names no "
                 "live region of it (forged, or unexposed)");
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

static ucs_status_t fiatomic_rkey_unpack_locked(fiatomic_ep_h ep,
                                                const void *key_buffer,
                                                size_t size, uint64_t *key_p)
{
    fiatomic_key_hdr_t hdr;
    fiatomic_rkey_t *key;
    ucs_status_t status;
    fiatomic_mem_h mem;
    void *ptr;

    if ((ep == NULL) || ep->destroyed || (key_buffer == NULL) ||
        (key_p == NULL) || (size < sizeof(hdr))) {
        return UCS_ERR_INVALID_PARAM;
    }

    memcpy(&hdr, key_buffer, sizeof(hdr));
    status = fiatomic_key_hdr_check(ep->fia, &hdr, size);
    if (status != UCS_OK) {
        return status;
    }

    key = calloc(1, sizeof(*key));
    if (key == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    if (hdr.flags & FIATOMIC_KEY_F_NO_RKEY) {
        if (!ep->fia->am_enabled) {
            free(key);
            return UCS_ERR_UNSUPPORTED; /* only target-side reaches it */
        }
        key->rkey = NULL;
    } else {
        status = ucp_ep_rkey_unpack(ep->ucp_ep,
                                    (const uint8_t*)key_buffer + sizeof(hdr),
                                    &key->rkey);
        if (status != UCS_OK) {
            free(key);
            return status;
        }
    }

    key->address = hdr.address;
    key->length  = hdr.length;
    key->region  = hdr.region;
    key->token   = hdr.token;
    /* the target refuses what the memory does not grant; refusing it here
     * too spares the round trip */
    key->denied  = hdr.flags & FIATOMIC_KEY_F_DENY;
    if (hdr.nonce == ep->fia->nonce) {
        /* Exposed by this very context (checked against the live region by
         * fiatomic_key_hdr_check): the address is ours, and so are its
         * accesses (operations on it execute here, unchecked by a target). */
        mem = fiatomic_region_find(&ep->fia->regions, hdr.region, hdr.token,
                                   hdr.address, hdr.length);
        key->local_base   = (uint8_t*)(uintptr_t)hdr.address;
        key->same_context = true;
        key->wide_locks   = mem->wide_locks;
        key->denied       = mem->region.denied;
    } else if ((key->rkey != NULL) &&
               (ucp_rkey_ptr(key->rkey, hdr.address, &ptr) == UCS_OK)) {
        key->local_base = ptr; /* shared memory mapped into this process */
        if (hdr.flags & FIATOMIC_KEY_F_STATE) {
            /* mapped with the range: the target's state word for it */
            key->state = (const uint64_t*)(key->local_base +
                                           FIATOMIC_STATE_OFFSET(hdr.length));
        }
        if (hdr.flags & FIATOMIC_KEY_F_WIDE_LOCKS) {
            /* mapped with the range too: the locks the target and every
             * other peer take for its 32-byte elements */
            key->wide_locks = fiatomic_wide_locks_map(
                    key->local_base + FIATOMIC_WIDE_LOCKS_OFFSET(hdr.length));
        }
    }

    /* Lanes may have been completed by wireup since ep creation. */
    fiatomic_ucx_ep_detect_lanes(ep);
    key->target_ok = ep->fia->am_enabled &&
                     (hdr.flags & FIATOMIC_KEY_F_TARGET);
    key->no_ucp_amo = !!(hdr.flags & FIATOMIC_KEY_F_NO_UCP_AMO);
    status = fiatomic_handle_add(&ep->keys, key, key_p, NULL);
    if (status != UCS_OK) {
        fiatomic_key_rkey_destroy(key);
        free(key);
        return status;
    }
    /* The lanes (hence every key's strategies) may differ from before. */
    fiatomic_ep_keys_reset(ep);

    if (key->sw_amo && !ep->wireup_flushed) {
        status = fiatomic_ep_wireup_flush(ep);
        if (status != UCS_OK) {
            fiatomic_rkey_release(ep, *key_p);
            return status;
        }
    }
    return UCS_OK;
}

FIATOMIC_API ucs_status_t fiatomic_rkey_unpack(fiatomic_ep_h ep,
                                               const void *key_buffer,
                                               size_t size, uint64_t *key_p)
{
    ucs_status_t status;
    bool locked;

    if (ep == NULL) {
        return UCS_ERR_INVALID_PARAM;
    }
    locked = fiatomic_enter(ep->fia);
    status = fiatomic_rkey_unpack_locked(ep, key_buffer, size, key_p);
    fiatomic_leave(ep->fia, locked);
    return status;
}
