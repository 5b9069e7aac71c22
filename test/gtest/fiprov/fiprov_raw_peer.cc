/**
 * The raw UCP peer (fiprov_raw_peer.h). It reads the provider's address
 * format itself (fip_addr.c: version 1; family 4, port and IPv4 address
 * at bytes 2 and 4; family 2, process id and nonce at bytes 4 and 16; all
 * big-endian) and the published file's (fip_publish.c), as an attacker
 * who read the provider's source would.
 */
#include "fiprov_raw_peer.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

namespace fiprov_test {

namespace {

const size_t   raw_addr_len      = 24;
const uint8_t  raw_addr_version  = 1;
const uint8_t  raw_family_ipv4   = 4;
const uint8_t  raw_family_local  = 2;
const uint32_t raw_publish_magic = 0x66697057u;
const size_t   raw_publish_max   = 64 * 1024;

uint64_t get_be(const uint8_t *p, size_t bytes)
{
    uint64_t value = 0;

    for (size_t i = 0; i < bytes; ++i) {
        value = (value << 8) | p[i];
    }
    return value;
}

int64_t now_ms()
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

} // namespace

ucs_status_t raw_peer_ucp_init(uint64_t features, ucp_context_h *context)
{
    ucp_params_t params = {};
    ucp_config_t *config;
    unsigned major, minor, release;
    ucs_status_t status;

    status = ucp_config_read(NULL, NULL, &config);
    if (status != UCS_OK) {
        return status;
    }
    ucp_get_version(&major, &minor, &release);
    if ((UCP_VERSION(major, minor) >= UCP_VERSION(1, 22)) &&
        (getenv("UCX_TCP_PUT_ENABLE") == NULL)) {
        (void)ucp_config_modify(config, "TCP_PUT_ENABLE", "n");
    }
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = features;
    status            = ucp_init(&params, config, context);
    ucp_config_release(config);
    return status;
}

bool raw_peer_published_address(const std::vector<uint8_t> &addr,
                                 std::vector<uint8_t> *worker_addr)
{
    struct {
        uint32_t magic;
        uint32_t length;
        uint64_t nonce;
    } hdr;
    char path[256];
    uint64_t nonce;
    uint32_t pid;
    ssize_t n;
    int fd;

    if ((addr.size() < raw_addr_len) || (addr[0] != raw_addr_version) ||
        (addr[1] != raw_family_local)) {
        return false;
    }
    pid   = (uint32_t)get_be(&addr[4], 4);
    nonce = get_be(&addr[16], 8);
    snprintf(path, sizeof(path), "/dev/shm/fiatomic-%u-%016llx",
             (unsigned)pid, (unsigned long long)nonce);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return false;
    }
    n = read(fd, &hdr, sizeof(hdr));
    if ((n != (ssize_t)sizeof(hdr)) || (hdr.magic != raw_publish_magic) ||
        (hdr.nonce != nonce) || (hdr.length == 0) ||
        (hdr.length > raw_publish_max)) {
        ::close(fd);
        return false;
    }
    worker_addr->resize(hdr.length);
    n = read(fd, worker_addr->data(), hdr.length);
    ::close(fd);
    return n == (ssize_t)hdr.length;
}

ucs_status_t raw_peer::open(size_t len)
{
    ucp_worker_params_t worker_params = {};
    ucp_mem_map_params_t map          = {};
    ucs_status_t status;

    status = raw_peer_ucp_init(UCP_FEATURE_AM | UCP_FEATURE_RMA |
                               UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64,
                               &m_context);
    if (status != UCS_OK) {
        m_context = NULL;
        return status;
    }
    worker_params.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    worker_params.thread_mode = UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(m_context, &worker_params, &m_worker);
    if (status != UCS_OK) {
        m_worker = NULL;
        return status;
    }
    /* the peer's worker is sent replies too: every entry of its table of
     * handlers set (UCX 1.13.1 reads an entry before checking its id) */
    ucp_am_handler_param_t am = {};
    am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                    UCP_AM_HANDLER_PARAM_FIELD_CB;
    for (unsigned id = 65536; id-- > 0;) {
        am.id  = id;
        status = ucp_worker_set_am_recv_handler(m_worker, &am);
        if (status != UCS_OK) {
            return status;
        }
    }
    map.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                     UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                     UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    map.address    = NULL;
    map.length     = len;
    map.flags      = UCP_MEM_MAP_ALLOCATE;
    status = ucp_mem_map(m_context, &map, &m_memh);
    if (status != UCS_OK) {
        m_memh = NULL;
        return status;
    }
    ucp_mem_attr_t attr;
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
    status          = ucp_mem_query(m_memh, &attr);
    if (status != UCS_OK) {
        return status;
    }
    m_buf = attr.address;
    m_len = len;
    memset(m_buf, 0, m_len);
    return UCS_OK;
}

void raw_peer::ep_error(void *arg, ucp_ep_h, ucs_status_t status)
{
    ((raw_peer*)arg)->m_ep_status = status;
}

ucs_status_t raw_peer::connect(const ucp_ep_params_t &base)
{
    ucp_ep_params_t params = base;

    params.field_mask     |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                             UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.err_mode        = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb  = ep_error;
    params.err_handler.arg = this;
    m_ep_status            = UCS_OK;
    return ucp_ep_create(m_worker, &params, &m_ep);
}

ucs_status_t raw_peer::connect_fi_addr(const std::vector<uint8_t> &addr)
{
    ucp_ep_params_t params = {};
    struct sockaddr_in sin = {};
    std::vector<uint8_t> worker_addr;

    if ((addr.size() < raw_addr_len) || (addr[0] != raw_addr_version)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (addr[1] == raw_family_local) {
        if (!raw_peer_published_address(addr, &worker_addr)) {
            return UCS_ERR_UNREACHABLE;
        }
        return connect_worker_addr(worker_addr);
    }
    if (addr[1] != raw_family_ipv4) {
        return UCS_ERR_INVALID_PARAM;
    }
    sin.sin_family      = AF_INET;
    sin.sin_port        = htons((uint16_t)get_be(&addr[2], 2));
    sin.sin_addr.s_addr = htonl((uint32_t)get_be(&addr[4], 4));
    params.field_mask       = UCP_EP_PARAM_FIELD_FLAGS |
                              UCP_EP_PARAM_FIELD_SOCK_ADDR;
    params.flags            = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    params.sockaddr.addr    = (const struct sockaddr*)&sin;
    params.sockaddr.addrlen = sizeof(sin);
    return connect(params);
}

ucs_status_t raw_peer::connect_worker_addr(const std::vector<uint8_t> &addr)
{
    ucp_ep_params_t params = {};

    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params.address    = (const ucp_address_t*)addr.data();
    return connect(params);
}

ucs_status_t raw_peer::wait(ucs_status_ptr_t req, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    ucs_status_t status;

    if (req == NULL) {
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(req)) {
        return UCS_PTR_STATUS(req);
    }
    while ((status = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        if (now_ms() > deadline) {
            /* kept, and freed once the endpoint's close finished it:
             * UCX 1.13.1 faulted purging a request freed in flight */
            m_inflight.push_back(req);
            return UCS_ERR_TIMED_OUT;
        }
        ucp_worker_progress(m_worker);
    }
    ucp_request_free(req);
    return status;
}

ucs_status_t raw_peer::flush(int timeout_ms)
{
    ucp_request_param_t param = {};

    return wait(ucp_ep_flush_nbx(m_ep, &param), timeout_ms);
}

ucs_status_t raw_peer::rkey(const std::vector<uint8_t> &bytes,
                            ucp_rkey_h *rk)
{
    auto it = m_rkeys.find(bytes);
    ucs_status_t status;

    if (it != m_rkeys.end()) {
        *rk = it->second;
        return UCS_OK;
    }
    /* unpacked once the endpoint is wired up: an rkey unpacked on the
     * endpoint's first configuration makes UCP 1.22's put reconfigure the
     * endpoint, which faults on a client-server endpoint (its connection
     * manager lane has no interface) */
    (void)flush(5000);
    status = ucp_ep_rkey_unpack(m_ep, bytes.data(), rk);
    if (status == UCS_OK) {
        m_rkeys[bytes] = *rk;
    }
    return status;
}

void raw_peer::disconnect()
{
    ucp_request_param_t param = {};
    ucs_status_ptr_t req;

    if (m_ep == NULL) {
        return;
    }
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    req                = ucp_ep_close_nbx(m_ep, &param);
    (void)wait(req, 5000);
    m_ep = NULL;
    /* the close finished what was in flight (with an error) */
    int64_t deadline = now_ms() + 5000;
    while (!m_inflight.empty() && (now_ms() < deadline)) {
        ucp_worker_progress(m_worker);
        for (size_t i = 0; i < m_inflight.size();) {
            if (ucp_request_check_status(m_inflight[i]) != UCS_INPROGRESS) {
                ucp_request_free(m_inflight[i]);
                m_inflight[i] = m_inflight.back();
                m_inflight.pop_back();
            } else {
                ++i;
            }
        }
    }
    /* the endpoint's requests are finished: their rkeys can go */
    for (auto &entry : m_rkeys) {
        ucp_rkey_destroy(entry.second);
    }
    m_rkeys.clear();
}

void raw_peer::close()
{
    disconnect();
    /* the worker first: destroying it purges requests still in flight,
     * which release their registrations of the buffer */
    if (m_worker != NULL) {
        ucp_worker_destroy(m_worker);
        m_worker = NULL;
    }
    if (m_memh != NULL) {
        ucp_mem_unmap(m_context, m_memh);
        m_memh = NULL;
    }
    if (m_context != NULL) {
        ucp_cleanup(m_context);
        m_context = NULL;
    }
}

ucs_status_t raw_peer::am_send(unsigned id,
                               const std::vector<uint8_t> &header,
                               const std::vector<uint8_t> &data, bool reply,
                               int timeout_ms)
{
    ucp_request_param_t param = {};

    if (m_ep == NULL) {
        return UCS_ERR_NOT_CONNECTED;
    }
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = reply ? UCP_AM_SEND_FLAG_REPLY : 0;
    return wait(ucp_am_send_nbx(m_ep, id,
                                header.empty() ? NULL : header.data(),
                                header.size(),
                                data.empty() ? NULL : data.data(),
                                data.size(), &param), timeout_ms);
}

std::vector<uint8_t> raw_peer::own_rkey()
{
    void *buf   = NULL;
    size_t size = 0;
    std::vector<uint8_t> rkey;

    if (ucp_rkey_pack(m_context, m_memh, &buf, &size) != UCS_OK) {
        return rkey;
    }
    rkey.assign((uint8_t*)buf, (uint8_t*)buf + size);
    ucp_rkey_buffer_release(buf);
    return rkey;
}

ucs_status_t raw_peer::put(uint64_t addr, const std::vector<uint8_t> &rkey,
                           size_t len, int timeout_ms)
{
    ucp_request_param_t param = {};
    ucp_rkey_h rk;
    ucs_status_t status;

    if ((m_ep == NULL) || (len > m_len)) {
        return UCS_ERR_INVALID_PARAM;
    }
    status = this->rkey(rkey, &rk);
    if (status != UCS_OK) {
        return status;
    }
    status = wait(ucp_put_nbx(m_ep, m_buf, len, addr, rk, &param),
                  timeout_ms);
    if (status == UCS_OK) {
        status = flush(timeout_ms);
    }
    return status;
}

ucs_status_t raw_peer::get(uint64_t addr, const std::vector<uint8_t> &rkey,
                           size_t len, int timeout_ms)
{
    ucp_request_param_t param = {};
    ucp_rkey_h rk;
    ucs_status_t status;

    if ((m_ep == NULL) || (len > m_len)) {
        return UCS_ERR_INVALID_PARAM;
    }
    status = this->rkey(rkey, &rk);
    if (status != UCS_OK) {
        return status;
    }
    status = wait(ucp_get_nbx(m_ep, m_buf, len, addr, rk, &param),
                  timeout_ms);
    return status;
}

ucs_status_t raw_peer::atomic(ucp_atomic_op_t op, uint64_t addr,
                              const std::vector<uint8_t> &rkey,
                              unsigned size, uint64_t value,
                              uint64_t *result, int timeout_ms)
{
    ucp_request_param_t param = {};
    uint64_t operand = value;
    uint32_t operand32 = (uint32_t)value;
    /* a reply that arrives after a timeout lands in the peer, not on a
     * stack that is gone */
    uint64_t &old   = m_amo_reply64;
    uint32_t &old32 = m_amo_reply32;
    ucp_rkey_h rk;
    ucs_status_t status;

    if ((m_ep == NULL) || ((size != 4) && (size != 8))) {
        return UCS_ERR_INVALID_PARAM;
    }
    status = this->rkey(rkey, &rk);
    if (status != UCS_OK) {
        return status;
    }
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype     = ucp_dt_make_contig(size);
    if (result != NULL) {
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        param.reply_buffer  = (size == 4) ? (void*)&old32 : (void*)&old;
    }
    status = wait(ucp_atomic_op_nbx(m_ep, op,
                                    (size == 4) ? (void*)&operand32 :
                                                  (void*)&operand,
                                    1, addr, rk, &param), timeout_ms);
    if ((status == UCS_OK) && (result == NULL)) {
        status = flush(timeout_ms);
    }
    if ((status == UCS_OK) && (result != NULL)) {
        *result = (size == 4) ? old32 : old;
    }
    return status;
}

void raw_peer::progress_for(int ms)
{
    int64_t deadline = now_ms() + ms;

    while (now_ms() < deadline) {
        ucp_worker_progress(m_worker);
    }
}

} // namespace fiprov_test
