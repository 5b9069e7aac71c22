/*
 * Quiet across a context (fiatomic_flush_nbx) and completion counters
 * (fiatomic_cntr_*): a context flush completes what every endpoint posted,
 * silent operations included, and reports the first error; a counter
 * bound to endpoints counts every operation that did not return an error,
 * exactly once, whatever its form, into its value or its error count.
 * Target memory is read without the library.
 */
#include "fiatomic_test_env.h"

#include <rdma/fi_errno.h>

using namespace fiatomic_test;

namespace {

const double BOUND_SEC = 60.0;

enum {
    OFF_BASE = 12288 /* region 0: one u64 per endpoint from here */
};

class quiet : public ::testing::TestWithParam<config> {
protected:
    void SetUp() override
    {
        std::string skip, error;

        m_conn = connection::create(GetParam(), {}, NULL, &skip, &error);
        if (!skip.empty()) {
            GTEST_SKIP() << skip;
        }
        ASSERT_TRUE(m_conn != NULL) << error;
        ASSERT_EQ(UCS_OK, fiatomic_cntr_open(m_conn->fia(), &m_cntr));
        m_eps.push_back(m_conn->ep());
        m_keys.push_back(m_conn->key(0));
    }

    void TearDown() override
    {
        for (size_t i = 0; i < m_eps.size(); ++i) {
            fiatomic_ep_bind_cntr(m_eps[i], NULL);
            if (i > 0) {
                fiatomic_rkey_release(m_eps[i], m_keys[i]);
                m_conn->destroy_second_ep(m_ucp_eps[i - 1], m_eps[i]);
            }
        }
        if (m_cntr != NULL) {
            EXPECT_EQ(UCS_OK, fiatomic_cntr_close(m_cntr));
        }
        m_conn.reset();
    }

    void add_endpoint(const fiatomic_ep_params_t *params = NULL)
    {
        std::string error;
        ucp_ep_h ucp_ep;
        fiatomic_ep_h ep;
        uint64_t key;

        ASSERT_TRUE(m_conn->create_second_ep(&ucp_ep, &ep, &error, params))
                << error;
        const std::vector<uint8_t> &packed = m_conn->tgt().info().key[0];
        ASSERT_EQ(UCS_OK, fiatomic_rkey_unpack(ep, packed.data(),
                                               packed.size(), &key));
        m_ucp_eps.push_back(ucp_ep);
        m_eps.push_back(ep);
        m_keys.push_back(key);
    }

    void bind_all()
    {
        for (fiatomic_ep_h ep : m_eps) {
            ASSERT_EQ(UCS_OK, fiatomic_ep_bind_cntr(ep, m_cntr));
        }
    }

    bool runs(size_t i, int family, int op, int dt)
    {
        fiatomic_cell_info_t info;

        return (fiatomic_query_cell(m_eps[i], m_keys[i],
                                    (fiatomic_family_t)family,
                                    (enum fi_datatype)dt, (enum fi_op)op,
                                    &info) == 0) &&
               (info.strategy != FIATOMIC_STRATEGY_NONE);
    }

    uint64_t read_u64(uint64_t offset)
    {
        std::string error;
        uint64_t v = 0;

        EXPECT_TRUE(m_conn->tgt().read(0, offset, &v, sizeof(v), &error))
                << error;
        return v;
    }

    std::unique_ptr<connection> m_conn;
    std::vector<fiatomic_ep_h>  m_eps;
    std::vector<uint64_t>       m_keys;
    std::vector<ucp_ep_h>       m_ucp_eps;
    fiatomic_cntr_h             m_cntr = NULL;
};

void flush_cb(void *request, ucs_status_t status, void *user_data)
{
    (void)request;
    static_cast<std::vector<ucs_status_t>*>(user_data)->push_back(status);
}

/* Silent operations (inject, requests freed at once) on three endpoints:
 * one context flush completes them all, with their updates at the target. */
TEST_P(quiet, flush_completes_every_endpoint)
{
    const unsigned N = 200;
    const uint64_t one = 1;
    uint8_t zero[64] = {};
    std::vector<ucs_status_t> seen;
    fiatomic_request_param_t param;
    std::string error;
    uint64_t accepted = 0;

    add_endpoint();
    add_endpoint();
    bind_all();
    ASSERT_TRUE(m_conn->tgt().write(0, OFF_BASE, zero, sizeof(zero), &error))
            << error;
    if (!runs(0, FIATOMIC_FAMILY_BASE, FI_SUM, FI_UINT64)) {
        GTEST_SKIP() << "64-bit SUM not executed (forced strategy)";
    }

    for (unsigned i = 0; i < N; ++i) {
        for (size_t e = 0; e < m_eps.size(); ++e) {
            uint64_t addr = m_conn->base(0) + OFF_BASE + 8 * e;
            ucs_status_ptr_t p;
            ucs_status_t status;

            do {
                if (i % 2) {
                    status = fiatomic_inject_atomic(m_eps[e], &one, 1, addr,
                                                    m_keys[e], FI_UINT64,
                                                    FI_SUM);
                } else {
                    p = fiatomic_atomic_nbx(m_eps[e], &one, 1, addr,
                                            m_keys[e], FI_UINT64, FI_SUM,
                                            NULL);
                    if (UCS_PTR_IS_PTR(p)) {
                        fiatomic_request_free(p); /* silent from here on */
                    }
                    status = UCS_PTR_IS_ERR(p) ? UCS_PTR_STATUS(p) : UCS_OK;
                }
                if (status == UCS_ERR_NO_RESOURCE) {
                    ucp_worker_progress(m_conn->worker());
                }
            } while (status == UCS_ERR_NO_RESOURCE);
            ASSERT_EQ(UCS_OK, status);
            ++accepted;
        }
    }

    memset(&param, 0, sizeof(param));
    param.op_attr_mask = FIATOMIC_OP_ATTR_FIELD_CALLBACK |
                         FIATOMIC_OP_ATTR_FIELD_USER_DATA;
    param.cb           = flush_cb;
    param.user_data    = &seen;
    ucs_status_ptr_t p = fiatomic_flush_nbx(m_conn->fia(), &param);
    bool was_request   = UCS_PTR_IS_PTR(p);
    ASSERT_EQ(UCS_OK, m_conn->wait(p, BOUND_SEC));
    if (was_request) {
        ASSERT_EQ(1u, seen.size()) << "the callback runs exactly once";
        EXPECT_EQ(UCS_OK, seen[0]);
    } else {
        EXPECT_EQ(0u, seen.size()) << "no callback for a flush done at once";
    }

    for (size_t e = 0; e < m_eps.size(); ++e) {
        EXPECT_EQ(N, read_u64(OFF_BASE + 8 * e)) << "endpoint " << e;
    }
    EXPECT_EQ(accepted, fiatomic_cntr_read(m_cntr));
    EXPECT_EQ(0u, fiatomic_cntr_readerr(m_cntr));

    /* nothing posted since: done at once or soon, still UCS_OK */
    EXPECT_EQ(UCS_OK, m_conn->wait(fiatomic_flush_nbx(m_conn->fia(), NULL)));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              UCS_PTR_STATUS(fiatomic_flush_nbx(NULL, NULL)));
}

/* Every call form counts once; calls returning an error do not count. */
TEST_P(quiet, counter_counts_every_form)
{
    const uint64_t one = 1;
    uint64_t result[2], cmp[2] = {0, 0}, expect_value = 0;
    uint64_t base = m_conn->base(0) + OFF_BASE;
    uint64_t key  = m_conn->key(0);
    fiatomic_ep_params_t ep_params;
    std::string error;
    uint8_t zero[64] = {};

    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = FIATOMIC_EP_PARAM_FIELD_FLAGS;
    ep_params.flags      = FIATOMIC_EP_FLAG_SELECTIVE_COMPLETION;
    add_endpoint(&ep_params);
    bind_all();
    ASSERT_TRUE(m_conn->tgt().write(0, OFF_BASE, zero, sizeof(zero), &error))
            << error;
    if (!runs(0, FIATOMIC_FAMILY_FETCH, FI_SUM, FI_UINT64) ||
        !runs(0, FIATOMIC_FAMILY_COMPARE, FI_CSWAP, FI_UINT64)) {
        GTEST_SKIP() << "64-bit SUM/CSWAP not executed (forced strategy)";
    }

    struct fi_ioc iov[2]      = {{(void*)&one, 1}, {(void*)&one, 1}};
    struct fi_ioc resv[2]     = {{&result[0], 1}, {&result[1], 1}};
    struct fi_ioc cmpv[2]     = {{&cmp[0], 1}, {&cmp[1], 1}};
    struct fi_rma_ioc rma[2]  = {{base, 1, key}, {base + 8, 1, key}};
    struct fi_msg_atomic msg  = atomic_msg(iov, 2, rma, 2, FI_UINT64, FI_SUM);

#define EXPECT_DONE(_call) \
    do { \
        EXPECT_EQ(UCS_OK, m_conn->wait(_call, BOUND_SEC)) << #_call; \
        ++expect_value; \
    } while (0)
    EXPECT_DONE(fiatomic_atomic_nbx(m_eps[0], &one, 1, base, key, FI_UINT64,
                                    FI_SUM, NULL));
    EXPECT_DONE(fiatomic_atomicv_nbx(m_eps[0], iov, 2, rma, 2, FI_UINT64,
                                     FI_SUM, NULL));
    EXPECT_DONE(fiatomic_atomicmsg_nbx(m_eps[0], &msg, 0, NULL));
    EXPECT_DONE(UCS_STATUS_PTR(fiatomic_inject_atomic(m_eps[0], &one, 1, base,
                                                      key, FI_UINT64,
                                                      FI_SUM)));
    EXPECT_DONE(fiatomic_fetch_atomic_nbx(m_eps[0], &one, 1, result, base,
                                          key, FI_UINT64, FI_SUM, NULL));
    EXPECT_DONE(fiatomic_fetch_atomicv_nbx(m_eps[0], iov, 2, resv, 2, rma, 2,
                                           FI_UINT64, FI_SUM, NULL));
    EXPECT_DONE(fiatomic_fetch_atomicmsg_nbx(m_eps[0], &msg, resv, 2, 0,
                                             NULL));
    msg.op = FI_CSWAP;
    EXPECT_DONE(fiatomic_compare_atomic_nbx(m_eps[0], &one, 1, cmp, result,
                                            base + 16, key, FI_UINT64,
                                            FI_CSWAP, NULL));
    EXPECT_DONE(fiatomic_compare_atomicv_nbx(m_eps[0], iov, 2, cmpv, 2, resv,
                                             2, rma, 2, FI_UINT64, FI_CSWAP,
                                             NULL));
    EXPECT_DONE(fiatomic_compare_atomicmsg_nbx(m_eps[0], &msg, cmpv, 2, resv,
                                               2, 0, NULL));
    msg.op = FI_SUM;
    /* selective completion: a msg call without FI_COMPLETION is silent,
     * and counted all the same */
    rma[0].key = m_keys[1];
    rma[1].key = m_keys[1];
    EXPECT_DONE(fiatomic_atomicmsg_nbx(m_eps[1], &msg, 0, NULL));
    EXPECT_DONE(fiatomic_atomicmsg_nbx(m_eps[1], &msg, FI_COMPLETION, NULL));
#undef EXPECT_DONE

    /* refused calls: nothing started, nothing counted */
    EXPECT_TRUE(UCS_PTR_IS_ERR(fiatomic_atomic_nbx(m_eps[0], &one, 0, base,
                                                   key, FI_UINT64, FI_SUM,
                                                   NULL)));
    EXPECT_NE(UCS_OK, fiatomic_inject_atomic(m_eps[0], &one, 1, base + 1, key,
                                             FI_UINT64, FI_SUM));
    EXPECT_TRUE(UCS_PTR_IS_ERR(fiatomic_fetch_atomic_nbx(
            m_eps[0], &one, 1, result, base, key + 12345, FI_UINT64, FI_SUM,
            NULL)));

    ASSERT_EQ(UCS_OK, m_conn->wait(fiatomic_flush_nbx(m_conn->fia(), NULL),
                                   BOUND_SEC));
    EXPECT_EQ(expect_value, fiatomic_cntr_read(m_cntr));
    EXPECT_EQ(0u, fiatomic_cntr_readerr(m_cntr));
    EXPECT_EQ(0, fiatomic_cntr_wait(m_cntr, expect_value, 0));
    EXPECT_EQ(-FI_ETIMEDOUT, fiatomic_cntr_wait(m_cntr, expect_value + 1, 50));

    /* unbound: no longer counted; the counter cannot close while bound */
    EXPECT_EQ(UCS_ERR_BUSY, fiatomic_cntr_close(m_cntr));
    ASSERT_EQ(UCS_OK, fiatomic_ep_bind_cntr(m_eps[0], NULL));
    EXPECT_EQ(UCS_OK, m_conn->wait(fiatomic_atomic_nbx(m_eps[0], &one, 1,
                                                       base, key, FI_UINT64,
                                                       FI_SUM, NULL)));
    EXPECT_EQ(UCS_OK, m_conn->wait(fiatomic_flush_nbx(m_conn->fia(), NULL)));
    EXPECT_EQ(expect_value, fiatomic_cntr_read(m_cntr));
    EXPECT_EQ(-FI_EINVAL, fiatomic_cntr_wait(NULL, 1, 0));
}

/* Configurations whose operations need the target to progress and execute
 * target-side (the target checks keys itself). */
class quiet_target : public quiet {
};

/* A target that stops progressing: operations that need it stay in flight,
 * so the binding cannot change; the counter wait times out, bounded. */
TEST_P(quiet_target, counter_wait_bounded)
{
    const uint64_t one = 1;
    uint64_t result;
    std::string error;
    fiatomic_cell_info_t info;

    bind_all();
    ASSERT_EQ(0, fiatomic_query_cell(m_eps[0], m_keys[0],
                                     FIATOMIC_FAMILY_FETCH, FI_UINT64, FI_SUM,
                                     &info));
    if (!info.needs_target_progress) {
        GTEST_SKIP() << "fetch SUM u64 completes without the target here";
    }
    ASSERT_TRUE(m_conn->tgt().pause(&error)) << error;
    ucs_status_ptr_t p = fiatomic_fetch_atomic_nbx(
            m_eps[0], &one, 1, &result, m_conn->base(0) + OFF_BASE,
            m_keys[0], FI_UINT64, FI_SUM, NULL);
    ASSERT_TRUE(UCS_PTR_IS_PTR(p));
    double start = now_sec();
    EXPECT_EQ(-FI_ETIMEDOUT, fiatomic_cntr_wait(m_cntr, 1, 300));
    EXPECT_LT(now_sec() - start, 5.0);
    EXPECT_GE(now_sec() - start, 0.29);
    EXPECT_EQ(UCS_ERR_BUSY, fiatomic_ep_bind_cntr(m_eps[0], NULL));
    ASSERT_TRUE(m_conn->tgt().resume(&error)) << error;
    EXPECT_EQ(0, fiatomic_cntr_wait(m_cntr, 1, (int)(BOUND_SEC * 1000)));
    EXPECT_EQ(UCS_OK, m_conn->wait(p));
    EXPECT_EQ(1u, fiatomic_cntr_read(m_cntr));
}

/* An operation the target refuses (memory unexposed after the key was
 * unpacked: target-side execution checks it there) fails after its call
 * returned UCS_OK: the counter counts it as an error, the counter wait
 * returns -FI_EAVAIL, the context flush reports it (once). */
TEST_P(quiet_target, flush_reports_first_error)
{
    const uint64_t one = 1;
    std::vector<uint8_t> reply;
    uint8_t zero[16] = {};
    std::string error;
    bytes b;

    ASSERT_TRUE(m_conn->remote() != NULL);
    ASSERT_TRUE(m_conn->tgt().write(0, OFF_BASE, zero, sizeof(zero), &error))
            << error;
    add_endpoint();
    bind_all();
    /* the second endpoint's key on region 1, before region 1 goes */
    const std::vector<uint8_t> &packed = m_conn->tgt().info().key[1];
    uint64_t stale;
    ASSERT_EQ(UCS_OK, fiatomic_rkey_unpack(m_eps[1], packed.data(),
                                           packed.size(), &stale));
    uint64_t stale_addr = m_conn->base(1);
    fiatomic_cell_info_t info;
    ASSERT_EQ(0, fiatomic_query_cell(m_eps[1], stale, FIATOMIC_FAMILY_BASE,
                                     FI_UINT64, FI_SUM, &info));
    if (info.strategy != FIATOMIC_STRATEGY_TARGET) {
        fiatomic_rkey_release(m_eps[1], stale);
        GTEST_SKIP() << "the refusal is the target's own check (target-side "
                     << "execution only)";
    }

    b.put<uint32_t>(1);
    ASSERT_TRUE(m_conn->remote()->process().request(
            MSG_REEXPOSE, b.data().data(), b.data().size(), &reply, &error))
            << error;

    /* good operations on both endpoints, the refused one in between */
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(UCS_OK, fiatomic_inject_atomic(m_eps[0], &one, 1,
                                                 m_conn->base(0) + OFF_BASE,
                                                 m_keys[0], FI_UINT64,
                                                 FI_SUM));
    }
    EXPECT_EQ(UCS_OK, fiatomic_inject_atomic(m_eps[1], &one, 1, stale_addr,
                                             stale, FI_UINT64, FI_SUM))
            << "accepted: only the target can tell";
    EXPECT_EQ(UCS_OK, fiatomic_inject_atomic(m_eps[1], &one, 1,
                                             m_conn->base(0) + OFF_BASE + 8,
                                             m_keys[1], FI_UINT64, FI_SUM));

    EXPECT_EQ(-FI_EAVAIL, fiatomic_cntr_wait(m_cntr, 5,
                                             (int)(BOUND_SEC * 1000)));
    ucs_status_t status = m_conn->wait(fiatomic_flush_nbx(m_conn->fia(),
                                                          NULL), BOUND_SEC);
    EXPECT_NE(UCS_OK, status);
    EXPECT_NE(UCS_ERR_TIMED_OUT, status);
    EXPECT_EQ(4u, fiatomic_cntr_read(m_cntr));
    EXPECT_EQ(1u, fiatomic_cntr_readerr(m_cntr));
    /* reported once: the next quiet is clean */
    EXPECT_EQ(UCS_OK, m_conn->wait(fiatomic_flush_nbx(m_conn->fia(), NULL),
                                   BOUND_SEC));
    EXPECT_EQ(4u, read_u64(OFF_BASE) + read_u64(OFF_BASE + 8));
    fiatomic_rkey_release(m_eps[1], stale);
}

#define QUIET_INSTANTIATE(_tl, _mem, _strategy) \
    FIATOMIC_TEST_INSTANTIATE(quiet, _tl, _mem, _strategy)
QUIET_INSTANTIATE(self, alloc, auto)
QUIET_INSTANTIATE(self, alloc, direct)
QUIET_INSTANTIATE(posix, alloc, auto)
QUIET_INSTANTIATE(posix, user, auto)
QUIET_INSTANTIATE(tcp, user, auto)
QUIET_INSTANTIATE(tcp, user, cas)
QUIET_INSTANTIATE(tcp, user, target)

#define QUIET_TARGET_INSTANTIATE(_tl, _mem, _strategy) \
    FIATOMIC_TEST_INSTANTIATE(quiet_target, _tl, _mem, _strategy)
QUIET_TARGET_INSTANTIATE(tcp, user, target)
QUIET_TARGET_INSTANTIATE(posix, user, target)

} // namespace
