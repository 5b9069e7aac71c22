/**
 * libfiatomic internals that every file needs: the API macro, assertions
 * and the names of the internal objects. Each room has its header, in the
 * folder of its layer (docs/fiatomic.md, Architecture): cell/fiatomic_cell.h
 * (cells), cell/fiatomic_cpu.h (CPU execution), core/fiatomic_context.h,
 * core/fiatomic_ep.h, core/fiatomic_key.h, core/fiatomic_region.h (exposed
 * memory), core/fiatomic_request.h, core/fiatomic_strategy.h,
 * target/fiatomic_target.h.
 */
#ifndef FIATOMIC_INT_H_
#define FIATOMIC_INT_H_

#include "fiatomic.h"
#include "base/fiatomic_types.h"

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

#endif
