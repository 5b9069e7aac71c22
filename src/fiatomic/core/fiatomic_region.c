/**
 * Target-side strategy, the region table (fiatomic_target.h): the memory a
 * context exposes to requests, on the shared handle table
 * (fiatomic_handle.h).
 *
 * A request or key names a region twice over: by its handle, which the
 * table checks (slot index and generation: a region since unexposed is
 * refused even when its slot holds new memory), and by its token, 64
 * random bits drawn for that region alone (fiatomic_random.c). The handle
 * is no secret (it counts exposures); the token is what a peer that holds
 * keys of other regions of the context cannot make up.
 */
#include "base/fiatomic_random.h"
#include "core/fiatomic_context.h"
#include "core/fiatomic_region.h"

void fiatomic_regions_init(fiatomic_regions_t *regions, uint64_t *own_locks,
                           uint64_t timeout_ns)
{
    /* as many as the handles can name: the user's exposures, not a peer's
     * traffic, add regions */
    fiatomic_handle_table_init(&regions->table, UINT32_MAX);
    regions->own_locks  = own_locks;
    regions->timeout_ns = timeout_ns;
}

void fiatomic_regions_cleanup(fiatomic_regions_t *regions)
{
    fiatomic_handle_table_cleanup(&regions->table);
}

ucs_status_t fiatomic_region_add(fiatomic_regions_t *regions,
                                 fiatomic_region_t *region)
{
    ucs_status_t status;

    status = fiatomic_random_token(&region->token); /* never 0 */
    if (status != UCS_OK) {
        return status;
    }
    return fiatomic_handle_add(&regions->table, region, &region->handle,
                               NULL);
}

void fiatomic_region_remove(fiatomic_regions_t *regions,
                            fiatomic_region_t *region)
{
    fiatomic_handle_remove(&regions->table, region->handle);
    region->handle = 0;
}

fiatomic_mem_h fiatomic_region_find(const fiatomic_regions_t *regions,
                                    uint64_t handle, uint64_t token,
                                    uint64_t address, uint64_t length)
{
    const fiatomic_region_t *region = fiatomic_region_lookup(regions, handle,
                                                             token);

    if ((region == NULL) || ((uintptr_t)region->address != address) ||
        (region->length != length)) {
        return NULL;
    }
    return region->mem;
}
