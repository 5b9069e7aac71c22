/**
 * Target side: exposing memory for remote atomics (registered with UCP, or
 * target-only), packing its key, querying and unexposing it.
 *
 * The packed key is a small header (fiatomic_key_hdr_t, fiatomic_wire.h:
 * range, the exposing context's nonce, the region's handle and token, flags)
 * followed by UCP's rkey buffer (none for target-only memory). Carrying the
 * range lets the initiator refuse an out-of-range or misaligned element
 * before anything is sent, and carrying the accesses peers lack
 * (FIATOMIC_MEM_FLAG_NO_REMOTE_*, which make the memory target-only) an
 * operation that needs one.
 */
#include "cell/fiatomic_cpu.h"
#include "core/fiatomic_context.h"
#include "base/fiatomic_wire.h"

#include <stdlib.h>
#include <string.h>

/* Target-only memory: not registered with UCP at all. */
static ucs_status_t fiatomic_mem_expose_target_only(
        fiatomic_h fia, const fiatomic_mem_params_t *params, unsigned flags,
        fiatomic_mem_h mem)
{
    if (!fia->am_enabled) {
        return UCS_ERR_UNSUPPORTED; /* nothing could reach it */
    }

    if (flags & FIATOMIC_MEM_FLAG_ALLOCATE) {
        if (posix_memalign(&mem->owned, 64, params->length) != 0) {
            return UCS_ERR_NO_MEMORY;
        }
        memset(mem->owned, 0, params->length);
        mem->address = mem->owned;
    } else {
        mem->address = params->address;
    }
    mem->length = params->length;
    return UCS_OK;
}

/* Memory registered with UCP. With ALLOCATE, 8 more bytes after the range
 * (at the next 8-byte boundary) hold its state word: peers that map the
 * memory (shared memory) check it before each operation, so an operation
 * with the key of unexposed memory fails instead of writing into a segment
 * the target has let go. The lock table of its 32-byte elements follows
 * (FIATOMIC_WIDE_LOCKS_OFFSET): peers that map the memory execute them
 * under the same locks as this context. */
static ucs_status_t fiatomic_mem_expose_ucp(fiatomic_h fia,
                                            const fiatomic_mem_params_t *params,
                                            unsigned flags, fiatomic_mem_h mem)
{
    ucp_mem_map_params_t map_params = {0};
    ucp_mem_attr_t attr;
    ucs_status_t status;

    map_params.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                            UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    map_params.length     = params->length;
    if (flags & FIATOMIC_MEM_FLAG_ALLOCATE) {
        /* On posix/sysv only memory the transport allocated can be mapped
         * by the peer, which is what makes the direct strategy possible. */
        if (params->length > SIZE_MAX - FIATOMIC_MAP_EXTRA) {
            return UCS_ERR_INVALID_PARAM;
        }
        map_params.flags  = UCP_MEM_MAP_ALLOCATE;
        map_params.length = FIATOMIC_WIDE_LOCKS_OFFSET(params->length) +
                            sizeof(fiatomic_wide_locks_t);
    } else {
        map_params.field_mask |= UCP_MEM_MAP_PARAM_FIELD_ADDRESS;
        map_params.address     = params->address;
    }

    status = ucp_mem_map(fia->ucp_context, &map_params, &mem->memh);
    if (status != UCS_OK) {
        return status;
    }

    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
    status          = ucp_mem_query(mem->memh, &attr);
    if (status != UCS_OK) {
        ucp_mem_unmap(fia->ucp_context, mem->memh);
        return status;
    }

    /* The exposed range is what the user asked for, even if UCP mapped more
     * (from an aligned address below the user's, whole pages): nothing
     * outside it may be operated on, and keys name the user's address. */
    mem->address = (flags & FIATOMIC_MEM_FLAG_ALLOCATE) ? attr.address :
                                                          params->address;
    mem->length  = params->length;
    if (flags & FIATOMIC_MEM_FLAG_ALLOCATE) {
        mem->state      = (uint64_t*)((uint8_t*)attr.address +
                                      FIATOMIC_STATE_OFFSET(params->length));
        mem->wide_locks = (fiatomic_wide_locks_t*)
                          ((uint8_t*)attr.address +
                           FIATOMIC_WIDE_LOCKS_OFFSET(params->length));
        fiatomic_wide_locks_init(mem->wide_locks);
    }
    return UCS_OK;
}

FIATOMIC_API ucs_status_t
fiatomic_mem_expose(fiatomic_h fia, const fiatomic_mem_params_t *params,
                    fiatomic_mem_h *mem_p)
{
    fiatomic_mem_h mem;
    ucs_status_t status;
    unsigned flags = 0;
    bool locked;

    if ((fia == NULL) || (params == NULL) || (mem_p == NULL) ||
        !(params->field_mask & FIATOMIC_MEM_PARAM_FIELD_LENGTH) ||
        (params->length == 0)) {
        return UCS_ERR_INVALID_PARAM;
    }

    if (params->field_mask & FIATOMIC_MEM_PARAM_FIELD_FLAGS) {
        if (params->flags & ~(FIATOMIC_MEM_FLAG_ALLOCATE |
                              FIATOMIC_MEM_FLAG_TARGET_ONLY |
                              FIATOMIC_MEM_FLAG_NO_REMOTE_READ |
                              FIATOMIC_MEM_FLAG_NO_REMOTE_WRITE)) {
            return UCS_ERR_INVALID_PARAM;
        }
        flags = params->flags;
    }

    if (!fia->onesided && !(flags & FIATOMIC_MEM_FLAG_ALLOCATE)) {
        /* no UCP registration a peer's one-sided access could use */
        flags |= FIATOMIC_MEM_FLAG_TARGET_ONLY;
    }

    if (!(flags & FIATOMIC_MEM_FLAG_ALLOCATE) &&
        (!(params->field_mask & FIATOMIC_MEM_PARAM_FIELD_ADDRESS) ||
         (params->address == NULL) ||
         ((uintptr_t)params->address + params->length <
          (uintptr_t)params->address))) {
        return UCS_ERR_INVALID_PARAM;
    }

    mem = calloc(1, sizeof(*mem));
    if (mem == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    mem->fia           = fia;
    mem->region.denied = ((flags & FIATOMIC_MEM_FLAG_NO_REMOTE_READ) ?
                          FIATOMIC_KEY_F_NO_READ : 0) |
                         ((flags & FIATOMIC_MEM_FLAG_NO_REMOTE_WRITE) ?
                          FIATOMIC_KEY_F_NO_WRITE : 0);
    if (mem->region.denied != 0) {
        /* a UCP rkey (or a mapping of the memory) would let peers read and
         * write it: only the target-side execution checks the access */
        flags |= FIATOMIC_MEM_FLAG_TARGET_ONLY;
    }
    locked   = fiatomic_enter(fia);
    status   = (flags & FIATOMIC_MEM_FLAG_TARGET_ONLY) ?
               fiatomic_mem_expose_target_only(fia, params, flags, mem) :
               fiatomic_mem_expose_ucp(fia, params, flags, mem);
    if (status != UCS_OK) {
        fiatomic_leave(fia, locked);
        free(mem);
        return status;
    }

    mem->region.address    = mem->address;
    mem->region.length     = mem->length;
    mem->region.wide_locks = mem->wide_locks;
    mem->region.mem        = mem;
    status = fiatomic_region_add(&fia->regions, &mem->region);
    if (status != UCS_OK) {
        goto err_release;
    }

    if (mem->state != NULL) {
        __atomic_store_n(mem->state, mem->region.token, __ATOMIC_RELEASE);
    }
    ++fia->num_mems;
    fiatomic_leave(fia, locked);
    *mem_p = mem;
    return UCS_OK;

err_release:
    if (mem->memh != NULL) {
        ucp_mem_unmap(fia->ucp_context, mem->memh);
    }
    fiatomic_leave(fia, locked);
    free(mem->owned);
    free(mem);
    return status;
}

FIATOMIC_API ucs_status_t fiatomic_mem_query(fiatomic_mem_h mem,
                                             void **address_p,
                                             size_t *length_p)
{
    if (mem == NULL) {
        return UCS_ERR_INVALID_PARAM;
    }

    if (address_p != NULL) {
        *address_p = mem->address;
    }
    if (length_p != NULL) {
        *length_p = mem->length;
    }
    return UCS_OK;
}

FIATOMIC_API ucs_status_t fiatomic_mem_pack_key(fiatomic_mem_h mem,
                                                void **key_p, size_t *size_p)
{
    fiatomic_key_hdr_t hdr;
    void *rkey_buffer;
    size_t rkey_size;
    ucs_status_t status;
    uint8_t *key;

    if ((mem == NULL) || (key_p == NULL) || (size_p == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }

    if (mem->memh != NULL) {
        status = ucp_rkey_pack(mem->fia->ucp_context, mem->memh,
                               &rkey_buffer, &rkey_size);
        if (status != UCS_OK) {
            return status;
        }
    } else {
        rkey_buffer = NULL; /* target-only: nothing for UCP to reach it by */
        rkey_size   = 0;
    }

    key = malloc(sizeof(hdr) + rkey_size);
    if (key == NULL) {
        if (rkey_buffer != NULL) {
            ucp_rkey_buffer_release(rkey_buffer);
        }
        return UCS_ERR_NO_MEMORY;
    }

    hdr.magic     = FIATOMIC_KEY_MAGIC;
    hdr.rkey_size = (uint32_t)rkey_size;
    hdr.nonce     = mem->fia->nonce;
    hdr.address   = (uintptr_t)mem->address;
    hdr.length    = mem->length;
    hdr.token     = mem->region.token;  /* fixed while exposed */
    hdr.region    = mem->region.handle;
    hdr.flags     = (mem->fia->am_enabled ? FIATOMIC_KEY_F_TARGET : 0) |
                    ((mem->state != NULL) ? FIATOMIC_KEY_F_STATE : 0) |
                    ((mem->memh == NULL) ? FIATOMIC_KEY_F_NO_RKEY : 0) |
                    ((mem->wide_locks != NULL) ?
                     FIATOMIC_KEY_F_WIDE_LOCKS : 0) |
                    (mem->fia->onesided ? 0 : FIATOMIC_KEY_F_NO_UCP_AMO) |
                    mem->region.denied;
    hdr.reserved  = 0;
    memcpy(key, &hdr, sizeof(hdr));
    if (rkey_buffer != NULL) {
        memcpy(key + sizeof(hdr), rkey_buffer, rkey_size);
        ucp_rkey_buffer_release(rkey_buffer);
    }

    *key_p  = key;
    *size_p = sizeof(hdr) + rkey_size;
    return UCS_OK;
}

FIATOMIC_API void fiatomic_key_release(void *key)
{
    free(key);
}

FIATOMIC_API ucs_status_t fiatomic_mem_unexpose(fiatomic_mem_h mem)
{
    ucs_status_t status;
    fiatomic_h fia;
    bool locked;

    if (mem == NULL) {
        return UCS_ERR_INVALID_PARAM;
    }

    fia    = mem->fia;
    locked = fiatomic_enter(fia);
    if (mem->state != NULL) {
        /* peers that mapped it refuse their keys from now on */
        __atomic_store_n(mem->state, 0, __ATOMIC_RELEASE);
    }
    fiatomic_region_remove(&fia->regions, &mem->region);
    status = (mem->memh != NULL) ?
             ucp_mem_unmap(mem->fia->ucp_context, mem->memh) : UCS_OK;
    --mem->fia->num_mems;
    fiatomic_leave(fia, locked);
    free(mem->owned);
    free(mem);
    return status;
}
