/**
 * Shared small containers (fiatomic_handle.h): the handle table and the
 * capped free list.
 */
#include "base/fiatomic_handle.h"

#include <stdlib.h>
#include <string.h>

void fiatomic_handle_table_init(fiatomic_handle_table_t *table, uint32_t max)
{
    table->slots = NULL;
    table->size  = 0;
    table->used  = 0;
    /* index + 1 must fit the handle's 32 bits */
    table->max   = (max == 0) ? 1 : (max == UINT32_MAX) ? (UINT32_MAX - 1) :
                   max;
    table->unique = false;
}

void fiatomic_handle_table_init_unique(fiatomic_handle_table_t *table,
                                       uint32_t max)
{
    fiatomic_handle_table_init(table, max);
    table->unique = true;
}

/* The generations of the unique tables: each is given once in the
 * process, so a handle is refused by every slot but the one it was made
 * for (any thread may add to its own context's tables). */
static uint32_t fiatomic_handle_sequence;

void fiatomic_handle_table_cleanup(fiatomic_handle_table_t *table)
{
    free(table->slots);
    table->slots = NULL;
    table->size  = 0;
    table->used  = 0;
}

static ucs_status_t fiatomic_handle_table_grow(fiatomic_handle_table_t *table)
{
    fiatomic_handle_slot_t *slots;
    uint64_t size;

    if (table->size >= table->max) {
        return UCS_ERR_EXCEEDS_LIMIT;
    }
    size  = (uint64_t)table->size * 2 + 4;
    if (size > table->max) {
        size = table->max;
    }
    slots = realloc(table->slots, size * sizeof(*slots));
    if (slots == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    memset(slots + table->size, 0, (size - table->size) * sizeof(*slots));
    table->slots = slots;
    table->size  = (uint32_t)size;
    return UCS_OK;
}

ucs_status_t fiatomic_handle_add(fiatomic_handle_table_t *table, void *obj,
                                 uint64_t *handle_p, uint32_t *index_p)
{
    ucs_status_t status;
    uint32_t index;

    if (table->used == table->size) {
        index  = table->size; /* the first new slot */
        status = fiatomic_handle_table_grow(table);
        if (status != UCS_OK) {
            return status;
        }
    } else {
        /* The lowest free slot: tables stay short (a handle names an
         * object the user or the traffic in flight holds). */
        for (index = 0; table->slots[index].obj != NULL; ++index) {
        }
    }

    table->slots[index].obj = obj;
    if (table->unique) {
        table->slots[index].generation =
                __atomic_add_fetch(&fiatomic_handle_sequence, 1,
                                   __ATOMIC_RELAXED);
    }
    ++table->used;
    if (handle_p != NULL) {
        *handle_p = fiatomic_handle_of(table, index);
    }
    if (index_p != NULL) {
        *index_p = index;
    }
    return UCS_OK;
}

void *fiatomic_handle_remove(fiatomic_handle_table_t *table, uint64_t handle)
{
    void *obj = fiatomic_handle_get(table, handle);
    fiatomic_handle_slot_t *slot;

    if (obj != NULL) {
        slot      = &table->slots[(uint32_t)handle - 1];
        slot->obj = NULL;
        ++slot->generation; /* the handle is refused from now on */
        --table->used;
    }
    return obj;
}

void fiatomic_freelist_purge(fiatomic_freelist_t *list,
                             void (*release)(ucs_list_link_t *link))
{
    ucs_list_link_t *link;

    while ((link = fiatomic_freelist_get(list)) != NULL) {
        release(link);
    }
}
