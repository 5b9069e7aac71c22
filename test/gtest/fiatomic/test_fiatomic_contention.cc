/*
 * The CAS loop under contention. Several fetch-adds of one endpoint posted
 * on the same 64-bit word without progress in between all start from the
 * same guess: over a transport whose atomics are software atomics at the
 * target (tcp; user memory on shared memory) every element but one fails its first CAS, and those whose
 * retry (with the value just read) meets another element's update fail a
 * second time; such an element goes to target-side execution (hand-off),
 * and the next ones on the word go there at once. Where UCP's atomics are
 * CPU atomics (memory the shared-memory transport allocated) the loop keeps
 * retrying (a failed CAS is a cache miss there, not a round
 * trip). Whatever path each element takes, every update counts exactly
 * once: the final value and the multiset of fetched values are checked, and
 * the endpoint's CAS counters (fiatomic_ep_query) say what happened.
 */
#include "fiatomic_test_env.h"

#include <algorithm>
#include <vector>

#include <stdlib.h>
#include <string.h>

using namespace fiatomic_test;

namespace {

const int POSTS  = 16;  /* fetch-adds in flight on one word */
const int ROUNDS = 8;

struct cas_stats {
    uint64_t attempts, retries, handoffs;
};

class contention : public ::testing::TestWithParam<config> {
protected:
    void open(const char *handoff)
    {
        std::string skip, error;
        const char *old = getenv("FIATOMIC_CAS_HANDOFF");

        if (old != NULL) {
            m_saved     = old;
            m_had_saved = true;
        }
        if (handoff != NULL) {
            setenv("FIATOMIC_CAS_HANDOFF", handoff, 1);
        }
        m_conn = connection::create(GetParam(), kv_list(), NULL, &skip,
                                    &error);
        restore_env();
        if (!skip.empty()) {
            GTEST_SKIP() << skip;
        }
        ASSERT_TRUE(m_conn != NULL) << error;
    }

    void restore_env()
    {
        if (m_had_saved) {
            setenv("FIATOMIC_CAS_HANDOFF", m_saved.c_str(), 1);
        } else {
            unsetenv("FIATOMIC_CAS_HANDOFF");
        }
    }

    void TearDown() override { m_conn.reset(); }

    cas_stats stats()
    {
        fiatomic_ep_attr_t attr;
        cas_stats s = {0, 0, 0};

        memset(&attr, 0, sizeof(attr));
        attr.field_mask = FIATOMIC_EP_ATTR_FIELD_CAS_STATS;
        EXPECT_EQ(UCS_OK, fiatomic_ep_query(m_conn->ep(), &attr));
        s.attempts = attr.cas_attempts;
        s.retries  = attr.cas_retries;
        s.handoffs = attr.cas_handoffs;
        return s;
    }

    /* ROUNDS x POSTS fetch-adds of 1 on one word, POSTS in flight at a
     * time; every update and fetched value checked. */
    void hammer();

    std::unique_ptr<connection> m_conn;
    std::string                 m_saved;
    bool                        m_had_saved = false;
};

void contention::hammer()
{
    const uint64_t off = 128, start = 1000;
    uint64_t addr      = m_conn->base(0) + off;
    uint64_t one       = 1, final_value = 0;
    std::vector<uint64_t> fetched(POSTS);
    std::vector<uint64_t> all;
    std::vector<ucs_status_ptr_t> reqs(POSTS);
    std::string error;

    ASSERT_TRUE(m_conn->tgt().write(0, off, &start, sizeof(start), &error))
        << error;
    for (int r = 0; r < ROUNDS; ++r) {
        for (int i = 0; i < POSTS; ++i) {
            reqs[i] = fiatomic_fetch_atomic_nbx(m_conn->ep(), &one, 1,
                                                &fetched[i], addr,
                                                m_conn->key(0), FI_UINT64,
                                                FI_SUM, NULL);
            ASSERT_FALSE(UCS_PTR_IS_ERR(reqs[i]))
                << ucs_status_string(UCS_PTR_STATUS(reqs[i]));
        }
        for (int i = 0; i < POSTS; ++i) {
            ASSERT_EQ(UCS_OK, m_conn->wait(reqs[i])) << "round " << r;
        }
        all.insert(all.end(), fetched.begin(), fetched.end());
    }

    ASSERT_TRUE(m_conn->tgt().read(0, off, &final_value, sizeof(final_value),
                                   &error)) << error;
    EXPECT_EQ(start + ROUNDS * POSTS, final_value) << "an update was lost "
                                                      "or doubled";
    std::sort(all.begin(), all.end());
    for (size_t i = 0; i < all.size(); ++i) {
        ASSERT_EQ(start + i, all[i]) << "fetched values are not "
                                        "start..start+" << all.size() - 1;
    }
}

/* Software atomics at the target: contended elements are handed off. */
TEST_P(contention, cas_handoff_over_software_atomics)
{
    open(NULL);
    if (HasFatalFailure() || IsSkipped()) {
        return;
    }
    cas_stats before = stats();
    hammer();
    cas_stats after = stats();

    EXPECT_GE(after.attempts - before.attempts, (uint64_t)ROUNDS);
    /* UCP's atomics are software atomics at the target over tcp, and on
     * memory the shared-memory transport did not allocate (user memory) */
    if ((GetParam().tl == "tcp") || !GetParam().alloc) {
        EXPECT_GT(after.handoffs - before.handoffs, 0u)
            << "no element went to the target: "
            << after.retries - before.retries << " failed CASes";
    } else {
        EXPECT_EQ(after.handoffs - before.handoffs, 0u)
            << "a hand-off where UCP's atomics are not the target's CPU's";
    }
}

/* FIATOMIC_CAS_HANDOFF=no: the plain loop, exact too, and it retries. */
TEST_P(contention, plain_cas_loop)
{
    open("no");
    if (HasFatalFailure() || IsSkipped()) {
        return;
    }
    cas_stats before = stats();
    hammer();
    cas_stats after = stats();

    EXPECT_EQ(after.handoffs - before.handoffs, 0u);
    EXPECT_GT(after.retries - before.retries, 0u)
        << "16 CASes in flight on one word with the same guess: retries "
           "expected";
    EXPECT_EQ(after.attempts - before.attempts,
              (uint64_t)(ROUNDS * POSTS) + (after.retries - before.retries))
        << "every CAS either took effect or failed";
}

#define CONTENTION_INSTANTIATE(_tl, _mem, _strategy) \
    INSTANTIATE_TEST_SUITE_P(_tl##_##_mem##_##_strategy, contention, \
                             ::testing::Values(FIATOMIC_TEST_CONFIG( \
                                     _tl, _mem, _strategy)), \
                             config_name());
CONTENTION_INSTANTIATE(tcp, user, cas)
CONTENTION_INSTANTIATE(tcp, alloc, cas)
CONTENTION_INSTANTIATE(posix, user, cas)
CONTENTION_INSTANTIATE(posix, alloc, cas)

} // namespace
