/**
 * Atomics between two processes through the provider, over the libfabric
 * API only: every one of fi_atomic(3)'s 414 cells in every call form
 * (fi_atomic, fi_atomicv, fi_atomicmsg, fi_inject_atomic; fi_fetch_atomic,
 * fi_fetch_atomicv, fi_fetch_atomicmsg; fi_compare_atomic, its v and msg
 * forms) on edge values, checked against the reference model (src/ref)
 * in the peer's memory, in the fetched values, in the completion entries
 * and in the FI_READ/FI_WRITE counters; fi_*atomicvalid agreeing with what
 * the calls do; both processes fetch-adding one element; and bad input
 * (unknown, forged and stale keys, addresses outside the region, ops and
 * datatypes that are not cells, NULL arguments); threads sharing an
 * endpoint. Over UCX_TLS=posix
 * (shared memory, same-host addresses) and UCX_TLS=tcp, with automatic and manual progress and
 * both key modes.
 */
#include "fiprov_peer.h"

#include "fiatomic_ref.h"
#include "fiatomic_test_values.h"

#include <rdma/fi_atomic.h>

#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include <algorithm>
#include <set>
#include <thread>
#include <sstream>
#include <string>

using namespace fiprov_test;

namespace {


/* the call forms of a family */
enum form { FORM_PLAIN, FORM_V, FORM_MSG, FORM_INJECT, FORM_LAST };

const char *form_name(int f)
{
    static const char *names[] = {"plain", "v", "msg", "inject"};
    return names[f];
}

/* elements per form of one cell */
const size_t max_elems = 96;

class atomic2p : public peer_test {
protected:
    void run_cell(int family, int op, int dt);
    void run_every_cell();

    bool m_misalign = false; /* run_cell's local buffers misaligned */
};

int valid(struct fid_ep *ep, int family, int op, int dt, size_t *count)
{
    switch (family) {
    case FIATOMIC_REF_FAMILY_FETCH:
        return fi_fetch_atomicvalid(ep, (enum fi_datatype)dt, (enum fi_op)op,
                                    count);
    case FIATOMIC_REF_FAMILY_COMPARE:
        return fi_compare_atomicvalid(ep, (enum fi_datatype)dt,
                                      (enum fi_op)op, count);
    default:
        return fi_atomicvalid(ep, (enum fi_datatype)dt, (enum fi_op)op,
                              count);
    }
}

void atomic2p::run_cell(int family, int op, int dt)
{
    const size_t size = fiatomic_ref_datatype_size(dt);
    auto triples      = fiatomic_test::make_triples(family, op, dt);
    const size_t n    = std::min(triples.size(), max_elems);
    const int forms   = (family == FIATOMIC_REF_FAMILY_BASE) ? FORM_LAST :
                        FORM_INJECT;
    const uint64_t r0 = fi_cntr_read(m_o.rcntr);
    const uint64_t w0 = fi_cntr_read(m_o.wcntr);
    /* the program's buffers at an address that is not a multiple of the
     * element's natural alignment (bytes to libfabric: it asks nothing of
     * local buffers' alignment; a C double complex needs 8 of 16) */
    const size_t shift = m_misalign ? std::min<size_t>(size, 16) / 2 : 0;
    std::vector<uint8_t> image(forms * n * size, 0);
    std::vector<std::vector<uint8_t>> operand(forms), compare(forms),
                                      result(forms);
    std::vector<size_t> elems(forms);
    std::multiset<void*> contexts, expected_contexts;
    std::ostringstream where;
    size_t count = 0;
    uint64_t reads = 0, writes = 0;

    where << fiatomic_ref_family_name(family) << " "
          << fiatomic_ref_op_name(op) << " " << fiatomic_ref_datatype_name(dt);
    ASSERT_EQ(0, valid(m_o.ep, family, op, dt, &count)) << where.str();
    ASSERT_GE(count, n) << where.str();

    for (int f = 0; f < forms; ++f) {
        elems[f] = (f == FORM_INJECT) ? std::min(n, 64 / size) : n;
        operand[f].resize(n * size + shift);
        compare[f].resize(n * size + shift);
        result[f].assign(n * size + shift, 0xee);
        for (size_t i = 0; i < elems[f]; ++i) {
            memcpy(&image[(f * n + i) * size], triples[i].target.data(), size);
            memcpy(operand[f].data() + shift + i * size,
                   triples[i].operand.data(), size);
            if (family == FIATOMIC_REF_FAMILY_COMPARE) {
                memcpy(compare[f].data() + shift + i * size,
                       triples[i].compare.data(),
                       size);
            }
        }
    }
    m_peer.set(0, image);
    ASSERT_FALSE(HasFatalFailure());

    for (int f = 0; f < forms; ++f) {
        const size_t m     = elems[f];
        const size_t half  = m / 2;
        uint64_t raddr     = m_peer.base + f * n * size;
        void *ctx          = &operand[f];
        uint8_t *opd       = operand[f].data() + shift;
        uint8_t *cmpd      = compare[f].data() + shift;
        uint8_t *resd      = result[f].data() + shift;
        struct fi_ioc iov[2] = {{opd, half}, {opd + half * size, m - half}};
        struct fi_ioc cmp[2] = {{cmpd, half}, {cmpd + half * size, m - half}};
        struct fi_ioc res[2] = {{resd, half}, {resd + half * size, m - half}};
        struct fi_rma_ioc rma[2] = {{raddr, half, m_peer.key},
                                    {raddr + half * size, m - half,
                                     m_peer.key}};
        struct fi_msg_atomic msg = {};
        int first = (half == 0) ? 1 : 0; /* no empty entries */
        ssize_t ret;

        msg.msg_iov       = &iov[first];
        msg.iov_count     = 2 - first;
        msg.addr          = m_dest;
        msg.rma_iov       = &rma[first];
        msg.rma_iov_count = 2 - first;
        msg.datatype      = (enum fi_datatype)dt;
        msg.op            = (enum fi_op)op;
        msg.context       = ctx;

        do {
            switch (family * FORM_LAST + f) {
            case FIATOMIC_REF_FAMILY_BASE * FORM_LAST + FORM_PLAIN:
                ret = fi_atomic(m_o.ep, opd, m, NULL, m_dest,
                                raddr, m_peer.key, msg.datatype, msg.op, ctx);
                break;
            case FIATOMIC_REF_FAMILY_BASE * FORM_LAST + FORM_V:
                ret = fi_atomicv(m_o.ep, &iov[first], NULL, 2 - first,
                                 m_dest, raddr, m_peer.key, msg.datatype,
                                 msg.op, ctx);
                break;
            case FIATOMIC_REF_FAMILY_BASE * FORM_LAST + FORM_MSG:
                ret = fi_atomicmsg(m_o.ep, &msg, FI_COMPLETION |
                                   FI_DELIVERY_COMPLETE);
                break;
            case FIATOMIC_REF_FAMILY_BASE * FORM_LAST + FORM_INJECT:
                ret = fi_inject_atomic(m_o.ep, opd, m, m_dest,
                                       raddr, m_peer.key, msg.datatype,
                                       msg.op);
                break;
            case FIATOMIC_REF_FAMILY_FETCH * FORM_LAST + FORM_PLAIN:
                ret = fi_fetch_atomic(m_o.ep, opd, m, NULL, resd, NULL,
                                      m_dest, raddr,
                                      m_peer.key, msg.datatype, msg.op, ctx);
                break;
            case FIATOMIC_REF_FAMILY_FETCH * FORM_LAST + FORM_V:
                ret = fi_fetch_atomicv(m_o.ep, &iov[first], NULL, 2 - first,
                                       &res[first], NULL, 2 - first, m_dest,
                                       raddr, m_peer.key, msg.datatype,
                                       msg.op, ctx);
                break;
            case FIATOMIC_REF_FAMILY_FETCH * FORM_LAST + FORM_MSG:
                ret = fi_fetch_atomicmsg(m_o.ep, &msg, &res[first], NULL,
                                         2 - first, FI_COMPLETION);
                break;
            case FIATOMIC_REF_FAMILY_COMPARE * FORM_LAST + FORM_PLAIN:
                ret = fi_compare_atomic(m_o.ep, opd, m, NULL, cmpd, NULL,
                                        resd, NULL, m_dest, raddr,
                                        m_peer.key, msg.datatype, msg.op,
                                        ctx);
                break;
            case FIATOMIC_REF_FAMILY_COMPARE * FORM_LAST + FORM_V:
                ret = fi_compare_atomicv(m_o.ep, &iov[first], NULL,
                                         2 - first, &cmp[first], NULL,
                                         2 - first, &res[first], NULL,
                                         2 - first, m_dest, raddr,
                                         m_peer.key, msg.datatype, msg.op,
                                         ctx);
                break;
            default:
                ret = fi_compare_atomicmsg(m_o.ep, &msg, &cmp[first], NULL,
                                           2 - first, &res[first], NULL,
                                           2 - first, FI_COMPLETION);
                break;
            }
            if (ret == -FI_EAGAIN) {
                (void)fi_cntr_read(m_o.wcntr);
            }
        } while (ret == -FI_EAGAIN);
        ASSERT_EQ(0, ret) << where.str() << " " << form_name(f);
        if (f == FORM_INJECT) {
            memset(operand[f].data(), 0xa5, operand[f].size());
        } else {
            expected_contexts.insert(ctx);
        }
        if (family == FIATOMIC_REF_FAMILY_BASE) {
            ++writes;
        } else {
            ++reads;
        }
    }

    wait_complete(r0 + reads, w0 + writes, FI_ATOMIC, &contexts);
    ASSERT_FALSE(HasFatalFailure()) << where.str();
    EXPECT_EQ(expected_contexts, contexts) << where.str();
    EXPECT_EQ(0u, fi_cntr_readerr(m_o.rcntr) + fi_cntr_readerr(m_o.wcntr));
    EXPECT_EQ(r0 + reads, fi_cntr_read(m_o.rcntr)) << where.str();
    EXPECT_EQ(w0 + writes, fi_cntr_read(m_o.wcntr)) << where.str();

    std::vector<uint8_t> after = m_peer.get(0, image.size());
    ASSERT_EQ(image.size(), after.size());
    int failures = 0;
    for (int f = 0; f < forms; ++f) {
        for (size_t i = 0; (i < elems[f]) && (failures < 5); ++i) {
            uint8_t target[FIATOMIC_REF_MAX_SIZE], fetched[FIATOMIC_REF_MAX_SIZE];
            const auto &t = triples[i];
            const uint8_t *got = &after[(f * n + i) * size];
            char s1[128], s2[128];

            memcpy(target, t.target.data(), size);
            ASSERT_EQ(0, fiatomic_ref_apply(family, op, dt, target,
                                            t.operand.data(),
                                            t.compare.data(), fetched));
            if (!fiatomic_ref_result_equal(op, dt, target, got)) {
                fiatomic_ref_format(dt, target, s1, sizeof(s1));
                fiatomic_ref_format(dt, got, s2, sizeof(s2));
                ADD_FAILURE() << where.str() << " " << form_name(f)
                              << " element " << i << ": target " << s2
                              << ", expected " << s1;
                ++failures;
            }
            if ((family != FIATOMIC_REF_FAMILY_BASE) &&
                !fiatomic_ref_bits_equal(dt, fetched,
                                         result[f].data() + shift +
                                         i * size)) {
                fiatomic_ref_format(dt, fetched, s1, sizeof(s1));
                fiatomic_ref_format(dt, result[f].data() + shift + i * size,
                                    s2, sizeof(s2));
                ADD_FAILURE() << where.str() << " " << form_name(f)
                              << " element " << i << ": fetched " << s2
                              << ", expected " << s1;
                ++failures;
            }
        }
    }
}

/* run_cell on each of the 414 cells */
void atomic2p::run_every_cell()
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
}

TEST_P(atomic2p, every_cell_every_form)
{
    run_every_cell();
}

/* The same with every local buffer (operands, compare values, results)
 * misaligned for its datatype: Sandia OpenSHMEM's reductions hand double
 * complex operands in bounce buffers that are 8-byte aligned */
TEST_P(atomic2p, every_cell_on_misaligned_local_buffers)
{
    m_misalign = true;
    run_every_cell();
    ASSERT_FALSE(HasFatalFailure());

    /* a remote element must be aligned: refused, nothing changes */
    std::vector<uint8_t> before = m_peer.get(0, 64);
    uint64_t one = 1;
    EXPECT_EQ(-FI_EINVAL, fi_atomic(m_o.ep, &one, 1, NULL, m_dest,
                                    m_peer.base + 4, m_peer.key, FI_UINT64,
                                    FI_SUM, NULL));
    EXPECT_EQ(before, m_peer.get(0, 64));
}

/* a cell that is not one of the 414: the valid calls and the call agree */
TEST_P(atomic2p, not_a_cell_is_refused)
{
    uint64_t v = 1, res = 0, cmp = 0;
    size_t count = 0;

    /* compare ops are not fi_atomic's, FI_ATOMIC_READ has no base form */
    EXPECT_EQ(-FI_EOPNOTSUPP, fi_atomicvalid(m_o.ep, FI_UINT64, FI_CSWAP,
                                             &count));
    EXPECT_EQ(-FI_EOPNOTSUPP, fi_atomic(m_o.ep, &v, 1, NULL, m_dest,
                                        m_peer.base, m_peer.key, FI_UINT64,
                                        FI_CSWAP, NULL));
    EXPECT_EQ(-FI_EOPNOTSUPP, fi_fetch_atomicvalid(m_o.ep, FI_UINT64,
                                                   FI_CSWAP, &count));
    EXPECT_EQ(-FI_EOPNOTSUPP, fi_fetch_atomic(m_o.ep, &v, 1, NULL, &res,
                                              NULL, m_dest, m_peer.base,
                                              m_peer.key, FI_UINT64, FI_CSWAP,
                                              NULL));
    EXPECT_EQ(-FI_EOPNOTSUPP, fi_compare_atomicvalid(m_o.ep, FI_UINT64,
                                                     FI_SUM, &count));
    EXPECT_EQ(-FI_EOPNOTSUPP, fi_compare_atomic(m_o.ep, &v, 1, NULL, &cmp,
                                                NULL, &res, NULL, m_dest,
                                                m_peer.base, m_peer.key,
                                                FI_UINT64, FI_SUM, NULL));
    /* bitwise ops on floating point */
    EXPECT_EQ(-FI_EOPNOTSUPP, fi_atomicvalid(m_o.ep, FI_DOUBLE, FI_BOR,
                                             &count));
    EXPECT_EQ(-FI_EOPNOTSUPP, fi_atomic(m_o.ep, &v, 1, NULL, m_dest,
                                        m_peer.base, m_peer.key, FI_DOUBLE,
                                        FI_BOR, NULL));
    EXPECT_EQ(0u, fi_cntr_read(m_o.wcntr) + fi_cntr_readerr(m_o.wcntr));
}

TEST_P(atomic2p, bad_keys_and_addresses_reach_no_memory)
{
    std::vector<uint8_t> pattern(4096, 0x3c);
    uint64_t v = 0x1111, res;

    m_peer.set(0, pattern);
    /* a key the peer never gave, and forged ones next to it */
    for (uint64_t k : {m_peer.key + 1, m_peer.key ^ ((uint64_t)1 << 40),
                       (uint64_t)0}) {
        if (k == m_peer.key) {
            continue;
        }
        EXPECT_EQ(-FI_ENOKEY, fi_atomic(m_o.ep, &v, 1, NULL, m_dest,
                                        m_peer.base, k, FI_UINT64,
                                        FI_ATOMIC_WRITE, NULL)) << k;
        EXPECT_EQ(-FI_ENOKEY, fi_fetch_atomic(m_o.ep, &v, 1, NULL, &res,
                                              NULL, m_dest, m_peer.base, k,
                                              FI_UINT64, FI_SUM, NULL)) << k;
    }
    /* before the region, past its end, straddling its end */
    EXPECT_EQ(-FI_EINVAL, fi_atomic(m_o.ep, &v, 1, NULL, m_dest,
                                    m_peer.base - 8, m_peer.key, FI_UINT64,
                                    FI_ATOMIC_WRITE, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_atomic(m_o.ep, &v, 1, NULL, m_dest,
                                    m_peer.base + peer_region_len,
                                    m_peer.key, FI_UINT64, FI_ATOMIC_WRITE,
                                    NULL));
    uint64_t two[2] = {v, v};
    EXPECT_GT(0, fi_atomic(m_o.ep, two, 2, NULL, m_dest,
                           m_peer.base + peer_region_len - 8, m_peer.key,
                           FI_UINT64, FI_ATOMIC_WRITE, NULL));
    /* an address no vector entry names */
    EXPECT_EQ(-FI_EINVAL, fi_atomic(m_o.ep, &v, 1, NULL, m_dest + 5,
                                    m_peer.base, m_peer.key, FI_UINT64,
                                    FI_ATOMIC_WRITE, NULL));
    /* NULL arguments */
    EXPECT_EQ(-FI_EINVAL, fi_atomic(m_o.ep, NULL, 1, NULL, m_dest,
                                    m_peer.base, m_peer.key, FI_UINT64,
                                    FI_SUM, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_atomicmsg(m_o.ep, NULL, 0));
    EXPECT_EQ(-FI_EINVAL, fi_fetch_atomic(m_o.ep, &v, 1, NULL, NULL, NULL,
                                          m_dest, m_peer.base, m_peer.key,
                                          FI_UINT64, FI_SUM, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_compare_atomic(m_o.ep, &v, 1, NULL, NULL, NULL,
                                            &res, NULL, m_dest, m_peer.base,
                                            m_peer.key, FI_UINT64, FI_CSWAP,
                                            NULL));
    /* injecting more than inject_size */
    std::vector<uint64_t> big(m_o.info->tx_attr->inject_size / 8 + 1, v);
    EXPECT_EQ(-FI_EINVAL, fi_inject_atomic(m_o.ep, big.data(), big.size(),
                                           m_dest, m_peer.base, m_peer.key,
                                           FI_UINT64, FI_ATOMIC_WRITE));

    /* nothing was counted, and the region is untouched */
    EXPECT_EQ(0u, fi_cntr_read(m_o.wcntr) + fi_cntr_readerr(m_o.wcntr));
    EXPECT_EQ(0u, fi_cntr_read(m_o.rcntr) + fi_cntr_readerr(m_o.rcntr));
    EXPECT_EQ(pattern, m_peer.get(0, pattern.size()));
    std::vector<uint8_t> tail = m_peer.get(peer_region_len - 4096, 4096);
    EXPECT_EQ(std::vector<uint8_t>(4096, 0), tail);
}

TEST_P(atomic2p, closed_region_key_is_refused)
{
    uint64_t old_key = m_peer.key, v = 5, res = 0;
    uint64_t new_key = m_peer.replace_region();

    ASSERT_NE(0u, new_key);
    ASSERT_NE(old_key, new_key);
    /* the old key names nothing at the peer any more */
    EXPECT_EQ(-FI_ENOKEY, fi_fetch_atomic(m_o.ep, &v, 1, NULL, &res, NULL,
                                          m_dest, m_peer.base, old_key,
                                          FI_UINT64, FI_SUM, NULL));
    /* the new one works */
    ASSERT_EQ(0, fi_fetch_atomic(m_o.ep, &v, 1, NULL, &res, NULL, m_dest,
                                 m_peer.base, new_key, FI_UINT64, FI_SUM,
                                 NULL));
    ASSERT_EQ(0, fi_cntr_wait(m_o.rcntr, 1, peer_wait_ms));
    EXPECT_EQ(0u, res);
    std::vector<uint8_t> after = m_peer.get(0, 8);
    uint64_t got;
    memcpy(&got, after.data(), 8);
    EXPECT_EQ(5u, got);
}

/* FI_INJECT on the fetching and comparing msg forms (fi_atomic(3): the
 * source and compare buffers are the program's again on return; the result
 * buffer is written at completion), and FI_ATOMIC_READ with no source
 * buffer: how Sandia OpenSHMEM fetches, swaps and compare-swaps. The
 * buffers are overwritten right after each call: the operation must have
 * taken their values at the call. */
TEST_P(atomic2p, inject_on_fetch_and_compare_msg_forms)
{
    const size_t off = 128;
    uint64_t src = 7, cmp = 0, res = ~0ull, res2 = ~0ull, res3 = ~0ull;
    std::vector<uint8_t> init(8, 0);
    init[0] = 40;
    m_peer.set(off, init);

    struct fi_ioc srcv = {&src, 1}, cmpv = {&cmp, 1};
    struct fi_ioc resv = {&res, 1}, resv2 = {&res2, 1}, resv3 = {&res3, 1};
    struct fi_rma_ioc rmav = {m_peer.base + off, 1, m_peer.key};
    struct fi_msg_atomic msg = {};
    msg.msg_iov       = &srcv;
    msg.iov_count     = 1;
    msg.addr          = m_dest;
    msg.rma_iov       = &rmav;
    msg.rma_iov_count = 1;
    msg.datatype      = FI_UINT64;

    /* fetch-add 7: 40 -> 47, fetches 40 */
    msg.op = FI_SUM;
    ASSERT_EQ(0, fi_fetch_atomicmsg(m_o.ep, &msg, &resv, NULL, 1, FI_INJECT));
    src = 1000;
    /* compare-swap 47 -> 9 */
    cmp = 47;
    src = 9;
    msg.op = FI_CSWAP;
    ASSERT_EQ(0, fi_compare_atomicmsg(m_o.ep, &msg, &cmpv, NULL, 1, &resv2,
                                      NULL, 1, FI_INJECT));
    cmp = 1000;
    src = 1000;
    /* atomic read with no source buffer */
    struct fi_ioc nosrc = {NULL, 1};
    msg.msg_iov = &nosrc;
    msg.op      = FI_ATOMIC_READ;
    ASSERT_EQ(0, fi_fetch_atomicmsg(m_o.ep, &msg, &resv3, NULL, 1, FI_INJECT));

    ASSERT_EQ(0, fi_cntr_wait(m_o.rcntr, 3, peer_wait_ms));
    EXPECT_EQ(40u, res);
    EXPECT_EQ(47u, res2);
    EXPECT_EQ(9u, res3);
    std::vector<uint8_t> after = m_peer.get(off, 8);
    uint64_t got;
    memcpy(&got, after.data(), 8);
    EXPECT_EQ(9u, got);
}

/* The peer closes its domain and exits the moment it sees the last of the
 * initiator's adds land: each add still completes without error at the
 * initiator, counted once (delivery complete needs the transport's
 * acknowledgement, which the peer's close must send, not drop: Sandia
 * OpenSHMEM's last barrier does exactly this). */
TEST_P(atomic2p, peer_closing_right_after_the_data_fails_nothing)
{
    const uint64_t n = 200;
    const size_t off = 256;
    uint64_t one = 1;
    std::vector<uint8_t> zero(8, 0);

    m_peer.set(off, zero);
    m_peer.leave_when(off, n);
    for (uint64_t i = 0; i < n; ++i) {
        ssize_t ret;
        do {
            ret = fi_atomic(m_o.ep, &one, 1, NULL, m_dest, m_peer.base + off,
                            m_peer.key, FI_UINT64, FI_SUM, NULL);
            if (ret == -FI_EAGAIN) {
                (void)fi_cntr_read(m_o.wcntr);
            }
        } while (ret == -FI_EAGAIN);
        ASSERT_EQ(0, ret);
    }
    /* every add ends: counted, or counted as an error */
    for (int i = 0; (i < peer_wait_ms) &&
         (fi_cntr_read(m_o.wcntr) + fi_cntr_readerr(m_o.wcntr) < n); ++i) {
        usleep(1000);
    }
    EXPECT_EQ(0, m_peer.leave_wait());
    EXPECT_EQ(n, fi_cntr_read(m_o.wcntr));
    EXPECT_EQ(0u, fi_cntr_readerr(m_o.wcntr));
}

/* A fresh domain connects to the peer on its first atomic, with its own
 * progress thread (FI_PROGRESS_AUTO) running while the connection's
 * wireup completes: each first fetch-add returns the value the one before
 * left, and nothing crashes (UCX 1.22 reads an endpoint's configuration
 * before taking the worker's lock when it prints the endpoint's lanes,
 * which libfiatomic reads at endpoint creation). */
TEST_P(atomic2p, first_use_connects_while_progress_runs)
{
    const uint64_t rounds = 32;
    const size_t off      = 320;
    std::vector<uint8_t> start(8, 0);
    uint64_t one = 1;

    start[0] = 100;
    m_peer.set(off, start);
    for (uint64_t i = 0; i < rounds; ++i) {
        objects o;
        fi_addr_t dest;
        uint64_t old = ~0ull;
        ssize_t ret;

        ASSERT_EQ(0, o.open_domain(m_o.params)) << "round " << i;
        ASSERT_EQ(0, o.open_ep()) << "round " << i;
        ASSERT_EQ(1, fi_av_insert(o.av, m_peer.addr.data(), 1, &dest, 0,
                                  NULL)) << "round " << i;
        do {
            ret = fi_fetch_atomic(o.ep, &one, 1, NULL, &old, NULL, dest,
                                  m_peer.base + off, m_peer.key, FI_UINT64,
                                  FI_SUM, NULL);
        } while (ret == -FI_EAGAIN);
        ASSERT_EQ(0, ret) << "round " << i;
        ASSERT_EQ(0, fi_cntr_wait(o.rcntr, 1, peer_wait_ms)) << "round " << i;
        EXPECT_EQ(100 + i, old) << "round " << i;
    }
    std::vector<uint8_t> after = m_peer.get(off, 8);
    uint64_t total;
    memcpy(&total, after.data(), 8);
    EXPECT_EQ(100 + rounds, total);
}

/* both processes fetch-add one element: every value fetched once */
TEST_P(atomic2p, contention_from_both_processes)
{
    const uint64_t n = 500;
    std::vector<uint64_t> mine(n);
    uint64_t one = 1;
    std::vector<uint8_t> zero(8, 0);

    m_peer.set(64, zero);
    for (uint64_t i = 0; i < n; ++i) {
        ssize_t ret;
        do {
            ret = fi_fetch_atomic(m_o.ep, &one, 1, NULL, &mine[i], NULL,
                                  m_dest, m_peer.base + 64, m_peer.key,
                                  FI_UINT64, FI_SUM, NULL);
        } while (ret == -FI_EAGAIN);
        ASSERT_EQ(0, ret);
    }
    std::vector<uint64_t> theirs = m_peer.fetch_add(64, n);
    ASSERT_EQ(n, theirs.size()) << "the peer's fetch-adds failed";
    ASSERT_EQ(0, fi_cntr_wait(m_o.rcntr, n, peer_wait_ms));

    std::set<uint64_t> seen(mine.begin(), mine.end());
    seen.insert(theirs.begin(), theirs.end());
    EXPECT_EQ(2 * n, seen.size());
    EXPECT_EQ(0u, *seen.begin());
    EXPECT_EQ(2 * n - 1, *seen.rbegin());
    std::vector<uint8_t> after = m_peer.get(64, 8);
    uint64_t total;
    memcpy(&total, after.data(), 8);
    EXPECT_EQ(2 * n, total);
}

/* FI_THREAD_SAFE: threads posting on one endpoint at once, each value
 * fetched once (the progress thread or the waiters progressing alongside) */
TEST_P(atomic2p, threads_share_an_endpoint)
{
    const int nthreads = 4;
    const uint64_t n   = 200;
    std::vector<std::vector<uint64_t>> got(nthreads,
                                           std::vector<uint64_t>(n));
    std::vector<std::thread> threads;
    std::vector<uint8_t> zero(8, 0);
    std::vector<int> failures(nthreads, 0);
    uint64_t one = 1;

    ASSERT_EQ(FI_THREAD_SAFE, m_o.info->domain_attr->threading);
    m_peer.set(128, zero);
    for (int t = 0; t < nthreads; ++t) {
        threads.emplace_back([&, t]() {
            for (uint64_t i = 0; i < n; ++i) {
                ssize_t ret;
                do {
                    ret = fi_fetch_atomic(m_o.ep, &one, 1, NULL, &got[t][i],
                                          NULL, m_dest, m_peer.base + 128,
                                          m_peer.key, FI_UINT64, FI_SUM,
                                          NULL);
                    if (ret == -FI_EAGAIN) {
                        (void)fi_cntr_read(m_o.rcntr);
                    }
                } while (ret == -FI_EAGAIN);
                failures[t] += (ret != 0);
            }
        });
    }
    for (auto &th : threads) {
        th.join();
    }
    EXPECT_EQ(std::vector<int>(nthreads, 0), failures);
    ASSERT_EQ(0, fi_cntr_wait(m_o.rcntr, nthreads * n, peer_wait_ms));
    std::set<uint64_t> seen;
    for (auto &v : got) {
        seen.insert(v.begin(), v.end());
    }
    EXPECT_EQ(nthreads * n, seen.size());
    EXPECT_EQ(nthreads * n - 1, *seen.rbegin());
}

/* with FI_SELECTIVE_COMPLETION only an operation with FI_COMPLETION gets
 * an entry; both are counted */
TEST_P(atomic2p, selective_completion_reports_only_what_asks)
{
    uint64_t v = 1, res = 0;
    struct fi_cq_data_entry e;
    struct fi_ioc iov = {&v, 1};
    struct fi_rma_ioc rma = {m_peer.base, 1, m_peer.key};
    struct fi_msg_atomic msg = {};

    /* reopen the endpoint's queue binding as selective: a second
     * endpoint on the same objects */
    struct fid_ep *sel = NULL;
    struct fid_cq *cq  = NULL;
    struct fi_cq_attr cq_attr = {};
    cq_attr.format = FI_CQ_FORMAT_DATA;
    ASSERT_EQ(0, fi_cq_open(m_o.domain, &cq_attr, &cq, NULL));
    ASSERT_EQ(0, fi_endpoint(m_o.domain, m_o.info, &sel, NULL));
    ASSERT_EQ(0, fi_ep_bind(sel, &m_o.av->fid, 0));
    ASSERT_EQ(0, fi_ep_bind(sel, &cq->fid,
                            FI_TRANSMIT | FI_SELECTIVE_COMPLETION));
    ASSERT_EQ(0, fi_ep_bind(sel, &m_o.rcntr->fid, FI_READ));
    ASSERT_EQ(0, fi_enable(sel));

    msg.msg_iov = &iov; msg.iov_count = 1; msg.addr = m_dest;
    msg.rma_iov = &rma; msg.rma_iov_count = 1; msg.datatype = FI_UINT64;
    msg.op = FI_SUM; msg.context = &msg;
    struct fi_ioc riov = {&res, 1};
    /* without FI_COMPLETION: counted, no entry */
    ASSERT_EQ(0, fi_fetch_atomicmsg(sel, &msg, &riov, NULL, 1, 0));
    ASSERT_EQ(0, fi_cntr_wait(m_o.rcntr, 1, peer_wait_ms));
    EXPECT_EQ(-FI_EAGAIN, fi_cq_read(cq, &e, 1));
    /* with it: an entry with its context, flags and result buffer */
    ASSERT_EQ(0, fi_fetch_atomicmsg(sel, &msg, &riov, NULL, 1,
                                    FI_COMPLETION));
    ASSERT_EQ(0, fi_cntr_wait(m_o.rcntr, 2, peer_wait_ms));
    ssize_t ret = -FI_EAGAIN;
    for (int i = 0; (i < 10000) && (ret == -FI_EAGAIN); ++i) {
        ret = fi_cq_read(cq, &e, 1);
    }
    ASSERT_EQ(1, ret);
    EXPECT_EQ((void*)&msg, e.op_context);
    EXPECT_EQ((uint64_t)(FI_ATOMIC | FI_READ), e.flags);
    EXPECT_EQ((void*)&res, e.buf);
    EXPECT_EQ(1u, res);
    EXPECT_EQ(0, fi_close(&sel->fid));
    EXPECT_EQ(0, fi_close(&cq->fid));
}

} // namespace

INSTANTIATE_TEST_SUITE_P(tls, atomic2p, testing::ValuesIn(peer_params),
                         peer_param_name);
INSTANTIATE_TEST_SUITE_P(share, atomic2p, testing::ValuesIn(peer_params_share),
                         peer_param_name);
