/**
 * libFuzzer target for the target-side request decoder and executor
 * (fiatomic_target_execute). Whatever the bytes, it must not crash, must not
 * touch memory outside the exposed region, and must answer with a well-formed
 * reply that is never larger than FIATOMIC_WIRE_REPLY_MAX.
 *
 * A random 64-bit token is out of a fuzzer's reach, so the first input byte
 * chooses whether the harness patches in the valid region/token (and makes
 * the address relative to the region), letting the fuzzer explore the range,
 * alignment, op and length checks and the executor itself; otherwise the
 * bytes go in untouched.
 */
#include "fiatomic_int.h"
#include "fiatomic_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD    256
#define EXPOSED  1024
#define PATTERN  0x5a

static uint8_t arena[GUARD + EXPOSED + GUARD] __attribute__((aligned(64)));
static struct fiatomic_context fia;
static struct fiatomic_mem mem;
static fiatomic_region_t region;

static void setup(void)
{
    if (fia.regions != NULL) {
        return;
    }
    mem.fia          = &fia;
    mem.address      = arena + GUARD;
    mem.length       = EXPOSED;
    mem.region       = 0;
    region.mem       = &mem;
    region.token     = 0x0123456789abcdefull;
    fia.regions      = &region;
    fia.num_regions  = 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t reply[FIATOMIC_WIRE_REPLY_MAX];
    fiatomic_wire_reply_t hdr;
    fiatomic_wire_req_t req;
    uint8_t *msg;
    size_t len, i;

    setup();
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
        req.raddr   = (uintptr_t)mem.address +
                      (int64_t)(int16_t)(req.raddr & 0xffff);
        memcpy(msg, &req, sizeof(req));
    }

    len = fiatomic_target_execute(&fia, msg, len, reply);
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
