/**
 * libFuzzer target for the target-side request decoder and executor
 * (fiatomic_target_execute), on a region table of its own (no context):
 * one region inside an arena of guard bytes. Whatever the bytes, it must not
 * crash, must not touch memory outside the exposed region, and must answer
 * with a well-formed reply that is never larger than FIATOMIC_WIRE_REPLY_MAX.
 *
 * A random 64-bit token is out of a fuzzer's reach, so the first input byte
 * chooses whether the harness patches in the valid region/token (and makes
 * the address relative to the region), letting the fuzzer explore the range,
 * alignment, op and length checks and the executor itself; otherwise the
 * bytes go in untouched.
 */
#include "fiatomic_target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD    256
#define EXPOSED  1024
#define PATTERN  0x5a

static uint8_t arena[GUARD + EXPOSED + GUARD] __attribute__((aligned(64)));
/* The lock words of 32-byte elements, as a context's own. */
static uint64_t own_locks[FIATOMIC_WIDE_LOCKS];
static fiatomic_region_t region = {
    .token   = 0x0123456789abcdefull,
    .address = arena + GUARD,
    .length  = EXPOSED
};
static const fiatomic_regions_t regions = {
    .slot       = &region,
    .count      = 1,
    .own_locks  = own_locks,
    .timeout_ns = 1000ull * 1000 * 1000
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t reply[FIATOMIC_WIRE_REPLY_MAX];
    fiatomic_wire_reply_t hdr;
    fiatomic_wire_req_t req;
    uint8_t *msg;
    size_t len, i;

    if (size == 0) {
        return 0;
    }

    memset(arena, PATTERN, GUARD);
    memset(arena + GUARD + EXPOSED, PATTERN, GUARD);

    len = size - 1;
    msg = malloc(len ? len : 1);
    memcpy(msg, data + 1, len);
    if ((data[0] & 1) && (len >= sizeof(req))) {
        memcpy(&req, msg, sizeof(req));
        req.magic   = FIATOMIC_WIRE_REQ_MAGIC;
        req.version = FIATOMIC_WIRE_VERSION;
        req.region  = 0;
        req.token   = region.token;
        /* an offset around the region, so edges are hit often */
        req.raddr   = (uintptr_t)region.address +
                      (int64_t)(int16_t)(req.raddr & 0xffff);
        memcpy(msg, &req, sizeof(req));
    }

    len = fiatomic_target_execute(&regions, msg, len, reply);
    free(msg);

    if ((len < sizeof(hdr)) || (len > sizeof(reply))) {
        abort();
    }
    memcpy(&hdr, reply, sizeof(hdr));
    if ((hdr.magic != FIATOMIC_WIRE_REPLY_MAGIC) ||
        ((hdr.status != UCS_OK) && (len != sizeof(hdr)))) {
        abort();
    }
    for (i = 0; i < GUARD; ++i) {
        if ((arena[i] != PATTERN) || (arena[GUARD + EXPOSED + i] != PATTERN)) {
            fprintf(stderr, "fuzz: byte outside the exposed region changed\n");
            abort();
        }
    }
    return 0;
}
