/**
 * The provider tests' peer process (fiprov_peer.h): the test's side
 * (start, commands, stop) and the peer's side (peer_main). Messages on the
 * pipes: a command byte, a 64-bit length and that many bytes; replies a
 * 64-bit length and the bytes.
 */
#include "fiprov_peer.h"

#include <rdma/fi_atomic.h>
#include <rdma/fi_tagged.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

namespace fiprov_test {

namespace {

/* how long either side waits for the other */
const int pipe_timeout_ms = 60000;

/* the program key and offset a program-key peer registers with */
const uint64_t program_key    = 7;
const uint64_t program_offset = 4096;

bool io_full(int fd, void *buf, size_t len, bool write_side,
             int timeout_ms = pipe_timeout_ms)
{
    char *p = (char*)buf;
    struct pollfd pfd;

    while (len > 0) {
        pfd.fd     = fd;
        pfd.events = write_side ? POLLOUT : POLLIN;
        if (poll(&pfd, 1, timeout_ms) <= 0) {
            return false;
        }
        ssize_t n = write_side ? write(fd, p, len) : read(fd, p, len);
        if (n <= 0) {
            if ((n < 0) && (errno == EINTR)) {
                continue;
            }
            return false;
        }
        p   += n;
        len -= (size_t)n;
    }
    return true;
}

bool send_msg(int fd, const void *buf, uint64_t len)
{
    return io_full(fd, &len, sizeof(len), true) &&
           ((len == 0) || io_full(fd, (void*)buf, len, true));
}

bool recv_msg(int fd, std::vector<uint8_t> *out, int timeout_ms)
{
    uint64_t len;

    if (!io_full(fd, &len, sizeof(len), false, timeout_ms) ||
        (len > 16 * peer_region_len)) {
        return false;
    }
    out->resize(len);
    return (len == 0) || io_full(fd, out->data(), len, false);
}

} // namespace

void peer::start(const open_params &p)
{
    int to[2], from[2];
    char arg[64];

    ASSERT_EQ(0, pipe(to));
    ASSERT_EQ(0, pipe(from));
    snprintf(arg, sizeof(arg), "%d,%d,%d,%d", to[0], from[1], (int)p.progress,
             p.prov_keys);
    m_pid = fork();
    ASSERT_GE(m_pid, 0);
    if (m_pid == 0) {
        ::close(to[1]);
        ::close(from[0]);
        execl("/proc/self/exe", "test_fiprov", peer_flag, arg, (char*)NULL);
        _exit(127);
    }
    ::close(to[0]);
    ::close(from[1]);
    m_to   = to[1];
    m_from = from[0];

    std::vector<uint8_t> hello;
    ASSERT_TRUE(recv_msg(m_from, &hello, pipe_timeout_ms))
        << "the peer did not start";
    ASSERT_GT(hello.size(), 16u);
    memcpy(&key, hello.data(), 8);
    memcpy(&base, hello.data() + 8, 8);
    addr.assign(hello.begin() + 16, hello.end());
}

void peer::pause_start(uint64_t ms)
{
    char cmd = 'P';

    ASSERT_TRUE(io_full(m_to, &cmd, 1, true));
    ASSERT_TRUE(send_msg(m_to, &ms, sizeof(ms)));
}

bool peer::pause_wait()
{
    std::vector<uint8_t> reply;

    return recv_msg(m_from, &reply, pipe_timeout_ms);
}

void peer::command(char cmd, const void *buf, size_t len,
                   std::vector<uint8_t> *reply)
{
    ASSERT_TRUE(io_full(m_to, &cmd, 1, true));
    ASSERT_TRUE(send_msg(m_to, buf, len));
    ASSERT_TRUE(recv_msg(m_from, reply, pipe_timeout_ms))
        << "no reply from the peer to '" << cmd << "'";
}

void peer::set(size_t offset, const std::vector<uint8_t> &bytes)
{
    std::vector<uint8_t> msg(8 + bytes.size()), reply;
    uint64_t off = offset;

    memcpy(msg.data(), &off, 8);
    memcpy(msg.data() + 8, bytes.data(), bytes.size());
    command('S', msg.data(), msg.size(), &reply);
}

void peer::fetch_add_start(size_t offset, uint64_t n)
{
    uint64_t args[2] = {offset, n};
    char cmd         = 'A';

    ASSERT_TRUE(io_full(m_to, &cmd, 1, true));
    ASSERT_TRUE(send_msg(m_to, args, sizeof(args)));
}

std::vector<uint64_t> peer::fetch_add_wait()
{
    std::vector<uint8_t> reply;
    std::vector<uint64_t> fetched;

    if (recv_msg(m_from, &reply, pipe_timeout_ms)) {
        fetched.resize(reply.size() / 8);
        memcpy(fetched.data(), reply.data(), fetched.size() * 8);
    }
    return fetched;
}

std::vector<uint8_t> peer::get(size_t offset, size_t len)
{
    uint64_t args[2] = {offset, len};
    std::vector<uint8_t> reply;

    command('G', args, sizeof(args), &reply);
    return reply;
}

std::vector<uint64_t> peer::fetch_add(size_t offset, uint64_t n)
{
    uint64_t args[2] = {offset, n};
    std::vector<uint8_t> reply;
    std::vector<uint64_t> fetched;

    command('A', args, sizeof(args), &reply);
    fetched.resize(reply.size() / 8);
    memcpy(fetched.data(), reply.data(), fetched.size() * 8);
    return fetched;
}

void peer::leave_when(size_t offset, uint64_t value)
{
    uint64_t args[2] = {offset, value};
    char cmd         = 'W';

    ASSERT_TRUE(io_full(m_to, &cmd, 1, true));
    ASSERT_TRUE(send_msg(m_to, args, sizeof(args)));
}

void peer::messages_start(char cmd, uint64_t n, uint64_t size,
                          const std::vector<uint8_t> &to)
{
    std::vector<uint8_t> msg(16 + to.size());

    memcpy(msg.data(), &n, 8);
    memcpy(msg.data() + 8, &size, 8);
    memcpy(msg.data() + 16, to.data(), to.size());
    ASSERT_TRUE(io_full(m_to, &cmd, 1, true));
    ASSERT_TRUE(send_msg(m_to, msg.data(), msg.size()));
}

void peer::echo_start(uint64_t n, uint64_t size,
                      const std::vector<uint8_t> &to)
{
    messages_start('M', n, size, to);
}

void peer::tagged_echo_start(uint64_t n, uint64_t size,
                             const std::vector<uint8_t> &to)
{
    messages_start('T', n, size, to);
}

void peer::send_and_leave(uint64_t n, uint64_t size,
                          const std::vector<uint8_t> &to)
{
    messages_start('L', n, size, to);
}

void peer::stream_start(uint64_t n, uint64_t size, uint32_t seed,
                        bool tagged, const std::vector<uint8_t> &to)
{
    std::vector<uint8_t> msg(32 + to.size());
    uint64_t s = seed, t = tagged;
    char cmd   = 'D';

    memcpy(msg.data(), &n, 8);
    memcpy(msg.data() + 8, &size, 8);
    memcpy(msg.data() + 16, &s, 8);
    memcpy(msg.data() + 24, &t, 8);
    memcpy(msg.data() + 32, to.data(), to.size());
    ASSERT_TRUE(io_full(m_to, &cmd, 1, true));
    ASSERT_TRUE(send_msg(m_to, msg.data(), msg.size()));
}

int peer::echo_wait(struct fid_cntr *progress)
{
    std::vector<uint8_t> reply;
    uint64_t code;
    int i;

    for (i = 0; i < pipe_timeout_ms; ++i) {
        struct pollfd pfd = {m_from, POLLIN, 0};
        if (poll(&pfd, 1, 1) != 0) {
            break;
        }
        (void)fi_cntr_read(progress);
    }
    if (!recv_msg(m_from, &reply, pipe_timeout_ms) || (reply.size() != 8)) {
        return -1;
    }
    memcpy(&code, reply.data(), 8);
    return (int)code;
}

int peer::leave_wait()
{
    int status = -1;

    for (int i = 0; (i < pipe_timeout_ms) && (m_pid > 0); ++i) {
        if (waitpid(m_pid, &status, WNOHANG) == m_pid) {
            ::close(m_to);
            ::close(m_from);
            m_pid = -1;
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
        }
        usleep(1000);
    }
    return -1; /* stop() ends it */
}

uint64_t peer::replace_region()
{
    std::vector<uint8_t> reply;
    uint64_t k = 0;

    command('R', NULL, 0, &reply);
    if (reply.size() == 8) {
        memcpy(&k, reply.data(), 8);
    }
    return k;
}

int peer::stop()
{
    int status = -1;
    char cmd   = 'Q';

    if (m_pid <= 0) {
        return 0;
    }
    if (io_full(m_to, &cmd, 1, true)) {
        (void)send_msg(m_to, NULL, 0);
    }
    ::close(m_to);
    for (int i = 0; i < 30000; ++i) {
        if (waitpid(m_pid, &status, WNOHANG) == m_pid) {
            break;
        }
        usleep(1000);
        if (i == 29999) {
            kill(m_pid, SIGKILL);
            waitpid(m_pid, &status, 0);
        }
    }
    ::close(m_from);
    m_pid = -1;
    return (WIFEXITED(status)) ? WEXITSTATUS(status) : 128;
}

void peer::kill_now()
{
    int status;

    if (m_pid <= 0) {
        return;
    }
    kill(m_pid, SIGKILL);
    waitpid(m_pid, &status, 0);
    ::close(m_to);
    ::close(m_from);
    m_pid = -1;
}

/* ---- the two-process fixture --------------------------------------------- */

std::ostream &operator<<(std::ostream &os, const peer_param &p)
{
    return os << p.tls << "/"
              << ((p.progress == FI_PROGRESS_AUTO) ? "auto" : "manual")
              << "/" << (p.prov_keys ? "prov_keys" : "program_keys")
              << (p.share ? "/share" : "");
}

const std::vector<peer_param> peer_params = {
    {"posix", FI_PROGRESS_AUTO,   0},
    {"posix", FI_PROGRESS_MANUAL, 1},
    {"tcp",   FI_PROGRESS_AUTO,   1},
    {"tcp",   FI_PROGRESS_MANUAL, 0},
};

const std::vector<peer_param> peer_params_share = {
    {"posix", FI_PROGRESS_AUTO,   0, 1},
    {"posix", FI_PROGRESS_MANUAL, 1, 1},
};

const std::vector<peer_param> peer_params_sockaddr = {
    {"posix,self,tcp", FI_PROGRESS_AUTO,   0},
    {"posix,self,tcp", FI_PROGRESS_MANUAL, 1},
};

std::string peer_param_name(const testing::TestParamInfo<peer_param> &info)
{
    const char *tls = info.param.tls;

    return std::string((strcmp(tls, "tcp") == 0) ? "tcp" :
                       (strcmp(tls, "posix") == 0) ? "shm" :
                       (strcmp(tls, "posix,self,tcp") == 0) ? "shmtcp" :
                       (strcmp(tls, "posix,self") == 0) ? "shmself" : tls) +
           ((info.param.progress == FI_PROGRESS_AUTO) ? "_auto" : "_manual") +
           (info.param.prov_keys ? "_provkeys" : "_programkeys") +
           (info.param.share ? "_share" : "");
}

void peer_test::SetUp()
{
    const char *saved = getenv("UCX_TLS");
    open_params p;

    test_base::SetUp();
    m_had_tls = (saved != NULL);
    if (m_had_tls) {
        m_saved_tls = saved;
    }
    setenv("UCX_TLS", GetParam().tls, 1);
    saved       = getenv(share_env);
    m_had_share = (saved != NULL);
    if (m_had_share) {
        m_saved_share = saved;
    }
    /* the peer inherits it */
    if (GetParam().share) {
        setenv(share_env, "1", 1);
    } else {
        unsetenv(share_env);
    }
    p.progress  = GetParam().progress;
    p.prov_keys = GetParam().prov_keys;
    p.caps      = caps();
    p.cq_format = cq_format();
    m_peer.start(p);
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_EQ(0, m_o.open_domain(p));
    ASSERT_EQ(0, m_o.open_ep());
    ASSERT_EQ(1, fi_av_insert(m_o.av, m_peer.addr.data(), 1, &m_dest, 0,
                              NULL));
}

void peer_test::TearDown()
{
    m_o.close();
    EXPECT_EQ(0, m_peer.stop()) << "the peer's exit status";
    if (m_had_tls) {
        setenv("UCX_TLS", m_saved_tls.c_str(), 1);
    } else {
        unsetenv("UCX_TLS");
    }
    if (m_had_share) {
        setenv(share_env, m_saved_share.c_str(), 1);
    } else {
        unsetenv(share_env);
    }
    test_base::TearDown();
}

void peer_test::wait_complete(uint64_t reads, uint64_t writes, uint64_t kind,
                              std::multiset<void*> *contexts)
{
    struct fi_cq_data_entry e[16];

    ASSERT_EQ(0, fi_cntr_wait(m_o.wcntr, writes, peer_wait_ms))
        << "writes " << fi_cntr_read(m_o.wcntr) << "/" << writes
        << ", errors " << fi_cntr_readerr(m_o.wcntr);
    ASSERT_EQ(0, fi_cntr_wait(m_o.rcntr, reads, peer_wait_ms))
        << "reads " << fi_cntr_read(m_o.rcntr) << "/" << reads
        << ", errors " << fi_cntr_readerr(m_o.rcntr);
    for (;;) {
        ssize_t n = fi_cq_read(m_o.cq, e, 16);
        if (n == -FI_EAGAIN) {
            break;
        }
        ASSERT_GT(n, 0);
        for (ssize_t i = 0; i < n; ++i) {
            contexts->insert(e[i].op_context);
            EXPECT_TRUE(e[i].flags & kind);
        }
    }
}

/* ---- the peer's side ----------------------------------------------------- */

namespace {

struct peer_state {
    objects        o;
    void           *region = NULL;
    struct fid_mr  *mr     = NULL;
    uint64_t       base    = 0;
    fi_addr_t      self    = FI_ADDR_UNSPEC;
    int            generation = 0;
};

/* the region's remote access: FI_REMOTE_READ | FI_REMOTE_WRITE, or what
 * peer_access_env says (a test of access as registered sets it) */
uint64_t peer_remote_access()
{
    const char *value = getenv(peer_access_env);

    return (value != NULL) ? strtoull(value, NULL, 0) :
           (FI_REMOTE_READ | FI_REMOTE_WRITE);
}

int peer_register(peer_state *s)
{
    uint64_t requested = program_key + (uint64_t)s->generation;
    int ret;

    ret = fi_mr_reg(s->o.domain, s->region, peer_region_len,
                    peer_remote_access() | FI_READ | FI_WRITE,
                    s->o.params.prov_keys ? 0 : program_offset, requested, 0,
                    &s->mr, NULL);
    if (ret != 0) {
        return ret;
    }
    s->base = s->o.params.prov_keys ? (uint64_t)(uintptr_t)s->region :
              program_offset;
    return 0;
}

/* the peer's own fetch-adds on its region, through its own listener */
int peer_fetch_add(peer_state *s, uint64_t offset, uint64_t n,
                   std::vector<uint8_t> *out)
{
    uint64_t one  = 1;
    uint64_t base = fi_cntr_read(s->o.rcntr);
    std::vector<uint64_t> fetched(n);
    ssize_t ret;

    for (uint64_t i = 0; i < n; ++i) {
        do {
            ret = fi_fetch_atomic(s->o.ep, &one, 1, NULL, &fetched[i], NULL,
                                  s->self, s->base + offset,
                                  fi_mr_key(s->mr), FI_UINT64, FI_SUM, NULL);
        } while (ret == -FI_EAGAIN);
        if (ret != 0) {
            return (int)ret;
        }
    }
    ret = fi_cntr_wait(s->o.rcntr, base + n, pipe_timeout_ms);
    if (ret != 0) {
        return (int)ret;
    }
    out->resize(n * 8);
    memcpy(out->data(), fetched.data(), n * 8);
    return 0;
}

int64_t fiprov_now_ms()
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* the peer's next entry of kind FI_SEND or FI_RECV (its CQ also holds its
 * fetch-adds' entries, skipped): 0, or a failure code. The peer's CQ is
 * in the tagged format (the data format and the tag). */
int peer_wait_entry(peer_state *s, uint64_t kind,
                    struct fi_cq_tagged_entry *e)
{
    int64_t deadline = fiprov_now_ms() + pipe_timeout_ms;
    ssize_t n;

    for (;;) {
        n = fi_cq_read(s->o.cq, e, 1);
        if ((n == 1) && (e->flags & kind)) {
            return 0;
        }
        if ((n != 1) && (n != -FI_EAGAIN)) {
            return 20; /* an error entry, or a failed read */
        }
        if (fiprov_now_ms() > deadline) {
            return 21;
        }
    }
}

/* receive n messages and send each back to `to` */
int peer_echo(peer_state *s, uint64_t n, uint64_t size, const void *to,
              size_t to_len)
{
    std::vector<uint8_t> buf(size + 1);
    struct fi_cq_tagged_entry e;
    fi_addr_t dest;
    ssize_t ret;

    if (fi_av_insert(s->o.av, to, 1, &dest, 0, NULL) != 1) {
        return 22;
    }
    for (uint64_t i = 0; i < n; ++i) {
        if (fi_recv(s->o.ep, buf.data(), size, NULL, FI_ADDR_UNSPEC,
                    &buf) != 0) {
            return 23;
        }
        ret = peer_wait_entry(s, FI_RECV, &e);
        if (ret != 0) {
            return (int)ret;
        }
        if ((e.op_context != &buf) || !(e.flags & FI_MSG) ||
            (e.len > size)) {
            return 24;
        }
        if (e.flags & FI_REMOTE_CQ_DATA) {
            ret = fi_senddata(s->o.ep, buf.data(), e.len, NULL, e.data + 1,
                              dest, &e);
        } else {
            ret = fi_send(s->o.ep, buf.data(), e.len, NULL, dest, &e);
        }
        if (ret != 0) {
            return 25;
        }
        ret = peer_wait_entry(s, FI_SEND, &e);
        if (ret != 0) {
            return (int)ret;
        }
    }
    return 0;
}

/* receive n tagged messages (any tag) and send each back to `to` with its
 * tag */
int peer_tagged_echo(peer_state *s, uint64_t n, uint64_t size,
                     const void *to, size_t to_len)
{
    std::vector<uint8_t> buf(size + 1);
    struct fi_cq_tagged_entry e;
    fi_addr_t dest;
    ssize_t ret;

    if (fi_av_insert(s->o.av, to, 1, &dest, 0, NULL) != 1) {
        return 22;
    }
    for (uint64_t i = 0; i < n; ++i) {
        if (fi_trecv(s->o.ep, buf.data(), size, NULL, FI_ADDR_UNSPEC, 0,
                     ~0ull, &buf) != 0) {
            return 23;
        }
        ret = peer_wait_entry(s, FI_RECV, &e);
        if (ret != 0) {
            return (int)ret;
        }
        if ((e.op_context != &buf) || !(e.flags & FI_TAGGED) ||
            (e.flags & FI_MSG) || (e.len > size)) {
            return 24;
        }
        if (e.flags & FI_REMOTE_CQ_DATA) {
            ret = fi_tsenddata(s->o.ep, buf.data(), e.len, NULL, e.data + 1,
                               dest, e.tag, &e);
        } else {
            ret = fi_tsend(s->o.ep, buf.data(), e.len, NULL, dest, e.tag,
                           &e);
        }
        if (ret != 0) {
            return 25;
        }
        ret = peer_wait_entry(s, FI_SEND, &e);
        if (ret != 0) {
            return (int)ret;
        }
    }
    return 0;
}

/* send n messages to `to` and wait for their send completions */
int peer_send_all(peer_state *s, uint64_t n, uint64_t size, const void *to,
                  size_t to_len)
{
    std::vector<std::vector<uint8_t>> bufs(n);
    struct fi_cq_tagged_entry e;
    fi_addr_t dest;
    ssize_t ret;

    if (fi_av_insert(s->o.av, to, 1, &dest, 0, NULL) != 1) {
        return 22;
    }
    for (uint64_t i = 0; i < n; ++i) {
        bufs[i].resize(size);
        for (uint64_t k = 0; k < size; ++k) {
            bufs[i][k] = pattern_byte(i, k);
        }
        do {
            ret = fi_send(s->o.ep, bufs[i].data(), size, NULL, dest,
                          &bufs[i]);
        } while (ret == -FI_EAGAIN);
        if (ret != 0) {
            return 25;
        }
    }
    for (uint64_t i = 0; i < n; ++i) {
        ret = peer_wait_entry(s, FI_SEND, &e);
        if (ret != 0) {
            return (int)ret;
        }
    }
    return 0;
}

/* stream_start's messages to `to`, then its fence; their send completions
 * waited for */
int peer_stream(peer_state *s, uint64_t n, uint64_t size, uint32_t seed,
                bool tagged, const void *to, size_t to_len)
{
    std::vector<std::vector<uint8_t>> bufs(n + 1);
    struct fi_cq_tagged_entry e;
    fi_addr_t dest;
    ssize_t ret;

    if (fi_av_insert(s->o.av, to, 1, &dest, 0, NULL) != 1) {
        return 22;
    }
    for (uint64_t i = 0; i <= n; ++i) {
        uint64_t id = ((uint64_t)seed << 32) | i;

        bufs[i].resize((i < n) ? size : 8);
        memcpy(bufs[i].data(), &id, 8);
        for (uint64_t k = 8; k < bufs[i].size(); ++k) {
            bufs[i][k] = stream_byte(seed, i, k);
        }
        do {
            if (i == n) {
                ret = fi_tsend(s->o.ep, bufs[i].data(), 8, NULL, dest,
                               stream_fence, &bufs[i]);
            } else if (tagged) {
                ret = fi_tsend(s->o.ep, bufs[i].data(), size, NULL, dest,
                               stream_tag(i), &bufs[i]);
            } else {
                ret = fi_send(s->o.ep, bufs[i].data(), size, NULL, dest,
                              &bufs[i]);
            }
            if (ret == -FI_EAGAIN) {
                (void)fi_cntr_read(s->o.rcntr);
            }
        } while (ret == -FI_EAGAIN);
        if (ret != 0) {
            return 25;
        }
    }
    for (uint64_t i = 0; i <= n; ++i) {
        ret = peer_wait_entry(s, FI_SEND, &e);
        if (ret != 0) {
            return (int)ret;
        }
    }
    return 0;
}

int peer_serve(peer_state *s, int in, int out)
{
    std::vector<uint8_t> msg, reply;
    uint64_t args[2];
    char cmd;

    for (;;) {
        /* under manual progress the peer drives its domain while idle */
        for (;;) {
            struct pollfd pfd = {in, POLLIN, 0};
            int n = poll(&pfd, 1, 1);
            if (n > 0) {
                break;
            }
            if (n < 0 && errno != EINTR) {
                return 1;
            }
            (void)fi_cntr_read(s->o.rcntr);
        }
        if (!io_full(in, &cmd, 1, false) ||
            !recv_msg(in, &msg, pipe_timeout_ms)) {
            return 1; /* the test went away */
        }
        reply.clear();
        switch (cmd) {
        case 'S':
            memcpy(args, msg.data(), 8);
            if ((msg.size() < 8) ||
                (args[0] + msg.size() - 8 > peer_region_len)) {
                return 2;
            }
            memcpy((char*)s->region + args[0], msg.data() + 8,
                   msg.size() - 8);
            __atomic_thread_fence(__ATOMIC_SEQ_CST);
            break;
        case 'G':
            memcpy(args, msg.data(), 16);
            if (args[0] + args[1] > peer_region_len) {
                return 2;
            }
            __atomic_thread_fence(__ATOMIC_SEQ_CST);
            reply.assign((uint8_t*)s->region + args[0],
                         (uint8_t*)s->region + args[0] + args[1]);
            break;
        case 'A':
            memcpy(args, msg.data(), 16);
            if (peer_fetch_add(s, args[0], args[1], &reply) != 0) {
                reply.clear();
            }
            break;
        case 'R': {
            uint64_t k;
            if (fi_close(&s->mr->fid) != 0) {
                return 3;
            }
            s->mr = NULL;
            ++s->generation;
            if (peer_register(s) != 0) {
                return 3;
            }
            k = fi_mr_key(s->mr);
            reply.assign((uint8_t*)&k, (uint8_t*)&k + 8);
            break;
        }
        case 'W': {
            /* close and exit the moment the value is there: what the
             * transport still owes the initiator for it must go out */
            int64_t deadline;
            memcpy(args, msg.data(), 16);
            if (args[0] + 8 > peer_region_len) {
                return 2;
            }
            deadline = fiprov_now_ms() + pipe_timeout_ms;
            while (__atomic_load_n((uint64_t*)((char*)s->region + args[0]),
                                   __ATOMIC_ACQUIRE) != args[1]) {
                (void)fi_cntr_read(s->o.rcntr);
                if (fiprov_now_ms() > deadline) {
                    return 7;
                }
            }
            return 0;
        }
        case 'M':
        case 'T': {
            uint64_t code;
            memcpy(args, msg.data(), 16);
            if ((msg.size() <= 16) || (args[1] > ((uint64_t)16 << 20))) {
                return 2;
            }
            code = (uint64_t)((cmd == 'M') ?
                              peer_echo(s, args[0], args[1],
                                        msg.data() + 16, msg.size() - 16) :
                              peer_tagged_echo(s, args[0], args[1],
                                               msg.data() + 16,
                                               msg.size() - 16));
            reply.assign((uint8_t*)&code, (uint8_t*)&code + 8);
            break;
        }
        case 'D': {
            uint64_t code, a[4];
            if (msg.size() <= 32) {
                return 2;
            }
            memcpy(a, msg.data(), 32);
            if ((a[0] > 1024) || (a[1] < 8) || (a[1] > ((uint64_t)1 << 20))) {
                return 2;
            }
            code = (uint64_t)peer_stream(s, a[0], a[1], (uint32_t)a[2],
                                         a[3] != 0, msg.data() + 32,
                                         msg.size() - 32);
            reply.assign((uint8_t*)&code, (uint8_t*)&code + 8);
            break;
        }
        case 'L':
            /* the messages' sends completed: close and exit at once, as a
             * program that is done does */
            memcpy(args, msg.data(), 16);
            if ((msg.size() <= 16) || (args[1] > ((uint64_t)1 << 20)) ||
                (args[0] > 1024)) {
                return 2;
            }
            return peer_send_all(s, args[0], args[1], msg.data() + 16,
                                 msg.size() - 16);
        case 'P': {
            /* no progress at all meanwhile: only what needs no target
             * CPU (a peer's direct CPU atomics) completes */
            struct timespec ts;
            if (msg.size() != 8) {
                return 2;
            }
            memcpy(args, msg.data(), 8);
            if (args[0] > 60000) {
                return 2;
            }
            ts.tv_sec  = (time_t)(args[0] / 1000);
            ts.tv_nsec = (long)(args[0] % 1000) * 1000000;
            while ((nanosleep(&ts, &ts) != 0) && (errno == EINTR)) {
            }
            break;
        }
        case 'Q':
            return 0;
        default:
            return 2;
        }
        if (!send_msg(out, reply.data(), reply.size())) {
            return 1;
        }
    }
}

} // namespace

int peer_main(int argc, char **argv)
{
    int in, out, progress, prov_keys;
    peer_state s;
    open_params p;
    std::vector<uint8_t> hello(16 + 64);
    size_t addrlen = 64;
    uint64_t key;
    int ret;

    if ((argc < 3) ||
        (sscanf(argv[2], "%d,%d,%d,%d", &in, &out, &progress,
                &prov_keys) != 4)) {
        return 2;
    }
    p.progress  = (enum fi_progress)progress;
    p.prov_keys = prov_keys;
    /* messages too: a test's FI_MSG or FI_TAGGED endpoint talks to it */
    p.caps      = FI_ATOMIC | FI_RMA | FI_MSG | FI_TAGGED;
    p.cq_format = FI_CQ_FORMAT_TAGGED;
    if ((s.o.open_domain(p) != 0) || (s.o.open_ep() != 0)) {
        return 4;
    }
    if (posix_memalign(&s.region, 4096, peer_region_len) != 0) {
        return 4;
    }
    memset(s.region, 0, peer_region_len);
    if (peer_register(&s) != 0) {
        return 5;
    }
    if ((fi_getname(&s.o.ep->fid, hello.data() + 16, &addrlen) != 0) ||
        (fi_av_insert(s.o.av, hello.data() + 16, 1, &s.self, 0, NULL) != 1)) {
        return 6;
    }
    hello.resize(16 + addrlen);
    key = fi_mr_key(s.mr);
    memcpy(hello.data(), &key, 8);
    memcpy(hello.data() + 8, &s.base, 8);
    if (!send_msg(out, hello.data(), hello.size())) {
        return 1;
    }

    ret = peer_serve(&s, in, out);
    if (s.mr != NULL) {
        fi_close(&s.mr->fid);
    }
    s.o.close();
    free(s.region);
    return ret;
}

} // namespace fiprov_test
