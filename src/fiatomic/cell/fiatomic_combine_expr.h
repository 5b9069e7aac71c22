/**
 * The arithmetic of fi_atomic(3)'s ops as expressions, shared by the
 * combine functions (fiatomic_combine.c) and the CPU executors of the cells
 * (fiatomic_cpu_cell.c), which inline it into their compare-and-swap loops.
 */
#ifndef FIATOMIC_COMBINE_EXPR_H_
#define FIATOMIC_COMBINE_EXPR_H_

#include "base/fiatomic_types.h"

#include <float.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/*
 * Expressions, per (op, type class). a = current target value, b = operand
 * (buf[i]), c = compare[i]; T = element type, U = its unsigned twin.
 * Integer arithmetic is done in U: SUM and PROD wrap modulo 2^n for signed
 * types too, and signed overflow would be undefined behaviour. "* 1u" lifts
 * uint8/uint16 to unsigned int before the multiply (int would overflow).
 */
#define FIATOMIC_EXPR_min_INT(a, b, c, T, U)     ((b) < (a) ? (b) : (a))
#define FIATOMIC_EXPR_min_FLOAT                  FIATOMIC_EXPR_min_INT
#define FIATOMIC_EXPR_max_INT(a, b, c, T, U)     ((b) > (a) ? (b) : (a))
#define FIATOMIC_EXPR_max_FLOAT                  FIATOMIC_EXPR_max_INT

#define FIATOMIC_EXPR_sum_INT(a, b, c, T, U)     ((T)((U)(a) + (U)(b)))
#define FIATOMIC_EXPR_sum_FLOAT(a, b, c, T, U)   ((a) + (b))
#define FIATOMIC_EXPR_sum_COMPLEX                FIATOMIC_EXPR_sum_FLOAT
#define FIATOMIC_EXPR_prod_INT(a, b, c, T, U)    ((T)(U)(((U)(a) * 1u) * (U)(b)))
#define FIATOMIC_EXPR_prod_FLOAT(a, b, c, T, U)  ((a) * (b))
#define FIATOMIC_EXPR_prod_COMPLEX               FIATOMIC_EXPR_prod_FLOAT

/* Logical ops yield 1 or 0 of the element type; a complex value is true when
 * either part is non-zero (C's scalar truth). */
#define FIATOMIC_EXPR_lor_INT(a, b, c, T, U)     ((T)((a) || (b)))
#define FIATOMIC_EXPR_lor_FLOAT                  FIATOMIC_EXPR_lor_INT
#define FIATOMIC_EXPR_lor_COMPLEX                FIATOMIC_EXPR_lor_INT
#define FIATOMIC_EXPR_land_INT(a, b, c, T, U)    ((T)((a) && (b)))
#define FIATOMIC_EXPR_land_FLOAT                 FIATOMIC_EXPR_land_INT
#define FIATOMIC_EXPR_land_COMPLEX               FIATOMIC_EXPR_land_INT
#define FIATOMIC_EXPR_lxor_INT(a, b, c, T, U) \
    ((T)(((a) && !(b)) || (!(a) && (b))))
#define FIATOMIC_EXPR_lxor_FLOAT                 FIATOMIC_EXPR_lxor_INT
#define FIATOMIC_EXPR_lxor_COMPLEX               FIATOMIC_EXPR_lxor_INT

#define FIATOMIC_EXPR_bor_INT(a, b, c, T, U)     ((T)((U)(a) | (U)(b)))
#define FIATOMIC_EXPR_band_INT(a, b, c, T, U)    ((T)((U)(a) & (U)(b)))
#define FIATOMIC_EXPR_bxor_INT(a, b, c, T, U)    ((T)((U)(a) ^ (U)(b)))

#define FIATOMIC_EXPR_read_INT(a, b, c, T, U)    (a)
#define FIATOMIC_EXPR_read_FLOAT                 FIATOMIC_EXPR_read_INT
#define FIATOMIC_EXPR_read_COMPLEX               FIATOMIC_EXPR_read_INT
#define FIATOMIC_EXPR_write_INT(a, b, c, T, U)   (b)
#define FIATOMIC_EXPR_write_FLOAT                FIATOMIC_EXPR_write_INT
#define FIATOMIC_EXPR_write_COMPLEX              FIATOMIC_EXPR_write_INT

/* Floats compare by value: -0.0 == +0.0, NaN is never equal and every
 * ordered comparison with NaN is false, so no swap happens. */
#define FIATOMIC_EXPR_cswap_INT(a, b, c, T, U)    ((c) == (a) ? (b) : (a))
#define FIATOMIC_EXPR_cswap_FLOAT                 FIATOMIC_EXPR_cswap_INT
#define FIATOMIC_EXPR_cswap_COMPLEX               FIATOMIC_EXPR_cswap_INT
#define FIATOMIC_EXPR_cswap_ne_INT(a, b, c, T, U) ((c) != (a) ? (b) : (a))
#define FIATOMIC_EXPR_cswap_ne_FLOAT              FIATOMIC_EXPR_cswap_ne_INT
#define FIATOMIC_EXPR_cswap_ne_COMPLEX            FIATOMIC_EXPR_cswap_ne_INT
#define FIATOMIC_EXPR_cswap_le_INT(a, b, c, T, U) ((c) <= (a) ? (b) : (a))
#define FIATOMIC_EXPR_cswap_le_FLOAT              FIATOMIC_EXPR_cswap_le_INT
#define FIATOMIC_EXPR_cswap_lt_INT(a, b, c, T, U) ((c) < (a) ? (b) : (a))
#define FIATOMIC_EXPR_cswap_lt_FLOAT              FIATOMIC_EXPR_cswap_lt_INT
#define FIATOMIC_EXPR_cswap_ge_INT(a, b, c, T, U) ((c) >= (a) ? (b) : (a))
#define FIATOMIC_EXPR_cswap_ge_FLOAT              FIATOMIC_EXPR_cswap_ge_INT
#define FIATOMIC_EXPR_cswap_gt_INT(a, b, c, T, U) ((c) > (a) ? (b) : (a))
#define FIATOMIC_EXPR_cswap_gt_FLOAT              FIATOMIC_EXPR_cswap_gt_INT
#define FIATOMIC_EXPR_mswap_INT(a, b, c, T, U) \
    ((T)(((U)(b) & (U)(c)) | ((U)(a) & (U)~(U)(c))))

/*
 * The body of the combine of a cell: *value (the target's current value on
 * entry) becomes the value to store; operand and compare may be NULL.
 * memcpy in and out: the storage may be any alignment the caller has, and
 * only sizeof(T) bytes are read or written. For long double, the 6 padding
 * bytes of the 16-byte storage are left as the assignment leaves them; no
 * strategy may depend on them.
 */
#define FIATOMIC_COMBINE_BODY(_T, _U, _tcls, _op, _value, _operand, \
                              _compare) \
    do { \
        _T a, b, c, r; \
        memcpy(&a, (_value), sizeof(a)); \
        if ((_operand) != NULL) { \
            memcpy(&b, (_operand), sizeof(b)); \
        } else { \
            memset(&b, 0, sizeof(b)); \
        } \
        if ((_compare) != NULL) { \
            memcpy(&c, (_compare), sizeof(c)); \
        } else { \
            memset(&c, 0, sizeof(c)); \
        } \
        (void)b; (void)c; \
        r = FIATOMIC_EXPR_##_op##_##_tcls(a, b, c, _T, _U); \
        memcpy((_value), &r, sizeof(r)); \
    } while (0)

/*
 * long double on x86 is x87 extended precision: 10 value bytes (a 64-bit
 * significand with its integer bit, then sign and 15-bit exponent) in 16
 * bytes of storage. The CPU executors of the logical ops (LOR, LAND, LXOR)
 * on long double (complex) read an operand's truth (!= 0) from its bits and
 * write the result (1.0 or +0.0) as bits, with no x87 load, compare or store
 * on the way (each an 80-bit memory access the CPU microcodes, and a
 * store-forwarding stall when its bytes were just written in pieces):
 *  - the value is zero exactly when the significand and the exponent are
 *    all zero bits (either sign);
 *  - every other pattern is true as C sees it: a non-zero number (pseudo-
 *    denormals included), an infinity, a NaN, or an encoding the FPU
 *    refuses as an operand (unnormal, pseudo-NaN, pseudo-infinity), which
 *    compares unordered with 0, so "!= 0" holds for it too.
 * Bit-exact with the C expressions of FIATOMIC_EXPR_l*_FLOAT/_COMPLEX (the
 * reference model's too) for every bit pattern.
 */
#define FIATOMIC_X87_VALUE_BYTES 10
#if defined(__x86_64__) && (LDBL_MANT_DIG == 64) && \
    (__SIZEOF_LONG_DOUBLE__ == 16)
#define FIATOMIC_X87_BITS 1
#else
#define FIATOMIC_X87_BITS 0
#endif
#define FIATOMIC_X87_ONE_SIGNIFICAND 0x8000000000000000ull /* 1.0 */
#define FIATOMIC_X87_ONE_SIGN_EXP    0x3fff

/** Truth of an x87 value from its significand and sign/exponent bits. */
static inline bool fiatomic_x87_truth(uint64_t significand, uint16_t sign_exp)
{
    return (significand != 0) || ((sign_exp & 0x7fff) != 0);
}

/** Truth of the x87 value stored at p (any alignment). */
static inline bool fiatomic_x87_truth_at(const void *p)
{
    uint64_t significand;
    uint16_t sign_exp;

    memcpy(&significand, p, sizeof(significand));
    memcpy(&sign_exp, (const uint8_t*)p + sizeof(significand),
           sizeof(sign_exp));
    return fiatomic_x87_truth(significand, sign_exp);
}

/** Write 1.0 (true) or +0.0 (false) as the value bytes at p; the padding
 *  after them is not touched. */
static inline void fiatomic_x87_store_truth(void *p, bool truth)
{
    uint64_t significand = truth ? FIATOMIC_X87_ONE_SIGNIFICAND : 0;
    uint16_t sign_exp    = truth ? FIATOMIC_X87_ONE_SIGN_EXP : 0;

    memcpy(p, &significand, sizeof(significand));
    memcpy((uint8_t*)p + sizeof(significand), &sign_exp, sizeof(sign_exp));
}

/** Whether op is one of the logical ops (their result depends only on the
 *  truth of the operands). */
static inline bool fiatomic_op_is_logical(int op)
{
    return (op == FI_LOR) || (op == FI_LAND) || (op == FI_LXOR);
}

/** A logical op on two truths (FIATOMIC_EXPR_lor/land/lxor). */
static inline bool fiatomic_logical(int op, bool a, bool b)
{
    switch (op) {
    case FI_LOR:
        return a || b;
    case FI_LAND:
        return a && b;
    default: /* FI_LXOR */
        return a != b;
    }
}

#endif
