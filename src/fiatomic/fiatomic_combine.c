/**
 * The arithmetic of every (op, datatype) cell, generated from the two lists
 * in fiatomic_types.h: one tiny pure function per cell that turns the
 * target's current value into the value to store. The strategies own the
 * loops and the atomicity; this file owns only the semantics of fi_atomic(3),
 * written as in the man page (compare on the left for CSWAP_*).
 */
#include "fiatomic_int.h"

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
 * memcpy in and out: the storage may be any alignment the caller has, and
 * only sizeof(T) bytes are read or written. For long double, the 6 padding
 * bytes of the 16-byte storage are left as the assignment leaves them; no
 * strategy may depend on them.
 */
#define FIATOMIC_DEF_COMBINE(_dt, _T, _U, _sfx, _tcls, _op, _ocls) \
    FIATOMIC_IF_##_ocls##_##_tcls( \
    void fiatomic_combine_##_op##_##_sfx(void *value, const void *operand, \
                                         const void *compare) \
    { \
        _T a, b, c, r; \
        memcpy(&a, value, sizeof(a)); \
        if (operand != NULL) { \
            memcpy(&b, operand, sizeof(b)); \
        } else { \
            memset(&b, 0, sizeof(b)); \
        } \
        if (compare != NULL) { \
            memcpy(&c, compare, sizeof(c)); \
        } else { \
            memset(&c, 0, sizeof(c)); \
        } \
        (void)b; (void)c; \
        r = FIATOMIC_EXPR_##_op##_##_tcls(a, b, c, _T, _U); \
        memcpy(value, &r, sizeof(r)); \
    })

#define FIATOMIC_DEF_COMBINE_ROW(_op_enum, _op, _ocls, _fam) \
    FIATOMIC_FOREACH_DATATYPE(FIATOMIC_DEF_COMBINE_CELL, _op, _ocls)
#define FIATOMIC_DEF_COMBINE_CELL(_dt, _T, _U, _sfx, _tcls, _op, _ocls) \
    FIATOMIC_DEF_COMBINE(_dt, _T, _U, _sfx, _tcls, _op, _ocls)

FIATOMIC_FOREACH_OP(FIATOMIC_DEF_COMBINE_ROW)

#undef FIATOMIC_DEF_COMBINE_ROW
#undef FIATOMIC_DEF_COMBINE_CELL
