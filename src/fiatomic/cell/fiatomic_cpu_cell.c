/**
 * One CPU executor per cell of 1 to 16 bytes (fiatomic_cell_t.cpu): the op,
 * the element size and the type class are constants in each, so executing
 * an element costs the atomic instruction and no dispatch. The direct
 * strategy (in the initiator) and target-side execution (in the target)
 * both run these, through fiatomic_cpu_apply() or the post path's
 * single-element fast path, so they are atomic with respect to each other.
 *
 *  - x86 has one instruction for READ (a load), WRITE (xchg), integer SUM
 *    (lock xadd), BOR/BAND/BXOR (lock cmpxchg loop emitted by the compiler,
 *    or lock or/and/xor) and integer CSWAP (lock cmpxchg): used as such.
 *  - Every other op: a CAS loop on the element (lock cmpxchg of each size,
 *    coherent with each other and with UCP's CPU atomics).
 *  - 16 bytes (int128, double complex, long double): a CAS loop on
 *    cmpxchg16b, inlined (-mcx16, checked by configure), never libatomic,
 *    whose fallback lock would be private to one process. The first
 *    expected value is read with two plain 8-byte loads: a torn read is a
 *    wrong guess that the compare-and-swap refuses (it compares all 16
 *    bytes atomically and returns the true value), so an uncontended
 *    element costs one locked instruction, as a fetch-add does.
 *
 * long double is 10 value bytes in 16 of storage: the padding bytes are
 * carried over from the old value unchanged, so a CAS never depends on them
 * and nothing new is written there. Its logical ops (LOR, LAND, LXOR) are
 * computed on the bits in integer registers (fiatomic_combine_expr.h): no
 * x87 load or store, whose 10-byte accesses to the bytes the loop has just
 * written in 8-byte pieces stall the CPU's store forwarding.
 */
#include "cell/fiatomic_cpu.h"

#include "cell/fiatomic_combine_expr.h"

#include <string.h>

typedef unsigned __int128 fiatomic_cpu_u128_t;

static UCS_F_ALWAYS_INLINE void
fiatomic_cpu_keep_x87_padding16(uint8_t *value, const uint8_t *old)
{
    memcpy(value + FIATOMIC_X87_VALUE_BYTES, old + FIATOMIC_X87_VALUE_BYTES,
           16 - FIATOMIC_X87_VALUE_BYTES);
}

/* The op as one instruction on an element of _T; false when there is
 * none (the caller runs the CAS loop). */
#define FIATOMIC_CPU_ONE_INSN(_T, _op, _int, _ptr, _operand, _compare, _old) \
    ({ \
        _T *p = (_T*)(_ptr), v = 0, c, r = 0; \
        bool done = true; \
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
            done = (_int); \
            if (done) { \
                r = __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL); \
            } \
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
        case FI_CSWAP: \
            /* integers compare their bits; floats do not (-0 == +0) */ \
            done = (_int); \
            if (done) { \
                memcpy(&c, (_compare), sizeof(c)); \
                r = c; \
                __atomic_compare_exchange_n(p, &r, v, 0, __ATOMIC_ACQ_REL, \
                                            __ATOMIC_ACQUIRE); \
            } \
            break; \
        default: \
            done = false; \
            break; \
        } \
        if (done) { \
            memcpy((_old), &r, sizeof(r)); \
        } \
        done; \
    })

#define FIATOMIC_CPU_LOOP(_T, _ptr, _combine, _operand, _compare, _old) \
    do { \
        _T *p = (_T*)(_ptr); \
        _T expected = __atomic_load_n(p, __ATOMIC_ACQUIRE), desired; \
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

/* The value bytes of an x87 long double in its 16-byte storage, as an
 * integer (little endian: the low 80 bits). */
#define FIATOMIC_CPU_X87_MASK \
    ((((fiatomic_cpu_u128_t)1) << (8 * FIATOMIC_X87_VALUE_BYTES)) - 1)

/* LOR/LAND/LXOR on a long double: the new value from the bits of the old
 * one and of the operand, its padding carried over (no x87 instruction:
 * fiatomic_combine_expr.h). */
static UCS_F_ALWAYS_INLINE fiatomic_cpu_u128_t
fiatomic_cpu_x87_logical16(int op, fiatomic_cpu_u128_t expected,
                           const void *operand)
{
    bool truth = fiatomic_logical(op,
                                  fiatomic_x87_truth((uint64_t)expected,
                                                     (uint16_t)(expected >>
                                                                64)),
                                  fiatomic_x87_truth_at(operand));
    fiatomic_cpu_u128_t one = ((fiatomic_cpu_u128_t)FIATOMIC_X87_ONE_SIGN_EXP
                               << 64) | FIATOMIC_X87_ONE_SIGNIFICAND;

    return (expected & ~FIATOMIC_CPU_X87_MASK) | (truth ? one : 0);
}

#if FIATOMIC_X87_BITS
typedef uint64_t fiatomic_cpu_v2u64_t __attribute__((vector_size(16)));

/* SUM and PROD on a long double: the x87 arithmetic of the cell's combine
 * on the value, its padding carried over. The value goes to memory with one
 * 16-byte store (an x87 load of bytes just written in two 8-byte pieces
 * waits for them to reach the cache: no store forwarding), and the result's
 * value bytes come back as integers instead of a 16-byte copy wider than
 * the x87 store. (MIN, MAX and the CSWAPs select an input, which the
 * compiler copies without x87 stores: they keep the plain path.) */
static UCS_F_ALWAYS_INLINE fiatomic_cpu_u128_t
fiatomic_cpu_x87_combine16(fiatomic_combine_fn_t combine,
                           fiatomic_cpu_u128_t expected, const void *operand,
                           const void *compare)
{
    fiatomic_cpu_v2u64_t halves = {(uint64_t)expected,
                                   (uint64_t)(expected >> 64)};
    union {
        long double ld;
        struct {
            uint64_t significand;
            uint16_t sign_exp;
        } bits;
    } value;

    memcpy(&value.ld, &halves, sizeof(value.ld));
    combine(&value.ld, operand, compare);
    return (expected & ~FIATOMIC_CPU_X87_MASK) | value.bits.significand |
           ((fiatomic_cpu_u128_t)value.bits.sign_exp << 64);
}
#endif

static UCS_F_ALWAYS_INLINE void
fiatomic_cpu_loop16(int op, int datatype, fiatomic_combine_fn_t combine,
                    void *ptr, const void *operand, const void *compare,
                    void *old)
{
    fiatomic_cpu_u128_t *p = ptr;
    uint64_t *half         = ptr;
    uint64_t guess[2];
    fiatomic_cpu_u128_t expected, desired, seen;
    bool exact = false; /* expected is an atomic snapshot */

    guess[0] = __atomic_load_n(&half[0], __ATOMIC_RELAXED);
    guess[1] = __atomic_load_n(&half[1], __ATOMIC_RELAXED);
    memcpy(&expected, guess, sizeof(expected));
    for (;;) {
#if FIATOMIC_X87_BITS
        if ((datatype == FI_LONG_DOUBLE) && fiatomic_op_is_logical(op)) {
            desired = fiatomic_cpu_x87_logical16(op, expected, operand);
        } else if ((datatype == FI_LONG_DOUBLE) &&
                   ((op == FI_SUM) || (op == FI_PROD))) {
            desired = fiatomic_cpu_x87_combine16(combine, expected, operand,
                                                 compare);
        } else
#endif
        {
            desired = expected;
            combine(&desired, operand, compare);
            if (datatype == FI_LONG_DOUBLE) {
                fiatomic_cpu_keep_x87_padding16((uint8_t*)&desired,
                                                (const uint8_t*)&expected);
            }
        }
        /* unchanged: done, linearized at the CAS that read it */
        if (exact && (desired == expected)) {
            break;
        }
        seen = __sync_val_compare_and_swap(p, expected, desired);
        if (seen == expected) {
            break;
        }
        expected = seen;
        exact    = true;
    }
    memcpy(old, &expected, sizeof(expected));
}

/* Every element size but 32 (fiatomic_cpu.c locks those). */
static UCS_F_ALWAYS_INLINE void
fiatomic_cpu_exec(int op, size_t size, int tcls, int datatype,
                  fiatomic_combine_fn_t combine, void *ptr,
                  const void *operand, const void *compare, void *old)
{
    bool integer = (tcls == FIATOMIC_TCLS_INT);

    switch (size) {
    case 1:
        if (!FIATOMIC_CPU_ONE_INSN(uint8_t, op, integer, ptr, operand,
                                   compare, old)) {
            FIATOMIC_CPU_LOOP(uint8_t, ptr, combine, operand, compare, old);
        }
        break;
    case 2:
        if (!FIATOMIC_CPU_ONE_INSN(uint16_t, op, integer, ptr, operand,
                                   compare, old)) {
            FIATOMIC_CPU_LOOP(uint16_t, ptr, combine, operand, compare, old);
        }
        break;
    case 4:
        if (!FIATOMIC_CPU_ONE_INSN(uint32_t, op, integer, ptr, operand,
                                   compare, old)) {
            FIATOMIC_CPU_LOOP(uint32_t, ptr, combine, operand, compare, old);
        }
        break;
    case 8:
        if (!FIATOMIC_CPU_ONE_INSN(uint64_t, op, integer, ptr, operand,
                                   compare, old)) {
            FIATOMIC_CPU_LOOP(uint64_t, ptr, combine, operand, compare, old);
        }
        break;
    case 16:
        fiatomic_cpu_loop16(op, datatype, combine, ptr, operand, compare,
                            old);
        break;
    default:
        break; /* not generated for other sizes */
    }
}

/* Each executor with its own copy of the cell's arithmetic, inlined into
 * its loop (the same expressions as fiatomic_combine.c's functions). */
#define FIATOMIC_CPU_CELL_FN(_dt, _T, _U, _sfx, _tcls, _op_enum, _op, \
                             _ocls, _fam) \
    FIATOMIC_IF_##_ocls##_##_tcls(FIATOMIC_IF_CPU_CELL_##_sfx( \
        static UCS_F_ALWAYS_INLINE void \
        fiatomic_cpu_combine_##_op##_##_sfx(void *value, \
                                            const void *operand, \
                                            const void *compare) \
        { \
            FIATOMIC_COMBINE_BODY(_T, _U, _tcls, _op, value, operand, \
                                  compare); \
        } \
        void fiatomic_cpu_##_op##_##_sfx(void *ptr, const void *operand, \
                                         const void *compare, void *old) \
        { \
            fiatomic_cpu_exec(_op_enum, sizeof(_T), FIATOMIC_TCLS_##_tcls, \
                              _dt, fiatomic_cpu_combine_##_op##_##_sfx, ptr, \
                              operand, compare, old); \
        }))
#define FIATOMIC_CPU_CELL_FNS_OF_OP(_op_enum, _op, _ocls, _fam) \
    FIATOMIC_FOREACH_DATATYPE(FIATOMIC_CPU_CELL_FN, _op_enum, _op, _ocls, \
                              _fam)
FIATOMIC_FOREACH_OP(FIATOMIC_CPU_CELL_FNS_OF_OP)
