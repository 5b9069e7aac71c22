/**
 * The message suites' fixtures and checks (fiprov_msg_fixture.h).
 */
#include "fiprov_msg_fixture.h"

namespace fiprov_test {

void msg_peer_test::SetUp()
{
    size_t len = 64;

    peer_test::SetUp();
    ASSERT_FALSE(HasFatalFailure());
    m_self.resize(len);
    ASSERT_EQ(0, fi_getname(&m_o.ep->fid, m_self.data(), &len));
    m_self.resize(len);
}

void self_ep_test::open_self(uint64_t caps, enum fi_cq_format format)
{
    open_params p;
    uint8_t addr[64];
    size_t len = sizeof(addr);

    p.caps      = caps;
    p.cq_format = format;
    ASSERT_EQ(0, m_o.open_domain(p));
    ASSERT_EQ(0, m_o.open_ep());
    ASSERT_EQ(0, fi_getname(&m_o.ep->fid, addr, &len));
    ASSERT_EQ(1, fi_av_insert(m_o.av, addr, 1, &m_self, 0, NULL));
}

void self_ep_test::TearDown()
{
    m_o.close();
    test_base::TearDown();
}

void split_iov(std::vector<uint8_t> &out, std::vector<uint8_t> &in,
               struct iovec siov[3], struct iovec riov[2])
{
    const size_t len = out.size(), half = len / 2, third = len / 3;

    siov[0] = {out.data(), third};
    siov[1] = {out.data() + third, half - third};
    siov[2] = {out.data() + half, len - half};
    riov[0] = {in.data(), half};
    riov[1] = {in.data() + half, in.size() - half};
}

void expect_msg_counters(const objects &o, uint64_t n)
{
    EXPECT_EQ(n, fi_cntr_read(o.scntr));
    EXPECT_EQ(n, fi_cntr_read(o.rvcntr));
    EXPECT_EQ(0u, fi_cntr_readerr(o.scntr));
    EXPECT_EQ(0u, fi_cntr_readerr(o.rvcntr));
    /* and nothing counted as a read or a write */
    EXPECT_EQ(0u, fi_cntr_read(o.rcntr));
    EXPECT_EQ(0u, fi_cntr_read(o.wcntr));
}

} // namespace fiprov_test
