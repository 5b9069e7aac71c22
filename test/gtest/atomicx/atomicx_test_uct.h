/**
 * atomicx guest tests: a small UCT harness (worker, MD, iface, registered
 * memory, loopback or cross-process endpoints) over the atomicx transport.
 */

#ifndef ATOMICX_TEST_UCT_H_
#define ATOMICX_TEST_UCT_H_

#include <uct/api/uct.h>
#include <uct/atomicx/atomicx_counters.h>
#include <ucs/async/async_fwd.h>

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>
#include <stdint.h>

namespace atomicx_test {

/* The device under test: $ATOMICX_TEST_DEV, default rxe0:1 */
std::string test_device();

/* Whether a missing device must fail rather than skip ($ATOMICX_GUEST) */
bool device_required();

/* A completion that records its status */
struct completion {
    uct_completion_t super;
    bool             done;
    ucs_status_t     status;

    completion();
    void reset(int count = 1);
};

/* Registered memory and its packed/unpacked rkey */
struct region {
    void               *buffer = nullptr;
    size_t             length  = 0;
    uct_mem_h          memh    = nullptr;
    std::vector<char>  packed_rkey;
};

class uct_env {
public:
    uct_env();
    ~uct_env();

    /* Opens the atomicx iface on dev; config: UCX_ATOMICX_* without prefix.
     * Returns false with *why set when the device does not exist. */
    bool open(const std::string &dev,
              const std::map<std::string, std::string> &config,
              std::string *why);
    void close();

    void reg(region &r, size_t length);
    void dereg(region &r);
    uct_rkey_bundle_t unpack(const std::vector<char> &packed) const;
    void release(uct_rkey_bundle_t &rkey) const;

    uct_ep_h create_ep();
    std::vector<char> ep_address(uct_ep_h ep) const;
    std::vector<char> dev_address() const;
    void connect(uct_ep_h ep, const std::vector<char> &dev_addr,
                 const std::vector<char> &ep_addr);
    /* Two endpoints of this iface connected to each other */
    void loopback_pair(uct_ep_h *a, uct_ep_h *b);

    unsigned progress();

    /* Progresses until cond() holds; false after a deadline (a hang is a
     * failure, never an endless test) */
    bool progress_until(const std::function<bool()> &cond,
                        double seconds = 120);

    /* Runs one op to completion and returns its status; fetched value in
     * *result (fetch ops). size 4 or 8; op UCT_ATOMIC_OP_CSWAP uses compare. */
    ucs_status_t run(uct_ep_h ep, uct_atomic_op_t op, unsigned size,
                     bool fetch, uint64_t value, uint64_t compare,
                     uint64_t remote_addr, uct_rkey_t rkey, uint64_t *result);

    /* Starts one op (no wait): UCS_OK/UCS_INPROGRESS/UCS_ERR_NO_RESOURCE/.. */
    ucs_status_t start(uct_ep_h ep, uct_atomic_op_t op, unsigned size,
                       bool fetch, uint64_t value, uint64_t compare,
                       uint64_t remote_addr, uct_rkey_t rkey, void *result,
                       uct_completion_t *comp);

    /* Flush ep (nullptr: iface) and wait; returns the flush status */
    ucs_status_t flush(uct_ep_h ep);

    void set_error_handler(uct_error_handler_t cb, void *arg);

    uct_iface_h        iface     = nullptr;
    uct_iface_attr_t   iface_attr;
    uct_component_h    component = nullptr;
    uct_md_h           md        = nullptr;

private:
    ucs_async_context_t *m_async  = nullptr;
    uct_worker_h         m_worker = nullptr;
    uct_component_h      *m_components = nullptr;
    uct_error_handler_t  m_err_cb  = nullptr;
    void                 *m_err_arg = nullptr;
};

/*
 * Fixture of the UCT tests: `env`, and after ATOMICX_TEST_OPEN_LOOPBACK a
 * loopback set-up on it: `mem` (64 registered bytes), two endpoints of the
 * iface connected to each other (`a`, `b`) and mem's unpacked rkey (`rkey`).
 * TearDown releases what was set up, also after a failed assertion; a test
 * that destroys `a` or `b` itself sets it to nullptr.
 */
class loopback_test : public ::testing::Test {
protected:
    void open_loopback();
    void TearDown() override;

    uct_env           env;
    region            mem;
    uct_ep_h          a = nullptr;
    uct_ep_h          b = nullptr;
    uct_rkey_bundle_t rkey;

private:
    bool              m_have_rkey = false;
};

/* Whole-buffer I/O over a pipe or socket; aborts the process on failure */
void write_all(int fd, const void *buf, size_t len);
void read_all(int fd, void *buf, size_t len);
void write_blob(int fd, const std::vector<char> &blob);
std::vector<char> read_blob(int fd);

} // namespace atomicx_test

/* In a gtest test: opens uct_env `_env` on the device under test with the
 * configuration given after it (fails unless this process registered
 * atomicx); skips, with the reason, when the device does not exist here,
 * fails instead when it must ($ATOMICX_GUEST) */
#define ATOMICX_TEST_OPEN_OR_SKIP(_env, ...) \
    do { \
        std::string _why; \
        ASSERT_EQ(1, uct_atomicx_is_registered()); \
        if (!(_env).open(atomicx_test::test_device(), __VA_ARGS__, &_why)) { \
            if (atomicx_test::device_required()) { \
                FAIL() << _why; \
            } \
            GTEST_SKIP() << _why; \
        } \
    } while (0)

/* In a loopback_test: opens `env` with the configuration given (see
 * ATOMICX_TEST_OPEN_OR_SKIP), then the loopback set-up */
#define ATOMICX_TEST_OPEN_LOOPBACK(...) \
    do { \
        ATOMICX_TEST_OPEN_OR_SKIP(env, __VA_ARGS__); \
        ASSERT_NO_FATAL_FAILURE(open_loopback()); \
    } while (0)

#endif
