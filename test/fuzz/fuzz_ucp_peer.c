/**
 * libFuzzer target for a live target through UCP: generated messages go
 * from a raw UCP worker (a foreign peer, not libfiatomic) to a libfiatomic
 * context's worker in this process, over UCX_TLS=$FIATOMIC_FUZZ_TLS (tcp
 * when unset), eagerly or by rendezvous, with or without the reply flag, on
 * the request id or the reply id, of any length up to past the per-peer
 * held-bytes cap. So UCP's delivery, the AM callbacks, the peer table, the
 * reply path and the held-bytes accounting are fuzzed together, with the
 * decoder and executor behind them.
 *
 * Input: up to FUZZ_MSGS_MAX messages, each a control byte, a 16-bit
 * little-endian length and that many bytes (fewer at the end). Control:
 *   bit 0     rendezvous (UCP_AM_SEND_FLAG_RNDV), else eager
 *   bit 1     the reply flag (UCP_AM_SEND_FLAG_REPLY)
 *   bit 2     patch in a valid request header's magic, version, region
 *             handle and token, and an address near the exposed region (a
 *             random 64-bit token is out of a fuzzer's reach)
 *   bit 3     send on the reply id instead of the request id
 *   bits 4-5  length: as given, around the longest valid request, 65636
 *             bytes, or one byte past the held-bytes cap (padded)
 *   bit 6     progress both workers right after this send
 *
 * After each input (all bounded, else abort: a hang is a finding): every
 * send completes with UCS_OK (a declined rendezvous does too), every
 * request with the reply flag gets exactly one well-formed reply, no
 * message without it any, the context holds nothing any more
 * (replies_inflight), and the bytes around the exposed region are
 * untouched. Everything is set up once per process and torn down at exit.
 */
#include "fiatomic_context.h"
#include "fiatomic_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FUZZ_MSGS_MAX   16
#define FUZZ_GUARD      256
#define FUZZ_EXPOSED    1024
#define FUZZ_PATTERN    0x5a
#define FUZZ_WAIT_SEC   10.0
/* the longest valid request: header, operands and compare values */
#define FUZZ_REQUEST_MAX \
    (sizeof(fiatomic_wire_req_t) + 2 * FIATOMIC_WIRE_MAX_PAYLOAD)
#define FUZZ_MSG_MAX    (FIATOMIC_TARGET_HELD_MAX + 1)

typedef struct {
    ucp_context_h context;
    ucp_worker_h  worker;
} fuzz_side_t;

static fuzz_side_t target, peer;
static fiatomic_h fia;
static fiatomic_mem_h mem;
static fiatomic_key_hdr_t key;
static ucp_ep_h peer_ep;
static uint8_t arena[FUZZ_GUARD + FUZZ_EXPOSED + FUZZ_GUARD]
        __attribute__((aligned(64)));
static uint8_t *bufs[FUZZ_MSGS_MAX];  /* each FUZZ_MSG_MAX bytes */
static unsigned replies, bad_replies;

static void fuzz_fail(const char *what)
{
    fprintf(stderr, "fuzz_ucp_peer: %s\n", what);
    abort();
}

static double fuzz_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A reply to the raw peer: checked like an initiator would. */
static ucs_status_t fuzz_reply_cb(void *arg, const void *header,
                                  size_t header_length, void *data,
                                  size_t length,
                                  const ucp_am_recv_param_t *param)
{
    fiatomic_wire_reply_t reply;

    (void)arg;
    (void)header;
    (void)header_length;
    ++replies;
    if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) ||
        (length < sizeof(reply)) || (length > FIATOMIC_WIRE_REPLY_MAX)) {
        ++bad_replies; /* a rendezvous one is declined by UCS_OK */
        return UCS_OK;
    }
    memcpy(&reply, data, sizeof(reply));
    if ((reply.magic != FIATOMIC_WIRE_REPLY_MAGIC) ||
        ((reply.status != UCS_OK) && (reply.count != 0)) ||
        (length < sizeof(reply) + reply.count)) {
        ++bad_replies;
    }
    return UCS_OK;
}

static void fuzz_side_create(fuzz_side_t *side, const char *tls)
{
    ucp_worker_params_t wparams;
    ucp_params_t params;
    ucp_config_t *config;

    if (ucp_config_read(NULL, NULL, &config) != UCS_OK) {
        fuzz_fail("ucp_config_read");
    }
    ucp_config_modify(config, "TLS", tls);
    /* UCP's registration cache keeps a region per buffer sent by
     * rendezvous for as long as the context lives, reachable only through
     * its page table, where LeakSanitizer cannot see it (UCX 1.22): a leak
     * report per new buffer that is none */
    ucp_config_modify(config, "RCACHE_ENABLE", "n");
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_AM | UCP_FEATURE_RMA |
                        UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64;
    if (ucp_init(&params, config, &side->context) != UCS_OK) {
        fuzz_fail("ucp_init");
    }
    ucp_config_release(config);
    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    if (ucp_worker_create(side->context, &wparams, &side->worker) != UCS_OK) {
        fuzz_fail("ucp_worker_create");
    }
}

static void fuzz_cleanup(void)
{
    unsigned i;

    if (peer_ep != NULL) {
        ucp_ep_close_nb(peer_ep, UCP_EP_CLOSE_MODE_FORCE);
    }
    fiatomic_mem_unexpose(mem);
    fiatomic_destroy(fia);
    ucp_worker_destroy(peer.worker);
    ucp_worker_destroy(target.worker);
    ucp_cleanup(peer.context);
    ucp_cleanup(target.context);
    for (i = 0; i < FUZZ_MSGS_MAX; ++i) {
        free(bufs[i]);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *tls = getenv("FIATOMIC_FUZZ_TLS");
    ucp_am_handler_param_t hparams;
    fiatomic_mem_params_t mparams;
    ucp_ep_params_t eparams;
    ucp_address_t *address;
    size_t address_length, key_size;
    void *packed;
    unsigned i;

    (void)argc;
    (void)argv;
    if (tls == NULL) {
        tls = "tcp";
    }
    fuzz_side_create(&target, tls);
    fuzz_side_create(&peer, tls);
    if (fiatomic_create(target.context, target.worker, NULL, &fia) !=
        UCS_OK) {
        fuzz_fail("fiatomic_create");
    }

    memset(arena, FUZZ_PATTERN, sizeof(arena));
    memset(&mparams, 0, sizeof(mparams));
    mparams.field_mask = FIATOMIC_MEM_PARAM_FIELD_ADDRESS |
                         FIATOMIC_MEM_PARAM_FIELD_LENGTH;
    mparams.address    = arena + FUZZ_GUARD;
    mparams.length     = FUZZ_EXPOSED;
    if ((fiatomic_mem_expose(fia, &mparams, &mem) != UCS_OK) ||
        (fiatomic_mem_pack_key(mem, &packed, &key_size) != UCS_OK) ||
        (key_size < sizeof(key))) {
        fuzz_fail("fiatomic_mem_expose");
    }
    memcpy(&key, packed, sizeof(key));
    fiatomic_key_release(packed);
    if (!(key.flags & FIATOMIC_KEY_F_TARGET)) {
        fuzz_fail("the target does not serve target-side requests");
    }

    memset(&hparams, 0, sizeof(hparams));
    hparams.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                         UCP_AM_HANDLER_PARAM_FIELD_CB;
    hparams.id         = FIATOMIC_AM_ID_DEFAULT + FIATOMIC_WIRE_AM_REPLY;
    hparams.cb         = fuzz_reply_cb;
    if (ucp_worker_set_am_recv_handler(peer.worker, &hparams) != UCS_OK) {
        fuzz_fail("ucp_worker_set_am_recv_handler");
    }
    if (ucp_worker_get_address(target.worker, &address, &address_length) !=
        UCS_OK) {
        fuzz_fail("ucp_worker_get_address");
    }
    memset(&eparams, 0, sizeof(eparams));
    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address    = address;
    if (ucp_ep_create(peer.worker, &eparams, &peer_ep) != UCS_OK) {
        fuzz_fail("ucp_ep_create");
    }
    ucp_worker_release_address(target.worker, address);

    for (i = 0; i < FUZZ_MSGS_MAX; ++i) {
        bufs[i] = malloc(FUZZ_MSG_MAX);
        if (bufs[i] == NULL) {
            fuzz_fail("no memory");
        }
    }
    atexit(fuzz_cleanup);
    return 0;
}

static void fuzz_progress(void)
{
    ucp_worker_progress(target.worker);
    ucp_worker_progress(peer.worker);
}

/* One message into bufs[slot] from `body`; its length. */
static size_t fuzz_build(unsigned slot, uint8_t ctl, const uint8_t *body,
                         size_t body_len)
{
    static const size_t lengths[] = {0, FUZZ_REQUEST_MAX, 65636,
                                     FUZZ_MSG_MAX};
    uint8_t *msg   = bufs[slot];
    unsigned mode  = (ctl >> 4) & 3;
    size_t length  = body_len;
    fiatomic_wire_req_t req;

    memcpy(msg, body, body_len);
    if (mode == 1) {
        /* 32 either side of the longest valid request */
        length = lengths[mode] - 32 + (body_len % 64);
    } else if (mode > 1) {
        length = lengths[mode];
    }
    if (length > body_len) {
        memset(msg + body_len, FUZZ_PATTERN, length - body_len);
    }

    if ((ctl & 0x4) && (length >= sizeof(req))) {
        memcpy(&req, msg, sizeof(req));
        req.magic   = FIATOMIC_WIRE_REQ_MAGIC;
        req.version = FIATOMIC_WIRE_VERSION;
        req.region  = key.region;
        req.token   = key.token;
        req.raddr   = key.address + (req.raddr % (FUZZ_EXPOSED + 64));
        memcpy(msg, &req, sizeof(req));
    }
    return length;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ucs_status_ptr_t sent[FUZZ_MSGS_MAX];
    unsigned n = 0, expected = 0, i;
    ucp_request_param_t param;
    size_t body_len, length;
    double deadline;
    ucs_status_t status;
    bool done;
    uint8_t ctl;

    replies = bad_replies = 0;
    while ((size >= 3) && (n < FUZZ_MSGS_MAX)) {
        ctl      = data[0];
        body_len = data[1] | ((size_t)data[2] << 8);
        data    += 3;
        size    -= 3;
        if (body_len > size) {
            body_len = size;
        }
        length = fuzz_build(n, ctl, data, body_len);
        data  += body_len;
        size  -= body_len;

        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = ((ctl & 0x1) ? UCP_AM_SEND_FLAG_RNDV :
                                            UCP_AM_SEND_FLAG_EAGER) |
                             ((ctl & 0x2) ? UCP_AM_SEND_FLAG_REPLY : 0);
        sent[n] = ucp_am_send_nbx(peer_ep, FIATOMIC_AM_ID_DEFAULT +
                                  ((ctl & 0x8) ? FIATOMIC_WIRE_AM_REPLY :
                                                 FIATOMIC_WIRE_AM_REQUEST),
                                  NULL, 0, bufs[n], length, &param);
        if (UCS_PTR_IS_ERR(sent[n])) {
            fuzz_fail("ucp_am_send_nbx failed");
        }
        if ((ctl & 0x2) && !(ctl & 0x8)) {
            ++expected;
        }
        if (ctl & 0x40) {
            fuzz_progress();
        }
        ++n;
    }

    /* Every send completes, every expected reply comes. */
    deadline = fuzz_now() + FUZZ_WAIT_SEC;
    do {
        fuzz_progress();
        done = (replies >= expected) && (fia->replies_inflight == 0);
        for (i = 0; i < n; ++i) {
            if (UCS_PTR_IS_PTR(sent[i])) {
                status = ucp_request_check_status(sent[i]);
                if (status == UCS_INPROGRESS) {
                    done = false;
                    continue;
                }
                if (status != UCS_OK) {
                    fuzz_fail("a send completed with an error");
                }
                ucp_request_free(sent[i]);
                sent[i] = NULL;
            }
        }
        if (fuzz_now() > deadline) {
            fuzz_fail("a send, a reply or the target's work did not end");
        }
    } while (!done);

    /* and nothing more */
    for (i = 0; i < 16; ++i) {
        fuzz_progress();
    }
    if (replies != expected) {
        fprintf(stderr, "fuzz_ucp_peer: %u replies to %u requests\n",
                replies, expected);
        abort();
    }
    if (bad_replies != 0) {
        fuzz_fail("a malformed reply");
    }
    for (i = 0; i < FUZZ_GUARD; ++i) {
        if ((arena[i] != FUZZ_PATTERN) ||
            (arena[FUZZ_GUARD + FUZZ_EXPOSED + i] != FUZZ_PATTERN)) {
            fuzz_fail("a byte outside the exposed region changed");
        }
    }
    return 0;
}
