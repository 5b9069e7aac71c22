/**
 * Completion queues through libfabric's API (fi_cq(3)), the waiting side
 * (nothing completes yet, as endpoints transfer nothing): every format
 * opens (FI_CQ_FORMAT_UNSPEC told back as the context format), reads of
 * the empty queue give -FI_EAGAIN, fi_cq_sread returns after its timeout
 * and not before, fi_cq_signal from another thread cuts it short
 * (-FI_ECANCELED), attributes the provider refuses, and a domain that
 * cannot close under an open queue.
 */
#include "fiprov_fixture.h"

#include <rdma/fi_eq.h>

#include <chrono>
#include <string>
#include <thread>

using namespace fiprov_test;

namespace {

class cq : public progress_domain_test<struct fid_cq> {
protected:
    struct fid_cq *&m_cq = m_obj;
};

TEST_P(cq, formats_open_and_read_empty)
{
    for (enum fi_cq_format f : {FI_CQ_FORMAT_UNSPEC, FI_CQ_FORMAT_CONTEXT,
                                FI_CQ_FORMAT_MSG, FI_CQ_FORMAT_DATA,
                                FI_CQ_FORMAT_TAGGED}) {
        struct fi_cq_attr attr = {};
        struct fi_cq_tagged_entry entries[4];
        struct fi_cq_err_entry err = {};
        fi_addr_t src[4];
        struct fid_cq *q;

        attr.format = f;
        attr.size   = 16;
        ASSERT_EQ(0, fi_cq_open(m_domain, &attr, &q, this)) << f;
        EXPECT_EQ((f == FI_CQ_FORMAT_UNSPEC) ? FI_CQ_FORMAT_CONTEXT : f,
                  attr.format);
        EXPECT_EQ((size_t)FI_CLASS_CQ, q->fid.fclass);
        EXPECT_EQ(this, q->fid.context);
        EXPECT_EQ(-FI_EAGAIN, fi_cq_read(q, entries, 4));
        EXPECT_EQ(-FI_EAGAIN, fi_cq_readfrom(q, entries, 4, src));
        EXPECT_EQ(-FI_EAGAIN, fi_cq_readerr(q, &err, 0));
        EXPECT_EQ(-FI_EINVAL, fi_cq_read(q, NULL, 4));
        EXPECT_EQ(-FI_EINVAL, fi_cq_readerr(q, NULL, 0));
        EXPECT_EQ(0, fi_close(&q->fid));
    }
}

TEST_P(cq, sread_bounded_by_timeout)
{
    struct fi_cq_attr attr = {};
    struct fi_cq_entry entry;

    attr.format   = FI_CQ_FORMAT_CONTEXT;
    attr.wait_obj = FI_WAIT_UNSPEC;
    ASSERT_EQ(0, fi_cq_open(m_domain, &attr, &m_cq, NULL));
    for (int timeout_ms : {0, 50, 200}) {
        test_clock::time_point start = test_clock::now();

        EXPECT_EQ(-FI_EAGAIN, fi_cq_sread(m_cq, &entry, 1, NULL,
                                          timeout_ms));
        double t = seconds_since(start);
        EXPECT_GE(t, timeout_ms / 1000.0);
        EXPECT_LT(t, timeout_ms / 1000.0 + 2.0);
    }
}

TEST_P(cq, signal_cuts_sread_short)
{
    struct fi_cq_attr attr = {};
    struct fi_cq_entry entry;
    fi_addr_t src;

    attr.format   = FI_CQ_FORMAT_CONTEXT;
    attr.wait_obj = FI_WAIT_MUTEX_COND;
    ASSERT_EQ(0, fi_cq_open(m_domain, &attr, &m_cq, NULL));

    test_clock::time_point start = test_clock::now();
    std::thread signaller([this]() {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        EXPECT_EQ(0, fi_cq_signal(m_cq));
    });
    /* without the signal it would sleep 20 s */
    EXPECT_EQ(-FI_ECANCELED, fi_cq_sreadfrom(m_cq, &entry, 1, &src, NULL,
                                             20000));
    signaller.join();
    EXPECT_GE(seconds_since(start), 0.09);
    EXPECT_LT(seconds_since(start), 10.0);

    /* the signal was consumed: the next wait runs to its timeout */
    EXPECT_EQ(-FI_EAGAIN, fi_cq_sread(m_cq, &entry, 1, NULL, 10));
    /* a signal before the wait cancels it at once */
    EXPECT_EQ(0, fi_cq_signal(m_cq));
    EXPECT_EQ(-FI_ECANCELED, fi_cq_sread(m_cq, &entry, 1, NULL, 20000));
}

TEST_P(cq, refused_attributes)
{
    struct fi_cq_attr attr = {};
    struct fid_cq *q = NULL;
    struct fi_cq_entry entry;
    char buf[64];

    EXPECT_EQ(-FI_EINVAL, fi_cq_open(m_domain, NULL, &q, NULL));
    attr.format = (enum fi_cq_format)99;
    EXPECT_EQ(-FI_EINVAL, fi_cq_open(m_domain, &attr, &q, NULL));
    attr.format   = FI_CQ_FORMAT_CONTEXT;
    attr.wait_obj = FI_WAIT_FD;
    EXPECT_EQ(-FI_ENOSYS, fi_cq_open(m_domain, &attr, &q, NULL));
    attr.wait_obj  = FI_WAIT_UNSPEC;
    attr.wait_cond = FI_CQ_COND_THRESHOLD;
    EXPECT_EQ(-FI_ENOSYS, fi_cq_open(m_domain, &attr, &q, NULL));
    attr.wait_cond = FI_CQ_COND_NONE;
    attr.flags     = FI_AFFINITY;
    EXPECT_EQ(-FI_ENOSYS, fi_cq_open(m_domain, &attr, &q, NULL));
    attr.flags = 0;
    attr.size  = (1u << 20) + 1;
    EXPECT_EQ(-FI_EINVAL, fi_cq_open(m_domain, &attr, &q, NULL));
    EXPECT_EQ(nullptr, q);

    /* no wait object: no blocking read */
    attr.size     = 0;
    attr.wait_obj = FI_WAIT_NONE;
    ASSERT_EQ(0, fi_cq_open(m_domain, &attr, &m_cq, NULL));
    EXPECT_EQ(-FI_ENOSYS, fi_cq_sread(m_cq, &entry, 1, NULL, 10));
    EXPECT_EQ(std::string("fiatomic: provider error 7"),
              std::string(fi_cq_strerror(m_cq, 7, NULL, buf, sizeof(buf))));
}

TEST_P(cq, domain_busy_while_open)
{
    struct fi_cq_attr attr = {};

    ASSERT_EQ(0, fi_cq_open(m_domain, &attr, &m_cq, NULL));
    EXPECT_EQ(-FI_EBUSY, fi_close(&m_domain->fid));
    EXPECT_EQ(0, fi_close(&m_cq->fid));
    m_cq = NULL;
    EXPECT_EQ(0, fi_close(&m_domain->fid));
    m_domain = NULL;
}

INSTANTIATE_TEST_SUITE_P(progress, cq,
                         testing::Values(FI_PROGRESS_AUTO,
                                         FI_PROGRESS_MANUAL),
                         progress_name);

} // namespace
