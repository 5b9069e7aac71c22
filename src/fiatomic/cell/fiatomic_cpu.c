/**
 * One element executed with CPU atomics in place: the direct strategy (in
 * the initiator, on mapped shared memory) and target-side execution (in the
 * target) both come here, so they are atomic with respect to each other.
 *
 *  - 1 to 16 bytes: the cell's own executor (fiatomic_cpu_cell.c).
 *  - 32 bytes (long double complex): no instruction covers it; a lock
 *    that every actor on the memory takes (fiatomic_wide_lock.c).
 *
 * long double is 10 value bytes in 16 of storage: the padding bytes are
 * carried over from the old value unchanged, so a CAS never depends on them
 * and nothing new is written there.
 */
#include "cell/fiatomic_cpu.h"

#include "cell/fiatomic_combine_expr.h"

#include <string.h>

void fiatomic_clear_padding(int datatype, void *value)
{
    uint8_t *p = value;

    switch (datatype) {
    case FI_LONG_DOUBLE_COMPLEX:
        memset(p + 16 + FIATOMIC_X87_VALUE_BYTES, 0,
               16 - FIATOMIC_X87_VALUE_BYTES);
        memset(p + FIATOMIC_X87_VALUE_BYTES, 0, 16 - FIATOMIC_X87_VALUE_BYTES);
        break;
    case FI_LONG_DOUBLE:
        memset(p + FIATOMIC_X87_VALUE_BYTES, 0, 16 - FIATOMIC_X87_VALUE_BYTES);
        break;
    default:
        break;
    }
}

bool fiatomic_cpu_has_size(size_t size)
{
    return (size == 1) || (size == 2) || (size == 4) || (size == 8) ||
           (size == 16) || (size == 32);
}

void fiatomic_cpu_apply(const fiatomic_cell_t *cell, void *ptr,
                        const void *operand, const void *compare, void *old)
{
    if (ucs_likely(cell->cpu != NULL)) {
        cell->cpu(ptr, operand, compare, old);
    } else {
        fiatomic_assertv(0, "no CPU atomic for datatype %d", cell->datatype);
    }
}
