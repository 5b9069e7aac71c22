/**
 * libfiatomic internals that every file needs: the API macro, assertions,
 * the names of the internal objects, the target-side strategy's interface
 * (fiatomic_target.h, and through it every wire format: fiatomic_wire.h)
 * and, until it has a room of its own, exposed memory. Each room has its
 * header:
 * fiatomic_cell.h (cells), fiatomic_cpu.h (CPU execution),
 * fiatomic_context.h, fiatomic_ep.h, fiatomic_key.h, fiatomic_request.h,
 * fiatomic_strategy.h.
 */
#ifndef FIATOMIC_INT_H_
#define FIATOMIC_INT_H_

#include "fiatomic.h"
#include "fiatomic_target.h"
#include "fiatomic_types.h"

#include <ucs/datastruct/list.h>
#include <ucs/debug/log_def.h>

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

/* UCX's ucs_offsetof (behind ucs_container_of and ucs_list_*) takes a
 * member's address through a null pointer, which clang's UndefinedBehavior-
 * Sanitizer reports (the fuzzers): the standard offsetof gives the same
 * value without it. */
#undef ucs_offsetof
#define ucs_offsetof(_type, _member) offsetof(_type, _member)

#define FIATOMIC_API __attribute__((visibility("default")))

/* Internal invariants only, never user input (that gets a status). */
#ifdef NDEBUG
#  define fiatomic_assertv(_cond, _fmt, ...) do { } while (0)
#else
#  define fiatomic_assertv(_cond, _fmt, ...) \
    do { \
        if (!(_cond)) { \
            ucs_error("fiatomic: assertion %s failed: " _fmt, #_cond, \
                      ## __VA_ARGS__); \
            abort(); \
        } \
    } while (0)
#endif
#define fiatomic_assert(_cond) fiatomic_assertv(_cond, "%s", "")

/* The internal objects; each is defined in the header of its room. */
typedef struct fiatomic_cell   fiatomic_cell_t;   /* fiatomic_cell.h */
typedef struct fiatomic_rkey   fiatomic_rkey_t;   /* fiatomic_key.h */
typedef struct fiatomic_req    fiatomic_req_t;    /* fiatomic_request.h */
typedef struct fiatomic_elem   fiatomic_elem_t;   /* fiatomic_request.h */
typedef struct fiatomic_am_msg fiatomic_am_msg_t; /* fiatomic_target_send.c */

/* ------------------------------------------------------------------------ */
/* Exposed memory and the target side                                        */

struct fiatomic_mem {
    fiatomic_h fia;
    ucp_mem_h  memh;      /* NULL: target-only, not registered with UCP */
    void       *address;
    size_t     length;
    fiatomic_region_t region; /* its entry in the context's region table */
    void       *owned;    /* target-only memory the library allocated */
    uint64_t   *state;    /* NULL, or the state word peers that map the
                             memory see: the region's token while exposed,
                             0 after (fiatomic_mem.c) */
    struct fiatomic_wide_locks *wide_locks; /* NULL, or the lock table of
                             its 32-byte elements, in the mapping */
};

/* fiatomic_target_*.c, the target-side strategy: fiatomic_target.h */

#endif
