/*
 * Threads: a context on a UCS_THREAD_MODE_MULTI worker used by several
 * threads at once, on one endpoint and on several, every strategy (forced
 * by the configuration). Each thread posts fetching and non-fetching
 * operations with a window of requests in flight, inject and
 * callback-and-free ones included, runs compare-and-swap chains, and
 * progresses the worker itself. Results are exact: the targets' final
 * values are the reference model applied to every operation, the fetched
 * values of a shared counter are each value it passed through exactly
 * once, and a counter bound to every endpoint counts every operation.
 *
 * Built with ThreadSanitizer too (contrib/test-all.sh): that run must
 * report nothing.
 */
#include "fiatomic_test_env.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>
#include <thread>

using namespace fiatomic_test;

namespace {

const unsigned NUM_THREADS = 4;
const unsigned WINDOW      = 16;   /* requests in flight per thread */
const double   BOUND_SEC   = 120.0;

/* Operations per thread and phase; FIATOMIC_TEST_THREAD_OPS scales them
 * (the ThreadSanitizer run uses fewer). */
unsigned ops_per_thread()
{
    const char *v = getenv("FIATOMIC_TEST_THREAD_OPS");
    return ((v != NULL) && (atoi(v) > 0)) ? (unsigned)atoi(v) : 100;
}

/* Offsets in region 0 (past what the other suites' helpers touch) */
enum {
    OFF_FETCH_SUM = 8192,      /* u64: fetch SUM 1, every thread */
    OFF_BASE_SUM  = 8192 + 8,  /* u64: SUM (t + 1), inject and nbx */
    OFF_CHAIN     = 8192 + 16, /* u64: CSWAP chains */
    OFF_FETCH_U16 = 8192 + 24  /* u16: fetch SUM 1 (not a UCP atomic) */
};

struct endpoint {
    fiatomic_ep_h ep;
    uint64_t      key;
    ucp_ep_h      ucp_ep; /* NULL for the connection's own */
};

/* The values a counter that started at 0 passed through, fetched by adds of
 * 1: sorted, they must be 0, 1, 2, ... (each state fetched exactly once) */
template <typename T>
void expect_each_state_once(std::vector<T> *fetched, const char *what)
{
    std::sort(fetched->begin(), fetched->end());
    for (size_t i = 0; i < fetched->size(); ++i) {
        if ((*fetched)[i] != i) {
            ADD_FAILURE() << what << ": sorted fetched value " << i << " is "
                          << (uint64_t)(*fetched)[i];
            break;
        }
    }
}

class threads : public ::testing::TestWithParam<config> {
protected:
    void SetUp() override
    {
        std::string skip, error;

        m_conn = connection::create(GetParam(), {}, NULL, &skip, &error,
                                    true);
        if (!skip.empty()) {
            GTEST_SKIP() << skip;
        }
        ASSERT_TRUE(m_conn != NULL) << error;
        ASSERT_EQ(UCS_OK, fiatomic_cntr_open(m_conn->fia(), &m_cntr));
    }

    void TearDown() override
    {
        for (endpoint &e : m_eps) {
            if (e.ucp_ep != NULL) {
                fiatomic_rkey_release(e.ep, e.key);
                m_conn->destroy_second_ep(e.ucp_ep, e.ep);
            } else if (m_cntr != NULL) {
                fiatomic_ep_bind_cntr(e.ep, NULL);
            }
        }
        if (m_cntr != NULL) {
            EXPECT_EQ(UCS_OK, fiatomic_cntr_close(m_cntr));
        }
        m_conn.reset();
    }

    void add_endpoints(unsigned count)
    {
        std::string error;

        m_eps.push_back({m_conn->ep(), m_conn->key(0), NULL});
        while (m_eps.size() < count) {
            endpoint e;
            ASSERT_TRUE(m_conn->create_second_ep(&e.ucp_ep, &e.ep, &error))
                    << error;
            const std::vector<uint8_t> &packed = m_conn->tgt().info().key[0];
            ASSERT_EQ(UCS_OK, fiatomic_rkey_unpack(e.ep, packed.data(),
                                                   packed.size(), &e.key));
            m_eps.push_back(e);
        }
        for (endpoint &e : m_eps) {
            ASSERT_EQ(UCS_OK, fiatomic_ep_bind_cntr(e.ep, m_cntr));
        }
    }

    /* Whether every endpoint executes the cell; fails the test if the
     * configuration must and does not. */
    bool cell_runs(int family, int op, int dt)
    {
        expectation want = expect_cell(GetParam(), {family, op, dt});
        bool runs        = true;

        for (endpoint &e : m_eps) {
            fiatomic_cell_info_t info;
            EXPECT_EQ(0, fiatomic_query_cell(e.ep, e.key,
                                             (fiatomic_family_t)family,
                                             (enum fi_datatype)dt,
                                             (enum fi_op)op, &info));
            runs = runs && (info.strategy != FIATOMIC_STRATEGY_NONE);
        }
        if (want == REQUIRED) {
            EXPECT_TRUE(runs) << "cell not executed on " << GetParam().name();
        } else if (want == FORBIDDEN) {
            EXPECT_FALSE(runs) << "cell executed on " << GetParam().name();
        }
        return runs;
    }

    void run(unsigned num_eps);

    std::unique_ptr<connection> m_conn;
    std::vector<endpoint>       m_eps;
    fiatomic_cntr_h             m_cntr = NULL;
};

/* What one thread did, and the first thing that went wrong in it. */
struct thread_state {
    endpoint               e;
    ucp_worker_h           worker;
    uint64_t               base;     /* target address of region 0 */
    unsigned               index;
    unsigned               ops;
    bool                   run_u16;
    std::vector<uint64_t>  fetched;      /* OFF_FETCH_SUM */
    std::vector<uint16_t>  fetched_u16;  /* OFF_FETCH_U16 */
    uint64_t               accepted = 0; /* calls that returned no error */
    uint64_t               added    = 0; /* sum of OFF_BASE_SUM operands */
    uint64_t               wins     = 0; /* CSWAPs that succeeded */
    uint64_t               requests = 0; /* callback requests returned */
    std::atomic<uint64_t>  callbacks{0};
    std::string            error;
};

void count_cb(void *request, ucs_status_t status, void *user_data)
{
    thread_state *ts = static_cast<thread_state*>(user_data);

    (void)request;
    (void)status; /* an error fails the flush; counted here anyway */
    ts->callbacks.fetch_add(1);
}

/* Wait for a request of this thread, progressing the worker. */
ucs_status_t wait_mine(thread_state *ts, void *req)
{
    double deadline = now_sec() + BOUND_SEC;
    ucs_status_t status;

    while ((status = fiatomic_request_check_status(req)) == UCS_INPROGRESS) {
        if (now_sec() > deadline) {
            fiatomic_request_free(req);
            return UCS_ERR_TIMED_OUT;
        }
        ucp_worker_progress(ts->worker);
    }
    fiatomic_request_free(req);
    return status;
}

/* Post through `post` until it is not refused for back-pressure; keeps
 * the window of requests. */
template <typename F>
bool post_windowed(thread_state *ts, std::deque<void*> *window, F post)
{
    ucs_status_ptr_t p;
    double deadline = now_sec() + BOUND_SEC;

    while (UCS_PTR_IS_ERR(p = post()) &&
           (UCS_PTR_STATUS(p) == UCS_ERR_NO_RESOURCE)) {
        if (now_sec() > deadline) {
            ts->error = "back-pressure never ended";
            return false;
        }
        ucp_worker_progress(ts->worker);
    }
    if (UCS_PTR_IS_ERR(p)) {
        ts->error = std::string("post: ") +
                    ucs_status_string(UCS_PTR_STATUS(p));
        return false;
    }
    ++ts->accepted;
    if (p != NULL) {
        window->push_back(p);
    }
    while (window->size() >= WINDOW) {
        ucs_status_t status = wait_mine(ts, window->front());
        window->pop_front();
        if (status != UCS_OK) {
            ts->error = std::string("request: ") + ucs_status_string(status);
            return false;
        }
    }
    return true;
}

bool drain(thread_state *ts, std::deque<void*> *window)
{
    while (!window->empty()) {
        ucs_status_t status = wait_mine(ts, window->front());
        window->pop_front();
        if ((status != UCS_OK) && ts->error.empty()) {
            ts->error = std::string("request: ") + ucs_status_string(status);
        }
    }
    return ts->error.empty();
}

void thread_main(thread_state *ts)
{
    const uint64_t one = 1;
    const uint16_t one16 = 1;
    uint64_t operand = ts->index + 1;
    fiatomic_request_param_t cb_param, plain;
    std::deque<void*> window;

    memset(&plain, 0, sizeof(plain));
    memset(&cb_param, 0, sizeof(cb_param));
    cb_param.op_attr_mask = FIATOMIC_OP_ATTR_FIELD_CALLBACK |
                            FIATOMIC_OP_ATTR_FIELD_USER_DATA;
    cb_param.cb           = count_cb;
    cb_param.user_data    = ts;

    /* fetch SUM 1 on the shared counter */
    ts->fetched.assign(ts->ops, UINT64_MAX);
    for (unsigned i = 0; i < ts->ops; ++i) {
        if (!post_windowed(ts, &window, [&]() {
                return fiatomic_fetch_atomic_nbx(
                        ts->e.ep, &one, 1, &ts->fetched[i],
                        ts->base + OFF_FETCH_SUM, ts->e.key, FI_UINT64,
                        FI_SUM, &plain);
            })) {
            drain(ts, &window);
            return;
        }
    }

    /* SUM (t + 1): inject, and nbx with a callback, freed at once */
    for (unsigned i = 0; i < ts->ops; ++i) {
        bool ok;
        if (i % 2) {
            ok = post_windowed(ts, &window, [&]() {
                return UCS_STATUS_PTR(fiatomic_inject_atomic(
                        ts->e.ep, &operand, 1, ts->base + OFF_BASE_SUM,
                        ts->e.key, FI_UINT64, FI_SUM));
            });
        } else {
            std::deque<void*> none;
            ok = post_windowed(ts, &none, [&]() {
                ucs_status_ptr_t p = fiatomic_atomic_nbx(
                        ts->e.ep, &operand, 1, ts->base + OFF_BASE_SUM,
                        ts->e.key, FI_UINT64, FI_SUM, &cb_param);
                if (UCS_PTR_IS_PTR(p)) {
                    ++ts->requests;
                    fiatomic_request_free(p); /* the callback still runs */
                    return (ucs_status_ptr_t)NULL;
                }
                if (p == NULL) {
                    ts->callbacks.fetch_add(1); /* done in place */
                }
                return p;
            });
        }
        if (!ok) {
            drain(ts, &window);
            return;
        }
        ts->added += operand;
    }

    /* compare-and-swap chains: +1 when the guess was right */
    uint64_t guess = 0;
    for (unsigned wins = 0, tries = 0; wins < ts->ops / 10; ++tries) {
        uint64_t next = guess + 1, seen = 0;
        ucs_status_ptr_t p;

        if (tries > 1000 * ts->ops) {
            ts->error = "CSWAP chain does not advance";
            break;
        }
        p = fiatomic_compare_atomic_nbx(ts->e.ep, &next, 1, &guess, &seen,
                                        ts->base + OFF_CHAIN, ts->e.key,
                                        FI_UINT64, FI_CSWAP, &plain);
        if (UCS_PTR_IS_ERR(p) && (UCS_PTR_STATUS(p) == UCS_ERR_NO_RESOURCE)) {
            ucp_worker_progress(ts->worker);
            continue;
        }
        ucs_status_t status = UCS_PTR_IS_PTR(p) ? wait_mine(ts, p) :
                                                  UCS_PTR_STATUS(p);
        if (status != UCS_OK) {
            ts->error = std::string("CSWAP: ") + ucs_status_string(status);
            break;
        }
        ++ts->accepted;
        if (seen == guess) {
            ++wins;
            ++ts->wins;
            guess = next;
        } else {
            guess = seen;
        }
    }
    if (!ts->error.empty()) {
        drain(ts, &window);
        return;
    }

    /* the callback operations' operand (`operand`, on this stack) must
     * outlive them: wait for their callbacks before going on */
    double deadline = now_sec() + BOUND_SEC;
    while (ts->callbacks.load() < (ts->ops + 1) / 2) {
        if (now_sec() > deadline) {
            ts->error = "callbacks of operations freed at once never came";
            drain(ts, &window);
            return;
        }
        ucp_worker_progress(ts->worker);
    }

    /* fetch SUM 1 on a 16-bit counter: a CAS loop, target-side or direct */
    if (ts->run_u16) {
        ts->fetched_u16.assign(ts->ops / 2, UINT16_MAX);
        for (unsigned i = 0; i < ts->ops / 2; ++i) {
            if (!post_windowed(ts, &window, [&]() {
                    return fiatomic_fetch_atomic_nbx(
                            ts->e.ep, &one16, 1, &ts->fetched_u16[i],
                            ts->base + OFF_FETCH_U16, ts->e.key, FI_UINT16,
                            FI_SUM, &plain);
                })) {
                break;
            }
        }
    }
    drain(ts, &window);
}

void threads::run(unsigned num_eps)
{
    const unsigned ops = ops_per_thread();
    std::vector<std::unique_ptr<thread_state>> states;
    std::vector<std::thread> workers;
    std::string error;
    uint8_t zero[32] = {};
    bool sum64, base64, cswap64, u16;

    add_endpoints(num_eps);
    if (HasFatalFailure()) {
        return;
    }
    ASSERT_TRUE(m_conn->tgt().write(0, OFF_FETCH_SUM, zero, sizeof(zero),
                                    &error)) << error;

    sum64   = cell_runs(FIATOMIC_FAMILY_FETCH, FI_SUM, FI_UINT64);
    base64  = cell_runs(FIATOMIC_FAMILY_BASE, FI_SUM, FI_UINT64);
    cswap64 = cell_runs(FIATOMIC_FAMILY_COMPARE, FI_CSWAP, FI_UINT64);
    u16     = cell_runs(FIATOMIC_FAMILY_FETCH, FI_SUM, FI_UINT16);
    if (HasFailure()) {
        return;
    }
    if (!sum64 || !base64 || !cswap64) {
        GTEST_SKIP() << GetParam().name() << " does not execute 64-bit "
                     << "SUM and CSWAP (forced strategy)";
    }

    for (unsigned t = 0; t < NUM_THREADS; ++t) {
        states.emplace_back(new thread_state());
        thread_state *ts = states.back().get();
        ts->e       = m_eps[t % m_eps.size()];
        ts->worker  = m_conn->worker();
        ts->base    = m_conn->base(0);
        ts->index   = t;
        ts->ops     = ops;
        ts->run_u16 = u16;
    }
    for (unsigned t = 0; t < NUM_THREADS; ++t) {
        workers.emplace_back(thread_main, states[t].get());
    }
    for (std::thread &w : workers) {
        w.join();
    }

    uint64_t accepted = 0, added = 0, wins = 0;
    std::vector<uint64_t> fetched;
    std::vector<uint16_t> fetched_u16;
    for (auto &ts : states) {
        EXPECT_EQ("", ts->error) << "thread " << ts->index;
        accepted += ts->accepted;
        added    += ts->added;
        wins     += ts->wins;
        fetched.insert(fetched.end(), ts->fetched.begin(), ts->fetched.end());
        fetched_u16.insert(fetched_u16.end(), ts->fetched_u16.begin(),
                           ts->fetched_u16.end());
    }
    if (HasFailure()) {
        m_conn->wait(fiatomic_flush_nbx(m_conn->fia(), NULL), 30.0);
        return;
    }

    /* quiet across the context: every endpoint's operations are done */
    ASSERT_EQ(UCS_OK, m_conn->wait(fiatomic_flush_nbx(m_conn->fia(), NULL),
                                   BOUND_SEC));
    for (auto &ts : states) {
        EXPECT_EQ((ts->ops + 1) / 2, ts->callbacks.load())
                << "thread " << ts->index << ": callbacks of its "
                << (ts->ops + 1) / 2 << " callback operations ("
                << ts->requests << " returned as requests)";
    }
    EXPECT_EQ(accepted, fiatomic_cntr_read(m_cntr));
    EXPECT_EQ(0u, fiatomic_cntr_readerr(m_cntr));
    EXPECT_EQ(0, fiatomic_cntr_wait(m_cntr, accepted, 0));

    /* the reference model applied to every operation */
    uint64_t expect_sum = 0, expect_base = 0, expect_chain = 0;
    uint16_t expect_u16 = 0;
    for (size_t i = 0; i < fetched.size(); ++i) {
        uint64_t one = 1;
        fiatomic_ref_apply(FIATOMIC_FAMILY_FETCH, FI_SUM, FI_UINT64,
                           &expect_sum, &one, NULL, NULL);
    }
    for (auto &ts : states) {
        uint64_t operand = ts->index + 1;
        for (unsigned i = 0; i < ts->ops; ++i) {
            fiatomic_ref_apply(FIATOMIC_FAMILY_BASE, FI_SUM, FI_UINT64,
                               &expect_base, &operand, NULL, NULL);
        }
    }
    for (uint64_t i = 0; i < wins; ++i) {
        uint64_t next = expect_chain + 1;
        fiatomic_ref_apply(FIATOMIC_FAMILY_COMPARE, FI_CSWAP, FI_UINT64,
                           &expect_chain, &next, &expect_chain, NULL);
    }
    for (size_t i = 0; i < fetched_u16.size(); ++i) {
        uint16_t one16 = 1;
        fiatomic_ref_apply(FIATOMIC_FAMILY_FETCH, FI_SUM, FI_UINT16,
                           &expect_u16, &one16, NULL, NULL);
    }
    EXPECT_EQ(added, expect_base);
    EXPECT_EQ((uint64_t)NUM_THREADS * (ops / 10), wins);

    uint64_t got[3];
    uint16_t got_u16;
    ASSERT_TRUE(m_conn->tgt().read(0, OFF_FETCH_SUM, got, sizeof(got),
                                   &error)) << error;
    ASSERT_TRUE(m_conn->tgt().read(0, OFF_FETCH_U16, &got_u16,
                                   sizeof(got_u16), &error)) << error;
    EXPECT_EQ(expect_sum, got[0]) << "fetch SUM u64";
    EXPECT_EQ(expect_base, got[1]) << "SUM u64 (inject and nbx)";
    EXPECT_EQ(expect_chain, got[2]) << "CSWAP chains";
    EXPECT_EQ(expect_u16, got_u16) << "fetch SUM u16";

    /* each value the counters passed through was fetched exactly once */
    expect_each_state_once(&fetched, "fetch SUM u64");
    expect_each_state_once(&fetched_u16, "fetch SUM u16");
    std::cout << "[ INFO     ] " << NUM_THREADS << " threads on "
              << m_eps.size() << " endpoint(s): " << accepted
              << " operations" << (u16 ? "" : " (no 16-bit cell)")
              << std::endl;
}

TEST_P(threads, one_endpoint)
{
    run(1);
}

TEST_P(threads, several_endpoints)
{
    run(3);
}

/* A counter is read by another thread, without progress, while one thread
 * posts and waits on it: it only grows, and ends at the exact count. */
TEST_P(threads, counter_read_while_posting)
{
    const uint64_t one = 1;
    std::atomic<bool> done{false};
    uint64_t last = 0, posted = 0;
    bool monotonic = true;

    add_endpoints(1);
    if (!cell_runs(FIATOMIC_FAMILY_BASE, FI_SUM, FI_UINT64)) {
        GTEST_SKIP() << "64-bit SUM not executed (forced strategy)";
    }

    std::thread reader([&]() {
        while (!done.load()) {
            uint64_t v = fiatomic_cntr_read(m_cntr);
            if (v < last) {
                monotonic = false;
            }
            last = v;
        }
    });
    for (unsigned i = 0; i < ops_per_thread(); ++i) {
        ucs_status_t status;
        while ((status = fiatomic_inject_atomic(m_eps[0].ep, &one, 1,
                                                m_conn->base(0) + OFF_BASE_SUM,
                                                m_eps[0].key, FI_UINT64,
                                                FI_SUM)) ==
               UCS_ERR_NO_RESOURCE) {
            ucp_worker_progress(m_conn->worker());
        }
        ASSERT_EQ(UCS_OK, status);
        ++posted;
    }
    EXPECT_EQ(0, fiatomic_cntr_wait(m_cntr, posted, (int)(BOUND_SEC * 1000)));
    done = true;
    reader.join();
    EXPECT_TRUE(monotonic);
    EXPECT_EQ(posted, fiatomic_cntr_read(m_cntr));
    EXPECT_EQ(UCS_OK, m_conn->wait(fiatomic_flush_nbx(m_conn->fia(), NULL)));
}

#define THREADS_INSTANTIATE(_tl, _mem, _strategy) \
    FIATOMIC_TEST_INSTANTIATE(threads, _tl, _mem, _strategy)
THREADS_INSTANTIATE(self, alloc, auto)
THREADS_INSTANTIATE(self, alloc, native)
THREADS_INSTANTIATE(self, alloc, cas)
THREADS_INSTANTIATE(self, alloc, direct)
THREADS_INSTANTIATE(self, alloc, target)
THREADS_INSTANTIATE(posix, alloc, auto)
THREADS_INSTANTIATE(posix, alloc, native)
THREADS_INSTANTIATE(posix, alloc, cas)
THREADS_INSTANTIATE(posix, alloc, direct)
THREADS_INSTANTIATE(posix, alloc, target)
THREADS_INSTANTIATE(tcp, user, auto)
THREADS_INSTANTIATE(tcp, user, cas)
THREADS_INSTANTIATE(tcp, user, target)

} // namespace
