/*
 * Bounded waits: towards a target that stops answering (SIGSTOP) or never
 * progressed its worker, every operation ends within the operation timeout
 * whatever its strategy, with UCS_ERR_TIMED_OUT: UCP's own atomics (native,
 * CAS loop), target-side messages, endpoint and context flushes, fences,
 * and the first operation behind the flush of a newly unpacked key. After
 * a timeout of UCP's own operations the endpoint has failed: later calls
 * fail at once, every operation was reported exactly once (callbacks and
 * the bound counter), and the late completions UCP delivers once the
 * target continues change nothing the user sees; another endpoint of the
 * same context goes on working.
 *
 * Each test has its own target process (its own process group, stopped
 * and continued by signals) and a short timeout, so that a test costs
 * about a second.
 */
#include "fiatomic_test_env.h"

#include <signal.h>

using namespace fiatomic_test;

namespace {

const double TIMEOUT_SEC = 0.4;  /* the operation timeout of these tests */
const double SLACK_SEC   = 1.5;  /* beyond it: a wait that did not end */

/* what a callback saw */
struct seen {
    unsigned     calls  = 0;
    ucs_status_t status = UCS_INPROGRESS;
};

void count_cb(void *request, ucs_status_t status, void *user_data)
{
    seen *s = (seen*)user_data;

    ++s->calls;
    s->status = status;
}

class timeouts : public ::testing::TestWithParam<config> {
protected:
    void SetUp() override
    {
        std::string missing = transport_missing(GetParam().tl);

        if (!missing.empty()) {
            GTEST_SKIP() << missing;
        }
    }

    void TearDown() override
    {
        if (m_stopped) {
            kill(target_pid(), SIGCONT);
        }
        if (m_cntr != NULL) {
            fiatomic_ep_bind_cntr(m_conn->ep(), NULL);
            EXPECT_EQ(UCS_OK, fiatomic_cntr_close(m_cntr))
                    << "an operation still counts into the counter";
        }
        m_conn.reset();
    }

    void connect()
    {
        std::string skip, error;
        fiatomic_params_t params;

        memset(&params, 0, sizeof(params));
        params.field_mask = FIATOMIC_PARAM_FIELD_OP_TIMEOUT;
        params.op_timeout = TIMEOUT_SEC;
        m_conn = connection::create(GetParam(), {}, &params, &skip, &error);
        if ((m_conn == NULL) && !skip.empty()) {
            GTEST_SKIP() << skip;
        }
        ASSERT_TRUE(m_conn != NULL) << error;
        ASSERT_TRUE(m_conn->remote() != NULL) << "a target process";
        ASSERT_EQ(UCS_OK, fiatomic_cntr_open(m_conn->fia(), &m_cntr));
        ASSERT_EQ(UCS_OK, fiatomic_ep_bind_cntr(m_conn->ep(), m_cntr));
    }

    pid_t target_pid() { return m_conn->remote()->process().pid(); }

    void stop_target()
    {
        ASSERT_EQ(0, kill(target_pid(), SIGSTOP));
        m_stopped = true;
    }

    void continue_target()
    {
        ASSERT_EQ(0, kill(target_pid(), SIGCONT));
        m_stopped = false;
    }

    fiatomic_request_param_t param(seen *s)
    {
        fiatomic_request_param_t p;

        memset(&p, 0, sizeof(p));
        p.op_attr_mask = FIATOMIC_OP_ATTR_FIELD_CALLBACK |
                         FIATOMIC_OP_ATTR_FIELD_USER_DATA;
        p.cb           = count_cb;
        p.user_data    = s;
        return p;
    }

    /* fetch-add 1 on region 0's u64 at `offset` */
    ucs_status_ptr_t post_fetch_add(uint64_t offset, seen *s)
    {
        fiatomic_request_param_t p = param(s);

        return fiatomic_fetch_atomic_nbx(m_conn->ep(), &m_one, 1, &m_result,
                                         m_conn->base(0) + offset,
                                         m_conn->key(0), FI_UINT64, FI_SUM,
                                         &p);
    }

    /* Wait for `sptr` for at most the test's bound: its status, and how
     * long it took in *elapsed. An operation the transport cannot execute
     * under the forced strategy skips the test. */
    ucs_status_t wait_timed(ucs_status_ptr_t sptr, double *elapsed)
    {
        double start = now_sec();
        ucs_status_t status;

        status   = m_conn->wait(sptr, TIMEOUT_SEC + 10.0);
        *elapsed = now_sec() - start;
        return status;
    }

    void expect_within_timeout(double elapsed, const std::string &what)
    {
        EXPECT_GE(elapsed, TIMEOUT_SEC * 0.9) << what << ": too early";
        EXPECT_LT(elapsed, TIMEOUT_SEC + SLACK_SEC)
                << what << ": waited past the operation timeout";
        std::cout << "[ INFO     ] " << GetParam().name() << " " << what
                  << ": ended after " << elapsed << " s (timeout "
                  << TIMEOUT_SEC << " s)" << std::endl;
    }

    /* Whether the fetch-add takes the target side here (forced, or what
     * auto selects: UCX 1.22's tcp differs from 1.13's), whose timeout
     * leaves the endpoint usable. Asked before the target stops. */
    bool target_side()
    {
        fiatomic_cell_info_t info;

        EXPECT_EQ(0, fiatomic_query_cell(m_conn->ep(), m_conn->key(0),
                                         FIATOMIC_FAMILY_FETCH, FI_UINT64,
                                         FI_SUM, &info));
        return info.strategy == FIATOMIC_STRATEGY_TARGET;
    }

    /* The endpoint failed: a post and a flush fail at once. */
    void expect_failed_ep()
    {
        fiatomic_request_param_t p;
        uint64_t result;

        memset(&p, 0, sizeof(p));
        EXPECT_EQ(-FI_ETIMEDOUT, immediate_errno(fiatomic_fetch_atomic_nbx(
                                         m_conn->ep(), &m_one, 1, &result,
                                         m_conn->base(0), m_conn->key(0),
                                         FI_UINT64, FI_SUM, &p)))
                << "a post on the failed endpoint";
        EXPECT_EQ(-FI_ETIMEDOUT, immediate_errno(
                                         fiatomic_ep_flush_nbx(m_conn->ep(),
                                                               &p)))
                << "a flush of the failed endpoint";
    }

    /* The target continues; what UCP completes late is reported to nobody
     * a second time, and the counter stays as it was. */
    void continue_and_settle()
    {
        uint64_t value  = fiatomic_cntr_read(m_cntr);
        uint64_t errors = fiatomic_cntr_readerr(m_cntr);
        double end;

        ASSERT_NO_FATAL_FAILURE(continue_target());
        end = now_sec() + 0.3;
        while (now_sec() < end) {
            ucp_worker_progress(m_conn->worker());
        }
        EXPECT_EQ(value, fiatomic_cntr_read(m_cntr)) << "counted twice";
        EXPECT_EQ(errors, fiatomic_cntr_readerr(m_cntr)) << "counted twice";
    }

    std::unique_ptr<connection> m_conn;
    fiatomic_cntr_h             m_cntr    = NULL;
    bool                        m_stopped = false;
    uint64_t                    m_one     = 1;
    uint64_t                    m_result  = 0;
};

/* An operation to a stopped target: UCS_ERR_TIMED_OUT within the timeout,
 * one callback, one counted error; the endpoint has failed afterwards
 * (target-side: only the message, the endpoint stays usable). */
TEST_P(timeouts, stopped_target)
{
        fiatomic_request_param_t p2;
    ucp_ep_h ucp_ep2;
    fiatomic_ep_h ep2;
    std::string error;
    uint64_t k2, old2 = 0;
    double elapsed;
    seen s0, s1;

    ASSERT_NO_FATAL_FAILURE(connect());
    ASSERT_EQ(UCS_OK, m_conn->wait(post_fetch_add(0, &s0), 30.0));
    ASSERT_EQ(1u, fiatomic_cntr_read(m_cntr));
    /* another endpoint of the same context to the same target, idle while
     * the first one times out */
    const std::vector<uint8_t> &packed = m_conn->tgt().info().key[0];
    ASSERT_TRUE(m_conn->create_second_ep(&ucp_ep2, &ep2, &error)) << error;
    ASSERT_EQ(UCS_OK, fiatomic_rkey_unpack(ep2, packed.data(), packed.size(),
                                           &k2));

    const bool tgt = target_side();
    ASSERT_NO_FATAL_FAILURE(stop_target());
    m_result = 12345;
    EXPECT_EQ(UCS_ERR_TIMED_OUT, wait_timed(post_fetch_add(0, &s1), &elapsed));
    expect_within_timeout(elapsed, "fetch-add");
    EXPECT_EQ(1u, s1.calls);
    EXPECT_EQ(UCS_ERR_TIMED_OUT, s1.status);
    EXPECT_EQ(1u, fiatomic_cntr_read(m_cntr));
    EXPECT_EQ(1u, fiatomic_cntr_readerr(m_cntr));

    if (!tgt) {
        expect_failed_ep();
    }
    ASSERT_NO_FATAL_FAILURE(continue_and_settle());
    EXPECT_EQ(1u, s1.calls) << "a late completion was reported again";
    EXPECT_EQ(12345u, m_result) << "a late completion wrote the result";
    if (tgt) {
        EXPECT_EQ(UCS_OK, m_conn->wait(post_fetch_add(0, &s0), 30.0))
                << "the endpoint is not usable after a target-side timeout";
    } else {
        expect_failed_ep();
    }

    /* the other endpoint was not touched by the failure */
    memset(&p2, 0, sizeof(p2));
    EXPECT_EQ(UCS_OK, m_conn->wait(fiatomic_fetch_atomic_nbx(
                                           ep2, &m_one, 1, &old2,
                                           m_conn->base(0) + 64 * 8, k2,
                                           FI_UINT64, FI_SUM, &p2), 30.0))
            << "another endpoint failed with the first";
    EXPECT_EQ(UCS_OK, m_conn->wait(fiatomic_ep_flush_nbx(ep2, &p2), 30.0));
    m_conn->destroy_second_ep(ucp_ep2, ep2);
}

/* A program that waits by progressing the worker alone (its own
 * completion queues and counters: libfabric's provider) and calls
 * fiatomic_check_overdue() now and then: the operation to a stopped target
 * still ends within the timeout, reported once through its callback.
 * Progressing the worker alone never ended a target-side one (only the
 * library's own calls looked at it). */
TEST_P(timeouts, stopped_target_waited_by_worker_progress)
{
    double start, elapsed, next;
    ucs_status_ptr_t sptr;
    seen s0, s1;

    ASSERT_NO_FATAL_FAILURE(connect());
    ASSERT_EQ(UCS_OK, m_conn->wait(post_fetch_add(0, &s0), 30.0));
    ASSERT_NO_FATAL_FAILURE(stop_target());

    start = now_sec();
    sptr  = post_fetch_add(0, &s1);
    ASSERT_TRUE(UCS_PTR_IS_PTR(sptr)) << "a stopped target answered";
    fiatomic_request_free(sptr); /* the callback reports it */
    next = start;
    while ((s1.calls == 0) && (now_sec() - start < TIMEOUT_SEC + 10.0)) {
        ucp_worker_progress(m_conn->worker());
        if (now_sec() >= next) { /* every 10 ms, as the provider does */
            fiatomic_check_overdue(m_conn->fia());
            next = now_sec() + 0.01;
        }
    }
    elapsed = now_sec() - start;
    EXPECT_EQ(1u, s1.calls);
    EXPECT_EQ(UCS_ERR_TIMED_OUT, s1.status);
    expect_within_timeout(elapsed, "fetch-add waited by worker progress");
    EXPECT_EQ(1u, fiatomic_cntr_readerr(m_cntr));
    ASSERT_NO_FATAL_FAILURE(continue_and_settle());
    EXPECT_EQ(1u, s1.calls) << "a late completion was reported again";
}

/* A window of operations, a fence and a flush behind them: all end within
 * the timeout, each reported once. */
TEST_P(timeouts, stopped_target_window_fence_flush)
{
    const int n = 8;
    ucs_status_ptr_t sptr[n + 2];
    fiatomic_request_param_t p;
    seen s[n + 2];
    double start, elapsed;
    int i;

    ASSERT_NO_FATAL_FAILURE(connect());
    ASSERT_EQ(UCS_OK, m_conn->wait(post_fetch_add(0, &s[0]), 30.0));
    s[0] = seen();

    ASSERT_NO_FATAL_FAILURE(stop_target());
    start = now_sec();
    for (i = 0; i < n; ++i) {
        sptr[i] = post_fetch_add(8 * i, &s[i]);
    }
    p               = param(&s[n]);
    p.op_attr_mask |= FIATOMIC_OP_ATTR_FIELD_FLAGS;
    p.flags         = FI_FENCE;
    sptr[n] = fiatomic_fetch_atomic_nbx(m_conn->ep(), &m_one, 1, &m_result,
                                        m_conn->base(0), m_conn->key(0),
                                        FI_UINT64, FI_SUM, &p);
    p           = param(&s[n + 1]);
    sptr[n + 1] = fiatomic_ep_flush_nbx(m_conn->ep(), &p);
    for (i = 0; i < n + 2; ++i) {
        EXPECT_EQ(UCS_ERR_TIMED_OUT, m_conn->wait(sptr[i], TIMEOUT_SEC + 10.0))
                << "request " << i;
    }
    elapsed = now_sec() - start;
    expect_within_timeout(elapsed, "8 fetch-adds, a fetch-add and a flush");
    for (i = 0; i < n + 2; ++i) {
        EXPECT_EQ(1u, s[i].calls) << "request " << i;
    }
    EXPECT_EQ(1u, fiatomic_cntr_read(m_cntr));
    EXPECT_EQ((uint64_t)n + 1, fiatomic_cntr_readerr(m_cntr));
    ASSERT_NO_FATAL_FAILURE(continue_and_settle());
    for (i = 0; i < n + 2; ++i) {
        EXPECT_EQ(1u, s[i].calls) << "request " << i << " reported again";
    }
}

/* A base-family post completes locally; the endpoint flush and the
 * context flush that must carry it to the stopped target time out. */
TEST_P(timeouts, stopped_target_flush)
{
    fiatomic_request_param_t p;
    ucs_status_t status;
    double elapsed;
    seen s0, sf;

    ASSERT_NO_FATAL_FAILURE(connect());
    ASSERT_EQ(UCS_OK, m_conn->wait(post_fetch_add(0, &s0), 30.0));
    const bool tgt = target_side();
    ASSERT_NO_FATAL_FAILURE(stop_target());
    memset(&p, 0, sizeof(p));
    /* done at once, or in flight: the flush waits for it either way */
    ucs_status_ptr_t post = fiatomic_atomic_nbx(m_conn->ep(), &m_one, 1,
                                                m_conn->base(0) + 8,
                                                m_conn->key(0), FI_UINT64,
                                                FI_SUM, &p);
    ASSERT_FALSE(UCS_PTR_IS_ERR(post));
    p      = param(&sf);
    status = wait_timed(fiatomic_flush_nbx(m_conn->fia(), &p), &elapsed);
    if (tgt) {
        /* the post's message times out alone; the flush then completes
         * with it where UCP holds nothing more of ours (posix), or times
         * out on UCP's own flush of the endpoint (tcp) */
        EXPECT_TRUE((status == UCS_ERR_TIMED_OUT) || (status == UCS_OK))
                << ucs_status_string(status);
    } else {
        EXPECT_EQ(UCS_ERR_TIMED_OUT, status);
    }
    expect_within_timeout(elapsed, "context flush");
    EXPECT_EQ(1u, sf.calls);
    if (post != NULL) {
        EXPECT_EQ(UCS_ERR_TIMED_OUT, m_conn->wait(post, 1.0));
    }
    ASSERT_NO_FATAL_FAILURE(continue_and_settle());
    EXPECT_EQ(1u, sf.calls);
}

/* The target exposed its memory and handed out its key, and has not
 * progressed since: the first operation on the new key (behind the flush
 * that its unpacking queued on software-atomic endpoints) times out. */
TEST_P(timeouts, never_progressed_target)
{
    double elapsed;
    double result = 0;
    double operand = 1.5;
    fiatomic_request_param_t p;
    seen s;

    /* stopped before the initiator's context and endpoint exist: nothing
     * of ours was ever progressed by it */
    ASSERT_NO_FATAL_FAILURE(connect());
    ASSERT_NO_FATAL_FAILURE(stop_target());
    /* a fresh key: unpacking queues the first-use flush again on a new
     * endpoint */
    ucp_ep_h ucp_ep2;
    fiatomic_ep_h ep2;
    uint64_t k2;
    std::string error;
    const std::vector<uint8_t> &packed = m_conn->tgt().info().key[0];

    ASSERT_TRUE(m_conn->create_second_ep(&ucp_ep2, &ep2, &error)) << error;
    ASSERT_EQ(UCS_OK, fiatomic_rkey_unpack(ep2, packed.data(), packed.size(),
                                           &k2));
    p = param(&s);
    if (GetParam().strategy == "native") {
        /* no native MIN on doubles: a fetch-add */
        EXPECT_EQ(UCS_ERR_TIMED_OUT,
                  wait_timed(fiatomic_fetch_atomic_nbx(ep2, &m_one, 1,
                                                       &m_result,
                                                       m_conn->base(0) + 64,
                                                       k2, FI_UINT64, FI_SUM,
                                                       &p), &elapsed));
    } else {
        EXPECT_EQ(UCS_ERR_TIMED_OUT,
                  wait_timed(fiatomic_fetch_atomic_nbx(ep2, &operand, 1,
                                                       &result,
                                                       m_conn->base(0) + 64,
                                                       k2, FI_DOUBLE, FI_MIN,
                                                       &p), &elapsed));
    }
    expect_within_timeout(elapsed, "first operation on a new key");
    EXPECT_EQ(1u, s.calls);
    ASSERT_NO_FATAL_FAILURE(continue_and_settle());
    EXPECT_EQ(1u, s.calls);
    fiatomic_ep_destroy(ep2);
    ucp_ep_close_blocking(m_conn->worker(), ucp_ep2, false);
}

#define TIMEOUTS_INSTANTIATE(_tl, _mem, _strategy) \
    FIATOMIC_TEST_INSTANTIATE(timeouts, _tl, _mem, _strategy)
TIMEOUTS_INSTANTIATE(tcp, user, auto)
TIMEOUTS_INSTANTIATE(tcp, user, native)
TIMEOUTS_INSTANTIATE(tcp, user, cas)
TIMEOUTS_INSTANTIATE(tcp, user, target)
TIMEOUTS_INSTANTIATE(posix, user, auto)
TIMEOUTS_INSTANTIATE(posix, user, cas)
TIMEOUTS_INSTANTIATE(posix, user, target)

} // namespace
