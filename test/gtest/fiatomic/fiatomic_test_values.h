/*
 * Edge values per datatype (wrap-around, signed min/max, -0.0, NaN,
 * infinities, subnormals, complex parts) and the (target, operand, compare)
 * triples a cell is tested with.
 */
#ifndef FIATOMIC_TEST_VALUES_H_
#define FIATOMIC_TEST_VALUES_H_

#include <stdint.h>

#include <vector>

namespace fiatomic_test {

typedef std::vector<uint8_t> value_t;

/** The edge values of a datatype, as element bytes. */
std::vector<value_t> edge_values(int datatype);

struct value_triple {
    value_t target;
    value_t operand;
    value_t compare; /* meaningful for the compare family */
};

/**
 * Every (target, operand) pair of edge values; for the compare family each
 * pair twice, with compare == target and with another edge value.
 */
std::vector<value_triple> make_triples(int family, int op, int datatype);

/** An element value from an integer (two's complement, little endian). */
value_t int_value(int datatype, int64_t v);

} // namespace fiatomic_test

#endif
