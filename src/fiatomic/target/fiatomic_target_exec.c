/**
 * Target-side strategy, the executor (fiatomic_target.h): the request
 * decoder and executor, on the table of exposed regions
 * (fiatomic_region.c; fiatomic_target_serve.c receives the requests and
 * sends the replies).
 *
 * A request is executed only if every byte it touches lies inside a region
 * this context exposed, named by handle and token from its packed key, with
 * naturally aligned elements of a defined cell, with the accesses (read,
 * write) the operation needs granted by the region, and the message is
 * exactly as long as its header says. Anything else gets an error reply
 * and touches nothing. The decoder and executor read the region table
 * alone (fiatomic_target.h).
 */
#include "cell/fiatomic_cpu.h"
#include "core/fiatomic_strategy.h"
#include "target/fiatomic_target.h"
#include "base/fiatomic_wire.h"

#include <string.h>

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
static ucs_status_t
fiatomic_target_check(const fiatomic_regions_t *regions,
                      const fiatomic_wire_req_t *req, size_t length,
                      uint8_t **ptr_p, const fiatomic_region_t **region_p)
{
    size_t size, data_len, expected;
    const fiatomic_region_t *region;
    const fiatomic_cell_t *cell;
    uint64_t base, offset;

    if ((req->magic != FIATOMIC_WIRE_REQ_MAGIC) ||
        (req->version != FIATOMIC_WIRE_VERSION) || (req->reserved != 0)) {
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

    region = fiatomic_region_lookup(regions, req->region, req->token);
    if (region == NULL) {
        return UCS_ERR_INVALID_PARAM; /* not a key this target gave out, or
                                         one of memory since unexposed */
    }

    base = (uintptr_t)region->address;
    if ((req->raddr % fiatomic_datatype_alignment(req->datatype)) ||
        (req->raddr < base)) {
        return UCS_ERR_INVALID_PARAM;
    }

    offset = req->raddr - base;
    if ((offset > region->length) || (data_len > region->length - offset)) {
        return UCS_ERR_INVALID_PARAM; /* overflow-safe range check */
    }

    if (region->denied & fiatomic_access_needed(req->family, req->op)) {
        return UCS_ERR_REJECTED; /* the memory was exposed without it */
    }

    *ptr_p    = region->address + offset;
    *region_p = region;
    return UCS_OK;
}

size_t fiatomic_target_execute(const fiatomic_regions_t *regions,
                               const void *msg, size_t length, void *reply)
{
    uint8_t *values = (uint8_t*)reply + sizeof(fiatomic_wire_reply_t);
    const uint8_t *operands, *compares;
    const fiatomic_cell_t *cell;
    fiatomic_wire_req_t req;
    ucs_status_t status;
    uint8_t old[FIATOMIC_MAX_ELEM_SIZE];
    const uint8_t *operand, *compare;
    const fiatomic_region_t *region;
    bool fetch;
    size_t size, i;
    uint8_t *ptr;

    if (length < sizeof(req)) {
        return fiatomic_target_reply(reply, 0, UCS_ERR_INVALID_PARAM, 0);
    }

    memcpy(&req, msg, sizeof(req)); /* the message may be unaligned */
    status = fiatomic_target_check(regions, &req, length, &ptr, &region);
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
            status = fiatomic_wide_apply(regions->own_locks,
                                         regions->timeout_ns, cell,
                                         region->wide_locks,
                                         (ptr - region->address) + i * size,
                                         ptr + i * size, operand, compare,
                                         old);
            if (status != UCS_OK) {
                /* a lock held past the operation timeout: the elements
                 * before this one were applied (fiatomic(3)) */
                return fiatomic_target_reply(reply, req.id, status, 0);
            }
        } else {
            fiatomic_cpu_apply(cell, ptr + i * size, operand, compare, old);
        }
        if (fetch) {
            memcpy(values + i * size, old, size);
        }
    }

    fiatomic_target_reply(reply, req.id, UCS_OK, fetch ? req.count : 0);
    return sizeof(fiatomic_wire_reply_t) + (fetch ? req.count * size : 0);
}
