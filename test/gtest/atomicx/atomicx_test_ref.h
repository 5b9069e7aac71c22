/*
 * The sequential reference of UCT's atomic ops and their names, shared by
 * the host unit tests and the guest UCT suite.
 */
#ifndef ATOMICX_TEST_REF_H_
#define ATOMICX_TEST_REF_H_

#include <uct/api/uct.h>

namespace atomicx_test {

inline const char *op_name(uct_atomic_op_t op)
{
    switch (op) {
    case UCT_ATOMIC_OP_ADD:   return "add";
    case UCT_ATOMIC_OP_AND:   return "and";
    case UCT_ATOMIC_OP_OR:    return "or";
    case UCT_ATOMIC_OP_XOR:   return "xor";
    case UCT_ATOMIC_OP_SWAP:  return "swap";
    case UCT_ATOMIC_OP_CSWAP: return "cswap";
    default:                  return "?";
    }
}

/* Sequential reference on a T in memory */
template <typename T>
T reference(uct_atomic_op_t op, T old, T value, T compare)
{
    switch (op) {
    case UCT_ATOMIC_OP_ADD:   return (T)(old + value);
    case UCT_ATOMIC_OP_AND:   return old & value;
    case UCT_ATOMIC_OP_OR:    return old | value;
    case UCT_ATOMIC_OP_XOR:   return old ^ value;
    case UCT_ATOMIC_OP_SWAP:  return value;
    case UCT_ATOMIC_OP_CSWAP: return (old == compare) ? value : old;
    default:                  return old;
    }
}

} // namespace atomicx_test

#endif
