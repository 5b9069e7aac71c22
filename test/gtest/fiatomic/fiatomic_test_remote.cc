/*
 * Peers of the fiatomic tests on another machine: the launcher and the relay
 * (see fiatomic_test_remote.h).
 */
#include "fiatomic_test_remote.h"

#include "fiatomic_test_common.h"
#include "test_serve.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace fiatomic_test {

namespace {

const int      ctrl_fd       = 3;
const uint64_t spawn_max     = 64 * 1024; /* a MSG_SPAWN's payload */
const uint32_t args_max      = 8;
const uint32_t envs_max      = 64;
const size_t   arg_len_max   = 64;
const size_t   env_len_max   = 4096;
const int      spawn_wait_ms = 30000;     /* for MSG_SPAWN after accept */

bool env_forwarded(const std::string &kv)
{
    return ((kv.compare(0, 4, "UCX_") == 0) ||
            (kv.compare(0, 9, "FIATOMIC_") == 0)) &&
           (kv.compare(0, 20, "FIATOMIC_TEST_REMOTE") != 0);
}

/* A variable the launcher accepts: UCX_* or FIATOMIC_*, name [A-Z0-9_]. */
bool env_valid(const std::string &kv)
{
    size_t eq = kv.find('=');

    if ((eq == std::string::npos) || (eq == 0) || !env_forwarded(kv) ||
        (kv.find('\0') != std::string::npos)) {
        return false;
    }
    for (size_t i = 0; i < eq; ++i) {
        char c = kv[i];
        if (!(((c >= 'A') && (c <= 'Z')) || ((c >= '0') && (c <= '9')) ||
              (c == '_'))) {
            return false;
        }
    }
    return true;
}

bool arg_valid(const std::string &arg)
{
    if (arg.empty() || (arg.size() > arg_len_max)) {
        return false;
    }
    for (char c : arg) {
        if ((c < '!') || (c > '~')) {
            return false;
        }
    }
    return true;
}

int write_raw(int fd, const void *data, size_t length)
{
    const char *p = static_cast<const char*>(data);

    while (length > 0) {
        ssize_t n = send(fd, p, length, MSG_NOSIGNAL);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        } else if (n <= 0) {
            return -1;
        }
        p      += n;
        length -= n;
    }
    return 0;
}

std::string self_exe()
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

    if (n <= 0) {
        return "";
    }
    exe[n] = '\0';
    return exe;
}

/* One connection: start the peer it asks for, report its exit. Runs in a
 * child of the launcher. */
int serve_one(int fd)
{
    std::vector<uint8_t> payload;
    std::vector<std::string> args, envs;
    std::string self = self_exe(), why;
    uint32_t type, n;
    int wstatus;
    pid_t pid;

    if (recv_msg(fd, &type, &payload, spawn_wait_ms, spawn_max) != 0) {
        fprintf(stderr, "fiatomic_test_peer serve: no spawn request\n");
        return 1;
    }
    bytes msg(payload);
    n = msg.get<uint32_t>();
    for (uint32_t i = 0; msg.ok() && (n <= args_max) && (i < n); ++i) {
        std::vector<uint8_t> b = msg.get_blob();
        args.push_back(std::string(b.begin(), b.end()));
        if (!arg_valid(args.back())) {
            why = "bad argument";
        }
    }
    if (n > args_max) {
        why = "too many arguments";
    }
    n = msg.get<uint32_t>();
    for (uint32_t i = 0; msg.ok() && (n <= envs_max) && (i < n); ++i) {
        std::vector<uint8_t> b = msg.get_blob();
        envs.push_back(std::string(b.begin(), b.end()));
        if ((b.size() > env_len_max) || !env_valid(envs.back())) {
            why = "bad environment variable";
        }
    }
    if (n > envs_max) {
        why = "too many environment variables";
    }
    if ((type != MSG_SPAWN) || !msg.ok()) {
        why = "malformed spawn request";
    } else if (why.empty() &&
               (args.empty() ||
                ((args[0] != "target") && (args[0] != "initiator")))) {
        why = "a peer is a target or an initiator";
    }
    if (why.empty() && self.empty()) {
        why = "cannot find my own executable";
    }
    if (!why.empty()) {
        fprintf(stderr, "fiatomic_test_peer serve: %s\n", why.c_str());
        send_msg(fd, MSG_ERROR, why.data(), why.size());
        return 1;
    }

    pid = fork();
    if (pid < 0) {
        why = std::string("fork: ") + strerror(errno);
        send_msg(fd, MSG_ERROR, why.data(), why.size());
        return 1;
    }
    if (pid == 0) {
        std::vector<char*> argv;
        if ((fd != ctrl_fd) && (dup2(fd, ctrl_fd) < 0)) {
            _exit(126);
        }
        for (std::string &kv : envs) {
            putenv(&kv[0]);
        }
        args.insert(args.begin(), self);
        for (std::string &a : args) {
            argv.push_back(&a[0]);
        }
        argv.push_back(NULL);
        execv(self.c_str(), argv.data());
        _exit(127);
    }

    while ((waitpid(pid, &wstatus, 0) < 0) && (errno == EINTR)) {
    }
    int32_t status = wstatus;
    send_msg(fd, MSG_PEER_EXIT, &status, sizeof(status));
    return 0;
}

} // namespace

int remote_serve(const char *port_str)
{
    return test_common::serve_forever("fiatomic_test_peer", port_str,
                                      serve_one);
}

int remote_relay(const char *host_port, int argc, char **argv)
{
    std::string hp(host_port), host, port;
    struct addrinfo hints = {}, *res = NULL;
    size_t colon = hp.rfind(':');
    int sock = -1, ret;
    bool local_open = true;
    bytes req;

    if ((colon == std::string::npos) || (argc < 1)) {
        fprintf(stderr, "fiatomic_test_peer remote: want HOST:PORT ROLE...\n");
        return 2;
    }
    host = hp.substr(0, colon);
    port = hp.substr(colon + 1);
    hints.ai_family   = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    ret = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
    if (ret != 0) {
        fprintf(stderr, "fiatomic_test_peer remote: %s: %s\n", host_port,
                gai_strerror(ret));
        return 1;
    }
    /* the launcher is up before the tests start: a few tries for a busy
     * accept queue only */
    for (int attempt = 0; attempt < 50; ++attempt) {
        sock = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if ((sock >= 0) &&
            (connect(sock, res->ai_addr, res->ai_addrlen) == 0)) {
            break;
        }
        if (sock >= 0) {
            close(sock);
            sock = -1;
        }
        usleep(100000);
    }
    freeaddrinfo(res);
    if (sock < 0) {
        fprintf(stderr, "fiatomic_test_peer remote: cannot connect to %s: "
                "%m\n", host_port);
        return 1;
    }

    req.put<uint32_t>(argc);
    for (int i = 0; i < argc; ++i) {
        req.put_blob(argv[i], strlen(argv[i]));
    }
    std::vector<std::string> envs;
    for (char **e = environ; *e != NULL; ++e) {
        if (env_forwarded(*e)) {
            envs.push_back(*e);
        }
    }
    req.put<uint32_t>(envs.size());
    for (const std::string &kv : envs) {
        req.put_blob(kv.data(), kv.size());
    }
    if (send_msg(sock, MSG_SPAWN, req.data().data(), req.data().size()) != 0) {
        fprintf(stderr, "fiatomic_test_peer remote: send: %m\n");
        return 1;
    }

    /* Test -> peer: bytes as they come. Peer -> test: whole messages, the
     * launcher's MSG_PEER_EXIT ends it. */
    for (;;) {
        struct pollfd pfd[2] = {{sock, POLLIN, 0},
                                {local_open ? ctrl_fd : -1, POLLIN, 0}};
        char buf[65536];

        ret = poll(pfd, 2, -1);
        if ((ret < 0) && (errno != EINTR)) {
            perror("fiatomic_test_peer remote: poll");
            return 1;
        } else if (ret <= 0) {
            continue;
        }
        if (pfd[1].revents != 0) {
            ssize_t n = read(ctrl_fd, buf, sizeof(buf));
            if ((n < 0) && (errno == EINTR)) {
                continue;
            }
            if ((n <= 0) || (write_raw(sock, buf, n) != 0)) {
                /* the test closed its end: so does the peer's channel */
                shutdown(sock, SHUT_WR);
                local_open = false;
            }
        }
        if (pfd[0].revents != 0) {
            std::vector<uint8_t> payload;
            uint32_t type;
            if (recv_msg(sock, &type, &payload, -1) != 0) {
                fprintf(stderr, "fiatomic_test_peer remote: %s closed the "
                        "connection without the peer's exit status\n",
                        host_port);
                return 1;
            }
            if (type == MSG_PEER_EXIT) {
                int32_t wstatus = 0;
                if (payload.size() != sizeof(wstatus)) {
                    return 1;
                }
                memcpy(&wstatus, payload.data(), sizeof(wstatus));
                if (WIFEXITED(wstatus)) {
                    return WEXITSTATUS(wstatus);
                }
                fprintf(stderr, "fiatomic_test_peer remote: the peer died "
                        "of signal %d\n", WTERMSIG(wstatus));
                return 128 + WTERMSIG(wstatus);
            }
            if (local_open) {
                send_msg(ctrl_fd, type, payload.data(), payload.size());
            }
        }
    }
}

} // namespace fiatomic_test
