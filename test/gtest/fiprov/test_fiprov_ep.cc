/**
 * Endpoints through libfabric's API (fi_endpoint(3), fi_cm(3)): several per
 * domain, each with its own address from fi_getname, decoded here from the
 * layout fi_fiatomic(7) documents (one length everywhere; the domain's
 * listener, distinct endpoint ids and nonces per endpoint, another listener
 * for another domain), -FI_ETOOSMALL with the needed length, an address
 * that goes into an address vector and comes back unchanged, binding
 * (one address vector, a CQ per direction, a counter per direction flag,
 * nothing once enabled), enabling (-FI_ENOAV first),
 * message calls only with FI_MSG (before fi_enable out of state, to an
 * address the vector does not hold invalid), tagged calls likewise, and a
 * domain, address vector,
 * CQ and counter that cannot close under an open endpoint.
 */
#include "fiprov_fixture.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <string.h>

#include <set>

using namespace fiprov_test;

namespace {

static const size_t addr_len = 24;

struct decoded_addr {
    uint32_t ipv4, ep_id, reserved;
    uint16_t port;
    uint64_t nonce;
};

static uint64_t get_be(const uint8_t *p, size_t n)
{
    uint64_t v = 0;

    for (size_t i = 0; i < n; ++i) {
        v = (v << 8) | p[i];
    }
    return v;
}

class ep : public domain_test {
protected:
    void SetUp() override
    {
        test_base::SetUp();
        open_domain();
    }

    void TearDown() override
    {
        for (struct fid_ep *e : m_eps) {
            EXPECT_EQ(0, fi_close(&e->fid));
        }
        if (m_av != NULL) {
            EXPECT_EQ(0, fi_close(&m_av->fid));
        }
        domain_test::TearDown();
    }

    struct fid_ep *open_ep(struct fid_domain *dom = NULL)
    {
        struct fid_ep *e = NULL;

        EXPECT_EQ(0, fi_endpoint(dom ? dom : m_domain, m_head, &e, this));
        if (e != NULL && dom == NULL) {
            m_eps.push_back(e);
        }
        return e;
    }

    std::vector<uint8_t> getname(struct fid_ep *e)
    {
        std::vector<uint8_t> a(64, 0xee);
        size_t len = a.size();

        EXPECT_EQ(0, fi_getname(&e->fid, a.data(), &len));
        EXPECT_EQ(addr_len, len);
        a.resize(addr_len);
        return a;
    }

    static decoded_addr decode(const std::vector<uint8_t> &a)
    {
        decoded_addr d;

        EXPECT_EQ(1, a[0]);
        EXPECT_EQ(4, a[1]);
        d.port     = (uint16_t)get_be(&a[2], 2);
        d.ipv4     = (uint32_t)get_be(&a[4], 4);
        d.ep_id    = (uint32_t)get_be(&a[8], 4);
        d.reserved = (uint32_t)get_be(&a[12], 4);
        d.nonce    = get_be(&a[16], 8);
        EXPECT_NE(0, d.port);
        EXPECT_NE(0u, d.ipv4);
        EXPECT_EQ(0u, d.reserved);
        EXPECT_NE(0u, d.nonce);
        return d;
    }

    void open_av()
    {
        struct fi_av_attr attr = {};

        attr.type = FI_AV_TABLE;
        ASSERT_EQ(0, fi_av_open(m_domain, &attr, &m_av, NULL));
    }

    struct fid_av               *m_av     = NULL;
    std::vector<struct fid_ep*>  m_eps;
};

TEST_F(ep, addresses_one_length_distinct_per_endpoint)
{
    static const int count = 16;
    std::set<uint32_t> ids;
    std::set<uint64_t> nonces;
    decoded_addr first;

    for (int i = 0; i < count; ++i) {
        struct fid_ep *e = open_ep();

        ASSERT_NE(nullptr, e);
        EXPECT_EQ((size_t)FI_CLASS_EP, e->fid.fclass);
        EXPECT_EQ(this, e->fid.context);
        decoded_addr d = decode(getname(e));
        if (i == 0) {
            first = d;
        }
        /* one listener per domain */
        EXPECT_EQ(first.ipv4, d.ipv4);
        EXPECT_EQ(first.port, d.port);
        ids.insert(d.ep_id);
        nonces.insert(d.nonce);
    }
    EXPECT_EQ((size_t)count, ids.size());
    EXPECT_EQ((size_t)count, nonces.size());
}

TEST_F(ep, another_domain_listens_elsewhere)
{
    struct fid_domain *dom2;
    struct fid_ep *e1 = open_ep(), *e2;

    ASSERT_NE(nullptr, e1);
    ASSERT_EQ(0, fi_domain(m_fabric, m_head, &dom2, NULL));
    e2 = open_ep(dom2);
    ASSERT_NE(nullptr, e2);
    EXPECT_NE(decode(getname(e1)).port, decode(getname(e2)).port);
    EXPECT_EQ(0, fi_close(&e2->fid));
    EXPECT_EQ(0, fi_close(&dom2->fid));
}

TEST_F(ep, getname_too_small)
{
    struct fid_ep *e = open_ep();
    uint8_t buf[8];
    size_t len = sizeof(buf);

    ASSERT_NE(nullptr, e);
    EXPECT_EQ(-FI_ETOOSMALL, fi_getname(&e->fid, buf, &len));
    EXPECT_EQ(addr_len, len);
    len = 0;
    EXPECT_EQ(-FI_ETOOSMALL, fi_getname(&e->fid, NULL, &len));
    EXPECT_EQ(addr_len, len);
    EXPECT_EQ(-FI_EINVAL, fi_getname(&e->fid, buf, NULL));
}

TEST_F(ep, own_address_round_trips_through_av)
{
    struct fid_ep *e = open_ep();
    std::vector<uint8_t> name, back(addr_len);
    size_t len = addr_len;
    fi_addr_t fi_addr;
    char str[128];
    size_t slen = sizeof(str);

    ASSERT_NE(nullptr, e);
    open_av();
    name = getname(e);
    ASSERT_EQ(1, fi_av_insert(m_av, name.data(), 1, &fi_addr, 0, NULL));
    ASSERT_EQ(0, fi_av_lookup(m_av, fi_addr, back.data(), &len));
    EXPECT_EQ(name, back);
    ASSERT_NE(nullptr, fi_av_straddr(m_av, name.data(), str, &slen));
    EXPECT_EQ(0, strncmp(str, "fiatomic://", 11)) << str;
}

TEST_F(ep, bind_enable_and_busy_parents)
{
    struct fid_ep *e = open_ep();
    struct fi_av_attr attr = {};
    struct fi_cntr_attr cattr = {};
    struct fid_av *av2;
    struct fid_cntr *cntr;

    ASSERT_NE(nullptr, e);
    open_av();
    EXPECT_EQ(-FI_ENOAV, fi_enable(e));
    EXPECT_EQ(-FI_EINVAL, fi_ep_bind(e, &m_av->fid, FI_READ));
    ASSERT_EQ(0, fi_ep_bind(e, &m_av->fid, 0));
    attr.type = FI_AV_TABLE;
    ASSERT_EQ(0, fi_av_open(m_domain, &attr, &av2, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_ep_bind(e, &av2->fid, 0));
    EXPECT_EQ(0, fi_close(&av2->fid));

    /* counters per direction, each direction once */
    cattr.events = FI_CNTR_EVENTS_COMP;
    ASSERT_EQ(0, fi_cntr_open(m_domain, &cattr, &cntr, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_ep_bind(e, &cntr->fid, 0));
    EXPECT_EQ(-FI_EINVAL, fi_ep_bind(e, &cntr->fid, FI_SELECTIVE_COMPLETION));
    EXPECT_EQ(0, fi_ep_bind(e, &cntr->fid, FI_READ | FI_WRITE));
    EXPECT_EQ(-FI_EINVAL, fi_ep_bind(e, &cntr->fid, FI_WRITE));
    EXPECT_EQ(0, fi_ep_bind(e, &cntr->fid,
                            FI_SEND | FI_RECV | FI_REMOTE_READ |
                            FI_REMOTE_WRITE));

    /* completion queues per direction, each direction once */
    struct fi_cq_attr qattr = {};
    struct fid_cq *cq;
    qattr.format = FI_CQ_FORMAT_CONTEXT;
    ASSERT_EQ(0, fi_cq_open(m_domain, &qattr, &cq, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_ep_bind(e, &cq->fid, FI_SELECTIVE_COMPLETION));
    EXPECT_EQ(-FI_EINVAL, fi_ep_bind(e, &cq->fid, FI_READ));
    EXPECT_EQ(0, fi_ep_bind(e, &cq->fid,
                            FI_TRANSMIT | FI_SELECTIVE_COMPLETION));
    EXPECT_EQ(-FI_EINVAL, fi_ep_bind(e, &cq->fid, FI_TRANSMIT));
    EXPECT_EQ(0, fi_ep_bind(e, &cq->fid, FI_RECV));

    EXPECT_EQ(0, fi_enable(e));
    /* nothing binds once enabled */
    EXPECT_EQ(-FI_EINVAL, fi_ep_bind(e, &m_av->fid, 0));
    EXPECT_EQ(-FI_EBUSY, fi_close(&m_av->fid));
    EXPECT_EQ(-FI_EBUSY, fi_close(&cq->fid));
    EXPECT_EQ(-FI_EBUSY, fi_close(&cntr->fid));
    EXPECT_EQ(-FI_EBUSY, fi_close(&m_domain->fid));
    EXPECT_EQ(0, fi_close(&e->fid));
    m_eps.clear();
    EXPECT_EQ(0, fi_close(&cq->fid));
    EXPECT_EQ(0, fi_close(&cntr->fid));
    EXPECT_EQ(0, fi_close(&m_av->fid));
    m_av = NULL;
}

TEST_F(ep, transfers_need_enable_and_a_known_address)
{
    struct fid_ep *e = open_ep();
    uint64_t buf = 0, res = 0, cmp = 0;

    ASSERT_NE(nullptr, e);
    /* atomics, RMA and messages are implemented: before fi_enable they
     * fail as out of state, after it, to an address the vector does not
     * hold, as invalid (test_fiprov_atomic.cc, test_fiprov_rma.cc,
     * test_fiprov_msg.cc move data) */
    EXPECT_EQ(-FI_EOPBADSTATE, fi_atomic(e, &buf, 1, NULL, 0, 0, 0,
                                         FI_UINT64, FI_SUM, NULL));
    EXPECT_EQ(-FI_EOPBADSTATE, fi_send(e, &buf, 8, NULL, 0, NULL));
    EXPECT_EQ(-FI_EOPBADSTATE, fi_recv(e, &buf, 8, NULL, 0, NULL));
    EXPECT_EQ(-FI_EOPBADSTATE, fi_tsend(e, &buf, 8, NULL, 0, 0, NULL));
    EXPECT_EQ(-FI_EOPBADSTATE, fi_trecv(e, &buf, 8, NULL, 0, 0, 0, NULL));
    open_av();
    ASSERT_EQ(0, fi_ep_bind(e, &m_av->fid, 0));
    ASSERT_EQ(0, fi_enable(e));
    EXPECT_EQ(-FI_EINVAL, fi_atomic(e, &buf, 1, NULL, 0, 0, 0, FI_UINT64,
                                    FI_SUM, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_fetch_atomic(e, &buf, 1, NULL, &res, NULL, 0,
                                          0, 0, FI_UINT64, FI_SUM, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_compare_atomic(e, &buf, 1, NULL, &cmp, NULL,
                                            &res, NULL, 0, 0, 0, FI_UINT64,
                                            FI_CSWAP, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_send(e, &buf, 8, NULL, 0, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_inject(e, &buf, 8, 0));
    EXPECT_EQ(-FI_EINVAL, fi_read(e, &buf, 8, NULL, 0, 0, 0, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_write(e, &buf, 8, NULL, 0, 0, 0, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_tsend(e, &buf, 8, NULL, 0, 0, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_tinject(e, &buf, 8, 0, 0));
}

/* FI_SEND and FI_RECV modify the message capabilities: with neither FI_MSG
 * nor FI_TAGGED they restrict nothing, and a program may name them when it
 * opens an RMA and atomic endpoint (Sandia OpenSHMEM's context endpoints
 * add FI_RECV, and rx caps FI_RECV alone, "to drive progress on the CQ");
 * messages stay refused on such an endpoint (-FI_ENOSYS) and work where
 * FI_MSG is asked. */
TEST_F(ep, idle_direction_modifiers_accepted_messages_only_with_fi_msg)
{
    struct fid_ep *e = NULL;
    uint64_t buf     = 0;

    m_head->caps            = FI_RMA | FI_WRITE | FI_READ | FI_ATOMIC |
                              FI_RECV;
    m_head->tx_attr->caps   = m_head->caps;
    m_head->rx_attr->caps   = FI_RECV;
    ASSERT_EQ(0, fi_endpoint(m_domain, m_head, &e, NULL));
    ASSERT_NE(nullptr, e);
    m_eps.push_back(e);

    e = NULL;
    m_head->caps          |= FI_SEND;
    m_head->tx_attr->caps |= FI_SEND;
    ASSERT_EQ(0, fi_endpoint(m_domain, m_head, &e, NULL));
    ASSERT_NE(nullptr, e);
    m_eps.push_back(e);

    EXPECT_EQ(-FI_ENOSYS, fi_send(e, &buf, 8, NULL, 0, NULL));
    EXPECT_EQ(-FI_ENOSYS, fi_recv(e, &buf, 8, NULL, 0, NULL));

    e = NULL;
    m_head->caps          |= FI_MSG;
    m_head->tx_attr->caps |= FI_MSG;
    m_head->rx_attr->caps |= FI_MSG;
    ASSERT_EQ(0, fi_endpoint(m_domain, m_head, &e, NULL));
    ASSERT_NE(nullptr, e);
    m_eps.push_back(e);
    /* implemented: refused only because the endpoint is not enabled */
    EXPECT_EQ(-FI_EOPBADSTATE, fi_send(e, &buf, 8, NULL, 0, NULL));
    EXPECT_EQ(-FI_EOPBADSTATE, fi_recv(e, &buf, 8, NULL, 0, NULL));
}

TEST_F(ep, bad_open)
{
    struct fid_ep *e = NULL;

    EXPECT_EQ(-FI_EINVAL, fi_endpoint(m_domain, NULL, &e, NULL));
    m_head->ep_attr->type = FI_EP_MSG;
    EXPECT_EQ(-FI_EINVAL, fi_endpoint(m_domain, m_head, &e, NULL));
    m_head->ep_attr->type = FI_EP_RDM;
    EXPECT_EQ(nullptr, e);
}

} // namespace
