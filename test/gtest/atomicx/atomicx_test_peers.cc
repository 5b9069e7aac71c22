/**
 * atomicx guest tests: peer processes of the UCT suite, here or on another
 * machine (atomicx_test_peers.h).
 */

#include "atomicx_test_peers.h"
#include "atomicx_test_uct.h"
#include "test_serve.h"

#include <chrono>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace atomicx_test {

int hammer_child(unsigned id, int to_parent, int from_parent)
{
    uct_env env;
    std::string why;

    if (!env.open(test_device(), {}, &why)) {
        return 10;
    }

    uct_ep_h ep = env.create_ep();
    write_blob(to_parent, env.dev_address());
    write_blob(to_parent, env.ep_address(ep));
    std::vector<char> dev_addr = read_blob(from_parent);
    std::vector<char> ep_addr  = read_blob(from_parent);
    std::vector<char> packed   = read_blob(from_parent);
    uint64_t base;
    read_all(from_parent, &base, sizeof(base));
    env.connect(ep, dev_addr, ep_addr);
    uct_rkey_bundle_t rkey = env.unpack(packed);

    /* Start together */
    char go;
    write_all(to_parent, "r", 1);
    read_all(from_parent, &go, 1);

    uint64_t counter = base + 8 * HAMMER_COUNTER;
    uint64_t swap    = base + 8 * HAMMER_SWAP;
    std::vector<uint64_t> fadd, swapped;
    uint32_t expected_hi = 0, successes = 0;

    for (unsigned i = 0; i < hammer_iters; ++i) {
        uint64_t r64 = 0;
        uint32_t r32 = 0, rs = 0, rc = 0;
        completion c[4];
        ucs_status_t s[4];

        /* four ops in flight at once, on two words */
        s[0] = env.start(ep, UCT_ATOMIC_OP_ADD, 8, true, 1, 0, counter,
                         rkey.rkey, &r64, &c[0].super);
        s[1] = env.start(ep, UCT_ATOMIC_OP_ADD, 4, true, 1, 0, counter,
                         rkey.rkey, &r32, &c[1].super);
        s[2] = env.start(ep, UCT_ATOMIC_OP_OR, 8, false,
                         1ull << (32 + id * 16 + (i % 16)), 0, counter,
                         rkey.rkey, nullptr, nullptr);
        s[3] = env.start(ep, UCT_ATOMIC_OP_SWAP, 4, true,
                         ((id + 1) << 24) | i, 0, swap, rkey.rkey, &rs,
                         &c[3].super);
        for (int k = 0; k < 4; ++k) {
            if ((s[k] != UCS_INPROGRESS) && (s[k] != UCS_OK)) {
                fprintf(stderr, "hammer %u: op %d: %s\n", id, k,
                        ucs_status_string(s[k]));
                return 11;
            }
        }
        if (!env.progress_until([&] {
                return c[0].done && c[1].done && c[3].done;
            })) {
            return 14;
        }
        fadd.push_back((uint32_t)r64);
        fadd.push_back(r32);
        swapped.push_back(rs);

        /* a CAS-based increment of the high half of the swap word */
        for (;;) {
            uint64_t res;
            if (env.run(ep, UCT_ATOMIC_OP_CSWAP, 4, true, expected_hi + 1,
                        expected_hi, swap + 4, rkey.rkey, &res) != UCS_OK) {
                return 12;
            }
            rc = (uint32_t)res;
            if (rc == expected_hi) {
                ++successes;
                expected_hi = rc + 1;
                break;
            }
            expected_hi = rc;
        }
    }

    if (env.flush(ep) != UCS_OK) {
        return 13;
    }

    uint32_t n = fadd.size();
    write_all(to_parent, &n, sizeof(n));
    write_all(to_parent, fadd.data(), n * sizeof(uint64_t));
    n = swapped.size();
    write_all(to_parent, &n, sizeof(n));
    write_all(to_parent, swapped.data(), n * sizeof(uint64_t));
    write_all(to_parent, &successes, sizeof(successes));
    read_all(from_parent, &go, 1); /* the target is done with us */

    env.release(rkey);
    uct_ep_destroy(ep);
    return 0;
}


int doomed_target(int to_parent, int from_parent)
{
    uct_env env;
    region mem;
    std::string why;

    if (!env.open(test_device(), {}, &why)) {
        return 10;
    }
    env.reg(mem, 64);
    uct_ep_h ep = env.create_ep();
    write_blob(to_parent, env.dev_address());
    write_blob(to_parent, env.ep_address(ep));
    write_blob(to_parent, mem.packed_rkey);
    uint64_t base = (uintptr_t)mem.buffer;
    write_all(to_parent, &base, sizeof(base));
    std::vector<char> dev_addr = read_blob(from_parent);
    std::vector<char> ep_addr  = read_blob(from_parent);
    env.connect(ep, dev_addr, ep_addr);
    write_all(to_parent, "c", 1);

    char die;
    read_all(from_parent, &die, 1);
    _exit(0); /* no cleanup: the kernel destroys the QP */
}

namespace {

const int peer_wait_ms  = 120000; /* a peer's end after the test is done */
const int peer_hello_ms = 30000;  /* the role, after accept */

/* Reads exactly len bytes within timeout_ms; false on EOF/error/timeout */
bool read_within(int fd, void *buf, size_t len, int timeout_ms)
{
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(timeout_ms);
    char *p       = static_cast<char*>(buf);

    while (len > 0) {
        int left = (int)std::chrono::duration_cast<std::chrono::milliseconds>(
                           deadline - std::chrono::steady_clock::now()).count();
        struct pollfd pfd = {fd, POLLIN, 0};
        if ((left <= 0) || (poll(&pfd, 1, left) == 0)) {
            return false;
        }
        ssize_t n = read(fd, p, len);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        p   += n;
        len -= n;
    }
    return true;
}

int run_role(uint32_t role, uint32_t id, int to, int from)
{
    switch (role) {
    case PEER_HAMMER:
        return hammer_child(id, to, from);
    case PEER_DOOMED_TARGET:
        return doomed_target(to, from);
    default:
        return 2;
    }
}

int connect_remote(const char *host_port, std::string *why)
{
    std::string hp(host_port);
    size_t colon = hp.rfind(':');
    struct addrinfo hints = {}, *res = nullptr;
    int fd, ret;

    if (colon == std::string::npos) {
        *why = "ATOMICX_TEST_REMOTE must be HOST:PORT, not " + hp;
        return -1;
    }
    hints.ai_family   = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    ret = getaddrinfo(hp.substr(0, colon).c_str(),
                      hp.substr(colon + 1).c_str(), &hints, &res);
    if (ret != 0) {
        *why = hp + ": " + gai_strerror(ret);
        return -1;
    }
    fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if ((fd >= 0) && (connect(fd, res->ai_addr, res->ai_addrlen) != 0)) {
        *why = "connect to the peer launcher at " + hp + ": " +
               strerror(errno);
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

/* One connection of the launcher: run the peer it asks for in a child,
 * then report the child's wait status. Runs in a child of the launcher. */
int serve_one(int fd)
{
    uint32_t hello[2];
    int wstatus;
    pid_t pid;

    if (!read_within(fd, hello, sizeof(hello), peer_hello_ms) ||
        ((hello[0] != PEER_HAMMER) && (hello[0] != PEER_DOOMED_TARGET)) ||
        (hello[1] > 64)) {
        fprintf(stderr, "atomicx_uct_peer: bad or missing peer request\n");
        return 1;
    }
    pid = fork();
    if (pid < 0) {
        perror("atomicx_uct_peer: fork");
        return 1;
    }
    if (pid == 0) {
        _exit(run_role(hello[0], hello[1], fd, fd));
    }
    while ((waitpid(pid, &wstatus, 0) < 0) && (errno == EINTR)) {
    }
    int32_t status = wstatus;
    write_all(fd, &status, sizeof(status));
    return 0;
}

} // namespace

bool peer_start(peer_role role, unsigned id, peer_proc *p, std::string *why)
{
    const char *remote = getenv("ATOMICX_TEST_REMOTE");

    if ((remote != nullptr) && (*remote != '\0')) {
        int fd = connect_remote(remote, why);
        if (fd < 0) {
            return false;
        }
        uint32_t hello[2] = {role, id};
        write_all(fd, hello, sizeof(hello));
        p->pid    = -1;
        p->to     = fd;
        p->from   = fd;
        p->remote = true;
        return true;
    }

    int p2c[2], c2p[2];
    if ((pipe(p2c) != 0) || (pipe(c2p) != 0)) {
        *why = std::string("pipe: ") + strerror(errno);
        return false;
    }
    pid_t pid = fork();
    if (pid < 0) {
        *why = std::string("fork: ") + strerror(errno);
        return false;
    }
    if (pid == 0) {
        ::close(p2c[1]);
        ::close(c2p[0]);
        _exit(run_role(role, id, c2p[1], p2c[0]));
    }
    ::close(p2c[0]);
    ::close(c2p[1]);
    p->pid    = pid;
    p->to     = p2c[1];
    p->from   = c2p[0];
    p->remote = false;
    return true;
}

int peer_wait(peer_proc *p)
{
    int wstatus = -1;

    if (p->remote) {
        int32_t status;
        if (read_within(p->from, &status, sizeof(status), peer_wait_ms)) {
            wstatus = status;
        }
    } else if (p->pid > 0) {
        auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(peer_wait_ms);
        pid_t ret;
        while (((ret = waitpid(p->pid, &wstatus, WNOHANG)) == 0) &&
               (std::chrono::steady_clock::now() < deadline)) {
            usleep(1000);
        }
        if (ret != p->pid) {
            kill(p->pid, SIGKILL);
            waitpid(p->pid, &wstatus, 0);
            wstatus = -1;
        }
    }
    if (p->to >= 0) {
        ::close(p->to);
    }
    if ((p->from >= 0) && (p->from != p->to)) {
        ::close(p->from);
    }
    p->to = p->from = -1;
    p->pid = -1;
    return ((wstatus != -1) && WIFEXITED(wstatus)) ? WEXITSTATUS(wstatus) :
                                                       -1;
}

int peer_serve(const char *port_str)
{
    /* each peer forks from a process without verbs resources */
    return test_common::serve_forever("atomicx_uct_peer", port_str,
                                      serve_one);
}

} // namespace atomicx_test
