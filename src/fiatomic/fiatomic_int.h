/**
 * libfiatomic internals that every file needs: the API macro, assertions,
 * the names of the internal objects, the target-side strategy's interface
 * (fiatomic_target.h) and, until they have a room of their own, exposed
 * memory and the packed key's format. Each room has its header:
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

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

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
typedef struct fiatomic_key_slot fiatomic_key_slot_t; /* fiatomic_key.h */
typedef struct fiatomic_am_msg fiatomic_am_msg_t; /* fiatomic_target_send.c */

/* ------------------------------------------------------------------------ */
/* Exposed memory, packed keys and the target side                           */

/* Slots of target-side messages awaiting their reply; a message id is
 * (generation << 32) | (slot + 1), so a late or forged reply is dropped. */
typedef struct fiatomic_msg_slot {
    fiatomic_am_msg_t *msg;
    uint32_t          generation;
} fiatomic_msg_slot_t;

struct fiatomic_mem {
    fiatomic_h fia;
    ucp_mem_h  memh;      /* NULL: target-only, not registered with UCP */
    void       *address;
    size_t     length;
    unsigned   region;
    void       *owned;    /* target-only memory the library allocated */
    uint64_t   *state;    /* NULL, or the state word peers that map the
                             memory see: the region's token while exposed,
                             0 after (fiatomic_mem.c) */
    struct fiatomic_wide_locks *wide_locks; /* NULL, or the lock table of
                             its 32-byte elements, in the mapping */
};

/* Key flags */
#define FIATOMIC_KEY_F_TARGET  0x1 /* the exposing context executes
                                      requests */
#define FIATOMIC_KEY_F_STATE   0x2 /* a state word follows the range at the
                                      next 8-byte boundary */
#define FIATOMIC_KEY_F_NO_RKEY 0x4 /* target-only: no UCP rkey follows */
#define FIATOMIC_KEY_F_WIDE_LOCKS 0x8 /* a lock table for 32-byte elements
                                         follows the state word (at
                                         FIATOMIC_WIDE_LOCKS_OFFSET) */
#define FIATOMIC_KEY_F_ALL     (FIATOMIC_KEY_F_TARGET | FIATOMIC_KEY_F_STATE | \
                                FIATOMIC_KEY_F_NO_RKEY | \
                                FIATOMIC_KEY_F_WIDE_LOCKS)

/* Where the state word of a range lies. */
#define FIATOMIC_STATE_OFFSET(_length) (((_length) + 7) & ~(uint64_t)7)

/*
 * The lock table of the 32-byte elements of memory peers map (ALLOCATE),
 * at the first 64-byte boundary after the state word: a layout word (magic,
 * version, number of locks: a peer maps the table only if it is exactly
 * this), the pid namespace of the exposing process (its pids are the lock
 * owners), then the lock words (fiatomic_wide_lock.c). Part of the mapping
 * format peers agree on: change the version with the layout.
 */
#define FIATOMIC_WIDE_LOCKS_VERSION 1
#define FIATOMIC_WIDE_LOCKS_LAYOUT \
    ((0xf1a710c5ull << 32) | ((uint64_t)FIATOMIC_WIDE_LOCKS_VERSION << 16) | \
     FIATOMIC_WIDE_LOCKS)
typedef struct fiatomic_wide_locks {
    uint64_t layout;       /* FIATOMIC_WIDE_LOCKS_LAYOUT once initialized */
    uint64_t pid_ns;       /* the exposing process's pid namespace */
    uint64_t reserved[6];  /* 0 */
    uint64_t word[FIATOMIC_WIDE_LOCKS]; /* 0, or the holder's pid */
} fiatomic_wide_locks_t;
#define FIATOMIC_WIDE_LOCKS_OFFSET(_length) \
    ((FIATOMIC_STATE_OFFSET(_length) + sizeof(uint64_t) + 63) & ~(uint64_t)63)
/* What a mapped range takes beyond its length (state word, lock table). */
#define FIATOMIC_MAP_EXTRA \
    (FIATOMIC_WIDE_LOCKS_OFFSET(0) + 64 + sizeof(fiatomic_wide_locks_t))

/* The packed key a target hands out (followed by the UCP rkey buffer). */
typedef struct fiatomic_key_hdr {
    uint32_t magic;
    uint32_t rkey_size;
    uint64_t nonce;    /* the exposing context; same one -> direct ok */
    uint64_t address;
    uint64_t length;
    uint64_t token;    /* the region's secret for target-side requests */
    uint32_t region;
    uint32_t flags;    /* FIATOMIC_KEY_F_* */
} fiatomic_key_hdr_t;

#define FIATOMIC_KEY_MAGIC 0xf1a70111u

/* fiatomic_target_*.c, the target-side strategy: fiatomic_target.h */

#endif
