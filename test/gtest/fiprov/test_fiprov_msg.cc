/**
 * Messages through the provider (fi_msg(3)), over the libfabric API only.
 * Between two processes (the instantiations of fiprov_peer.h), the peer
 * echoing every message back from its own endpoint: ping-pong of 0 B to
 * 1 MiB in every call form with its bytes checked, messages that arrive
 * before their receive (on both sides), truncation (FI_ETRUNC with olen),
 * many messages in flight filling receives in the order sent, remote CQ
 * data both ways, and the FI_SEND/FI_RECV counters. In one process, an
 * endpoint sending to itself: input refused (-FI_EINVAL), the cap on
 * unexpected messages (count and bytes: the rest dropped and counted as
 * errors of the FI_RECV counter), and selective completion.
 */
#include "fiprov_msg_fixture.h"
#include "fiprov_ucp_pause.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

#include <set>

using namespace fiprov_test;

namespace {

/* the provider's limits, as fi_fiatomic(7) states them */
const size_t msg_max       = (size_t)4 << 20;
const size_t inject_max    = 64;
const size_t ux_max        = 1024;
const size_t ux_bytes      = (size_t)32 << 20;

std::vector<uint8_t> pattern(size_t len, uint8_t seed)
{
    std::vector<uint8_t> v(len);

    for (size_t i = 0; i < len; ++i) {
        v[i] = (uint8_t)(seed + i * 13 + (i >> 9));
    }
    return v;
}

class msg2p : public msg_peer_test {
protected:
    uint64_t caps() const override
    {
        return FI_ATOMIC | FI_RMA | FI_MSG;
    }

    /* the next entry, which must be a success of the given kind */
    void entry(uint64_t kind, struct fi_cq_data_entry *e)
    {
        struct fi_cq_err_entry err;
        ssize_t n = next_entry(m_o.cq, e, &err);

        ASSERT_EQ(1, n) << "error entry " << err.err << " "
                        << fi_strerror(err.err);
        ASSERT_EQ(kind | FI_MSG, e->flags & (kind | FI_MSG))
            << std::hex << e->flags;
    }

    void ping_pong_every_form();
};

/* one message of each size out and back: sent in the form the size
 * selects, received into fresh memory, every byte compared */
TEST_P(msg2p, ping_pong_0b_to_1mib_every_form)
{
    ping_pong_every_form();
}

/* The same with the provider's UCP calls returning only after a pause, in
 * which the progress thread (FI_PROGRESS_AUTO) completes what they started:
 * each send still completes and is counted once */
TEST_P(msg2p, sends_completed_before_their_call_returns)
{
    ucp_pause pause(3000);

    ping_pong_every_form();
    EXPECT_GT(ucp_pause::paused(), 0u) << "no UCP call of the provider paused";
}

void msg2p::ping_pong_every_form()
{
    static const size_t sizes[] = {0, 1, 8, 4096, 65536, 1 << 20};
    const size_t n = sizeof(sizes) / sizeof(sizes[0]);
    struct fi_cq_data_entry e;

    m_peer.echo_start(n, 1 << 20, m_self);
    for (size_t i = 0; i < n; ++i) {
        const size_t len = sizes[i];
        std::vector<uint8_t> out = pattern(len, (uint8_t)i);
        std::vector<uint8_t> in(len + 16, 0xee);
        struct iovec siov[3], riov[2];
        struct fi_msg rmsg = {}, smsg = {};
        int sent_entry = 1;

        split_iov(out, in, siov, riov);
        rmsg.msg_iov   = riov;
        rmsg.iov_count = 2;
        rmsg.addr      = FI_ADDR_UNSPEC;
        rmsg.context   = &in;
        smsg.msg_iov   = siov;
        smsg.iov_count = 3;
        smsg.addr      = m_dest;
        smsg.context   = &out;
        /* the receive first: the echo finds it posted */
        if (i % 2) {
            ASSERT_EQ(0, fi_recvmsg(m_o.ep, &rmsg, 0));
        } else {
            ASSERT_EQ(0, fi_recv(m_o.ep, in.data(), len + 16, NULL,
                                 FI_ADDR_UNSPEC, &in));
        }
        switch (i) {
        case 2:
            ASSERT_EQ(0, fi_inject(m_o.ep, out.data(), len, m_dest));
            sent_entry = 0;
            break;
        case 3:
            ASSERT_EQ(0, fi_sendv(m_o.ep, siov, NULL, 3, m_dest, &out));
            break;
        case 4:
            ASSERT_EQ(0, fi_sendmsg(m_o.ep, &smsg,
                                    FI_COMPLETION | FI_DELIVERY_COMPLETE));
            break;
        default:
            ASSERT_EQ(0, fi_send(m_o.ep, out.data(), len, NULL, m_dest,
                                 &out));
            break;
        }
        /* the send's entry and the echo's, in either order */
        struct fi_cq_data_entry rx = {};
        bool received = false;
        while (!received || (sent_entry > 0)) {
            struct fi_cq_err_entry err;
            ASSERT_EQ(1, next_entry(m_o.cq, &e, &err))
                << "error entry " << err.err << " " << fi_strerror(err.err)
                << (received ? " (waiting for the send's)" : "");
            ASSERT_TRUE(e.flags & FI_MSG);
            if (e.flags & FI_SEND) {
                EXPECT_EQ((void*)&out, e.op_context);
                ASSERT_EQ(1, sent_entry) << "a second entry for the send";
                --sent_entry;
                continue;
            }
            ASSERT_TRUE(e.flags & FI_RECV);
            ASSERT_FALSE(received) << "a second receive entry";
            rx       = e;
            received = true;
        }
        EXPECT_EQ((void*)&in, rx.op_context) << len;
        EXPECT_EQ(len, rx.len);
        EXPECT_EQ(0u, rx.flags & FI_REMOTE_CQ_DATA);
        EXPECT_TRUE(std::equal(out.begin(), out.end(), in.begin()))
            << len << " bytes differ";
        EXPECT_EQ(0xee, in[len]) << "written past the message";
    }
    EXPECT_EQ(0, m_peer.echo_wait(m_o.rcntr));
    /* every send counted, the inject included; every receive */
    expect_msg_counters(m_o, n);
}

/* messages that arrive before their receive, at the peer (all sent and
 * delivered before it posts any) and here (all echoed before this side
 * posts any), eager and rendezvous sizes mixed: received in the order
 * sent */
TEST_P(msg2p, unexpected_messages_keep_their_order)
{
    static const size_t sizes[] = {1, 100, 5000, 70000, 300000, 0, 8,
                                   1 << 20, 64, 200000, 3, 65536};
    const size_t n = sizeof(sizes) / sizeof(sizes[0]);
    std::vector<std::vector<uint8_t>> out(n), in(n);
    struct fi_cq_data_entry e;
    struct fi_msg msg = {};
    struct iovec iov;

    for (size_t i = 0; i < n; ++i) {
        out[i]        = pattern(sizes[i], (uint8_t)(100 + i));
        iov.iov_base  = out[i].data();
        iov.iov_len   = sizes[i];
        msg.msg_iov   = &iov;
        msg.iov_count = 1;
        msg.addr      = m_dest;
        msg.context   = &out[i];
        ASSERT_EQ(0, fi_sendmsg(m_o.ep, &msg,
                                FI_COMPLETION | FI_DELIVERY_COMPLETE));
    }
    wait_cntr(m_o.scntr, n);
    /* the peer takes them in while idle, then posts its receives */
    usleep(50000);
    m_peer.echo_start(n, 1 << 20, m_self);
    ASSERT_EQ(0, m_peer.echo_wait(m_o.rcntr));
    for (size_t i = 0; i < n; ++i) {
        entry(FI_SEND, &e);
    }
    EXPECT_EQ(0u, fi_cntr_read(m_o.rvcntr)) << "received without a receive";
    for (size_t i = 0; i < n; ++i) {
        in[i].assign(sizes[i] + 1, 0xee);
        ASSERT_EQ(0, fi_recv(m_o.ep, in[i].data(), in[i].size(), NULL,
                             FI_ADDR_UNSPEC, &in[i]));
    }
    wait_cntr(m_o.rvcntr, n);
    for (size_t i = 0; i < n; ++i) {
        entry(FI_RECV, &e);
        /* completions may come in any order; the receives were filled in
         * order: receive i holds message i */
        std::vector<uint8_t> *got = (std::vector<uint8_t>*)e.op_context;
        size_t k                  = (size_t)(got - in.data());
        ASSERT_LT(k, n);
        EXPECT_EQ(sizes[k], e.len) << k;
        EXPECT_TRUE(std::equal(out[k].begin(), out[k].end(), got->begin()))
            << "receive " << k << " holds another message";
    }
    EXPECT_EQ(0u, fi_cntr_readerr(m_o.rvcntr));
}

/* A peer that sends messages and closes its domain the moment their sends
 * complete: every message still arrives, whole. Over shared memory a
 * message is in this side's queue when its send completes, but this side
 * may learn that the connection is gone (out of band) before it reads
 * that queue, and UCP drops what arrives for a connection it knows gone;
 * this side does not progress meanwhile (manual progress), as a loaded
 * machine leaves it, while the peer closes. */
TEST_P(msg2p, messages_sent_before_the_peer_closes_arrive)
{
    const uint64_t n = 16, size = 100;
    std::vector<std::vector<uint8_t>> in(n);
    std::vector<uint8_t> ping = pattern(8, 3), pong(8);
    struct fi_cq_data_entry e;
    struct fi_cq_err_entry err;
    uint64_t received = 0;

    /* connections both ways first: the peer's sends need no wireup */
    m_peer.echo_start(1, 64, m_self);
    ASSERT_EQ(0, fi_recv(m_o.ep, pong.data(), pong.size(), NULL,
                         FI_ADDR_UNSPEC, &pong));
    ASSERT_EQ(0, fi_send(m_o.ep, ping.data(), ping.size(), NULL, m_dest,
                         &ping));
    ASSERT_EQ(0, m_peer.echo_wait(m_o.rcntr));
    for (int i = 0; i < 2; ++i) {
        ASSERT_EQ(1, next_entry(m_o.cq, &e, &err)) << fi_strerror(err.err);
    }

    for (uint64_t i = 0; i < n; ++i) {
        in[i].assign(size + 1, 0xee);
        ASSERT_EQ(0, fi_recv(m_o.ep, in[i].data(), in[i].size(), NULL,
                             FI_ADDR_UNSPEC, &in[i]));
    }
    m_peer.send_and_leave(n, size, m_self);
    usleep(200000);
    for (uint64_t i = 0; i < n; ++i) {
        ssize_t ret = next_entry(m_o.cq, &e, &err);

        ASSERT_EQ(1, ret) << received << " of " << n << " messages arrived; "
                          << ((ret == -FI_EAVAIL) ? fi_strerror(err.err) :
                              "then none");
        ASSERT_EQ(FI_RECV | FI_MSG, e.flags & (FI_RECV | FI_MSG));
        ASSERT_EQ(size, e.len);
        /* receives fill in order: receive k holds message k */
        std::vector<uint8_t> *got = (std::vector<uint8_t>*)e.op_context;
        size_t k                  = (size_t)(got - in.data());
        ASSERT_LT(k, n);
        for (uint64_t b = 0; b < size; ++b) {
            ASSERT_EQ(pattern_byte(k, b), (*got)[b]) << k << " " << b;
        }
        ++received;
    }
    EXPECT_EQ(0, m_peer.leave_wait());
}

/* a message larger than its receive fills it and completes it in error:
 * FI_ETRUNC, olen the bytes cut off (eager and rendezvous) */
TEST_P(msg2p, truncation_reports_etrunc_and_olen)
{
    static const size_t sent[]  = {1000, 256 * 1024};
    static const size_t given[] = {100, 4096};
    struct fi_cq_data_entry e;
    struct fi_cq_err_entry err;

    m_peer.echo_start(2, 1 << 20, m_self);
    for (size_t i = 0; i < 2; ++i) {
        std::vector<uint8_t> out = pattern(sent[i], (uint8_t)(7 * i));
        std::vector<uint8_t> in(given[i] + 8, 0xee);

        ASSERT_EQ(0, fi_recv(m_o.ep, in.data(), given[i], NULL,
                             FI_ADDR_UNSPEC, &in));
        ASSERT_EQ(0, fi_send(m_o.ep, out.data(), sent[i], NULL, m_dest,
                             &out));
        ASSERT_NO_FATAL_FAILURE(expect_truncated_echo(
                m_o.cq, &e, out, in, given[i], FI_MSG, FI_MSG, &err));
    }
    EXPECT_EQ(0, m_peer.echo_wait(m_o.rcntr));
    EXPECT_EQ(0u, fi_cntr_read(m_o.rvcntr));
    EXPECT_EQ(2u, fi_cntr_readerr(m_o.rvcntr));
    EXPECT_EQ(2u, fi_cntr_read(m_o.scntr));
}

/* 256 messages in flight each way, receives posted first: receive i holds
 * message i; remote CQ data (fi_senddata, fi_injectdata) reaches the peer
 * and comes back one higher, and a message without it has none */
TEST_P(msg2p, many_in_flight_in_order_with_remote_cq_data)
{
    const size_t n = 256, len = 24;
    std::vector<std::vector<uint8_t>> in(n);
    std::vector<std::vector<uint8_t>> out(n);
    struct fi_cq_data_entry e;

    for (size_t i = 0; i < n; ++i) {
        in[i].assign(len, 0);
        ASSERT_EQ(0, fi_recv(m_o.ep, in[i].data(), len, NULL,
                             FI_ADDR_UNSPEC, &in[i]));
    }
    m_peer.echo_start(n, len, m_self);
    for (size_t i = 0; i < n; ++i) {
        uint64_t seq = i;

        out[i] = pattern(len, (uint8_t)i);
        memcpy(out[i].data(), &seq, 8);
        switch (i % 4) {
        case 0:
            ASSERT_EQ(0, fi_senddata(m_o.ep, out[i].data(), len, NULL,
                                     1000 + i, m_dest, NULL));
            break;
        case 1:
            ASSERT_EQ(0, fi_injectdata(m_o.ep, out[i].data(), len, 1000 + i,
                                       m_dest));
            break;
        default:
            ASSERT_EQ(0, fi_send(m_o.ep, out[i].data(), len, NULL, m_dest,
                                 NULL));
            break;
        }
    }
    wait_cntr(m_o.scntr, n);
    wait_cntr(m_o.rvcntr, n);
    EXPECT_EQ(0, m_peer.echo_wait(m_o.rcntr));
    size_t recvs = 0, sends = 0;
    for (;;) {
        struct fi_cq_err_entry err;
        ssize_t r = fi_cq_read(m_o.cq, &e, 1);
        if (r == -FI_EAGAIN) {
            break;
        }
        ASSERT_EQ(1, r) << (fi_cq_readerr(m_o.cq, &err, 0),
                            fi_strerror(err.err));
        if (e.flags & FI_SEND) {
            ++sends;
            continue;
        }
        ASSERT_TRUE(e.flags & FI_RECV);
        size_t k = (size_t)((std::vector<uint8_t>*)e.op_context - in.data());
        ASSERT_LT(k, n);
        ++recvs;
        EXPECT_EQ(len, e.len);
        EXPECT_EQ(out[k], in[k]) << "receive " << k;
        if (k % 4 < 2) {
            EXPECT_TRUE(e.flags & FI_REMOTE_CQ_DATA) << k;
            EXPECT_EQ(1000 + k + 1, e.data) << k;
        } else {
            EXPECT_FALSE(e.flags & FI_REMOTE_CQ_DATA) << k;
        }
    }
    EXPECT_EQ(n, recvs);
    EXPECT_EQ(n - n / 4, sends) << "an entry per send, none per inject";
}

INSTANTIATE_TEST_SUITE_P(tls, msg2p, testing::ValuesIn(peer_params),
                         peer_param_name);
INSTANTIATE_TEST_SUITE_P(sockaddr, msg2p,
                         testing::ValuesIn(peer_params_sockaddr),
                         peer_param_name);

/* ---- one process: an endpoint that sends to itself ---------------------- */

class msg1p : public self_ep_test {
protected:
    void SetUp() override
    {
        test_base::SetUp();
        open_self(FI_ATOMIC | FI_RMA | FI_MSG, FI_CQ_FORMAT_DATA);
    }

    /* until the endpoint's FI_RECV counter has `errors` errors (bounded) */
    void wait_recv_errors(uint64_t errors)
    {
        int64_t deadline = now_ms() + peer_wait_ms;
        while ((fi_cntr_readerr(m_o.rvcntr) < errors) &&
               (now_ms() < deadline)) {
            (void)fi_cntr_read(m_o.rvcntr);
        }
        EXPECT_EQ(errors, fi_cntr_readerr(m_o.rvcntr));
    }

    /* `count` max_msg_size messages from `ep` to this endpoint, `big` with
     * its first byte `first` + i, each once its send completed (counted by
     * `sent`: the buffer is the program's again) */
    void send_big(struct fid_ep *ep, struct fid_cntr *sent,
                  std::vector<uint8_t> &big, size_t count, uint8_t first)
    {
        uint64_t before = fi_cntr_read(sent);

        for (size_t i = 0; i < count; ++i) {
            big[0] = (uint8_t)(first + i);
            ASSERT_EQ(0, fi_send(ep, big.data(), msg_max, NULL, m_self, NULL));
            wait_cntr(sent, before + i + 1);
        }
    }
};

TEST_F(msg1p, bad_input_is_refused)
{
    std::vector<uint8_t> buf(inject_max + 1);
    struct iovec iov[5];
    struct fi_msg msg = {};

    for (struct iovec &v : iov) {
        v = {buf.data(), 1};
    }
    EXPECT_EQ(-FI_EINVAL, fi_sendmsg(m_o.ep, NULL, 0));
    EXPECT_EQ(-FI_EINVAL, fi_recvmsg(m_o.ep, NULL, 0));
    /* a length beyond max_msg_size, refused before the buffer is read */
    EXPECT_EQ(-FI_EINVAL, fi_send(m_o.ep, buf.data(), msg_max + 1, NULL,
                                  m_self, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_inject(m_o.ep, buf.data(), inject_max + 1,
                                    m_self));
    EXPECT_EQ(-FI_EINVAL, fi_injectdata(m_o.ep, buf.data(), inject_max + 1,
                                        1, m_self));
    EXPECT_EQ(-FI_EINVAL, fi_sendv(m_o.ep, iov, NULL, 5, m_self, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_recvv(m_o.ep, iov, NULL, 5, FI_ADDR_UNSPEC,
                                   NULL));
    EXPECT_EQ(-FI_EINVAL, fi_send(m_o.ep, NULL, 8, NULL, m_self, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_recv(m_o.ep, NULL, 8, NULL, FI_ADDR_UNSPEC,
                                  NULL));
    EXPECT_EQ(-FI_EINVAL, fi_send(m_o.ep, buf.data(), 8, NULL, m_self + 5,
                                  NULL));
    iov[0]        = {buf.data(), 8};
    msg.msg_iov   = iov;
    msg.iov_count = 1;
    EXPECT_EQ(-FI_EINVAL, fi_recvmsg(m_o.ep, &msg, FI_MULTI_RECV));
    /* nothing of it was counted or queued */
    EXPECT_EQ(0u, fi_cntr_read(m_o.scntr) + fi_cntr_readerr(m_o.scntr));
    struct fi_cq_data_entry e;
    EXPECT_EQ(-FI_EAGAIN, fi_cq_read(m_o.cq, &e, 1));

    /* the limits themselves are accepted: an inject of inject_size and a
     * message of max_msg_size arrive whole */
    std::vector<uint8_t> big = pattern(msg_max, 3), got(msg_max);
    ASSERT_EQ(0, fi_inject(m_o.ep, buf.data(), inject_max, m_self));
    ASSERT_EQ(0, fi_send(m_o.ep, big.data(), msg_max, NULL, m_self, NULL));
    wait_cntr(m_o.scntr, 2);
    std::vector<uint8_t> small(inject_max);
    ASSERT_EQ(0, fi_recv(m_o.ep, small.data(), inject_max, NULL,
                         FI_ADDR_UNSPEC, NULL));
    ASSERT_EQ(0, fi_recv(m_o.ep, got.data(), msg_max, NULL, FI_ADDR_UNSPEC,
                         &got));
    wait_cntr(m_o.rvcntr, 2);
    EXPECT_EQ(buf[0], small[0]);
    EXPECT_EQ(big, got);
}

/* unexpected messages are capped per endpoint, by count and by bytes: the
 * ones beyond are dropped and counted as errors of the FI_RECV counter;
 * those kept are received in order */
TEST_F(msg1p, unexpected_messages_are_capped)
{
    const size_t n = ux_max + 5;
    struct fi_cq_data_entry e;
    uint64_t seq, got;

    for (seq = 0; seq < n; ++seq) {
        ASSERT_EQ(0, fi_inject(m_o.ep, &seq, 8, m_self));
    }
    wait_cntr(m_o.scntr, n);
    wait_recv_errors(n - ux_max);
    /* a receive for each message kept, no more: a receive left posted
     * would take the next part's messages */
    std::vector<uint64_t> in(ux_max, ~0ull);
    for (size_t i = 0; i < ux_max; ++i) {
        ASSERT_EQ(0, fi_recv(m_o.ep, &in[i], 8, NULL, FI_ADDR_UNSPEC,
                             &in[i]));
    }
    wait_cntr(m_o.rvcntr, ux_max);
    for (size_t i = 0; i < ux_max; ++i) {
        ASSERT_EQ(1, fi_cq_read(m_o.cq, &e, 1));
        ASSERT_EQ((void*)&in[i], e.op_context);
        memcpy(&got, &in[i], 8);
        EXPECT_EQ(i, got);
    }
    EXPECT_EQ(-FI_EAGAIN, fi_cq_read(m_o.cq, &e, 1));

    /* by bytes: max_msg_size messages, as many as the byte cap holds */
    const size_t fit = ux_bytes / msg_max;
    std::vector<uint8_t> big = pattern(msg_max, 9);
    uint64_t errors          = fi_cntr_readerr(m_o.rvcntr);
    send_big(m_o.ep, m_o.scntr, big, fit + 1, 0);
    wait_recv_errors(errors + 1);
    std::vector<uint8_t> rbuf(msg_max);
    for (size_t i = 0; i < fit; ++i) {
        ASSERT_EQ(0, fi_recv(m_o.ep, rbuf.data(), msg_max, NULL,
                             FI_ADDR_UNSPEC, NULL));
        wait_cntr(m_o.rvcntr, ux_max + i + 1);
        EXPECT_EQ((uint8_t)i, rbuf[0]);
        EXPECT_TRUE(std::equal(big.begin() + 1, big.end(), rbuf.begin() + 1));
    }
}

/* One source that filled its share leaves room for another: a second
 * endpoint's messages are kept while the first's beyond the cap are
 * dropped, and by bytes likewise. */
TEST_F(msg1p, one_source_cannot_fill_the_unexpected_queue)
{
    struct fid_ep *ep2 = NULL;
    struct fid_cntr *sent2 = NULL;
    fi_addr_t other;
    const size_t more = 5;
    uint64_t seq, got;

    open_sibling_ep(m_o, &ep2, &sent2, &other);
    ASSERT_FALSE(HasFatalFailure());

    /* the first source: its share and `more`, which are dropped */
    for (seq = 0; seq < ux_max + more; ++seq) {
        ASSERT_EQ(0, fi_inject(m_o.ep, &seq, 8, m_self));
    }
    wait_cntr(m_o.scntr, ux_max + more);
    wait_recv_errors(more);
    /* the second source's messages wait too */
    for (seq = 0; seq < more; ++seq) {
        uint64_t v = 1000000 + seq;
        ASSERT_EQ(0, fi_inject(ep2, &v, 8, m_self));
    }
    wait_cntr(sent2, more);
    std::vector<uint64_t> in(ux_max + more, ~0ull);
    for (size_t i = 0; i < in.size(); ++i) {
        ASSERT_EQ(0, fi_recv(m_o.ep, &in[i], 8, NULL, FI_ADDR_UNSPEC,
                             &in[i]));
    }
    wait_cntr(m_o.rvcntr, in.size());
    EXPECT_EQ(more, fi_cntr_readerr(m_o.rvcntr)) << "no more dropped";
    for (size_t i = 0; i < in.size(); ++i) {
        memcpy(&got, &in[i], 8);
        EXPECT_EQ((i < ux_max) ? i : 1000000 + (i - ux_max), got) << i;
    }

    /* by bytes: the first source's byte share, then one more of it
     * (dropped) and one of the second source (kept) */
    const size_t fit = ux_bytes / msg_max;
    std::vector<uint8_t> big = pattern(msg_max, 9);
    send_big(m_o.ep, m_o.scntr, big, fit + 1, 0);
    wait_recv_errors(more + 1);
    send_big(ep2, sent2, big, 1, 0xee);
    std::vector<uint8_t> rbuf(msg_max);
    uint64_t received = fi_cntr_read(m_o.rvcntr);
    for (size_t i = 0; i < fit + 1; ++i) {
        ASSERT_EQ(0, fi_recv(m_o.ep, rbuf.data(), msg_max, NULL,
                             FI_ADDR_UNSPEC, NULL));
        wait_cntr(m_o.rvcntr, received + i + 1);
        EXPECT_EQ((i < fit) ? (uint8_t)i : 0xee, rbuf[0]) << i;
    }
    EXPECT_EQ(more + 1, fi_cntr_readerr(m_o.rvcntr));
    EXPECT_EQ(0, fi_close(&ep2->fid));
    EXPECT_EQ(0, fi_close(&sent2->fid));
}

} // namespace

namespace {

/* a CQ bound with FI_SELECTIVE_COMPLETION: only the calls that ask
 * FI_COMPLETION get an entry, sends and receives alike; all are counted */
class msg1p_selective : public test_base {
};

TEST_F(msg1p_selective, only_fi_completion_reports)
{
    objects o;
    open_params p;
    uint8_t addr[64];
    size_t len = sizeof(addr);
    fi_addr_t self;
    char out[2][8] = {{"one"}, {"two"}}, in[2][8] = {};
    struct iovec siov = {out[1], 4}, riov = {in[1], sizeof(in[1])};
    struct fi_msg smsg = {}, rmsg = {};
    struct fi_cq_data_entry e[4];

    p.caps      = FI_MSG;
    p.cq_format = FI_CQ_FORMAT_DATA;
    p.cq_bind   = FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION;
    ASSERT_EQ(0, o.open_domain(p));
    ASSERT_EQ(0, o.open_ep());
    ASSERT_EQ(0, fi_getname(&o.ep->fid, addr, &len));
    ASSERT_EQ(1, fi_av_insert(o.av, addr, 1, &self, 0, NULL));

    ASSERT_EQ(0, fi_recv(o.ep, in[0], sizeof(in[0]), NULL, FI_ADDR_UNSPEC,
                         in[0]));
    rmsg.msg_iov   = &riov;
    rmsg.iov_count = 1;
    rmsg.addr      = FI_ADDR_UNSPEC;
    rmsg.context   = in[1];
    ASSERT_EQ(0, fi_recvmsg(o.ep, &rmsg, FI_COMPLETION));
    ASSERT_EQ(0, fi_send(o.ep, out[0], 4, NULL, self, out[0]));
    smsg.msg_iov   = &siov;
    smsg.iov_count = 1;
    smsg.addr      = self;
    smsg.context   = out[1];
    ASSERT_EQ(0, fi_sendmsg(o.ep, &smsg, FI_COMPLETION));
    wait_cntr(o.scntr, 2);
    wait_cntr(o.rvcntr, 2);
    EXPECT_STREQ("one", in[0]);
    EXPECT_STREQ("two", in[1]);
    ssize_t n = fi_cq_read(o.cq, e, 4);
    ASSERT_EQ(2, n);
    std::set<void*> got = {e[0].op_context, e[1].op_context};
    EXPECT_EQ((std::set<void*>{out[1], in[1]}), got);
}

} // namespace
