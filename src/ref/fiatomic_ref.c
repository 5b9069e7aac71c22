/*
 * Sequential reference model of fi_atomic(3); see fiatomic_ref.h.
 * Written from the man page; shares no code with libfiatomic.
 */
#include "fiatomic_ref.h"

#include <complex.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef __SIZEOF_INT128__
typedef __int128          fiatomic_ref_i128_t;
typedef unsigned __int128 fiatomic_ref_u128_t;
#endif

typedef struct {
    const char           *name;
    const char           *short_name;
    size_t               size;
    fiatomic_ref_class_t cls;
    int                  is_signed;
} fiatomic_ref_dt_info_t;

static const fiatomic_ref_dt_info_t fiatomic_ref_dt_info[] = {
    [FI_INT8]    = {"FI_INT8",   "i8",  1, FIATOMIC_REF_CLASS_INT, 1},
    [FI_UINT8]   = {"FI_UINT8",  "u8",  1, FIATOMIC_REF_CLASS_INT, 0},
    [FI_INT16]   = {"FI_INT16",  "i16", 2, FIATOMIC_REF_CLASS_INT, 1},
    [FI_UINT16]  = {"FI_UINT16", "u16", 2, FIATOMIC_REF_CLASS_INT, 0},
    [FI_INT32]   = {"FI_INT32",  "i32", 4, FIATOMIC_REF_CLASS_INT, 1},
    [FI_UINT32]  = {"FI_UINT32", "u32", 4, FIATOMIC_REF_CLASS_INT, 0},
    [FI_INT64]   = {"FI_INT64",  "i64", 8, FIATOMIC_REF_CLASS_INT, 1},
    [FI_UINT64]  = {"FI_UINT64", "u64", 8, FIATOMIC_REF_CLASS_INT, 0},
    [FI_FLOAT]   = {"FI_FLOAT",  "f32", sizeof(float),
                    FIATOMIC_REF_CLASS_FLOAT, 1},
    [FI_DOUBLE]  = {"FI_DOUBLE", "f64", sizeof(double),
                    FIATOMIC_REF_CLASS_FLOAT, 1},
    [FI_FLOAT_COMPLEX]  = {"FI_FLOAT_COMPLEX", "c32", sizeof(float complex),
                           FIATOMIC_REF_CLASS_COMPLEX, 1},
    [FI_DOUBLE_COMPLEX] = {"FI_DOUBLE_COMPLEX", "c64",
                           sizeof(double complex),
                           FIATOMIC_REF_CLASS_COMPLEX, 1},
    [FI_LONG_DOUBLE]    = {"FI_LONG_DOUBLE", "ld", sizeof(long double),
                           FIATOMIC_REF_CLASS_FLOAT, 1},
    [FI_LONG_DOUBLE_COMPLEX] = {"FI_LONG_DOUBLE_COMPLEX", "cld",
                                sizeof(long double complex),
                                FIATOMIC_REF_CLASS_COMPLEX, 1},
#ifdef __SIZEOF_INT128__
    [FI_INT128]  = {"FI_INT128",  "i128", 16, FIATOMIC_REF_CLASS_INT, 1},
    [FI_UINT128] = {"FI_UINT128", "u128", 16, FIATOMIC_REF_CLASS_INT, 0},
#else
    [FI_INT128]  = {"FI_INT128",  "i128", 0, FIATOMIC_REF_CLASS_NONE, 1},
    [FI_UINT128] = {"FI_UINT128", "u128", 0, FIATOMIC_REF_CLASS_NONE, 0},
#endif
};

/* Which type classes each op accepts (fi_atomic(3); docs/fiatomic.md,
 * "Cells and type classes"). */
#define FIATOMIC_REF_C_INT     (1u << FIATOMIC_REF_CLASS_INT)
#define FIATOMIC_REF_C_FLOAT   (1u << FIATOMIC_REF_CLASS_FLOAT)
#define FIATOMIC_REF_C_COMPLEX (1u << FIATOMIC_REF_CLASS_COMPLEX)
#define FIATOMIC_REF_C_REAL    (FIATOMIC_REF_C_INT | FIATOMIC_REF_C_FLOAT)
#define FIATOMIC_REF_C_ALL     (FIATOMIC_REF_C_REAL | FIATOMIC_REF_C_COMPLEX)

#define FIATOMIC_REF_F_BASE    (1u << FIATOMIC_REF_FAMILY_BASE)
#define FIATOMIC_REF_F_FETCH   (1u << FIATOMIC_REF_FAMILY_FETCH)
#define FIATOMIC_REF_F_COMPARE (1u << FIATOMIC_REF_FAMILY_COMPARE)
#define FIATOMIC_REF_F_BF      (FIATOMIC_REF_F_BASE | FIATOMIC_REF_F_FETCH)

typedef struct {
    const char *name;
    const char *short_name;
    unsigned   classes;  /* FIATOMIC_REF_C_* */
    unsigned   families; /* FIATOMIC_REF_F_* */
} fiatomic_ref_op_info_t;

static const fiatomic_ref_op_info_t fiatomic_ref_op_info[] = {
    [FI_MIN]          = {"FI_MIN", "min", FIATOMIC_REF_C_REAL,
                         FIATOMIC_REF_F_BF},
    [FI_MAX]          = {"FI_MAX", "max", FIATOMIC_REF_C_REAL,
                         FIATOMIC_REF_F_BF},
    [FI_SUM]          = {"FI_SUM", "sum", FIATOMIC_REF_C_ALL,
                         FIATOMIC_REF_F_BF},
    [FI_PROD]         = {"FI_PROD", "prod", FIATOMIC_REF_C_ALL,
                         FIATOMIC_REF_F_BF},
    [FI_LOR]          = {"FI_LOR", "lor", FIATOMIC_REF_C_ALL,
                         FIATOMIC_REF_F_BF},
    [FI_LAND]         = {"FI_LAND", "land", FIATOMIC_REF_C_ALL,
                         FIATOMIC_REF_F_BF},
    [FI_BOR]          = {"FI_BOR", "bor", FIATOMIC_REF_C_INT,
                         FIATOMIC_REF_F_BF},
    [FI_BAND]         = {"FI_BAND", "band", FIATOMIC_REF_C_INT,
                         FIATOMIC_REF_F_BF},
    [FI_LXOR]         = {"FI_LXOR", "lxor", FIATOMIC_REF_C_ALL,
                         FIATOMIC_REF_F_BF},
    [FI_BXOR]         = {"FI_BXOR", "bxor", FIATOMIC_REF_C_INT,
                         FIATOMIC_REF_F_BF},
    [FI_ATOMIC_READ]  = {"FI_ATOMIC_READ", "atomic_read", FIATOMIC_REF_C_ALL,
                         FIATOMIC_REF_F_FETCH},
    [FI_ATOMIC_WRITE] = {"FI_ATOMIC_WRITE", "atomic_write",
                         FIATOMIC_REF_C_ALL, FIATOMIC_REF_F_BF},
    [FI_CSWAP]        = {"FI_CSWAP", "cswap", FIATOMIC_REF_C_ALL,
                         FIATOMIC_REF_F_COMPARE},
    [FI_CSWAP_NE]     = {"FI_CSWAP_NE", "cswap_ne", FIATOMIC_REF_C_ALL,
                         FIATOMIC_REF_F_COMPARE},
    [FI_CSWAP_LE]     = {"FI_CSWAP_LE", "cswap_le", FIATOMIC_REF_C_REAL,
                         FIATOMIC_REF_F_COMPARE},
    [FI_CSWAP_LT]     = {"FI_CSWAP_LT", "cswap_lt", FIATOMIC_REF_C_REAL,
                         FIATOMIC_REF_F_COMPARE},
    [FI_CSWAP_GE]     = {"FI_CSWAP_GE", "cswap_ge", FIATOMIC_REF_C_REAL,
                         FIATOMIC_REF_F_COMPARE},
    [FI_CSWAP_GT]     = {"FI_CSWAP_GT", "cswap_gt", FIATOMIC_REF_C_REAL,
                         FIATOMIC_REF_F_COMPARE},
    [FI_MSWAP]        = {"FI_MSWAP", "mswap", FIATOMIC_REF_C_INT,
                         FIATOMIC_REF_F_COMPARE},
};

_Static_assert(sizeof(fiatomic_ref_dt_info) / sizeof(fiatomic_ref_dt_info[0])
               == FIATOMIC_REF_DATATYPE_COUNT, "datatype table");
_Static_assert(sizeof(fiatomic_ref_op_info) / sizeof(fiatomic_ref_op_info[0])
               == FIATOMIC_REF_OP_COUNT, "op table");

static int fiatomic_ref_dt_valid(int datatype)
{
    return (datatype >= 0) && (datatype < FIATOMIC_REF_DATATYPE_COUNT) &&
           (fiatomic_ref_dt_info[datatype].size != 0);
}

static int fiatomic_ref_op_valid(int op)
{
    return (op >= 0) && (op < FIATOMIC_REF_OP_COUNT);
}

size_t fiatomic_ref_datatype_size(int datatype)
{
    return fiatomic_ref_dt_valid(datatype) ?
           fiatomic_ref_dt_info[datatype].size : 0;
}

fiatomic_ref_class_t fiatomic_ref_datatype_class(int datatype)
{
    return fiatomic_ref_dt_valid(datatype) ?
           fiatomic_ref_dt_info[datatype].cls : FIATOMIC_REF_CLASS_NONE;
}

int fiatomic_ref_datatype_is_signed(int datatype)
{
    return fiatomic_ref_dt_valid(datatype) &&
           (fiatomic_ref_dt_info[datatype].cls == FIATOMIC_REF_CLASS_INT) &&
           fiatomic_ref_dt_info[datatype].is_signed;
}

const char *fiatomic_ref_datatype_name(int datatype)
{
    return ((datatype >= 0) && (datatype < FIATOMIC_REF_DATATYPE_COUNT)) ?
           fiatomic_ref_dt_info[datatype].name : NULL;
}

const char *fiatomic_ref_datatype_short_name(int datatype)
{
    return ((datatype >= 0) && (datatype < FIATOMIC_REF_DATATYPE_COUNT)) ?
           fiatomic_ref_dt_info[datatype].short_name : NULL;
}

const char *fiatomic_ref_op_name(int op)
{
    return fiatomic_ref_op_valid(op) ? fiatomic_ref_op_info[op].name : NULL;
}

const char *fiatomic_ref_op_short_name(int op)
{
    return fiatomic_ref_op_valid(op) ? fiatomic_ref_op_info[op].short_name :
                                       NULL;
}

const char *fiatomic_ref_family_name(int family)
{
    static const char *names[] = {
        [FIATOMIC_REF_FAMILY_BASE]    = "base",
        [FIATOMIC_REF_FAMILY_FETCH]   = "fetch",
        [FIATOMIC_REF_FAMILY_COMPARE] = "compare"
    };

    return ((family >= 0) && (family < FIATOMIC_REF_FAMILY_LAST)) ?
           names[family] : NULL;
}

int fiatomic_ref_cell_defined(int family, int op, int datatype)
{
    if ((family < 0) || (family >= FIATOMIC_REF_FAMILY_LAST) ||
        !fiatomic_ref_op_valid(op) || !fiatomic_ref_dt_valid(datatype)) {
        return 0;
    }

    return !!(fiatomic_ref_op_info[op].families & (1u << family)) &&
           !!(fiatomic_ref_op_info[op].classes &
              (1u << fiatomic_ref_dt_info[datatype].cls));
}

/* ------------------------------------------------------------------------ */
/* Integers: computed on the unsigned type of the same width, so that SUM and
 * PROD wrap modulo 2^n for signed types too. The unsigned value is widened to
 * at least `unsigned int` before arithmetic (uint16_t * uint16_t would be a
 * signed int multiplication in C and could overflow). */

#define FIATOMIC_REF_INT_TRUTH(_v) ((_v) != 0)

#define FIATOMIC_REF_DEFINE_INT(_name, _stype, _utype, _wtype) \
    static int fiatomic_ref_apply_##_name(int op, void *target, \
                                          const void *operand, \
                                          const void *compare) \
    { \
        _stype a, b = 0, c = 0; \
        _utype ua, ub = 0, uc = 0, ur; \
        int    cond; \
        \
        memcpy(&a, target, sizeof(a)); \
        memcpy(&ua, target, sizeof(ua)); \
        if (operand != NULL) { \
            memcpy(&b, operand, sizeof(b)); \
            memcpy(&ub, operand, sizeof(ub)); \
        } \
        if (compare != NULL) { \
            memcpy(&c, compare, sizeof(c)); \
            memcpy(&uc, compare, sizeof(uc)); \
        } \
        switch (op) { \
        case FI_MIN:  cond = (b < a); ur = cond ? ub : ua; break; \
        case FI_MAX:  cond = (b > a); ur = cond ? ub : ua; break; \
        case FI_SUM:  ur = (_utype)((_wtype)ua + (_wtype)ub); break; \
        case FI_PROD: ur = (_utype)((_wtype)ua * (_wtype)ub); break; \
        case FI_LOR: \
            ur = (FIATOMIC_REF_INT_TRUTH(a) || FIATOMIC_REF_INT_TRUTH(b)); \
            break; \
        case FI_LAND: \
            ur = (FIATOMIC_REF_INT_TRUTH(a) && FIATOMIC_REF_INT_TRUTH(b)); \
            break; \
        case FI_LXOR: \
            ur = ((FIATOMIC_REF_INT_TRUTH(a) && !FIATOMIC_REF_INT_TRUTH(b)) || \
                  (!FIATOMIC_REF_INT_TRUTH(a) && FIATOMIC_REF_INT_TRUTH(b))); \
            break; \
        case FI_BOR:  ur = ua | ub; break; \
        case FI_BAND: ur = ua & ub; break; \
        case FI_BXOR: ur = ua ^ ub; break; \
        case FI_ATOMIC_READ:  ur = ua; break; \
        case FI_ATOMIC_WRITE: ur = ub; break; \
        case FI_CSWAP:    ur = (c == a) ? ub : ua; break; \
        case FI_CSWAP_NE: ur = (c != a) ? ub : ua; break; \
        case FI_CSWAP_LE: ur = (c <= a) ? ub : ua; break; \
        case FI_CSWAP_LT: ur = (c < a)  ? ub : ua; break; \
        case FI_CSWAP_GE: ur = (c >= a) ? ub : ua; break; \
        case FI_CSWAP_GT: ur = (c > a)  ? ub : ua; break; \
        case FI_MSWAP: \
            ur = (_utype)((ub & uc) | (ua & (_utype)~uc)); \
            break; \
        default: \
            return -1; \
        } \
        memcpy(target, &ur, sizeof(ur)); \
        return 0; \
    }

FIATOMIC_REF_DEFINE_INT(i8,  int8_t,   uint8_t,  unsigned)
FIATOMIC_REF_DEFINE_INT(u8,  uint8_t,  uint8_t,  unsigned)
FIATOMIC_REF_DEFINE_INT(i16, int16_t,  uint16_t, unsigned)
FIATOMIC_REF_DEFINE_INT(u16, uint16_t, uint16_t, unsigned)
FIATOMIC_REF_DEFINE_INT(i32, int32_t,  uint32_t, uint64_t)
FIATOMIC_REF_DEFINE_INT(u32, uint32_t, uint32_t, uint64_t)
FIATOMIC_REF_DEFINE_INT(i64, int64_t,  uint64_t, uint64_t)
FIATOMIC_REF_DEFINE_INT(u64, uint64_t, uint64_t, uint64_t)
#ifdef __SIZEOF_INT128__
FIATOMIC_REF_DEFINE_INT(i128, fiatomic_ref_i128_t, fiatomic_ref_u128_t,
                        fiatomic_ref_u128_t)
FIATOMIC_REF_DEFINE_INT(u128, fiatomic_ref_u128_t, fiatomic_ref_u128_t,
                        fiatomic_ref_u128_t)
#endif

/* ------------------------------------------------------------------------ */
/* Real floating point: by value. Where the result is one of the inputs
 * (MIN/MAX/WRITE/CSWAP*), its bytes are copied so that NaN payloads and the
 * sign of zero are kept exactly. */

#define FIATOMIC_REF_DEFINE_FLOAT(_name, _type) \
    static int fiatomic_ref_apply_##_name(int op, void *target, \
                                          const void *operand, \
                                          const void *compare) \
    { \
        _type a, b = 0, c = 0, r = 0; \
        const void *src; /* input whose bytes become the result */ \
        \
        memcpy(&a, target, sizeof(a)); \
        if (operand != NULL) { \
            memcpy(&b, operand, sizeof(b)); \
        } \
        if (compare != NULL) { \
            memcpy(&c, compare, sizeof(c)); \
        } \
        src = NULL; \
        switch (op) { \
        case FI_MIN:  src = (b < a) ? operand : target; break; \
        case FI_MAX:  src = (b > a) ? operand : target; break; \
        case FI_SUM:  r = a + b; break; \
        case FI_PROD: r = a * b; break; \
        case FI_LOR:  r = (a || b); break; \
        case FI_LAND: r = (a && b); break; \
        case FI_LXOR: r = ((a && !b) || (!a && b)); break; \
        case FI_ATOMIC_READ:  src = target; break; \
        case FI_ATOMIC_WRITE: src = operand; break; \
        case FI_CSWAP:    src = (c == a) ? operand : target; break; \
        case FI_CSWAP_NE: src = (c != a) ? operand : target; break; \
        case FI_CSWAP_LE: src = (c <= a) ? operand : target; break; \
        case FI_CSWAP_LT: src = (c < a)  ? operand : target; break; \
        case FI_CSWAP_GE: src = (c >= a) ? operand : target; break; \
        case FI_CSWAP_GT: src = (c > a)  ? operand : target; break; \
        default: \
            return -1; \
        } \
        if (src == NULL) { \
            memcpy(target, &r, sizeof(r)); \
        } else if (src != target) { \
            memmove(target, src, sizeof(a)); \
        } \
        return 0; \
    }

FIATOMIC_REF_DEFINE_FLOAT(f32, float)
FIATOMIC_REF_DEFINE_FLOAT(f64, double)
FIATOMIC_REF_DEFINE_FLOAT(ld,  long double)

/* ------------------------------------------------------------------------ */
/* Complex: unordered; equality is by value of both parts. */

/* __real__/__imag__ keep the part's own type (creal() would round a long
 * double part to double, turning a tiny non-zero value into zero). */
#define FIATOMIC_REF_CTRUTH(_z) ((__real__(_z) != 0) || (__imag__(_z) != 0))

#define FIATOMIC_REF_DEFINE_COMPLEX(_name, _type) \
    static int fiatomic_ref_apply_##_name(int op, void *target, \
                                          const void *operand, \
                                          const void *compare) \
    { \
        _type a, b = 0, c = 0, r = 0; \
        int   ta, tb; \
        const void *src; \
        \
        memcpy(&a, target, sizeof(a)); \
        if (operand != NULL) { \
            memcpy(&b, operand, sizeof(b)); \
        } \
        if (compare != NULL) { \
            memcpy(&c, compare, sizeof(c)); \
        } \
        ta  = FIATOMIC_REF_CTRUTH(a); \
        tb  = FIATOMIC_REF_CTRUTH(b); \
        src = NULL; \
        switch (op) { \
        case FI_SUM:  r = a + b; break; \
        case FI_PROD: r = a * b; break; \
        case FI_LOR:  r = (ta || tb); break; \
        case FI_LAND: r = (ta && tb); break; \
        case FI_LXOR: r = ((ta && !tb) || (!ta && tb)); break; \
        case FI_ATOMIC_READ:  src = target; break; \
        case FI_ATOMIC_WRITE: src = operand; break; \
        case FI_CSWAP:    src = (c == a) ? operand : target; break; \
        case FI_CSWAP_NE: src = (c != a) ? operand : target; break; \
        default: \
            return -1; \
        } \
        if (src == NULL) { \
            memcpy(target, &r, sizeof(r)); \
        } else if (src != target) { \
            memmove(target, src, sizeof(a)); \
        } \
        return 0; \
    }

FIATOMIC_REF_DEFINE_COMPLEX(c32, float complex)
FIATOMIC_REF_DEFINE_COMPLEX(c64, double complex)
FIATOMIC_REF_DEFINE_COMPLEX(cld, long double complex)

typedef int (*fiatomic_ref_apply_func_t)(int op, void *target,
                                         const void *operand,
                                         const void *compare);

static const fiatomic_ref_apply_func_t fiatomic_ref_apply_funcs[] = {
    [FI_INT8]               = fiatomic_ref_apply_i8,
    [FI_UINT8]              = fiatomic_ref_apply_u8,
    [FI_INT16]              = fiatomic_ref_apply_i16,
    [FI_UINT16]             = fiatomic_ref_apply_u16,
    [FI_INT32]              = fiatomic_ref_apply_i32,
    [FI_UINT32]             = fiatomic_ref_apply_u32,
    [FI_INT64]              = fiatomic_ref_apply_i64,
    [FI_UINT64]             = fiatomic_ref_apply_u64,
    [FI_FLOAT]              = fiatomic_ref_apply_f32,
    [FI_DOUBLE]             = fiatomic_ref_apply_f64,
    [FI_FLOAT_COMPLEX]      = fiatomic_ref_apply_c32,
    [FI_DOUBLE_COMPLEX]     = fiatomic_ref_apply_c64,
    [FI_LONG_DOUBLE]        = fiatomic_ref_apply_ld,
    [FI_LONG_DOUBLE_COMPLEX] = fiatomic_ref_apply_cld,
#ifdef __SIZEOF_INT128__
    [FI_INT128]             = fiatomic_ref_apply_i128,
    [FI_UINT128]            = fiatomic_ref_apply_u128,
#else
    [FI_INT128]             = NULL,
    [FI_UINT128]            = NULL,
#endif
};

int fiatomic_ref_apply(int family, int op, int datatype, void *target,
                       const void *operand, const void *compare,
                       void *fetched)
{
    unsigned char old[FIATOMIC_REF_MAX_SIZE];
    size_t size;

    if (!fiatomic_ref_cell_defined(family, op, datatype)) {
        return -1;
    }

    size = fiatomic_ref_dt_info[datatype].size;
    memcpy(old, target, size);
    if (fiatomic_ref_apply_funcs[datatype](op, target,
                                           (op == FI_ATOMIC_READ) ? NULL :
                                                                    operand,
                                           (family ==
                                            FIATOMIC_REF_FAMILY_COMPARE) ?
                                                   compare : NULL) != 0) {
        return -1;
    }

    if (fetched != NULL) {
        memcpy(fetched, old, size);
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Comparison and formatting */

/* Value bytes of one real part: x87 extended precision keeps 10 of the 16
 * bytes of storage. */
static size_t fiatomic_ref_part_value_bytes(size_t part_size)
{
    if ((part_size == sizeof(long double)) && (LDBL_MANT_DIG == 64) &&
        (sizeof(long double) > 10)) {
        return 10;
    }
    return part_size;
}

static size_t fiatomic_ref_part_size(int datatype)
{
    size_t size = fiatomic_ref_dt_info[datatype].size;

    return (fiatomic_ref_dt_info[datatype].cls == FIATOMIC_REF_CLASS_COMPLEX) ?
           size / 2 : size;
}

static int fiatomic_ref_part_is_nan(size_t part_size, const void *p)
{
    float f;
    double d;
    long double ld;

    if (part_size == sizeof(float)) {
        memcpy(&f, p, sizeof(f));
        return isnan(f);
    } else if (part_size == sizeof(double)) {
        memcpy(&d, p, sizeof(d));
        return isnan(d);
    }
    memcpy(&ld, p, sizeof(ld));
    return isnan(ld);
}

static int fiatomic_ref_compare(int datatype, const void *a, const void *b,
                                int any_nan)
{
    const unsigned char *pa = a, *pb = b;
    size_t part_size, nparts, i, vbytes;

    if (!fiatomic_ref_dt_valid(datatype)) {
        return 0;
    }

    if (fiatomic_ref_dt_info[datatype].cls == FIATOMIC_REF_CLASS_INT) {
        return !memcmp(a, b, fiatomic_ref_dt_info[datatype].size);
    }

    part_size = fiatomic_ref_part_size(datatype);
    nparts    = fiatomic_ref_dt_info[datatype].size / part_size;
    vbytes    = fiatomic_ref_part_value_bytes(part_size);
    for (i = 0; i < nparts; ++i) {
        if (any_nan && fiatomic_ref_part_is_nan(part_size, pa + i * part_size)
            && fiatomic_ref_part_is_nan(part_size, pb + i * part_size)) {
            continue;
        }
        if (memcmp(pa + i * part_size, pb + i * part_size, vbytes)) {
            return 0;
        }
    }
    return 1;
}

int fiatomic_ref_bits_equal(int datatype, const void *a, const void *b)
{
    return fiatomic_ref_compare(datatype, a, b, 0);
}

int fiatomic_ref_result_equal(int op, int datatype, const void *expected,
                              const void *actual)
{
    return fiatomic_ref_compare(datatype, expected, actual,
                                (op == FI_SUM) || (op == FI_PROD));
}

static void fiatomic_ref_format_part(size_t part_size, const void *p,
                                     char *buf, size_t max)
{
    float f;
    double d;
    long double ld;

    if (part_size == sizeof(float)) {
        uint32_t bits;
        memcpy(&f, p, sizeof(f));
        memcpy(&bits, p, sizeof(bits));
        snprintf(buf, max, "%a [%.9g] (0x%08" PRIx32 ")", (double)f,
                 (double)f, bits);
    } else if (part_size == sizeof(double)) {
        uint64_t bits;
        memcpy(&d, p, sizeof(d));
        memcpy(&bits, p, sizeof(bits));
        snprintf(buf, max, "%a [%.17g] (0x%016" PRIx64 ")", d, d, bits);
    } else {
        memcpy(&ld, p, sizeof(ld));
        snprintf(buf, max, "%La [%.21Lg]", ld, ld);
    }
}

void fiatomic_ref_format(int datatype, const void *value, char *buf,
                         size_t max)
{
    size_t size, part_size, n;
    const unsigned char *p = value;
    uint64_t u = 0;
    int64_t s;

    if (max == 0) {
        return;
    }
    if (!fiatomic_ref_dt_valid(datatype)) {
        snprintf(buf, max, "<bad datatype %d>", datatype);
        return;
    }

    size = fiatomic_ref_dt_info[datatype].size;
    switch (fiatomic_ref_dt_info[datatype].cls) {
    case FIATOMIC_REF_CLASS_INT:
        if (size <= 8) {
            memcpy(&u, value, size); /* little endian */
            if (fiatomic_ref_dt_info[datatype].is_signed && (size < 8) &&
                (u >> (size * 8 - 1))) {
                u |= ~(uint64_t)0 << (size * 8);
            }
            memcpy(&s, &u, sizeof(s));
            if (fiatomic_ref_dt_info[datatype].is_signed) {
                snprintf(buf, max, "%" PRId64 " (0x%0*" PRIx64 ")", s,
                         (int)(size * 2),
                         (size < 8) ? (u & (((uint64_t)1 << (size * 8)) - 1)) : u);
            } else {
                snprintf(buf, max, "%" PRIu64 " (0x%0*" PRIx64 ")", u,
                         (int)(size * 2), u);
            }
        } else {
            uint64_t lo, hi;
            memcpy(&lo, p, 8);
            memcpy(&hi, p + 8, 8);
            snprintf(buf, max, "0x%016" PRIx64 "%016" PRIx64, hi, lo);
        }
        break;
    case FIATOMIC_REF_CLASS_FLOAT:
        fiatomic_ref_format_part(size, value, buf, max);
        break;
    case FIATOMIC_REF_CLASS_COMPLEX:
        part_size = size / 2;
        snprintf(buf, max, "(");
        n = strlen(buf);
        fiatomic_ref_format_part(part_size, p, buf + n, max - n);
        n = strlen(buf);
        if (n + 2 < max) {
            snprintf(buf + n, max - n, ", ");
            n = strlen(buf);
            fiatomic_ref_format_part(part_size, p + part_size, buf + n,
                                     max - n);
            n = strlen(buf);
            snprintf(buf + n, max - n, ")");
        }
        break;
    default:
        snprintf(buf, max, "?");
        break;
    }
}
