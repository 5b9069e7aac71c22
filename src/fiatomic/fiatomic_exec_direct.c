/**
 * Direct strategy: the target memory is mapped in this process (shared
 * memory reached through ucp_rkey_ptr, or memory this very context exposed)
 * and UCP's atomics on it are CPU atomics (or, for 16/32-byte elements, out
 * of UCP's reach), so CPU atomics in place (fiatomic_cpu.c) are in the same
 * atomicity domain. No round trip, no target progress.
 */
#include "fiatomic_int.h"

#include <string.h>

bool fiatomic_direct_has(fiatomic_family_t family, int op, int datatype)
{
    return fiatomic_cell_defined(family, op, datatype) &&
           fiatomic_cpu_has_size(fiatomic_datatype_size(datatype));
}

void fiatomic_direct_start(fiatomic_elem_t *elem)
{
    fiatomic_req_t *req  = elem->req;
    fiatomic_rkey_t *key = elem->key;
    uint8_t old[FIATOMIC_MAX_ELEM_SIZE];

    fiatomic_cpu_apply(req->fia, req->datatype, req->op, req->combine,
                       key->local_base + (elem->raddr - key->address),
                       elem->operand, elem->compare, old);
    if (elem->result != NULL) {
        memcpy(elem->result, old, req->elem_size);
    }
    fiatomic_elem_done(elem, UCS_OK);
}
