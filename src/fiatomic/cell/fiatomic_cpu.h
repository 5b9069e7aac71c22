/**
 * One element executed with CPU atomics in place, shared by the direct and
 * target strategies so that they are atomic with each other: 1..16 bytes
 * (fiatomic_cpu.c) and 32 bytes under a lock every actor takes
 * (fiatomic_wide_lock.c).
 */
#ifndef FIATOMIC_CPU_H_
#define FIATOMIC_CPU_H_

#include "base/fiatomic_wire.h"
#include "cell/fiatomic_cell.h"

/* fiatomic_cpu.c: one element with CPU atomics in place */
/** Zero the padding bytes of an x87 long double (complex) value: whatever
 *  the caller's stack held there is not sent anywhere. */
void fiatomic_clear_padding(int datatype, void *value);
bool fiatomic_cpu_has_size(size_t size);
/** 1..16-byte elements (32-byte ones: fiatomic_wide_apply). */
void fiatomic_cpu_apply(const fiatomic_cell_t *cell, void *ptr,
                        const void *operand, const void *compare, void *old);

/* fiatomic_wide_lock.c: 32-byte elements under a lock every actor takes */
/** Initialize the lock table of memory this context allocated. */
void fiatomic_wide_locks_init(fiatomic_wide_locks_t *table);
/** The table at ptr in memory a peer exposed and this process maps, if its
 *  layout is this library's and its owners' pids are meaningful here. */
fiatomic_wide_locks_t *fiatomic_wide_locks_map(void *ptr);
/** One 32-byte element at `ptr`, `offset` bytes into its exposed range,
 *  under the lock of `table` (NULL: memory only this process executes on,
 *  under its context's own lock words `own_locks`). UCS_ERR_TIMED_OUT
 *  (nothing done) if a live process holds the lock for `timeout_ns`. */
ucs_status_t fiatomic_wide_apply(uint64_t *own_locks, uint64_t timeout_ns,
                                 const fiatomic_cell_t *cell,
                                 fiatomic_wide_locks_t *table,
                                 uint64_t offset, void *ptr,
                                 const void *operand, const void *compare,
                                 void *old);

#endif
