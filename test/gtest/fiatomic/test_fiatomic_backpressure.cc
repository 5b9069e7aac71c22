/*
 * Back-pressure: an endpoint takes at most max_inflight operations (calls)
 * in flight; beyond it a call returns UCS_ERR_NO_RESOURCE (-FI_EAGAIN) and
 * sends nothing, and succeeds again once progress completed some.
 */
#include "fiatomic_test_env.h"

using namespace fiatomic_test;

namespace {

class backpressure : public ::testing::TestWithParam<config> {
};

/* Operations in flight need a target that does not progress: the
 * configurations whose cells need the target's progress (software atomics
 * over tcp and over shared memory the transport did not allocate). */
TEST_P(backpressure, limit_in_flight)
{
    const size_t limit = 8, slots = 64;
    fiatomic_params_t params;
    std::string skip, error;
    std::vector<ucs_status_ptr_t> reqs;
    std::vector<uint64_t> applied(slots, 0);
    alignas(64) uint64_t one = 1, fetched[slots * 4], ops[4] = {1, 1, 1, 1};
    size_t posted = 0, refused = 0, i;

    memset(&params, 0, sizeof(params));
    params.field_mask   = FIATOMIC_PARAM_FIELD_MAX_INFLIGHT;
    params.max_inflight = limit;
    auto conn = connection::create(GetParam(), {}, &params, &skip, &error);
    if (!skip.empty()) {
        GTEST_SKIP() << skip;
    }
    ASSERT_TRUE(conn != NULL) << error;
    std::vector<uint8_t> zero(slots * 8, 0);
    ASSERT_TRUE(conn->tgt().write(0, 0, zero.data(), zero.size(), &error))
            << error;
    ASSERT_EQ(UCS_OK, conn->flush());

    fiatomic_cell_info_t info;
    ASSERT_EQ(0, fiatomic_query_cell(conn->ep(), conn->key(0),
                                     FIATOMIC_FAMILY_FETCH, FI_UINT64, FI_SUM,
                                     &info));
    ASSERT_EQ(1, info.needs_target_progress) << "the configuration must need "
                                                "the target's progress";
    ASSERT_TRUE(conn->tgt().pause(&error)) << error;

    /* far more calls than the limit, no progress: single elements and
     * arrays (a call is one operation whatever its count) */
    for (i = 0; i < 3 * limit; ++i) {
        size_t slot = (i % (slots / 4)) * 4, count = (i % 2) ? 4 : 1;
        ucs_status_ptr_t p = fiatomic_fetch_atomic_nbx(
                conn->ep(), (count == 1) ? &one : ops, count,
                &fetched[i * 4 % (slots * 4)],
                conn->base(0) + slot * 8, conn->key(0), FI_UINT64, FI_SUM,
                NULL);
        if (UCS_PTR_IS_ERR(p)) {
            EXPECT_EQ(UCS_ERR_NO_RESOURCE, UCS_PTR_STATUS(p)) << "call " << i;
            EXPECT_EQ(-FI_EAGAIN,
                      fiatomic_status_to_fi_errno(UCS_PTR_STATUS(p)));
            ++refused;
            continue;
        }
        for (size_t k = 0; k < count; ++k) {
            applied[slot + k]++;
        }
        ++posted;
        if (p != NULL) {
            reqs.push_back(p);
        }
    }
    EXPECT_LE(reqs.size(), limit) << "more operations in flight than the "
                                     "limit";
    EXPECT_EQ(limit, reqs.size());
    EXPECT_EQ(3 * limit - posted, refused);

    /* every form is refused at the limit; a flush is not an operation */
    struct fi_ioc iov     = {&one, 1};
    struct fi_rma_ioc rma = {conn->base(0), 1, conn->key(0)};
    EXPECT_EQ(UCS_ERR_NO_RESOURCE,
              fiatomic_inject_atomic(conn->ep(), &one, 1, conn->base(0),
                                     conn->key(0), FI_UINT64, FI_SUM));
    EXPECT_EQ(-FI_EAGAIN,
              immediate_errno(fiatomic_atomicv_nbx(conn->ep(), &iov, 1, &rma,
                                                   1, FI_UINT64, FI_SUM,
                                                   NULL)));
    ucs_status_ptr_t flush = fiatomic_ep_flush_nbx(conn->ep(), NULL);
    EXPECT_FALSE(UCS_PTR_IS_ERR(flush));

    ASSERT_TRUE(conn->tgt().resume(&error)) << error;
    for (ucs_status_ptr_t p : reqs) {
        EXPECT_EQ(UCS_OK, conn->wait(p));
    }
    EXPECT_EQ(UCS_OK, conn->wait(flush));

    /* again accepted after progress */
    EXPECT_EQ(UCS_OK, conn->wait(fiatomic_fetch_atomic_nbx(
            conn->ep(), &one, 1, fetched, conn->base(0), conn->key(0),
            FI_UINT64, FI_SUM, NULL)));
    applied[0]++;
    ASSERT_EQ(UCS_OK, conn->flush());

    /* what was refused was never sent */
    std::vector<uint8_t> now(slots * 8);
    ASSERT_TRUE(conn->tgt().read(0, 0, now.data(), now.size(), &error))
            << error;
    for (i = 0; i < slots; ++i) {
        uint64_t v;
        memcpy(&v, &now[i * 8], 8);
        EXPECT_EQ(applied[i], v) << "element " << i;
    }
}

INSTANTIATE_TEST_SUITE_P(sw, backpressure,
                         ::testing::Values(config{"tcp", false, "auto", true},
                                           config{"tcp", false, "native",
                                                  true},
                                           config{"posix", false, "cas",
                                                  true},
                                           config{"tcp", true, "target",
                                                  true}),
                         config_name());

TEST(backpressure_params, limits)
{
    fiatomic_params_t params;
    std::string skip, error;
    config cfg = {"self", false, "auto", true};

    memset(&params, 0, sizeof(params));
    params.field_mask = FIATOMIC_PARAM_FIELD_MAX_INFLIGHT;
    for (size_t bad : {(size_t)0, (size_t)FIATOMIC_MAX_INFLIGHT_LIMIT + 1}) {
        params.max_inflight = bad;
        auto conn = connection::create(cfg, {}, &params, &skip, &error);
        EXPECT_TRUE(conn == NULL) << "max_inflight " << bad << " accepted";
    }
}

} // namespace
