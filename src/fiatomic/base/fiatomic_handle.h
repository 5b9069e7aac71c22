/**
 * Shared small containers: a generation-checked handle table, a capped free
 * list and a capped least-recently-used list (fiatomic_handle.c).
 */
#ifndef FIATOMIC_HANDLE_H_
#define FIATOMIC_HANDLE_H_

#include <ucs/datastruct/list.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/type/status.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------ */
/* Handle table                                                              */

/*
 * Objects named by 64-bit handles, (generation << 32) | (index + 1), the way
 * a user's key names an endpoint's key slot and a reply names the message it
 * answers: 0 is never a handle, and a handle whose object was removed is
 * refused even once its slot holds another object (the slot's generation
 * moved on). The table grows by doubling, never beyond `max` slots: who
 * may add to it (a user, a peer's traffic) is bounded by the caller's cap.
 * A table made with fiatomic_handle_table_init_unique takes its objects'
 * generations from a process-wide sequence instead of counting them per
 * slot: a handle of one such table names nothing in any other (until 2^32
 * objects were added in the process), with the same lookup.
 */
typedef struct fiatomic_handle_slot {
    void     *obj;        /* NULL when free */
    uint32_t generation;  /* of the object in it, or of the next one */
} fiatomic_handle_slot_t;

typedef struct fiatomic_handle_table {
    fiatomic_handle_slot_t *slots;
    uint32_t               size;  /* slots allocated */
    uint32_t               used;  /* slots holding an object */
    uint32_t               max;   /* slots at most */
    bool                   unique; /* generations process-wide */
} fiatomic_handle_table_t;

/** An empty table of at most `max` slots (at least 1). */
void fiatomic_handle_table_init(fiatomic_handle_table_t *table, uint32_t max);
/** The same, its handles refused by every other unique table: the tables
 *  whose handles a user holds for several objects (endpoints' keys). */
void fiatomic_handle_table_init_unique(fiatomic_handle_table_t *table,
                                       uint32_t max);
/** Frees the slots (not the objects). */
void fiatomic_handle_table_cleanup(fiatomic_handle_table_t *table);
/** Put obj (not NULL) in a free slot: its handle in *handle_p, its index
 *  in *index_p (either may be NULL). UCS_ERR_EXCEEDS_LIMIT when `max`
 *  slots are in use, UCS_ERR_NO_MEMORY when growing fails. */
ucs_status_t fiatomic_handle_add(fiatomic_handle_table_t *table, void *obj,
                                 uint64_t *handle_p, uint32_t *index_p);
/** Free the slot of a live handle: its object, or NULL when the handle
 *  names none (then nothing changes). */
void *fiatomic_handle_remove(fiatomic_handle_table_t *table, uint64_t handle);
/** The handle of the object in slot `index` (which must hold one). */
static inline uint64_t
fiatomic_handle_of(const fiatomic_handle_table_t *table, uint32_t index)
{
    return ((uint64_t)table->slots[index].generation << 32) |
           ((uint64_t)index + 1);
}

/** The object a handle names, or NULL (never added, removed, or out of
 *  range). Inline: every post looks its key up. */
static inline void *fiatomic_handle_get(const fiatomic_handle_table_t *table,
                                        uint64_t handle)
{
    /* index 0 wraps around to UINT32_MAX: refused like any out of range */
    uint32_t index = (uint32_t)handle - 1;
    const fiatomic_handle_slot_t *slot;

    if (ucs_unlikely(index >= table->size)) {
        return NULL;
    }
    slot = &table->slots[index];
    if (ucs_unlikely(slot->generation != (uint32_t)(handle >> 32))) {
        return NULL;
    }
    return slot->obj; /* NULL when free */
}

/** The object in slot `index`, or NULL (free or out of range): for tables
 *  whose objects are named by index and checked by another secret. */
static inline void *fiatomic_handle_at(const fiatomic_handle_table_t *table,
                                       uint64_t index)
{
    return (index < table->size) ? table->slots[index].obj : NULL;
}

/* ------------------------------------------------------------------------ */
/* Capped free list                                                          */

/*
 * Objects of one kind kept for reuse, linked through a ucs_list_link_t of
 * theirs, so that steady traffic allocates nothing: at most `max` are kept,
 * one put beyond that is the caller's to free (a burst does not pin its
 * peak for the context's life). The list itself allocates nothing.
 */
typedef struct fiatomic_freelist {
    ucs_list_link_t head;
    unsigned        count;
    unsigned        max;
} fiatomic_freelist_t;

static inline void fiatomic_freelist_init(fiatomic_freelist_t *list,
                                          unsigned max)
{
    ucs_list_head_init(&list->head);
    list->count = 0;
    list->max   = max;
}

/** A kept object's link, or NULL when none is kept. */
static inline ucs_list_link_t *fiatomic_freelist_get(fiatomic_freelist_t *list)
{
    ucs_list_link_t *link;

    if (ucs_list_is_empty(&list->head)) {
        return NULL;
    }
    link = list->head.next;
    ucs_list_del(link);
    --list->count;
    return link;
}

/** Keep an object for reuse: false when the list is full (free it). */
static inline bool fiatomic_freelist_put(fiatomic_freelist_t *list,
                                         ucs_list_link_t *link)
{
    if (list->count >= list->max) {
        return false;
    }
    ucs_list_add_head(&list->head, link);
    ++list->count;
    return true;
}

/** Free every kept object with `release`. */
void fiatomic_freelist_purge(fiatomic_freelist_t *list,
                             void (*release)(ucs_list_link_t *link));

/* ------------------------------------------------------------------------ */
/* Capped least-recently-used list                                           */

/*
 * Objects kept while unused, in case they are wanted again, linked through
 * a ucs_list_link_t of theirs, least recently used first: at most `max`.
 * Adding one beyond that pushes the least recently used out (unlinked: the
 * caller's to free), so what is kept is bounded whoever adds. An object
 * taken back into use is removed (the caller knows whether it is on the
 * list). The list itself allocates nothing.
 */
typedef struct fiatomic_lru {
    ucs_list_link_t head;   /* least recently used first */
    unsigned        count;
    unsigned        max;
} fiatomic_lru_t;

static inline void fiatomic_lru_init(fiatomic_lru_t *lru, unsigned max)
{
    ucs_list_head_init(&lru->head);
    lru->count = 0;
    lru->max   = max;
}

/** Remove an object that is on the list. */
static inline void fiatomic_lru_remove(fiatomic_lru_t *lru,
                                       ucs_list_link_t *link)
{
    ucs_list_del(link);
    --lru->count;
}

/** The least recently used object, removed; NULL when the list is empty. */
static inline ucs_list_link_t *fiatomic_lru_pop(fiatomic_lru_t *lru)
{
    ucs_list_link_t *link;

    if (ucs_list_is_empty(&lru->head)) {
        return NULL;
    }
    link = lru->head.next;
    fiatomic_lru_remove(lru, link);
    return link;
}

/** Keep an object as the most recently used: the least recently used one
 *  when that makes more than `max` (removed, the caller's to free), else
 *  NULL. */
static inline ucs_list_link_t *fiatomic_lru_add(fiatomic_lru_t *lru,
                                                ucs_list_link_t *link)
{
    ucs_list_add_tail(&lru->head, link);
    if (++lru->count > lru->max) {
        return fiatomic_lru_pop(lru);
    }
    return NULL;
}

#endif
