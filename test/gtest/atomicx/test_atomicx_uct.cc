/**
 * atomicx guest tests at the UCT level, against a real verbs device (rxe0
 * in the soft-RoCE guest). Expected values come from a sequential reference
 * on the target's memory, computed independently of the transport's code.
 */

#include "atomicx_test_ref.h"
#include "atomicx_test_peers.h"
#include "atomicx_test_uct.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>

using namespace atomicx_test;

class atomicx_uct : public loopback_test {
};


TEST_F(atomicx_uct, iface_caps)
{
    ATOMICX_TEST_OPEN_OR_SKIP(env, std::map<std::string, std::string>());

    const uint64_t ops  = UCS_BIT(UCT_ATOMIC_OP_ADD) |
                          UCS_BIT(UCT_ATOMIC_OP_AND) |
                          UCS_BIT(UCT_ATOMIC_OP_OR) |
                          UCS_BIT(UCT_ATOMIC_OP_XOR);
    const uint64_t fops = ops | UCS_BIT(UCT_ATOMIC_OP_SWAP) |
                          UCS_BIT(UCT_ATOMIC_OP_CSWAP);
    const uct_iface_attr_t &attr = env.iface_attr;

    EXPECT_TRUE(attr.cap.flags & UCT_IFACE_FLAG_ATOMIC_DEVICE);
    EXPECT_FALSE(attr.cap.flags & UCT_IFACE_FLAG_ATOMIC_CPU);
    EXPECT_TRUE(attr.cap.flags & UCT_IFACE_FLAG_PENDING);
    EXPECT_TRUE(attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_EP);
    /* UCP puts atomicx on error-handling endpoints only with this flag */
    EXPECT_TRUE(attr.cap.flags & UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE);
    EXPECT_EQ(ops, attr.cap.atomic32.op_flags);
    EXPECT_EQ(ops, attr.cap.atomic64.op_flags);
    EXPECT_EQ(fops, attr.cap.atomic32.fop_flags);
    EXPECT_EQ(fops, attr.cap.atomic64.fop_flags);
    EXPECT_GT(attr.latency.c, 0);
    EXPECT_GT(attr.overhead, 0);
}


/* (op, size, fetch) */
typedef std::tuple<uct_atomic_op_t, unsigned, bool> op_param_t;

class atomicx_uct_op : public loopback_test,
                       public ::testing::WithParamInterface<op_param_t> {
};

/* Every op against the reference, on both halves of a word for 32-bit ops
 * (the other half holds a guard that must survive). The CPU rewrites the
 * word between ops so that CAS loops start from a wrong guess and retry. */
TEST_P(atomicx_uct_op, against_reference)
{
    uct_atomic_op_t op = std::get<0>(GetParam());
    unsigned size      = std::get<1>(GetParam());
    bool fetch         = std::get<2>(GetParam());
    ATOMICX_TEST_OPEN_LOOPBACK(std::map<std::string, std::string>());

    std::mt19937_64 rng(size * 131 + op * 7 + fetch);
    volatile uint64_t *words = (volatile uint64_t*)mem.buffer;
    unsigned checked         = 0;

    for (unsigned iter = 0; iter < 64; ++iter) {
        unsigned offset = (size == 4) ? (iter & 1) * 4 : 0;
        uint64_t initial = rng();
        uint64_t value   = rng();
        uint64_t compare;
        uint8_t before[8], after[8], expected[8];

        if (iter % 8 < 2) {
            value = (size == 4) ? 0xffffffffull : ~0ull; /* carries, all-ones */
        }
        if (size == 4) {
            value &= 0xffffffffull;
        }

        bool rewrite = (iter % 3 != 0);
        if (rewrite || (iter == 0)) {
            words[1] = initial; /* a wrong guess for the CAS loop */
        }
        memcpy(before, (const void*)&words[1], 8);

        uint64_t old;
        if (size == 4) {
            uint32_t old32;
            memcpy(&old32, before + offset, 4);
            old = old32;
        } else {
            memcpy(&old, before, 8);
        }
        compare = (iter % 2) ? old : old ^ 1; /* hit and miss */

        uint64_t result = 0xbadbadbadull;
        uint64_t addr   = (uintptr_t)&words[1] + offset;
        ucs_status_t status = env.run((iter & 2) ? a : b, op, size, fetch,
                                      value, compare, addr, rkey.rkey,
                                      &result);
        ASSERT_EQ(UCS_OK, status) << ucs_status_string(status);

        memcpy(after, (const void*)&words[1], 8);
        memcpy(expected, before, 8);
        if (size == 4) {
            uint32_t n = reference<uint32_t>(op, (uint32_t)old,
                                             (uint32_t)value,
                                             (uint32_t)compare);
            memcpy(expected + offset, &n, 4);
        } else {
            uint64_t n = reference<uint64_t>(op, old, value, compare);
            memcpy(expected, &n, 8);
        }

        ASSERT_EQ(0, memcmp(expected, after, 8))
                << op_name(op) << size * 8 << " offset " << offset
                << std::hex << " old 0x" << old << " value 0x" << value;
        if (fetch || (op == UCT_ATOMIC_OP_CSWAP)) {
            ASSERT_EQ(old, result) << op_name(op) << size * 8;
        }
        /* The neighbour words are untouched */
        ASSERT_EQ(0u, words[0]);
        ASSERT_EQ(0u, words[2]);
        ++checked;
    }

    EXPECT_EQ(64u, checked);
}

static std::vector<op_param_t> op_params()
{
    std::vector<op_param_t> params;
    for (unsigned size : {4u, 8u}) {
        for (uct_atomic_op_t op : {UCT_ATOMIC_OP_ADD, UCT_ATOMIC_OP_AND,
                                   UCT_ATOMIC_OP_OR, UCT_ATOMIC_OP_XOR}) {
            params.push_back(op_param_t(op, size, false));
            params.push_back(op_param_t(op, size, true));
        }
        params.push_back(op_param_t(UCT_ATOMIC_OP_SWAP, size, true));
        params.push_back(op_param_t(UCT_ATOMIC_OP_CSWAP, size, true));
    }
    return params;
}

INSTANTIATE_TEST_SUITE_P(
        all, atomicx_uct_op, ::testing::ValuesIn(op_params()),
        [](const ::testing::TestParamInfo<op_param_t> &info) {
            return std::string(std::get<2>(info.param) ? "f" : "") +
                   op_name(std::get<0>(info.param)) +
                   std::to_string(std::get<1>(info.param) * 8);
        });


/* Fetch ops in flight (CAS loops among them), then a flush: when the flush
 * completes, every op issued before it has completed, and the memory holds
 * the effect of all of them */
TEST_F(atomicx_uct, flush_with_emulated_ops_in_flight)
{
    const unsigned count = 96;
    ATOMICX_TEST_OPEN_LOOPBACK(std::map<std::string, std::string>());
    uint32_t *halves = (uint32_t*)mem.buffer;
    uint64_t *words  = (uint64_t*)mem.buffer;

    halves[1] = 0x5a5a5a5a; /* neighbour of the 32-bit counter */
    std::vector<completion> comps(count);
    std::vector<uint64_t> results(count);
    unsigned started = 0, posts = 0, inprogress_flushes = 0;

    for (unsigned i = 0; i < count; ++i) {
        uct_ep_h ep = (i % 2) ? a : b;
        ucs_status_t status;
        do {
            if (i % 3 == 0) {
                /* 32-bit fetch-add: a CAS loop, contended by both eps */
                status = env.start(ep, UCT_ATOMIC_OP_ADD, 4, true, 1, 0,
                                   (uintptr_t)&halves[0], rkey.rkey,
                                   &results[i], &comps[i].super);
            } else if (i % 3 == 1) {
                status = env.start(ep, UCT_ATOMIC_OP_XOR, 8, true, 1ull << i,
                                   0, (uintptr_t)&words[1], rkey.rkey,
                                   &results[i], &comps[i].super);
            } else {
                /* no-fetch 32-bit add: only flush tells when it is done */
                status = env.start(ep, UCT_ATOMIC_OP_ADD, 4, false, 1, 0,
                                   (uintptr_t)&halves[0], rkey.rkey,
                                   nullptr, nullptr);
                if (status == UCS_OK) {
                    comps[i].done = true;
                    ++posts;
                }
            }
            if (status == UCS_ERR_NO_RESOURCE) {
                env.progress();
            }
        } while (status == UCS_ERR_NO_RESOURCE);
        ASSERT_TRUE((status == UCS_INPROGRESS) || (status == UCS_OK))
                << ucs_status_string(status);
        ++started;
    }

    /* Flush both without progressing first: the loops are in flight */
    completion flush_a, flush_b;
    ucs_status_t sa = uct_ep_flush(a, 0, &flush_a.super);
    ucs_status_t sb = uct_ep_flush(b, 0, &flush_b.super);
    inprogress_flushes = (sa == UCS_INPROGRESS) + (sb == UCS_INPROGRESS);
    EXPECT_EQ(2u, inprogress_flushes) << "ops were still in flight";

    auto all_done = [&](unsigned parity) {
        for (unsigned i = 0; i < count; ++i) {
            if (((i % 2) == parity) && !comps[i].done) {
                return false;
            }
        }
        return true;
    };

    /* A flush that claims completion at once must also be right */
    if (sa == UCS_OK) {
        flush_a.done   = true;
        flush_a.status = UCS_OK;
    }
    if (sb == UCS_OK) {
        flush_b.done   = true;
        flush_b.status = UCS_OK;
    }
    bool early = false;
    ASSERT_TRUE(env.progress_until([&] {
        early = early || (flush_a.done && !all_done(1)) ||
                (flush_b.done && !all_done(0));
        return flush_a.done && flush_b.done && all_done(0) && all_done(1);
    })) << "flush or ops never completed";
    EXPECT_FALSE(early) << "an endpoint's flush completed before its ops";
    EXPECT_EQ(UCS_OK, flush_a.status);
    EXPECT_EQ(UCS_OK, flush_b.status);

    unsigned adds = 0;
    uint64_t xor_all = 0;
    std::set<uint64_t> fetched;
    for (unsigned i = 0; i < count; ++i) {
        if (i % 3 == 0) {
            EXPECT_EQ(UCS_OK, comps[i].status);
            fetched.insert(results[i]);
        }
        if (i % 3 != 1) {
            ++adds;
        } else {
            xor_all ^= 1ull << i;
        }
    }
    EXPECT_EQ(adds, halves[0]);
    EXPECT_EQ(0x5a5a5a5au, halves[1]);
    EXPECT_EQ(xor_all, words[1]);
    /* Each fetch-add saw a distinct counter value */
    EXPECT_EQ((size_t)(count + 2) / 3, fetched.size());
    EXPECT_EQ(count, started);
    EXPECT_GT(posts, 0u);

}


/* A fence orders a native op after a CAS loop that needs retries */
TEST_F(atomicx_uct, fence_orders_after_cas_loop)
{
    ATOMICX_TEST_OPEN_LOOPBACK(std::map<std::string, std::string>());
    volatile uint64_t *word = (volatile uint64_t*)mem.buffer;

    for (uint32_t i = 1; i <= 32; ++i) {
        *word = 0x1111111100000000ull * i; /* the CAS loop's guess misses */

        uint32_t swapped = 0;
        uint64_t read    = 0;
        completion c1, c2;
        ucs_status_t status;

        status = env.start(a, UCT_ATOMIC_OP_SWAP, 4, true, 0xabc00000 + i, 0,
                           (uintptr_t)word, rkey.rkey, &swapped, &c1.super);
        ASSERT_EQ(UCS_INPROGRESS, status);
        ASSERT_EQ(UCS_OK, uct_ep_fence(a, 0));
        do {
            /* fetch-add 0: a native atomic read */
            status = env.start(a, UCT_ATOMIC_OP_ADD, 8, true, 0, 0,
                               (uintptr_t)word, rkey.rkey, &read, &c2.super);
            if (status == UCS_ERR_NO_RESOURCE) {
                env.progress();
            }
        } while ((status == UCS_ERR_NO_RESOURCE) && !c1.done);
        if (status == UCS_ERR_NO_RESOURCE) {
            /* the fence released: the loop is done */
            status = env.start(a, UCT_ATOMIC_OP_ADD, 8, true, 0, 0,
                               (uintptr_t)word, rkey.rkey, &read, &c2.super);
        }
        ASSERT_EQ(UCS_INPROGRESS, status);
        ASSERT_TRUE(env.progress_until([&] { return c1.done && c2.done; }));

        uint64_t expect = (0x1111111100000000ull * i) | (0xabc00000 + i);
        EXPECT_EQ(expect, read) << "iteration " << i;
        EXPECT_EQ(expect, *word);
    }

}


/* Pending queue: more ops than the send queue holds */
TEST_F(atomicx_uct, pending_queue)
{
    ATOMICX_TEST_OPEN_LOOPBACK(std::map<std::string, std::string>{{"TX_QUEUE_LEN", "4"}});
    uint64_t *word = (uint64_t*)mem.buffer;

    struct req {
        uct_pending_req_t super;
        uct_env           *env;
        uct_ep_h          ep;
        uint64_t          addr;
        uct_rkey_t        rkey;
        int               *posted;
    };

    int posted = 0, busy = 0, queued = 0;
    std::vector<req> reqs(64);
    for (auto &r : reqs) {
        r.env    = &env;
        r.ep     = a;
        r.addr   = (uintptr_t)word;
        r.rkey   = rkey.rkey;
        r.posted = &posted;
        r.super.func = [](uct_pending_req_t *self) -> ucs_status_t {
            req *r = ucs_container_of(self, req, super);
            ucs_status_t s = uct_ep_atomic32_post(r->ep, UCT_ATOMIC_OP_ADD, 1,
                                                  r->addr, r->rkey);
            if (s == UCS_OK) {
                ++*r->posted;
            }
            return s;
        };
    }

    for (auto &r : reqs) {
        ucs_status_t s = uct_ep_atomic32_post(a, UCT_ATOMIC_OP_ADD, 1,
                                              (uintptr_t)word, rkey.rkey);
        if (s == UCS_OK) {
            ++posted;
            continue;
        }
        ASSERT_EQ(UCS_ERR_NO_RESOURCE, s);
        s = uct_ep_pending_add(a, &r.super, 0);
        if (s == UCS_ERR_BUSY) {
            ++busy;
            s = uct_ep_atomic32_post(a, UCT_ATOMIC_OP_ADD, 1,
                                     (uintptr_t)word, rkey.rkey);
            ASSERT_EQ(UCS_OK, s);
            ++posted;
        } else {
            ASSERT_EQ(UCS_OK, s);
            ++queued;
        }
    }

    EXPECT_GT(queued, 0) << "a 4-entry send queue must fill up";
    ASSERT_EQ(UCS_OK, env.flush(a));
    EXPECT_EQ(64, posted);
    EXPECT_EQ(64u, *word);

}




/* Two processes hammer the same words with mixed native and emulated ops
 * while the target does nothing; every fetched value and the final memory
 * are checked */
TEST_F(atomicx_uct, hammer_two_processes)
{
    const unsigned nprocs = 2;
    std::vector<peer_proc> peers(nprocs);
    std::vector<uct_ep_h> eps;

    for (unsigned id = 0; id < nprocs; ++id) {
        std::string why;
        ASSERT_TRUE(peer_start(PEER_HAMMER, id, &peers[id], &why)) << why;
    }

    /* Processes fork before any verbs resource exists in the parent */
    ATOMICX_TEST_OPEN_OR_SKIP(env, std::map<std::string, std::string>());
    env.reg(mem, 64);
    volatile uint32_t *halves = (volatile uint32_t*)mem.buffer;
    volatile uint64_t *words  = (volatile uint64_t*)mem.buffer;
    words[HAMMER_GUARD] = 0x0123456789abcdefull;
    halves[2 * HAMMER_SWAP] = 0x77777777; /* the swap chain starts here */

    for (unsigned id = 0; id < nprocs; ++id) {
        std::vector<char> dev_addr = read_blob(peers[id].from);
        std::vector<char> ep_addr  = read_blob(peers[id].from);
        uct_ep_h ep = env.create_ep();
        env.connect(ep, dev_addr, ep_addr);
        eps.push_back(ep);
        write_blob(peers[id].to, env.dev_address());
        write_blob(peers[id].to, env.ep_address(ep));
        write_blob(peers[id].to, mem.packed_rkey);
        uint64_t base = (uintptr_t)mem.buffer;
        write_all(peers[id].to, &base, sizeof(base));
    }

    char c;
    for (unsigned id = 0; id < nprocs; ++id) {
        read_all(peers[id].from, &c, 1);
    }
    for (unsigned id = 0; id < nprocs; ++id) {
        write_all(peers[id].to, "g", 1);
    }

    /* The target does not progress: it only waits for the results */
    std::vector<uint64_t> fadd_all, swapped_all;
    uint32_t cswap_total = 0;
    for (unsigned id = 0; id < nprocs; ++id) {
        uint32_t n, successes;
        read_all(peers[id].from, &n, sizeof(n));
        std::vector<uint64_t> v(n);
        read_all(peers[id].from, v.data(), n * sizeof(uint64_t));
        fadd_all.insert(fadd_all.end(), v.begin(), v.end());
        read_all(peers[id].from, &n, sizeof(n));
        v.resize(n);
        read_all(peers[id].from, v.data(), n * sizeof(uint64_t));
        swapped_all.insert(swapped_all.end(), v.begin(), v.end());
        read_all(peers[id].from, &successes, sizeof(successes));
        cswap_total += successes;
    }

    for (unsigned id = 0; id < nprocs; ++id) {
        write_all(peers[id].to, "d", 1);
        EXPECT_EQ(0, peer_wait(&peers[id])) << "hammer process " << id;
    }

    const unsigned total = nprocs * hammer_iters;

    /* Counter: both fetch-adds (native 64-bit, emulated 32-bit) on the low
     * half; each fetched a distinct value, 0..2*total-1 */
    std::sort(fadd_all.begin(), fadd_all.end());
    ASSERT_EQ(2 * total, fadd_all.size());
    for (unsigned i = 0; i < 2 * total; ++i) {
        ASSERT_EQ(i, fadd_all[i]) << "fetch-add values not a permutation";
    }
    EXPECT_EQ(2 * total, halves[2 * HAMMER_COUNTER]);
    /* OR64 bits 32..63 all set (16 per process), low half unaffected */
    EXPECT_EQ(0xffffffffu, halves[2 * HAMMER_COUNTER + 1]);

    /* Swap chain: every value swapped in was fetched by exactly one later
     * swap, except the one left in memory; the initial value was fetched */
    std::multiset<uint64_t> seen(swapped_all.begin(), swapped_all.end());
    seen.insert(halves[2 * HAMMER_SWAP]);
    std::multiset<uint64_t> written;
    written.insert(0x77777777);
    for (unsigned id = 0; id < nprocs; ++id) {
        for (unsigned i = 0; i < hammer_iters; ++i) {
            written.insert(((id + 1) << 24) | i);
        }
    }
    EXPECT_TRUE(seen == written) << "swap32 chain broken";

    /* CAS counter on the neighbouring half */
    EXPECT_EQ(total, cswap_total);
    EXPECT_EQ(total, halves[2 * HAMMER_SWAP + 1]);
    EXPECT_EQ(0x0123456789abcdefull, words[HAMMER_GUARD]);

    for (uct_ep_h ep : eps) {
        uct_ep_destroy(ep);
    }
    env.dereg(mem);
}


namespace {

struct err_ctx {
    unsigned     calls = 0;
    ucs_status_t status = UCS_OK;
    uct_ep_h     ep = nullptr;
};

ucs_status_t count_ep_errors(void *arg, uct_ep_h ep, ucs_status_t status)
{
    err_ctx *ctx = static_cast<err_ctx*>(arg);
    ++ctx->calls;
    ctx->status = status;
    ctx->ep     = ep;
    return UCS_OK;
}


} // namespace


/* The peer dies mid-stream: every outstanding op completes with an error,
 * flush does not hang, the error handler reports the endpoint once */
TEST_F(atomicx_uct, peer_destroyed_mid_stream)
{
    err_ctx errors;

    peer_proc peer;
    std::string why;
    ASSERT_TRUE(peer_start(PEER_DOOMED_TARGET, 0, &peer, &why)) << why;

    /* Forked before any verbs resource exists in this process */
    env.set_error_handler(count_ep_errors, &errors);
    ATOMICX_TEST_OPEN_OR_SKIP(env, std::map<std::string, std::string>{{"TIMEOUT", "20ms"},
                                                       {"RETRY_COUNT", "1"}});

    std::vector<char> dev_addr = read_blob(peer.from);
    std::vector<char> ep_addr  = read_blob(peer.from);
    std::vector<char> packed   = read_blob(peer.from);
    uint64_t base;
    read_all(peer.from, &base, sizeof(base));
    uct_ep_h ep = env.create_ep();
    env.connect(ep, dev_addr, ep_addr);
    write_blob(peer.to, env.dev_address());
    write_blob(peer.to, env.ep_address(ep));
    char c;
    read_all(peer.from, &c, 1);
    uct_rkey_bundle_t rkey = env.unpack(packed);

    /* The stream works while the peer lives */
    for (uint64_t i = 0; i < 20; ++i) {
        uint64_t result;
        ASSERT_EQ(UCS_OK, env.run(ep, (i % 2) ? UCT_ATOMIC_OP_ADD :
                                                UCT_ATOMIC_OP_XOR,
                                  (i % 4 < 2) ? 8 : 4, true, 1, 0, base,
                                  rkey.rkey, &result));
    }

    write_all(peer.to, "x", 1);
    /* its end comes after the kernel destroyed its QP */
    ASSERT_EQ(0, peer_wait(&peer));

    /* Mid-stream: ops already in flight when the peer's QP is gone */
    const unsigned count = 40;
    std::vector<completion> comps(count);
    std::vector<uint64_t> results(count);
    unsigned started = 0;
    for (unsigned i = 0; i < count; ++i) {
        ucs_status_t s = env.start(ep, (i % 2) ? UCT_ATOMIC_OP_ADD :
                                                 UCT_ATOMIC_OP_OR,
                                   (i % 3) ? 4 : 8, true, 1, 0, base + 8,
                                   rkey.rkey, &results[i], &comps[i].super);
        if (s == UCS_INPROGRESS) {
            ++started;
        } else {
            comps[i].done   = true;
            comps[i].status = s;
        }
    }
    EXPECT_GT(started, 0u);

    completion flush_comp;
    ucs_status_t fs = uct_ep_flush(ep, 0, &flush_comp.super);
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::seconds(120);
    auto all_done = [&]() {
        for (auto &cm : comps) {
            if (!cm.done) {
                return false;
            }
        }
        return (fs != UCS_INPROGRESS) || flush_comp.done;
    };
    while (!all_done() && (std::chrono::steady_clock::now() < deadline)) {
        env.progress();
    }
    ASSERT_TRUE(all_done()) << "ops or flush hung after the peer died";

    unsigned failed = 0;
    for (auto &cm : comps) {
        failed += (cm.status != UCS_OK);
    }
    EXPECT_EQ(count, failed) << "no op can succeed against a dead peer";
    if (fs == UCS_INPROGRESS) {
        EXPECT_NE(UCS_OK, flush_comp.status);
    }
    EXPECT_EQ(1u, errors.calls);
    EXPECT_EQ(ep, errors.ep);
    EXPECT_EQ(UCS_ERR_ENDPOINT_TIMEOUT, errors.status);

    /* The endpoint stays failed */
    uint64_t r;
    EXPECT_NE(UCS_OK, env.run(ep, UCT_ATOMIC_OP_ADD, 8, true, 1, 0, base,
                              rkey.rkey, &r));
    EXPECT_NE(UCS_OK, env.flush(ep));

    env.release(rkey);
    uct_ep_destroy(ep);
}
