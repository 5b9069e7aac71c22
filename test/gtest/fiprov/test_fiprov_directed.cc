/**
 * Directed receives and sources with three processes: this one and two
 * peers (fiprov_peer.h), each sending a stream of numbered messages to this
 * process's FI_DIRECTED_RECV | FI_SOURCE endpoint, untagged or tagged,
 * small (eager) and large (rendezvous), before the receives are posted (the
 * unexpected queue) and after. The receives are posted in a fixed pattern
 * of receives for one peer, for the other and for any source; the check is
 * a model computed here: a receive for a peer holds only that peer's
 * messages, each peer's messages fill the receives that took them in the
 * order of their posting and of their numbers, every receive's FI_SOURCE
 * address is the sender's entry in the address vector, and every byte is
 * the sender's. A domain that sends to itself (FI_LOCAL_COMM) gets its own
 * entry as the source, and only receives directed to it or to any source
 * take those messages; two endpoints of one domain are told apart.
 */
#include "fiprov_peer.h"
#include "fiprov_wait.h"

#include <rdma/fi_tagged.h>

#include <string.h>
#include <time.h>

#include <map>

using namespace fiprov_test;

namespace {

/* messages per peer and stream */
const uint64_t stream_len = 16;

class directed3p : public peer_test {
protected:
    uint64_t caps() const override
    {
        return FI_MSG | FI_TAGGED | FI_DIRECTED_RECV | FI_SOURCE;
    }

    enum fi_cq_format cq_format() const override
    {
        return FI_CQ_FORMAT_TAGGED;
    }

    void SetUp() override
    {
        open_params p;

        peer_test::SetUp();
        if (HasFatalFailure()) {
            return;
        }
        p.progress  = GetParam().progress;
        p.prov_keys = GetParam().prov_keys;
        p.caps      = caps();
        p.cq_format = cq_format();
        m_peer2.start(p);
        ASSERT_FALSE(HasFatalFailure());
        ASSERT_EQ(1, fi_av_insert(m_o.av, m_peer2.addr.data(), 1, &m_dest2,
                                  0, NULL));
        size_t len = sizeof(m_self);
        ASSERT_EQ(0, fi_getname(&m_o.ep->fid, m_self, &len));
        m_self_len = len;
    }

    void TearDown() override
    {
        peer_test::TearDown();
        EXPECT_EQ(0, m_peer2.stop()) << "the second peer's exit status";
    }

    std::vector<uint8_t> m_self_vec() const
    {
        return std::vector<uint8_t>(m_self, m_self + m_self_len);
    }

    /* the next receive entry and its source, bounded (the entries of this
     * side's own sends skipped) */
    void next(struct fi_cq_tagged_entry *e, fi_addr_t *src)
    {
        int64_t deadline = now_ms() + peer_wait_ms;
        ssize_t n;

        do {
            while ((n = fi_cq_readfrom(m_o.cq, e, 1, src)) == -FI_EAGAIN) {
                ASSERT_LT(now_ms(), deadline) << "no receive completed";
            }
            ASSERT_EQ(1, n) << "an error entry";
        } while (e->flags & FI_SEND);
        ASSERT_TRUE(e->flags & FI_RECV);
    }

    /* wait until the fence of `from`'s stream is here (a directed peek
     * finds it), so that the stream waits whole in the unexpected queue */
    void wait_fence(fi_addr_t from)
    {
        int64_t deadline = now_ms() + peer_wait_ms;
        struct fi_cq_tagged_entry e;
        struct fi_cq_err_entry err;
        struct fi_msg_tagged msg = {};
        ssize_t n;

        msg.addr   = from;
        msg.tag    = stream_fence;
        for (;;) {
            msg.context = &msg;
            ASSERT_EQ(0, fi_trecvmsg(m_o.ep, &msg, FI_PEEK));
            while ((n = fi_cq_read(m_o.cq, &e, 1)) == -FI_EAGAIN) {
                ASSERT_LT(now_ms(), deadline);
            }
            if (n == 1) {
                EXPECT_EQ(stream_fence, e.tag);
                return;
            }
            ASSERT_EQ(-FI_EAVAIL, n);
            memset(&err, 0, sizeof(err));
            ASSERT_EQ(1, fi_cq_readerr(m_o.cq, &err, 0));
            ASSERT_EQ(FI_ENOMSG, err.err);
            ASSERT_LT(now_ms(), deadline) << "the stream did not arrive";
        }
    }

    /* take the fence of `from`'s stream */
    void take_fence(fi_addr_t from)
    {
        uint64_t id = 0;
        struct fi_cq_tagged_entry e;
        fi_addr_t src;

        ASSERT_EQ(0, fi_trecv(m_o.ep, &id, 8, NULL, from, stream_fence, 0,
                              &id));
        next(&e, &src);
        EXPECT_EQ((void*)&id, e.op_context);
        EXPECT_EQ(from, src);
    }

    /* one round: both peers send a stream of `size`-byte messages; the
     * receives are posted after they arrived (`unexpected`) or before */
    void round(bool tagged, uint64_t size, bool unexpected);

    peer       m_peer2;
    fi_addr_t  m_dest2 = FI_ADDR_UNSPEC;
    uint8_t    m_self[64];
    size_t     m_self_len = 0;
};

void directed3p::round(bool tagged, uint64_t size, bool unexpected)
{
    /* seeds 1 and 2 name the peers in the messages */
    const fi_addr_t a = m_dest, b = m_dest2, any = FI_ADDR_UNSPEC;
    std::map<uint32_t, fi_addr_t> source = {{1, a}, {2, b}};
    std::vector<fi_addr_t> pattern;
    std::vector<std::vector<uint8_t>> bufs;
    std::map<void*, size_t> index;
    std::vector<struct fi_cq_tagged_entry> got;
    std::vector<fi_addr_t> got_src;
    std::map<fi_addr_t, uint64_t> next_of;

    /* a receive for any source never takes a message that a receive for a
     * peer posted after it then lacks: per peer, the receives for any
     * source before its last directed one and its directed ones are at
     * most its stream (4 + 8 of 16) */
    pattern.insert(pattern.end(), 5, b);
    pattern.insert(pattern.end(), 5, a);
    pattern.insert(pattern.end(), 4, any);
    pattern.insert(pattern.end(), 3, a);
    pattern.insert(pattern.end(), 3, b);
    pattern.insert(pattern.end(), 2 * stream_len - 20, any);
    bufs.resize(pattern.size());
    got.resize(pattern.size());
    got_src.resize(pattern.size(), FI_ADDR_UNSPEC);

    auto send = [&]() {
        m_peer.stream_start(stream_len, size, 1, tagged, m_self_vec());
        m_peer2.stream_start(stream_len, size, 2, tagged, m_self_vec());
        ASSERT_EQ(0, m_peer.echo_wait(m_o.rcntr));
        ASSERT_EQ(0, m_peer2.echo_wait(m_o.rcntr));
    };
    if (unexpected) {
        send();
        ASSERT_FALSE(HasFatalFailure());
        wait_fence(a);
        wait_fence(b);
        ASSERT_FALSE(HasFatalFailure());
    }
    for (size_t r = 0; r < pattern.size(); ++r) {
        bufs[r].assign(size, 0);
        index[&bufs[r]] = r;
        if (tagged) {
            ASSERT_EQ(0, fi_trecv(m_o.ep, bufs[r].data(), size, NULL,
                                  pattern[r], 0x7000, 0xfff, &bufs[r]));
        } else {
            ASSERT_EQ(0, fi_recv(m_o.ep, bufs[r].data(), size, NULL,
                                 pattern[r], &bufs[r]));
        }
    }
    if (!unexpected) {
        send();
        ASSERT_FALSE(HasFatalFailure());
    }
    for (size_t n = 0; n < pattern.size(); ++n) {
        struct fi_cq_tagged_entry e;
        fi_addr_t src;

        next(&e, &src);
        ASSERT_FALSE(HasFatalFailure());
        ASSERT_EQ(1u, index.count(e.op_context));
        got[index[e.op_context]]     = e;
        got_src[index[e.op_context]] = src;
    }
    take_fence(a);
    take_fence(b);

    /* the model: in posting order, each receive holds the next message of
     * the peer it names, or of some peer for any source */
    for (size_t r = 0; r < pattern.size(); ++r) {
        uint64_t id;
        uint32_t seed;
        uint64_t i;

        ASSERT_EQ(size, got[r].len) << "receive " << r;
        memcpy(&id, bufs[r].data(), 8);
        seed = (uint32_t)(id >> 32);
        i    = id & 0xffffffffu;
        ASSERT_EQ(1u, source.count(seed)) << "receive " << r;
        fi_addr_t from = source[seed];
        if (pattern[r] != any) {
            EXPECT_EQ(pattern[r], from)
                << "receive " << r << " for one peer holds the other's";
        }
        EXPECT_EQ(from, got_src[r]) << "receive " << r << "'s FI_SOURCE";
        EXPECT_EQ(next_of[from]++, i) << "receive " << r << " out of order";
        if (tagged) {
            EXPECT_EQ(stream_tag(i), got[r].tag);
        }
        for (uint64_t k = 8; k < size; ++k) {
            if (bufs[r][k] != stream_byte(seed, i, k)) {
                ADD_FAILURE() << "receive " << r << " byte " << k;
                break;
            }
        }
    }
    EXPECT_EQ(stream_len, next_of[a]);
    EXPECT_EQ(stream_len, next_of[b]);
}

TEST_P(directed3p, untagged_receives_take_their_sources_messages)
{
    for (uint64_t size : {200ul, 100000ul}) {
        for (bool unexpected : {true, false}) {
            SCOPED_TRACE(std::to_string(size) +
                         (unexpected ? " unexpected" : " posted"));
            round(false, size, unexpected);
            ASSERT_FALSE(HasFatalFailure());
        }
    }
}

TEST_P(directed3p, tagged_receives_take_their_sources_messages)
{
    for (uint64_t size : {200ul, 100000ul}) {
        for (bool unexpected : {true, false}) {
            SCOPED_TRACE(std::to_string(size) +
                         (unexpected ? " unexpected" : " posted"));
            round(true, size, unexpected);
            ASSERT_FALSE(HasFatalFailure());
        }
    }
}

/* FI_LOCAL_COMM: the endpoint sends to itself; the source is its own
 * entry, and a receive for a peer does not take those messages */
TEST_P(directed3p, messages_to_itself_name_its_own_entry)
{
    fi_addr_t self;
    char for_a[16] = {}, mine[2][16] = {};
    struct fi_cq_tagged_entry e;
    fi_addr_t src;
    uint8_t bytes[64];
    size_t len = sizeof(bytes);

    ASSERT_EQ(1, fi_av_insert(m_o.av, m_self, 1, &self, 0, NULL));
    ASSERT_EQ(0, fi_recv(m_o.ep, for_a, sizeof(for_a), NULL, m_dest, for_a));
    ASSERT_EQ(0, fi_recv(m_o.ep, mine[0], sizeof(mine[0]), NULL, self,
                         mine[0]));
    ASSERT_EQ(0, fi_recv(m_o.ep, mine[1], sizeof(mine[1]), NULL,
                         FI_ADDR_UNSPEC, mine[1]));
    ASSERT_EQ(0, fi_send(m_o.ep, "first", 5, NULL, self, NULL));
    ASSERT_EQ(0, fi_send(m_o.ep, "second", 6, NULL, self, NULL));
    for (int n = 0; n < 2; ++n) {
        next(&e, &src);
        ASSERT_FALSE(HasFatalFailure());
        EXPECT_EQ(self, src);
        if (e.op_context == mine[0]) {
            EXPECT_EQ("first", std::string(mine[0], e.len));
        } else {
            EXPECT_EQ((void*)mine[1], e.op_context);
            EXPECT_EQ("second", std::string(mine[1], e.len));
        }
    }
    ASSERT_EQ(0, fi_av_lookup(m_o.av, src, bytes, &len));
    ASSERT_EQ(m_self_len, len);
    EXPECT_EQ(0, memcmp(bytes, m_self, len));
    /* the receive for the first peer took nothing of them: the first
     * peer's stream fills it */
    m_peer.stream_start(1, 8, 1, false, m_self_vec());
    ASSERT_EQ(0, m_peer.echo_wait(m_o.rcntr));
    next(&e, &src);
    ASSERT_FALSE(HasFatalFailure());
    EXPECT_EQ((void*)for_a, e.op_context);
    EXPECT_EQ(m_dest, src);
    take_fence(m_dest);
}

/* FI_LOCAL_COMM between two endpoints of one domain (one connection, two
 * senders): each message's source is its own endpoint's entry, and a
 * receive for one endpoint does not take the other's message */
TEST_P(directed3p, endpoints_of_one_domain_are_told_apart)
{
    struct fid_ep *ep2 = NULL;
    struct fid_cntr *sent2 = NULL;
    fi_addr_t self, other;
    char from_other[16] = {}, from_self[16] = {};
    struct fi_cq_tagged_entry e;
    fi_addr_t src;

    ASSERT_EQ(1, fi_av_insert(m_o.av, m_self, 1, &self, 0, NULL));
    open_sibling_ep(m_o, &ep2, &sent2, &other);
    ASSERT_FALSE(HasFatalFailure());

    /* the receive for the other endpoint first: its own message, sent
     * first, must pass it by */
    ASSERT_EQ(0, fi_recv(m_o.ep, from_other, sizeof(from_other), NULL, other,
                         from_other));
    ASSERT_EQ(0, fi_recv(m_o.ep, from_self, sizeof(from_self), NULL, self,
                         from_self));
    ASSERT_EQ(0, fi_send(m_o.ep, "mine", 4, NULL, self, NULL));
    ASSERT_EQ(0, fi_send(ep2, "other", 5, NULL, self, NULL));
    for (int n = 0; n < 2; ++n) {
        next(&e, &src);
        ASSERT_FALSE(HasFatalFailure());
        if (e.op_context == from_self) {
            EXPECT_EQ("mine", std::string(from_self, e.len));
            EXPECT_EQ(self, src);
        } else {
            EXPECT_EQ((void*)from_other, e.op_context);
            EXPECT_EQ("other", std::string(from_other, e.len));
            EXPECT_EQ(other, src);
        }
    }
    EXPECT_EQ(0, fi_cntr_wait(sent2, 1, peer_wait_ms));
    EXPECT_EQ(0, fi_close(&ep2->fid));
    EXPECT_EQ(0, fi_close(&sent2->fid));
}

INSTANTIATE_TEST_SUITE_P(tls, directed3p, testing::ValuesIn(peer_params),
                         peer_param_name);

} // namespace
