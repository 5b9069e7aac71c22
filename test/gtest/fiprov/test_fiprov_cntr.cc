/**
 * Counters through libfabric's API (fi_cntr(3)): values, errors, add, set,
 * concurrent adders, bounded waits (timeout, woken by another thread,
 * -FI_EAVAIL when errors grow), attributes the provider refuses, and a
 * domain that cannot close under an open counter.
 */
#include "fiprov_fixture.h"

#include <rdma/fi_eq.h>

#include <chrono>
#include <thread>

using namespace fiprov_test;

namespace {

class cntr : public progress_domain_test<struct fid_cntr> {
protected:
    void SetUp() override
    {
        progress_domain_test::SetUp();
        ASSERT_FALSE(HasFatalFailure());
        ASSERT_EQ(0, fi_cntr_open(m_domain, &m_attr, &m_cntr, this));
    }

    struct fi_cntr_attr m_attr  = {FI_CNTR_EVENTS_COMP, FI_WAIT_UNSPEC, NULL,
                                   0};
    struct fid_cntr     *&m_cntr = m_obj;
};

TEST_P(cntr, values_add_set)
{
    EXPECT_EQ(this, m_cntr->fid.context);
    EXPECT_EQ(0u, fi_cntr_read(m_cntr));
    EXPECT_EQ(0u, fi_cntr_readerr(m_cntr));
    EXPECT_EQ(0, fi_cntr_add(m_cntr, 5));
    EXPECT_EQ(0, fi_cntr_add(m_cntr, 7));
    EXPECT_EQ(12u, fi_cntr_read(m_cntr));
    EXPECT_EQ(0u, fi_cntr_readerr(m_cntr));
    EXPECT_EQ(0, fi_cntr_adderr(m_cntr, 3));
    EXPECT_EQ(3u, fi_cntr_readerr(m_cntr));
    EXPECT_EQ(12u, fi_cntr_read(m_cntr));
    EXPECT_EQ(0, fi_cntr_set(m_cntr, 100));
    EXPECT_EQ(100u, fi_cntr_read(m_cntr));
    EXPECT_EQ(0, fi_cntr_seterr(m_cntr, 0));
    EXPECT_EQ(0u, fi_cntr_readerr(m_cntr));
    /* values wrap at 2^64 */
    EXPECT_EQ(0, fi_cntr_set(m_cntr, UINT64_MAX));
    EXPECT_EQ(0, fi_cntr_add(m_cntr, 2));
    EXPECT_EQ(1u, fi_cntr_read(m_cntr));
}

TEST_P(cntr, concurrent_adders)
{
    static const int threads = 4, adds = 20000;
    std::vector<std::thread> workers;

    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([this]() {
            for (int i = 0; i < adds; ++i) {
                fi_cntr_add(m_cntr, 1);
                fi_cntr_adderr(m_cntr, 2);
            }
        });
    }
    for (auto &w : workers) {
        w.join();
    }
    EXPECT_EQ((uint64_t)threads * adds, fi_cntr_read(m_cntr));
    EXPECT_EQ((uint64_t)threads * adds * 2, fi_cntr_readerr(m_cntr));
}

TEST_P(cntr, wait_reached_and_timeouts)
{
    test_clock::time_point start;
    double elapsed;

    EXPECT_EQ(0, fi_cntr_add(m_cntr, 3));
    EXPECT_EQ(0, fi_cntr_wait(m_cntr, 3, 0));
    EXPECT_EQ(0, fi_cntr_wait(m_cntr, 2, -1));
    EXPECT_EQ(-FI_ETIMEDOUT, fi_cntr_wait(m_cntr, 4, 0));

    start = test_clock::now();
    EXPECT_EQ(-FI_ETIMEDOUT, fi_cntr_wait(m_cntr, 4, 50));
    elapsed = seconds_since(start);
    EXPECT_GE(elapsed, 0.050);
    EXPECT_LT(elapsed, 5.0);
}

TEST_P(cntr, wait_is_woken_by_another_thread)
{
    test_clock::time_point start = test_clock::now();
    std::thread adder([this]() {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        fi_cntr_add(m_cntr, 1);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        fi_cntr_add(m_cntr, 1);
    });

    EXPECT_EQ(0, fi_cntr_wait(m_cntr, 2, 10000));
    EXPECT_GE(seconds_since(start), 0.035);
    EXPECT_LT(seconds_since(start), 5.0);
    adder.join();
    EXPECT_EQ(2u, fi_cntr_read(m_cntr));
}

TEST_P(cntr, wait_reports_errors)
{
    std::thread failer([this]() {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        fi_cntr_adderr(m_cntr, 1);
    });
    test_clock::time_point start = test_clock::now();

    EXPECT_EQ(-FI_EAVAIL, fi_cntr_wait(m_cntr, 1, 10000));
    EXPECT_LT(seconds_since(start), 5.0);
    failer.join();
    EXPECT_EQ(1u, fi_cntr_readerr(m_cntr));
    EXPECT_EQ(0u, fi_cntr_read(m_cntr));
}

TEST_P(cntr, domain_busy_while_a_counter_is_open)
{
    struct fid_cntr *second;

    ASSERT_EQ(0, fi_cntr_open(m_domain, NULL, &second, NULL));
    EXPECT_EQ(-FI_EBUSY, fi_close(&m_domain->fid));
    EXPECT_EQ(0, fi_close(&second->fid));
    EXPECT_EQ(-FI_EBUSY, fi_close(&m_domain->fid));
    EXPECT_EQ(0, fi_close(&m_cntr->fid));
    m_cntr = NULL;
    EXPECT_EQ(0, fi_close(&m_domain->fid));
    m_domain = NULL;
}

TEST_P(cntr, attributes_refused)
{
    struct fi_cntr_attr attr = m_attr;
    struct fid_cntr *c = NULL;

    attr.flags = 1;
    EXPECT_EQ(-FI_EINVAL, fi_cntr_open(m_domain, &attr, &c, NULL));
    attr = m_attr;
    attr.events = (enum fi_cntr_events)1;
    EXPECT_EQ(-FI_ENOSYS, fi_cntr_open(m_domain, &attr, &c, NULL));
    attr = m_attr;
    for (enum fi_wait_obj w : {FI_WAIT_FD, FI_WAIT_SET, FI_WAIT_POLLFD}) {
        attr.wait_obj = w;
        EXPECT_EQ(-FI_ENOSYS, fi_cntr_open(m_domain, &attr, &c, NULL));
    }
    EXPECT_EQ(nullptr, c);
    for (enum fi_wait_obj w : {FI_WAIT_NONE, FI_WAIT_MUTEX_COND,
                               FI_WAIT_YIELD}) {
        attr.wait_obj = w;
        ASSERT_EQ(0, fi_cntr_open(m_domain, &attr, &c, NULL));
        EXPECT_EQ(0, fi_close(&c->fid));
    }
}

INSTANTIATE_TEST_SUITE_P(progress, cntr,
                         testing::Values(FI_PROGRESS_AUTO,
                                         FI_PROGRESS_MANUAL),
                         progress_name);

} // namespace
