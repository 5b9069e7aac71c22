/**
 * One element executed with CPU atomics in place: the direct strategy (in
 * the initiator, on mapped shared memory) and target-side execution (in the
 * target) both come here, so they are atomic with respect to each other.
 *
 *  - 1, 2, 4, 8 bytes: a CAS loop on the element (x86 has lock cmpxchg of
 *    each size, coherent with each other and with UCP's CPU atomics).
 *  - 16 bytes (int128, double complex, long double): a CAS loop on
 *    cmpxchg16b, inlined (-mcx16, checked by configure), never libatomic,
 *    whose fallback lock would be private to one process.
 *  - 32 bytes (long double complex): no instruction covers it; a lock
 *    that every actor on the memory takes (fiatomic_wide_lock.c).
 *
 * long double is 10 value bytes in 16 of storage: the padding bytes are
 * carried over from the old value unchanged, so a CAS never depends on them
 * and nothing new is written there.
 */
#include "fiatomic_int.h"

#include <string.h>

typedef unsigned __int128 fiatomic_cpu_u128_t;

/* Bytes of an x87 extended value inside its 16-byte storage. */
#define FIATOMIC_X87_VALUE_BYTES 10

/* Carry the 6 padding bytes of one x87 value (16 bytes) over from old. */
static void fiatomic_cpu_keep_x87_padding(uint8_t *value, const uint8_t *old)
{
    memcpy(value + FIATOMIC_X87_VALUE_BYTES, old + FIATOMIC_X87_VALUE_BYTES,
           16 - FIATOMIC_X87_VALUE_BYTES);
}

#define FIATOMIC_CPU_LOOP(_type, _ptr, _combine, _operand, _compare, _old) \
    do { \
        _type *p = (_type*)(_ptr); \
        _type expected = __atomic_load_n(p, __ATOMIC_ACQUIRE), desired; \
        for (;;) { \
            desired = expected; \
            (_combine)(&desired, (_operand), (_compare)); \
            /* unchanged: done, linearized at the load */ \
            if ((desired == expected) || \
                __atomic_compare_exchange_n(p, &expected, desired, 0, \
                                            __ATOMIC_ACQ_REL, \
                                            __ATOMIC_ACQUIRE)) { \
                break; \
            } \
        } \
        memcpy((_old), &expected, sizeof(expected)); \
    } while (0)

static void fiatomic_cpu_apply16(int datatype, fiatomic_combine_fn_t combine,
                                 void *ptr, const void *operand,
                                 const void *compare, void *old)
{
    fiatomic_cpu_u128_t *p = ptr;
    fiatomic_cpu_u128_t expected, desired, seen;

    /* A 16-byte atomic read: cmpxchg16b of 0 with 0 (stores 0 only where
     * the value already is 0). */
    expected = __sync_val_compare_and_swap(p, (fiatomic_cpu_u128_t)0,
                                           (fiatomic_cpu_u128_t)0);
    for (;;) {
        desired = expected;
        combine(&desired, operand, compare);
        if (datatype == FI_LONG_DOUBLE) {
            fiatomic_cpu_keep_x87_padding((uint8_t*)&desired,
                                          (const uint8_t*)&expected);
        }
        if (desired == expected) {
            break;
        }
        seen = __sync_val_compare_and_swap(p, expected, desired);
        if (seen == expected) {
            break;
        }
        expected = seen;
    }
    memcpy(old, &expected, sizeof(expected));
}

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

/*
 * The ops x86 has as one instruction (lock xadd/or/and/xor, xchg, a plain
 * load), for integers (and READ/WRITE of any type: bits in, bits out):
 * no combine call, no retry. Returns false for everything else.
 */
#define FIATOMIC_CPU_NATIVE(_type, _op, _int, _ptr, _operand, _old) \
    do { \
        _type *p = (_type*)(_ptr), v, r; \
        if ((_op) != FI_ATOMIC_READ) { \
            memcpy(&v, (_operand), sizeof(v)); \
        } \
        switch (_op) { \
        case FI_ATOMIC_READ: \
            r = __atomic_load_n(p, __ATOMIC_ACQUIRE); \
            break; \
        case FI_ATOMIC_WRITE: \
            r = __atomic_exchange_n(p, v, __ATOMIC_ACQ_REL); \
            break; \
        case FI_SUM: \
            if (!(_int)) return false; \
            r = __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL); \
            break; \
        case FI_BOR: \
            r = __atomic_fetch_or(p, v, __ATOMIC_ACQ_REL); \
            break; \
        case FI_BAND: \
            r = __atomic_fetch_and(p, v, __ATOMIC_ACQ_REL); \
            break; \
        case FI_BXOR: \
            r = __atomic_fetch_xor(p, v, __ATOMIC_ACQ_REL); \
            break; \
        default: \
            return false; \
        } \
        memcpy((_old), &r, sizeof(r)); \
    } while (0)

static bool fiatomic_cpu_native(const fiatomic_cell_t *cell, void *ptr,
                                const void *operand, void *old)
{
    bool integer = (cell->tcls == FIATOMIC_TCLS_INT);
    int op       = cell->op;

    switch (cell->size) {
    case 1:
        FIATOMIC_CPU_NATIVE(uint8_t, op, integer, ptr, operand, old);
        return true;
    case 2:
        FIATOMIC_CPU_NATIVE(uint16_t, op, integer, ptr, operand, old);
        return true;
    case 4:
        FIATOMIC_CPU_NATIVE(uint32_t, op, integer, ptr, operand, old);
        return true;
    case 8:
        FIATOMIC_CPU_NATIVE(uint64_t, op, integer, ptr, operand, old);
        return true;
    default:
        return false;
    }
}

bool fiatomic_cpu_has_size(size_t size)
{
    return (size == 1) || (size == 2) || (size == 4) || (size == 8) ||
           (size == 16) || (size == 32);
}

void fiatomic_cpu_apply(fiatomic_h fia, const fiatomic_cell_t *cell,
                        void *ptr, const void *operand, const void *compare,
                        void *old)
{
    fiatomic_combine_fn_t combine = cell->combine;

    if ((compare == NULL) && fiatomic_cpu_native(cell, ptr, operand, old)) {
        return;
    }

    switch (cell->size) {
    case 1:
        FIATOMIC_CPU_LOOP(uint8_t, ptr, combine, operand, compare, old);
        break;
    case 2:
        FIATOMIC_CPU_LOOP(uint16_t, ptr, combine, operand, compare, old);
        break;
    case 4:
        FIATOMIC_CPU_LOOP(uint32_t, ptr, combine, operand, compare, old);
        break;
    case 8:
        FIATOMIC_CPU_LOOP(uint64_t, ptr, combine, operand, compare, old);
        break;
    case 16:
        fiatomic_cpu_apply16(cell->datatype, combine, ptr, operand, compare,
                             old);
        break;
    default:
        fiatomic_assertv(0, "no CPU atomic for datatype %d", cell->datatype);
        break;
    }
}
