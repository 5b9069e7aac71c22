/*
 * The reference model itself, on cases worked out by hand from the man page
 * (the oracle of every other suite must be right first).
 */
#include "fiatomic_ref.h"

#include <gtest/gtest.h>

#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

namespace {

template <typename T>
T apply(int family, int op, int dt, T target, T operand, T compare = T(),
        T *fetched = NULL)
{
    T f;
    EXPECT_EQ(0, fiatomic_ref_apply(family, op, dt, &target, &operand,
                                    &compare, &f));
    if (fetched != NULL) {
        *fetched = f;
    }
    return target;
}

const int B = FIATOMIC_REF_FAMILY_BASE;
const int F = FIATOMIC_REF_FAMILY_FETCH;
const int C = FIATOMIC_REF_FAMILY_COMPARE;

TEST(reference, integers_wrap)
{
    EXPECT_EQ(-128, apply<int8_t>(B, FI_SUM, FI_INT8, 127, 1));
    EXPECT_EQ(0, apply<uint8_t>(B, FI_SUM, FI_UINT8, 255, 1));
    EXPECT_EQ(1, apply<uint16_t>(B, FI_PROD, FI_UINT16, 65535, 65535));
    EXPECT_EQ(INT32_MIN, apply<int32_t>(B, FI_PROD, FI_INT32, INT32_MIN, -1));
    EXPECT_EQ(INT64_MIN, apply<int64_t>(B, FI_SUM, FI_INT64, INT64_MAX, 1));
    EXPECT_EQ(-6, apply<int16_t>(B, FI_PROD, FI_INT16, -2, 3));
}

TEST(reference, ordering_is_signed_and_literal)
{
    EXPECT_EQ(-5, apply<int8_t>(B, FI_MIN, FI_INT8, 3, -5));
    EXPECT_EQ(3, apply<uint8_t>(B, FI_MIN, FI_UINT8, 3, 0xfb));
    EXPECT_EQ(3, apply<int8_t>(B, FI_MAX, FI_INT8, 3, -5));
    /* CSWAP_LE: if (compare <= addr) addr = buf */
    EXPECT_EQ(9, apply<int32_t>(C, FI_CSWAP_LE, FI_INT32, 2, 9, 1));
    EXPECT_EQ(2, apply<int32_t>(C, FI_CSWAP_LE, FI_INT32, 2, 9, 3));
    EXPECT_EQ(9, apply<int32_t>(C, FI_CSWAP_GT, FI_INT32, 2, 9, 3));
    EXPECT_EQ(2, apply<int32_t>(C, FI_CSWAP_LT, FI_INT32, 2, 9, 2));
    EXPECT_EQ(9, apply<int32_t>(C, FI_CSWAP_GE, FI_INT32, 2, 9, 2));
    EXPECT_EQ(9, apply<int32_t>(C, FI_CSWAP_NE, FI_INT32, 2, 9, 3));
    EXPECT_EQ(2, apply<int32_t>(C, FI_CSWAP, FI_INT32, 2, 9, 3));
}

TEST(reference, logical_and_masks)
{
    EXPECT_EQ(1, apply<int8_t>(B, FI_LOR, FI_INT8, 0, -7));
    EXPECT_EQ(0, apply<uint32_t>(B, FI_LAND, FI_UINT32, 0x100, 0));
    EXPECT_EQ(0, apply<uint32_t>(B, FI_LXOR, FI_UINT32, 0x100, 5));
    EXPECT_EQ(1, apply<uint32_t>(B, FI_LXOR, FI_UINT32, 0x100, 0));
    /* MSWAP: addr = (buf & compare) | (addr & ~compare) */
    EXPECT_EQ(0xa5f0, apply<uint16_t>(C, FI_MSWAP, FI_UINT16, 0xa50f,
                                      0x12f0, 0x00ff));
}

TEST(reference, floats_by_value)
{
    float f;
    double d;

    /* -0.0 == +0.0: CSWAP swaps */
    EXPECT_EQ(7.0f, apply<float>(C, FI_CSWAP, FI_FLOAT, 0.0f, 7.0f, -0.0f));
    /* NaN == NaN is false, NaN != NaN is true */
    EXPECT_TRUE(isnan(apply<float>(C, FI_CSWAP, FI_FLOAT, NAN, 7.0f, NAN)));
    EXPECT_EQ(7.0f, apply<float>(C, FI_CSWAP_NE, FI_FLOAT, NAN, 7.0f, NAN));
    /* MIN with NaN follows the pseudo-code: comparisons are false */
    EXPECT_TRUE(isnan(apply<double>(B, FI_MIN, FI_DOUBLE, NAN, 1.0)));
    EXPECT_EQ(1.0, apply<double>(B, FI_MIN, FI_DOUBLE, 1.0, NAN));
    /* MIN(+0, -0) keeps +0: -0 < +0 is false */
    d = apply<double>(B, FI_MIN, FI_DOUBLE, 0.0, -0.0);
    EXPECT_FALSE(signbit(d));
    f = apply<float>(B, FI_SUM, FI_FLOAT, -0.0f, -0.0f);
    EXPECT_TRUE(signbit(f));
    EXPECT_EQ(1.0f, apply<float>(B, FI_LOR, FI_FLOAT, -0.0f, NAN));
    EXPECT_EQ(0.0f, apply<float>(B, FI_LAND, FI_FLOAT, -0.0f, 1.0f));
    /* ATOMIC_READ: fetched value, target unchanged, buf ignored */
    double t = 2.5, r;
    EXPECT_EQ(0, fiatomic_ref_apply(F, FI_ATOMIC_READ, FI_DOUBLE, &t, NULL,
                                    NULL, &r));
    EXPECT_EQ(2.5, t);
    EXPECT_EQ(2.5, r);
}

TEST(reference, complex)
{
    float _Complex a = 1.0f + 2.0f * I, b = 3.0f + 4.0f * I, z;

    z = apply<float _Complex>(B, FI_PROD, FI_FLOAT_COMPLEX, a, b);
    EXPECT_EQ(-5.0f, crealf(z));
    EXPECT_EQ(10.0f, cimagf(z));
    /* true when either part is non-zero */
    z = apply<float _Complex>(B, FI_LAND, FI_FLOAT_COMPLEX, 0.0f + 1.0f * I,
                              2.0f);
    EXPECT_EQ(1.0f, crealf(z));
    EXPECT_EQ(0.0f, cimagf(z));
    z = apply<float _Complex>(B, FI_LXOR, FI_FLOAT_COMPLEX, 0.0f + 1.0f * I,
                              2.0f);
    EXPECT_EQ(0.0f, crealf(z));
}

TEST(reference, undefined_cells_refused)
{
    uint64_t t = 5, o = 1, c = 0;

    EXPECT_EQ(-1, fiatomic_ref_apply(B, FI_ATOMIC_READ, FI_UINT64, &t, &o, &c,
                                     NULL));
    EXPECT_EQ(-1, fiatomic_ref_apply(F, FI_CSWAP, FI_UINT64, &t, &o, &c,
                                     NULL));
    EXPECT_EQ(-1, fiatomic_ref_apply(B, FI_BOR, FI_DOUBLE, &t, &o, &c, NULL));
    EXPECT_EQ(-1, fiatomic_ref_apply(B, FI_MIN, FI_FLOAT_COMPLEX, &t, &o, &c,
                                     NULL));
    EXPECT_EQ(-1, fiatomic_ref_apply(B, FI_SUM, FI_DATATYPE_LAST + 2, &t, &o,
                                     &c, NULL));
    EXPECT_EQ(-1, fiatomic_ref_apply(B, FI_ATOMIC_OP_LAST, FI_UINT64, &t, &o,
                                     &c, NULL));
    EXPECT_EQ(5u, t);
}

TEST(reference, nan_results_compare_sanely)
{
    float a = NAN, b = -NAN, one = 1.0f;

    EXPECT_TRUE(fiatomic_ref_result_equal(FI_SUM, FI_FLOAT, &a, &b));
    EXPECT_FALSE(fiatomic_ref_result_equal(FI_SUM, FI_FLOAT, &a, &one));
    EXPECT_FALSE(fiatomic_ref_result_equal(FI_ATOMIC_WRITE, FI_FLOAT, &a, &b));
    EXPECT_TRUE(fiatomic_ref_bits_equal(FI_FLOAT, &a, &a));
}

} // namespace
