/**
 * Atomics honour a region's remote access as registered (fi_mr_reg's
 * FI_REMOTE_READ / FI_REMOTE_WRITE), as fi_write and fi_read do. An atomic
 * reads when it returns data (fi_fetch_atomic, fi_compare_atomic) and
 * writes when it may update the target (every op but FI_ATOMIC_READ): on
 * a region without the access it needs, every cell of fi_atomic(3) is
 * refused at the call with -FI_EACCES (as fi_write is) and the peer's
 * bytes stay as they were; every cell the region grants executes as the
 * reference model (src/ref) says. The peer registers its region with the
 * access under test (fiprov_peer.h, peer_access_env); over the
 * instantiations of fiprov_peer.h, shared registrations included.
 */
#include "fiprov_peer.h"

#include "fiatomic_ref.h"
#include "fiatomic_test_values.h"

#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>

#include <stdlib.h>
#include <string.h>

#include <string>

using namespace fiprov_test;

namespace {

/* where the cells go: refused ones, and executed ones */
const size_t refused_offset  = 256;
const size_t executed_offset = 1024;
const size_t elem_max        = 32;

template <uint64_t ACCESS>
class access2p : public peer_test {
protected:
    void SetUp() override
    {
        setenv(peer_access_env, std::to_string(ACCESS).c_str(), 1);
        peer_test::SetUp();
    }

    void TearDown() override
    {
        peer_test::TearDown();
        unsetenv(peer_access_env);
    }

    static bool granted(int family, int op)
    {
        const bool reads  = (family != FIATOMIC_REF_FAMILY_BASE);
        const bool writes = (op != FI_ATOMIC_READ);

        return (!reads || (ACCESS & FI_REMOTE_READ)) &&
               (!writes || (ACCESS & FI_REMOTE_WRITE));
    }

    /* post one element of a cell at `offset`; the call's return */
    ssize_t post(int family, int op, int dt, size_t offset,
                 const fiatomic_test::value_triple &v, void *result)
    {
        const uint64_t raddr = m_peer.base + offset;

        switch (family) {
        case FIATOMIC_REF_FAMILY_FETCH:
            return fi_fetch_atomic(m_o.ep, v.operand.data(), 1, NULL, result,
                                   NULL, m_dest, raddr, m_peer.key,
                                   (enum fi_datatype)dt, (enum fi_op)op,
                                   this);
        case FIATOMIC_REF_FAMILY_COMPARE:
            return fi_compare_atomic(m_o.ep, v.operand.data(), 1, NULL,
                                     v.compare.data(), NULL, result, NULL,
                                     m_dest, raddr, m_peer.key,
                                     (enum fi_datatype)dt, (enum fi_op)op,
                                     this);
        default:
            return fi_atomic(m_o.ep, v.operand.data(), 1, NULL, m_dest, raddr,
                             m_peer.key, (enum fi_datatype)dt,
                             (enum fi_op)op, this);
        }
    }

    /* wait for the operation posted last: no error, one entry */
    void wait_done(int family)
    {
        std::multiset<void*> contexts;

        if (family == FIATOMIC_REF_FAMILY_BASE) {
            ++m_writes;
        } else {
            ++m_reads;
        }
        wait_complete(m_reads, m_writes, FI_ATOMIC, &contexts);
        EXPECT_EQ(1u, contexts.size());
    }

    /* one cell: refused with -FI_EACCES and nothing changed, or executed
     * as the reference says */
    void run_cell(int family, int op, int dt)
    {
        const size_t size = fiatomic_ref_datatype_size(dt);
        fiatomic_test::value_triple v;
        uint8_t result[elem_max] = {}, expected[elem_max] = {};
        uint8_t fetched[elem_max] = {};
        const std::string cell = std::string(fiatomic_ref_family_name(family)) +
                                 " " + fiatomic_ref_op_name(op) + " " +
                                 fiatomic_ref_datatype_name(dt);
        const bool ok = granted(family, op);
        const size_t offset = ok ? executed_offset : refused_offset;

        v.target  = fiatomic_test::int_value(dt, 40);
        v.operand = fiatomic_test::int_value(dt, 2);
        v.compare = v.target; /* the compare ops that swap on equal do */
        ASSERT_LE(size, elem_max);
        m_peer.set(offset, v.target);

        ssize_t ret = post(family, op, dt, offset, v, result);
        if (ret == 0) {
            wait_done(family); /* whatever it should have been */
            ASSERT_FALSE(HasFatalFailure()) << cell;
        }
        std::vector<uint8_t> after = m_peer.get(offset, size);
        if (!ok) {
            EXPECT_EQ(-FI_EACCES, ret) << cell;
            EXPECT_EQ(v.target, after) << cell << " changed the region";
            return;
        }
        ASSERT_EQ(0, ret) << cell;
        memcpy(expected, v.target.data(), size);
        ASSERT_EQ(0, fiatomic_ref_apply(family, op, dt, expected,
                                        v.operand.data(), v.compare.data(),
                                        fetched)) << cell;
        EXPECT_TRUE(fiatomic_ref_result_equal(op, dt, expected, after.data()))
                << cell << ": the region is not as the reference says";
        if (family != FIATOMIC_REF_FAMILY_BASE) {
            EXPECT_TRUE(fiatomic_ref_bits_equal(dt, fetched, result))
                    << cell << ": fetched not the initial value";
        }
        ++m_executed;
    }

    void run_every_cell()
    {
        int cells = 0;

        for (int family = 0; family < FIATOMIC_REF_FAMILY_LAST; ++family) {
            for (int op = 0; op < FIATOMIC_REF_OP_COUNT; ++op) {
                for (int dt = 0; dt < FIATOMIC_REF_DATATYPE_COUNT; ++dt) {
                    if (!fiatomic_ref_cell_defined(family, op, dt) ||
                        (fiatomic_ref_datatype_size(dt) == 0)) {
                        continue;
                    }
                    run_cell(family, op, dt);
                    ASSERT_FALSE(HasFatalFailure());
                    ++cells;
                }
            }
        }
        EXPECT_EQ(414, cells);
        EXPECT_EQ(0u, fi_cntr_readerr(m_o.wcntr) + fi_cntr_readerr(m_o.rcntr))
                << "refusals are the calls' returns, not error entries";
    }

    /* fi_write and fi_read of 8 bytes, the reference the atomics follow */
    void rma_reference()
    {
        uint64_t value = 0x1122334455667788ull, got = 0;
        const std::vector<uint8_t> before(8, 0x5a);
        std::multiset<void*> contexts;
        uint64_t r0 = fi_cntr_read(m_o.rcntr), w0 = fi_cntr_read(m_o.wcntr);
        ssize_t ret;

        m_peer.set(0, before);
        ret = fi_write(m_o.ep, &value, 8, NULL, m_dest, m_peer.base,
                       m_peer.key, this);
        EXPECT_EQ((ACCESS & FI_REMOTE_WRITE) ? 0 : -FI_EACCES, ret);
        w0 += (ret == 0);
        ret = fi_read(m_o.ep, &got, 8, NULL, m_dest, m_peer.base, m_peer.key,
                      this);
        EXPECT_EQ((ACCESS & FI_REMOTE_READ) ? 0 : -FI_EACCES, ret);
        r0 += (ret == 0);
        wait_complete(r0, w0, FI_RMA, &contexts);
        m_reads  = fi_cntr_read(m_o.rcntr);
        m_writes = fi_cntr_read(m_o.wcntr);
    }

    uint64_t m_reads    = 0;
    uint64_t m_writes   = 0;
    int      m_executed = 0;
};

class access2p_read_only : public access2p<FI_REMOTE_READ> {
};
class access2p_write_only : public access2p<FI_REMOTE_WRITE> {
};
class access2p_full : public access2p<FI_REMOTE_READ | FI_REMOTE_WRITE> {
};

/* Only FI_ATOMIC_READ, the one fetching cell that writes nothing, is
 * granted: 16 cells (one per datatype). */
TEST_P(access2p_read_only, only_atomic_read_executes)
{
    rma_reference();
    run_every_cell();
    EXPECT_EQ(16, m_executed);
}

/* The base family writes without reading: its 152 cells granted; every
 * fetching and compare cell refused. */
TEST_P(access2p_write_only, only_non_fetching_writes_execute)
{
    rma_reference();
    run_every_cell();
    EXPECT_EQ(152, m_executed);
}

/* The positive control: every cell executes. */
TEST_P(access2p_full, every_cell_executes)
{
    rma_reference();
    run_every_cell();
    EXPECT_EQ(414, m_executed);
}

#define ACCESS2P_INSTANTIATE(_suite) \
    INSTANTIATE_TEST_SUITE_P(tls, _suite, testing::ValuesIn(peer_params), \
                             peer_param_name); \
    INSTANTIATE_TEST_SUITE_P(share, _suite, \
                             testing::ValuesIn(peer_params_share), \
                             peer_param_name)

ACCESS2P_INSTANTIATE(access2p_read_only);
ACCESS2P_INSTANTIATE(access2p_write_only);
ACCESS2P_INSTANTIATE(access2p_full);

} // namespace
