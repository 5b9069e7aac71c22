/**
 * Element values. Verification draws from small tables chosen to hit the
 * easy-to-get-wrong cases (docs/fiatomic.md, "Cells and type classes"):
 * wrap-around, sign bits, -0.0 vs +0.0, NaN and infinities, complex values
 * with one zero part. The timed loops use operands that keep the target
 * bounded (perf_bench_operand).
 */
#include "perftest.h"
#include "fiatomic_ref.h"

#include <complex.h>
#include <math.h>
#include <string.h>

static const int64_t perf_int_seeds[] = {
    0, 1, 2, 3, -1, 5, 0x7f, 0x80, -128, 0x7fff, 0x5a5a5a5a5a5a5a5aLL,
    INT64_MIN, INT64_MAX, 100, -7, 0xff, 0x1234, 0x8000, 0x0f0f0f0f
};

static const double perf_real_seeds[] = {
    0.0, 1.0, -0.0, 2.5, -3.25, NAN, 1e10, INFINITY, -1.0, 0.5, -INFINITY,
    3.0, 1e-3, 7.75, -2.5
};

#define PERF_NUM_INT  (sizeof(perf_int_seeds) / sizeof(perf_int_seeds[0]))
#define PERF_NUM_REAL (sizeof(perf_real_seeds) / sizeof(perf_real_seeds[0]))

static void perf_value_real(int datatype, double value, void *out)
{
    float f;
    long double ld;

    switch (datatype) {
    case FI_FLOAT:
        f = (float)value;
        memcpy(out, &f, sizeof(f));
        break;
    case FI_DOUBLE:
        memcpy(out, &value, sizeof(value));
        break;
    case FI_LONG_DOUBLE:
        ld = value;
        memcpy(out, &ld, sizeof(ld));
        break;
    }
}

void perf_value(int datatype, unsigned seed, void *out)
{
    size_t size = fiatomic_ref_datatype_size(datatype);
    int64_t v   = perf_int_seeds[seed % PERF_NUM_INT];
    double re   = perf_real_seeds[seed % PERF_NUM_REAL];
    /* the imaginary part: another seed, zero every third value */
    double im   = (seed % 3) ? perf_real_seeds[(seed * 7 + 3) % PERF_NUM_REAL] :
                               0.0;
    size_t half = size / 2;
    int64_t hi;

    memset(out, 0, size); /* padding of long double included */
    switch (fiatomic_ref_datatype_class(datatype)) {
    case FIATOMIC_REF_CLASS_INT:
        if (size <= sizeof(v)) {
            memcpy(out, &v, size); /* low bytes, little endian */
        } else {
            hi = (seed % 2) ? (v >> 63) : (int64_t)(seed * 0x9e3779b9u);
            memcpy(out, &v, sizeof(v));
            memcpy((uint8_t*)out + sizeof(v), &hi, sizeof(hi));
        }
        break;
    case FIATOMIC_REF_CLASS_FLOAT:
        perf_value_real(datatype, re, out);
        break;
    case FIATOMIC_REF_CLASS_COMPLEX:
        switch (datatype) {
        case FI_FLOAT_COMPLEX:
            perf_value_real(FI_FLOAT, re, out);
            perf_value_real(FI_FLOAT, im, (uint8_t*)out + half);
            break;
        case FI_DOUBLE_COMPLEX:
            perf_value_real(FI_DOUBLE, re, out);
            perf_value_real(FI_DOUBLE, im, (uint8_t*)out + half);
            break;
        case FI_LONG_DOUBLE_COMPLEX:
            perf_value_real(FI_LONG_DOUBLE, re, out);
            perf_value_real(FI_LONG_DOUBLE, im, (uint8_t*)out + half);
            break;
        }
        break;
    default:
        break;
    }
}

/* The value 1 of any datatype (complex: 1 + 0i). */
static void perf_value_one(int datatype, void *out)
{
    size_t size = fiatomic_ref_datatype_size(datatype);
    int64_t one = 1;

    memset(out, 0, size);
    switch (datatype) {
    case FI_FLOAT_COMPLEX:
        perf_value_real(FI_FLOAT, 1.0, out);
        break;
    case FI_DOUBLE_COMPLEX:
        perf_value_real(FI_DOUBLE, 1.0, out);
        break;
    case FI_LONG_DOUBLE_COMPLEX:
        perf_value_real(FI_LONG_DOUBLE, 1.0, out);
        break;
    default:
        if (fiatomic_ref_datatype_class(datatype) == FIATOMIC_REF_CLASS_INT) {
            memcpy(out, &one, (size < sizeof(one)) ? size : sizeof(one));
        } else {
            perf_value_real(datatype, 1.0, out);
        }
        break;
    }
}

/*
 * Timed loops repeat one call on a target that starts at 0. SUM, BXOR and
 * LXOR add/toggle 1, so the target changes every call (as a counter does);
 * PROD and LAND by 1 and the other ops leave it in place, so nothing
 * overflows or turns into NaN over millions of calls. compare = 0 = the
 * target makes CSWAP/CSWAP_LE/CSWAP_GE swap (the same value) every time.
 */
void perf_bench_operand(const perf_cell_t *cell, void *operand, void *compare)
{
    size_t size = fiatomic_ref_datatype_size(cell->datatype);

    switch (cell->op) {
    case FI_SUM:
    case FI_BXOR:
    case FI_LXOR:
    case FI_PROD:
    case FI_LAND:
        perf_value_one(cell->datatype, operand);
        break;
    default:
        memset(operand, 0, size);
        break;
    }
    memset(compare, 0, size);
    if (cell->op == FI_MSWAP) {
        memset(compare, 0xff, size); /* mask: replace every bit (by 0) */
    }
}
