/**
 * Event queues through libfabric's API (fi_eq(3)): opened on the fabric
 * (size 0 is the provider's default size, the largest size and the
 * attributes it refuses), the program's own events from fi_eq_write read
 * back first in, first out with their data, FI_PEEK leaving an event
 * queued, a buffer too small for an event (-FI_ETOOSMALL, the event kept),
 * a full queue (-FI_EAGAIN, nothing lost), fi_eq_readerr with no error
 * event, fi_eq_sread bounded by its timeout and woken by another thread's
 * write, fi_eq_strerror, bad arguments, and bindings to an endpoint and an
 * address vector (one each, same fabric only, fi_close -> -FI_EBUSY while
 * bound, no event from a synchronous address vector insert).
 */
#include "fiprov_fixture.h"

#include <rdma/fi_eq.h>

#include <string.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

using namespace fiprov_test;

namespace {

/* fi_fiatomic(7)'s figures */
static const size_t eq_default_size = 1024;
static const size_t eq_max_size     = 65536;
static const size_t eq_data_max     = 4096;

class eq : public domain_test {
protected:
    void SetUp() override
    {
        test_base::SetUp();
        open_fabric();
    }

    void TearDown() override
    {
        for (struct fid_eq *q : m_eqs) {
            EXPECT_EQ(0, fi_close(&q->fid));
        }
        domain_test::TearDown();
    }

    /** A queue kept open to TearDown. */
    struct fid_eq *open_eq(size_t size, uint64_t flags = FI_WRITE,
                           enum fi_wait_obj wait_obj = FI_WAIT_UNSPEC)
    {
        struct fi_eq_attr attr = {};
        struct fid_eq *q       = NULL;

        attr.size     = size;
        attr.flags    = flags;
        attr.wait_obj = wait_obj;
        EXPECT_EQ(0, fi_eq_open(m_fabric, &attr, &q, this));
        if (q != NULL) {
            m_eqs.push_back(q);
        }
        return q;
    }

    /** Forget a queue the test closed itself. */
    void forget(struct fid_eq *q)
    {
        m_eqs.erase(std::find(m_eqs.begin(), m_eqs.end(), q));
    }

    std::vector<struct fid_eq*> m_eqs;
};

/* an event as a program writes it: an fi_eq_entry naming its source */
static struct fi_eq_entry entry_of(int i)
{
    struct fi_eq_entry e;

    memset(&e, 0, sizeof(e));
    e.fid     = (fid_t)(uintptr_t)(0x1000 + i);
    e.context = (void*)(uintptr_t)(0x2000 + i);
    e.data    = 0xabcdef0000000000ULL + (uint64_t)i;
    return e;
}

TEST_F(eq, opens_with_every_wait_object_it_offers)
{
    for (enum fi_wait_obj w : {FI_WAIT_NONE, FI_WAIT_UNSPEC,
                               FI_WAIT_MUTEX_COND, FI_WAIT_YIELD}) {
        struct fi_eq_attr attr = {};
        struct fid_eq *q;
        uint32_t event;
        char buf[64];

        attr.wait_obj = w;
        attr.size     = 4;
        ASSERT_EQ(0, fi_eq_open(m_fabric, &attr, &q, this)) << w;
        EXPECT_EQ((size_t)FI_CLASS_EQ, q->fid.fclass);
        EXPECT_EQ(this, q->fid.context);
        EXPECT_EQ(-FI_EAGAIN, fi_eq_read(q, &event, buf, sizeof(buf), 0));
        EXPECT_EQ(0, fi_close(&q->fid));
    }
}

TEST_F(eq, refuses_bad_attributes)
{
    struct fi_eq_attr attr = {};
    struct fid_eq *q       = NULL;

    EXPECT_EQ(-FI_EINVAL, fi_eq_open(m_fabric, NULL, &q, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_eq_open(m_fabric, &attr, NULL, NULL));

    attr.flags = FI_READ;
    EXPECT_EQ(-FI_EINVAL, fi_eq_open(m_fabric, &attr, &q, NULL));
    attr.flags = FI_WRITE | FI_AFFINITY;   /* affinity: a hint */
    ASSERT_EQ(0, fi_eq_open(m_fabric, &attr, &q, NULL));
    EXPECT_EQ(0, fi_close(&q->fid));
    attr.flags = 0;

    /* no file descriptor or wait set */
    for (enum fi_wait_obj w : {FI_WAIT_FD, FI_WAIT_SET, FI_WAIT_POLLFD}) {
        attr.wait_obj = w;
        EXPECT_EQ(-FI_ENOSYS, fi_eq_open(m_fabric, &attr, &q, NULL)) << w;
    }
    attr.wait_obj = (enum fi_wait_obj)99;
    EXPECT_EQ(-FI_EINVAL, fi_eq_open(m_fabric, &attr, &q, NULL));
    attr.wait_obj = FI_WAIT_NONE;

    attr.size = eq_max_size + 1;
    EXPECT_EQ(-FI_EINVAL, fi_eq_open(m_fabric, &attr, &q, NULL));
    attr.size = eq_max_size;
    ASSERT_EQ(0, fi_eq_open(m_fabric, &attr, &q, NULL));
    EXPECT_EQ(0, fi_close(&q->fid));
}

TEST_F(eq, events_read_back_first_in_first_out)
{
    struct fid_eq *q = open_eq(16);
    uint8_t raw[3] = {7, 8, 9};
    struct fi_eq_entry e, got;
    uint32_t event;
    uint8_t buf[64];

    ASSERT_NE(nullptr, q);
    for (int i = 0; i < 10; ++i) {
        e = entry_of(i);
        ASSERT_EQ((ssize_t)sizeof(e),
                  fi_eq_write(q, FI_NOTIFY + (uint32_t)i, &e, sizeof(e), 0));
    }
    /* events of any length, empty ones too */
    ASSERT_EQ(3, fi_eq_write(q, FI_MR_COMPLETE, raw, sizeof(raw), 0));
    ASSERT_EQ(0, fi_eq_write(q, FI_AV_COMPLETE, NULL, 0, 0));

    for (int i = 0; i < 10; ++i) {
        memset(&got, 0xff, sizeof(got));
        ASSERT_EQ((ssize_t)sizeof(got),
                  fi_eq_read(q, &event, &got, sizeof(got), 0)) << i;
        e = entry_of(i);
        EXPECT_EQ(FI_NOTIFY + (uint32_t)i, event);
        EXPECT_EQ(e.fid, got.fid);
        EXPECT_EQ(e.context, got.context);
        EXPECT_EQ(e.data, got.data);
    }
    memset(buf, 0, sizeof(buf));
    ASSERT_EQ(3, fi_eq_read(q, &event, buf, sizeof(buf), 0));
    EXPECT_EQ((uint32_t)FI_MR_COMPLETE, event);
    EXPECT_EQ(0, memcmp(buf, raw, sizeof(raw)));
    EXPECT_EQ(0, buf[3]);   /* nothing past the event's length */
    ASSERT_EQ(0, fi_eq_read(q, &event, NULL, 0, 0));
    EXPECT_EQ((uint32_t)FI_AV_COMPLETE, event);
    EXPECT_EQ(-FI_EAGAIN, fi_eq_read(q, &event, buf, sizeof(buf), 0));
}

TEST_F(eq, peek_leaves_the_event_queued)
{
    struct fid_eq *q = open_eq(4);
    struct fi_eq_entry e0 = entry_of(0), e1 = entry_of(1), got;
    uint32_t event;

    ASSERT_NE(nullptr, q);
    ASSERT_EQ((ssize_t)sizeof(e0), fi_eq_write(q, FI_NOTIFY, &e0,
                                               sizeof(e0), 0));
    ASSERT_EQ((ssize_t)sizeof(e1), fi_eq_write(q, FI_NOTIFY + 1, &e1,
                                               sizeof(e1), 0));
    for (int i = 0; i < 2; ++i) {
        event = 0;
        ASSERT_EQ((ssize_t)sizeof(got),
                  fi_eq_read(q, &event, &got, sizeof(got), FI_PEEK));
        EXPECT_EQ((uint32_t)FI_NOTIFY, event);
        EXPECT_EQ(e0.data, got.data);
    }
    ASSERT_EQ((ssize_t)sizeof(got), fi_eq_read(q, &event, &got,
                                               sizeof(got), 0));
    EXPECT_EQ(e0.data, got.data);
    ASSERT_EQ((ssize_t)sizeof(got), fi_eq_read(q, &event, &got,
                                               sizeof(got), FI_PEEK));
    EXPECT_EQ((uint32_t)FI_NOTIFY + 1, event);
    EXPECT_EQ(e1.data, got.data);
    /* sread peeks too */
    ASSERT_EQ((ssize_t)sizeof(got), fi_eq_sread(q, &event, &got,
                                                sizeof(got), 0, FI_PEEK));
    EXPECT_EQ(e1.data, got.data);
    ASSERT_EQ((ssize_t)sizeof(got), fi_eq_sread(q, &event, &got,
                                                sizeof(got), 0, 0));
    EXPECT_EQ(e1.data, got.data);
    EXPECT_EQ(-FI_EAGAIN, fi_eq_read(q, &event, &got, sizeof(got), FI_PEEK));
}

TEST_F(eq, too_small_a_buffer_keeps_the_event)
{
    struct fid_eq *q = open_eq(4);
    struct fi_eq_entry e = entry_of(5), got;
    uint32_t event = 0;

    ASSERT_NE(nullptr, q);
    ASSERT_EQ((ssize_t)sizeof(e), fi_eq_write(q, FI_NOTIFY, &e, sizeof(e),
                                              0));
    EXPECT_EQ(-FI_ETOOSMALL, fi_eq_read(q, &event, &got, sizeof(got) - 1,
                                        0));
    EXPECT_EQ(-FI_ETOOSMALL, fi_eq_read(q, &event, NULL, 0, FI_PEEK));
    EXPECT_EQ(-FI_ETOOSMALL, fi_eq_sread(q, &event, &got, 8, 0, 0));
    ASSERT_EQ((ssize_t)sizeof(got), fi_eq_read(q, &event, &got, sizeof(got),
                                               0));
    EXPECT_EQ((uint32_t)FI_NOTIFY, event);
    EXPECT_EQ(e.data, got.data);
}

TEST_F(eq, bounded_by_its_size)
{
    struct fid_eq *q0 = open_eq(0);   /* the provider's default size */
    struct fid_eq *q3 = open_eq(3);
    uint64_t v, got;
    uint32_t event;

    ASSERT_NE(nullptr, q0);
    ASSERT_NE(nullptr, q3);
    for (v = 0; v < eq_default_size; ++v) {
        ASSERT_EQ((ssize_t)sizeof(v), fi_eq_write(q0, FI_NOTIFY, &v,
                                                  sizeof(v), 0)) << v;
    }
    EXPECT_EQ(-FI_EAGAIN, fi_eq_write(q0, FI_NOTIFY, &v, sizeof(v), 0));
    for (v = 0; v < 3; ++v) {
        ASSERT_EQ((ssize_t)sizeof(v), fi_eq_write(q3, FI_NOTIFY, &v,
                                                  sizeof(v), 0));
    }
    EXPECT_EQ(-FI_EAGAIN, fi_eq_write(q3, FI_NOTIFY, &v, sizeof(v), 0));
    /* a read makes room for one; nothing was lost or reordered */
    ASSERT_EQ((ssize_t)sizeof(got), fi_eq_read(q3, &event, &got,
                                               sizeof(got), 0));
    EXPECT_EQ(0u, got);
    v = 42;
    ASSERT_EQ((ssize_t)sizeof(v), fi_eq_write(q3, FI_NOTIFY, &v, sizeof(v),
                                              0));
    for (uint64_t want : {1, 2, 42}) {
        ASSERT_EQ((ssize_t)sizeof(got), fi_eq_read(q3, &event, &got,
                                                   sizeof(got), 0));
        EXPECT_EQ(want, got);
    }
    for (v = 0; v < eq_default_size; ++v) {
        ASSERT_EQ((ssize_t)sizeof(got), fi_eq_read(q0, &event, &got,
                                                   sizeof(got), 0));
        ASSERT_EQ(v, got);
    }
}

TEST_F(eq, write_refuses_bad_arguments)
{
    struct fid_eq *ro = open_eq(4, 0);   /* no FI_WRITE */
    struct fid_eq *q  = open_eq(4);
    std::vector<uint8_t> big(eq_data_max + 1, 0x5a);
    uint32_t event;

    ASSERT_NE(nullptr, ro);
    ASSERT_NE(nullptr, q);
    EXPECT_EQ(-FI_EINVAL, fi_eq_write(ro, FI_NOTIFY, big.data(), 8, 0));
    EXPECT_EQ(-FI_EINVAL, fi_eq_write(q, FI_NOTIFY, big.data(), 8,
                                      FI_PEEK));
    EXPECT_EQ(-FI_EINVAL, fi_eq_write(q, FI_NOTIFY, NULL, 8, 0));
    EXPECT_EQ(-FI_EINVAL, fi_eq_write(q, FI_NOTIFY, big.data(),
                                      big.size(), 0));
    /* none of them queued anything */
    EXPECT_EQ(-FI_EAGAIN, fi_eq_read(q, &event, big.data(), big.size(), 0));
    EXPECT_EQ(-FI_EAGAIN, fi_eq_read(ro, &event, big.data(), big.size(),
                                     0));
    /* the longest event goes */
    ASSERT_EQ((ssize_t)eq_data_max, fi_eq_write(q, FI_NOTIFY, big.data(),
                                                eq_data_max, 0));
    std::vector<uint8_t> back(eq_data_max, 0);
    ASSERT_EQ((ssize_t)eq_data_max, fi_eq_read(q, &event, back.data(),
                                               back.size(), 0));
    EXPECT_TRUE(std::equal(back.begin(), back.end(), big.begin()));
}

TEST_F(eq, read_and_readerr_refuse_bad_arguments)
{
    struct fid_eq *q = open_eq(4);
    struct fi_eq_err_entry err = {};
    uint64_t v = 3;
    uint32_t event;
    char buf[16];

    ASSERT_NE(nullptr, q);
    ASSERT_EQ((ssize_t)sizeof(v), fi_eq_write(q, FI_NOTIFY, &v, sizeof(v),
                                              0));
    EXPECT_EQ(-FI_EINVAL, fi_eq_read(q, NULL, buf, sizeof(buf), 0));
    EXPECT_EQ(-FI_EINVAL, fi_eq_read(q, &event, NULL, sizeof(buf), 0));
    EXPECT_EQ(-FI_EINVAL, fi_eq_read(q, &event, buf, sizeof(buf),
                                     FI_WRITE));
    EXPECT_EQ(-FI_EINVAL, fi_eq_sread(q, NULL, buf, sizeof(buf), 0, 0));
    EXPECT_EQ(-FI_EINVAL, fi_eq_readerr(q, NULL, 0));
    EXPECT_EQ(-FI_EINVAL, fi_eq_readerr(q, &err, FI_PEEK));
    /* no error event, whatever the queue holds */
    EXPECT_EQ(-FI_EAGAIN, fi_eq_readerr(q, &err, 0));
    /* the event survived every refused call */
    ASSERT_EQ((ssize_t)sizeof(v), fi_eq_read(q, &event, buf, sizeof(buf),
                                             0));
    EXPECT_EQ(0, memcmp(buf, &v, sizeof(v)));
    EXPECT_EQ(-FI_EAGAIN, fi_eq_readerr(q, &err, 0));
}

TEST_F(eq, sread_bounded_by_timeout)
{
    struct fid_eq *none = open_eq(4, FI_WRITE, FI_WAIT_NONE);
    struct fid_eq *q    = open_eq(4);
    uint64_t got;
    uint32_t event;

    ASSERT_NE(nullptr, none);
    ASSERT_NE(nullptr, q);
    /* fi_eq(3): no sread on a queue without a wait object */
    EXPECT_EQ(-FI_ENOSYS, fi_eq_sread(none, &event, &got, sizeof(got), 10,
                                      0));

    auto start = test_clock::now();
    EXPECT_EQ(-FI_EAGAIN, fi_eq_sread(q, &event, &got, sizeof(got), 300,
                                      0));
    double took = seconds_since(start);
    EXPECT_GE(took, 0.29);
    EXPECT_LT(took, 10.0);

    start = test_clock::now();
    EXPECT_EQ(-FI_EAGAIN, fi_eq_sread(q, &event, &got, sizeof(got), 0, 0));
    EXPECT_LT(seconds_since(start), 5.0);
}

TEST_F(eq, sread_woken_by_another_threads_write)
{
    struct fid_eq *q = open_eq(4);
    uint64_t v = 0x1234, got = 0;
    uint32_t event = 0;
    ssize_t wrote  = 0;

    ASSERT_NE(nullptr, q);
    auto start = test_clock::now();
    std::thread writer([&]() {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        wrote = fi_eq_write(q, FI_NOTIFY, &v, sizeof(v), 0);
    });
    ssize_t ret = fi_eq_sread(q, &event, &got, sizeof(got), 20000, 0);
    double took = seconds_since(start);
    writer.join();
    EXPECT_EQ((ssize_t)sizeof(v), wrote);
    ASSERT_EQ((ssize_t)sizeof(got), ret);
    EXPECT_EQ((uint32_t)FI_NOTIFY, event);
    EXPECT_EQ(v, got);
    EXPECT_GE(took, 0.19);
    EXPECT_LT(took, 10.0);   /* woken, not timed out */
}

TEST_F(eq, strerror_gives_text)
{
    struct fid_eq *q = open_eq(4);
    char buf[64];

    ASSERT_NE(nullptr, q);
    const char *s = fi_eq_strerror(q, 7, NULL, buf, sizeof(buf));
    ASSERT_NE(nullptr, s);
    EXPECT_EQ(buf, s);
    EXPECT_NE(std::string::npos, std::string(s).find("fiatomic"));
    EXPECT_NE(std::string::npos, std::string(s).find("7"));
    s = fi_eq_strerror(q, 7, NULL, NULL, 0);
    ASSERT_NE(nullptr, s);
    EXPECT_NE(0u, strlen(s));
}

TEST_F(eq, fabric_cannot_close_under_an_open_queue)
{
    struct fi_eq_attr attr = {};
    struct fid_eq *q;

    ASSERT_EQ(0, fi_eq_open(m_fabric, &attr, &q, NULL));
    EXPECT_EQ(-FI_EBUSY, fi_close(&m_fabric->fid));
    EXPECT_EQ(0, fi_close(&q->fid));
}

class eq_bind : public eq {
protected:
    void SetUp() override
    {
        struct fi_av_attr av_attr = {};

        eq::SetUp();
        ASSERT_FALSE(HasFatalFailure());
        ASSERT_EQ(0, fi_domain(m_fabric, m_head, &m_domain, NULL));
        av_attr.type = FI_AV_TABLE;
        ASSERT_EQ(0, fi_av_open(m_domain, &av_attr, &m_av, NULL));
        ASSERT_EQ(0, fi_endpoint(m_domain, m_head, &m_ep, NULL));
    }

    void TearDown() override
    {
        if (m_ep != NULL) {
            EXPECT_EQ(0, fi_close(&m_ep->fid));
        }
        if (m_av != NULL) {
            EXPECT_EQ(0, fi_close(&m_av->fid));
        }
        if (m_domain != NULL) {
            EXPECT_EQ(0, fi_close(&m_domain->fid));
            m_domain = NULL;
        }
        eq::TearDown();
    }

    struct fid_av *m_av = NULL;
    struct fid_ep *m_ep = NULL;
};

TEST_F(eq_bind, endpoint_binds_one_queue_and_keeps_it_open)
{
    struct fid_eq *q  = open_eq(4);
    struct fid_eq *q2 = open_eq(4);

    ASSERT_NE(nullptr, q);
    ASSERT_NE(nullptr, q2);
    EXPECT_EQ(-FI_EINVAL, fi_ep_bind(m_ep, &q->fid, FI_TRANSMIT));
    ASSERT_EQ(0, fi_ep_bind(m_ep, &q->fid, 0));
    EXPECT_EQ(-FI_EINVAL, fi_ep_bind(m_ep, &q2->fid, 0));
    EXPECT_EQ(-FI_EBUSY, fi_close(&q->fid));
    EXPECT_EQ(0, fi_close(&q2->fid));   /* never bound */
    forget(q2);
    ASSERT_EQ(0, fi_ep_bind(m_ep, &m_av->fid, 0));
    ASSERT_EQ(0, fi_enable(m_ep));
    EXPECT_EQ(-FI_EBUSY, fi_close(&q->fid));
    EXPECT_EQ(0, fi_close(&m_ep->fid));
    m_ep = NULL;
    EXPECT_EQ(0, fi_close(&q->fid));
    forget(q);
}

TEST_F(eq_bind, address_vector_binds_one_queue_that_gets_no_event)
{
    struct fid_eq *q  = open_eq(4);
    struct fid_eq *q2 = open_eq(4);
    uint8_t addr[64];
    size_t addrlen = sizeof(addr);
    fi_addr_t fi_addr = FI_ADDR_NOTAVAIL;
    struct fi_eq_entry got;
    uint32_t event;

    ASSERT_NE(nullptr, q);
    ASSERT_NE(nullptr, q2);
    EXPECT_EQ(-FI_EINVAL, fi_av_bind(m_av, &q->fid, FI_EVENT));
    EXPECT_EQ(-FI_EINVAL, fi_av_bind(m_av, NULL, 0));
    ASSERT_EQ(0, fi_av_bind(m_av, &q->fid, 0));
    EXPECT_EQ(-FI_EINVAL, fi_av_bind(m_av, &q2->fid, 0));
    EXPECT_EQ(-FI_EBUSY, fi_close(&q->fid));

    /* the insert completes before it returns: the queue gets nothing */
    ASSERT_EQ(0, fi_getname(&m_ep->fid, addr, &addrlen));
    ASSERT_EQ(1, fi_av_insert(m_av, addr, 1, &fi_addr, 0, NULL));
    EXPECT_EQ(0u, fi_addr);
    EXPECT_EQ(-FI_EAGAIN, fi_eq_read(q, &event, &got, sizeof(got), 0));

    EXPECT_EQ(0, fi_close(&m_ep->fid));
    m_ep = NULL;
    EXPECT_EQ(0, fi_close(&m_av->fid));
    m_av = NULL;
    EXPECT_EQ(0, fi_close(&q->fid));
    forget(q);
}

TEST_F(eq_bind, queue_of_another_fabric_is_refused)
{
    struct fid_fabric *other = NULL;
    struct fi_eq_attr attr   = {};
    struct fid_eq *q         = NULL;

    ASSERT_EQ(0, fi_fabric(m_head->fabric_attr, &other, NULL));
    ASSERT_EQ(0, fi_eq_open(other, &attr, &q, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_ep_bind(m_ep, &q->fid, 0));
    EXPECT_EQ(-FI_EINVAL, fi_av_bind(m_av, &q->fid, 0));
    EXPECT_EQ(0, fi_close(&q->fid));
    EXPECT_EQ(0, fi_close(&other->fid));
}

} // namespace
