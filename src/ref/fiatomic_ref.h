/**
 * An independent, sequential reference model of fi_atomic(3), written from
 * the man page (not from libfiatomic): it applies one (family, op, datatype)
 * element operation to target bytes and gives the new target value and the
 * fetched (initial) value. Plain C so that tools can reuse it.
 *
 * Semantics, literally from the man page:
 *  - MIN: if (buf < addr) addr = buf;  MAX: if (buf > addr) addr = buf
 *  - CSWAP_xx: if (compare xx addr) addr = buf   (compare on the left)
 *  - MSWAP: addr = (buf & compare) | (addr & ~compare)
 *  - LXOR: addr = (addr && !buf) || (!addr && buf)
 * Integers wrap modulo 2^n, signed ones too (computed in unsigned). Floats
 * compare by value (-0.0 == +0.0, NaN compares false). Logical ops yield 1
 * or 0 of the element type; a complex value is true when either part is
 * non-zero. Complex PROD is C's complex product.
 */
#ifndef FIATOMIC_REF_H_
#define FIATOMIC_REF_H_

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Same numbering as fiatomic_family_t, kept separate so the model does not
 * depend on the library. */
typedef enum fiatomic_ref_family {
    FIATOMIC_REF_FAMILY_BASE    = 0,
    FIATOMIC_REF_FAMILY_FETCH   = 1,
    FIATOMIC_REF_FAMILY_COMPARE = 2,
    FIATOMIC_REF_FAMILY_LAST
} fiatomic_ref_family_t;

/** Datatypes of point-to-point atomics: FI_INT8 .. FI_UINT128 (16). */
#define FIATOMIC_REF_DATATYPE_COUNT (FI_UINT128 + 1)
/** Ops of point-to-point atomics: FI_MIN .. FI_MSWAP (19). */
#define FIATOMIC_REF_OP_COUNT       FI_ATOMIC_OP_LAST
/** Largest element (long double complex). */
#define FIATOMIC_REF_MAX_SIZE       32

/** Type classes. */
typedef enum fiatomic_ref_class {
    FIATOMIC_REF_CLASS_NONE    = 0,
    FIATOMIC_REF_CLASS_INT     = 1,
    FIATOMIC_REF_CLASS_FLOAT   = 2,
    FIATOMIC_REF_CLASS_COMPLEX = 3
} fiatomic_ref_class_t;

/** Element size in bytes, 0 for a value that is not a p2p atomic datatype
 *  (or a 128-bit type the compiler lacks). */
size_t fiatomic_ref_datatype_size(int datatype);

/** Type class, FIATOMIC_REF_CLASS_NONE when out of range. */
fiatomic_ref_class_t fiatomic_ref_datatype_class(int datatype);

/** 1 for a signed integer type. */
int fiatomic_ref_datatype_is_signed(int datatype);

/** "FI_UINT32" / "u32"; NULL when out of range. */
const char *fiatomic_ref_datatype_name(int datatype);
const char *fiatomic_ref_datatype_short_name(int datatype);

/** "FI_CSWAP_LE" / "cswap_le"; NULL when out of range. */
const char *fiatomic_ref_op_name(int op);
const char *fiatomic_ref_op_short_name(int op);

/** "base", "fetch", "compare"; NULL when out of range. */
const char *fiatomic_ref_family_name(int family);

/**
 * 1 when (family, op, datatype) is one of fi_atomic(3)'s 414 meaningful
 * cells (any element size), else 0.
 */
int fiatomic_ref_cell_defined(int family, int op, int datatype);

/**
 * Apply one element operation.
 * @param [inout] target   element at the target (updated in place)
 * @param [in]    operand  buf[i]; ignored (may be NULL) for ATOMIC_READ
 * @param [in]    compare  compare[i]; compare family only
 * @param [out]   fetched  initial target value; may be NULL
 * @return 0, or -1 when the cell is not defined (nothing changed).
 * Buffers need no alignment.
 */
int fiatomic_ref_apply(int family, int op, int datatype, void *target,
                       const void *operand, const void *compare,
                       void *fetched);

/**
 * Exact comparison of two element values: every value bit (the padding of
 * x87 long double is not part of the value and is ignored).
 */
int fiatomic_ref_bits_equal(int datatype, const void *a, const void *b);

/**
 * Comparison of a target value computed by `op` with the reference result:
 * exact, except that for arithmetic on floating point (SUM, PROD) a NaN
 * matches any NaN (payload and sign of a computed NaN are not specified);
 * complex values are compared part by part.
 */
int fiatomic_ref_result_equal(int op, int datatype, const void *expected,
                              const void *actual);

/** Human-readable value, e.g. "-5 (0xfb)", "-0x0p+0 (-0)". */
void fiatomic_ref_format(int datatype, const void *value, char *buf,
                         size_t max);

#ifdef __cplusplus
}
#endif

#endif
