/*
 * Configurations the library supports must not log errors, and what the
 * context-level queries report supported there must be what the calls do.
 */
#include "fiatomic_test_env.h"

#include <ucs/debug/log_def.h>

using namespace fiatomic_test;

namespace {

int logged_problems = 0;

ucs_log_func_rc_t count_problems(const char *file, unsigned line,
                                 const char *function, ucs_log_level_t level,
                                 const ucs_log_component_config_t *comp_conf,
                                 const char *message, va_list ap)
{
    if (level <= UCS_LOG_LEVEL_WARN) {
        ++logged_problems;
    }
    return UCS_LOG_FUNC_RC_CONTINUE;
}

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

    logged_problems = 0;
    ucs_log_push_handler(count_problems);
    auto conn = connection::create(GetParam(), {}, NULL, &skip, &error);
    ucs_log_pop_handler();
    if (!skip.empty()) {
        GTEST_SKIP() << skip;
    }
    ASSERT_TRUE(conn != NULL) << error;
    EXPECT_EQ(0, logged_problems) << "UCX ERROR/WARN lines while creating "
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

} // namespace
