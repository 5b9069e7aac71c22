/*
 * Configurations the library supports must not log errors, and what the
 * context-level queries report supported there must be what the calls do;
 * the strategy of each cell and call shows at UCX's trace levels.
 */
#include "fiatomic_test_env.h"
#include "test_ucx_log.h"

#include <ucs/config/global_opts.h>
#include <ucs/debug/log_def.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

using namespace fiatomic_test;

namespace {

class configuration : public ::testing::TestWithParam<config> {
};

/* A UCP context without UCP_FEATURE_AM is a supported configuration (no
 * target-side execution): creating the library's context on it logs
 * nothing, and a cell only target-side execution could serve on a peer's
 * key (CSWAP on long double complex) is not reported supported. */
TEST_P(configuration, without_am_feature)
{
    std::string skip, error;
    size_t count = 0;

    test_common::ucx_log_count_reset();
    auto conn = connection::create(GetParam(), {}, NULL, &skip, &error);
    unsigned logged_problems = test_common::ucx_log_count();
    if (!skip.empty()) {
        GTEST_SKIP() << skip;
    }
    ASSERT_TRUE(conn != NULL) << error;
    EXPECT_EQ(0u, logged_problems) << "UCX ERROR/WARN lines while creating "
                                     "the contexts and the endpoint";

    EXPECT_EQ(-FI_EOPNOTSUPP,
              fiatomic_compare_atomicvalid(conn->fia(), FI_LONG_DOUBLE_COMPLEX,
                                           FI_CSWAP, &count));
    /* every cell of up to 8 bytes is, through UCP's own atomics */
    EXPECT_EQ(0, fiatomic_compare_atomicvalid(conn->fia(), FI_UINT64,
                                              FI_CSWAP_GT, &count));
    EXPECT_EQ(0, fiatomic_atomicvalid(conn->fia(), FI_INT8, FI_PROD, &count));
}

INSTANTIATE_TEST_SUITE_P(noam, configuration,
                         ::testing::Values(config{"self", false, "auto", false},
                                           config{"posix", true, "auto",
                                                  false},
                                           config{"tcp", false, "auto",
                                                  false}),
                         config_name());

/* The library's trace lines, captured (and kept off the output). */
std::vector<std::pair<ucs_log_level_t, std::string>> traced;

ucs_log_func_rc_t capture_trace(const char *file, unsigned line,
                                const char *function, ucs_log_level_t level,
                                const ucs_log_component_config_t *comp_conf,
                                const char *message, va_list ap)
{
    char buf[512];
    va_list aq;

    if (level < UCS_LOG_LEVEL_DEBUG) {
        return UCS_LOG_FUNC_RC_CONTINUE;
    }
    va_copy(aq, ap);
    vsnprintf(buf, sizeof(buf), message, aq);
    va_end(aq);
    if (strncmp(buf, "fiatomic: ", 10) == 0) {
        traced.emplace_back(level, buf);
    }
    return UCS_LOG_FUNC_RC_STOP;
}

/* UCX_LOG_LEVEL=debug shows the strategy chosen for a cell of a key once,
 * and =req the strategy of every call: the one fiatomic_query_cell
 * reports. (UCX's own handler prints the request level only in a UCX
 * built with trace logging; the lines reach every log handler.) */
TEST(strategy_trace, cell_once_call_each)
{
    std::string skip, error;
    fiatomic_cell_info_t info;
    uint64_t one = 1, old = 0;

    auto conn = connection::create(FIATOMIC_TEST_CONFIG(self, alloc, auto),
                                   {}, NULL, &skip, &error);
    if (!skip.empty()) {
        GTEST_SKIP() << skip;
    }
    ASSERT_TRUE(conn != NULL) << error;
    uint64_t addr = conn->base(0) + 64;

    ucs_log_level_t saved = ucs_global_opts.log_component.log_level;
    traced.clear();
    ucs_log_push_handler(capture_trace);
    ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_TRACE_REQ;
    ucs_status_t s1 = conn->wait(fiatomic_fetch_atomic_nbx(
            conn->ep(), &one, 1, &old, addr, conn->key(0), FI_UINT64,
            FI_SUM, NULL));
    ucs_status_t s2 = conn->wait(fiatomic_fetch_atomic_nbx(
            conn->ep(), &one, 1, &old, addr, conn->key(0), FI_UINT64,
            FI_SUM, NULL));
    ucs_global_opts.log_component.log_level = saved;
    ucs_log_pop_handler();
    ASSERT_EQ(UCS_OK, s1);
    ASSERT_EQ(UCS_OK, s2);
    ASSERT_EQ(0, fiatomic_query_cell(conn->ep(), conn->key(0),
                                     FIATOMIC_FAMILY_FETCH, FI_UINT64,
                                     FI_SUM, &info));
    std::string strategy = fiatomic_strategy_name(info.strategy);

    unsigned cell_lines = 0, call_lines = 0;
    std::string all;
    for (auto &t : traced) {
        all += "\n  " + t.second;
        if (t.second.find("fetch FI_SUM FI_UINT64") == std::string::npos) {
            continue;
        }
        if (t.first == UCS_LOG_LEVEL_DEBUG) {
            ++cell_lines;
            EXPECT_NE(std::string::npos, t.second.find(": " + strategy))
                    << t.second;
        } else if (t.first == UCS_LOG_LEVEL_TRACE_REQ) {
            ++call_lines;
            EXPECT_NE(std::string::npos, t.second.find(" x1: " + strategy))
                    << t.second;
        }
    }
    EXPECT_EQ(1u, cell_lines) << "selection lines:" << all;
    EXPECT_EQ(2u, call_lines) << "call lines:" << all;
}

/* UCX 1.22's default protocols (v2), stated while alive (and unset again
 * on every way out) where the environment says nothing */
struct proto_default {
    bool set = ucx_at_least_1_22() && (getenv("UCX_PROTO_ENABLE") == NULL) &&
               (setenv("UCX_PROTO_ENABLE", "y", 1) == 0);
    ~proto_default()
    {
        if (set) {
            unsetenv("UCX_PROTO_ENABLE");
        }
    }
};

/*
 * UCP atomics on an endpoint with the peer error mode, by UCX version, with
 * UCX's default protocols: UCX 1.13.1 executes them; UCX 1.22 (v2
 * protocols) has none for such endpoints (the operation fails with "cannot
 * find remote protocol" and UCP fails the endpoint). A forced native or cas
 * strategy must then be refused, clearly: by fiatomic_query_cell, by the
 * context query and by the call, with the endpoint left working. (The other
 * suites run those strategies on UCX 1.22 with UCX_PROTO_ENABLE=n, which
 * has them: wants_proto_v1.)
 */
TEST(peer_error_mode, ucp_atomics_by_ucx_version)
{
    proto_default proto;

    for (const char *strategy : {"native", "cas"}) {
        std::string skip, error, what = std::string("tcp, forced ") + strategy;
        config cfg = {"tcp", false, strategy, false};
        bool ucp   = ucp_amo_on_peer_err_eps();
        fiatomic_cell_info_t info;
        uint64_t one = 1, old = 0, value = 7, after = 0;
        size_t count = 0;

        auto conn = connection::create(cfg, {}, NULL, &skip, &error);
        if (!skip.empty()) {
            GTEST_SKIP() << skip;
        }
        ASSERT_TRUE(conn != NULL) << what << ": " << error;
        EXPECT_EQ(!ucx_at_least_1_22(), ucp) << what;
        ASSERT_TRUE(conn->tgt().write(0, 0, &value, sizeof(value), &error))
                << error;

        ASSERT_EQ(0, fiatomic_query_cell(conn->ep(), conn->key(0),
                                         FIATOMIC_FAMILY_FETCH, FI_UINT64,
                                         FI_SUM, &info)) << what;
        EXPECT_EQ(ucp ? strategy_from_name(strategy) : FIATOMIC_STRATEGY_NONE,
                  info.strategy) << what;
        EXPECT_EQ(ucp ? 0 : -FI_EOPNOTSUPP,
                  fiatomic_fetch_atomicvalid(conn->fia(), FI_UINT64, FI_SUM,
                                             &count)) << what;

        ucs_status_ptr_t p = fiatomic_fetch_atomic_nbx(
                conn->ep(), &one, 1, &old, conn->base(0), conn->key(0),
                FI_UINT64, FI_SUM, NULL);
        if (ucp) {
            EXPECT_EQ(UCS_OK, conn->wait(p, 10.0)) << what;
            EXPECT_EQ(7u, old) << what;
        } else {
            EXPECT_EQ(-FI_EOPNOTSUPP, immediate_errno(p)) << what;
        }
        /* the endpoint still works, and the target has what the call did */
        EXPECT_EQ(UCS_OK, conn->flush(10.0)) << what;
        EXPECT_EQ(UCS_OK, conn->ep_status()) << what;
        ASSERT_TRUE(conn->tgt().read(0, 0, &after, sizeof(after), &error))
                << error;
        EXPECT_EQ(ucp ? 8u : 7u, after) << what;
    }
}

/*
 * An endpoint without the peer error mode keeps UCP's atomics on every UCX
 * version, whatever other lanes it has: UCP marks the lane that carries its
 * wireup messages for the endpoint's whole life ("wireup"), error mode or
 * not, and that mark must not take the native strategy away (over
 * self,tcp the endpoint has a self amo lane and a tcp wireup lane). An
 * endpoint whose creator says it has the mode (FIATOMIC_EP_FLAG_PEER_ERR_MODE:
 * a client's endpoint to a socket address shows its keepalive lane only
 * once wireup ends) is refused UCP's atomics exactly where the peer error
 * mode has none (ucp_atomics_by_ucx_version), and keeps working.
 */
TEST(peer_error_mode, stated_by_the_flag_not_by_the_wireup_lane)
{
    proto_default proto;
    std::string skip, error;
    config cfg = {"self", false, "native", true};
    uint64_t one = 1, old = 0, value = 7, after = 0;
    fiatomic_cell_info_t info;

    if (!transport_missing("tcp").empty()) {
        GTEST_SKIP() << transport_missing("tcp");
    }
    auto conn = connection::create(cfg, {{"TLS", "self,tcp"}}, NULL, &skip,
                                   &error);
    if (!skip.empty()) {
        GTEST_SKIP() << skip;
    }
    ASSERT_TRUE(conn != NULL) << error;
    ASSERT_TRUE(conn->tgt().write(0, 0, &value, sizeof(value), &error))
            << error;

    /* no error mode, no flag: native, and UCP's fetch-add runs */
    ASSERT_EQ(0, fiatomic_query_cell(conn->ep(), conn->key(0),
                                     FIATOMIC_FAMILY_FETCH, FI_UINT64, FI_SUM,
                                     &info));
    EXPECT_EQ(FIATOMIC_STRATEGY_NATIVE, info.strategy);
    ucs_status_ptr_t p = fiatomic_fetch_atomic_nbx(
            conn->ep(), &one, 1, &old, conn->base(0), conn->key(0), FI_UINT64,
            FI_SUM, NULL);
    EXPECT_EQ(UCS_OK, conn->wait(p, 10.0));
    EXPECT_EQ(7u, old);

    /* the flag: UCP's atomics only where peer-error-mode endpoints have
     * them */
    fiatomic_ep_params_t params = {};
    params.field_mask = FIATOMIC_EP_PARAM_FIELD_FLAGS;
    params.flags      = FIATOMIC_EP_FLAG_PEER_ERR_MODE;
    ucp_ep_h ucp_ep2;
    fiatomic_ep_h ep2;
    uint64_t key2;
    bool ucp = ucp_amo_on_peer_err_eps();
    const std::vector<uint8_t> &packed = conn->tgt().info().key[0];

    ASSERT_TRUE(conn->create_second_ep(&ucp_ep2, &ep2, &error, &params))
            << error;
    ASSERT_EQ(UCS_OK, fiatomic_rkey_unpack(ep2, packed.data(), packed.size(),
                                           &key2));
    ASSERT_EQ(0, fiatomic_query_cell(ep2, key2, FIATOMIC_FAMILY_FETCH,
                                     FI_UINT64, FI_SUM, &info));
    EXPECT_EQ(ucp ? FIATOMIC_STRATEGY_NATIVE : FIATOMIC_STRATEGY_NONE,
              info.strategy);
    p = fiatomic_fetch_atomic_nbx(ep2, &one, 1, &old, conn->base(0), key2,
                                  FI_UINT64, FI_SUM, NULL);
    if (ucp) {
        EXPECT_EQ(UCS_OK, conn->wait(p, 10.0));
        EXPECT_EQ(8u, old);
    } else {
        EXPECT_EQ(-FI_EOPNOTSUPP, immediate_errno(p));
    }
    EXPECT_EQ(UCS_OK, fiatomic_rkey_release(ep2, key2));
    conn->destroy_second_ep(ucp_ep2, ep2);

    EXPECT_EQ(UCS_OK, conn->flush(10.0));
    ASSERT_TRUE(conn->tgt().read(0, 0, &after, sizeof(after), &error))
            << error;
    EXPECT_EQ(ucp ? 9u : 8u, after);
}

/* The error lines of fiatomic_create(), captured (and kept off the
 * output: UCX ERROR lines that are expected here). */
std::vector<std::string> create_errors;

ucs_log_func_rc_t capture_error(const char *file, unsigned line,
                                const char *function, ucs_log_level_t level,
                                const ucs_log_component_config_t *comp_conf,
                                const char *message, va_list ap)
{
    char buf[512];
    va_list aq;

    if (level != UCS_LOG_LEVEL_ERROR) {
        return UCS_LOG_FUNC_RC_CONTINUE;
    }
    va_copy(aq, ap);
    vsnprintf(buf, sizeof(buf), message, aq);
    va_end(aq);
    create_errors.emplace_back(buf);
    return UCS_LOG_FUNC_RC_STOP;
}

/* One environment variable set for a scope, restored at its end. */
class scoped_env {
public:
    scoped_env(const char *name, const char *value) : m_name(name)
    {
        const char *old = getenv(name);

        m_had = (old != NULL);
        if (m_had) {
            m_old = old;
        }
        setenv(name, value, 1);
    }

    ~scoped_env()
    {
        if (m_had) {
            setenv(m_name.c_str(), m_old.c_str(), 1);
        } else {
            unsetenv(m_name.c_str());
        }
    }

private:
    std::string m_name, m_old;
    bool        m_had;
};

/*
 * fiatomic_create() refuses a malformed setting (FIATOMIC_STRATEGY,
 * FIATOMIC_OP_TIMEOUT, FIATOMIC_CAS_HANDOFF) or op_timeout parameter: it
 * returns UCS_ERR_INVALID_PARAM, says which setting in its error line (the
 * parameter needs none: the caller passed it), and leaves the caller's
 * handle untouched; what it had allocated is freed (the ASan build's leak
 * check fails otherwise). Each refusal leaves the worker as it was: a
 * well-formed call on it afterwards succeeds.
 */
TEST(create, refuses_malformed_settings)
{
    struct bad_setting {
        const char *name, *value;
    };
    const bad_setting bad[] = {
        {"FIATOMIC_STRATEGY", "fastest"},
        {"FIATOMIC_OP_TIMEOUT", "soon"},
        {"FIATOMIC_OP_TIMEOUT", "-1"},
        {"FIATOMIC_CAS_HANDOFF", "maybe"},
    };
    std::string missing = transport_missing("self"), error;
    fiatomic_h sentinel = reinterpret_cast<fiatomic_h>(uintptr_t(0x5a5a));
    fiatomic_params_t params;
    ucp_setup setup = {};
    fiatomic_h fia;

    if (!missing.empty()) {
        GTEST_SKIP() << missing;
    }
    ASSERT_EQ(UCS_OK, ucp_setup_create({{"TLS", "self"}}, NULL, true, &setup,
                                       &error)) << error;
    /* the worker without a context: each call below starts from there */
    fiatomic_destroy(setup.fia);
    setup.fia = NULL;

    ucs_log_push_handler(capture_error);
    for (const bad_setting &b : bad) {
        scoped_env env(b.name, b.value);

        create_errors.clear();
        fia = sentinel;
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  fiatomic_create(setup.context, setup.worker, NULL, &fia))
                << b.name << "=" << b.value;
        EXPECT_EQ(sentinel, fia) << b.name << "=" << b.value;
        ASSERT_EQ(1u, create_errors.size()) << b.name << "=" << b.value;
        EXPECT_NE(std::string::npos,
                  create_errors[0].find(std::string(b.name) + " '" + b.value +
                                        "'"))
                << create_errors[0];
    }

    /* the parameter goes before FIATOMIC_OP_TIMEOUT, which is well-formed */
    for (double timeout : {0.0, -2.0, (double)NAN}) {
        scoped_env env("FIATOMIC_OP_TIMEOUT", "10");

        create_errors.clear();
        memset(&params, 0, sizeof(params));
        params.field_mask = FIATOMIC_PARAM_FIELD_OP_TIMEOUT;
        params.op_timeout = timeout;
        fia               = sentinel;
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  fiatomic_create(setup.context, setup.worker, &params, &fia))
                << "op_timeout " << timeout;
        EXPECT_EQ(sentinel, fia) << "op_timeout " << timeout;
        EXPECT_TRUE(create_errors.empty()) << create_errors[0];
    }
    ucs_log_pop_handler();

    fia = NULL;
    EXPECT_EQ(UCS_OK, fiatomic_create(setup.context, setup.worker, NULL, &fia));
    setup.fia = fia;
    ucp_setup_destroy(&setup);
}

} // namespace
