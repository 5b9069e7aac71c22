/**
 * FI_PEEK | FI_CLAIM, FI_CLAIM and FI_DISCARD on tagged receives
 * (fi_tagged(3)), over the libfabric API only, as MPI's matched probes
 * (MPI_Mprobe, MPI_Improbe) use them. Between two processes
 * (fiprov_peer.h), the peer echoing tagged messages of eager and
 * rendezvous sizes back, so that they wait in this endpoint's unexpected
 * queue: every peek, claim, claimed receive and discard is checked
 * against a model of the waiting messages computed here (which message
 * each must report or take, claimed ones invisible to later peeks and
 * receives), every byte against the sender's, truncation of a claimed
 * message, and directed receives (FI_DIRECTED_RECV) that claim. In one
 * process: claimed messages count against the unexpected cap until taken,
 * a claim left at close is freed, and input refused (-FI_EINVAL).
 */
#include "fiprov_msg_fixture.h"

#include <rdma/fi_tagged.h>

#include <string.h>
#include <time.h>

#include <algorithm>

using namespace fiprov_test;

namespace {

const size_t ux_max = 1024;

std::vector<uint8_t> pattern(size_t len, uint8_t seed)
{
    std::vector<uint8_t> v(len);

    for (size_t i = 0; i < len; ++i) {
        v[i] = (uint8_t)(seed * 13 + i * 7 + (i >> 12));
    }
    return v;
}

/* the next entry (bounded), the entries of this side's sends skipped: 1,
 * or -FI_EAVAIL with the error entry in *err, or -FI_ETIMEDOUT */
ssize_t next_rx(struct fid_cq *cq, struct fi_cq_tagged_entry *e,
                struct fi_cq_err_entry *err)
{
    return next_entry(cq, e, err, true);
}

/*
 * The messages waiting at the endpoint, in their order of arrival, as
 * fi_tagged(3) says a peek, a claim and a receive see them: a receive or
 * peek matches the oldest unclaimed message whose tag equals its own in
 * the bits it does not ignore (and from its source, when directed); a
 * claimed one is seen only by the FI_CLAIM receive of its context.
 */
class waiting_model {
public:
    struct msg {
        uint64_t  tag;
        size_t    len;
        uint8_t   seed;
        int       src;       /* which sender */
        void      *claim;    /* its claim's context, NULL: none */
        bool      gone;      /* received or discarded */
    };

    void add(uint64_t tag, size_t len, uint8_t seed, int src)
    {
        msgs.push_back({tag, len, seed, src, NULL, false});
    }

    /* the oldest unclaimed message the receive matches, -1: none */
    int match(uint64_t tag, uint64_t ignore, int src) const
    {
        for (size_t i = 0; i < msgs.size(); ++i) {
            const msg &m = msgs[i];
            if (!m.gone && (m.claim == NULL) &&
                (((m.tag ^ tag) & ~ignore) == 0) &&
                ((src < 0) || (src == m.src))) {
                return (int)i;
            }
        }
        return -1;
    }

    /* the message claimed under a context, -1: none */
    int claimed(void *ctx) const
    {
        for (size_t i = 0; i < msgs.size(); ++i) {
            if (!msgs[i].gone && (msgs[i].claim == ctx)) {
                return (int)i;
            }
        }
        return -1;
    }

    std::vector<msg> msgs;
};

class claim2p : public msg_peer_test {
protected:
    uint64_t caps() const override
    {
        return FI_TAGGED | FI_DIRECTED_RECV;
    }

    enum fi_cq_format cq_format() const override
    {
        return FI_CQ_FORMAT_TAGGED;
    }

    /* the peer echoes the model's messages (their sends' bytes kept in
     * m_out), then a fence that a receive posted first takes: all of them
     * wait here then (the peer's messages arrive in their order) */
    void echo_all(waiting_model &model, size_t max_len)
    {
        const uint64_t fence = (uint64_t)1 << 60;
        uint64_t fence_in = 0, fence_out = 7;
        struct fi_cq_tagged_entry e;
        struct fi_cq_err_entry err;

        m_peer.tagged_echo_start(model.msgs.size() + 1, max_len, m_self);
        ASSERT_EQ(0, fi_trecv(m_o.ep, &fence_in, 8, NULL, FI_ADDR_UNSPEC,
                              fence, 0, &fence_in));
        m_out.clear();
        for (const waiting_model::msg &m : model.msgs) {
            m_out.push_back(pattern(m.len, m.seed));
            ASSERT_EQ(0, fi_tsend(m_o.ep, m_out.back().data(), m.len, NULL,
                                  m_dest, m.tag, NULL));
        }
        ASSERT_EQ(0, fi_tsend(m_o.ep, &fence_out, 8, NULL, m_dest, fence,
                              NULL));
        ASSERT_EQ(1, next_rx(m_o.cq, &e, &err)) << err.err;
        ASSERT_EQ((void*)&fence_in, e.op_context);
        ASSERT_EQ(7u, fence_in);
        ASSERT_EQ(0, m_peer.echo_wait(m_o.rcntr));
    }

    /* a peek (with `flags`: FI_CLAIM or FI_DISCARD added) of tag/ignore
     * from src, checked against the model, which it then updates */
    void peek(waiting_model &model, uint64_t tag, uint64_t ignore,
              fi_addr_t src, int model_src, uint64_t flags, void *ctx)
    {
        struct fi_msg_tagged msg = {};
        struct fi_cq_tagged_entry e;
        struct fi_cq_err_entry err;
        int want = model.match(tag, ignore, model_src);

        msg.addr    = src;
        msg.tag     = tag;
        msg.ignore  = ignore;
        msg.context = ctx;
        ASSERT_EQ(0, fi_trecvmsg(m_o.ep, &msg, FI_PEEK | flags));
        ssize_t n = next_rx(m_o.cq, &e, &err);
        if (want < 0) {
            ASSERT_EQ(-FI_EAVAIL, n) << "a message reported where the model "
                                        "has none, tag " << std::hex << tag;
            EXPECT_EQ(FI_ENOMSG, err.err);
            EXPECT_EQ(ctx, err.op_context);
            return;
        }
        ASSERT_EQ(1, n) << "no message where the model has #" << want
                        << ": error " << err.err;
        EXPECT_EQ(ctx, e.op_context);
        EXPECT_EQ((uint64_t)(FI_TAGGED | FI_RECV),
                  e.flags & (FI_TAGGED | FI_MSG | FI_RECV));
        EXPECT_EQ(model.msgs[want].tag, e.tag) << "model #" << want;
        if (flags & FI_DISCARD) {
            EXPECT_EQ(0u, e.len) << "a discard reported data";
            model.msgs[want].gone = true;
        } else {
            EXPECT_EQ(model.msgs[want].len, e.len) << "model #" << want;
        }
        if (flags & FI_CLAIM) {
            model.msgs[want].claim = ctx;
        }
    }

    /* the FI_CLAIM receive of ctx into `given` bytes (two iovs), or its
     * discard, checked against the model */
    void claim_recv(waiting_model &model, void *ctx, size_t given,
                    bool discard)
    {
        int want = model.claimed(ctx);
        std::vector<uint8_t> in(given + 8, 0xee);
        struct iovec iov[2] = {{in.data(), given / 2},
                               {in.data() + given / 2, given - given / 2}};
        struct fi_msg_tagged msg = {};
        struct fi_cq_tagged_entry e;
        struct fi_cq_err_entry err;

        ASSERT_GE(want, 0) << "the test claims nothing under this context";
        const waiting_model::msg &m = model.msgs[want];
        msg.msg_iov   = iov;
        msg.iov_count = 2;
        msg.addr      = FI_ADDR_UNSPEC;
        msg.tag       = ~m.tag;  /* a claimed receive ignores its tag */
        msg.context   = ctx;
        ASSERT_EQ(0, fi_trecvmsg(m_o.ep, &msg,
                                 FI_CLAIM | (discard ? FI_DISCARD : 0)));
        ssize_t n = next_rx(m_o.cq, &e, &err);
        model.msgs[want].gone = true;
        if (!discard && (m.len > given)) {
            ASSERT_EQ(-FI_EAVAIL, n);
            EXPECT_EQ(FI_ETRUNC, err.err);
            EXPECT_EQ(ctx, err.op_context);
            EXPECT_EQ(m.tag, err.tag);
            EXPECT_EQ(given, err.len);
            EXPECT_EQ(m.len - given, err.olen);
            ++m_truncated;
        } else {
            ASSERT_EQ(1, n) << "error " << err.err;
            EXPECT_EQ(ctx, e.op_context);
            EXPECT_EQ(m.tag, e.tag);
            EXPECT_EQ(discard ? 0 : m.len, e.len);
            ++m_received;
        }
        size_t written = discard ? 0 : std::min(m.len, given);
        EXPECT_TRUE(std::equal(m_out[want].begin(),
                               m_out[want].begin() + written, in.begin()))
            << "model #" << want << ": bytes differ";
        for (size_t k = written; k < in.size(); ++k) {
            ASSERT_EQ(0xee, in[k]) << "byte " << k << " written, model #"
                                   << want;
        }
    }

    std::vector<std::vector<uint8_t>> m_out;
    uint64_t m_received  = 0;   /* receive entries expected */
    uint64_t m_truncated = 0;   /* FI_ETRUNC entries expected */
};

/* claims of eager and rendezvous messages, each then received (whole or
 * truncated) or discarded; a claimed message is invisible to later peeks,
 * claims and receives, which get the next message of its tag; peeks that
 * discard */
TEST_P(claim2p, claims_follow_the_model)
{
    const uint64_t a = 0xa000, b = 0xb000, c = 0xc000;
    const size_t big = 1 << 20, mid = 256 * 1024;
    waiting_model model;
    int ctx[8];

    model.add(a, 8, 1, 0);      /* #0 */
    model.add(b, big, 2, 0);    /* #1: rendezvous */
    model.add(a | 1, 64, 3, 0); /* #2 */
    model.add(c, mid, 4, 0);    /* #3: rendezvous */
    model.add(b, 100, 5, 0);    /* #4 */
    model.add(c | 2, 4000, 6, 0); /* #5 */
    model.add(b, big, 7, 0);    /* #6: rendezvous */
    echo_all(model, big);
    ASSERT_FALSE(HasFatalFailure());

    /* claim the rendezvous #1: a plain peek of b then sees #4 */
    peek(model, b, 0, FI_ADDR_UNSPEC, -1, FI_CLAIM, &ctx[0]);
    peek(model, b, 0, FI_ADDR_UNSPEC, -1, 0, &ctx[1]);
    /* claim any tag of a's: #0; a receive of a|x then takes #2 */
    peek(model, a, 0xff, FI_ADDR_UNSPEC, -1, FI_CLAIM, &ctx[2]);
    {
        std::vector<uint8_t> in(64, 0);
        struct fi_cq_tagged_entry e;
        struct fi_cq_err_entry err;
        int want = model.match(a, 0xff, -1);

        ASSERT_EQ(2, want);
        ASSERT_EQ(0, fi_trecv(m_o.ep, in.data(), in.size(), NULL,
                              FI_ADDR_UNSPEC, a, 0xff, &in));
        ASSERT_EQ(1, next_rx(m_o.cq, &e, &err)) << err.err;
        EXPECT_EQ((void*)&in, e.op_context);
        EXPECT_EQ(model.msgs[want].tag, e.tag);
        EXPECT_EQ(m_out[want], in);
        model.msgs[want].gone = true;
        ++m_received;
    }
    /* the claimed ones: #1 whole (rendezvous), #0 cut to 4 bytes */
    claim_recv(model, &ctx[0], big + 16, false);
    claim_recv(model, &ctx[2], 4, false);
    /* their contexts claim nothing now */
    {
        uint64_t x;
        struct iovec iov = {&x, 8};
        struct fi_msg_tagged msg = {};

        msg.msg_iov   = &iov;
        msg.iov_count = 1;
        msg.context   = &ctx[0];
        EXPECT_EQ(-FI_EINVAL, fi_trecvmsg(m_o.ep, &msg, FI_CLAIM));
    }
    /* claim #3 (rendezvous) and discard it; claim #5, received truncated
     * into a buffer smaller than it */
    peek(model, c, 0xf, FI_ADDR_UNSPEC, -1, FI_CLAIM, &ctx[3]);
    peek(model, c, 0xf, FI_ADDR_UNSPEC, -1, FI_CLAIM, &ctx[4]);
    claim_recv(model, &ctx[3], 16, true);
    claim_recv(model, &ctx[4], 1000, false);
    peek(model, c, 0xf, FI_ADDR_UNSPEC, -1, 0, &ctx[5]);
    /* a peek that discards takes #4, then #6 (rendezvous), then none */
    peek(model, b, 0, FI_ADDR_UNSPEC, -1, FI_DISCARD, &ctx[6]);
    peek(model, b, 0, FI_ADDR_UNSPEC, -1, FI_DISCARD, &ctx[6]);
    peek(model, b, 0, FI_ADDR_UNSPEC, -1, FI_DISCARD, &ctx[6]);
    for (const waiting_model::msg &m : model.msgs) {
        EXPECT_TRUE(m.gone) << "the model left a message waiting";
    }
    /* no entry but the sends' is left */
    struct fi_cq_tagged_entry e;
    ssize_t n;
    while ((n = fi_cq_read(m_o.cq, &e, 1)) == 1) {
        EXPECT_TRUE(e.flags & FI_SEND) << "a receive entry too many";
    }
    EXPECT_EQ(-FI_EAGAIN, n);
    /* the counter: every receive and discard (the fence too), the claims'
     * peeks not; truncation an error */
    EXPECT_EQ(1 + m_received + 2, fi_cntr_read(m_o.rvcntr));
    EXPECT_EQ(m_truncated, fi_cntr_readerr(m_o.rvcntr));
}

/* directed receives: a peek | claim for one source claims only its
 * messages (another address claims nothing); the claimed receive then
 * takes it whatever its own src_addr */
TEST_P(claim2p, directed_claims_take_only_their_source)
{
    const uint64_t t = 0x77;
    waiting_model model;
    fi_addr_t self = FI_ADDR_UNSPEC;
    int ctx[4];

    ASSERT_EQ(1, fi_av_insert(m_o.av, m_self.data(), 1, &self, 0, NULL));
    model.add(t, 16, 1, 0);
    model.add(t, 512 * 1024, 2, 0);
    echo_all(model, 512 * 1024);
    ASSERT_FALSE(HasFatalFailure());

    /* nothing from this endpoint itself */
    peek(model, t, 0, self, 1, FI_CLAIM, &ctx[0]);
    peek(model, t, 0, m_dest, 0, FI_CLAIM, &ctx[1]);
    peek(model, t, 0, m_dest, 0, FI_CLAIM, &ctx[2]);
    peek(model, t, 0, m_dest, 0, FI_CLAIM, &ctx[3]);
    claim_recv(model, &ctx[2], 512 * 1024, false);
    claim_recv(model, &ctx[1], 16, false);
    EXPECT_EQ(1 + m_received, fi_cntr_read(m_o.rvcntr));
    EXPECT_EQ(0u, fi_cntr_readerr(m_o.rvcntr));
}

/* a rendezvous message claimed as soon as a peek finds it (polled, no
 * fence: most often while its bytes still arrive), received at once; then
 * one claimed and discarded the same way */
TEST_P(claim2p, claims_of_messages_still_arriving)
{
    const size_t big = 2 << 20;
    const uint64_t t = 0x5150;
    std::vector<uint8_t> out0 = pattern(big, 9), out1 = pattern(big, 10);
    int ctx[2];

    m_peer.tagged_echo_start(2, big, m_self);
    ASSERT_EQ(0, fi_tsend(m_o.ep, out0.data(), big, NULL, m_dest, t, NULL));
    ASSERT_EQ(0, fi_tsend(m_o.ep, out1.data(), big, NULL, m_dest, t | 1,
                          NULL));
    for (int k = 0; k < 2; ++k) {
        int64_t deadline = now_ms() + peer_wait_ms;
        struct fi_msg_tagged msg = {};
        struct fi_cq_tagged_entry e;
        struct fi_cq_err_entry err;
        std::vector<uint8_t> in(big, 0xee);
        struct iovec iov = {in.data(), big};
        ssize_t n;

        msg.addr    = FI_ADDR_UNSPEC;
        msg.tag     = t | k;
        msg.context = &ctx[k];
        for (;;) {
            ASSERT_EQ(0, fi_trecvmsg(m_o.ep, &msg, FI_PEEK | FI_CLAIM));
            n = next_rx(m_o.cq, &e, &err);
            if (n == 1) {
                break;
            }
            ASSERT_EQ(-FI_EAVAIL, n);
            ASSERT_EQ(FI_ENOMSG, err.err);
            ASSERT_LT(now_ms(), deadline) << "message " << k << " never came";
        }
        EXPECT_EQ(big, e.len);
        EXPECT_EQ(t | k, e.tag);
        msg.msg_iov   = &iov;
        msg.iov_count = 1;
        ASSERT_EQ(0, fi_trecvmsg(m_o.ep, &msg,
                                 FI_CLAIM | (k ? FI_DISCARD : 0)));
        ASSERT_EQ(1, next_rx(m_o.cq, &e, &err)) << err.err;
        EXPECT_EQ((void*)&ctx[k], e.op_context);
        EXPECT_EQ(t | k, e.tag);
        if (k == 0) {
            EXPECT_EQ(big, e.len);
            EXPECT_EQ(out0, in) << "the claimed message's bytes differ";
        } else {
            EXPECT_EQ(0u, e.len);
            EXPECT_EQ(std::vector<uint8_t>(big, 0xee), in)
                << "a discard wrote the buffer";
        }
    }
    EXPECT_EQ(0, m_peer.echo_wait(m_o.rcntr));
    EXPECT_EQ(2u, fi_cntr_read(m_o.rvcntr));
    EXPECT_EQ(0u, fi_cntr_readerr(m_o.rvcntr));
}

INSTANTIATE_TEST_SUITE_P(tls, claim2p, testing::ValuesIn(peer_params),
                         peer_param_name);

/* ---- one process: an endpoint that sends to itself ---------------------- */

class claim1p : public self_ep_test {
protected:
    void open(uint64_t caps)
    {
        open_self(caps, FI_CQ_FORMAT_TAGGED);
    }

    /* everything sent to itself so far has arrived: a fence message
     * after it fills a receive posted for it */
    void settle()
    {
        const uint64_t fence = (uint64_t)1 << 62;
        uint64_t in = 0, out = 42;
        struct fi_cq_tagged_entry e;
        struct fi_cq_err_entry err;

        ASSERT_EQ(0, fi_trecv(m_o.ep, &in, 8, NULL, FI_ADDR_UNSPEC, fence, 0,
                              &in));
        ASSERT_EQ(0, fi_tinject(m_o.ep, &out, 8, m_self, fence));
        ASSERT_EQ(1, next_rx(m_o.cq, &e, &err)) << err.err;
        ASSERT_EQ((void*)&in, e.op_context);
        ASSERT_EQ(42u, in);
        ++m_fences;
    }

    /* a peek | claim of tag under ctx: the tag it reports, ~0: none */
    uint64_t claim(uint64_t tag, void *ctx)
    {
        struct fi_msg_tagged msg = {};
        struct fi_cq_tagged_entry e;
        struct fi_cq_err_entry err;

        msg.addr    = FI_ADDR_UNSPEC;
        msg.tag     = tag;
        msg.context = ctx;
        EXPECT_EQ(0, fi_trecvmsg(m_o.ep, &msg, FI_PEEK | FI_CLAIM));
        ssize_t n = next_rx(m_o.cq, &e, &err);
        EXPECT_TRUE((n == 1) || (n == -FI_EAVAIL)) << n;
        return (n == 1) ? e.tag : ~0ull;
    }

    uint64_t  m_fences = 0;
};

/* claimed messages count against the unexpected cap until received: with
 * the queue full and one claimed, the next message is dropped; once the
 * claimed one is received, one more waits */
TEST_F(claim1p, claimed_messages_count_against_the_cap)
{
    struct fi_cq_tagged_entry e;
    struct fi_cq_err_entry err;
    uint64_t v, in = 0;
    int ctx, other;

    open(FI_TAGGED);
    for (v = 0; v < ux_max; ++v) {
        ASSERT_EQ(0, fi_tinject(m_o.ep, &v, 8, m_self, 5));
    }
    settle();
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_EQ(5u, claim(5, &ctx));
    v = 1000;
    ASSERT_EQ(0, fi_tinject(m_o.ep, &v, 8, m_self, 6));
    settle();
    ASSERT_FALSE(HasFatalFailure());
    EXPECT_EQ(1u, fi_cntr_readerr(m_o.rvcntr)) << "kept beyond the cap";
    EXPECT_EQ(~0ull, claim(6, &other)) << "kept beyond the cap";
    struct iovec iov = {&in, 8};
    struct fi_msg_tagged msg = {};
    msg.msg_iov   = &iov;
    msg.iov_count = 1;
    msg.context   = &ctx;
    ASSERT_EQ(0, fi_trecvmsg(m_o.ep, &msg, FI_CLAIM));
    ASSERT_EQ(1, next_rx(m_o.cq, &e, &err)) << err.err;
    EXPECT_EQ((void*)&ctx, e.op_context);
    EXPECT_EQ(0u, in) << "the claim took the oldest";
    /* one place free: the next one waits, and the context claims again */
    ASSERT_EQ(0, fi_tinject(m_o.ep, &v, 8, m_self, 6));
    settle();
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_EQ(6u, claim(6, &ctx));
    EXPECT_EQ(1u, fi_cntr_readerr(m_o.rvcntr));
    EXPECT_EQ(m_fences + 1, fi_cntr_read(m_o.rvcntr));
    /* the claims left are freed with the endpoint (ASan's leak check) */
}

TEST_F(claim1p, bad_input_is_refused)
{
    uint64_t buf = 1;
    struct iovec iov = {&buf, 8};
    struct fi_msg_tagged msg = {};
    struct fi_msg umsg = {};
    struct fi_cq_tagged_entry e;
    int ctx[2];

    open(FI_MSG | FI_TAGGED);
    msg.msg_iov   = &iov;
    msg.iov_count = 1;
    msg.addr      = FI_ADDR_UNSPEC;
    msg.tag       = 3;
    msg.context   = &ctx[0];
    /* FI_CLAIM of a context that claims nothing; FI_DISCARD alone or with
     * both; no claim without a context; no multi-receive */
    for (uint64_t flag : {FI_CLAIM, FI_CLAIM | FI_DISCARD, FI_DISCARD,
                          FI_PEEK | FI_CLAIM | FI_DISCARD, FI_MULTI_RECV}) {
        EXPECT_EQ(-FI_EINVAL, fi_trecvmsg(m_o.ep, &msg, flag)) << std::hex
                                                               << flag;
    }
    msg.context = NULL;
    EXPECT_EQ(-FI_EINVAL, fi_trecvmsg(m_o.ep, &msg, FI_PEEK | FI_CLAIM));
    /* untagged: none of them */
    umsg.msg_iov   = &iov;
    umsg.iov_count = 1;
    umsg.addr      = FI_ADDR_UNSPEC;
    umsg.context   = &ctx[0];
    for (uint64_t flag : {FI_PEEK, FI_CLAIM, FI_PEEK | FI_CLAIM,
                          FI_PEEK | FI_DISCARD}) {
        EXPECT_EQ(-FI_EINVAL, fi_recvmsg(m_o.ep, &umsg, flag)) << std::hex
                                                               << flag;
    }
    /* a context that holds a claim cannot claim another */
    ASSERT_EQ(0, fi_tinject(m_o.ep, &buf, 8, m_self, 3));
    ASSERT_EQ(0, fi_tinject(m_o.ep, &buf, 8, m_self, 3));
    settle();
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_EQ(3u, claim(3, &ctx[1]));
    msg.context = &ctx[1];
    EXPECT_EQ(-FI_EINVAL, fi_trecvmsg(m_o.ep, &msg, FI_PEEK | FI_CLAIM));
    /* nothing of it was reported or counted */
    EXPECT_EQ(-FI_EAGAIN, fi_cq_read(m_o.cq, &e, 1));
    EXPECT_EQ(m_fences, fi_cntr_read(m_o.rvcntr));
    EXPECT_EQ(0u, fi_cntr_readerr(m_o.rvcntr));
}

} // namespace
