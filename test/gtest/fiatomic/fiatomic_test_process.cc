/*
 * Test environment, processes: the peer processes the suites start
 * (posix_spawn, or through a relay on another machine) and the targets in
 * them whose memory the tests read and write without the library
 * (fiatomic_test_env.h).
 */
#include "fiatomic_test_env.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sstream>

extern char **environ;

namespace fiatomic_test {

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
    posix_spawnattr_t attr;
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
    /* A process group of its own: tests stop peers (SIGSTOP), and a group
     * that job control orphans while a member is stopped gets SIGHUP and
     * SIGCONT from the kernel: the peer would resume, and UCX (SIGHUP is its
     * debug signal) would log at its most verbose level in every process
     * of the test. The peer still ends when the test does (fd 3 closes). */
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    ret = posix_spawn(&pid, path.c_str(), &fa, &attr, argv.data(),
                      envp.data());
    posix_spawnattr_destroy(&attr);
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

} // namespace fiatomic_test
