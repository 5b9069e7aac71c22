/**
 * atomicx: the pure arithmetic of emulated atomics (no device, no UCX state),
 * so that host unit tests can check every combination.
 *
 * Emulated ops run as compare-and-swap loops on the enclosing, naturally
 * aligned 8-byte word. The NIC executes the CAS on that word as a host-order
 * 64-bit integer (the byte-order self-test at iface creation verifies this for
 * the device at hand), so a 32-bit operand occupies the half of the word that
 * its address selects, and a 32-bit op rewrites only that half.
 */

#ifndef UCT_ATOMICX_AMO_H_
#define UCT_ATOMICX_AMO_H_

#include <uct/api/uct.h>
#include <stdint.h>


/* Address of the 8-byte word that holds the operand at @a remote_addr */
static inline uint64_t uct_atomicx_word_addr(uint64_t remote_addr)
{
    return remote_addr & ~(uint64_t)7;
}


/* Bit position, inside the host-order 64-bit word, of the 32-bit operand at
 * @a remote_addr (4-byte aligned) */
static inline unsigned uct_atomicx_half_shift(uint64_t remote_addr)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return (remote_addr & 4) ? 32 : 0;
#else
    return (remote_addr & 4) ? 0 : 32;
#endif
}


/* The value of an op of @a size bytes held in @a word at @a shift */
static inline uint64_t uct_atomicx_word_extract(uint64_t word, unsigned size,
                                                unsigned shift)
{
    return (size == sizeof(uint64_t)) ? word : (uint32_t)(word >> shift);
}


/* old <op> value, at the width of the mask (ADD wraps) */
static inline uint64_t uct_atomicx_apply(uct_atomic_op_t op, uint64_t old,
                                         uint64_t value, uint64_t mask)
{
    switch (op) {
    case UCT_ATOMIC_OP_ADD:
        return (old + value) & mask;
    case UCT_ATOMIC_OP_AND:
        return old & value & mask;
    case UCT_ATOMIC_OP_OR:
        return (old | value) & mask;
    case UCT_ATOMIC_OP_XOR:
        return (old ^ value) & mask;
    case UCT_ATOMIC_OP_SWAP:
        return value & mask;
    default:
        return old & mask; /* CSWAP is handled by the caller */
    }
}


/**
 * The new 8-byte word after applying an op of @a size bytes to @a word.
 * A 32-bit op changes only the half at @a shift; the neighbour half is kept
 * bit for bit (a carry out of a 32-bit ADD is dropped, not propagated).
 * CSWAP (@a op == UCT_ATOMIC_OP_CSWAP) writes @a value only when the current
 * operand equals @a compare.
 */
static inline uint64_t uct_atomicx_word_combine(uct_atomic_op_t op,
                                                unsigned size, unsigned shift,
                                                uint64_t word, uint64_t value,
                                                uint64_t compare)
{
    uint64_t mask = (size == sizeof(uint64_t)) ? UINT64_MAX : UINT32_MAX;
    uint64_t old  = uct_atomicx_word_extract(word, size, shift);
    uint64_t res;

    if (op == UCT_ATOMIC_OP_CSWAP) {
        res = (old == (compare & mask)) ? (value & mask) : old;
    } else {
        res = uct_atomicx_apply(op, old, value, mask);
    }

    if (size == sizeof(uint64_t)) {
        return res;
    }

    return (word & ~(mask << shift)) | (res << shift);
}


/* A fetched 8-byte value in host order, given the device's reply order */
static inline uint64_t uct_atomicx_reply_to_host(uint64_t reply, int reply_be)
{
    return reply_be ? __builtin_bswap64(reply) : reply;
}

#endif
