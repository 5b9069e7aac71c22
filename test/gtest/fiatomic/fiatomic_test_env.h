/*
 * Test-side environment of the fiatomic suites: configurations (transport x
 * target memory x strategy), peer processes, targets whose memory the tests
 * read and write without the library, and initiator connections.
 */
#ifndef FIATOMIC_TEST_ENV_H_
#define FIATOMIC_TEST_ENV_H_

#include "fiatomic_test_common.h"
#include "fiatomic_ref.h"

#include <gtest/gtest.h>

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fiatomic_test {

typedef std::vector<std::pair<std::string, std::string>> kv_list;

/* ------------------------------------------------------------------------ */
/* Configurations */

struct config {
    std::string tl;       /* self, posix, sysv, tcp */
    bool        alloc;    /* target memory exposed with ..._FLAG_ALLOCATE */
    std::string strategy; /* auto, native, cas, direct, target, or "mixed"
                             for the multi-process tests */
    bool        am;       /* UCP contexts with UCP_FEATURE_AM (target-side
                             execution) on both sides */
    bool        safe = false; /* target memory exposed target-only
                                 (FIATOMIC_MEM_FLAG_TARGET_ONLY): mem token
                                 "safe" */

    std::string name() const; /* "posix_alloc_cas", "tcp_user_auto_noam" */
    bool        two_process() const { return tl != "self"; }
};

/** From instantiation tokens: strategy "auto_noam" = auto without AM. */
config make_config(const char *tl, const char *mem, const char *strategy);

/** Expand _X(tl, mem, strategy) for every configuration (names as in
 *  all_configs(), for INSTANTIATE_TEST_SUITE_P prefixes). */
#define FIATOMIC_TEST_FOR_STRATEGIES(_X, _tl, _mem) \
    _X(_tl, _mem, auto) _X(_tl, _mem, native) _X(_tl, _mem, cas) \
    _X(_tl, _mem, direct) _X(_tl, _mem, target) _X(_tl, _mem, auto_noam)
#define FIATOMIC_TEST_FOR_MEMS(_X, _tl) \
    FIATOMIC_TEST_FOR_STRATEGIES(_X, _tl, alloc) \
    FIATOMIC_TEST_FOR_STRATEGIES(_X, _tl, user)
#define FIATOMIC_TEST_FOR_CONFIGS(_X) \
    FIATOMIC_TEST_FOR_MEMS(_X, self) FIATOMIC_TEST_FOR_MEMS(_X, posix) \
    FIATOMIC_TEST_FOR_MEMS(_X, sysv) FIATOMIC_TEST_FOR_MEMS(_X, tcp)
/** Same, strategy auto only. */
#define FIATOMIC_TEST_FOR_AUTO_CONFIGS(_X) \
    _X(self, alloc, auto) _X(self, user, auto) \
    _X(posix, alloc, auto) _X(posix, user, auto) \
    _X(sysv, alloc, auto) _X(sysv, user, auto) \
    _X(tcp, alloc, auto) _X(tcp, user, auto)
#define FIATOMIC_TEST_CONFIG(_tl, _mem, _strategy) \
    (::fiatomic_test::make_config(#_tl, #_mem, #_strategy))

inline void PrintTo(const config &cfg, std::ostream *os)
{
    *os << cfg.name();
}

/** Every transport the suites use. */
const std::vector<std::string> &all_transports();
/** Strategies valid to force (plus auto). */
const std::vector<std::string> &all_strategies();

/** Every (transport, memory, strategy) combination. */
std::vector<config> all_configs();
/** One per (transport, memory), strategy auto. */
std::vector<config> auto_configs();

/** gtest name generator for config parameters. */
struct config_name {
    std::string operator()(const ::testing::TestParamInfo<config> &info) const
    {
        return info.param.name();
    }
};

/**
 * Whether UCX offers this transport here (UCP context and worker with
 * UCX_TLS=tl). Empty string when it does, else the reason.
 */
std::string transport_missing(const std::string &tl);

/* ------------------------------------------------------------------------ */
/* Cells and the expected support matrix */

struct cell {
    int family;
    int op;
    int datatype;

    std::string name() const; /* "fetch_sum_u32" */
};

/** fi_atomic(3)'s 414 meaningful cells (any element size). */
std::vector<cell> defined_cells();

/**
 * THE predicate for which element types the library supports now: up to 8
 * bytes. Wider types, when supported, change this function only.
 */
bool type_supported(int datatype);

/** One of the 57 cells UCP executes natively. */
bool native_cell(const cell &c);

/** Whether UCP's atomics in this configuration are a device's (the
 *  configuration's transport is mapped to atomicx). */
bool device_domain(const config &cfg);

/** Whether the UCX loaded at run time is 1.22 or newer. */
bool ucx_at_least_1_22();

/** Whether UCP executes atomics on endpoints with the peer error mode: not
 *  with UCX 1.22's protocols (v2, UCX_PROTO_ENABLE=y, its default); with
 *  its v1 protocols (UCX_PROTO_ENABLE=n) and with UCX 1.13.1 it does. Read
 *  from the environment, as the library and UCX read it. */
bool ucp_amo_on_peer_err_eps();

/** Whether UCP executes atomics on this configuration's endpoints: every
 *  two-process configuration has the peer error mode. */
bool ucp_amo_available(const config &cfg);

/** Whether connections of this configuration run with UCX_PROTO_ENABLE=n
 *  (set by connection::create for their lifetime when the environment does
 *  not set it): on UCX 1.22 the configurations that exist to exercise UCP's
 *  atomics (forced native or cas, auto without target-side execution) get
 *  the protocols that have them on peer-error-mode endpoints; the others
 *  run with UCX's default, and the peer_error_mode suite checks that UCP
 *  atomics are refused there, clearly. */
bool wants_proto_v1(const config &cfg);

/** UCX_PROTO_ENABLE=n while alive, for a configuration that wants_proto_v1
 *  and an environment that does not set it (peers spawned meanwhile inherit
 *  it). Declare it before the peers and connections it must outlive. */
class proto_env {
public:
    explicit proto_env(const config &cfg);
    ~proto_env();
    proto_env(const proto_env &) = delete;
    proto_env &operator=(const proto_env &) = delete;

private:
    bool m_set = false;
};

/** Whether the direct strategy can work for this configuration. */
bool direct_valid(const config &cfg);

/**
 * What a configuration must do with a cell: REQUIRED (query and call
 * succeed), FORBIDDEN (both refuse), OPTIONAL (the library may go either
 * way, e.g. to avoid a UCX bug; fiatomic_query_cell and the call must then
 * agree).
 */
enum expectation {
    FORBIDDEN = 0,
    REQUIRED  = 1,
    OPTIONAL  = 2
};

/** What `strategy` can do with `c` on `cfg`. */
expectation strategy_can(const config &cfg, const std::string &strategy,
                         const cell &c);

/** The expectation for the configuration's own strategy. */
expectation expect_cell(const config &cfg, const cell &c);
inline bool expect_supported(const config &cfg, const cell &c)
{
    return expect_cell(cfg, c) == REQUIRED;
}

fiatomic_strategy_t strategy_from_name(const std::string &name);

/* ------------------------------------------------------------------------ */
/* Processes */

class peer_process {
public:
    peer_process();
    ~peer_process(); /* SIGKILL if still running */

    /** posix_spawn fiatomic_test_peer with `args`; env_set overrides (or
     *  adds) environment variables. */
    bool spawn(const std::vector<std::string> &args, const kv_list &env_set,
               std::string *error);

    /** Send a message; collect its MSG_OK later with receive_ok(). */
    bool send(uint32_t type, const void *data, size_t length,
              std::string *error);
    bool receive_ok(std::vector<uint8_t> *reply, std::string *error,
                    int timeout_ms = 120000);

    /** Send a message and wait for MSG_OK (payload into *reply). */
    bool request(uint32_t type, const void *data, size_t length,
                 std::vector<uint8_t> *reply, std::string *error,
                 int timeout_ms = 120000);

    /** Wait for the target's MSG_HELLO. */
    bool wait_hello(target_info *info, std::string *error,
                    int timeout_ms = 60000);

    /** MSG_EXIT, then wait for the process; true if it exited with 0. */
    bool stop(std::string *error, int timeout_ms = 60000);

    /** SIGKILL and reap. */
    void kill_now();

    pid_t pid() const { return m_pid; }
    bool  running() const { return m_pid > 0; }

private:
    bool reap(int timeout_ms, int *wstatus);

    pid_t m_pid;
    int   m_fd;
};

std::string peer_path();

/** UCX_TLS for a configuration's transport name: the name itself, unless
 *  FIATOMIC_TEST_TLS_MAP="name=tls-list" maps it (e.g. tcp=atomicx,tcp). */
std::string ucx_tls(const std::string &tl);

/* Environment of a peer for a transport: UCX_TLS, quiet UCX, AM or not. */
kv_list peer_env(const std::string &tl, const std::string &strategy = "",
                 bool am = true);

/* ------------------------------------------------------------------------ */
/* Targets: their memory is checked through the control channel (or plain
 * memory access in the same process), never through the library. */

class target {
public:
    virtual ~target() {}
    virtual bool write(int region, uint64_t offset, const void *data,
                       size_t length, std::string *error) = 0;
    virtual bool read(int region, uint64_t offset, void *data,
                      size_t length, std::string *error) = 0;
    /** Stop / resume progress of the target's worker (no-op in process). */
    virtual bool pause(std::string *error) = 0;
    virtual bool resume(std::string *error) = 0;
    virtual bool remote() const = 0;

    const target_info &info() const { return m_info; }

protected:
    target_info m_info;
};

/** Default region sizes: region 0 holds count-limit tests (4097 x 8 B). */
enum {
    REGION0_LENGTH = 256 * 1024,
    REGION1_LENGTH = 16 * 1024
};

class remote_target : public target {
public:
    remote_target() {}
    ~remote_target();

    bool start(const std::string &tl, bool alloc, std::string *error,
               bool am = true, size_t len0 = REGION0_LENGTH,
               size_t len1 = REGION1_LENGTH, bool safe = false);
    bool stop(std::string *error);

    bool write(int region, uint64_t offset, const void *data, size_t length,
               std::string *error) override;
    bool read(int region, uint64_t offset, void *data, size_t length,
              std::string *error) override;
    bool pause(std::string *error) override;
    bool resume(std::string *error) override;
    bool remote() const override { return true; }

    peer_process &process() { return m_proc; }

private:
    peer_process m_proc;
};

/* ------------------------------------------------------------------------ */
/* Connections: an initiator (this process, through the library) bound to a
 * target (another process, or this one for self). */

class connection {
public:
    ~connection();

    /**
     * Create a connection. `ucx` are extra UCX settings of the initiator's
     * context; `params` go to fiatomic_create. Returns NULL with *skip set
     * when the environment lacks the transport, or NULL with *error set.
     */
    static std::unique_ptr<connection> create(const config &cfg,
                                              const kv_list &ucx,
                                              const fiatomic_params_t *params,
                                              std::string *skip,
                                              std::string *error,
                                              bool multi_thread = false);

    /** The cached connection for a configuration (default settings). */
    static connection *get(const config &cfg, std::string *skip,
                           std::string *error);
    static void drop_cached();

    const config &cfg() const { return m_cfg; }
    ucp_worker_h worker() const { return m_setup.worker; }
    fiatomic_h   fia() const { return m_setup.fia; }
    fiatomic_ep_h ep() const { return m_ep; }
    ucp_ep_h      ucp_ep() const { return m_ucp_ep; }
    uint64_t     key(int region) const { return m_key[region]; }
    uint64_t     base(int region) const { return m_tgt->info().base[region]; }
    uint64_t     length(int region) const
    {
        return m_tgt->info().length[region];
    }
    target       &tgt() { return *m_tgt; }
    remote_target *remote() { return m_remote; }
    ucs_status_t ep_status() const { return m_ep_status; }

    ucs_status_t wait(ucs_status_ptr_t p, double timeout_sec = 60.0)
    {
        return wait_request(m_setup.worker, p, timeout_sec);
    }
    ucs_status_t flush(double timeout_sec = 60.0);

    /** A second fiatomic endpoint over a second ucp_ep_h to the target. */
    bool create_second_ep(ucp_ep_h *ucp_ep, fiatomic_ep_h *ep,
                          std::string *error,
                          const fiatomic_ep_params_t *params = NULL);
    void destroy_second_ep(ucp_ep_h ucp_ep, fiatomic_ep_h ep);

    /** Tear down without talking to a peer that is gone. */
    void abandon_peer() { m_peer_gone = true; }

private:
    connection() {}
    static void ep_error_cb(void *arg, ucp_ep_h ep, ucs_status_t status);
    bool connect_ep(ucp_ep_h *ucp_ep, std::string *error);

    std::unique_ptr<proto_env> m_proto; /* declared first: destroyed last */
    config                    m_cfg;
    ucp_setup                 m_setup = {NULL, NULL, NULL};
    std::unique_ptr<target>   m_tgt;
    remote_target             *m_remote = NULL;
    fiatomic_mem_h            m_local_mem[FIATOMIC_TEST_REGIONS] = {};
    ucp_ep_h                  m_ucp_ep = NULL;
    fiatomic_ep_h             m_ep = NULL;
    uint64_t                  m_key[FIATOMIC_TEST_REGIONS] = {};
    bool                      m_have_key[FIATOMIC_TEST_REGIONS] = {};
    ucs_status_t              m_ep_status = UCS_OK;
    bool                      m_peer_gone = false;
    std::string               m_saved_strategy;
    bool                      m_had_strategy = false;
    bool                      m_strategy_set = false;
};

/**
 * Start `proc` as an initiator peer (fiatomic_test_peer initiator) with the
 * environment `env` and connect it to `tgt` (MSG_CONNECT with the target's
 * hello); it answers once its endpoint is up. False with *error set when
 * either step fails.
 */
bool start_initiator(peer_process *proc, const target &tgt,
                     const kv_list &env, std::string *error);

/** ASSERT-style helper to get a connection or skip. */
#define FIATOMIC_TEST_GET_CONNECTION(_conn, _cfg) \
    connection *_conn; \
    { \
        std::string _skip, _error; \
        _conn = connection::get(_cfg, &_skip, &_error); \
        if (!_skip.empty()) { \
            GTEST_SKIP() << _skip; \
        } \
        ASSERT_TRUE(_conn != NULL) << _error; \
    }

/**
 * Fixture of a suite parameterised by `config` over the cached connection of
 * its configuration (connection::get): SetUp() skips, with the reason, where
 * the configuration cannot run here, and fails where it could not connect;
 * once connected it calls set_up(), what a derived fixture prepares.
 */
class connection_test : public ::testing::TestWithParam<config> {
protected:
    void SetUp() override
    {
        std::string skip, error;

        m_conn = connection::get(GetParam(), &skip, &error);
        if (!skip.empty()) {
            GTEST_SKIP() << skip;
        }
        ASSERT_TRUE(m_conn != NULL) << error;
        set_up();
    }

    virtual void set_up() {}

    connection *m_conn = NULL;
};

/** One instantiation of a suite parameterised by `config`, named after the
 *  configuration (tcp_user_auto). */
#define FIATOMIC_TEST_INSTANTIATE(_suite, _tl, _mem, _strategy) \
    INSTANTIATE_TEST_SUITE_P(_tl##_##_mem##_##_strategy, _suite, \
                             ::testing::Values(FIATOMIC_TEST_CONFIG( \
                                     _tl, _mem, _strategy)), \
                             config_name());

/** A struct fi_msg_atomic of these vectors, with no descriptors, address
 *  or remote CQ data. */
inline struct fi_msg_atomic atomic_msg(const struct fi_ioc *iov,
                                       size_t iov_count,
                                       const struct fi_rma_ioc *rma_iov,
                                       size_t rma_iov_count,
                                       enum fi_datatype datatype,
                                       enum fi_op op, void *context = NULL)
{
    struct fi_msg_atomic msg;

    memset(&msg, 0, sizeof(msg));
    msg.msg_iov       = iov;
    msg.iov_count     = iov_count;
    msg.rma_iov       = rma_iov;
    msg.rma_iov_count = rma_iov_count;
    msg.datatype      = datatype;
    msg.op            = op;
    msg.context       = context;
    return msg;
}

/** The target bytes the small tests use: region 0 [0, 40 KiB), region 1
 *  whole. */
struct target_snapshot {
    std::vector<uint8_t> bytes[FIATOMIC_TEST_REGIONS];
};
bool take_snapshot(connection *conn, target_snapshot *snap, std::string *error);
/** Flush, read again, and report every difference (at most a few). */
void expect_unchanged(connection *conn, const target_snapshot &snap,
                      const std::string &what);

/** -FI_E* of an operation's immediate result (0 when NULL). */
int immediate_errno(ucs_status_ptr_t p);

/** Format one element for messages. */
std::string fmt(int datatype, const void *value);

} // namespace fiatomic_test

#endif
