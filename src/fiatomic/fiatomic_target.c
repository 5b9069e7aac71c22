/**
 * Target-side execution, the target's half: the table of exposed regions
 * and the request decoder and executor (fiatomic_target_am.c receives the
 * requests and sends the replies).
 *
 * A request is executed only if every byte it touches lies inside a region
 * this context exposed, named by index and token from its packed key, with
 * naturally aligned elements of a defined cell, and the message is exactly
 * as long as its header says. Anything else gets an error reply and touches
 * nothing.
 */
#include "fiatomic_int.h"
#include "fiatomic_wire.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Regions                                                                   */

ucs_status_t fiatomic_region_add(fiatomic_h fia, fiatomic_mem_h mem)
{
    fiatomic_region_t *regions;
    ucs_status_t status;
    unsigned index;

    for (index = 0; index < fia->num_regions; ++index) {
        if (fia->regions[index].mem == NULL) {
            break;
        }
    }

    if (index == fia->num_regions) {
        regions = realloc(fia->regions,
                          (fia->num_regions * 2 + 4) * sizeof(*regions));
        if (regions == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
        memset(regions + fia->num_regions, 0,
               (fia->num_regions + 4) * sizeof(*regions));
        fia->regions      = regions;
        fia->num_regions  = fia->num_regions * 2 + 4;
    }

    status = fiatomic_random_token(&fia->regions[index].token);
    if (status != UCS_OK) {
        return status;
    }

    fia->regions[index].mem = mem;
    mem->region             = index;
    return UCS_OK;
}

fiatomic_mem_h fiatomic_region_find(fiatomic_h fia, uint32_t region,
                                    uint64_t token, uint64_t address,
                                    uint64_t length)
{
    fiatomic_mem_h mem;

    if (region >= fia->num_regions) {
        return NULL;
    }

    mem = fia->regions[region].mem;
    if ((mem == NULL) || (fia->regions[region].token != token) ||
        ((uintptr_t)mem->address != address) || (mem->length != length)) {
        return NULL;
    }
    return mem;
}

void fiatomic_region_remove(fiatomic_h fia, fiatomic_mem_h mem)
{
    fia->regions[mem->region].mem   = NULL;
    fia->regions[mem->region].token = 0;
}

/* ------------------------------------------------------------------------ */
/* Decoder and executor                                                      */

static size_t fiatomic_target_reply(void *reply, uint64_t id,
                                    ucs_status_t status, uint32_t count)
{
    fiatomic_wire_reply_t hdr = {
        .magic    = FIATOMIC_WIRE_REPLY_MAGIC,
        .status   = status,
        .id       = id,
        .count    = (status == UCS_OK) ? count : 0,
        .reserved = 0
    };

    memcpy(reply, &hdr, sizeof(hdr));
    return sizeof(hdr); /* fetched values, if any, follow */
}

/* Check a request; on success *ptr_p is the first element in memory. */
static ucs_status_t fiatomic_target_check(fiatomic_h fia,
                                          const fiatomic_wire_req_t *req,
                                          size_t length, void **ptr_p,
                                          fiatomic_mem_h *mem_p)
{
    size_t size, data_len, expected;
    const fiatomic_region_t *region;
    const fiatomic_cell_t *cell;
    uint64_t base, offset;

    if ((req->magic != FIATOMIC_WIRE_REQ_MAGIC) ||
        (req->version != FIATOMIC_WIRE_VERSION)) {
        return UCS_ERR_INVALID_PARAM;
    }

    cell = fiatomic_cell_get(req->family, req->op, req->datatype);
    if ((cell == NULL) || !fiatomic_target_ops.supports(cell)) {
        return UCS_ERR_UNSUPPORTED;
    }

    size = fiatomic_datatype_size(req->datatype);
    if ((req->count == 0) || (req->count > FIATOMIC_WIRE_MAX_PAYLOAD / size)) {
        return UCS_ERR_INVALID_PARAM;
    }

    data_len = (size_t)req->count * size;
    expected = sizeof(*req) +
               ((req->op != FI_ATOMIC_READ) ? data_len : 0) +
               ((req->family == FIATOMIC_FAMILY_COMPARE) ? data_len : 0);
    if (length != expected) {
        return UCS_ERR_INVALID_PARAM; /* truncated or trailing bytes */
    }

    if ((req->region >= fia->num_regions) ||
        (fia->regions[req->region].mem == NULL) ||
        (fia->regions[req->region].token != req->token)) {
        return UCS_ERR_INVALID_PARAM; /* not a key this target gave out */
    }

    region = &fia->regions[req->region];
    base   = (uintptr_t)region->mem->address;
    if ((req->raddr % fiatomic_datatype_alignment(req->datatype)) ||
        (req->raddr < base)) {
        return UCS_ERR_INVALID_PARAM;
    }

    offset = req->raddr - base;
    if ((offset > region->mem->length) ||
        (data_len > region->mem->length - offset)) {
        return UCS_ERR_INVALID_PARAM; /* overflow-safe range check */
    }

    *ptr_p = (uint8_t*)region->mem->address + offset;
    *mem_p = region->mem;
    return UCS_OK;
}

size_t fiatomic_target_execute(fiatomic_h fia, const void *msg,
                               size_t length, void *reply)
{
    uint8_t *values = (uint8_t*)reply + sizeof(fiatomic_wire_reply_t);
    const uint8_t *operands, *compares;
    const fiatomic_cell_t *cell;
    fiatomic_wire_req_t req;
    ucs_status_t status;
    uint8_t old[FIATOMIC_MAX_ELEM_SIZE];
    const uint8_t *operand, *compare;
    fiatomic_mem_h mem;
    bool fetch;
    size_t size, i;
    uint8_t *ptr;

    if (length < sizeof(req)) {
        return fiatomic_target_reply(reply, 0, UCS_ERR_INVALID_PARAM, 0);
    }

    memcpy(&req, msg, sizeof(req)); /* the message may be unaligned */
    status = fiatomic_target_check(fia, &req, length, (void**)&ptr, &mem);
    if (status != UCS_OK) {
        return fiatomic_target_reply(reply, req.id, status, 0);
    }

    size     = fiatomic_datatype_size(req.datatype);
    cell     = fiatomic_cell_get(req.family, req.op, req.datatype);
    fetch    = (req.family != FIATOMIC_FAMILY_BASE);
    operands = (const uint8_t*)msg + sizeof(req);
    compares = operands + ((req.op != FI_ATOMIC_READ) ? req.count * size : 0);
    for (i = 0; i < req.count; ++i) {
        operand = (req.op != FI_ATOMIC_READ) ? operands + i * size : NULL;
        compare = (req.family == FIATOMIC_FAMILY_COMPARE) ?
                  compares + i * size : NULL;
        if (size == 32) {
            /* under the locks the peers that map the memory take too */
            status = fiatomic_wide_apply(fia, cell, mem->wide_locks,
                                         (ptr - (uint8_t*)mem->address) +
                                         i * size, ptr + i * size, operand,
                                         compare, old);
            if (status != UCS_OK) {
                /* a lock held past the operation timeout: the elements
                 * before this one were applied (fiatomic(3)) */
                return fiatomic_target_reply(reply, req.id, status, 0);
            }
        } else {
            fiatomic_cpu_apply(fia, cell, ptr + i * size, operand, compare,
                               old);
        }
        if (fetch) {
            memcpy(values + i * size, old, size);
        }
    }

    fiatomic_target_reply(reply, req.id, UCS_OK, fetch ? req.count : 0);
    return sizeof(fiatomic_wire_reply_t) + (fetch ? req.count * size : 0);
}
