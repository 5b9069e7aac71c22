/**
 * Direct strategy: the target memory is mapped in this process (shared
 * memory reached through ucp_rkey_ptr, or memory this very context exposed)
 * and UCP's atomics on it are CPU atomics, so CPU atomics in place are in the
 * same atomicity domain. No round trip, no target progress.
 */
#include "fiatomic_int.h"

#include <string.h>

bool fiatomic_direct_has(fiatomic_family_t family, int op, int datatype)
{
    size_t size = fiatomic_datatype_size(datatype);

    return fiatomic_cell_defined(family, op, datatype) &&
           ((size == 1) || (size == 2) || (size == 4) || (size == 8));
}

/*
 * A CAS loop on the element itself (x86 has 1/2/4/8-byte lock cmpxchg, and
 * mixed-size atomics on the same cache line are coherent there). `old` is
 * always the snapshot the exchange compares against; an op that leaves the
 * value unchanged completes on the atomic load without writing.
 */
#define FIATOMIC_DIRECT_LOOP(_type, _ptr, _elem, _old_p) \
    do { \
        _type *p = (_type*)(_ptr); \
        _type expected = __atomic_load_n(p, __ATOMIC_ACQUIRE), desired; \
        for (;;) { \
            desired = expected; \
            (_elem)->req->combine(&desired, (_elem)->operand, \
                                  (_elem)->compare); \
            if ((desired == expected) || \
                __atomic_compare_exchange_n(p, &expected, desired, 0, \
                                            __ATOMIC_ACQ_REL, \
                                            __ATOMIC_ACQUIRE)) { \
                break; \
            } \
        } \
        memcpy((_old_p), &expected, sizeof(expected)); \
    } while (0)

void fiatomic_direct_start(fiatomic_elem_t *elem)
{
    fiatomic_rkey_t *key = elem->key;
    void *ptr            = key->local_base + (elem->raddr - key->address);
    uint8_t old[8];

    switch (elem->req->elem_size) {
    case 1:
        FIATOMIC_DIRECT_LOOP(uint8_t, ptr, elem, old);
        break;
    case 2:
        FIATOMIC_DIRECT_LOOP(uint16_t, ptr, elem, old);
        break;
    case 4:
        FIATOMIC_DIRECT_LOOP(uint32_t, ptr, elem, old);
        break;
    case 8:
        FIATOMIC_DIRECT_LOOP(uint64_t, ptr, elem, old);
        break;
    default:
        fiatomic_assertv(0, "direct: invalid element size %zu",
                    elem->req->elem_size);
        fiatomic_elem_done(elem, UCS_ERR_UNSUPPORTED);
        return;
    }

    if (elem->result != NULL) {
        memcpy(elem->result, old, elem->req->elem_size);
    }
    fiatomic_elem_done(elem, UCS_OK);
}
