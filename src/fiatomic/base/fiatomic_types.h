/**
 * THE op list and THE datatype list. Everything else (names, sizes, the
 * support matrix, the combine functions, dispatch) expands from these, so a
 * bound or a column can never drift from libfabric's enums.
 */
#ifndef FIATOMIC_TYPES_H_
#define FIATOMIC_TYPES_H_

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>

#include <complex.h>
#include <stdint.h>

/* Type classes: which ops a datatype takes part in. */
#define FIATOMIC_TCLS_INT     0x1 /* two's complement integers */
#define FIATOMIC_TCLS_FLOAT   0x2 /* real floating point */
#define FIATOMIC_TCLS_COMPLEX 0x4 /* complex floating point (unordered) */

/* Op classes (docs/fiatomic.md, "Cells and type classes"). */
#define FIATOMIC_OCLS_BITWISE (FIATOMIC_TCLS_INT)
#define FIATOMIC_OCLS_ORDERED (FIATOMIC_TCLS_INT | FIATOMIC_TCLS_FLOAT)
#define FIATOMIC_OCLS_ALL     (FIATOMIC_TCLS_INT | FIATOMIC_TCLS_FLOAT | \
                               FIATOMIC_TCLS_COMPLEX)

/* Families an op belongs to, as bits of fiatomic_family_t. */
#define FIATOMIC_FAM_BASE    0x1
#define FIATOMIC_FAM_FETCH   0x2
#define FIATOMIC_FAM_COMPARE 0x4
#define FIATOMIC_FAM_BF      (FIATOMIC_FAM_BASE | FIATOMIC_FAM_FETCH)

typedef __int128          fiatomic_i128_t;
typedef unsigned __int128 fiatomic_u128_t;

/*
 * _X(enum, C type, unsigned storage-width twin, short name, type class)
 * The unsigned twin is where integer arithmetic is done (wrap-around without
 * signed overflow); for floating types it is unused (given as the type).
 */
#define FIATOMIC_FOREACH_DATATYPE(_X, ...) \
    _X(FI_INT8,   int8_t,   uint8_t,  i8,  INT, __VA_ARGS__) \
    _X(FI_UINT8,  uint8_t,  uint8_t,  u8,  INT, __VA_ARGS__) \
    _X(FI_INT16,  int16_t,  uint16_t, i16, INT, __VA_ARGS__) \
    _X(FI_UINT16, uint16_t, uint16_t, u16, INT, __VA_ARGS__) \
    _X(FI_INT32,  int32_t,  uint32_t, i32, INT, __VA_ARGS__) \
    _X(FI_UINT32, uint32_t, uint32_t, u32, INT, __VA_ARGS__) \
    _X(FI_INT64,  int64_t,  uint64_t, i64, INT, __VA_ARGS__) \
    _X(FI_UINT64, uint64_t, uint64_t, u64, INT, __VA_ARGS__) \
    _X(FI_FLOAT,  float,    float,    f32, FLOAT, __VA_ARGS__) \
    _X(FI_DOUBLE, double,   double,   f64, FLOAT, __VA_ARGS__) \
    _X(FI_FLOAT_COMPLEX,  float complex,  float complex,  c32, COMPLEX, \
       __VA_ARGS__) \
    _X(FI_DOUBLE_COMPLEX, double complex, double complex, c64, COMPLEX, \
       __VA_ARGS__) \
    _X(FI_LONG_DOUBLE, long double, long double, f80, FLOAT, __VA_ARGS__) \
    _X(FI_LONG_DOUBLE_COMPLEX, long double complex, long double complex, \
       c80, COMPLEX, __VA_ARGS__) \
    _X(FI_INT128,  fiatomic_i128_t, fiatomic_u128_t, i128, INT, __VA_ARGS__) \
    _X(FI_UINT128, fiatomic_u128_t, fiatomic_u128_t, u128, INT, __VA_ARGS__)

/* _X(enum, short name, op class, families) */
#define FIATOMIC_FOREACH_OP(_X) \
    _X(FI_MIN,          min,       ORDERED, BF)      \
    _X(FI_MAX,          max,       ORDERED, BF)      \
    _X(FI_SUM,          sum,       ALL,     BF)      \
    _X(FI_PROD,         prod,      ALL,     BF)      \
    _X(FI_LOR,          lor,       ALL,     BF)      \
    _X(FI_LAND,         land,      ALL,     BF)      \
    _X(FI_BOR,          bor,       BITWISE, BF)      \
    _X(FI_BAND,         band,      BITWISE, BF)      \
    _X(FI_LXOR,         lxor,      ALL,     BF)      \
    _X(FI_BXOR,         bxor,      BITWISE, BF)      \
    _X(FI_ATOMIC_READ,  read,      ALL,     FETCH)   \
    _X(FI_ATOMIC_WRITE, write,     ALL,     BF)      \
    _X(FI_CSWAP,        cswap,     ALL,     COMPARE) \
    _X(FI_CSWAP_NE,     cswap_ne,  ALL,     COMPARE) \
    _X(FI_CSWAP_LE,     cswap_le,  ORDERED, COMPARE) \
    _X(FI_CSWAP_LT,     cswap_lt,  ORDERED, COMPARE) \
    _X(FI_CSWAP_GE,     cswap_ge,  ORDERED, COMPARE) \
    _X(FI_CSWAP_GT,     cswap_gt,  ORDERED, COMPARE) \
    _X(FI_MSWAP,        mswap,     BITWISE, COMPARE)

/* Whether (op class, type class) is a cell: expands its argument or not. */
#define FIATOMIC_IF_ORDERED_INT(...)     __VA_ARGS__
#define FIATOMIC_IF_ORDERED_FLOAT(...)   __VA_ARGS__
#define FIATOMIC_IF_ORDERED_COMPLEX(...)
#define FIATOMIC_IF_ALL_INT(...)         __VA_ARGS__
#define FIATOMIC_IF_ALL_FLOAT(...)       __VA_ARGS__
#define FIATOMIC_IF_ALL_COMPLEX(...)     __VA_ARGS__
#define FIATOMIC_IF_BITWISE_INT(...)     __VA_ARGS__
#define FIATOMIC_IF_BITWISE_FLOAT(...)
#define FIATOMIC_IF_BITWISE_COMPLEX(...)

/* Whether an op (by its families) belongs to a family: expands or not. */
#define FIATOMIC_IF_FAM_BF_BASE(...)          __VA_ARGS__
#define FIATOMIC_IF_FAM_BF_FETCH(...)         __VA_ARGS__
#define FIATOMIC_IF_FAM_BF_COMPARE(...)
#define FIATOMIC_IF_FAM_FETCH_BASE(...)
#define FIATOMIC_IF_FAM_FETCH_FETCH(...)      __VA_ARGS__
#define FIATOMIC_IF_FAM_FETCH_COMPARE(...)
#define FIATOMIC_IF_FAM_COMPARE_BASE(...)
#define FIATOMIC_IF_FAM_COMPARE_FETCH(...)
#define FIATOMIC_IF_FAM_COMPARE_COMPARE(...)  __VA_ARGS__

#define FIATOMIC_COUNT_ONE(...) +1
enum {
    FIATOMIC_OP_COUNT       = 0 FIATOMIC_FOREACH_OP(FIATOMIC_COUNT_ONE),
    FIATOMIC_DATATYPE_COUNT = 0 FIATOMIC_FOREACH_DATATYPE(FIATOMIC_COUNT_ONE, )
};

/* The largest element: long double complex. */
#define FIATOMIC_MAX_ELEM_SIZE 32

#endif
