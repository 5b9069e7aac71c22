#include "fiatomic_test_values.h"

#include "fiatomic_ref.h"

#include <float.h>
#include <math.h>
#include <string.h>

namespace fiatomic_test {

namespace {

/* Integers of any width, built byte by byte (little endian). */
std::vector<value_t> int_values(size_t size)
{
    std::vector<value_t> v;
    auto small = [&](uint8_t b) {
        value_t x(size, 0);
        x[0] = b;
        return x;
    };
    auto negative = [&](uint8_t low) { /* ~0 with a low byte */
        value_t x(size, 0xff);
        x[0] = low;
        return x;
    };
    value_t min(size, 0), max(size, 0xff), minp1, maxm1, p5a(size, 0x5a),
            pa5(size, 0xa5), mixed(size);

    min[size - 1] = 0x80;
    max[size - 1] = 0x7f;
    minp1         = min;
    minp1[0]     |= 1;
    maxm1         = max;
    maxm1[0]     &= 0xfe;
    for (size_t i = 0; i < size; ++i) {
        mixed[i] = (uint8_t)(0x11 + i * 0x37);
    }

    v.push_back(small(0));
    v.push_back(small(1));
    v.push_back(small(2));
    v.push_back(small(3));
    v.push_back(small(7));
    v.push_back(small(100));
    v.push_back(negative(0xff)); /* -1, all ones */
    v.push_back(negative(0xfe)); /* -2 */
    v.push_back(negative(0x9c)); /* -100 */
    v.push_back(min);
    v.push_back(max);
    v.push_back(minp1);
    v.push_back(maxm1);
    v.push_back(p5a);
    v.push_back(pa5);
    v.push_back(mixed);
    return v;
}

template <typename T> value_t real_bytes(T x, size_t value_bytes)
{
    value_t v(sizeof(T), 0); /* padding of long double stays zero */
    memcpy(v.data(), &x, value_bytes);
    return v;
}

template <typename T> value_t bits_value(uint64_t bits)
{
    T x;
    memcpy(&x, &bits, sizeof(T));
    return real_bytes<T>(x, sizeof(T));
}

template <typename T> std::vector<T> real_list(T max, T min_normal,
                                               T denorm_min, T big_exact)
{
    return {(T)0.0, (T)-0.0, (T)1.0, (T)-1.0, (T)1.5, (T)-2.5, (T)3.0,
            (T)0.1, max, -max, min_normal, denorm_min,
            min_normal - denorm_min, /* largest subnormal */
            (T)INFINITY, (T)-INFINITY, (T)NAN, (T)-NAN, big_exact,
            (T)1e-3};
}

size_t ld_value_bytes()
{
    return ((LDBL_MANT_DIG == 64) && (sizeof(long double) > 10)) ?
           10 : sizeof(long double);
}

/* x87 extended encodings a C expression never produces but memory may hold:
 * the logical ops read truth from bits (fiatomic_combine_expr.h), which must
 * agree with the FPU's "!= 0" on them (significand, then sign/exponent). */
struct x87_encoding {
    uint64_t significand;
    uint16_t sign_exp;
};

const x87_encoding x87_odd_encodings[] = {
    {0x8000000000000001ull, 0x0000}, /* pseudo-denormal: non-zero */
    {0x0000000000000000ull, 0x1234}, /* pseudo-zero (unnormal): refused */
    {0x4000000000000000ull, 0x3fff}, /* unnormal: refused */
    {0x0000000000000000ull, 0xffff}, /* pseudo-infinity: refused */
    {0x4000000000000001ull, 0x7fff}, /* pseudo-NaN: refused */
    {0x8000000000000001ull, 0x7fff}, /* signaling NaN */
    {0x0000000000000000ull, 0x8000}  /* -0.0: false */
};

value_t x87_value(const x87_encoding &e, size_t size)
{
    value_t v(size, 0);

    memcpy(v.data(), &e.significand, sizeof(e.significand));
    memcpy(v.data() + sizeof(e.significand), &e.sign_exp, sizeof(e.sign_exp));
    return v;
}

std::vector<value_t> float_values(int datatype)
{
    std::vector<value_t> v;

    switch (datatype) {
    case FI_FLOAT:
        for (float x : real_list<float>(FLT_MAX, FLT_MIN, FLT_TRUE_MIN,
                                        16777216.0f)) {
            v.push_back(real_bytes(x, sizeof(x)));
        }
        v.push_back(bits_value<float>(0x7fc12345)); /* NaN with payload */
        break;
    case FI_DOUBLE:
        for (double x : real_list<double>(DBL_MAX, DBL_MIN, DBL_TRUE_MIN,
                                          9007199254740992.0)) {
            v.push_back(real_bytes(x, sizeof(x)));
        }
        v.push_back(bits_value<double>(0x7ff8000000012345ull));
        break;
    case FI_LONG_DOUBLE:
        for (long double x : real_list<long double>(LDBL_MAX, LDBL_MIN,
                                                    LDBL_TRUE_MIN,
                                                    18446744073709551616.0L)) {
            v.push_back(real_bytes(x, ld_value_bytes()));
        }
        if (ld_value_bytes() == 10) {
            for (const auto &e : x87_odd_encodings) {
                v.push_back(x87_value(e, sizeof(long double)));
            }
        }
        break;
    }
    return v;
}

template <typename T>
std::vector<value_t> complex_values(T max, T denorm, size_t value_bytes)
{
    static const T inf = (T)INFINITY, nan = (T)NAN;
    const T pairs[][2] = {
        {0, 0},       {-0.0, 0},  {0, -0.0},   {-0.0, -0.0}, {1, 0},
        {0, 1},       {1, -1},    {-2.5, 1.5}, {3, (T)0.1},  {inf, 0},
        {0, -inf},    {nan, 0},   {0, nan},    {max, max},   {denorm, -denorm},
        {(T)1e-3, (T)4096}
    };
    std::vector<value_t> v;

    for (const auto &p : pairs) {
        value_t x(2 * sizeof(T), 0);
        memcpy(x.data(), &p[0], value_bytes);
        memcpy(x.data() + sizeof(T), &p[1], value_bytes);
        v.push_back(x);
    }
    return v;
}

std::vector<value_t> complex_values_ld()
{
    std::vector<value_t> v = complex_values<long double>(LDBL_MAX,
                                                         LDBL_TRUE_MIN,
                                                         ld_value_bytes());
    value_t x;

    if (ld_value_bytes() == 10) { /* each odd encoding as one part */
        for (size_t i = 0; i < sizeof(x87_odd_encodings) /
                               sizeof(x87_odd_encodings[0]); ++i) {
            x = value_t(2 * sizeof(long double), 0);
            memcpy(x.data() + (i % 2) * sizeof(long double),
                   x87_value(x87_odd_encodings[i], sizeof(long double)).data(),
                   sizeof(long double));
            v.push_back(x);
        }
    }
    return v;
}

} // namespace

std::vector<value_t> edge_values(int datatype)
{
    switch (fiatomic_ref_datatype_class(datatype)) {
    case FIATOMIC_REF_CLASS_INT:
        return int_values(fiatomic_ref_datatype_size(datatype));
    case FIATOMIC_REF_CLASS_FLOAT:
        return float_values(datatype);
    case FIATOMIC_REF_CLASS_COMPLEX:
        if (datatype == FI_FLOAT_COMPLEX) {
            return complex_values<float>(FLT_MAX, FLT_TRUE_MIN, sizeof(float));
        } else if (datatype == FI_DOUBLE_COMPLEX) {
            return complex_values<double>(DBL_MAX, DBL_TRUE_MIN,
                                          sizeof(double));
        }
        return complex_values_ld();
    default:
        return {};
    }
}

std::vector<value_triple> make_triples(int family, int op, int datatype)
{
    std::vector<value_t> pool = edge_values(datatype);
    std::vector<value_triple> v;
    size_t n = pool.size();

    for (size_t t = 0; t < n; ++t) {
        for (size_t o = 0; o < n; ++o) {
            if (family == FIATOMIC_REF_FAMILY_COMPARE) {
                v.push_back({pool[t], pool[o], pool[t]});
                v.push_back({pool[t], pool[o], pool[(t * 3 + o * 5 + 1) % n]});
            } else {
                v.push_back({pool[t], pool[o], value_t(pool[t].size(), 0)});
            }
        }
    }
    return v;
}

value_t int_value(int datatype, int64_t x)
{
    size_t size = fiatomic_ref_datatype_size(datatype);
    value_t v(size, (x < 0) ? 0xff : 0);

    memcpy(v.data(), &x, (size < 8) ? size : 8);
    return v;
}

} // namespace fiatomic_test
