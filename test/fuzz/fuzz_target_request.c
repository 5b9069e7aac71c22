/**
 * libFuzzer target for the target-side request decoder and executor
 * (fiatomic_target_execute), on a region table of its own (no context):
 * one region inside an arena of guard bytes. Whatever the bytes, it must not
 * crash, must not touch memory outside the exposed region, and must answer
 * with a well-formed reply that is never larger than FIATOMIC_WIRE_REPLY_MAX.
 *
 * A random 64-bit token is out of a fuzzer's reach, so the first input byte
 * chooses whether the harness patches in the valid region handle and token
 * (and makes the address relative to the region), letting the fuzzer
 * explore the range, alignment, op and length checks and the executor
 * itself; otherwise the bytes go in untouched. The region is exposed in
 * the table's second slot, the first one's region unexposed before it: its
 * stale handle is in the table's history too.
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
    .address = arena + GUARD,
    .length  = EXPOSED
};
static fiatomic_region_t gone = {
    .address = arena + GUARD,
    .length  = EXPOSED
};
static fiatomic_regions_t regions;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fiatomic_regions_init(&regions, own_locks, 1000ull * 1000 * 1000);
    if ((fiatomic_region_add(&regions, &gone) != UCS_OK) ||
        (fiatomic_region_add(&regions, &region) != UCS_OK)) {
        abort();
    }
    fiatomic_region_remove(&regions, &gone);
    return 0;
}

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
        req.magic    = FIATOMIC_WIRE_REQ_MAGIC;
        req.version  = FIATOMIC_WIRE_VERSION;
        req.reserved = 0;
        req.region   = region.handle;
        req.token    = region.token;
        /* an offset around the region, so edges are hit often */
        req.raddr    = (uintptr_t)region.address +
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
