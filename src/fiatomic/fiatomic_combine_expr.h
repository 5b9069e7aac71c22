/**
 * The arithmetic of fi_atomic(3)'s ops as expressions, shared by the
 * combine functions (fiatomic_combine.c) and the CPU executors of the cells
 * (fiatomic_cpu_cell.c), which inline it into their compare-and-swap loops.
 */
#ifndef FIATOMIC_COMBINE_EXPR_H_
#define FIATOMIC_COMBINE_EXPR_H_

#include "fiatomic_types.h"

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

#endif
