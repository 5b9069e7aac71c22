/**
 * libFuzzer target for the fiatomic provider's message handlers through a
 * live UCP connection: a provider domain opened through libfabric in this
 * process (manual progress, an endpoint, a registered region), and a raw
 * UCP worker (a peer that skips the provider's protocol) connected to it by
 * its fi_getname address (its listener over tcp; over UCX_TLS=posix the
 * worker address it publishes), over UCX_TLS=$FIATOMIC_FUZZ_TLS (tcp when
 * unset). The provider is the build run-prov.sh made with coverage and
 * sanitizers, loaded by libfabric from $FIATOMIC_FUZZ_PROV_DIR.
 *
 * Input: up to FUZZ_MSGS_MAX messages, each a control byte, a header
 * length byte, a 16-bit little-endian data length and those bytes (fewer
 * at the end). Control:
 *   bits 0-3  the id: one of the provider's and libfiatomic's (1008..1014,
 *             1017..1022), or for 13..15 one nobody uses (0, 1015, 65535)
 *   bit 4     the reply flag (UCP_AM_SEND_FLAG_REPLY)
 *   bit 5     rendezvous (UCP_AM_SEND_FLAG_RNDV), else eager
 *   bit 6     progress both sides right after this send
 *
 * After each input (every wait bounded): the region and the bytes around
 * it are untouched (no message of a peer without a key may write them);
 * a crash or a sanitizer's report is a finding. The raw peer reconnects
 * when a send failed or did not complete (the provider dropped the
 * connection, or took no rendezvous). Set up once per process.
 */
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <ucp/api/ucp.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FUZZ_MSGS_MAX 16
#define FUZZ_REGION   4096
#define FUZZ_GUARD    4096
#define FUZZ_PATTERN  0x5a
#define FUZZ_WAIT_SEC 10.0
#define FUZZ_ADDR_LEN 24

static const uint16_t fuzz_ids[16] = {
    1008, 1009, 1010, 1011, 1012, 1013, 1014, 1017,
    1018, 1019, 1020, 1021, 1022, 0, 1015, 65535
};

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
static struct fid_cq *cq;
static struct fid_ep *ep;
static struct fid_mr *mr;
static uint8_t addr[64];
static uint8_t arena[FUZZ_GUARD + FUZZ_REGION + FUZZ_GUARD]
        __attribute__((aligned(4096)));
static ucp_context_h raw_context;
static ucp_worker_h raw_worker;
static ucp_ep_h raw_ep;
static uint8_t *buf;  /* 65535 + 255 bytes */

static void fuzz_fail(const char *what)
{
    fprintf(stderr, "fuzz_prov_peer: %s\n", what);
    abort();
}

static double fuzz_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void fuzz_progress(void)
{
    struct fi_cq_entry e;

    (void)ucp_worker_progress(raw_worker);
    (void)fi_cq_read(cq, &e, 1);
}

static uint64_t fuzz_be(const uint8_t *p, size_t bytes)
{
    uint64_t value = 0;
    size_t i;

    for (i = 0; i < bytes; ++i) {
        value = (value << 8) | p[i];
    }
    return value;
}

static void fuzz_ep_error(void *arg, ucp_ep_h ep_h, ucs_status_t status)
{
    (void)arg;
    (void)ep_h;
    (void)status;
}

/* the published worker address of a UCX_TLS=posix domain (fip_publish.c) */
static ucs_status_t fuzz_published(ucp_ep_params_t *params, void **worker_addr)
{
    struct {
        uint32_t magic, length;
        uint64_t nonce;
    } hdr;
    char path[256];
    int fd;

    snprintf(path, sizeof(path), "/dev/shm/fiatomic-%u-%016llx",
             (unsigned)fuzz_be(addr + 4, 4),
             (unsigned long long)fuzz_be(addr + 16, 8));
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if ((fd < 0) || (read(fd, &hdr, sizeof(hdr)) != sizeof(hdr)) ||
        (hdr.length == 0) || (hdr.length > 65536) ||
        ((*worker_addr = malloc(hdr.length)) == NULL) ||
        (read(fd, *worker_addr, hdr.length) != (ssize_t)hdr.length)) {
        fuzz_fail("cannot read the published worker address");
    }
    close(fd);
    params->field_mask |= UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params->address     = *worker_addr;
    return UCS_OK;
}

static ucs_status_t fuzz_wait(ucs_status_ptr_t req);

static void fuzz_connect(void)
{
    ucp_request_param_t flush = {0};
    ucp_ep_params_t params = {0};
    struct sockaddr_in sin = {0};
    void *worker_addr      = NULL;

    params.field_mask      = UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                             UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.err_mode        = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb  = fuzz_ep_error;
    if (addr[1] == 2) {
        (void)fuzz_published(&params, &worker_addr);
    } else {
        sin.sin_family          = AF_INET;
        sin.sin_port            = htons((uint16_t)fuzz_be(addr + 2, 2));
        sin.sin_addr.s_addr     = htonl((uint32_t)fuzz_be(addr + 4, 4));
        params.field_mask      |= UCP_EP_PARAM_FIELD_FLAGS |
                                  UCP_EP_PARAM_FIELD_SOCK_ADDR;
        params.flags            = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
        params.sockaddr.addr    = (const struct sockaddr*)&sin;
        params.sockaddr.addrlen = sizeof(sin);
    }
    if (ucp_ep_create(raw_worker, &params, &raw_ep) != UCS_OK) {
        fuzz_fail("ucp_ep_create");
    }
    free(worker_addr);
    /* wired up before the first input: UCX 1.13.1's sender asserts on a
     * rendezvous replayed at wireup (its own rkey size) */
    if (fuzz_wait(ucp_ep_flush_nbx(raw_ep, &flush)) != UCS_OK) {
        fuzz_fail("the connection to the provider did not wire up");
    }
}

static ucs_status_t fuzz_wait(ucs_status_ptr_t req)
{
    double deadline = fuzz_now() + FUZZ_WAIT_SEC;
    ucs_status_t status;

    if (!UCS_PTR_IS_PTR(req)) {
        return UCS_PTR_STATUS(req);
    }
    while ((status = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        if (fuzz_now() > deadline) {
            /* the raw peer's own send (a rendezvous nobody took): not
             * the provider's to finish; UCP frees it on close */
            ucp_request_free(req);
            return UCS_ERR_TIMED_OUT;
        }
        fuzz_progress();
    }
    ucp_request_free(req);
    return status;
}

static void fuzz_reconnect(void)
{
    ucp_request_param_t param = {0};

    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    (void)fuzz_wait(ucp_ep_close_nbx(raw_ep, &param));
    fuzz_connect();
}

static void fuzz_open_provider(void)
{
    struct fi_info *hints = fi_allocinfo();
    struct fi_av_attr av_attr = {0};
    struct fi_cq_attr cq_attr = {0};
    size_t addrlen            = sizeof(addr);

    hints->caps                       = FI_ATOMIC | FI_RMA | FI_MSG |
                                        FI_TAGGED;
    hints->ep_attr->type              = FI_EP_RDM;
    hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
    hints->domain_attr->mr_mode       = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR |
                                        FI_MR_ALLOCATED;
    hints->fabric_attr->prov_name     = strdup("fiatomic");
    av_attr.type                      = FI_AV_TABLE;
    cq_attr.format                    = FI_CQ_FORMAT_CONTEXT;
    if ((fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info) != 0) ||
        (fi_fabric(info->fabric_attr, &fabric, NULL) != 0) ||
        (fi_domain(fabric, info, &domain, NULL) != 0) ||
        (fi_av_open(domain, &av_attr, &av, NULL) != 0) ||
        (fi_cq_open(domain, &cq_attr, &cq, NULL) != 0) ||
        (fi_endpoint(domain, info, &ep, NULL) != 0) ||
        (fi_ep_bind(ep, &av->fid, 0) != 0) ||
        (fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV) != 0) ||
        (fi_enable(ep) != 0) ||
        (fi_mr_reg(domain, arena + FUZZ_GUARD, FUZZ_REGION,
                   FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr,
                   NULL) != 0) ||
        (fi_getname(&ep->fid, addr, &addrlen) != 0) ||
        (addrlen != FUZZ_ADDR_LEN)) {
        fuzz_fail("cannot open the provider (FIATOMIC_FUZZ_PROV_DIR?)");
    }
    fi_freeinfo(hints);
}

static void fuzz_open_raw(void)
{
    ucp_params_t params               = {0};
    ucp_worker_params_t worker_params = {0};
    ucp_am_handler_param_t am         = {0};
    unsigned id;

    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_AM;
    if ((ucp_init(&params, NULL, &raw_context) != UCS_OK) ||
        (ucp_worker_create(raw_context, &worker_params, &raw_worker) !=
         UCS_OK)) {
        fuzz_fail("cannot open the raw UCP worker");
    }
    /* the provider's replies reach this worker: every id's entry set
     * (UCX 1.13.1 reads an entry before checking its id) */
    am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                    UCP_AM_HANDLER_PARAM_FIELD_CB;
    for (id = 65536; id-- > 0;) {
        am.id = id;
        if (ucp_worker_set_am_recv_handler(raw_worker, &am) != UCS_OK) {
            fuzz_fail("ucp_worker_set_am_recv_handler");
        }
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *dir = getenv("FIATOMIC_FUZZ_PROV_DIR");
    const char *tls = getenv("FIATOMIC_FUZZ_TLS");

    (void)argc;
    (void)argv;
    if (dir == NULL) {
        fuzz_fail("FIATOMIC_FUZZ_PROV_DIR names no provider directory");
    }
    setenv("FI_PROVIDER_PATH", dir, 1);
    setenv("FI_PROVIDER", "fiatomic", 1);
    setenv("UCX_TLS", (tls != NULL) ? tls : "tcp", 1);
    if (strstr(getenv("UCX_TLS"), "posix") != NULL) {
        /* the raw peer's endpoint asks the peer error mode, as the
         * provider's do */
        setenv("UCX_POSIX_ERROR_HANDLING", "y", 0);
    }
    /* UCX logs to stdout: whole lines, not cut by libFuzzer's and
     * libfabric's lines on stderr (run-prov.sh reads them) */
    setvbuf(stdout, NULL, _IOLBF, 0);
    memset(arena, FUZZ_PATTERN, sizeof(arena));
    buf = malloc(65535 + 255);
    if (buf == NULL) {
        fuzz_fail("malloc");
    }
    fuzz_open_provider();
    fuzz_open_raw();
    fuzz_connect();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ucp_request_param_t param = {0};
    size_t pos = 0, hlen, dlen, i;
    unsigned msgs = 0;
    ucs_status_t status;
    uint8_t ctl;

    while ((pos + 4 <= size) && (msgs++ < FUZZ_MSGS_MAX)) {
        ctl  = data[pos];
        hlen = data[pos + 1];
        dlen = data[pos + 2] | ((size_t)data[pos + 3] << 8);
        pos += 4;
        /* the bytes given, then zeros */
        memset(buf, 0, hlen + dlen);
        memcpy(buf, data + pos,
               (size - pos < hlen + dlen) ? size - pos : hlen + dlen);
        pos += (size - pos < hlen + dlen) ? size - pos : hlen + dlen;

        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = ((ctl & 0x10) ? UCP_AM_SEND_FLAG_REPLY : 0) |
                             ((ctl & 0x20) ? UCP_AM_SEND_FLAG_RNDV :
                                             UCP_AM_SEND_FLAG_EAGER);
        status = fuzz_wait(ucp_am_send_nbx(raw_ep, fuzz_ids[ctl & 0xf], buf,
                                           hlen, buf + hlen, dlen, &param));
        if (status != UCS_OK) {
            /* the provider dropped the connection: a new one goes on */
            fuzz_reconnect();
        }
        if (ctl & 0x40) {
            for (i = 0; i < 64; ++i) {
                fuzz_progress();
            }
        }
    }
    for (i = 0; i < 256; ++i) {
        fuzz_progress();
    }
    for (i = 0; i < sizeof(arena); ++i) {
        if (arena[i] != FUZZ_PATTERN) {
            fuzz_fail("a message changed the registered region or the "
                      "bytes around it");
        }
    }
    return 0;
}
