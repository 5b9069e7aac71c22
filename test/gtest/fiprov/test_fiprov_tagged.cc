/**
 * Tagged messages through the provider (fi_tagged(3)), over the libfabric
 * API only. Between two processes (the instantiations of fiprov_peer.h),
 * the peer echoing every tagged message back with its tag: ping-pong of
 * 0 B to 1 MiB in every call form (tags, bytes, remote CQ data and the
 * FI_SEND/FI_RECV counters checked), matching with and without ignore
 * bits against a reference model of fi_tagged(3) computed here (which
 * receive each message must fill, receives posted before the messages and
 * after them), and truncation (FI_ETRUNC, olen, the tag). In one process,
 * an endpoint sending to itself: tagged and untagged messages never match
 * each other, unexpected tagged messages taken by later receives and
 * capped with the untagged ones (1024 per endpoint together), FI_PEEK
 * (a waiting message's length, tag and data without taking it, else
 * FI_ENOMSG), input refused (-FI_EINVAL), and endpoints without FI_TAGGED
 * or FI_MSG (-FI_ENOSYS).
 */
#include "fiprov_msg_fixture.h"

#include <rdma/fi_tagged.h>

#include <string.h>
#include <time.h>

#include <algorithm>
#include <deque>
#include <random>

using namespace fiprov_test;

namespace {

/* the provider's limits, as fi_fiatomic(7) states them */
const size_t msg_max    = (size_t)4 << 20;
const size_t inject_max = 64;
const size_t ux_max     = 1024;

std::vector<uint8_t> pattern(size_t len, uint8_t seed)
{
    std::vector<uint8_t> v(len);

    for (size_t i = 0; i < len; ++i) {
        v[i] = (uint8_t)(seed + i * 11 + (i >> 10));
    }
    return v;
}

/*
 * fi_tagged(3)'s matching, for the test to compute what the provider must
 * do: a message fills the oldest posted receive whose tag equals the
 * message's in the bits the receive does not ignore, else it waits; a
 * receive takes the oldest waiting message it matches, else it stays
 * posted. Receives and messages are numbered in the order of their posting
 * and arrival.
 */
class match_model {
public:
    struct recv {
        uint64_t tag;
        uint64_t ignore;
        int      msg;   /* the message it holds, -1: none */
    };

    static bool matches(const recv &r, uint64_t tag)
    {
        /* the bits not ignored, compared one by one */
        for (int b = 0; b < 64; ++b) {
            uint64_t bit = (uint64_t)1 << b;
            if (!(r.ignore & bit) && ((r.tag & bit) != (tag & bit))) {
                return false;
            }
        }
        return true;
    }

    size_t post(uint64_t tag, uint64_t ignore)
    {
        size_t r = recvs.size();

        recvs.push_back({tag, ignore, -1});
        for (auto it = m_waiting.begin(); it != m_waiting.end(); ++it) {
            if (matches(recvs[r], tags[*it])) {
                recvs[r].msg = *it;
                m_waiting.erase(it);
                return r;
            }
        }
        m_posted.push_back(r);
        return r;
    }

    void arrive(uint64_t tag)
    {
        int m = (int)tags.size();

        tags.push_back(tag);
        for (auto it = m_posted.begin(); it != m_posted.end(); ++it) {
            if (matches(recvs[*it], tag)) {
                recvs[*it].msg = m;
                m_posted.erase(it);
                return;
            }
        }
        m_waiting.push_back(m);
    }

    size_t filled() const
    {
        size_t n = 0;

        for (const recv &r : recvs) {
            n += (r.msg >= 0);
        }
        return n;
    }

    std::vector<recv>     recvs;
    std::vector<uint64_t> tags;   /* of each message */

private:
    std::deque<size_t>    m_posted;
    std::deque<int>       m_waiting;
};

class tagged2p : public msg_peer_test {
protected:
    uint64_t caps() const override
    {
        return FI_ATOMIC | FI_RMA | FI_TAGGED;
    }

    enum fi_cq_format cq_format() const override
    {
        return FI_CQ_FORMAT_TAGGED;
    }
};

/* one tagged message of each size out and back, each in another call form
 * (send and receive), each with a tag of its own received exactly; the
 * echo carries the tag back, and remote CQ data one higher */
TEST_P(tagged2p, ping_pong_0b_to_1mib_every_form)
{
    enum { T_SEND, T_SENDV, T_SENDMSG, T_INJECT, T_SENDDATA, T_INJECTDATA,
           T_SENDMSG_DATA };
    enum { R_RECV, R_RECVV, R_RECVMSG };
    static const struct {
        size_t len;
        int    send;
        int    recv;
    } cases[] = {
        {0, T_SEND, R_RECV},          {1, T_INJECT, R_RECVV},
        {8, T_INJECTDATA, R_RECVMSG}, {64, T_SENDDATA, R_RECV},
        {4096, T_SENDV, R_RECVMSG},   {65536, T_SENDMSG, R_RECVV},
        {1 << 20, T_SEND, R_RECV},    {1 << 20, T_SENDMSG_DATA, R_RECVMSG},
    };
    const size_t n = sizeof(cases) / sizeof(cases[0]);
    size_t sends_with_entry = 0, with_data = 0;

    m_peer.tagged_echo_start(n, 1 << 20, m_self);
    for (size_t i = 0; i < n; ++i) {
        const size_t len   = cases[i].len;
        const uint64_t tag = 0xa5c3000000000000ull | (i << 20) | i;
        const uint64_t data = 5000 + i;
        std::vector<uint8_t> out = pattern(len, (uint8_t)i);
        std::vector<uint8_t> in(len + 16, 0xee);
        struct iovec siov[3], riov[2];
        struct fi_msg_tagged rmsg = {}, smsg = {};
        bool sent_entry = true, has_data = false;

        split_iov(out, in, siov, riov);
        rmsg.msg_iov   = riov;
        rmsg.iov_count = 2;
        rmsg.addr      = FI_ADDR_UNSPEC;
        rmsg.tag       = tag;
        rmsg.context   = &in;
        switch (cases[i].recv) {
        case R_RECV:
            ASSERT_EQ(0, fi_trecv(m_o.ep, in.data(), len + 16, NULL,
                                  FI_ADDR_UNSPEC, tag, 0, &in));
            break;
        case R_RECVV:
            ASSERT_EQ(0, fi_trecvv(m_o.ep, riov, NULL, 2, FI_ADDR_UNSPEC,
                                   tag, 0, &in));
            break;
        default:
            ASSERT_EQ(0, fi_trecvmsg(m_o.ep, &rmsg, 0));
            break;
        }
        smsg.msg_iov   = siov;
        smsg.iov_count = 3;
        smsg.addr      = m_dest;
        smsg.tag       = tag;
        smsg.context   = &out;
        smsg.data      = data;
        switch (cases[i].send) {
        case T_SEND:
            ASSERT_EQ(0, fi_tsend(m_o.ep, out.data(), len, NULL, m_dest, tag,
                                  &out));
            break;
        case T_SENDV:
            ASSERT_EQ(0, fi_tsendv(m_o.ep, siov, NULL, 3, m_dest, tag,
                                   &out));
            break;
        case T_SENDMSG:
            ASSERT_EQ(0, fi_tsendmsg(m_o.ep, &smsg,
                                     FI_COMPLETION | FI_DELIVERY_COMPLETE));
            break;
        case T_INJECT:
            ASSERT_EQ(0, fi_tinject(m_o.ep, out.data(), len, m_dest, tag));
            sent_entry = false;
            break;
        case T_SENDDATA:
            ASSERT_EQ(0, fi_tsenddata(m_o.ep, out.data(), len, NULL, data,
                                      m_dest, tag, &out));
            has_data = true;
            break;
        case T_INJECTDATA:
            ASSERT_EQ(0, fi_tinjectdata(m_o.ep, out.data(), len, data,
                                        m_dest, tag));
            sent_entry = false;
            has_data   = true;
            break;
        default:
            ASSERT_EQ(0, fi_tsendmsg(m_o.ep, &smsg,
                                     FI_COMPLETION | FI_REMOTE_CQ_DATA));
            has_data = true;
            break;
        }
        sends_with_entry += sent_entry;
        with_data        += has_data;

        /* the send's entry and the echo's, in either order */
        struct fi_cq_tagged_entry e, rx = {};
        bool received = false;
        while (!received || sent_entry) {
            struct fi_cq_err_entry err;
            ASSERT_EQ(1, next_entry(m_o.cq, &e, &err))
                << "case " << i << ": error entry " << err.err << " "
                << fi_strerror(err.err);
            ASSERT_TRUE(e.flags & FI_TAGGED) << std::hex << e.flags;
            ASSERT_FALSE(e.flags & FI_MSG) << std::hex << e.flags;
            if (e.flags & FI_SEND) {
                ASSERT_TRUE(sent_entry) << "a second entry for the send";
                EXPECT_EQ((void*)&out, e.op_context);
                sent_entry = false;
                continue;
            }
            ASSERT_TRUE(e.flags & FI_RECV);
            ASSERT_FALSE(received) << "a second receive entry";
            rx       = e;
            received = true;
        }
        EXPECT_EQ((void*)&in, rx.op_context) << i;
        EXPECT_EQ(tag, rx.tag) << i;
        EXPECT_EQ(len, rx.len) << i;
        if (has_data) {
            EXPECT_TRUE(rx.flags & FI_REMOTE_CQ_DATA) << i;
            EXPECT_EQ(data + 1, rx.data) << i;
        } else {
            EXPECT_FALSE(rx.flags & FI_REMOTE_CQ_DATA) << i;
        }
        EXPECT_TRUE(std::equal(out.begin(), out.end(), in.begin()))
            << "case " << i << ": " << len << " bytes differ";
        EXPECT_EQ(0xee, in[len]) << "written past the message";
    }
    EXPECT_EQ(0, m_peer.echo_wait(m_o.rcntr));
    EXPECT_EQ(n - 2, sends_with_entry);
    EXPECT_EQ(3u, with_data);
    /* every send counted, the injects included; every receive */
    expect_msg_counters(m_o, n);
}

/*
 * Receives with and without ignore bits, posted before the messages and
 * after them, filled as the reference model says: the peer echoes the
 * messages in the order sent; a last message with a tag bit no other has
 * fills a receive of its own once all before it have been matched or
 * queued, and only then are the later receives posted. A message's bytes
 * name it (its number), so each receive's content shows which message
 * filled it; eager and rendezvous sizes mixed.
 */
TEST_P(tagged2p, matching_follows_the_reference_model)
{
    const uint64_t fence_bit = (uint64_t)1 << 62;
    const size_t first = 16, msgs = 48, later = 20, big = 200000;
    std::mt19937_64 rng(20261126);
    static const uint64_t ignores[] = {0, 0x3, 0x3ull << 32,
                                       0x3 | (0x3ull << 32),
                                       ~fence_bit, 0xffffffffull};
    match_model model;
    std::vector<uint64_t> rtags, rignores;
    auto random_tag = [&rng]() {
        return (rng() % 4) | ((rng() % 3) << 32) |
               ((rng() % 4 == 0) ? ((uint64_t)1 << 63) : 0);
    };

    /* the receives and messages, drawn; the fence's receive is the last
     * of the first ones */
    for (size_t r = 0; r < first + later; ++r) {
        rtags.push_back(random_tag());
        rignores.push_back(ignores[rng() % 6]);
    }
    std::vector<uint64_t> mtags;
    for (size_t m = 0; m < msgs; ++m) {
        mtags.push_back(random_tag());
    }

    /* buffers: a receive of `big` bytes each; receive contexts are their
     * numbers' places in rbuf */
    std::vector<std::vector<uint8_t>> rbuf(first + later + 1);
    for (auto &b : rbuf) {
        b.assign(big, 0);
    }
    for (size_t r = 0; r < first; ++r) {
        model.post(rtags[r], rignores[r]);
        ASSERT_EQ(0, fi_trecv(m_o.ep, rbuf[r].data(), big, NULL,
                              FI_ADDR_UNSPEC, rtags[r], rignores[r],
                              &rbuf[r]));
    }
    const size_t fence = first + later;
    ASSERT_EQ(0, fi_trecv(m_o.ep, rbuf[fence].data(), big, NULL,
                          FI_ADDR_UNSPEC, fence_bit, 0, &rbuf[fence]));

    /* the messages, echoed in order by the peer, then the fence */
    std::vector<std::vector<uint8_t>> out(msgs + 1);
    m_peer.tagged_echo_start(msgs + 1, big, m_self);
    for (size_t m = 0; m <= msgs; ++m) {
        uint64_t num = m;
        size_t len   = ((m % 7) == 3) ? big : 16;

        out[m] = pattern(len, (uint8_t)m);
        memcpy(out[m].data(), &num, 8);
        ASSERT_EQ(0, fi_tsend(m_o.ep, out[m].data(), len, NULL, m_dest,
                              (m < msgs) ? mtags[m] : fence_bit, NULL));
        if (m < msgs) {
            model.arrive(mtags[m]);
        }
    }

    /* receive entries until the fence's: every message has arrived */
    std::map<size_t, struct fi_cq_tagged_entry> filled;
    size_t sends = 0;
    auto take = [&](bool until_fence, size_t until_count) {
        struct fi_cq_tagged_entry e;
        struct fi_cq_err_entry err;

        for (;;) {
            if (!until_fence && (filled.size() >= until_count) &&
                (sends >= msgs + 1)) {
                return;
            }
            ssize_t ret = next_entry(m_o.cq, &e, &err);
            ASSERT_EQ(1, ret) << "error entry " << err.err << " "
                              << fi_strerror(err.err) << "; "
                              << filled.size() << " receives filled";
            ASSERT_TRUE(e.flags & FI_TAGGED);
            if (e.flags & FI_SEND) {
                ++sends;
                continue;
            }
            size_t r = (size_t)((std::vector<uint8_t>*)e.op_context -
                                rbuf.data());
            ASSERT_LT(r, rbuf.size());
            ASSERT_EQ(0u, filled.count(r)) << "receive " << r << " twice";
            filled[r] = e;
            if (until_fence && (r == fence)) {
                return;
            }
        }
    };
    take(true, 0);
    ASSERT_FALSE(HasFatalFailure());
    EXPECT_EQ(0, m_peer.echo_wait(m_o.rcntr));

    /* the later receives, after every message arrived */
    for (size_t r = first; r < first + later; ++r) {
        model.post(rtags[r], rignores[r]);
        ASSERT_EQ(0, fi_trecv(m_o.ep, rbuf[r].data(), big, NULL,
                              FI_ADDR_UNSPEC, rtags[r], rignores[r],
                              &rbuf[r]));
    }
    const size_t want = model.filled() + 1; /* and the fence's */
    take(false, want);
    ASSERT_FALSE(HasFatalFailure());
    /* nothing more completes */
    usleep(20000);
    struct fi_cq_tagged_entry extra;
    EXPECT_EQ(-FI_EAGAIN, fi_cq_read(m_o.cq, &extra, 1));

    /* each receive as the model says, and the model is not trivial: some
     * messages left waiting, some receives left posted, both phases
     * filling some */
    size_t waiting = msgs, early = 0, late = 0, masked = 0;
    for (size_t r = 0; r < first + later; ++r) {
        const int m = model.recvs[r].msg;
        if (m < 0) {
            EXPECT_EQ(0u, filled.count(r)) << "receive " << r
                                           << " filled; the model: none";
            continue;
        }
        --waiting;
        (r < first) ? ++early : ++late;
        masked += (mtags[m] != rtags[r]);
        ASSERT_EQ(1u, filled.count(r)) << "receive " << r << " not filled; "
                                       << "the model: message " << m;
        uint64_t num;
        memcpy(&num, rbuf[r].data(), 8);
        EXPECT_EQ((uint64_t)m, num) << "receive " << r << " (tag "
                                    << std::hex << rtags[r] << " ignore "
                                    << rignores[r] << ")";
        EXPECT_EQ(mtags[m], filled[r].tag) << "receive " << r;
        EXPECT_EQ(out[m].size(), filled[r].len) << "receive " << r;
        EXPECT_TRUE(std::equal(out[m].begin(), out[m].end(),
                               rbuf[r].begin())) << "receive " << r;
    }
    EXPECT_EQ(fence_bit, filled[fence].tag);
    EXPECT_GT(waiting, 0u);
    EXPECT_LT(model.filled(), first + later);
    EXPECT_GT(early, 0u);
    EXPECT_GT(late, 0u);
    EXPECT_GT(masked, 0u) << "no receive took another tag than its own";
    EXPECT_LT(masked, model.filled()) << "no exact match";
    EXPECT_EQ(msgs + 1, fi_cntr_read(m_o.scntr));
    EXPECT_EQ(want, fi_cntr_read(m_o.rvcntr));
}

/* a tagged message larger than its receive fills it and completes it in
 * error: FI_ETRUNC, olen the bytes cut off, the message's tag (eager and
 * rendezvous); ignore bits receive another tag than the receive's */
TEST_P(tagged2p, truncation_reports_etrunc_olen_and_the_tag)
{
    static const size_t sent[]  = {1000, 256 * 1024};
    static const size_t given[] = {100, 4096};
    struct fi_cq_tagged_entry e;
    struct fi_cq_err_entry err;

    m_peer.tagged_echo_start(2, 1 << 20, m_self);
    for (size_t i = 0; i < 2; ++i) {
        const uint64_t tag = 0x1234567800000000ull | (0x55 + i);
        std::vector<uint8_t> out = pattern(sent[i], (uint8_t)(7 * i));
        std::vector<uint8_t> in(given[i] + 8, 0xee);

        ASSERT_EQ(0, fi_trecv(m_o.ep, in.data(), given[i], NULL,
                              FI_ADDR_UNSPEC, tag & ~0xffull, 0xff, &in));
        ASSERT_EQ(0, fi_tsend(m_o.ep, out.data(), sent[i], NULL, m_dest,
                              tag, &out));
        ASSERT_NO_FATAL_FAILURE(expect_truncated_echo(
                m_o.cq, &e, out, in, given[i], FI_TAGGED,
                FI_TAGGED | FI_MSG, &err));
        EXPECT_EQ(tag, err.tag);
    }
    EXPECT_EQ(0, m_peer.echo_wait(m_o.rcntr));
    EXPECT_EQ(0u, fi_cntr_read(m_o.rvcntr));
    EXPECT_EQ(2u, fi_cntr_readerr(m_o.rvcntr));
    EXPECT_EQ(2u, fi_cntr_read(m_o.scntr));
}

INSTANTIATE_TEST_SUITE_P(tls, tagged2p, testing::ValuesIn(peer_params),
                         peer_param_name);

/* ---- one process: an endpoint that sends to itself ---------------------- */

class tagged1p : public self_ep_test {
protected:
    void open(uint64_t caps)
    {
        open_self(caps, FI_CQ_FORMAT_TAGGED);
    }

    /* the next entry, a success: its context */
    void *next(struct fi_cq_tagged_entry *e)
    {
        struct fi_cq_err_entry err;
        ssize_t n = next_entry(m_o.cq, e, &err);

        EXPECT_EQ(1, n) << "error entry " << err.err;
        return (n == 1) ? e->op_context : NULL;
    }

};

/* an untagged receive never takes a tagged message, nor a tagged receive
 * (one that ignores every bit included) an untagged one, whichever was
 * posted first; each waits for its own kind */
TEST_F(tagged1p, tagged_and_untagged_never_match)
{
    uint64_t untagged_in = 0, tagged_in = 0, m1 = 11, m2 = 22, m3 = 33;
    uint64_t late_in = 0;
    struct fi_cq_tagged_entry e;

    open(FI_MSG | FI_TAGGED);
    ASSERT_EQ(0, fi_recv(m_o.ep, &untagged_in, 8, NULL, FI_ADDR_UNSPEC,
                         &untagged_in));
    ASSERT_EQ(0, fi_tinject(m_o.ep, &m1, 8, m_self, 7));
    ASSERT_EQ(0, fi_trecv(m_o.ep, &tagged_in, 8, NULL, FI_ADDR_UNSPEC, 0,
                          ~0ull, &tagged_in));
    /* the tagged receive took the tagged message, though the untagged
     * receive was posted before either */
    ASSERT_EQ((void*)&tagged_in, next(&e));
    EXPECT_EQ((uint64_t)(FI_TAGGED | FI_RECV),
              e.flags & (FI_TAGGED | FI_MSG | FI_RECV | FI_SEND));
    EXPECT_EQ(7u, e.tag);
    EXPECT_EQ(11u, tagged_in);
    EXPECT_EQ(0u, untagged_in);

    /* a tagged receive that takes anything is posted before the untagged
     * message: the untagged receive gets it */
    ASSERT_EQ(0, fi_trecv(m_o.ep, &late_in, 8, NULL, FI_ADDR_UNSPEC, 0,
                          ~0ull, &late_in));
    ASSERT_EQ(0, fi_inject(m_o.ep, &m2, 8, m_self));
    ASSERT_EQ((void*)&untagged_in, next(&e));
    EXPECT_EQ((uint64_t)(FI_MSG | FI_RECV),
              e.flags & (FI_TAGGED | FI_MSG | FI_RECV | FI_SEND));
    EXPECT_EQ(0u, e.tag);
    EXPECT_EQ(22u, untagged_in);
    EXPECT_EQ(0u, late_in);

    /* an untagged message with only a tagged receive posted waits, and an
     * untagged receive posted later takes it */
    ASSERT_EQ(0, fi_inject(m_o.ep, &m3, 8, m_self));
    wait_cntr(m_o.scntr, 3);
    usleep(20000);
    EXPECT_EQ(-FI_EAGAIN, fi_cq_read(m_o.cq, &e, 1));
    EXPECT_EQ(0u, late_in);
    ASSERT_EQ(0, fi_recv(m_o.ep, &untagged_in, 8, NULL, FI_ADDR_UNSPEC,
                         &untagged_in));
    ASSERT_EQ((void*)&untagged_in, next(&e));
    EXPECT_EQ(33u, untagged_in);
    EXPECT_EQ(0u, late_in);
    EXPECT_EQ(3u, fi_cntr_read(m_o.rvcntr));
}

/* tagged messages that arrive before any receive wait; later receives take
 * the oldest one they match, and an exact receive passes over older ones
 * of other tags */
TEST_F(tagged1p, unexpected_tagged_messages_are_taken_by_later_receives)
{
    const uint64_t fence_bit = (uint64_t)1 << 40;
    uint64_t fence_in = 0, vals[6] = {100, 101, 102, 103, 104, 105};
    const uint64_t tags[6] = {1, 2, 1, 3, 2, 1};
    uint64_t in[6] = {};
    struct fi_cq_tagged_entry e;

    open(FI_TAGGED);
    ASSERT_EQ(0, fi_trecv(m_o.ep, &fence_in, 8, NULL, FI_ADDR_UNSPEC,
                          fence_bit, 0, &fence_in));
    for (size_t i = 0; i < 6; ++i) {
        ASSERT_EQ(0, fi_tinject(m_o.ep, &vals[i], 8, m_self, tags[i]));
    }
    ASSERT_EQ(0, fi_tinject(m_o.ep, &vals[0], 8, m_self, fence_bit));
    /* the fence came last: all six wait now */
    ASSERT_EQ((void*)&fence_in, next(&e));

    /* tag 2 exactly: messages 1 then 4; then tag 1 or 3 (ignore bit 1):
     * 0, 2, 3, 5 in order */
    ASSERT_EQ(0, fi_trecv(m_o.ep, &in[0], 8, NULL, FI_ADDR_UNSPEC, 2, 0,
                          &in[0]));
    ASSERT_EQ((void*)&in[0], next(&e));
    EXPECT_EQ(101u, in[0]);
    EXPECT_EQ(2u, e.tag);
    ASSERT_EQ(0, fi_trecv(m_o.ep, &in[1], 8, NULL, FI_ADDR_UNSPEC, 2, 0,
                          &in[1]));
    ASSERT_EQ((void*)&in[1], next(&e));
    EXPECT_EQ(104u, in[1]);
    const uint64_t want[] = {100, 102, 103, 105};
    const uint64_t want_tag[] = {1, 1, 3, 1};
    for (size_t i = 0; i < 4; ++i) {
        ASSERT_EQ(0, fi_trecv(m_o.ep, &in[2 + i], 8, NULL, FI_ADDR_UNSPEC,
                              1, 2, &in[2 + i]));
        ASSERT_EQ((void*)&in[2 + i], next(&e));
        EXPECT_EQ(want[i], in[2 + i]) << i;
        EXPECT_EQ(want_tag[i], e.tag) << i;
    }
    /* none left: a receive for any tag stays posted */
    uint64_t none = 0;
    ASSERT_EQ(0, fi_trecv(m_o.ep, &none, 8, NULL, FI_ADDR_UNSPEC, 0, ~0ull,
                          &none));
    usleep(20000);
    EXPECT_EQ(-FI_EAGAIN, fi_cq_read(m_o.cq, &e, 1));
    EXPECT_EQ(7u, fi_cntr_read(m_o.rvcntr));
}

/* the cap on waiting messages counts both kinds together: with untagged
 * messages filling all but two places, two tagged messages wait and the
 * next ones are dropped and counted as errors of the FI_RECV counter */
TEST_F(tagged1p, unexpected_cap_is_shared_with_untagged_messages)
{
    const size_t untagged = ux_max - 2, tagged = 5;
    struct fi_cq_tagged_entry e;
    uint64_t v;

    open(FI_MSG | FI_TAGGED);
    for (v = 0; v < untagged; ++v) {
        ASSERT_EQ(0, fi_inject(m_o.ep, &v, 8, m_self));
    }
    for (v = 0; v < tagged; ++v) {
        ASSERT_EQ(0, fi_tinject(m_o.ep, &v, 8, m_self, 9));
    }
    wait_cntr(m_o.scntr, untagged + tagged);
    int64_t deadline = now_ms() + peer_wait_ms;
    while ((fi_cntr_readerr(m_o.rvcntr) < tagged - 2) &&
           (now_ms() < deadline)) {
        (void)fi_cntr_read(m_o.rvcntr);
    }
    EXPECT_EQ(tagged - 2, fi_cntr_readerr(m_o.rvcntr));
    std::vector<uint64_t> in(2, ~0ull);
    for (size_t i = 0; i < 2; ++i) {
        ASSERT_EQ(0, fi_trecv(m_o.ep, &in[i], 8, NULL, FI_ADDR_UNSPEC, 9, 0,
                              &in[i]));
        ASSERT_EQ((void*)&in[i], next(&e));
        EXPECT_EQ(i, in[i]) << "the tagged messages kept are the first";
    }
    /* a place is free again: the next tagged message waits */
    v = 100;
    ASSERT_EQ(0, fi_tinject(m_o.ep, &v, 8, m_self, 9));
    uint64_t last = 0;
    ASSERT_EQ(0, fi_trecv(m_o.ep, &last, 8, NULL, FI_ADDR_UNSPEC, 9, 0,
                          &last));
    ASSERT_EQ((void*)&last, next(&e));
    EXPECT_EQ(100u, last);
    EXPECT_EQ(tagged - 2, fi_cntr_readerr(m_o.rvcntr));
}

/* FI_PEEK reports the oldest waiting message a tagged receive matches,
 * leaving it there: an entry with its length, tag and remote CQ data and
 * the peek's context, the peek's buffer untouched and nothing counted; no
 * such message: an FI_ENOMSG error entry. The message is then received as
 * if never peeked at. An untagged peek is refused. */
TEST_F(tagged1p, peek_reports_a_waiting_message_without_taking_it)
{
    const uint64_t fence_bit = (uint64_t)1 << 40;
    char one[5] = "abcd", two[9] = "efghijkl", fence_in[8], peek_buf[16];
    char got[16] = {};
    struct fi_cq_tagged_entry e;
    struct iovec iov = {peek_buf, sizeof(peek_buf)};
    struct fi_msg_tagged msg = {};
    int ctx[3];

    open(FI_MSG | FI_TAGGED);
    memset(peek_buf, 0x5a, sizeof(peek_buf));
    ASSERT_EQ(0, fi_trecv(m_o.ep, fence_in, sizeof(fence_in), NULL,
                          FI_ADDR_UNSPEC, fence_bit, 0, fence_in));
    ASSERT_EQ(0, fi_tinjectdata(m_o.ep, one, 5, 77, m_self, 0x101));
    ASSERT_EQ(0, fi_tinject(m_o.ep, two, 9, m_self, 0x102));
    ASSERT_EQ(0, fi_tinject(m_o.ep, one, 1, m_self, fence_bit));
    ASSERT_EQ((void*)fence_in, next(&e));

    msg.msg_iov   = &iov;
    msg.iov_count = 1;
    msg.addr      = FI_ADDR_UNSPEC;
    /* tag 0x102 exactly: the second message */
    msg.tag     = 0x102;
    msg.context = &ctx[0];
    ASSERT_EQ(0, fi_trecvmsg(m_o.ep, &msg, FI_PEEK));
    ASSERT_EQ((void*)&ctx[0], next(&e));
    EXPECT_EQ((uint64_t)(FI_TAGGED | FI_RECV),
              e.flags & (FI_TAGGED | FI_MSG | FI_RECV | FI_REMOTE_CQ_DATA));
    EXPECT_EQ(9u, e.len);
    EXPECT_EQ(0x102u, e.tag);
    /* any of 0x10x: the oldest, with its data */
    msg.tag     = 0x100;
    msg.ignore  = 0xf;
    msg.context = &ctx[1];
    ASSERT_EQ(0, fi_trecvmsg(m_o.ep, &msg, FI_PEEK));
    ASSERT_EQ((void*)&ctx[1], next(&e));
    EXPECT_EQ(5u, e.len);
    EXPECT_EQ(0x101u, e.tag);
    EXPECT_TRUE(e.flags & FI_REMOTE_CQ_DATA);
    EXPECT_EQ(77u, e.data);
    /* none of tag 0x103 */
    msg.tag     = 0x103;
    msg.ignore  = 0;
    msg.context = &ctx[2];
    ASSERT_EQ(0, fi_trecvmsg(m_o.ep, &msg, FI_PEEK));
    struct fi_cq_err_entry perr;
    ASSERT_EQ(-FI_EAVAIL, next_entry(m_o.cq, &e, &perr));
    EXPECT_EQ(FI_ENOMSG, perr.err);
    EXPECT_EQ((void*)&ctx[2], perr.op_context);
    EXPECT_EQ((uint64_t)(FI_TAGGED | FI_RECV),
              perr.flags & (FI_TAGGED | FI_MSG | FI_RECV));
    for (char c : peek_buf) {
        ASSERT_EQ(0x5a, c) << "a peek wrote its buffer";
    }
    EXPECT_EQ(1u, fi_cntr_read(m_o.rvcntr)) << "a peek was counted";
    EXPECT_EQ(0u, fi_cntr_readerr(m_o.rvcntr)) << "a peek was counted";

    /* both still wait: received whole */
    ASSERT_EQ(0, fi_trecv(m_o.ep, got, sizeof(got), NULL, FI_ADDR_UNSPEC,
                          0x102, 0, got));
    ASSERT_EQ((void*)got, next(&e));
    EXPECT_STREQ("efghijkl", got);
    ASSERT_EQ(0, fi_trecv(m_o.ep, got, sizeof(got), NULL, FI_ADDR_UNSPEC,
                          0x101, 0, got));
    ASSERT_EQ((void*)got, next(&e));
    EXPECT_STREQ("abcd", got);
    EXPECT_EQ(77u, e.data);
    EXPECT_EQ(3u, fi_cntr_read(m_o.rvcntr));

    /* FI_PEEK is a tagged flag */
    struct fi_msg umsg = {};
    umsg.msg_iov   = &iov;
    umsg.iov_count = 1;
    umsg.addr      = FI_ADDR_UNSPEC;
    EXPECT_EQ(-FI_EINVAL, fi_recvmsg(m_o.ep, &umsg, FI_PEEK));
}

TEST_F(tagged1p, bad_input_is_refused)
{
    std::vector<uint8_t> buf(inject_max + 1);
    struct iovec iov[5];
    struct fi_msg_tagged msg = {};

    open(FI_TAGGED);
    for (struct iovec &v : iov) {
        v = {buf.data(), 1};
    }
    EXPECT_EQ(-FI_EINVAL, fi_tsendmsg(m_o.ep, NULL, 0));
    EXPECT_EQ(-FI_EINVAL, fi_trecvmsg(m_o.ep, NULL, 0));
    EXPECT_EQ(-FI_EINVAL, fi_tsend(m_o.ep, buf.data(), msg_max + 1, NULL,
                                   m_self, 1, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_tinject(m_o.ep, buf.data(), inject_max + 1,
                                     m_self, 1));
    EXPECT_EQ(-FI_EINVAL, fi_tinjectdata(m_o.ep, buf.data(), inject_max + 1,
                                         1, m_self, 1));
    EXPECT_EQ(-FI_EINVAL, fi_tsendv(m_o.ep, iov, NULL, 5, m_self, 1, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_tsendv(m_o.ep, NULL, NULL, 1, m_self, 1, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_trecvv(m_o.ep, iov, NULL, 5, FI_ADDR_UNSPEC, 1,
                                    0, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_trecvv(m_o.ep, NULL, NULL, 1, FI_ADDR_UNSPEC,
                                    1, 0, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_tsend(m_o.ep, NULL, 8, NULL, m_self, 1, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_trecv(m_o.ep, NULL, 8, NULL, FI_ADDR_UNSPEC, 1,
                                   0, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_tsend(m_o.ep, buf.data(), 8, NULL, m_self + 5,
                                   1, NULL));
    iov[0]        = {buf.data(), 8};
    msg.msg_iov   = iov;
    msg.iov_count = 1;
    msg.addr      = FI_ADDR_UNSPEC;
    /* refused: multi-receive, a claim without a context (claiming is
     * tested in test_fiprov_claim.cc), a discard of nothing */
    for (uint64_t flag : {FI_CLAIM, FI_DISCARD, FI_MULTI_RECV,
                          FI_PEEK | FI_CLAIM}) {
        EXPECT_EQ(-FI_EINVAL, fi_trecvmsg(m_o.ep, &msg, flag)) << std::hex
                                                               << flag;
    }
    /* nothing of it was counted or queued */
    EXPECT_EQ(0u, fi_cntr_read(m_o.scntr) + fi_cntr_readerr(m_o.scntr));
    struct fi_cq_tagged_entry e;
    EXPECT_EQ(-FI_EAGAIN, fi_cq_read(m_o.cq, &e, 1));

    /* the limits themselves are accepted: a message of max_msg_size with
     * every tag bit set, received by the same tag */
    std::vector<uint8_t> big = pattern(msg_max, 5), got(msg_max);
    ASSERT_EQ(0, fi_tsend(m_o.ep, big.data(), msg_max, NULL, m_self, ~0ull,
                          NULL));
    ASSERT_EQ(0, fi_trecv(m_o.ep, got.data(), msg_max, NULL, FI_ADDR_UNSPEC,
                          ~0ull, 0, &got));
    wait_cntr(m_o.rvcntr, 1);
    EXPECT_EQ(big, got);
}

/* the calls of a kind the endpoint was not opened with answer
 * -FI_ENOSYS */
TEST_F(tagged1p, calls_need_their_capability)
{
    uint64_t buf = 0;

    open(FI_MSG);
    EXPECT_EQ(-FI_ENOSYS, fi_tsend(m_o.ep, &buf, 8, NULL, m_self, 1, NULL));
    EXPECT_EQ(-FI_ENOSYS, fi_trecv(m_o.ep, &buf, 8, NULL, FI_ADDR_UNSPEC, 1,
                                   0, NULL));
    m_o.close();
    open(FI_TAGGED);
    EXPECT_EQ(-FI_ENOSYS, fi_send(m_o.ep, &buf, 8, NULL, m_self, NULL));
    EXPECT_EQ(-FI_ENOSYS, fi_recv(m_o.ep, &buf, 8, NULL, FI_ADDR_UNSPEC,
                                  NULL));
    EXPECT_EQ(0, fi_tinject(m_o.ep, &buf, 8, m_self, 1));
}

} // namespace
