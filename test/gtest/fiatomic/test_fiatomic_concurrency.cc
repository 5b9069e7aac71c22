/*
 * Concurrency: 4 initiator processes x 1000 operations (10000 on mapped
 * shared memory) on the same elements, for element sizes 1, 2, 4, 8, 16
 * and 32 bytes at once, per strategy, mixed strategies, and "wide": direct
 * and target-side execution (over the shared memory and over tcp) on the
 * same elements. SUM, PROD, LXOR (the sequence of states is fixed
 * whatever the order), MAX and MIN (a linearizable chain of states), CSWAP
 * chains where exactly one process wins each step, MSWAP on disjoint bits.
 * Final values and the multiset of fetched values are checked exactly.
 * 1- and 2-byte elements share their 32-bit words with each other and with
 * an untouched sentinel byte.
 */
#include "fiatomic_test_env.h"
#include "fiatomic_test_values.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include <stdio.h>
#include <stdlib.h>

using namespace fiatomic_test;

namespace {

const int PROCS      = 4;
/* $FIATOMIC_TEST_ITERATIONS sets the operations per process and element:
 * fewer between two qemu guests, whose virtual wire costs milliseconds per
 * round trip (contrib/softroce/two-guests.sh). Unset: 0, the transport's
 * default (iterations_for). */
int iterations_from_env()
{
    const char *v = getenv("FIATOMIC_TEST_ITERATIONS");
    char *end;
    long n;

    if ((v == NULL) || (*v == '\0')) {
        return 0;
    }
    n = strtol(v, &end, 10);
    if ((*end != '\0') || (n < 1) || (n > 1000000)) {
        fprintf(stderr, "FIATOMIC_TEST_ITERATIONS must be 1 to 1000000, "
                "not '%s'\n", v);
        exit(2);
    }
    return (int)n;
}

/* An operation on mapped shared memory (ALLOCATE'd on posix/sysv: direct
 * CPU atomics) takes ~50 ns: 1000 of them end within one time slice of a
 * loaded 2-core machine, before the other processes run, and a non-atomic
 * update went unnoticed there (a 16-byte element written with plain stores
 * passed 1000 iterations, failed 10000). Elsewhere an operation takes
 * microseconds: 1000 overlap. */
int iterations_for(const config &cfg)
{
    int n = iterations_from_env();

    if (n > 0) {
        return n;
    }
    return (cfg.alloc && ((cfg.tl == "posix") || (cfg.tl == "sysv"))) ?
           10000 : 1000;
}

/* Operations per process and element of the running test (hammer). */
int ITERATIONS = 1000;

enum kind {
    K_SUM,
    K_PROD,
    K_MAX,
    K_MIN,
    K_LXOR,
    K_CSWAP,
    K_MSWAP,
    K_FSUM, /* floating point SUM of 1: float, double, double complex */
    K_LDSUM, /* long double (16 bytes), long double complex (32 bytes) */
    K_CLXOR, /* LXOR on long double complex (32 bytes) */
    K_LAST
};

const char *kind_names[] = {"sum", "prod", "max", "min", "lxor", "cswap",
                            "mswap", "fsum", "ldsum", "clxor"};

int kind_datatype(kind k, size_t size)
{
    static const int sdt[] = {0, FI_INT8, FI_INT16, 0, FI_INT32, 0, 0, 0,
                              FI_INT64};
    static const int udt[] = {0, FI_UINT8, FI_UINT16, 0, FI_UINT32, 0, 0, 0,
                              FI_UINT64};

    /* 16 and 32 bytes: integers without MIN/MAX/MSWAP (their checks here
     * work on 64-bit values), the floating point types */
    if (size == 16) {
        switch (k) {
        case K_SUM:
        case K_PROD:
        case K_LXOR:
        case K_CSWAP:
            return FI_UINT128;
        case K_FSUM:
            return FI_DOUBLE_COMPLEX;
        case K_LDSUM:
            return FI_LONG_DOUBLE;
        default:
            return -1;
        }
    } else if (size == 32) {
        return ((k == K_LDSUM) || (k == K_CLXOR)) ? FI_LONG_DOUBLE_COMPLEX :
                                                    -1;
    }
    switch (k) {
    case K_SUM:
        return (size <= 2) ? sdt[size] : udt[size]; /* signed wrap too */
    case K_MAX:
    case K_MIN:
        return sdt[size];
    case K_FSUM:
        return (size == 4) ? FI_FLOAT : (size == 8) ? FI_DOUBLE : -1;
    case K_LDSUM:
    case K_CLXOR:
        return -1;
    default:
        return udt[size];
    }
}

int kind_op(kind k)
{
    static const int ops[] = {FI_SUM, FI_PROD, FI_MAX, FI_MIN, FI_LXOR,
                              FI_CSWAP, FI_MSWAP, FI_SUM, FI_SUM, FI_LXOR};
    return ops[k];
}

int kind_family(kind k)
{
    return ((k == K_CSWAP) || (k == K_MSWAP)) ? FIATOMIC_FAMILY_COMPARE :
                                                FIATOMIC_FAMILY_FETCH;
}

uint64_t to_u64(const uint8_t *p, size_t size)
{
    uint64_t v = 0;
    memcpy(&v, p, size);
    return v;
}

int64_t to_i64(const uint8_t *p, size_t size)
{
    uint64_t v = to_u64(p, size);
    if ((size < 8) && ((v >> (size * 8 - 1)) & 1)) {
        v |= ~(uint64_t)0 << (size * 8);
    }
    return (int64_t)v;
}

/* little endian, zero-extended to any size */
value_t from_u64(uint64_t v, size_t size)
{
    value_t x(size, 0);
    memcpy(x.data(), &v, std::min<size_t>(size, 8));
    return x;
}

/* x + n, modulo 2^(8 * size) */
value_t value_add(value_t x, uint64_t n)
{
    unsigned carry = 0;

    for (size_t i = 0; i < x.size(); ++i) {
        unsigned v = x[i] + (unsigned)((i < 8) ? (n >> (8 * i)) & 0xff : 0) +
                     carry;
        x[i]  = (uint8_t)v;
        carry = v >> 8;
    }
    return x;
}

/* The padding of x87 long double is no part of the value: zero it so that
 * values can be compared and counted as bytes. */
value_t normalized(int dt, value_t x)
{
    if ((dt == FI_LONG_DOUBLE) || (dt == FI_LONG_DOUBLE_COMPLEX)) {
        size_t part = sizeof(long double);
        for (size_t off = 0; off < x.size(); off += part) {
            for (size_t b = 10; b < part; ++b) {
                x[off + b] = 0;
            }
        }
    }
    return x;
}

/* 1 of the datatype (the real part of a complex one) */
value_t one_of(int dt, size_t size)
{
    value_t x(size, 0);

    switch (dt) {
    case FI_FLOAT: {
        float f = 1.0f;
        memcpy(x.data(), &f, sizeof(f));
        break;
    }
    case FI_DOUBLE:
    case FI_DOUBLE_COMPLEX: {
        double d = 1.0;
        memcpy(x.data(), &d, sizeof(d));
        break;
    }
    case FI_LONG_DOUBLE:
    case FI_LONG_DOUBLE_COMPLEX: {
        long double l = 1.0L;
        memcpy(x.data(), &l, 10);
        break;
    }
    default:
        x[0] = 1;
        break;
    }
    return x;
}

uint64_t size_mask(size_t size)
{
    return (size == 8) ? ~(uint64_t)0 : (((uint64_t)1 << (size * 8)) - 1);
}

/* One hammered element. */
struct element_task {
    kind                 k;
    size_t               size;
    int                  dt;
    uint64_t             offset;
    value_t              init;
    std::vector<int>     procs;    /* participating processes */
    std::vector<value_t> operands; /* per process: ITERATIONS values */
    std::vector<value_t> compares;
    std::string name() const
    {
        return std::string(kind_names[k]) + "_" +
               fiatomic_ref_datatype_short_name(dt);
    }
};

/*
 * "wide": two processes that map the target's memory (direct, under the
 * 32-byte elements' shared locks), one that has the target execute over the
 * same transport and one that has it execute over tcp (it cannot map the
 * memory: the target must take the same locks for it).
 */
const char WIDE_TCP[] = "target@tcp";

std::vector<std::string> process_strategies(const config &cfg)
{
    if (cfg.strategy == "wide") {
        return {"direct", "target", "direct", WIDE_TCP};
    }
    if (cfg.strategy != "mixed") {
        return std::vector<std::string>(PROCS, cfg.strategy);
    }
    if (direct_valid(cfg)) {
        return {"cas", "direct", "target", "native"};
    }
    return {"cas", "target", "native", "auto"};
}

/* The configuration one process of the test runs in. */
config process_config(const config &cfg, const std::string &strategy)
{
    config c = cfg;

    if (strategy == WIDE_TCP) {
        c.tl       = "tcp";
        c.alloc    = false; /* nothing of it mapped there */
        c.strategy = "target";
    } else {
        c.strategy = strategy;
    }
    return c;
}

/* The target's transports: those of every process. */
std::string target_tl(const config &cfg)
{
    return (cfg.strategy == "wide") ? cfg.tl + ",tcp" : cfg.tl;
}

/* The job of one process: its number, its configuration */
typedef std::function<std::vector<job_task>(int, const config &)> job_maker;

/*
 * Start one initiator per entry of `strategies`, each connected to `tgt`
 * with its job (job_of), have them all begin at the same moment and collect
 * their results (a process that reports an error fails the test). *start is
 * that moment. Call under ASSERT_NO_FATAL_FAILURE.
 */
void run_initiators(const config &cfg,
                    const std::vector<std::string> &strategies,
                    remote_target &tgt, peer_process *procs,
                    const job_maker &job_of, std::vector<job_result> *results,
                    double *start)
{
    std::string error;

    for (int p = 0; p < PROCS; ++p) {
        config pc = process_config(cfg, strategies[p]);
        ASSERT_TRUE(start_initiator(&procs[p], tgt,
                                    peer_env(pc.tl, pc.strategy, cfg.am),
                                    &error))
                << error;
        std::vector<uint8_t> packed = pack_job(job_of(p, pc));
        ASSERT_TRUE(procs[p].request(MSG_JOB, packed.data(), packed.size(),
                                     NULL, &error)) << error;
    }

    *start = now_sec() + 0.1; /* everybody starts then */
    for (int p = 0; p < PROCS; ++p) {
        ASSERT_TRUE(procs[p].send(MSG_GO, start, sizeof(*start), &error))
                << error;
    }
    for (int p = 0; p < PROCS; ++p) {
        std::vector<uint8_t> reply;
        ASSERT_TRUE(procs[p].receive_ok(&reply, &error, 400000)) << error;
        ASSERT_TRUE(unpack_job_result(reply, &(*results)[p]))
                << "process " << p << ": reply of " << reply.size()
                << " bytes";
        EXPECT_EQ("", (*results)[p].error) << "process " << p << " ("
                                           << strategies[p] << ")";
    }
}

/* Stop the initiators, then the target; each must exit cleanly */
void stop_all(peer_process *procs, remote_target &tgt)
{
    std::string error;

    for (int p = 0; p < PROCS; ++p) {
        EXPECT_TRUE(procs[p].stop(&error)) << "initiator " << p << ": "
                                           << error;
    }
    EXPECT_TRUE(tgt.stop(&error)) << "target: " << error;
}

class concurrency : public ::testing::TestWithParam<config> {
protected:
    /* before the tasks are planned and the peers spawned */
    proto_env m_proto{GetParam()};

    void build_tasks(const std::vector<std::string> &strategies);
    void check_task(const element_task &t, const std::vector<job_result> &res,
                    const std::vector<size_t> &task_index,
                    const uint8_t *final_value);

    std::vector<element_task> m_tasks;
    uint64_t                  m_area = 0;
};

void concurrency::build_tasks(const std::vector<std::string> &strategies)
{
    uint64_t base = 256;

    for (size_t size : {1, 2, 4, 8, 16, 32}) {
        uint64_t off = base;
        for (int ki = 0; ki < K_LAST; ++ki) {
            kind k = (kind)ki;
            int dt = kind_datatype(k, size);
            element_task t;
            if (dt < 0) {
                continue;
            }
            if (k == K_CLXOR) {
                /* at an odd multiple of 16: across two 32-byte blocks,
                 * whose locks it takes both (LDSUM is at a multiple of 64)
                 */
                off += 16;
            }
            t.k      = k;
            t.size   = size;
            t.dt     = dt;
            t.offset = off;
            off     += size;
            for (int p = 0; p < PROCS; ++p) {
                config c = process_config(GetParam(), strategies[p]);
                cell cl  = {kind_family(k), kind_op(k), dt};
                /* (an OPTIONAL cell is left out: the process could not
                 * run it) */
                if (strategy_can(c, c.strategy, cl) == REQUIRED) {
                    t.procs.push_back(p);
                }
            }
            uint64_t bits = std::min<size_t>(size, 8) * 8;
            uint64_t mask = size_mask(std::min<size_t>(size, 8));
            uint64_t top  = (uint64_t)1 << (bits - 1);
            switch (k) {
            case K_SUM:
                /* signed wrap for 1/2 bytes, unsigned for 4/8, the carry
                 * into the high half for 16 */
                t.init = (size <= 2) ? int_value(dt, (int64_t)(top - 7)) :
                                       from_u64(mask - 1500, size);
                break;
            case K_PROD:
                t.init = from_u64(5, size);
                break;
            case K_MAX:
                t.init = from_u64(top, size); /* signed minimum */
                break;
            case K_MIN:
                t.init = from_u64(top - 1, size); /* signed maximum */
                break;
            case K_LXOR:
                t.init = from_u64(0x10, size);
                break;
            case K_CSWAP:
                t.init = from_u64(mask - 100, size);
                break;
            case K_MSWAP:
                t.init = from_u64(0xa5a5a5a5a5a5a5a5ull & mask, size);
                break;
            case K_FSUM:
            case K_LDSUM:
                t.init = value_t(size, 0); /* +0.0 */
                break;
            case K_CLXOR:
                t.init = one_of(dt, size); /* true */
                break;
            default:
                break;
            }
            for (int p = 0; p < PROCS; ++p) {
                value_t ops, cmps;
                for (int i = 0; i < ITERATIONS; ++i) {
                    value_t o, c(size, 0);
                    switch (k) {
                    case K_SUM:
                    case K_LXOR:
                    case K_CLXOR:
                    case K_LDSUM:
                        o = one_of(dt, size);
                        break;
                    case K_PROD:
                        o = from_u64(3, size);
                        break;
                    case K_FSUM:
                        o = one_of(dt, size);
                        break;
                    case K_MAX:
                    case K_MIN: {
                        /* a ramp over the whole signed range with a
                         * per-process offset: many transitions, many
                         * duplicates */
                        double frac = (double)i / ITERATIONS;
                        if (k == K_MIN) {
                            frac = 1.0 - frac;
                        }
                        double half = (double)(top - 1) * 0.999;
                        double dv   = -half + frac * 2.0 * half +
                                      p * 3.0 - 4.0;
                        int64_t v   = (int64_t)dv; /* |dv| < 2^63 */
                        o = int_value(dt, v);
                        break;
                    }
                    case K_MSWAP: {
                        /* process p owns bits p, p+4, p+8, ... */
                        uint64_t pm = 0;
                        for (uint64_t b = p; b < bits; b += PROCS) {
                            pm |= (uint64_t)1 << b;
                        }
                        uint64_t pattern = (uint64_t)(i + 1) *
                                           0x9e3779b97f4a7c15ull;
                        o = from_u64(pattern & mask, size);
                        c = from_u64(pm, size);
                        break;
                    }
                    default: /* CSWAP: adaptive, filled by the peer */
                        o = value_t(size, 0);
                        break;
                    }
                    ops.insert(ops.end(), o.begin(), o.end());
                    cmps.insert(cmps.end(), c.begin(), c.end());
                }
                t.operands.push_back(ops);
                t.compares.push_back(cmps);
            }
            if (!t.procs.empty()) {
                m_tasks.push_back(t);
            }
        }
        /* the byte after the group (no element: checked unchanged at the
         * end) shares its word with the last 1- and 2-byte elements */
        base = ((off + size + 63) / 64) * 64 + 64;
    }
    m_area = base + 64;
}

void concurrency::check_task(const element_task &t,
                             const std::vector<job_result> &res,
                             const std::vector<size_t> &task_index,
                             const uint8_t *final_value)
{
    const size_t size = t.size;
    const int dt      = t.dt;
    const size_t T    = t.procs.size() * ITERATIONS;
    std::map<value_t, size_t> fetched;
    std::vector<std::pair<value_t, value_t>> ops; /* (operand|compare,
                                                     fetched) */

    SCOPED_TRACE(t.name() + " with " + std::to_string(t.procs.size()) +
                 " processes");
    for (int p : t.procs) {
        const std::vector<uint8_t> &f = res[p].fetched[task_index[p]];
        const std::vector<uint8_t> &c = res[p].compares[task_index[p]];
        ASSERT_EQ(ITERATIONS * size, f.size());
        for (int i = 0; i < ITERATIONS; ++i) {
            value_t fv(f.begin() + i * size, f.begin() + (i + 1) * size);
            value_t ov;
            fetched[normalized(dt, fv)]++;
            if (t.k == K_CSWAP) {
                ov.assign(c.begin() + i * size, c.begin() + (i + 1) * size);
            } else {
                ov.assign(t.operands[p].begin() + i * size,
                          t.operands[p].begin() + (i + 1) * size);
            }
            ops.push_back({ov, fv});
        }
    }
    value_t final_v(final_value, final_value + size);

    switch (t.k) {
    case K_SUM:
    case K_PROD:
    case K_LXOR:
    case K_FSUM:
    case K_LDSUM:
    case K_CLXOR: {
        /* the same operand every time: the sequence of states does not
         * depend on the order */
        std::map<value_t, size_t> expected;
        value_t state = t.init;
        for (size_t n = 0; n < T; ++n) {
            expected[normalized(dt, state)]++;
            fiatomic_ref_apply(FIATOMIC_REF_FAMILY_BASE, kind_op(t.k), dt,
                               state.data(), t.operands[t.procs[0]].data(),
                               NULL, NULL);
        }
        EXPECT_TRUE(fiatomic_ref_bits_equal(dt, state.data(), final_v.data()))
                << "final " << fmt(dt, final_v.data()) << ", expected "
                << fmt(dt, state.data());
        if (expected != fetched) {
            int shown = 0;
            for (const auto &e : expected) {
                auto it = fetched.find(e.first);
                size_t got = (it == fetched.end()) ? 0 : it->second;
                if ((got != e.second) && (shown++ < 5)) {
                    ADD_FAILURE() << "value " << fmt(dt, e.first.data())
                                  << " fetched " << got << " times, "
                                  << "expected " << e.second;
                }
            }
            for (const auto &g : fetched) {
                if (!expected.count(g.first) && (shown++ < 8)) {
                    ADD_FAILURE() << "value " << fmt(dt, g.first.data())
                                  << " fetched " << g.second << " times, "
                                  << "never a state";
                }
            }
        }
        break;
    }
    case K_MAX:
    case K_MIN: {
        /* a linearizable fetch-max/min register: the states form a chain;
         * each state but the last is left by exactly one operation, whose
         * operand is the next state; every other operation that saw a state
         * did not pass it */
        bool is_max = (t.k == K_MAX);
        auto better = [&](int64_t a, int64_t b) {
            return is_max ? (a > b) : (a < b);
        };
        int64_t best = to_i64(t.init.data(), size);
        std::map<int64_t, std::vector<int64_t>> seen; /* state -> operands */
        for (const auto &o : ops) {
            int64_t v = to_i64(o.first.data(), size);
            if (better(v, best)) {
                best = v;
            }
            seen[to_i64(o.second.data(), size)].push_back(v);
        }
        int64_t fin = to_i64(final_v.data(), size);
        EXPECT_EQ(best, fin) << "final value";
        std::set<int64_t> states;
        for (const auto &s : seen) {
            states.insert(s.first);
        }
        states.insert(fin);
        std::vector<int64_t> chain(states.begin(), states.end());
        if (!is_max) {
            std::reverse(chain.begin(), chain.end());
        }
        EXPECT_EQ(to_i64(t.init.data(), size), chain.front())
                << "the first state is not the initial value";
        int bad = 0;
        for (size_t s = 0; s < chain.size(); ++s) {
            size_t leaving = 0;
            for (int64_t v : seen[chain[s]]) {
                if (better(v, chain[s])) {
                    ++leaving;
                    if ((s + 1 >= chain.size() || v != chain[s + 1]) &&
                        (bad++ < 5)) {
                        ADD_FAILURE() << "state " << chain[s]
                                      << " was left for " << v
                                      << ", not for the next state";
                    }
                }
            }
            size_t want = (s + 1 < chain.size()) ? 1 : 0;
            if ((leaving != want) && (bad++ < 5)) {
                ADD_FAILURE() << "state " << chain[s] << " was left by "
                              << leaving << " operations, expected " << want;
            }
        }
        break;
    }
    case K_CSWAP: {
        /* exactly one winner per step (any width: byte-wise arithmetic) */
        std::map<value_t, size_t> wins, expected;
        size_t W = 0;
        for (const auto &o : ops) {
            if (o.first == o.second) {
                wins[o.first]++;
                ++W;
            }
        }
        EXPECT_GT(W, 0u);
        EXPECT_TRUE(value_add(t.init, W) == final_v)
                << W << " wins, final " << fmt(dt, final_v.data());
        for (size_t n = 0; n < W; ++n) {
            expected[value_add(t.init, n)]++;
        }
        int shown = 0;
        for (const auto &e : expected) {
            size_t got = wins.count(e.first) ? wins[e.first] : 0;
            if ((got != e.second) && (shown++ < 5)) {
                ADD_FAILURE() << "step value " << fmt(dt, e.first.data())
                              << " won " << got << " times, expected "
                              << e.second;
            }
        }
        for (const auto &w : wins) {
            if (!expected.count(w.first) && (shown++ < 8)) {
                ADD_FAILURE() << "value " << fmt(dt, w.first.data())
                              << " won " << w.second
                              << " times, never a step of the chain";
            }
        }
        break;
    }
    case K_MSWAP: {
        /* each process owns its bits: it sees exactly what it wrote last */
        uint64_t init = to_u64(t.init.data(), size), all = 0;
        uint64_t fin  = to_u64(final_v.data(), size);
        int bad = 0;
        for (int p : t.procs) {
            const std::vector<uint8_t> &f = res[p].fetched[task_index[p]];
            uint64_t pm   = to_u64(t.compares[p].data(), size);
            uint64_t prev = init & pm;
            all |= pm;
            for (int i = 0; i < ITERATIONS; ++i) {
                uint64_t got = to_u64(&f[i * size], size) & pm;
                if ((got != prev) && (bad++ < 5)) {
                    ADD_FAILURE() << "process " << p << " iteration " << i
                                  << ": its bits were 0x" << std::hex << got
                                  << ", it had written 0x" << prev
                                  << std::dec;
                }
                prev = to_u64(&t.operands[p][i * size], size) & pm;
            }
            EXPECT_EQ(prev, fin & pm) << "final bits of process " << p;
        }
        EXPECT_EQ(init & ~all & size_mask(size), fin & ~all)
                << "bits nobody owns";
        break;
    }
    default:
        break;
    }
}

TEST_P(concurrency, hammer)
{
    const config &cfg = GetParam();
    std::vector<std::string> strategies = process_strategies(cfg);
    std::string missing = transport_missing(cfg.tl), error;
    remote_target tgt;
    peer_process procs[PROCS];
    std::vector<job_result> results(PROCS);

    if (!missing.empty()) {
        GTEST_SKIP() << missing;
    }
    ITERATIONS = iterations_for(cfg);
    build_tasks(strategies);
    ASSERT_FALSE(m_tasks.empty());
    ASSERT_TRUE(tgt.start(target_tl(cfg), cfg.alloc, &error, cfg.am))
            << error;

    /* the initial image: a pattern, the elements' initial values */
    std::vector<uint8_t> image(m_area);
    for (size_t i = 0; i < image.size(); ++i) {
        image[i] = (uint8_t)(0x5c + i * 29);
    }
    for (const element_task &t : m_tasks) {
        memcpy(&image[t.offset], t.init.data(), t.size);
    }
    ASSERT_TRUE(tgt.write(0, 0, image.data(), image.size(), &error)) << error;

    std::vector<std::vector<size_t>> index(PROCS,
                                           std::vector<size_t>(m_tasks.size()));
    double start;
    auto job_of = [&](int p, const config &) {
        std::vector<job_task> job;
        for (size_t ti = 0; ti < m_tasks.size(); ++ti) {
            const element_task &t = m_tasks[ti];
            if (std::find(t.procs.begin(), t.procs.end(), p) ==
                t.procs.end()) {
                continue;
            }
            job_task jt;
            jt.kind       = (t.k == K_CSWAP) ? JOB_CSWAP_CHAIN : JOB_EXPLICIT;
            jt.family     = kind_family(t.k);
            jt.op         = kind_op(t.k);
            jt.datatype   = t.dt;
            jt.region     = 0;
            jt.offset     = t.offset;
            jt.iterations = ITERATIONS;
            jt.operands   = t.operands[p];
            jt.compares   = (t.k == K_CSWAP) ? t.init : t.compares[p];
            index[p][ti]  = job.size();
            job.push_back(jt);
        }
        return job;
    };
    ASSERT_NO_FATAL_FAILURE(run_initiators(cfg, strategies, tgt, procs,
                                           job_of, &results, &start));
    double elapsed = now_sec() - start;
    if (HasFailure()) {
        return;
    }

    std::vector<uint8_t> after(m_area);
    ASSERT_TRUE(tgt.read(0, 0, after.data(), after.size(), &error)) << error;
    for (size_t ti = 0; ti < m_tasks.size(); ++ti) {
        std::vector<size_t> idx(PROCS);
        for (int p = 0; p < PROCS; ++p) {
            idx[p] = index[p][ti];
        }
        check_task(m_tasks[ti], results, idx, &after[m_tasks[ti].offset]);
    }
    /* bytes that are no element: the sentinels in the hammered words and
     * everything between the groups */
    std::vector<bool> element(m_area, false);
    for (const element_task &t : m_tasks) {
        for (size_t b = 0; b < t.size; ++b) {
            element[t.offset + b] = true;
        }
    }
    int changed = 0;
    for (size_t i = 0; i < m_area; ++i) {
        if (!element[i] && (after[i] != image[i]) && (changed++ < 5)) {
            ADD_FAILURE() << "byte " << i << " belongs to no element but "
                          << "changed from 0x" << std::hex << (int)image[i]
                          << " to 0x" << (int)after[i] << std::dec;
        }
    }

    stop_all(procs, tgt);
    std::cout << "[ INFO     ] " << m_tasks.size() << " elements, "
              << PROCS << " processes x " << ITERATIONS
              << " iterations in " << elapsed << " s" << std::endl;
}

#define CONCURRENCY_INSTANTIATE(_tl, _mem, _strategy) \
    FIATOMIC_TEST_INSTANTIATE(concurrency, _tl, _mem, _strategy)
CONCURRENCY_INSTANTIATE(posix, alloc, native)
CONCURRENCY_INSTANTIATE(posix, alloc, cas)
CONCURRENCY_INSTANTIATE(posix, alloc, direct)
CONCURRENCY_INSTANTIATE(posix, alloc, target)
CONCURRENCY_INSTANTIATE(posix, alloc, auto)
CONCURRENCY_INSTANTIATE(posix, alloc, mixed)
CONCURRENCY_INSTANTIATE(posix, user, native)
CONCURRENCY_INSTANTIATE(posix, user, cas)
CONCURRENCY_INSTANTIATE(posix, user, auto)
CONCURRENCY_INSTANTIATE(posix, alloc, wide)
CONCURRENCY_INSTANTIATE(sysv, alloc, direct)
CONCURRENCY_INSTANTIATE(sysv, alloc, mixed)
CONCURRENCY_INSTANTIATE(sysv, alloc, wide)
CONCURRENCY_INSTANTIATE(tcp, user, native)
CONCURRENCY_INSTANTIATE(tcp, user, cas)
CONCURRENCY_INSTANTIATE(tcp, user, target)
CONCURRENCY_INSTANTIATE(tcp, user, auto)
CONCURRENCY_INSTANTIATE(tcp, user, auto_noam)
CONCURRENCY_INSTANTIATE(tcp, user, mixed)

/*
 * 32-byte elements under the locks every actor takes: two processes that map
 * the target's memory add 1 to two long double complex elements (one at a
 * multiple of 32, one across two 32-byte blocks) with base-family calls as
 * fast as they can (direct: nothing to wait for), while one process has the
 * target execute fetching adds over the same transport and one over tcp, all
 * for the same time. Every add is counted: the final values must be the
 * counts (a lost update shows), and the values the target-side processes
 * fetched must be distinct states 0 .. count-1 (a torn or doubled read
 * shows).
 */
class wide_concurrency : public ::testing::TestWithParam<config> {
};

const uint64_t WIDE_DURATION_US = 1000000;

long double ld_real(const value_t &v)
{
    long double r = 0;
    memcpy(&r, v.data(), 10);
    return r;
}

TEST_P(wide_concurrency, direct_and_target_on_same_elements)
{
    const config &cfg = GetParam();
    const std::vector<std::string> strategies = {"direct", "direct",
                                                 "target", WIDE_TCP};
    const uint64_t offsets[] = {256, 256 + 64 + 16};
    const int dt             = FI_LONG_DOUBLE_COMPLEX;
    const size_t size        = 32;
    std::string missing = transport_missing(cfg.tl), error;
    remote_target tgt;
    peer_process procs[PROCS];
    std::vector<job_result> results(PROCS);

    if (missing.empty()) {
        missing = transport_missing("tcp");
    }
    if (!missing.empty()) {
        GTEST_SKIP() << missing;
    }
    ASSERT_TRUE(tgt.start(target_tl(cfg), cfg.alloc, &error, cfg.am))
            << error;
    std::vector<uint8_t> image(512, 0);
    ASSERT_TRUE(tgt.write(0, 0, image.data(), image.size(), &error)) << error;

    double start;
    auto job_of = [&](int, const config &pc) {
        std::vector<job_task> job;
        for (uint64_t offset : offsets) {
            job_task jt;
            jt.kind        = JOB_REPEAT;
            jt.family      = (pc.strategy == "direct") ?
                             FIATOMIC_FAMILY_BASE : FIATOMIC_FAMILY_FETCH;
            jt.op          = FI_SUM;
            jt.datatype    = dt;
            jt.region      = 0;
            jt.offset      = offset;
            /* direct: as many as it can (no fetched values kept);
             * target-side: ~50k round trips in a second here at most */
            jt.iterations  = (pc.strategy == "direct") ? 1000000000 : 200000;
            jt.operands    = one_of(dt, size);
            jt.duration_us = WIDE_DURATION_US;
            job.push_back(jt);
        }
        return job;
    };
    ASSERT_NO_FATAL_FAILURE(run_initiators(cfg, strategies, tgt, procs,
                                           job_of, &results, &start));
    if (HasFailure()) {
        return;
    }

    std::vector<uint8_t> after(image.size());
    ASSERT_TRUE(tgt.read(0, 0, after.data(), after.size(), &error)) << error;
    std::ostringstream counts;
    for (size_t e = 0; e < 2; ++e) {
        uint64_t total = 0;
        std::vector<uint64_t> seen;
        SCOPED_TRACE("element at offset " + std::to_string(offsets[e]));
        for (int p = 0; p < PROCS; ++p) {
            uint64_t n;
            ASSERT_EQ(sizeof(n), results[p].compares[e].size());
            memcpy(&n, results[p].compares[e].data(), sizeof(n));
            EXPECT_LT(0u, n) << "process " << p << " (" << strategies[p]
                             << ") did nothing";
            counts << (p ? "+" : (e ? "; " : "")) << n;
            total += n;
            const std::vector<uint8_t> &f = results[p].fetched[e];
            for (size_t i = 0; i + size <= f.size(); i += size) {
                value_t v = normalized(dt, value_t(f.begin() + i,
                                                   f.begin() + i + size));
                long double r = ld_real(v);
                value_t imag(v.begin() + 16, v.end());
                if ((r < 0) || (r != (long double)(uint64_t)r) ||
                    (imag != value_t(16, 0))) {
                    ADD_FAILURE() << "process " << p << " fetched a value "
                                  << "no add made: " << (double)r;
                    return;
                }
                seen.push_back((uint64_t)r);
            }
        }
        std::sort(seen.begin(), seen.end());
        EXPECT_TRUE(std::adjacent_find(seen.begin(), seen.end()) ==
                    seen.end()) << "a state was fetched twice";
        EXPECT_TRUE(seen.empty() || (seen.back() < total))
                << "fetched " << seen.back() << " of " << total << " adds";
        value_t fin = normalized(dt, value_t(&after[offsets[e]],
                                             &after[offsets[e]] + size));
        EXPECT_EQ(total, (uint64_t)ld_real(fin)) << "adds lost";
        EXPECT_EQ(value_t(16, 0), value_t(fin.begin() + 16, fin.end()));
    }
    stop_all(procs, tgt);
    std::cout << "[ INFO     ] adds per process (direct, direct, target, "
              << "target over tcp): " << counts.str() << std::endl;
}

#define WIDE_CONCURRENCY_INSTANTIATE(_tl) \
    INSTANTIATE_TEST_SUITE_P(_tl##_alloc_wide, wide_concurrency, \
                             ::testing::Values(FIATOMIC_TEST_CONFIG( \
                                     _tl, alloc, wide)), \
                             config_name());
WIDE_CONCURRENCY_INSTANTIATE(posix)
WIDE_CONCURRENCY_INSTANTIATE(sysv)

} // namespace
