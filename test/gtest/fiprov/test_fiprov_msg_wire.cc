/**
 * Messages as the wire brings them: a peer that speaks UCP itself (not
 * through the provider) connects to an endpoint's domain and sends message
 * headers of its own making. Headers that break the format (short, bad
 * magic, a length that is not the data's, unknown flags, data without its
 * flag, a tag without its flag, a non-zero reserved field) and messages to
 * an endpoint id or nonce that does not exist reach no receive; messages
 * numbered out of order are received in their numbers' order, and a number
 * already delivered is dropped; a tagged message reaches a tagged receive
 * with its tag, and only one, and nothing on an endpoint opened without
 * FI_TAGGED. A message's source address must decode (else it is
 * dropped); the receive's FI_SOURCE address is its entry in the endpoint's
 * address vector, FI_ADDR_NOTAVAIL when it has none, and a directed receive
 * takes only its source's messages; a connection names sources of the one
 * domain its greeting claimed and that domain confirmed, a source of
 * another domain is no source (FI_ADDR_NOTAVAIL). The header layout is the one fip_msg.c
 * sends (80 bytes, host order): magic "fipM", endpoint id, nonce, length,
 * data, number, tag, flags, reserved, then the sender's 24-byte address.
 * The peer is a domain of its own: it listens, greets claiming its
 * listener (fip_caller.c) and answers the domain's question about its
 * greeting, so that its connection is confirmed as that domain's.
 */
#include "fiprov_fixture.h"
#include "fiprov_wait.h"

#include <rdma/fi_tagged.h>
#include <ucp/api/ucp.h>

#include <arpa/inet.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

using namespace fiprov_test;

namespace {

const unsigned am_msg   = 1012;
const uint32_t magic    = 0x6669704du;
const uint32_t has_data = 1;
const uint32_t is_tagged = 2;
const int wait_ms       = 30000;

struct wire_hdr {
    uint32_t magic;
    uint32_t ep_id;
    uint64_t nonce;
    uint64_t len;
    uint64_t data;
    uint64_t seq;
    uint64_t tag;
    uint32_t flags;
    uint32_t reserved;
    uint8_t  src[24];
};

static_assert(sizeof(wire_hdr) == 80, "the header is 80 bytes");

uint64_t get_be(const uint8_t *p, size_t n)
{
    uint64_t v = 0;

    for (size_t i = 0; i < n; ++i) {
        v = (v << 8) | p[i];
    }
    return v;
}

void raw_err(void *arg, ucp_ep_h ep, ucs_status_t status)
{
}

/* the greeting and the question about it (fip_caller.c) */
const unsigned am_hello      = 1017;
const unsigned am_verify     = 1020;
const unsigned am_verify_ack = 1021;
const uint64_t raw_token     = 0x70ca11ab1eull;

struct hello_wire {
    uint32_t magic;
    uint32_t pid;
    uint64_t nonce;
    uint64_t token;
    uint32_t ipv4;
    uint16_t port;
    uint16_t reserved;
    uint64_t mac;      /* the job admission's proof, 0 without a key */
};

struct verify_wire {
    uint32_t magic;
    uint32_t ok;
    uint64_t token;
    uint64_t req_id;
    uint8_t  asker[24];
    uint64_t mac;
};

static_assert(sizeof(hello_wire) == 40, "the greeting is 40 bytes");
static_assert(sizeof(verify_wire) == 56, "the question is 56 bytes");

/* a UCP peer of its own: one context, worker and endpoint */
class raw_peer {
public:
    ~raw_peer() { close(); }

    ucs_status_t open(const uint8_t *addr)
    {
        ucp_params_t params         = {};
        ucp_worker_params_t wparams = {};
        ucp_ep_params_t eparams     = {};
        struct sockaddr_in sin      = {};
        ucs_status_t status;

        params.field_mask   = UCP_PARAM_FIELD_FEATURES;
        params.features     = UCP_FEATURE_AM;
        status = ucp_init(&params, NULL, &m_ctx);
        if (status != UCS_OK) {
            return status;
        }
        wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
        /* progressed by its thread and by the test's sends */
        wparams.thread_mode = UCS_THREAD_MODE_MULTI;
        status = ucp_worker_create(m_ctx, &wparams, &m_worker);
        if (status != UCS_OK) {
            return status;
        }
        sin.sin_family      = AF_INET;
        sin.sin_port        = htons((uint16_t)get_be(addr + 2, 2));
        sin.sin_addr.s_addr = htonl((uint32_t)get_be(addr + 4, 4));
        eparams.field_mask       = UCP_EP_PARAM_FIELD_FLAGS |
                                   UCP_EP_PARAM_FIELD_SOCK_ADDR |
                                   UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                                   UCP_EP_PARAM_FIELD_ERR_HANDLER;
        eparams.flags            = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
        eparams.sockaddr.addr    = (const struct sockaddr*)&sin;
        eparams.sockaddr.addrlen = sizeof(sin);
        eparams.err_mode         = UCP_ERR_HANDLING_MODE_PEER;
        eparams.err_handler.cb   = raw_err;
        status = ucp_ep_create(m_worker, &eparams, &m_ep);
        if (status != UCS_OK) {
            return status;
        }
        return greet((uint32_t)get_be(addr + 4, 4));
    }

    /* a listener of its own: its port, which the sources it names use */
    uint16_t port() const { return m_port; }

    /* one active message, waited for (bounded) */
    ucs_status_t send(const void *hdr, size_t hdr_len, const void *data,
                      size_t len, unsigned am_id = am_msg)
    {
        ucp_request_param_t param = {};
        ucs_status_ptr_t req;
        ucs_status_t status;
        int64_t deadline = now_ms() + wait_ms;

        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = UCP_AM_SEND_FLAG_REPLY;
        req = ucp_am_send_nbx(m_ep, am_id, hdr, hdr_len, data, len, &param);
        if (!UCS_PTR_IS_PTR(req)) {
            return UCS_PTR_STATUS(req);
        }
        while ((status = ucp_request_check_status(req)) == UCS_INPROGRESS) {
            ucp_worker_progress(m_worker);
            if (now_ms() > deadline) {
                ucp_request_cancel(m_worker, req);
            }
        }
        ucp_request_free(req);
        return status;
    }

    /* progress a while (what UCP still sends goes out) */
    void progress(int ms)
    {
        int64_t deadline = now_ms() + ms;

        while (now_ms() < deadline) {
            ucp_worker_progress(m_worker);
        }
    }

    void close()
    {
        ucp_request_param_t param = {};
        ucs_status_ptr_t req;

        if (m_progress.joinable()) {
            m_stop.store(true);
            m_progress.join();
        }

        for (ucp_ep_h ep : m_accepted) {
            ucp_request_param_t fparam = {};

            fparam.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
            fparam.flags        = UCP_EP_CLOSE_FLAG_FORCE;
            req = ucp_ep_close_nbx(ep, &fparam);
            if (UCS_PTR_IS_PTR(req)) {
                while (ucp_request_check_status(req) == UCS_INPROGRESS) {
                    ucp_worker_progress(m_worker);
                }
                ucp_request_free(req);
            }
        }
        m_accepted.clear();
        if (m_listener != NULL) {
            ucp_listener_destroy(m_listener);
            m_listener = NULL;
        }

        if (m_ep != NULL) {
            /* flushed first: the target has every message before the
             * connection ends */
            param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
            param.flags        = 0;
            req = ucp_ep_close_nbx(m_ep, &param);
            if (UCS_PTR_IS_PTR(req)) {
                int64_t deadline = now_ms() + wait_ms;
                while ((ucp_request_check_status(req) == UCS_INPROGRESS) &&
                       (now_ms() < deadline)) {
                    ucp_worker_progress(m_worker);
                }
                ucp_request_free(req);
            }
            m_ep = NULL;
        }
        if (m_worker != NULL) {
            ucp_worker_destroy(m_worker);
            m_worker = NULL;
        }
        if (m_ctx != NULL) {
            ucp_cleanup(m_ctx);
            m_ctx = NULL;
        }
    }

private:
    /* listen, greet claiming the listener, and answer the domain's
     * question (bounded): UCS_OK once answered */
    ucs_status_t greet(uint32_t ipv4)
    {
        ucp_listener_params_t lp = {};
        ucp_listener_attr_t attr = {};
        ucp_am_handler_param_t hp = {};
        struct sockaddr_in sin   = {};
        hello_wire h             = {};
        int64_t deadline         = now_ms() + wait_ms;
        ucs_status_t status;

        sin.sin_family      = AF_INET;
        lp.field_mask       = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR |
                              UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
        lp.sockaddr.addr    = (const struct sockaddr*)&sin;
        lp.sockaddr.addrlen = sizeof(sin);
        lp.conn_handler.cb  = conn_cb;
        lp.conn_handler.arg = this;
        status = ucp_listener_create(m_worker, &lp, &m_listener);
        if (status != UCS_OK) {
            return status;
        }
        attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
        status = ucp_listener_query(m_listener, &attr);
        if (status != UCS_OK) {
            return status;
        }
        m_port        = ntohs(((struct sockaddr_in*)&attr.sockaddr)->sin_port);
        hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                        UCP_AM_HANDLER_PARAM_FIELD_CB |
                        UCP_AM_HANDLER_PARAM_FIELD_ARG;
        hp.id         = am_verify;
        hp.cb         = verify_cb;
        hp.arg        = this;
        status = ucp_worker_set_am_recv_handler(m_worker, &hp);
        if (status != UCS_OK) {
            return status;
        }
        h.magic = 0x66697048u;
        h.token = raw_token;
        h.ipv4  = ipv4;
        h.port  = m_port;
        status  = send(&h, sizeof(h), NULL, 0, am_hello);
        if (status != UCS_OK) {
            return status;
        }
        /* the domain asks on the connection's first message, while the
         * test waits for its receives: answered from a thread of its own */
        (void)deadline;
        m_stop     = false;
        m_progress = std::thread([this] {
            while (!m_stop.load()) {
                ucp_worker_progress(m_worker);
                usleep(100);
            }
        });
        return UCS_OK;
    }

    static void conn_cb(ucp_conn_request_h req, void *arg)
    {
        raw_peer *self         = (raw_peer*)arg;
        ucp_ep_params_t params = {};
        ucp_ep_h ep;

        params.field_mask     = UCP_EP_PARAM_FIELD_CONN_REQUEST |
                                UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                                UCP_EP_PARAM_FIELD_ERR_HANDLER;
        params.conn_request   = req;
        params.err_mode       = UCP_ERR_HANDLING_MODE_PEER;
        params.err_handler.cb = raw_err;
        if (ucp_ep_create(self->m_worker, &params, &ep) == UCS_OK) {
            self->m_accepted.push_back(ep);
        }
    }

    static ucs_status_t verify_cb(void *arg, const void *header,
                                  size_t header_len, void *data, size_t len,
                                  const ucp_am_recv_param_t *param)
    {
        raw_peer *self = (raw_peer*)arg;
        ucp_request_param_t p = {};
        ucs_status_ptr_t req;

        if ((header_len != sizeof(self->m_answer)) ||
            !(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
            return UCS_OK;
        }
        memcpy(&self->m_answer, header, sizeof(self->m_answer));
        self->m_answer.ok = (self->m_answer.token == raw_token);
        p.op_attr_mask    = UCP_OP_ATTR_FIELD_FLAGS;
        p.flags           = UCP_AM_SEND_FLAG_REPLY;
        req = ucp_am_send_nbx(param->reply_ep, am_verify_ack,
                              &self->m_answer, sizeof(self->m_answer),
                              NULL, 0, &p);
        if (UCS_PTR_IS_PTR(req)) {
            ucp_request_free(req);
        }
        self->m_answered = true;
        return UCS_OK;
    }

    ucp_context_h  m_ctx      = NULL;
    ucp_worker_h   m_worker   = NULL;
    ucp_ep_h       m_ep       = NULL;
    ucp_listener_h m_listener = NULL;
    std::vector<ucp_ep_h> m_accepted;
    uint16_t       m_port     = 0;
    verify_wire    m_answer   = {};
    bool           m_answered = false;
    std::thread    m_progress;
    std::atomic<bool> m_stop{false};
};

class msg_wire : public test_base {
protected:
    void SetUp() override
    {
        open_params p;
        size_t len = sizeof(m_addr);

        test_base::SetUp();
        p.caps      = FI_MSG | FI_TAGGED | FI_DIRECTED_RECV | FI_SOURCE;
        p.cq_format = FI_CQ_FORMAT_TAGGED;
        ASSERT_EQ(0, m_o.open_domain(p));
        ASSERT_EQ(0, m_o.open_ep());
        ASSERT_EQ(0, fi_getname(&m_o.ep->fid, m_addr, &len));
        ASSERT_EQ(24u, len);
        ASSERT_EQ(UCS_OK, m_raw.open(m_addr));
    }

    void TearDown() override
    {
        m_raw.close();
        m_o.close();
        test_base::TearDown();
    }

    /* a well-formed header for this endpoint */
    wire_hdr hdr(uint64_t seq, size_t len) const
    {
        wire_hdr h = {};

        h.magic = magic;
        h.ep_id = (uint32_t)get_be(m_addr + 8, 4);
        h.nonce = get_be(m_addr + 16, 8);
        h.len   = len;
        h.seq   = seq;
        /* from a made-up endpoint of the peer's domain (its listener) */
        memcpy(h.src, m_addr, sizeof(h.src));
        h.src[2]   = (uint8_t)(m_raw.port() >> 8);
        h.src[3]   = (uint8_t)m_raw.port();
        h.src[11] ^= 0x40;
        return h;
    }

    void send(const wire_hdr &h, const char *text)
    {
        ASSERT_EQ(UCS_OK, m_raw.send(&h, sizeof(h), text, strlen(text)));
    }

    /* the next receive entry (bounded): the receive's buffer as text, and
     * the entry */
    void next(std::string *got, struct fi_cq_tagged_entry *entry = NULL)
    {
        struct fi_cq_tagged_entry e;
        int64_t deadline = now_ms() + wait_ms;
        ssize_t n;

        while ((n = fi_cq_read(m_o.cq, &e, 1)) == -FI_EAGAIN) {
            ASSERT_LT(now_ms(), deadline) << "no message received";
        }
        ASSERT_EQ(1, n);
        ASSERT_TRUE(e.flags & FI_RECV);
        *got = std::string((const char*)e.op_context, e.len);
        if (entry != NULL) {
            *entry = e;
        }
    }

    objects  m_o;
    uint8_t  m_addr[64];
    raw_peer m_raw;
};

TEST_F(msg_wire, malformed_headers_and_unknown_endpoints_reach_nothing)
{
    char buf[2][16] = {};
    std::string got;
    wire_hdr h;

    for (auto &b : buf) {
        ASSERT_EQ(0, fi_recv(m_o.ep, b, sizeof(b), NULL, FI_ADDR_UNSPEC, b));
    }
    /* the form broken: none of these takes a number */
    h = hdr(0, 5);
    ASSERT_EQ(UCS_OK, m_raw.send(&h, sizeof(h) - 1, "short", 5));
    h.magic = magic + 1;
    send(h, "magic");
    h = hdr(0, 4);
    send(h, "length");                  /* 6 bytes, 4 said */
    h = hdr(0, 5);
    h.flags = 4;
    send(h, "flags");
    h = hdr(0, 4);
    h.data = 7;                         /* data without its flag */
    send(h, "data");
    h = hdr(0, 3);
    h.tag = 9;                          /* a tag without its flag */
    send(h, "tag");
    h = hdr(0, 8);
    h.reserved = 1;
    send(h, "reserved");
    /* a source that is no address: another version, family, a non-zero
     * reserved field, zero port, IPv4 address or nonce */
    for (size_t at : {0, 1, 13, 2, 4, 16}) {
        h = hdr(0, 6);
        if ((at == 2) || (at == 4) || (at == 16)) {
            memset(h.src + at, 0, (at == 2) ? 2 : (at == 4) ? 4 : 8);
        } else {
            h.src[at] ^= 0x5;
        }
        send(h, "source");
    }
    /* well-formed, for no endpoint here: numbers 0 and 1 */
    h = hdr(0, 5);
    h.ep_id += 1000;
    send(h, "ep_id");
    h = hdr(1, 5);
    h.nonce ^= 1;
    send(h, "nonce");
    /* the only one that arrives, with its data */
    h        = hdr(2, 4);
    h.flags  = has_data;
    h.data   = 42;
    send(h, "good");
    next(&got);
    EXPECT_EQ("good", got);
    m_raw.progress(100);
    struct fi_cq_tagged_entry e;
    EXPECT_EQ(-FI_EAGAIN, fi_cq_read(m_o.cq, &e, 1))
        << "a malformed message was received";
    EXPECT_EQ(1u, fi_cntr_read(m_o.rvcntr));
    EXPECT_EQ(0u, fi_cntr_readerr(m_o.rvcntr));
}

TEST_F(msg_wire, numbered_messages_are_received_in_order)
{
    char buf[4][16] = {};
    std::string got;

    for (auto &b : buf) {
        ASSERT_EQ(0, fi_recv(m_o.ep, b, sizeof(b), NULL, FI_ADDR_UNSPEC, b));
    }
    /* 2 and 1 wait for 0; 1 again is dropped; 3 follows */
    send(hdr(2, 5), "third");
    send(hdr(1, 6), "second");
    send(hdr(0, 5), "first");
    send(hdr(1, 5), "again");
    send(hdr(3, 6), "fourth");
    for (const char *want : {"first", "second", "third", "fourth"}) {
        next(&got);
        EXPECT_EQ(want, got);
    }
}

/* a tagged message fills the tagged receive of its tag, with the tag in
 * its entry, and not an untagged receive posted before it; an untagged one
 * the untagged receive */
TEST_F(msg_wire, tagged_headers_reach_tagged_receives)
{
    char plain[16] = {}, other[16] = {}, tagged[16] = {};
    struct fi_cq_tagged_entry e;
    std::string got;
    wire_hdr h;

    ASSERT_EQ(0, fi_recv(m_o.ep, plain, sizeof(plain), NULL, FI_ADDR_UNSPEC,
                         plain));
    ASSERT_EQ(0, fi_trecv(m_o.ep, other, sizeof(other), NULL,
                          FI_ADDR_UNSPEC, 6, 0, other));
    ASSERT_EQ(0, fi_trecv(m_o.ep, tagged, sizeof(tagged), NULL,
                          FI_ADDR_UNSPEC, 0x5000000000000005ull, 0,
                          tagged));
    h       = hdr(0, 6);
    h.flags = is_tagged;
    h.tag   = 0x5000000000000005ull;
    send(h, "tagged");
    next(&got, &e);
    EXPECT_EQ("tagged", got);
    EXPECT_EQ((void*)tagged, e.op_context);
    EXPECT_EQ(0x5000000000000005ull, e.tag);
    EXPECT_EQ((uint64_t)(FI_TAGGED | FI_RECV),
              e.flags & (FI_TAGGED | FI_MSG | FI_RECV));
    send(hdr(1, 5), "plain");
    next(&got, &e);
    EXPECT_EQ("plain", got);
    EXPECT_EQ((void*)plain, e.op_context);
    EXPECT_EQ((uint64_t)(FI_MSG | FI_RECV),
              e.flags & (FI_TAGGED | FI_MSG | FI_RECV));
    m_raw.progress(100);
    EXPECT_EQ(-FI_EAGAIN, fi_cq_read(m_o.cq, &e, 1))
        << "the receive of tag 6 took something";
}

/* tagged messages to an endpoint opened without FI_TAGGED reach nothing
 * and take no room: as many as its unexpected queue holds (1024), then an
 * untagged message, which arrives */
TEST_F(msg_wire, tagged_headers_reach_no_untagged_endpoint)
{
    struct fi_info *info = fi_dupinfo(m_o.info);
    struct fid_ep *ep    = NULL;
    struct fid_cq *cq    = NULL;
    struct fi_cq_attr cq_attr = {};
    uint8_t addr[64];
    size_t len = sizeof(addr);
    char buf[2][16] = {};
    struct fi_cq_tagged_entry e;
    int64_t deadline;
    ssize_t n;

    ASSERT_NE(nullptr, info);
    info->caps          = FI_MSG;
    info->tx_attr->caps = FI_MSG;
    info->rx_attr->caps = FI_MSG;
    cq_attr.format      = FI_CQ_FORMAT_TAGGED;
    ASSERT_EQ(0, fi_cq_open(m_o.domain, &cq_attr, &cq, NULL));
    ASSERT_EQ(0, fi_endpoint(m_o.domain, info, &ep, NULL));
    fi_freeinfo(info);
    ASSERT_EQ(0, fi_ep_bind(ep, &m_o.av->fid, 0));
    ASSERT_EQ(0, fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
    ASSERT_EQ(0, fi_enable(ep));
    ASSERT_EQ(0, fi_getname(&ep->fid, addr, &len));

    wire_hdr h = {};
    h.magic = magic;
    h.ep_id = (uint32_t)get_be(addr + 8, 4);
    h.nonce = get_be(addr + 16, 8);
    h.len   = 6;
    h.flags = is_tagged;
    h.tag   = 1;
    memcpy(h.src, m_addr, sizeof(h.src));
    for (h.seq = 0; h.seq < 1024; ++h.seq) {
        send(h, "tagged");
    }
    h.len   = 5;
    h.flags = 0;
    h.tag   = 0;
    send(h, "plain");
    /* a last message to the fixture's endpoint over the same connection:
     * once it is received, every message before it was dispatched */
    char fence[16] = {};
    std::string got;
    ASSERT_EQ(0, fi_recv(m_o.ep, fence, sizeof(fence), NULL,
                         FI_ADDR_UNSPEC, fence));
    send(hdr(1025, 5), "fence");
    next(&got);
    ASSERT_EQ("fence", got);
    /* the receives after the messages: the untagged one waited, in room
     * the tagged ones did not take */
    for (auto &b : buf) {
        ASSERT_EQ(0, fi_recv(ep, b, sizeof(b), NULL, FI_ADDR_UNSPEC, b));
    }
    deadline = now_ms() + wait_ms;
    while ((n = fi_cq_read(cq, &e, 1)) == -FI_EAGAIN) {
        ASSERT_LT(now_ms(), deadline) << "no message received";
    }
    ASSERT_EQ(1, n);
    EXPECT_EQ((void*)buf[0], e.op_context);
    EXPECT_EQ("plain", std::string(buf[0], e.len));
    m_raw.progress(100);
    EXPECT_EQ(-FI_EAGAIN, fi_cq_read(cq, &e, 1))
        << "the tagged message reached the untagged endpoint";
    EXPECT_EQ(0, fi_close(&ep->fid));
    EXPECT_EQ(0, fi_close(&cq->fid));
}

/* the source a message names: its entry in the endpoint's address vector
 * (FI_SOURCE), FI_ADDR_NOTAVAIL when the vector has none (also once it was
 * removed); a receive directed to one entry takes only that source's
 * messages, from the wire and from the unexpected queue */
TEST_F(msg_wire, sources_are_looked_up_and_directed_receives_match_them)
{
    char any[16] = {}, to_x[16] = {}, to_y[16] = {}, later[16] = {};
    struct fi_cq_tagged_entry e;
    fi_addr_t x, src = 0;
    uint8_t bytes[24];
    size_t len = sizeof(bytes);
    int64_t deadline;
    std::string got;
    ssize_t n;

    /* x: the made-up endpoint hdr() names; y: another one, not inserted */
    wire_hdr hx = hdr(0, 6), hy = hdr(1, 6);
    hy.src[11] ^= 0x01;
    ASSERT_EQ(1, fi_av_insert(m_o.av, m_addr, 1, NULL, 0, NULL));
    ASSERT_EQ(1, fi_av_insert(m_o.av, hx.src, 1, &x, 0, NULL));
    ASSERT_NE(FI_ADDR_NOTAVAIL, x);

    /* posted first: for y (not in the vector), for x, for any */
    ASSERT_EQ(0, fi_recv(m_o.ep, to_y, sizeof(to_y), NULL, x + 1, to_y));
    ASSERT_EQ(0, fi_recv(m_o.ep, to_x, sizeof(to_x), NULL, x, to_x));
    ASSERT_EQ(0, fi_recv(m_o.ep, any, sizeof(any), NULL, FI_ADDR_UNSPEC,
                         any));
    /* y's message passes over the receive for x + 1 and the one for x */
    send(hy, "from-y");   /* number 1: waits for 0 */
    send(hx, "from-x");
    for (int i = 0; i < 2; ++i) {
        deadline = now_ms() + wait_ms;
        while ((n = fi_cq_readfrom(m_o.cq, &e, 1, &src)) == -FI_EAGAIN) {
            ASSERT_LT(now_ms(), deadline) << "no message received";
        }
        ASSERT_EQ(1, n);
        got = std::string((const char*)e.op_context, e.len);
        if (e.op_context == to_x) {
            EXPECT_EQ("from-x", got);
            EXPECT_EQ(x, src);
            ASSERT_EQ(0, fi_av_lookup(m_o.av, src, bytes, &len));
            EXPECT_EQ(0, memcmp(bytes, hx.src, sizeof(bytes)));
        } else {
            EXPECT_EQ((void*)any, e.op_context);
            EXPECT_EQ("from-y", got);
            EXPECT_EQ(FI_ADDR_NOTAVAIL, src);
        }
    }

    /* unexpected: x's message waits; a receive for another source leaves
     * it, one for x takes it */
    send(hdr(2, 5), "again");
    m_raw.progress(100);
    ASSERT_EQ(0, fi_recv(m_o.ep, later, sizeof(later), NULL, x, later));
    next(&got, &e);
    EXPECT_EQ((void*)later, e.op_context);
    EXPECT_EQ("again", got);

    /* removed from the vector: unknown again, taken by a receive for any
     * source only */
    char gone[16] = {};
    ASSERT_EQ(0, fi_av_remove(m_o.av, &x, 1, 0));
    ASSERT_EQ(0, fi_recv(m_o.ep, gone, sizeof(gone), NULL, x, gone));
    ASSERT_EQ(0, fi_recv(m_o.ep, any, sizeof(any), NULL, FI_ADDR_UNSPEC,
                         any));
    send(hdr(3, 4), "gone");
    deadline = now_ms() + wait_ms;
    while ((n = fi_cq_readfrom(m_o.cq, &e, 1, &src)) == -FI_EAGAIN) {
        ASSERT_LT(now_ms(), deadline) << "no message received";
    }
    ASSERT_EQ(1, n);
    EXPECT_EQ((void*)any, e.op_context);
    EXPECT_EQ("gone", std::string(any, e.len));
    EXPECT_EQ(FI_ADDR_NOTAVAIL, src);
    /* the receives for x + 1 and for the removed x took nothing */
    m_raw.progress(100);
    EXPECT_EQ(-FI_EAGAIN, fi_cq_read(m_o.cq, &e, 1));
}

/* the reverse map among many entries: 500 made-up endpoints inserted (the
 * map grows from 64 buckets), every third removed, one inserted again: a
 * message's source is its address's entry, the newest of two equal ones,
 * FI_ADDR_NOTAVAIL for a removed one */
TEST_F(msg_wire, sources_are_found_among_many_entries)
{
    const size_t count = 500;
    std::vector<uint8_t> addrs(count * 24);
    std::vector<fi_addr_t> fi_addrs(count);
    std::vector<size_t> removed;
    fi_addr_t again;
    uint64_t seq = 0;

    for (size_t i = 0; i < count; ++i) {
        uint8_t *a    = &addrs[i * 24];
        uint32_t ep_id = 100000 + (uint32_t)i * 7919;

        memcpy(a, m_addr, 24);
        a[2] = (uint8_t)(m_raw.port() >> 8);
        a[3] = (uint8_t)m_raw.port();
        for (int b = 0; b < 4; ++b) {
            a[8 + b] = (uint8_t)(ep_id >> (8 * (3 - b)));
        }
    }
    ASSERT_EQ((int)count, fi_av_insert(m_o.av, addrs.data(), count,
                                       fi_addrs.data(), 0, NULL));
    for (size_t i = 2; i < count; i += 3) {
        ASSERT_EQ(0, fi_av_remove(m_o.av, &fi_addrs[i], 1, 0));
        removed.push_back(i);
    }
    ASSERT_EQ(1, fi_av_insert(m_o.av, &addrs[7 * 24], 1, &again, 0, NULL));
    ASSERT_NE(fi_addrs[7], again);

    for (size_t i : {0, 1, 3, 7, 250, 251, 499, 2, 497}) {
        char buf[16] = {};
        struct fi_cq_tagged_entry e;
        fi_addr_t src  = 0;
        int64_t deadline;
        ssize_t n;
        wire_hdr h = hdr(seq++, 4);

        memcpy(h.src, &addrs[i * 24], 24);
        ASSERT_EQ(0, fi_recv(m_o.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC,
                             buf));
        send(h, "many");
        deadline = now_ms() + wait_ms;
        while ((n = fi_cq_readfrom(m_o.cq, &e, 1, &src)) == -FI_EAGAIN) {
            ASSERT_LT(now_ms(), deadline) << "no message received";
        }
        ASSERT_EQ(1, n);
        EXPECT_EQ("many", std::string(buf, e.len));
        if (i == 7) {
            EXPECT_EQ(again, src);
        } else if (i % 3 == 2) {
            EXPECT_EQ(FI_ADDR_NOTAVAIL, src) << i;
        } else {
            EXPECT_EQ(fi_addrs[i], src) << i;
        }
    }
}

/* a connection speaks for one peer domain: the one its greeting claimed and
 * that domain confirmed (here the raw peer's listener); a message
 * naming an endpoint of another domain (another port), even one the vector
 * has, is received with no source (FI_ADDR_NOTAVAIL) and is not taken by a
 * directed receive for that entry, while the connection's own domain keeps
 * its source */
TEST_F(msg_wire, a_connection_names_sources_of_one_domain_only)
{
    char for_other[16] = {}, any[16] = {};
    struct fi_cq_tagged_entry e;
    fi_addr_t mine, other, src = 0;
    int64_t deadline;
    std::string got;
    ssize_t n;

    wire_hdr own = hdr(0, 3), forged = hdr(1, 6), again = hdr(2, 5);
    /* another domain: the same host, a listener one port further */
    uint16_t port = (uint16_t)(m_raw.port() + 1);
    forged.src[2] = (uint8_t)(port >> 8);
    forged.src[3] = (uint8_t)port;
    ASSERT_EQ(1, fi_av_insert(m_o.av, own.src, 1, &mine, 0, NULL));
    ASSERT_EQ(1, fi_av_insert(m_o.av, forged.src, 1, &other, 0, NULL));
    ASSERT_NE(FI_ADDR_NOTAVAIL, mine);
    ASSERT_NE(FI_ADDR_NOTAVAIL, other);

    ASSERT_EQ(0, fi_recv(m_o.ep, for_other, sizeof(for_other), NULL, other,
                         for_other));
    for (const wire_hdr *h : {&own, &forged, &again}) {
        ASSERT_EQ(0, fi_recv(m_o.ep, any, sizeof(any), NULL, FI_ADDR_UNSPEC,
                             any));
        send(*h, (h == &own) ? "own" : (h == &forged) ? "forged" : "again");
        deadline = now_ms() + wait_ms;
        while ((n = fi_cq_readfrom(m_o.cq, &e, 1, &src)) == -FI_EAGAIN) {
            ASSERT_LT(now_ms(), deadline) << "no message received";
        }
        ASSERT_EQ(1, n);
        got = std::string((const char*)e.op_context, e.len);
        EXPECT_EQ((void*)any, e.op_context) << got;
        if (h == &forged) {
            EXPECT_EQ("forged", got);
            EXPECT_EQ(FI_ADDR_NOTAVAIL, src);
        } else {
            EXPECT_EQ(mine, src) << got;
        }
    }
    /* the receive for the other domain's entry took nothing */
    m_raw.progress(100);
    EXPECT_EQ(-FI_EAGAIN, fi_cq_read(m_o.cq, &e, 1));
}

} // namespace
