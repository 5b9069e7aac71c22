/**
 * Who a peer is, and what one peer can make a domain hold: a third process
 * that speaks UCP itself (a raw peer, not the provider) connects to this
 * process's domain while the provider's peer (fiprov_peer.h) works with it.
 * A key reply or closing answer forged on the raw peer's own connection
 * is not taken (the genuine one still is); a connection that claims to be
 * another domain is no source of that domain's messages until that domain
 * confirmed it (a directed receive for the peer takes the peer's messages
 * only); connections that come and go do not use up the domain's room for
 * connections; a peer that never reads its answers does not grow the
 * domain without bound. The wire layouts are those of fip_key.c and
 * fip_msg.c (host order).
 */
#include "fiprov_peer.h"
#include "fiprov_wait.h"

#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <ucp/api/ucp.h>

#include <arpa/inet.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

using namespace fiprov_test;

namespace {

const unsigned am_key_req = 1010;
const unsigned am_key_rep = 1011;
const unsigned am_msg     = 1012;
const uint32_t key_magic  = 0x6669704bu;
const uint32_t msg_magic  = 0x6669704du;
const int      raw_wait_ms = 30000;

struct key_req_wire {
    uint32_t magic;
    uint32_t reserved;
    uint64_t req_id;
    uint64_t key;
};

struct key_rep_wire {
    uint32_t magic;
    int32_t  status;
    uint64_t req_id;
    uint64_t vaddr;
    uint64_t length;
    uint64_t remote_base;
    uint64_t access;
    uint32_t fkey_len;
    uint32_t rkey_len;
};

struct msg_wire_hdr {
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

/* a connection's greeting: the domain that claims it (here a listener)
 * and the connection's token */
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

/* a closing domain's question and its answer */
struct bye_wire {
    uint32_t magic;
    uint32_t index;
    uint64_t token;
};

/* the question a greeted domain asks the domain claimed, and its answer */
struct verify_wire {
    uint32_t magic;
    uint32_t ok;
    uint64_t token;
    uint64_t req_id;
    uint32_t ipv4;
    uint16_t port;
    uint16_t reserved;
    uint32_t pid;
    uint32_t reserved2;
    uint64_t nonce;
    uint64_t mac;
};

const unsigned am_hello      = 1017;
const unsigned am_bye        = 1013;
const unsigned am_bye_ack    = 1014;
const uint32_t bye_magic     = 0x66697042u;
const unsigned am_verify     = 1020;
const unsigned am_verify_ack = 1021;
const uint32_t hello_magic   = 0x66697048u;
const uint32_t verify_magic  = 0x66697056u;

static_assert(sizeof(hello_wire) == 40, "the greeting is 40 bytes");
static_assert(sizeof(verify_wire) == 56, "the question is 56 bytes");
static_assert(sizeof(key_rep_wire) == 56, "the key reply is 56 bytes");
static_assert(sizeof(msg_wire_hdr) == 80, "the message header is 80 bytes");

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
    *(bool*)arg = true;
}

ucs_status_t raw_count_am(void *arg, const void *header, size_t header_len,
                          void *data, size_t len,
                          const ucp_am_recv_param_t *param)
{
    ++*(uint64_t*)arg;
    return UCS_OK;
}


/* a UCP peer of its own, connecting to a listener by an fi_getname
 * address; one thread uses it */
class raw_ucp {
public:
    ~raw_ucp() { close(); }

    ucs_status_t init()
    {
        ucp_params_t params         = {};
        ucp_worker_params_t wparams = {};
        ucs_status_t status;

        params.field_mask   = UCP_PARAM_FIELD_FEATURES;
        params.features     = UCP_FEATURE_AM;
        status = ucp_init(&params, NULL, &m_ctx);
        if (status != UCS_OK) {
            return status;
        }
        wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
        wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
        return ucp_worker_create(m_ctx, &wparams, &m_worker);
    }

    /* a new connection (the previous one, if any, closed first) */
    ucs_status_t connect(const uint8_t *addr)
    {
        ucp_ep_params_t eparams = {};
        struct sockaddr_in sin  = {};

        close_ep();
        m_failed            = false;
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
        eparams.err_handler.arg  = &m_failed;
        return ucp_ep_create(m_worker, &eparams, &m_ep);
    }

    /* wait (bounded) until the connection is up: UCS_OK, or its failure */
    ucs_status_t flush()
    {
        ucp_request_param_t param = {};
        ucs_status_ptr_t req = ucp_ep_flush_nbx(m_ep, &param);

        return wait(req);
    }

    ucs_status_t set_handler(unsigned am_id, ucp_am_recv_callback_t cb,
                             void *arg)
    {
        ucp_am_handler_param_t p = {};

        p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                       UCP_AM_HANDLER_PARAM_FIELD_CB |
                       UCP_AM_HANDLER_PARAM_FIELD_ARG;
        p.id         = am_id;
        p.cb         = cb;
        p.arg        = arg;
        return ucp_worker_set_am_recv_handler(m_worker, &p);
    }

    /* one active message sent as a reply-capable one, waited for */
    ucs_status_t send(unsigned am_id, const void *hdr, size_t hdr_len,
                      const void *data, size_t len)
    {
        return wait(send_nb(am_id, hdr, hdr_len, data, len));
    }

    /* one active message, not waited for: its request (the caller frees
     * it), NULL if sent at once */
    ucs_status_ptr_t send_nb(unsigned am_id, const void *hdr,
                             size_t hdr_len, const void *data, size_t len)
    {
        ucp_request_param_t param = {};

        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = UCP_AM_SEND_FLAG_REPLY;
        return ucp_am_send_nbx(m_ep, am_id, hdr, hdr_len, data, len,
                               &param);
    }

    void progress(int ms)
    {
        int64_t deadline = now_ms() + ms;

        do {
            ucp_worker_progress(m_worker);
        } while (now_ms() < deadline);
    }

    bool failed() const { return m_failed; }

    /* `n` connections made, each up, then closed, `batch` at a time
     * (their round trips overlap): how many of them failed */
    int churn(const uint8_t *addr, int n, int batch)
    {
        ucp_request_param_t param = {};
        std::vector<ucp_ep_h> eps;
        std::vector<ucs_status_ptr_t> reqs;
        int failures = 0;

        for (int done = 0; (done < n) && (failures == 0); done += batch) {
            eps.clear();
            reqs.clear();
            for (int i = 0; (i < batch) && (done + i < n); ++i) {
                if (connect(addr) != UCS_OK) {
                    ++failures;
                    continue;
                }
                eps.push_back(m_ep);
                m_ep = NULL;
            }
            for (ucp_ep_h ep : eps) {
                reqs.push_back(ucp_ep_flush_nbx(ep, &param));
            }
            failures += wait_all(reqs);
            reqs.clear();
            for (ucp_ep_h ep : eps) {
                ucp_request_param_t cparam = {};

                cparam.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
                cparam.flags        = failures ? UCP_EP_CLOSE_FLAG_FORCE : 0;
                reqs.push_back(ucp_ep_close_nbx(ep, &cparam));
            }
            (void)wait_all(reqs);
        }
        return failures;
    }

    /* a listener of its own on every interface, answering the questions
     * about its greeting (the connection's token) as the provider does:
     * its port */
    ucs_status_t listen(uint16_t *port)
    {
        ucp_listener_params_t lp = {};
        ucp_listener_attr_t attr = {};
        struct sockaddr_in sin   = {};
        ucs_status_t status;

        sin.sin_family    = AF_INET;
        lp.field_mask     = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR |
                            UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
        lp.sockaddr.addr    = (const struct sockaddr*)&sin;
        lp.sockaddr.addrlen = sizeof(sin);
        lp.conn_handler.cb  = raw_conn;
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
        *port = ntohs(((struct sockaddr_in*)&attr.sockaddr)->sin_port);
        return set_handler(am_verify, raw_verify, this);
    }

    /* greet on the connection, claiming the domain at ipv4:port */
    ucs_status_t greet(uint32_t ipv4, uint16_t port, uint64_t token)
    {
        hello_wire h = {};

        h.magic   = hello_magic;
        h.token   = token;
        h.ipv4    = ipv4;
        h.port    = port;
        m_token   = token;
        return send(am_hello, &h, sizeof(h), NULL, 0);
    }

    uint64_t questions = 0;  /* questions answered */

    /* flushed (the target has every message before it ends; the target
     * must progress meanwhile), or forced */
    void close_ep(bool force = false)
    {
        ucp_request_param_t param = {};

        if (m_ep != NULL) {
            param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
            param.flags        = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
            (void)wait(ucp_ep_close_nbx(m_ep, &param));
            m_ep = NULL;
        }
    }

    void close()
    {
        close_ep(true);
        for (ucp_ep_h ep : m_accepted) {
            ucp_request_param_t param = {};

            param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
            param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
            (void)wait(ucp_ep_close_nbx(ep, &param));
        }
        m_accepted.clear();
        if (m_listener != NULL) {
            ucp_listener_destroy(m_listener);
            m_listener = NULL;
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
    /* wait for requests (bounded): how many failed */
    int wait_all(std::vector<ucs_status_ptr_t> &reqs)
    {
        int64_t deadline = now_ms() + raw_wait_ms;
        int failures     = 0;
        bool busy        = true;

        while (busy && (now_ms() < deadline)) {
            ucp_worker_progress(m_worker);
            busy = false;
            for (ucs_status_ptr_t r : reqs) {
                if (UCS_PTR_IS_PTR(r) &&
                    (ucp_request_check_status(r) == UCS_INPROGRESS)) {
                    busy = true;
                }
            }
        }
        for (ucs_status_ptr_t r : reqs) {
            if (UCS_PTR_IS_ERR(r)) {
                ++failures;
            } else if (UCS_PTR_IS_PTR(r)) {
                if (ucp_request_check_status(r) != UCS_OK) {
                    ++failures;
                }
                ucp_request_free(r);
            }
        }
        return failures;
    }

    ucs_status_t wait(ucs_status_ptr_t req)
    {
        int64_t deadline = now_ms() + raw_wait_ms;
        ucs_status_t status;

        if (!UCS_PTR_IS_PTR(req)) {
            return UCS_PTR_STATUS(req);
        }
        while ((status = ucp_request_check_status(req)) == UCS_INPROGRESS) {
            ucp_worker_progress(m_worker);
            if (now_ms() > deadline + 1000) {
                break; /* freed once it ends */
            } else if (now_ms() > deadline) {
                ucp_request_cancel(m_worker, req);
            }
        }
        ucp_request_free(req);
        return status;
    }

    static void raw_conn(ucp_conn_request_h req, void *arg)
    {
        raw_ucp *self          = (raw_ucp*)arg;
        ucp_ep_params_t params = {};
        ucp_ep_h ep;

        params.field_mask      = UCP_EP_PARAM_FIELD_CONN_REQUEST |
                                 UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                                 UCP_EP_PARAM_FIELD_ERR_HANDLER;
        params.conn_request    = req;
        params.err_mode        = UCP_ERR_HANDLING_MODE_PEER;
        params.err_handler.cb  = raw_err;
        params.err_handler.arg = &self->m_accepted_failed;
        if (ucp_ep_create(self->m_worker, &params, &ep) == UCS_OK) {
            self->m_accepted.push_back(ep);
        }
    }

    /* yes for its own greeting's token */
    static ucs_status_t raw_verify(void *arg, const void *header,
                                   size_t header_len, void *data,
                                   size_t len,
                                   const ucp_am_recv_param_t *param)
    {
        raw_ucp *self = (raw_ucp*)arg;
        ucp_request_param_t p = {};
        verify_wire *ans;
        ucs_status_ptr_t req;

        if ((header_len != sizeof(verify_wire)) ||
            !(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
            return UCS_OK;
        }
        ans = new verify_wire;
        memcpy(ans, header, sizeof(*ans));
        ans->ok = (ans->token == self->m_token) ? 1 : 0;
        p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS |
                         UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA;
        p.flags        = UCP_AM_SEND_FLAG_REPLY;
        p.cb.send      = [](void *r, ucs_status_t, void *ud) {
            delete (verify_wire*)ud;
            ucp_request_free(r);
        };
        p.user_data    = ans;
        req = ucp_am_send_nbx(param->reply_ep, am_verify_ack, ans,
                              sizeof(*ans), NULL, 0, &p);
        if (!UCS_PTR_IS_PTR(req)) {
            delete ans;
        }
        ++self->questions;
        return UCS_OK;
    }

    ucp_context_h  m_ctx      = NULL;
    ucp_worker_h   m_worker   = NULL;
    ucp_ep_h       m_ep       = NULL;
    ucp_listener_h m_listener = NULL;
    std::vector<ucp_ep_h> m_accepted;
    bool           m_failed   = false;
    bool           m_accepted_failed = false;
    uint64_t       m_token    = 0;
};

/* a process's resident memory, bytes (0 if unknown) */
uint64_t rss_bytes(pid_t pid)
{
    std::ifstream f("/proc/" + std::to_string(pid) + "/status");
    std::string line;

    while (std::getline(f, line)) {
        if (line.compare(0, 6, "VmRSS:") == 0) {
            return std::stoull(line.substr(6)) * 1024;
        }
    }
    return 0;
}

/* over tcp (a listener the raw peer connects to), both progress modes */
const std::vector<peer_param> identity_params = {
    {"tcp", FI_PROGRESS_MANUAL, 1},
    {"tcp", FI_PROGRESS_AUTO,   0},
};

class identity : public peer_test {
protected:
    uint64_t caps() const override
    {
        return FI_RMA | FI_MSG | FI_TAGGED | FI_DIRECTED_RECV | FI_SOURCE;
    }

    enum fi_cq_format cq_format() const override
    {
        return FI_CQ_FORMAT_TAGGED;
    }

    void SetUp() override
    {
        size_t len = sizeof(m_self);

        peer_test::SetUp();
        if (HasFatalFailure()) {
            return;
        }
        ASSERT_EQ(0, fi_getname(&m_o.ep->fid, m_self, &len));
        ASSERT_EQ(24u, len);
        ASSERT_EQ(UCS_OK, m_raw.init());
    }

    void TearDown() override
    {
        m_raw.close();
        peer_test::TearDown();
    }

    /* a message header for this process's endpoint, from `src` */
    msg_wire_hdr hdr(uint64_t seq, size_t len, const uint8_t *src) const
    {
        msg_wire_hdr h = {};

        h.magic = msg_magic;
        h.ep_id = (uint32_t)get_be(m_self + 8, 4);
        h.nonce = get_be(m_self + 16, 8);
        h.len   = len;
        h.seq   = seq;
        memcpy(h.src, src, sizeof(h.src));
        return h;
    }

    /* the next receive entry, its source (bounded; the entries of this
     * side's sends skipped); false if none came in `ms` */
    bool next(struct fi_cq_tagged_entry *e, fi_addr_t *src, int ms)
    {
        int64_t deadline = now_ms() + ms;
        ssize_t n;

        for (;;) {
            n = fi_cq_readfrom(m_o.cq, e, 1, src);
            if ((n == 1) && (e->flags & FI_RECV)) {
                return true;
            }
            if ((n != 1) && (n != -FI_EAGAIN)) {
                ADD_FAILURE() << "fi_cq_readfrom: " << n;
                return false;
            }
            if (now_ms() > deadline) {
                return false;
            }
        }
    }

    uint8_t m_self[64];
    raw_ucp m_raw;
};

/* under manual progress only: a paused target answers nothing (its
 * progress thread would answer at once) */
class identity_manual : public identity {
};

/* A key reply forged on another connection, for the ids a counter would
 * give, while the genuine target does not answer yet: the write waits
 * for the target's answer and lands; a genuine refusal (a key the target
 * does not have) is taken */
TEST_P(identity_manual, key_reply_forged_on_another_connection_is_not_taken)
{
    std::atomic<bool> stop(false);
    uint64_t value = 0x1122334455667788ull, sent = 0;
    std::vector<uint8_t> want(8);
    ssize_t ret;
    /* the positive control first: the target's own refusal (a key it
     * does not have) is taken; and the connection to it is up */
    EXPECT_EQ(-FI_ENOKEY, fi_write(m_o.ep, &value, 8, NULL, m_dest,
                                   m_peer.base, m_peer.key + 1, NULL));
    /* up once this domain progresses (in the write, under manual
     * progress); the forged replies wait for it */
    ASSERT_EQ(UCS_OK, m_raw.connect(m_self));
    m_peer.pause_start(1500);
    std::thread forger([&] {
        key_rep_wire rep = {};

        rep.magic  = key_magic;
        rep.status = -FI_ENOKEY;
        while (!stop.load()) {
            for (uint64_t id = 1; id <= 8; ++id) {
                rep.req_id = id;
                ucs_status_ptr_t r = m_raw.send_nb(am_key_rep, &rep,
                                                   sizeof(rep), NULL, 0);
                if (UCS_PTR_IS_PTR(r)) {
                    ucp_request_free(r);
                }
                ++sent;
            }
            m_raw.progress(2);
        }
    });
    ret = fi_write(m_o.ep, &value, 8, NULL, m_dest, m_peer.base, m_peer.key,
                   &value);
    stop.store(true);
    forger.join();
    EXPECT_TRUE(m_peer.pause_wait());
    EXPECT_GT(sent, 0u);
    ASSERT_EQ(0, ret) << "a forged key reply was taken";
    wait_cntr(m_o.wcntr, 1);
    memcpy(want.data(), &value, 8);
    EXPECT_EQ(want, m_peer.get(0, 8));
}

/* What a raw peer learnt of a closing domain's question on its own
 * connection (fip_bye.c's message: magic, connection index, token). */
struct bye_seen {
    std::atomic<bool>     seen{false};
    std::atomic<uint32_t> index{0};
    std::atomic<uint64_t> token{0};
};

ucs_status_t raw_bye(void *arg, const void *header, size_t header_length,
                     void *data, size_t length,
                     const ucp_am_recv_param_t *param)
{
    bye_seen *b = (bye_seen*)arg;
    bye_wire msg;

    if (header_length == sizeof(msg)) {
        memcpy(&msg, header, sizeof(msg));
        b->index.store(msg.index);
        b->token.store(msg.token);
        b->seen.store(true);
    }
    return UCS_OK;
}

/* This domain closes while its peer does not answer (paused), and the raw
 * peer, which got the close's question with its token on its own
 * connection, answers for every connection index: the close still waits
 * for the peer's answer (to its bound, fip_bye.c's 1 s). The control:
 * the peer answers and the raw peer answers its own question only; the
 * close does not wait. */
TEST_P(identity_manual, closing_answers_forged_on_another_connection_are_not_taken)
{
    const int64_t bound_ms = 1000;
    uint64_t value = 7;
    int64_t took[2];

    for (int forged = 0; forged < 2; ++forged) {
        bye_seen b;
        std::atomic<bool> stop(false);
        std::atomic<uint64_t> sent(0);

        if (forged) {
            /* a second domain of this process and a fresh raw peer */
            open_params p = m_o.params;

            m_raw.close();
            ASSERT_EQ(0, m_o.open_domain(p));
            ASSERT_EQ(0, m_o.open_ep());
            ASSERT_EQ(1, fi_av_insert(m_o.av, m_peer.addr.data(), 1, &m_dest,
                                      0, NULL));
            ASSERT_EQ(UCS_OK, m_raw.init());
        }
        size_t len = sizeof(m_self);
        ASSERT_EQ(0, fi_getname(&m_o.ep->fid, m_self, &len));
        /* a connection to the peer, up */
        ASSERT_EQ(-FI_ENOKEY, fi_write(m_o.ep, &value, 8, NULL, m_dest,
                                       m_peer.base, m_peer.key + 1, NULL));
        ASSERT_EQ(UCS_OK, m_raw.set_handler(am_bye, raw_bye, &b));
        ASSERT_EQ(UCS_OK, m_raw.connect(m_self));
        /* the domain takes the connection in (manual progress) */
        struct fi_cq_tagged_entry e;
        for (int64_t until = now_ms() + 300; now_ms() < until;) {
            (void)fi_cq_read(m_o.cq, &e, 1);
            m_raw.progress(1);
        }
        if (forged) {
            m_peer.pause_start(3 * bound_ms);
        }
        std::thread answerer([&] {
            bye_wire ack = {};

            while (!stop.load()) {
                m_raw.progress(1);
                if (!b.seen.load()) {
                    continue;
                }
                ack.magic = bye_magic;
                ack.token = b.token.load();
                for (uint32_t i = 0; i < (forged ? 16u : 1u); ++i) {
                    ack.index = forged ? i : b.index.load();
                    ucs_status_ptr_t r = m_raw.send_nb(am_bye_ack, &ack,
                                                       sizeof(ack), NULL, 0);
                    if (UCS_PTR_IS_PTR(r)) {
                        ucp_request_free(r);
                    }
                    ++sent;
                }
                if (!forged) {
                    b.seen.store(false); /* one genuine answer */
                }
            }
        });
        int64_t start = now_ms();
        m_o.close();
        took[forged] = now_ms() - start;
        stop.store(true);
        answerer.join();
        if (forged) {
            EXPECT_TRUE(m_peer.pause_wait());
        }
        EXPECT_GT(sent.load(), 0u) << "the raw peer was asked nothing";
    }
    EXPECT_LT(took[0], bound_ms * 8 / 10)
        << "the control: answered, the close does not wait";
    /* waited: the answer (bound_ms) and then the flush of the connections
     * (fip_peer.c, 1 s), neither of which the paused peer ends; taken, the
     * forged answer left the flush alone (1 s) */
    EXPECT_GE(took[1], bound_ms + 900)
        << "a forged answer was taken for the peer's connection";
}

/* A connection that claims the peer's endpoint as its messages' source:
 * a receive directed to the peer does not take its message, a receive of
 * any source does, with no source (FI_ADDR_NOTAVAIL); the peer's own
 * message fills the directed receive, its source the peer's entry */
TEST_P(identity, claimed_source_is_no_source)
{
    char directed[32] = {}, any[32] = {};
    struct fi_cq_tagged_entry e;
    fi_addr_t src;
    msg_wire_hdr h = hdr(0, 6, m_peer.addr.data());

    ASSERT_EQ(0, fi_recv(m_o.ep, directed, sizeof(directed), NULL, m_dest,
                         directed));
    ASSERT_EQ(UCS_OK, m_raw.connect(m_self));
    /* it greets as the peer's domain would (a token the peer never
     * made), then sends as the peer's endpoint; the domain greeted
     * meanwhile progresses here under manual progress */
    std::atomic<bool> sent(false);
    std::thread raw([&] {
        (void)m_raw.greet((uint32_t)get_be(m_peer.addr.data() + 4, 4),
                          (uint16_t)get_be(m_peer.addr.data() + 2, 2),
                          0x5eedf00dull);
        (void)m_raw.send(am_msg, &h, sizeof(h), "forged", 6);
        m_raw.progress(200);
        sent.store(true);
    });
    bool took      = false;
    int64_t until  = 0;
    while (!took) {
        took = next(&e, &src, 20);
        if (sent.load() && (until == 0)) {
            until = now_ms() + 500;
        }
        if ((until != 0) && (now_ms() > until)) {
            break;
        }
    }
    raw.join();
    EXPECT_FALSE(took)
        << "a receive directed to the peer took a message that only "
           "claimed to come from it";
    ASSERT_EQ(0, fi_recv(m_o.ep, any, sizeof(any), NULL, FI_ADDR_UNSPEC,
                         any));
    ASSERT_TRUE(next(&e, &src, raw_wait_ms)) << "the claim was not received";
    EXPECT_EQ((void*)any, e.op_context);
    EXPECT_EQ("forged", std::string(any, e.len));
    EXPECT_EQ(FI_ADDR_NOTAVAIL, src) << "a claim named its source";

    /* the positive control: the peer's own message, and its source */
    m_peer.stream_start(1, 16, 5, false,
                        std::vector<uint8_t>(m_self, m_self + 24));
    ASSERT_TRUE(next(&e, &src, raw_wait_ms)) << "the peer's message";
    EXPECT_EQ((void*)directed, e.op_context);
    EXPECT_EQ(16u, e.len);
    EXPECT_EQ(m_dest, src);
    EXPECT_EQ(0, m_peer.echo_wait(m_o.rvcntr));
}

/* The positive control of the claim's check: a raw peer that claims its
 * own listener, and answers the domain's question about its token over
 * the domain's connection back, is the source of its messages (the entry
 * of its address) and a receive directed to it takes them */
TEST_P(identity, confirmed_claim_is_a_source)
{
    char directed[32] = {};
    struct fi_cq_tagged_entry e;
    fi_addr_t mine, src = 0;
    uint16_t port = 0;
    uint8_t addr[24];

    ASSERT_EQ(UCS_OK, m_raw.listen(&port));
    memcpy(addr, m_self, sizeof(addr));
    addr[2]  = (uint8_t)(port >> 8);
    addr[3]  = (uint8_t)port;
    addr[11] ^= 0x11;  /* an endpoint id of its own */
    ASSERT_EQ(1, fi_av_insert(m_o.av, addr, 1, &mine, 0, NULL));
    ASSERT_EQ(0, fi_recv(m_o.ep, directed, sizeof(directed), NULL, mine,
                         directed));
    ASSERT_EQ(UCS_OK, m_raw.connect(m_self));
    msg_wire_hdr h = hdr(0, 4, addr);
    std::atomic<bool> stop(false);
    std::thread raw([&] {
        (void)m_raw.greet((uint32_t)get_be(m_self + 4, 4), port,
                          0xc0ffee11ull);
        (void)m_raw.send(am_msg, &h, sizeof(h), "mine", 4);
        while (!stop.load()) {
            m_raw.progress(5);
        }
    });
    bool got = next(&e, &src, raw_wait_ms);
    stop.store(true);
    raw.join();
    ASSERT_TRUE(got) << "the confirmed connection's message";
    EXPECT_EQ((void*)directed, e.op_context);
    EXPECT_EQ("mine", std::string(directed, e.len));
    EXPECT_EQ(mine, src);
    EXPECT_EQ(1u, m_raw.questions) << "the domain asked the claim's domain";
}

/* More connections than a domain holds at once, each closed before the
 * next: the last still reaches the endpoint (a slot is the connection's
 * while it lasts) */
TEST_P(identity, connections_that_left_free_their_slots)
{
    const int rounds = 4096 + 64;
    std::atomic<int> done(0), failed(0);
    char buf[32] = {};
    struct fi_cq_tagged_entry e;
    fi_addr_t src;
    uint8_t other[24];

    /* the domain progresses here while the raw peer connects */
    std::thread churn([&] {
        failed.store(m_raw.churn(m_self, rounds, 32));
        done.store(1);
    });
    while (!done.load()) {
        (void)next(&e, &src, 10);
    }
    churn.join();
    EXPECT_EQ(0, failed.load()) << "connections refused";
    memcpy(other, m_self, sizeof(other));
    other[11] ^= 0x40;
    msg_wire_hdr h = hdr(0, 4, other);
    ASSERT_EQ(0, fi_recv(m_o.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC,
                         buf));
    ASSERT_EQ(UCS_OK, m_raw.connect(m_self));
    std::thread last([&] {
        (void)m_raw.send(am_msg, &h, sizeof(h), "last", 4);
    });
    bool got = next(&e, &src, 10000);
    last.join();
    ASSERT_TRUE(got) << "the last connection's message did not arrive";
    EXPECT_EQ("last", std::string(buf, e.len));
}

/* The target's resident memory is its live memory: under AddressSanitizer
 * the peer keeps no quarantine of freed blocks (256 MiB by default, which
 * the answers sent and freed would fill) */
class identity_rss : public identity {
protected:
    void SetUp() override
    {
        const char *saved     = getenv("ASAN_OPTIONS");
        const std::string old = (saved != NULL) ? saved : "";

        setenv("ASAN_OPTIONS",
               (old + (old.empty() ? "" : ":") + "quarantine_size_mb=0").c_str(),
               1);
        identity::SetUp(); /* the peer inherits it */
        if (saved != NULL) {
            setenv("ASAN_OPTIONS", old.c_str(), 1);
        } else {
            unsetenv("ASAN_OPTIONS");
        }
    }
};

/* A peer that asks for keys and never reads the answers: the target's
 * resident memory stays within a bound over rounds of requests (each as
 * many as the connection takes without the asker progressing); before,
 * every answer stayed queued at the target */
TEST_P(identity_rss, answers_a_peer_does_not_read_are_capped)
{
    const uint64_t bound = 24ull << 20;
    uint64_t answers = 0, asked = 0, base, peak = 0;
    key_req_wire req = {};

    ASSERT_EQ(UCS_OK, m_raw.set_handler(am_key_rep, raw_count_am, &answers));
    ASSERT_EQ(UCS_OK, m_raw.connect(m_peer.addr.data()));
    ASSERT_EQ(UCS_OK, m_raw.flush());
    req.magic = key_magic;
    req.key   = m_peer.key;
    /* the positive control: an answer comes to a request read */
    req.req_id = 1;
    ASSERT_EQ(UCS_OK, m_raw.send(am_key_req, &req, sizeof(req), NULL, 0));
    for (int64_t until = now_ms() + raw_wait_ms;
         (answers == 0) && (now_ms() < until);) {
        m_raw.progress(1);
    }
    ASSERT_EQ(1u, answers);
    base = rss_bytes(m_peer.pid());
    ASSERT_GT(base, 0u);
    for (int round = 0; round < 3; ++round) {
        for (uint64_t i = 0; i < 300000; ++i) {
            req.req_id = ++asked + 1;
            ucs_status_ptr_t r = m_raw.send_nb(am_key_req, &req, sizeof(req),
                                               NULL, 0);
            if (UCS_PTR_IS_ERR(r)) {
                break;
            }
            if (UCS_PTR_IS_PTR(r)) {
                ucp_request_free(r); /* the connection is full */
                break;
            }
        }
        usleep(500000); /* the target reads them, and answers */
        peak = std::max(peak, rss_bytes(m_peer.pid()));
        m_raw.progress(100); /* a few answers read, requests sent */
    }
    EXPECT_GT(asked, 10000u) << "too few requests to tell";
    EXPECT_LT(peak - base, bound)
        << asked << " requests grew the target from " << base << " to "
        << peak << " bytes";
}

/* Connections that come and go: the target's resident memory stays
 * within a bound over rounds of them (each round more connections than
 * the domain has slots) */
TEST_P(identity_rss, connection_churn_keeps_the_target_bounded)
{
    const uint64_t bound = 24ull << 20;
    const int rounds = 2, per_round = 4096 + 64;
    uint64_t first = 0, peak = 0;

    for (int round = 0; round < rounds; ++round) {
        ASSERT_EQ(0, m_raw.churn(m_peer.addr.data(), per_round, 32))
            << "connections refused in round " << round;
        usleep(200000); /* the target saw the last ones leave */
        uint64_t rss = rss_bytes(m_peer.pid());
        ASSERT_GT(rss, 0u);
        if (round == 0) {
            first = rss; /* UCP's caches and the domain's tables grown */
        }
        peak = std::max(peak, rss);
    }
    EXPECT_LT(peak - first, bound)
        << (rounds - 1) * per_round << " more connections grew the target "
        << "from " << first << " to " << peak << " bytes";
    /* the positive control: the target still answers a new connection */
    uint64_t value = 0x5a5a;
    EXPECT_EQ(0, fi_write(m_o.ep, &value, 8, NULL, m_dest, m_peer.base,
                          m_peer.key, NULL));
}

INSTANTIATE_TEST_SUITE_P(fiprov, identity,
                         testing::ValuesIn(identity_params),
                         peer_param_name);
INSTANTIATE_TEST_SUITE_P(fiprov, identity_rss,
                         testing::ValuesIn(identity_params),
                         peer_param_name);
INSTANTIATE_TEST_SUITE_P(fiprov, identity_manual,
                         testing::Values(peer_param{"tcp", FI_PROGRESS_MANUAL,
                                                    1},
                                         peer_param{"tcp", FI_PROGRESS_MANUAL,
                                                    0}),
                         peer_param_name);

} // namespace
