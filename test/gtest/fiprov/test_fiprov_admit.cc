/**
 * Job admission (fip_admit.c): with a job key (the domain attribute
 * auth_key, or FI_FIATOMIC_AUTH_KEY) a peer domain of another key, or of
 * none, cannot open a connection: nothing it sends is acted on (no message
 * delivered, no key resolved, no RMA or atomic reaching memory) and its
 * operations end with -FI_EACCES within bounded time; a raw UCP peer that
 * sends the provider's messages without a greeting, or with a greeting
 * whose proof is not of the job's key, gets nothing and the domain goes
 * on. Positive controls: domains of the same key exchange messages, RMA
 * and atomics; a raw peer whose greeting carries the right proof has its
 * message delivered. The SipHash-2-4 the proof is made of is checked
 * against the reference vectors of its paper. The wire layouts are those
 * of fip_caller.c and fip_msg.c (host order).
 */
#include "fiprov_peer.h"
#include "fiprov_raw_peer.h"
#include "fiprov_wait.h"
#include "test_ucx_log.h"

extern "C" {
#include "../../../src/prov/fiatomic/fip_mac.h"
}

#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

using namespace fiprov_test;

namespace {

const char     auth_env[]  = "FI_FIATOMIC_AUTH_KEY";
const char     job_key[]   = "job 4711: the right key";
const char     other_key[] = "job 4712: another key";
const unsigned am_hello    = 1017;
const unsigned am_msg      = 1012;
const uint32_t hello_magic = 0x66697048u;
const uint32_t msg_magic   = 0x6669704du;
/* how long a refused operation may take to fail (the key service's own
 * bound is 30 s: a refusal must come well before it) */
const double   refuse_s    = 10.0;

struct hello_wire {
    uint32_t magic;
    uint32_t pid;
    uint64_t nonce;
    uint64_t token;
    uint32_t ipv4;
    uint16_t port;
    uint16_t reserved;
    uint64_t mac;
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

static_assert(sizeof(hello_wire) == 40, "the greeting is 40 bytes");
static_assert(sizeof(msg_wire_hdr) == 80, "the message header is 80 bytes");

uint64_t get_be(const uint8_t *p, size_t n)
{
    uint64_t v = 0;

    for (size_t i = 0; i < n; ++i) {
        v = (v << 8) | p[i];
    }
    return v;
}

/* the greeting's proof as fip_admit.c makes it: SipHash-2-4 under the key
 * derived from the job key, over ('H', token, 0, and the address of the
 * domain greeted: listener ipv4 and port, or process and domain nonce),
 * eight little-endian bytes each */
uint64_t hello_mac(const std::string &job, uint64_t token,
                   const std::vector<uint8_t> &target)
{
    const bool local = (target[1] == 2);
    const uint64_t words[5] = {
        0x48, token, 0, get_be(&target[4], 4),
        local ? get_be(&target[16], 8) : get_be(&target[2], 2)
    };
    uint8_t key[16], buf[40];

    fip_mac_key_derive(job.data(), job.size(), key);
    for (size_t i = 0; i < 5; ++i) {
        for (size_t j = 0; j < 8; ++j) {
            buf[8 * i + j] = (uint8_t)(words[i] >> (8 * j));
        }
    }
    return fip_siphash24(key, buf, sizeof(buf));
}

std::vector<uint8_t> bytes_of(const void *p, size_t len)
{
    return std::vector<uint8_t>((const uint8_t*)p, (const uint8_t*)p + len);
}

struct admit_param {
    const char       *tls;
    enum fi_progress progress;
    int              prov_keys;
    bool             attr;   /* this side's key: domain attribute, else env */
    int              share;  /* FI_FIATOMIC_MR_SHARE=1 in both */
};

std::string admit_name(const testing::TestParamInfo<admit_param> &info)
{
    const admit_param &p = info.param;

    return std::string(p.tls) + "_" +
           ((p.progress == FI_PROGRESS_AUTO) ? "auto" : "manual") + "_" +
           (p.prov_keys ? "provkeys" : "programkeys") + "_" +
           (p.attr ? "attr" : "env") + (p.share ? "_share" : "");
}

const std::vector<admit_param> admit_params = {
    {"posix", FI_PROGRESS_AUTO,   0, true,  0},
    {"posix", FI_PROGRESS_MANUAL, 1, false, 0},
    {"tcp",   FI_PROGRESS_AUTO,   1, true,  0},
    {"tcp",   FI_PROGRESS_MANUAL, 0, false, 0},
    {"posix", FI_PROGRESS_AUTO,   1, true,  1},
};

class admit : public test_base,
              public testing::WithParamInterface<admit_param> {
protected:
    void SetUp() override
    {
        test_base::SetUp();
        save(auth_env, &m_auth);
        save("UCX_TLS", &m_tls);
        save(share_env, &m_share);
        save("UCX_POSIX_ERROR_HANDLING", &m_posix_eh);
        setenv("UCX_TLS", GetParam().tls, 1);
        /* the raw peer's endpoints over posix, as the hostile suite's */
        if (strstr(GetParam().tls, "posix") != NULL) {
            setenv("UCX_POSIX_ERROR_HANDLING", "y", 1);
        }
        if (GetParam().share) {
            setenv(share_env, "1", 1);
        } else {
            unsetenv(share_env);
        }
    }

    void TearDown() override
    {
        m_o.close();
        EXPECT_EQ(0, m_peer.stop()) << "the peer's exit status";
        restore(auth_env, m_auth);
        restore("UCX_TLS", m_tls);
        restore(share_env, m_share);
        restore("UCX_POSIX_ERROR_HANDLING", m_posix_eh);
        test_base::TearDown();
    }

    /* the peer with job key `peer_key` (FI_FIATOMIC_AUTH_KEY; "" none),
     * then this side with `own` (the domain attribute, under an
     * environment key it wins over, or the environment) */
    void open(const std::string &peer_key, const std::string &own)
    {
        open_params p;

        p.progress  = GetParam().progress;
        p.prov_keys = GetParam().prov_keys;
        /* tagged: the peer's streams end with a tagged fence */
        p.caps      = FI_ATOMIC | FI_RMA | FI_MSG | FI_TAGGED;
        p.cq_format = FI_CQ_FORMAT_DATA;
        set_key(peer_key);
        m_peer.start(p);
        ASSERT_FALSE(HasFatalFailure());
        if (GetParam().attr && !own.empty()) {
            set_key("an environment key the attribute wins over");
            p.auth_key = own;
        } else {
            set_key(own);
        }
        ASSERT_EQ(0, m_o.open_domain(p));
        ASSERT_EQ(0, m_o.open_ep());
        ASSERT_EQ(1, fi_av_insert(m_o.av, m_peer.addr.data(), 1, &m_dest, 0,
                                  NULL));
        size_t len = sizeof(m_self);
        ASSERT_EQ(0, fi_getname(&m_o.ep->fid, m_self, &len));
        ASSERT_EQ(24u, len);
    }

    /* the next entry of this side's queue (bounded by ms): 0 and the
     * entry, the error's FI_E* (positive), or -FI_ETIMEDOUT */
    int next(struct fi_cq_data_entry *e, int ms)
    {
        int64_t deadline = now_ms() + ms;
        struct fi_cq_err_entry err;
        ssize_t n;

        for (;;) {
            n = fi_cq_read(m_o.cq, e, 1);
            if (n == 1) {
                return 0;
            }
            if (n == -FI_EAVAIL) {
                memset(&err, 0, sizeof(err));
                if (fi_cq_readerr(m_o.cq, &err, 0) != 1) {
                    return -FI_EIO;
                }
                e->op_context = err.op_context;
                e->flags      = err.flags;
                return err.err;
            }
            if (n != -FI_EAGAIN) {
                return (int)n;
            }
            if (now_ms() > deadline) {
                return -FI_ETIMEDOUT;
            }
        }
    }

    /* how a transfer to a refusing peer ended: its post's value if it
     * failed there, else its completion's error (-FI_E*), bounded */
    int outcome(ssize_t posted)
    {
        struct fi_cq_data_entry e;
        int ret;

        if (posted != 0) {
            return (int)posted;
        }
        ret = next(&e, (int)(refuse_s * 1000));
        return (ret > 0) ? -ret : ret;
    }

    /* messages received into `bufs` within ms (their receives posted) */
    size_t received(int ms)
    {
        struct fi_cq_data_entry e;
        size_t count = 0;
        int64_t deadline = now_ms() + ms;

        while (now_ms() < deadline) {
            if ((next(&e, 20) == 0) && (e.flags & FI_RECV)) {
                ++count;
            }
        }
        return count;
    }

    /* a message header for this side's endpoint, from `src` */
    msg_wire_hdr hdr(size_t len, const uint8_t *src) const
    {
        msg_wire_hdr h = {};

        h.magic = msg_magic;
        h.ep_id = (uint32_t)get_be(m_self + 8, 4);
        h.nonce = get_be(m_self + 16, 8);
        h.len   = len;
        memcpy(h.src, src, sizeof(h.src));
        return h;
    }

    /* a greeting with proof `mac` that claims the peer's listener, or on
     * the same host a process that published nothing (the claim is
     * checked over a connection back to it: UCP would pair one to the
     * peer's worker with the peer's own later connection here) */
    hello_wire greeting(uint64_t token, uint64_t mac) const
    {
        const uint8_t *a = m_peer.addr.data();
        hello_wire h     = {};

        h.magic = hello_magic;
        h.token = token;
        h.mac   = mac;
        if (a[1] == 2) {
            h.pid   = 1;
            h.nonce = 0x6e0b0d7ull;
        } else {
            h.ipv4 = (uint32_t)get_be(a + 4, 4);
            h.port = (uint16_t)get_be(a + 2, 2);
        }
        return h;
    }

    /* a raw UCP peer connects to this side's domain and sends `greet`
     * (unless NULL), then one message of 6 bytes; the messages this side
     * took within 1.5 s (into the receive the test posted, m_raw_buf);
     * *closed: the raw connection saw an error. With msg_first the
     * message goes first too, the greeting after it. */
    size_t raw_attempt(const hello_wire *greet, bool *closed,
                       bool msg_first = false)
    {
        raw_peer raw;
        msg_wire_hdr h = hdr(6, m_peer.addr.data());
        std::vector<uint8_t> self(m_self, m_self + sizeof(m_self));
        size_t got;

        *closed = false;
        if ((raw.open(4096) != UCS_OK) ||
            (raw.connect_fi_addr(self) != UCS_OK)) {
            ADD_FAILURE() << "the raw peer cannot connect";
            return 0;
        }
        /* this side progresses meanwhile (manual progress) */
        std::thread t([&] {
            if (msg_first) {
                (void)raw.am_send(am_msg, bytes_of(&h, sizeof(h)),
                                  bytes_of("forged", 6), true);
            }
            if (greet != NULL) {
                (void)raw.am_send(am_hello, bytes_of(greet, sizeof(*greet)),
                                  {}, true);
            }
            (void)raw.am_send(am_msg, bytes_of(&h, sizeof(h)),
                              bytes_of("forged", 6), true);
            raw.progress_for(1000);
        });
        got = received(1500);
        t.join();
        *closed = raw.ep_failed();
        raw.close();
        return got;
    }

    /* the peer's region bytes [0, 128) set to a pattern: unchanged by a
     * refused peer */
    std::vector<uint8_t> mark_region()
    {
        std::vector<uint8_t> pattern(128, 0x5a);

        m_peer.set(0, pattern);
        return pattern;
    }

    /* a write and a fetch-add at the peer, and the write's completion: the
     * peer of the same key takes them */
    void rma_and_atomic_pass()
    {
        uint64_t value = 0x1122334455667788ull, add = 5, old = 0;
        std::vector<uint8_t> want(8);
        struct fi_cq_data_entry e;

        ASSERT_EQ(0, fi_write(m_o.ep, &value, 8, NULL, m_dest,
                              m_peer.base + 64, m_peer.key, &value));
        ASSERT_EQ(0, next(&e, peer_wait_ms));
        memcpy(want.data(), &value, 8);
        EXPECT_EQ(want, m_peer.get(64, 8));
        ASSERT_EQ(0, fi_fetch_atomic(m_o.ep, &add, 1, NULL, &old, NULL,
                                     m_dest, m_peer.base + 64, m_peer.key,
                                     FI_UINT64, FI_SUM, &old));
        ASSERT_EQ(0, next(&e, peer_wait_ms));
        EXPECT_EQ(value, old);
        value += add;
        memcpy(want.data(), &value, 8);
        EXPECT_EQ(want, m_peer.get(64, 8));
    }

    /* with another key or none: a write, a fetch-add and a send to the
     * peer fail (-FI_EACCES, not a timeout) within refuse_s, and the
     * peer's region is unchanged */
    void refused(const std::string &own)
    {
        uint64_t value = 0x1122334455667788ull, add = 5, old = 0;
        char msg[16] = "refused";
        std::vector<uint8_t> before;

        open(job_key, own);
        ASSERT_FALSE(HasFatalFailure());
        before = mark_region();
        test_clock::time_point start = test_clock::now();
        EXPECT_EQ(-FI_EACCES,
                  outcome(fi_write(m_o.ep, &value, 8, NULL, m_dest,
                                   m_peer.base + 64, m_peer.key, &value)));
        EXPECT_EQ(-FI_EACCES,
                  outcome(fi_fetch_atomic(m_o.ep, &add, 1, NULL, &old, NULL,
                                          m_dest, m_peer.base + 64,
                                          m_peer.key, FI_UINT64, FI_SUM,
                                          &old)));
        EXPECT_EQ(-FI_EACCES,
                  outcome(fi_send(m_o.ep, msg, sizeof(msg), NULL, m_dest,
                                  msg)));
        EXPECT_LT(seconds_since(start), refuse_s);
        EXPECT_EQ(before, m_peer.get(0, 128));
    }

    /* the peer, of key `peer_key`, sends 4 messages to this side (key
     * job_key) and stays: how many arrived within 3 s; *peer_status the
     * peer's (0: its sends completed). A peer that closed at once after
     * its sends met UCX 1.13's tcp connection manager crash
     * (uct_tcp_sockcm_ep_recv) with or without keys, as this side's
     * connection back to check its claim was still being made */
    size_t peer_sends(const std::string &peer_key, int *peer_status)
    {
        std::vector<std::vector<char>> bufs(4, std::vector<char>(64));
        std::vector<uint8_t> self;

        open(peer_key, job_key);
        if (HasFatalFailure()) {
            return 0;
        }
        for (auto &b : bufs) {
            EXPECT_EQ(0, fi_recv(m_o.ep, b.data(), b.size(), NULL,
                                 FI_ADDR_UNSPEC, b.data()));
        }
        self.assign(m_self, m_self + sizeof(m_self));
        m_peer.stream_start(4, 64, 1, false, self);
        size_t got = received(3000);
        *peer_status = m_peer.echo_wait(m_o.rvcntr);
        return got;
    }

    peer      m_peer;
    objects   m_o;
    char      m_raw_buf[64] = {};
    fi_addr_t m_dest = FI_ADDR_UNSPEC;
    uint8_t   m_self[24] = {};

private:
    static void save(const char *name, std::pair<bool, std::string> *v)
    {
        const char *s = getenv(name);

        v->first  = (s != NULL);
        v->second = (s != NULL) ? s : "";
    }

    static void restore(const char *name,
                        const std::pair<bool, std::string> &v)
    {
        if (v.first) {
            setenv(name, v.second.c_str(), 1);
        } else {
            unsetenv(name);
        }
    }

    static void set_key(const std::string &key)
    {
        if (key.empty()) {
            unsetenv(auth_env);
        } else {
            setenv(auth_env, key.c_str(), 1);
        }
    }

    std::pair<bool, std::string> m_auth, m_tls, m_share, m_posix_eh;
};

} // namespace

/* the paper's vector (its appendix A: key 00..0f, message 00..0e) and the
 * reference implementation's first ones (messages 00.., lengths 0, 1, 8) */
TEST(fiprov_mac, siphash24_reference_vectors)
{
    uint8_t key[16], msg[16];

    for (unsigned i = 0; i < 16; ++i) {
        key[i] = (uint8_t)i;
        msg[i] = (uint8_t)i;
    }
    EXPECT_EQ(0xa129ca6149be45e5ull, fip_siphash24(key, msg, 15));
    EXPECT_EQ(0x726fdb47dd0e0e31ull, fip_siphash24(key, msg, 0));
    EXPECT_EQ(0x74f839c593dc67fdull, fip_siphash24(key, msg, 1));
    EXPECT_EQ(0x93f5f5799a932462ull, fip_siphash24(key, msg, 8));
}

/* a key derived from the job key's bytes: equal keys, equal; any other
 * byte or length, another */
TEST(fiprov_mac, job_keys_derive_apart)
{
    uint8_t a[16], b[16], c[16], d[16];

    fip_mac_key_derive("job", 3, a);
    fip_mac_key_derive("job", 3, b);
    fip_mac_key_derive("jop", 3, c);
    fip_mac_key_derive("job\0", 4, d);
    EXPECT_EQ(0, memcmp(a, b, 16));
    EXPECT_NE(0, memcmp(a, c, 16));
    EXPECT_NE(0, memcmp(a, d, 16));
}

/* positive control: the same key both sides, RMA and an atomic */
TEST_P(admit, same_key_rma_and_atomic)
{
    open(job_key, job_key);
    ASSERT_FALSE(HasFatalFailure());
    rma_and_atomic_pass();
}

/* positive control: the same key, the peer's messages arrive */
TEST_P(admit, same_key_messages)
{
    int status = -1;

    EXPECT_EQ(4u, peer_sends(job_key, &status));
    EXPECT_EQ(0, status) << "the peer's sends";
}

TEST_P(admit, other_key_refused)
{
    refused(other_key);
}

TEST_P(admit, no_key_refused)
{
    refused("");
}

/* a peer of another key, or none, sends: nothing arrives, and the peer
 * finishes (its sends end in error: -FI_EACCES, once refused) */
TEST_P(admit, other_key_messages_not_delivered)
{
    int status = -1;

    EXPECT_EQ(0u, peer_sends(other_key, &status));
    EXPECT_NE(-1, status) << "the peer did not finish";
}

TEST_P(admit, no_key_messages_not_delivered)
{
    int status = -1;

    EXPECT_EQ(0u, peer_sends("", &status));
    EXPECT_NE(-1, status) << "the peer did not finish";
}

/* a raw UCP peer: its message without a greeting, or after a greeting
 * whose proof is of another key or none, or on a connection whose first
 * message came before its greeting, is not delivered (over a listener its
 * connection is closed); after a greeting with the right proof it is (no
 * source: the claim is not confirmed); and the domain still takes the
 * peer's messages */
TEST_P(admit, raw_peer_needs_the_proof)
{
    bool closed = false;
    hello_wire bad, good;
    int status = -1;

    /* the peer's refusal notices reach a raw peer with no handler */
    test_common::ucx_log_allow("no registered callback for that id");
    open(job_key, job_key);
    ASSERT_FALSE(HasFatalFailure());
    /* one receive: the message that is delivered takes it */
    ASSERT_EQ(0, fi_recv(m_o.ep, m_raw_buf, sizeof(m_raw_buf), NULL,
                         FI_ADDR_UNSPEC, m_raw_buf));
    EXPECT_EQ(0u, raw_attempt(NULL, &closed)) << "no greeting";
    if (std::string(GetParam().tls) == "tcp") {
        EXPECT_TRUE(closed) << "the connection is closed";
    }
    bad = greeting(0x5eedf00dull,
                   hello_mac(other_key, 0x5eedf00dull, bytes_of(m_self, 24)));
    EXPECT_EQ(0u, raw_attempt(&bad, &closed)) << "another key's proof";
    bad.mac = 0;
    EXPECT_EQ(0u, raw_attempt(&bad, &closed)) << "no proof";
    good = greeting(0x5eedf00eull,
                    hello_mac(job_key, 0x5eedf00eull, bytes_of(m_self, 24)));
    EXPECT_EQ(0u, raw_attempt(&good, &closed, true))
        << "the right proof after a message";
    good.token = 0x5eedf00full;
    good.mac   = hello_mac(job_key, good.token, bytes_of(m_self, 24));
    EXPECT_EQ(1u, raw_attempt(&good, &closed)) << "the right proof";
    EXPECT_EQ(0, memcmp(m_raw_buf, "forged", 6));

    std::vector<char> buf(64);
    ASSERT_EQ(0, fi_recv(m_o.ep, buf.data(), buf.size(), NULL,
                         FI_ADDR_UNSPEC, buf.data()));
    m_peer.stream_start(1, 64, 2, false, bytes_of(m_self, 24));
    EXPECT_EQ(1u, received(3000)) << "the domain goes on";
    EXPECT_EQ(0, status = m_peer.echo_wait(m_o.rvcntr));
}

INSTANTIATE_TEST_SUITE_P(tls, admit, testing::ValuesIn(admit_params),
                         admit_name);

/* fi_getinfo with a job key in the hints offers it back, fi_domain opens
 * with it, a region takes only the domain's key */
TEST(fiprov_admit_info, auth_key_hint_is_told_back)
{
    struct fi_info *hints = hints_alloc(), *info = NULL;
    struct fid_fabric *fabric = NULL;
    struct fid_domain *domain = NULL;
    struct fid_mr *mr = NULL;
    struct fi_mr_attr attr = {};
    struct iovec iov;
    char buf[64];

    ASSERT_NE(nullptr, hints);
    hints->domain_attr->auth_key      = (uint8_t*)strdup(job_key);
    hints->domain_attr->auth_key_size = strlen(job_key);
    ASSERT_EQ(0, fi_getinfo(api_version, NULL, NULL, 0, hints, &info));
    for (struct fi_info *i = info; i != NULL; i = i->next) {
        ASSERT_EQ(strlen(job_key), i->domain_attr->auth_key_size);
        EXPECT_EQ(0, memcmp(job_key, i->domain_attr->auth_key,
                            strlen(job_key)));
    }
    ASSERT_EQ(0, fi_fabric(info->fabric_attr, &fabric, NULL));
    ASSERT_EQ(0, fi_domain(fabric, info, &domain, NULL));
    iov.iov_base       = buf;
    iov.iov_len        = sizeof(buf);
    attr.mr_iov        = &iov;
    attr.iov_count     = 1;
    attr.access        = FI_REMOTE_WRITE;
    attr.requested_key = 3;
    attr.auth_key      = (uint8_t*)other_key;
    attr.auth_key_size = strlen(other_key);
    EXPECT_EQ(-FI_EINVAL, fi_mr_regattr(domain, &attr, 0, &mr));
    attr.auth_key      = (uint8_t*)job_key;
    attr.auth_key_size = strlen(job_key);
    EXPECT_EQ(0, fi_mr_regattr(domain, &attr, 0, &mr));
    if (mr != NULL) {
        EXPECT_EQ(0, fi_close(&mr->fid));
    }
    EXPECT_EQ(0, fi_close(&domain->fid));
    EXPECT_EQ(0, fi_close(&fabric->fid));
    fi_freeinfo(info);
    /* longer than the provider takes: no offer */
    free(hints->domain_attr->auth_key);
    hints->domain_attr->auth_key      = (uint8_t*)calloc(1, 8192);
    hints->domain_attr->auth_key_size = 8192;
    info = NULL;
    EXPECT_EQ(-FI_ENODATA, fi_getinfo(api_version, NULL, NULL, 0, hints,
                                      &info));
    fi_freeinfo(info);
    fi_freeinfo(hints);
}
