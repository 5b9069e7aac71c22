/*
 * Faults: the target process is killed (SIGKILL) while operations, CAS loops
 * included, are outstanding. Every request completes in bounded time (with
 * an error where the target had to act), flush and later operations do not
 * hang, the initiator shuts down cleanly, nothing crashes.
 *
 * The initiator is a fiatomic_test_peer process too, so that a crash in it
 * (in the library or in UCX) fails this test instead of the whole suite.
 */
#include "fiatomic_test_env.h"

#include <signal.h>
#include <sys/wait.h>

using namespace fiatomic_test;

namespace {

const double BOUND_SEC = 20.0;

class faults : public ::testing::TestWithParam<config> {
protected:
    void SetUp() override
    {
        std::string missing = transport_missing(GetParam().tl), error;
        kv_list env;

        if (!missing.empty()) {
            GTEST_SKIP() << missing;
        }
        if ((GetParam().tl == "posix") && !GetParam().alloc &&
            ucp_amo_on_peer_err_eps()) {
            /* Memory posix cannot map is reached by UCP's software atomics
             * (active messages over the shared-memory FIFO). UCX 1.13.1
             * cannot fail those when the peer dies: with
             * UCX_POSIX_ERROR_HANDLING=y and keepalive, 80-120 of 120
             * requests stay outstanding 20 s after the kill, or UCX aborts
             * in uct_mm_ep_pending_purge (a stub in 1.13.1). UCX 1.22 with
             * its v1 protocols (UCX_PROTO_ENABLE=n, which these endpoints
             * need for UCP's atomics there) leaves 120 of 120 outstanding;
             * with its default protocols UCP's atomics are not used here
             * and the suite runs. */
            GTEST_SKIP() << "UCX's posix transport cannot report a dead "
                         << "peer's software-atomic requests (UCX 1.13.1: no "
                         << "pending purge in its mm transport; UCX 1.22 "
                         << "with UCX_PROTO_ENABLE=n: none failed 20 s after "
                         << "the kill)";
        }
        ASSERT_TRUE(m_target.start(GetParam().tl, GetParam().alloc, &error,
                                   GetParam().am)) << error;
        /* detect a dead peer quickly over shared memory too */
        env = peer_env(GetParam().tl, GetParam().strategy, GetParam().am);
        env.push_back({"UCX_KEEPALIVE_INTERVAL", "200ms"});
        for (const auto &kv : extra_env()) {
            env.push_back(kv);
        }
        ASSERT_TRUE(start_initiator(&m_initiator, m_target, env, &error))
                << error;
    }

    virtual kv_list extra_env() const { return {}; }

    /* The initiator posts (`post`: MSG_FAULT_POST or MSG_FAULT_POST_BASE),
     * after the target stopped progressing if `pause`; the target is killed;
     * the initiator waits, flushes and answers with its report. */
    bool post_then_kill(uint32_t post, bool pause, fault_report *r)
    {
        std::string error;
        bytes b;

        if (pause && !m_target.pause(&error)) {
            ADD_FAILURE() << error;
            return false;
        }
        if (!m_initiator.request(post, NULL, 0, NULL, &error)) {
            ADD_FAILURE() << error;
            return false;
        }
        m_target.process().kill_now();
        b.put<double>(BOUND_SEC);
        if (!m_initiator.send(MSG_FAULT_WAIT, b.data().data(),
                              b.data().size(), &error)) {
            ADD_FAILURE() << error;
            return false;
        }
        return collect(r);
    }

    /* The target stops progressing, operations are posted, the target
     * dies. */
    void kill_with_operations_outstanding()
    {
        fault_report r;

        if (post_then_kill(MSG_FAULT_POST, true, &r)) {
            check(r, true);
            /* the counter wait for every operation: an error on the way,
             * or all of them done */
            if (r.pending == 0) {
                EXPECT_EQ((r.errors_after_wait > r.errors_before_wait) ?
                          -FI_EAVAIL : 0, r.cntr_wait)
                        << r.errors_before_wait << " errors before the "
                        << "wait, " << r.errors_after_wait << " after";
            }
            if (r.target_needed && (r.pending == 0)) {
                /* the paused target executed nothing: its operations
                 * failed */
                EXPECT_GT(r.errors_after_wait, 0u);
            }
        }
    }

    /* the initiator's answer, or why there is none (a crash: its exit
     * status is reported by TearDown) */
    bool collect(fault_report *r)
    {
        std::vector<uint8_t> reply;
        std::string error;

        memset(r, 0, sizeof(*r));
        if (!m_initiator.receive_ok(&reply, &error,
                                    (int)(4 * BOUND_SEC * 1000))) {
            ADD_FAILURE() << "no answer from the initiator: " << error;
            return false;
        }
        if (reply.size() != sizeof(*r)) {
            ADD_FAILURE() << "bad answer from the initiator";
            return false;
        }
        memcpy(r, reply.data(), sizeof(*r));
        return true;
    }

    /* `paused`: the target stopped progressing before the operations were
     * posted, so none of those it had to execute can have succeeded */
    void check(const fault_report &r, bool paused)
    {
        EXPECT_GT(r.posted, 0u);
        EXPECT_EQ(0u, r.pending) << r.pending << " of " << r.posted
                                 << " operations still outstanding "
                                 << BOUND_SEC << " s after the target died ("
                                 << r.failed << " failed)";
        if (paused) {
            EXPECT_EQ(0u, r.wrong) << "operations the dead target had to "
                                   << "execute completed successfully";
        }
        if (r.pending == 0) {
            EXPECT_EQ(0u, r.flush_pending) << "flush did not complete";
            EXPECT_EQ(0u, r.later_pending)
                    << "operations posted after the failure hang";
            EXPECT_EQ(0u, r.quiet_pending)
                    << "the context flush did not complete";
        }
        if ((r.pending == 0) && (r.later_pending == 0)) {
            /* the counter bound to the endpoint counted every operation
             * whose call returned no error, exactly once, by outcome */
            EXPECT_EQ(r.accepted_ok, r.cntr_value) << "counter value";
            EXPECT_EQ(r.accepted_failed, r.cntr_errors) << "counter errors";
        }
        std::cout << "[ INFO     ] " << r.posted << " posted, " << r.failed
                  << " failed, done in " << r.seconds << " s; counter "
                  << r.cntr_value << " + " << r.cntr_errors
                  << " errors; context flush: "
                  << ucs_status_string((ucs_status_t)r.quiet_status)
                  << std::endl;
    }

    void TearDown() override
    {
        std::string error;

        if (m_initiator.running()) {
            EXPECT_TRUE(m_initiator.stop(&error, (int)(3 * BOUND_SEC * 1000)))
                    << "the initiator after the failure: " << error;
        }
    }

    proto_env     m_proto{GetParam()}; /* outlives the peers */
    remote_target m_target;
    peer_process  m_initiator;
};

TEST_P(faults, killed_with_operations_outstanding)
{
    kill_with_operations_outstanding();
}

/* The target dies while operations are being posted and executed. */
TEST_P(faults, killed_while_running)
{
    std::string error;
    fault_report r;
    bytes b;

    b.put<double>(BOUND_SEC);
    ASSERT_TRUE(m_initiator.request(MSG_FAULT_RUN, b.data().data(),
                                    b.data().size(), NULL, &error)) << error;
    usleep(300000);
    m_target.process().kill_now();
    if (collect(&r)) {
        check(r, false);
        if (r.target_needed) {
            EXPECT_GT(r.failed, 0u) << "nothing failed within " << BOUND_SEC
                                    << " s of the target's death";
        }
    }
}

#define FAULTS_INSTANTIATE(_tl, _mem, _strategy) \
    FIATOMIC_TEST_INSTANTIATE(faults, _tl, _mem, _strategy)
FAULTS_INSTANTIATE(tcp, user, auto)
FAULTS_INSTANTIATE(tcp, user, cas)
FAULTS_INSTANTIATE(tcp, user, target)
FAULTS_INSTANTIATE(posix, user, auto)
FAULTS_INSTANTIATE(posix, user, cas)
FAULTS_INSTANTIATE(posix, alloc, cas)

/*
 * Base-family posts over tcp complete locally only; the target dies; the
 * flush that must carry them to the target fails. Over an endpoint in UCP's
 * default error mode (no UCP_ERR_HANDLING_MODE_PEER, as many applications
 * create them) UCP fails every later flush of the failed endpoint at once:
 * the library's flush must end with that error, not retry for ever.
 */
class faults_default_err_mode : public faults {
protected:
    kv_list extra_env() const override
    {
        return {{"FIATOMIC_TEST_EP_ERR_MODE", "none"}};
    }
};

TEST_P(faults_default_err_mode, flush_after_local_completions)
{
    fault_report r;

    if (post_then_kill(MSG_FAULT_POST_BASE, false, &r)) {
        EXPECT_EQ(0u, r.pending);
        EXPECT_EQ(0u, r.flush_pending) << "flush did not complete";
    }
}

INSTANTIATE_TEST_SUITE_P(tcp_user_native, faults_default_err_mode,
                         ::testing::Values(make_config("tcp", "user",
                                                       "native")),
                         config_name());

} // namespace
