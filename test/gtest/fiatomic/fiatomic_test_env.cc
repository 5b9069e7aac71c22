#include "fiatomic_test_env.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <sstream>

extern char **environ;

namespace fiatomic_test {

/* ------------------------------------------------------------------------ */
/* Configurations */

std::string config::name() const
{
    return tl + (safe ? "_safe_" : alloc ? "_alloc_" : "_user_") + strategy +
           (am ? "" : "_noam");
}

config make_config(const char *tl, const char *mem, const char *strategy)
{
    std::string s(strategy);
    bool am = true;

    if ((s.size() > 5) && (s.substr(s.size() - 5) == "_noam")) {
        s  = s.substr(0, s.size() - 5);
        am = false;
    }
    config cfg{tl, std::string(mem) == "alloc", s, am};

    cfg.safe = (std::string(mem) == "safe");
    return cfg;
}

const std::vector<std::string> &all_transports()
{
    static const std::vector<std::string> tls = {"self", "posix", "sysv",
                                                 "tcp"};
    return tls;
}

const std::vector<std::string> &all_strategies()
{
    static const std::vector<std::string> s = {"auto", "native", "cas",
                                               "direct", "target"};
    return s;
}

std::vector<config> all_configs()
{
    std::vector<config> v;

    for (const std::string &tl : all_transports()) {
        for (bool alloc : {true, false}) {
            for (const std::string &s : all_strategies()) {
                v.push_back({tl, alloc, s, true});
            }
            v.push_back({tl, alloc, "auto", false});
        }
    }
    return v;
}

std::vector<config> auto_configs()
{
    std::vector<config> v;

    for (const std::string &tl : all_transports()) {
        for (bool alloc : {true, false}) {
            v.push_back({tl, alloc, "auto", true});
        }
    }
    return v;
}

std::string transport_missing(const std::string &tl)
{
    static std::map<std::string, std::string> cache;
    auto it = cache.find(tl);
    ucp_config_t *config;
    ucp_params_t params;
    ucp_context_h context;
    ucp_worker_params_t wparams;
    ucp_worker_h worker;
    ucs_status_t status;
    std::string reason;

    if (it != cache.end()) {
        return it->second;
    }

    status = ucp_config_read(NULL, NULL, &config);
    if (status != UCS_OK) {
        return cache[tl] = std::string("ucp_config_read: ") +
                           ucs_status_string(status);
    }
    ucp_config_modify(config, "TLS", ucx_tls(tl).c_str());
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 |
                        UCP_FEATURE_AMO64;
    status = ucp_init(&params, config, &context);
    ucp_config_release(config);
    if (status != UCS_OK) {
        return cache[tl] = "UCX transport " + tl + " is not available here "
                           "(ucp_init: " + ucs_status_string(status) + ")";
    }
    memset(&wparams, 0, sizeof(wparams));
    status = ucp_worker_create(context, &wparams, &worker);
    if (status != UCS_OK) {
        reason = "UCX transport " + tl + " is not available here "
                 "(ucp_worker_create: " + ucs_status_string(status) + ")";
    } else {
        ucp_worker_destroy(worker);
    }
    ucp_cleanup(context);
    return cache[tl] = reason;
}

/* ------------------------------------------------------------------------ */
/* Cells */

std::string cell::name() const
{
    return std::string(fiatomic_ref_family_name(family)) + "_" +
           fiatomic_ref_op_short_name(op) + "_" +
           fiatomic_ref_datatype_short_name(datatype);
}

std::vector<cell> defined_cells()
{
    std::vector<cell> v;

    for (int f = 0; f < FIATOMIC_REF_FAMILY_LAST; ++f) {
        for (int op = 0; op < FIATOMIC_REF_OP_COUNT; ++op) {
            for (int dt = 0; dt < FIATOMIC_REF_DATATYPE_COUNT; ++dt) {
                if (fiatomic_ref_cell_defined(f, op, dt)) {
                    v.push_back({f, op, dt});
                }
            }
        }
    }
    return v;
}

bool type_supported(int datatype)
{
    return dt_size(datatype) > 0; /* every element size, 1..32 bytes */
}

bool native_cell(const cell &c)
{
    size_t size  = dt_size(c.datatype);
    bool int3264 = (fiatomic_ref_datatype_class(c.datatype) ==
                    FIATOMIC_REF_CLASS_INT) && ((size == 4) || (size == 8));
    bool bf      = (c.family == FIATOMIC_FAMILY_BASE) ||
                   (c.family == FIATOMIC_FAMILY_FETCH);

    if (!fiatomic_ref_cell_defined(c.family, c.op, c.datatype)) {
        return false;
    }
    switch (c.op) {
    case FI_SUM:
    case FI_BOR:
    case FI_BAND:
    case FI_BXOR:
        return bf && int3264;
    case FI_ATOMIC_WRITE:
        return bf && ((size == 4) || (size == 8));
    case FI_ATOMIC_READ:
        return (c.family == FIATOMIC_FAMILY_FETCH) &&
               ((size == 4) || (size == 8));
    case FI_CSWAP:
        return (c.family == FIATOMIC_FAMILY_COMPARE) && int3264;
    default:
        return false;
    }
}

bool device_domain(const config &cfg)
{
    /* FIATOMIC_TEST_TLS_MAP may put a device-atomics transport (atomicx)
     * under a configuration's name: UCP's atomics are then the NIC's */
    return ucx_tls(cfg.tl).find("atomicx") != std::string::npos;
}

bool direct_valid(const config &cfg)
{
    /* the memory must be mapped here and UCP's atomics on it must be CPU
     * atomics: same process (self), or shared memory that the peer's MD
     * allocated (posix/sysv can map only that) */
    return !cfg.safe &&
           ((cfg.tl == "self") ||
            (cfg.alloc && ((cfg.tl == "posix") || (cfg.tl == "sysv"))));
}

expectation strategy_can(const config &cfg, const std::string &strategy,
                         const cell &c)
{
    size_t size = dt_size(c.datatype);
    bool big    = size > 8;

    if (!fiatomic_ref_cell_defined(c.family, c.op, c.datatype) ||
        !type_supported(c.datatype)) {
        return FORBIDDEN;
    }
    if (cfg.safe) {
        /* target-only memory: the target's execution is the only way */
        return (((strategy == "target") || (strategy == "auto")) && cfg.am) ?
               REQUIRED : FORBIDDEN;
    }
    if (strategy == "native") {
        if (!native_cell(c)) {
            return FORBIDDEN;
        }
        /* UCX 1.13.1 computes fetching AND/OR/XOR wrongly where its atomics
         * are CPU atomics (self, posix, sysv), and a base-family call with
         * FI_DELIVERY_COMPLETE takes the fetching form: the library may
         * leave them out there */
        if (((c.op == FI_BOR) || (c.op == FI_BAND) || (c.op == FI_BXOR)) &&
            (cfg.tl != "tcp")) {
            return OPTIONAL;
        }
        return REQUIRED;
    } else if (strategy == "cas") {
        /* UCP has no compare-and-swap wider than 8 bytes */
        return big ? FORBIDDEN : REQUIRED;
    } else if (strategy == "direct") {
        if (!direct_valid(cfg)) {
            return FORBIDDEN;
        }
        /* 32-byte elements are guarded by a target-owned lock */
        return (size > 16) ? OPTIONAL : REQUIRED;
    } else if (strategy == "target") {
        /* the target's CPU atomics on 1..8-byte elements are atomic with
         * respect to UCP's own only when those are CPU atomics too (one
         * actor, fi_atomic(3)); wider elements are out of UCP's reach */
        return (cfg.am && (big || !device_domain(cfg))) ? REQUIRED : FORBIDDEN;
    } else if (strategy == "auto") {
        if (!big || cfg.am) {
            return REQUIRED;
        }
        return strategy_can(cfg, "direct", c);
    }
    return FORBIDDEN;
}

expectation expect_cell(const config &cfg, const cell &c)
{
    return strategy_can(cfg, cfg.strategy, c);
}

fiatomic_strategy_t strategy_from_name(const std::string &name)
{
    if (name == "native") {
        return FIATOMIC_STRATEGY_NATIVE;
    } else if (name == "cas") {
        return FIATOMIC_STRATEGY_CAS;
    } else if (name == "direct") {
        return FIATOMIC_STRATEGY_DIRECT;
    } else if (name == "target") {
        return FIATOMIC_STRATEGY_TARGET;
    }
    return FIATOMIC_STRATEGY_NONE;
}

/* ------------------------------------------------------------------------ */
/* Processes */

std::string peer_path()
{
    const char *env = getenv("FIATOMIC_TEST_PEER");
    char exe[PATH_MAX];
    ssize_t n;
    std::string dir;

    if ((env != NULL) && (*env != '\0')) {
        return env;
    }
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0) {
        return "./fiatomic_test_peer";
    }
    exe[n] = '\0';
    dir    = exe;
    dir    = dir.substr(0, dir.rfind('/'));
    /* a libtool build may run us from .libs/ */
    if ((dir.size() >= 6) && (dir.substr(dir.size() - 6) == "/.libs") &&
        (access((dir + "/fiatomic_test_peer").c_str(), X_OK) != 0)) {
        dir = dir.substr(0, dir.size() - 6);
    }
    return dir + "/fiatomic_test_peer";
}

std::string ucx_tls(const std::string &tl)
{
    const char *map = getenv("FIATOMIC_TEST_TLS_MAP");
    std::string m   = (map != NULL) ? map : "";
    size_t eq       = m.find('=');

    /* "tcp=atomicx,tcp": the tcp configurations run with UCX_TLS=atomicx,tcp
     * (the soft-RoCE guest runs suites in atomicx's device domain so) */
    if ((eq != std::string::npos) && (m.substr(0, eq) == tl)) {
        return m.substr(eq + 1);
    }
    return tl;
}

kv_list peer_env(const std::string &tl, const std::string &strategy, bool am)
{
    /* posix/sysv endpoints support UCP_ERR_HANDLING_MODE_PEER only with
     * their error handling enabled */
    return {{"UCX_TLS", ucx_tls(tl)},
            {"UCX_WARN_UNUSED_ENV_VARS", "n"},
            {"UCX_POSIX_ERROR_HANDLING", "y"},
            {"UCX_SYSV_ERROR_HANDLING", "y"},
            {"FIATOMIC_STRATEGY", strategy},
            {"FIATOMIC_TEST_AM", am ? "1" : "0"}};
}

/* Whether peers of this role run on another machine: $FIATOMIC_TEST_REMOTE
 * (HOST:PORT of `fiatomic_test_peer serve`) and the role listed in
 * $FIATOMIC_TEST_REMOTE_ROLES (default "target"); fiatomic_test_remote.h */
static bool remote_role(const std::string &role)
{
    const char *remote = getenv("FIATOMIC_TEST_REMOTE");
    const char *roles  = getenv("FIATOMIC_TEST_REMOTE_ROLES");
    std::stringstream list((roles != NULL) ? roles : "target");
    std::string r;

    if ((remote == NULL) || (*remote == '\0')) {
        return false;
    }
    while (std::getline(list, r, ',')) {
        if (r == role) {
            return true;
        }
    }
    return false;
}

peer_process::peer_process() : m_pid(-1), m_fd(-1)
{
}

peer_process::~peer_process()
{
    kill_now();
}

bool peer_process::spawn(const std::vector<std::string> &args,
                         const kv_list &env_set, std::string *error)
{
    std::vector<std::string> env_strings;
    std::vector<char*> argv, envp;
    std::set<std::string> keys;
    posix_spawn_file_actions_t fa;
    std::string path = peer_path();
    int sv[2], child_fd, ret;
    pid_t pid;

    for (const auto &kv : env_set) {
        keys.insert(kv.first);
    }
    for (char **e = environ; *e != NULL; ++e) {
        std::string s(*e);
        if (keys.count(s.substr(0, s.find('='))) == 0) {
            env_strings.push_back(s);
        }
    }
    for (const auto &kv : env_set) {
        if (!kv.second.empty()) {
            env_strings.push_back(kv.first + "=" + kv.second);
        }
    }
    for (std::string &s : env_strings) {
        envp.push_back(&s[0]);
    }
    envp.push_back(NULL);

    std::vector<std::string> args_copy = args;
    if (!args.empty() && remote_role(args[0])) {
        /* a relay to the peer started on the other machine */
        args_copy.insert(args_copy.begin(),
                         {"remote", getenv("FIATOMIC_TEST_REMOTE")});
    }
    args_copy.insert(args_copy.begin(), path);
    for (std::string &s : args_copy) {
        argv.push_back(&s[0]);
    }
    argv.push_back(NULL);

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        *error = std::string("socketpair: ") + strerror(errno);
        return false;
    }
    /* dup2() onto fd 3 clears close-on-exec only if the fd differs */
    child_fd = fcntl(sv[1], F_DUPFD_CLOEXEC, 10);
    close(sv[1]);
    if (child_fd < 0) {
        *error = std::string("fcntl: ") + strerror(errno);
        close(sv[0]);
        return false;
    }

    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, child_fd, 3);
    ret = posix_spawn(&pid, path.c_str(), &fa, NULL, argv.data(),
                      envp.data());
    posix_spawn_file_actions_destroy(&fa);
    close(child_fd);
    if (ret != 0) {
        *error = "posix_spawn(" + path + "): " + strerror(ret);
        close(sv[0]);
        return false;
    }
    m_pid = pid;
    m_fd  = sv[0];
    return true;
}

bool peer_process::send(uint32_t type, const void *data, size_t length,
                        std::string *error)
{
    if (m_fd < 0) {
        *error = "peer not running";
        return false;
    }
    if (send_msg(m_fd, type, data, length) != 0) {
        *error = "peer " + std::to_string(m_pid) + ": send failed";
        return false;
    }
    return true;
}

bool peer_process::receive_ok(std::vector<uint8_t> *reply, std::string *error,
                              int timeout_ms)
{
    std::vector<uint8_t> payload;
    uint32_t rtype;
    int ret;

    ret = recv_msg(m_fd, &rtype, &payload, timeout_ms);
    if (ret == -2) {
        *error = "peer " + std::to_string(m_pid) + ": no answer within " +
                 std::to_string(timeout_ms) + " ms";
        return false;
    } else if (ret != 0) {
        *error = "peer " + std::to_string(m_pid) + ": channel closed";
        return false;
    }
    if (rtype != MSG_OK) {
        *error = "peer " + std::to_string(m_pid) + ": " +
                 std::string(payload.begin(), payload.end());
        return false;
    }
    if (reply != NULL) {
        *reply = payload;
    }
    return true;
}

bool peer_process::request(uint32_t type, const void *data, size_t length,
                           std::vector<uint8_t> *reply, std::string *error,
                           int timeout_ms)
{
    return send(type, data, length, error) &&
           receive_ok(reply, error, timeout_ms);
}

bool peer_process::wait_hello(target_info *info, std::string *error,
                              int timeout_ms)
{
    std::vector<uint8_t> payload;
    uint32_t type;
    int ret;

    ret = recv_msg(m_fd, &type, &payload, timeout_ms);
    if (ret != 0) {
        *error = "target peer did not start (" +
                 std::string((ret == -2) ? "timeout" : "channel closed") +
                 ")";
        return false;
    }
    if (type != MSG_HELLO) {
        *error = "target peer: " + std::string(payload.begin(),
                                               payload.end());
        return false;
    }
    if (!info->unpack(payload)) {
        *error = "target peer: bad hello";
        return false;
    }
    return true;
}

bool peer_process::reap(int timeout_ms, int *wstatus)
{
    double deadline = now_sec() + timeout_ms / 1000.0;
    pid_t ret;

    for (;;) {
        ret = waitpid(m_pid, wstatus, WNOHANG);
        if (ret == m_pid) {
            m_pid = -1;
            return true;
        } else if ((ret < 0) && (errno != EINTR)) {
            m_pid = -1;
            return false;
        }
        if (now_sec() > deadline) {
            return false;
        }
        usleep(1000);
    }
}

bool peer_process::stop(std::string *error, int timeout_ms)
{
    int wstatus = 0;
    bool ok;

    if (m_pid <= 0) {
        return true;
    }
    ok = request(MSG_EXIT, NULL, 0, NULL, error, timeout_ms);
    if (!reap(timeout_ms, &wstatus)) {
        *error += " peer did not exit";
        kill_now();
        return false;
    }
    close(m_fd);
    m_fd = -1;
    if (!WIFEXITED(wstatus) || (WEXITSTATUS(wstatus) != 0)) {
        *error += " peer exit status " +
                  (WIFEXITED(wstatus) ?
                   std::to_string(WEXITSTATUS(wstatus)) :
                   "signal " + std::to_string(WTERMSIG(wstatus)));
        return false;
    }
    return ok;
}

void peer_process::kill_now()
{
    int wstatus;

    if (m_pid > 0) {
        kill(m_pid, SIGKILL);
        reap(30000, &wstatus);
    }
    if (m_fd >= 0) {
        close(m_fd);
        m_fd = -1;
    }
}

/* ------------------------------------------------------------------------ */
/* Targets */

remote_target::~remote_target()
{
    m_proc.kill_now();
}

bool remote_target::start(const std::string &tl, bool alloc,
                          std::string *error, bool am, size_t len0,
                          size_t len1, bool safe)
{
    if (!m_proc.spawn({"target", safe ? "safe" : alloc ? "alloc" : "user",
                       std::to_string(len0), std::to_string(len1)},
                      peer_env(tl, "", am), error)) {
        return false;
    }
    return m_proc.wait_hello(&m_info, error);
}

bool remote_target::stop(std::string *error)
{
    return m_proc.stop(error);
}

bool remote_target::write(int region, uint64_t offset, const void *data,
                          size_t length, std::string *error)
{
    bytes b;

    b.put<uint32_t>(region);
    b.put<uint64_t>(offset);
    b.put_blob(data, length);
    return m_proc.request(MSG_WRITE, b.data().data(), b.data().size(), NULL,
                          error);
}

bool remote_target::read(int region, uint64_t offset, void *data,
                         size_t length, std::string *error)
{
    std::vector<uint8_t> reply;
    bytes b;

    b.put<uint32_t>(region);
    b.put<uint64_t>(offset);
    b.put<uint64_t>(length);
    if (!m_proc.request(MSG_READ, b.data().data(), b.data().size(), &reply,
                        error)) {
        return false;
    }
    if (reply.size() != length) {
        *error = "short MSG_READ reply";
        return false;
    }
    memcpy(data, reply.data(), length);
    return true;
}

bool remote_target::pause(std::string *error)
{
    return m_proc.request(MSG_PAUSE, NULL, 0, NULL, error);
}

bool remote_target::resume(std::string *error)
{
    return m_proc.request(MSG_RESUME, NULL, 0, NULL, error);
}

/* Same-process target (self): plain memory accesses. */
class local_target : public target {
public:
    local_target() : m_user{NULL, NULL} {}
    ~local_target()
    {
        for (void *p : m_user) {
            free(p);
        }
    }

    bool write(int region, uint64_t offset, const void *data, size_t length,
               std::string *error) override
    {
        if (!check(region, offset, length, error)) {
            return false;
        }
        memcpy(reinterpret_cast<void*>(m_info.base[region] + offset), data,
               length);
        return true;
    }

    bool read(int region, uint64_t offset, void *data, size_t length,
              std::string *error) override
    {
        if (!check(region, offset, length, error)) {
            return false;
        }
        memcpy(data, reinterpret_cast<void*>(m_info.base[region] + offset),
               length);
        return true;
    }

    bool pause(std::string *error) override { return true; }
    bool resume(std::string *error) override { return true; }
    bool remote() const override { return false; }

    target_info &info_w() { return m_info; }
    void        *m_user[FIATOMIC_TEST_REGIONS];

private:
    bool check(int region, uint64_t offset, size_t length, std::string *error)
    {
        if ((region < 0) || (region >= FIATOMIC_TEST_REGIONS) ||
            (offset > m_info.length[region]) ||
            (length > m_info.length[region] - offset)) {
            *error = "local target: out of range";
            return false;
        }
        return true;
    }
};

/* ------------------------------------------------------------------------ */
/* Connections */

static std::unique_ptr<connection> cached_connection;
/* a configuration that failed to connect fails its other tests at once */
static std::map<std::string, std::string> failed_configs;

void connection::ep_error_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    static_cast<connection*>(arg)->m_ep_status = status;
}

bool connection::connect_ep(ucp_ep_h *ucp_ep, std::string *error)
{
    ucp_ep_params_t ep_params;
    ucs_status_t status;

    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep_params.address    = reinterpret_cast<const ucp_address_t*>(
                                   m_tgt->info().worker_address.data());
    if (m_cfg.two_process()) {
        ep_params.field_mask     |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                                    UCP_EP_PARAM_FIELD_ERR_HANDLER;
        ep_params.err_mode        = UCP_ERR_HANDLING_MODE_PEER;
        ep_params.err_handler.cb  = ep_error_cb;
        ep_params.err_handler.arg = this;
    }
    status = ucp_ep_create(m_setup.worker, &ep_params, ucp_ep);
    if (status != UCS_OK) {
        *error = std::string("ucp_ep_create: ") + ucs_status_string(status);
        return false;
    }
    return true;
}

std::unique_ptr<connection> connection::create(const config &cfg,
                                               const kv_list &ucx,
                                               const fiatomic_params_t *params,
                                               std::string *skip,
                                               std::string *error,
                                               bool multi_thread)
{
    std::unique_ptr<connection> conn(new connection());
    const char *old = getenv("FIATOMIC_STRATEGY");
    ucs_status_t status;

    conn->m_cfg = cfg;
    *skip       = transport_missing(cfg.tl);
    if (!skip->empty()) {
        return NULL;
    }

    if (cfg.two_process()) {
        conn->m_remote = new remote_target();
        conn->m_tgt.reset(conn->m_remote);
        if (!conn->m_remote->start(cfg.tl, cfg.alloc, error, cfg.am,
                                   REGION0_LENGTH, REGION1_LENGTH,
                                   cfg.safe)) {
            *error = cfg.name() + ": " + *error;
            return NULL;
        }
    } else {
        conn->m_tgt.reset(new local_target());
    }

    conn->m_had_strategy = (old != NULL);
    if (old != NULL) {
        conn->m_saved_strategy = old;
    }
    /* FIATOMIC_STRATEGY stays set for the whole life of the context */
    setenv("FIATOMIC_STRATEGY", cfg.strategy.c_str(), 1);
    conn->m_strategy_set = true;

    kv_list ucx_cfg = {{"TLS", ucx_tls(cfg.tl)}};
    /* a transport setting ucp_config_modify() does not reach: posix/sysv
     * endpoints support UCP_ERR_HANDLING_MODE_PEER only with it (set for
     * this transport only, so that UCX does not warn about unused ones) */
    if ((cfg.tl == "posix") || (cfg.tl == "sysv")) {
        std::string var = "UCX_" + std::string(cfg.tl == "posix" ? "POSIX" :
                                               "SYSV") + "_ERROR_HANDLING";
        setenv(var.c_str(), "y", 1);
    }
    ucx_cfg.insert(ucx_cfg.end(), ucx.begin(), ucx.end());
    status = ucp_setup_create(ucx_cfg, params, cfg.am, &conn->m_setup,
                              error, multi_thread);
    if (status != UCS_OK) {
        *error = cfg.name() + ": " + *error;
        return NULL;
    }

    if (!cfg.two_process()) {
        local_target *lt = static_cast<local_target*>(conn->m_tgt.get());
        size_t lengths[FIATOMIC_TEST_REGIONS] = {REGION0_LENGTH,
                                                 REGION1_LENGTH};
        ucp_address_t *address;
        size_t address_length;

        for (int i = 0; i < FIATOMIC_TEST_REGIONS; ++i) {
            fiatomic_mem_params_t mp;
            void *addr, *key;
            size_t length, key_size;

            memset(&mp, 0, sizeof(mp));
            mp.field_mask = FIATOMIC_MEM_PARAM_FIELD_LENGTH;
            mp.length     = lengths[i];
            if (cfg.safe) {
                mp.field_mask |= FIATOMIC_MEM_PARAM_FIELD_FLAGS;
                mp.flags       = FIATOMIC_MEM_FLAG_TARGET_ONLY;
            }
            if (cfg.alloc) {
                mp.field_mask |= FIATOMIC_MEM_PARAM_FIELD_FLAGS;
                mp.flags       = FIATOMIC_MEM_FLAG_ALLOCATE;
            } else {
                if (posix_memalign(&lt->m_user[i], 4096, lengths[i]) != 0) {
                    *error = "posix_memalign failed";
                    return NULL;
                }
                memset(lt->m_user[i], 0, lengths[i]);
                mp.field_mask |= FIATOMIC_MEM_PARAM_FIELD_ADDRESS;
                mp.address     = lt->m_user[i];
            }
            status = fiatomic_mem_expose(conn->m_setup.fia, &mp,
                                         &conn->m_local_mem[i]);
            if (status != UCS_OK) {
                *error = std::string("fiatomic_mem_expose: ") +
                         ucs_status_string(status);
                return NULL;
            }
            status = fiatomic_mem_query(conn->m_local_mem[i], &addr, &length);
            if ((status != UCS_OK) || (length < lengths[i]) ||
                (!cfg.alloc && (addr != lt->m_user[i]))) {
                *error = "fiatomic_mem_query: wrong answer";
                return NULL;
            }
            status = fiatomic_mem_pack_key(conn->m_local_mem[i], &key,
                                           &key_size);
            if (status != UCS_OK) {
                *error = std::string("fiatomic_mem_pack_key: ") +
                         ucs_status_string(status);
                return NULL;
            }
            lt->info_w().key[i].assign(static_cast<uint8_t*>(key),
                                       static_cast<uint8_t*>(key) + key_size);
            fiatomic_key_release(key);
            lt->info_w().base[i]   = (uintptr_t)addr;
            lt->info_w().length[i] = lengths[i];
        }
        status = ucp_worker_get_address(conn->m_setup.worker, &address,
                                        &address_length);
        if (status != UCS_OK) {
            *error = std::string("ucp_worker_get_address: ") +
                     ucs_status_string(status);
            return NULL;
        }
        lt->info_w().pid = getpid();
        lt->info_w().worker_address.assign(
                reinterpret_cast<uint8_t*>(address),
                reinterpret_cast<uint8_t*>(address) + address_length);
        ucp_worker_release_address(conn->m_setup.worker, address);
    }

    if (!conn->connect_ep(&conn->m_ucp_ep, error)) {
        return NULL;
    }
    status = fiatomic_ep_create(conn->m_setup.fia, conn->m_ucp_ep, NULL,
                                &conn->m_ep);
    if (status != UCS_OK) {
        *error = std::string("fiatomic_ep_create: ") +
                 ucs_status_string(status);
        return NULL;
    }
    for (int i = 0; i < FIATOMIC_TEST_REGIONS; ++i) {
        const std::vector<uint8_t> &k = conn->m_tgt->info().key[i];
        status = fiatomic_rkey_unpack(conn->m_ep, k.data(), k.size(),
                                      &conn->m_key[i]);
        if (status != UCS_OK) {
            *error = std::string("fiatomic_rkey_unpack: ") +
                     ucs_status_string(status);
            return NULL;
        }
        conn->m_have_key[i] = true;
    }
    return conn;
}

connection::~connection()
{
    std::string error;

    if (m_ep != NULL) {
        if (!m_peer_gone && (m_ep_status == UCS_OK)) {
            flush(30.0);
        }
        for (int i = 0; i < FIATOMIC_TEST_REGIONS; ++i) {
            if (m_have_key[i]) {
                fiatomic_rkey_release(m_ep, m_key[i]);
            }
        }
        fiatomic_ep_destroy(m_ep);
    }
    if (m_ucp_ep != NULL) {
        ucp_ep_close_blocking(m_setup.worker, m_ucp_ep,
                              m_peer_gone || (m_ep_status != UCS_OK));
    }
    for (int i = 0; i < FIATOMIC_TEST_REGIONS; ++i) {
        if (m_local_mem[i] != NULL) {
            fiatomic_mem_unexpose(m_local_mem[i]);
        }
    }
    ucp_setup_destroy(&m_setup);
    if (m_strategy_set && m_had_strategy) {
        setenv("FIATOMIC_STRATEGY", m_saved_strategy.c_str(), 1);
    } else if (m_strategy_set) {
        unsetenv("FIATOMIC_STRATEGY");
    }
    if ((m_remote != NULL) && !m_peer_gone) {
        if (!m_remote->stop(&error)) {
            ADD_FAILURE() << m_cfg.name() << ": target peer: " << error;
        }
    }
}

connection *connection::get(const config &cfg, std::string *skip,
                            std::string *error)
{
    if (cached_connection && (cached_connection->cfg().name() ==
                              cfg.name()) &&
        (cached_connection->ep_status() == UCS_OK)) {
        return cached_connection.get();
    }
    auto it = failed_configs.find(cfg.name());
    if (it != failed_configs.end()) {
        *error = "connecting failed before: " + it->second;
        return NULL;
    }
    cached_connection.reset();
    cached_connection = create(cfg, {}, NULL, skip, error);
    if (!cached_connection && skip->empty()) {
        failed_configs[cfg.name()] = *error;
    }
    return cached_connection.get();
}

void connection::drop_cached()
{
    cached_connection.reset();
}

ucs_status_t connection::flush(double timeout_sec)
{
    fiatomic_request_param_t param;

    memset(&param, 0, sizeof(param));
    return wait(fiatomic_ep_flush_nbx(m_ep, &param), timeout_sec);
}

bool connection::create_second_ep(ucp_ep_h *ucp_ep, fiatomic_ep_h *ep,
                                  std::string *error,
                                  const fiatomic_ep_params_t *params)
{
    ucs_status_t status;

    if (!connect_ep(ucp_ep, error)) {
        return false;
    }
    status = fiatomic_ep_create(m_setup.fia, *ucp_ep, params, ep);
    if (status != UCS_OK) {
        *error = std::string("fiatomic_ep_create: ") +
                 ucs_status_string(status);
        /* the peer is alive: a flushed close, never a forced one while
         * wireup may still be under way */
        ucp_ep_close_blocking(m_setup.worker, *ucp_ep, false);
        return false;
    }
    return true;
}

void connection::destroy_second_ep(ucp_ep_h ucp_ep, fiatomic_ep_h ep)
{
    fiatomic_ep_destroy(ep);
    ucp_ep_close_blocking(m_setup.worker, ucp_ep, false);
}

bool take_snapshot(connection *conn, target_snapshot *snap, std::string *error)
{
    for (int r = 0; r < FIATOMIC_TEST_REGIONS; ++r) {
        size_t len = std::min<size_t>(conn->length(r), 40 * 1024);
        snap->bytes[r].resize(len);
        if (!conn->tgt().read(r, 0, snap->bytes[r].data(), len, error)) {
            return false;
        }
    }
    return true;
}

void expect_unchanged(connection *conn, const target_snapshot &snap,
                      const std::string &what)
{
    target_snapshot now;
    std::string error;
    ucs_status_t status = conn->flush();
    int reported = 0;

    EXPECT_EQ(UCS_OK, status) << what << ": flush";
    ASSERT_TRUE(take_snapshot(conn, &now, &error)) << error;
    for (int r = 0; r < FIATOMIC_TEST_REGIONS; ++r) {
        for (size_t i = 0; i < snap.bytes[r].size(); ++i) {
            if ((snap.bytes[r][i] != now.bytes[r][i]) && (reported++ < 4)) {
                ADD_FAILURE() << what << ": something was sent: target "
                              << "region " << r << " byte " << i
                              << " changed from 0x" << std::hex
                              << (int)snap.bytes[r][i] << " to 0x"
                              << (int)now.bytes[r][i] << std::dec;
            }
        }
    }
}

int immediate_errno(ucs_status_ptr_t p)
{
    if (p == NULL) {
        return 0;
    } else if (UCS_PTR_IS_ERR(p)) {
        return fiatomic_status_to_fi_errno(UCS_PTR_STATUS(p));
    }
    return 1;
}

std::string fmt(int datatype, const void *value)
{
    char buf[256];

    fiatomic_ref_format(datatype, value, buf, sizeof(buf));
    return buf;
}

/* Tear the cached connection (and its peer) down before exit. */
class fiatomic_global_env : public ::testing::Environment {
public:

    void TearDown() override { connection::drop_cached(); }
};

static ::testing::Environment *const fiatomic_global_env_instance =
        ::testing::AddGlobalTestEnvironment(new fiatomic_global_env());

} // namespace fiatomic_test
