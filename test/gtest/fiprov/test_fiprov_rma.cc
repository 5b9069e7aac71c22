/**
 * RMA between two processes through the provider, over the libfabric API
 * only: fi_write, fi_writev, fi_writemsg, fi_inject_write, fi_read,
 * fi_readv and fi_readmsg of several sizes and iov splits, checked in the
 * peer's memory (writes) and the local buffer (reads), with their CQ
 * entries and FI_WRITE/FI_READ counters; a write counted is already at the
 * target (delivery complete); out-of-region, unknown-key and NULL input
 * refused without touching memory. Over the instantiations of fiprov_peer.h.
 */
#include "fiprov_peer.h"
#include "fiprov_ucp_pause.h"

#include <rdma/fi_rma.h>

#include <string.h>
#include <unistd.h>

#include <set>

using namespace fiprov_test;

namespace {

class rma2p : public peer_test {
protected:
    static std::vector<uint8_t> pattern(size_t len, uint8_t seed)
    {
        std::vector<uint8_t> v(len);

        for (size_t i = 0; i < len; ++i) {
            v[i] = (uint8_t)(seed + i * 7 + (i >> 8));
        }
        return v;
    }

    /* one write of `len` bytes at `offset` in form `form`, then its check */
    void write_one(int form, size_t offset, size_t len, uint8_t seed);
    void read_one(int form, size_t offset, size_t len, uint8_t seed);
};

enum { FORM_PLAIN, FORM_V, FORM_MSG, FORM_INJECT };
const char *form_names[] = {"plain", "v", "msg", "inject"};

void rma2p::write_one(int form, size_t offset, size_t len, uint8_t seed)
{
    std::vector<uint8_t> data = pattern(len, seed);
    const uint64_t w0 = fi_cntr_read(m_o.wcntr);
    const size_t half = len / 2;
    uint64_t raddr    = m_peer.base + offset;
    struct iovec iov[2] = {{data.data(), half},
                           {data.data() + half, len - half}};
    struct fi_rma_iov rma[2] = {{raddr, half, m_peer.key},
                                {raddr + half, len - half, m_peer.key}};
    struct fi_msg_rma msg = {};
    std::multiset<void*> contexts, expected;
    ssize_t ret;

    m_peer.set(offset, std::vector<uint8_t>(len, 0));
    msg.msg_iov       = iov;
    msg.iov_count     = 2;
    msg.addr          = m_dest;
    msg.rma_iov       = rma;
    msg.rma_iov_count = 2;
    msg.context       = &data;
    switch (form) {
    case FORM_PLAIN:
        ret = fi_write(m_o.ep, data.data(), len, NULL, m_dest, raddr,
                       m_peer.key, &data);
        break;
    case FORM_V:
        ret = fi_writev(m_o.ep, iov, NULL, 2, m_dest, raddr, m_peer.key,
                        &data);
        break;
    case FORM_MSG:
        ret = fi_writemsg(m_o.ep, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE);
        break;
    default:
        ret = fi_inject_write(m_o.ep, data.data(), len, m_dest, raddr,
                              m_peer.key);
        break;
    }
    ASSERT_EQ(0, ret) << form_names[form] << " " << len;
    std::vector<uint8_t> sent = data;
    if (form == FORM_INJECT) {
        memset(data.data(), 0xa5, len); /* the caller's again */
    } else {
        expected.insert(&data);
    }
    wait_complete(0, w0 + 1, FI_RMA, &contexts);
    ASSERT_FALSE(HasFatalFailure());
    EXPECT_EQ(expected, contexts);
    /* counted means delivered: the peer reads it without more waiting */
    EXPECT_EQ(sent, m_peer.get(offset, len)) << form_names[form] << " "
                                             << len;
}

void rma2p::read_one(int form, size_t offset, size_t len, uint8_t seed)
{
    std::vector<uint8_t> data = pattern(len, seed), got(len, 0xee);
    const uint64_t r0 = fi_cntr_read(m_o.rcntr);
    const size_t half = len / 2;
    uint64_t raddr    = m_peer.base + offset;
    struct iovec iov[2] = {{got.data(), half},
                           {got.data() + half, len - half}};
    struct fi_rma_iov rma[2] = {{raddr, half, m_peer.key},
                                {raddr + half, len - half, m_peer.key}};
    struct fi_msg_rma msg = {};
    std::multiset<void*> contexts, expected;
    ssize_t ret;

    m_peer.set(offset, data);
    msg.msg_iov       = iov;
    msg.iov_count     = 2;
    msg.addr          = m_dest;
    msg.rma_iov       = rma;
    msg.rma_iov_count = 2;
    msg.context       = &got;
    switch (form) {
    case FORM_PLAIN:
        ret = fi_read(m_o.ep, got.data(), len, NULL, m_dest, raddr,
                      m_peer.key, &got);
        break;
    case FORM_V:
        ret = fi_readv(m_o.ep, iov, NULL, 2, m_dest, raddr, m_peer.key,
                       &got);
        break;
    default:
        ret = fi_readmsg(m_o.ep, &msg, FI_COMPLETION);
        break;
    }
    ASSERT_EQ(0, ret) << form_names[form] << " " << len;
    expected.insert(&got);
    wait_complete(r0 + 1, 0, FI_RMA, &contexts);
    ASSERT_FALSE(HasFatalFailure());
    EXPECT_EQ(expected, contexts);
    EXPECT_EQ(data, got) << form_names[form] << " " << len;
}

TEST_P(rma2p, writes_land_at_the_peer)
{
    for (size_t len : {1ul, 8ul, 100ul, 4096ul, 40000ul}) {
        for (int form = FORM_PLAIN; form <= FORM_INJECT; ++form) {
            if ((form == FORM_INJECT) &&
                (len > m_o.info->tx_attr->inject_size)) {
                continue;
            }
            write_one(form, 24 + form, len, (uint8_t)(len + form));
            ASSERT_FALSE(HasFatalFailure());
        }
    }
    EXPECT_EQ(0u, fi_cntr_readerr(m_o.wcntr));
}

TEST_P(rma2p, reads_fetch_the_peers_bytes)
{
    for (size_t len : {1ul, 8ul, 100ul, 4096ul, 40000ul}) {
        for (int form = FORM_PLAIN; form <= FORM_MSG; ++form) {
            read_one(form, 40 + form, len, (uint8_t)(3 * len + form));
            ASSERT_FALSE(HasFatalFailure());
        }
    }
    EXPECT_EQ(0u, fi_cntr_readerr(m_o.rcntr));
}

/* The provider's UCP calls return to it only after a pause, long enough for
 * its progress thread (under FI_PROGRESS_AUTO) to complete what they
 * started, as a loaded machine can make them: each operation still
 * completes once and is counted once. (A write's piece that completed
 * before its count was taken completed the operation, which was freed and
 * then completed again: a double free that Sandia OpenSHMEM's alltoalls
 * met on a loaded machine.) */
TEST_P(rma2p, pieces_completed_before_their_call_returns)
{
    struct fi_cq_data_entry e;

    {
        ucp_pause pause(3000);

        for (int form = FORM_PLAIN; form <= FORM_INJECT; ++form) {
            write_one(form, 64, (form == FORM_INJECT) ? 48 : 4096,
                      (uint8_t)(form + 1));
            ASSERT_FALSE(HasFatalFailure());
        }
        for (int form = FORM_PLAIN; form <= FORM_MSG; ++form) {
            read_one(form, 64, 4096, (uint8_t)(form + 9));
            ASSERT_FALSE(HasFatalFailure());
        }
        EXPECT_GT(ucp_pause::paused(), 0u)
                << "no UCP call of the provider paused";
    }
    /* nothing more comes: no second entry, no second count */
    usleep(20000);
    EXPECT_EQ(-FI_EAGAIN, fi_cq_read(m_o.cq, &e, 1));
    EXPECT_EQ(4u, fi_cntr_read(m_o.wcntr));
    EXPECT_EQ(3u, fi_cntr_read(m_o.rcntr));
    EXPECT_EQ(0u, fi_cntr_readerr(m_o.wcntr) + fi_cntr_readerr(m_o.rcntr));
}

TEST_P(rma2p, bad_input_reaches_no_memory)
{
    std::vector<uint8_t> mark(peer_region_len, 0x5a);
    std::vector<uint8_t> buf(64, 0x11);

    m_peer.set(0, mark);
    /* unknown key */
    EXPECT_EQ(-FI_ENOKEY, fi_write(m_o.ep, buf.data(), 8, NULL, m_dest,
                                   m_peer.base, m_peer.key + 1, NULL));
    EXPECT_EQ(-FI_ENOKEY, fi_read(m_o.ep, buf.data(), 8, NULL, m_dest,
                                  m_peer.base, m_peer.key + 1, NULL));
    /* before the region, past its end, straddling it */
    EXPECT_EQ(-FI_EINVAL, fi_write(m_o.ep, buf.data(), 8, NULL, m_dest,
                                   m_peer.base - 8, m_peer.key, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_write(m_o.ep, buf.data(), 8, NULL, m_dest,
                                   m_peer.base + peer_region_len,
                                   m_peer.key, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_write(m_o.ep, buf.data(), 16, NULL, m_dest,
                                   m_peer.base + peer_region_len - 8,
                                   m_peer.key, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_read(m_o.ep, buf.data(), 16, NULL, m_dest,
                                  m_peer.base + peer_region_len - 8,
                                  m_peer.key, NULL));
    /* NULL, oversize inject, an address the vector does not hold */
    EXPECT_EQ(-FI_EINVAL, fi_write(m_o.ep, NULL, 8, NULL, m_dest,
                                   m_peer.base, m_peer.key, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_writemsg(m_o.ep, NULL, 0));
    EXPECT_EQ(-FI_EINVAL, fi_inject_write(m_o.ep, buf.data(),
                                          m_o.info->tx_attr->inject_size + 1,
                                          m_dest, m_peer.base, m_peer.key));
    EXPECT_EQ(-FI_EINVAL, fi_write(m_o.ep, buf.data(), 8, NULL, m_dest + 3,
                                   m_peer.base, m_peer.key, NULL));
    /* remote CQ data is not offered */
    EXPECT_EQ(-FI_ENOSYS, fi_writedata(m_o.ep, buf.data(), 8, NULL, 1,
                                       m_dest, m_peer.base, m_peer.key,
                                       NULL));

    EXPECT_EQ(0u, fi_cntr_read(m_o.wcntr) + fi_cntr_readerr(m_o.wcntr));
    EXPECT_EQ(0u, fi_cntr_read(m_o.rcntr) + fi_cntr_readerr(m_o.rcntr));
    EXPECT_EQ(mark, m_peer.get(0, peer_region_len));
}

/* The error entry of the one operation posted with `context`, waited for
 * (bounded): its err, or 0 if none came. */
static int rma_error_of(struct fid_cq *cq, void *context)
{
    struct fi_cq_err_entry err = {};
    struct fi_cq_data_entry e;

    for (int i = 0; i < peer_wait_ms; ++i) {
        ssize_t n = fi_cq_read(cq, &e, 1);

        if (n == -FI_EAVAIL) {
            if (fi_cq_readerr(cq, &err, 0) != 1) {
                return 0;
            }
            return (err.op_context == context) ? err.err : 0;
        }
        if (n == 1) {
            return 0; /* a success */
        }
        usleep(1000);
    }
    return 0;
}

/* A key this process resolved and cached, used after the peer closed its
 * region: the target refuses the write and the read (their completions
 * carry FI_ENOKEY, counted as errors), and the region's bytes stay. */
TEST_P(rma2p, closed_region_is_refused_with_a_cached_key)
{
    std::vector<uint8_t> mark(64, 0x5a), buf(8, 0x77), got(8, 0xee);
    const uint64_t old_key = m_peer.key;

    write_one(FORM_PLAIN, 0, 8, 1); /* the key is cached now */
    ASSERT_FALSE(HasFatalFailure());
    const uint64_t new_key = m_peer.replace_region();
    ASSERT_NE(0u, new_key);
    ASSERT_NE(old_key, new_key);
    m_peer.set(0, mark);

    ASSERT_EQ(0, fi_write(m_o.ep, buf.data(), 8, NULL, m_dest, m_peer.base,
                          old_key, &buf));
    EXPECT_EQ(FI_ENOKEY, rma_error_of(m_o.cq, &buf));
    ASSERT_EQ(0, fi_read(m_o.ep, got.data(), 8, NULL, m_dest, m_peer.base,
                         old_key, &got));
    EXPECT_EQ(FI_ENOKEY, rma_error_of(m_o.cq, &got));
    EXPECT_EQ(std::vector<uint8_t>(8, 0xee), got);
    EXPECT_EQ(1u, fi_cntr_readerr(m_o.wcntr));
    EXPECT_EQ(1u, fi_cntr_readerr(m_o.rcntr));
    EXPECT_EQ(mark, m_peer.get(0, mark.size()));

    /* the positive control: the same write with the new key lands */
    m_peer.key = new_key;
    write_one(FORM_PLAIN, 0, 8, 9);
}

} // namespace

INSTANTIATE_TEST_SUITE_P(tls, rma2p, testing::ValuesIn(peer_params),
                         peer_param_name);
INSTANTIATE_TEST_SUITE_P(share, rma2p, testing::ValuesIn(peer_params_share),
                         peer_param_name);
INSTANTIATE_TEST_SUITE_P(sockaddr, rma2p,
                         testing::ValuesIn(peer_params_sockaddr),
                         peer_param_name);
