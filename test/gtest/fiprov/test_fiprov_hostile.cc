/**
 * A peer that skips the provider's protocol (fiprov_raw_peer.h) against a
 * provider domain in another process: active messages of every kind the
 * worker could be sent (ids UCX's table has no room for, every id the
 * provider uses with garbage headers and lengths), and UCP puts, gets and
 * atomics with forged rkeys into a registered region, the bytes around
 * it, a read-only region, a closed region, never-registered memory and
 * address 0x1000. The target process reports its memory before and after
 * (its own copy, read by itself): nothing may change, and the process must
 * stay alive and serve a libfabric peer afterwards.
 *
 * Each attack family has a positive control: the same raw peer, the same
 * attacks, against a plain UCP target of this test whose context asks RMA
 * and atomics (as the provider's once did) changes those bytes, so the
 * test can tell an attack that did nothing from one that did not run.
 *
 * The target is this binary again (fork and exec: a fresh UCX), made a
 * target before main() runs by the environment variable below.
 */
#include "fiprov_fixture.h"
#include "fiprov_peer.h"
#include "fiprov_raw_peer.h"

#include "test_ucx_log.h"

#include <rdma/fi_atomic.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_rma.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace fiprov_test {

namespace {

/* "kind,in,out,progress,prov_keys": this process is a hostile test's
 * target (kind: prov, a provider domain; ucp, a plain UCP worker) */
const char target_env[] = "FIPROV_HOSTILE_TARGET";

/* The target's memory: areas of this size, page aligned, side by side. */
const size_t area_len = 64 * 1024;
enum {
    AREA_GUARD_LO, /* never registered, just below the region */
    AREA_RW,       /* registered FI_REMOTE_READ | FI_REMOTE_WRITE */
    AREA_GUARD_HI, /* never registered, just above it */
    AREA_RO,       /* registered FI_REMOTE_READ only */
    AREA_CLOSED,   /* registered, then closed */
    AREA_NEVER,    /* never registered, apart */
    AREA_COUNT
};
const char *const area_names[] = {"guard below", "registered",
                                  "guard above", "read-only",
                                  "closed", "never registered"};

const int target_timeout_ms = 30000;

uint8_t area_byte(size_t i)
{
    return (uint8_t)(i * 131 + 7);
}

int64_t hostile_now_ms()
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool pipe_io(int fd, void *buf, size_t len, bool write_side)
{
    char *p = (char*)buf;
    struct pollfd pfd;

    while (len > 0) {
        pfd.fd     = fd;
        pfd.events = write_side ? POLLOUT : POLLIN;
        if (poll(&pfd, 1, target_timeout_ms) <= 0) {
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

bool pipe_send(int fd, const std::vector<uint8_t> &msg)
{
    uint64_t len = msg.size();

    return pipe_io(fd, &len, sizeof(len), true) &&
           ((len == 0) || pipe_io(fd, (void*)msg.data(), len, true));
}

bool pipe_recv(int fd, std::vector<uint8_t> *msg)
{
    uint64_t len;

    if (!pipe_io(fd, &len, sizeof(len), false) ||
        (len > 2 * AREA_COUNT * area_len)) {
        return false;
    }
    msg->resize(len);
    return (len == 0) || pipe_io(fd, msg->data(), len, false);
}

void put_u64(std::vector<uint8_t> *msg, uint64_t value)
{
    msg->insert(msg->end(), (uint8_t*)&value, (uint8_t*)&value + 8);
}

/* ---- the target's side ---------------------------------------------------- */

/* What a target tells the test: its address (fi_getname's, or a UCP
 * worker address), each area's virtual address, and for the registered,
 * read-only and closed regions the libfabric key and remote address (for a
 * plain UCP target: its rkey for all its memory, in `rkey`). */
struct target_hello {
    std::vector<uint8_t> addr;
    uint64_t             vaddr[AREA_COUNT] = {};
    uint64_t             key[AREA_COUNT]   = {};
    uint64_t             base[AREA_COUNT]  = {};
    std::vector<uint8_t> rkey;
};

void hello_pack(const target_hello &h, std::vector<uint8_t> *msg)
{
    put_u64(msg, h.addr.size());
    msg->insert(msg->end(), h.addr.begin(), h.addr.end());
    for (int i = 0; i < AREA_COUNT; ++i) {
        put_u64(msg, h.vaddr[i]);
        put_u64(msg, h.key[i]);
        put_u64(msg, h.base[i]);
    }
    put_u64(msg, h.rkey.size());
    msg->insert(msg->end(), h.rkey.begin(), h.rkey.end());
}

bool hello_unpack(const std::vector<uint8_t> &msg, target_hello *h)
{
    size_t pos = 0;
    uint64_t len;

    auto get = [&](uint64_t *v) {
        if (pos + 8 > msg.size()) {
            return false;
        }
        memcpy(v, &msg[pos], 8);
        pos += 8;
        return true;
    };
    if (!get(&len) || (pos + len > msg.size())) {
        return false;
    }
    h->addr.assign(msg.begin() + pos, msg.begin() + pos + len);
    pos += len;
    for (int i = 0; i < AREA_COUNT; ++i) {
        if (!get(&h->vaddr[i]) || !get(&h->key[i]) || !get(&h->base[i])) {
            return false;
        }
    }
    if (!get(&len) || (pos + len != msg.size())) {
        return false;
    }
    h->rkey.assign(msg.begin() + pos, msg.end());
    return true;
}

/* Serve the test's commands: 'G' (a copy of all areas), 'Q' (exit). The
 * domain or worker progresses meanwhile. */
template <typename progress_fn>
int target_serve(uint8_t *mem, int in, int out, progress_fn progress)
{
    std::vector<uint8_t> msg;
    uint8_t cmd;

    for (;;) {
        for (;;) {
            struct pollfd pfd = {in, POLLIN, 0};
            int n             = poll(&pfd, 1, 1);
            if (n > 0) {
                break;
            }
            if ((n < 0) && (errno != EINTR)) {
                return 1;
            }
            progress();
        }
        if (!pipe_io(in, &cmd, 1, false)) {
            return 1;
        }
        switch (cmd) {
        case 'G':
            __atomic_thread_fence(__ATOMIC_SEQ_CST);
            msg.assign(mem, mem + AREA_COUNT * area_len);
            if (!pipe_send(out, msg)) {
                return 1;
            }
            break;
        case 'Q':
            return 0;
        default:
            return 2;
        }
    }
}

int target_prov(uint8_t *mem, int in, int out, int progress, int prov_keys)
{
    objects o;
    open_params p;
    target_hello h;
    struct fid_mr *mr[AREA_COUNT] = {};
    std::vector<uint8_t> msg;
    size_t addrlen = 64;
    int ret;

    p.progress  = (enum fi_progress)progress;
    p.prov_keys = prov_keys;
    p.caps      = FI_ATOMIC | FI_RMA;
    if ((o.open_domain(p) != 0) || (o.open_ep() != 0)) {
        return 4;
    }
    const struct {
        int      area;
        uint64_t access;
    } regs[] = {
        {AREA_RW, FI_REMOTE_READ | FI_REMOTE_WRITE},
        {AREA_RO, FI_REMOTE_READ},
        {AREA_CLOSED, FI_REMOTE_READ | FI_REMOTE_WRITE}
    };
    for (const auto &r : regs) {
        uint8_t *start = mem + r.area * area_len;
        if (fi_mr_reg(o.domain, start, area_len, r.access, 0,
                      prov_keys ? 0 : 0x100 + r.area, 0, &mr[r.area],
                      NULL) != 0) {
            return 5;
        }
        h.key[r.area]  = fi_mr_key(mr[r.area]);
        h.base[r.area] = prov_keys ? (uint64_t)(uintptr_t)start : 0;
    }
    if (fi_close(&mr[AREA_CLOSED]->fid) != 0) {
        return 5;
    }
    mr[AREA_CLOSED] = NULL;
    for (int i = 0; i < AREA_COUNT; ++i) {
        h.vaddr[i] = (uint64_t)(uintptr_t)(mem + i * area_len);
    }
    h.addr.resize(addrlen);
    if (fi_getname(&o.ep->fid, h.addr.data(), &addrlen) != 0) {
        return 6;
    }
    h.addr.resize(addrlen);
    hello_pack(h, &msg);
    if (!pipe_send(out, msg)) {
        return 1;
    }
    ret = target_serve(mem, in, out, [&o]() {
        struct fi_cq_entry e;
        (void)fi_cq_read(o.cq, &e, 1);
    });
    for (auto m : mr) {
        if (m != NULL) {
            fi_close(&m->fid);
        }
    }
    o.close();
    return ret;
}

/* A plain UCP target: its context asks active messages, RMA and atomics
 * (as the provider's did); all its memory mapped, the rkey packed. */
int target_ucp(uint8_t *mem, int in, int out)
{
    ucp_worker_params_t worker_params = {};
    ucp_mem_map_params_t map          = {};
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_mem_h memh;
    ucp_address_t *addr;
    size_t addr_len;
    void *rkey;
    size_t rkey_len;
    target_hello h;
    std::vector<uint8_t> msg;
    int ret;

    worker_params.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    worker_params.thread_mode = UCS_THREAD_MODE_SINGLE;
    map.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                     UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    map.address    = mem;
    map.length     = AREA_COUNT * area_len;
    if ((raw_peer_ucp_init(UCP_FEATURE_AM | UCP_FEATURE_RMA |
                           UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64,
                           &context) != UCS_OK) ||
        (ucp_worker_create(context, &worker_params, &worker) != UCS_OK) ||
        (ucp_mem_map(context, &map, &memh) != UCS_OK) ||
        (ucp_rkey_pack(context, memh, &rkey, &rkey_len) != UCS_OK) ||
        (ucp_worker_get_address(worker, &addr, &addr_len) != UCS_OK)) {
        return 4;
    }
    h.addr.assign((uint8_t*)addr, (uint8_t*)addr + addr_len);
    h.rkey.assign((uint8_t*)rkey, (uint8_t*)rkey + rkey_len);
    ucp_worker_release_address(worker, addr);
    ucp_rkey_buffer_release(rkey);
    for (int i = 0; i < AREA_COUNT; ++i) {
        h.vaddr[i] = (uint64_t)(uintptr_t)(mem + i * area_len);
        h.base[i]  = h.vaddr[i];
    }
    hello_pack(h, &msg);
    if (!pipe_send(out, msg)) {
        return 1;
    }
    ret = target_serve(mem, in, out,
                       [worker]() { (void)ucp_worker_progress(worker); });
    ucp_mem_unmap(context, memh);
    ucp_worker_destroy(worker);
    ucp_cleanup(context);
    return ret;
}

int target_main(const char *spec)
{
    char kind[16];
    int in, out, progress, prov_keys;
    void *mem;

    if (sscanf(spec, "%15[a-z_],%d,%d,%d,%d", kind, &in, &out, &progress,
               &prov_keys) != 5) {
        return 2;
    }
    if (posix_memalign(&mem, 4096, AREA_COUNT * area_len) != 0) {
        return 4;
    }
    for (size_t i = 0; i < AREA_COUNT * area_len; ++i) {
        ((uint8_t*)mem)[i] = area_byte(i);
    }
    if (strcmp(kind, "prov") == 0) {
        return target_prov((uint8_t*)mem, in, out, progress, prov_keys);
    }
    if (strcmp(kind, "ucp") == 0) {
        return target_ucp((uint8_t*)mem, in, out);
    }
    return 2;
}

/* Before main(): a target does its work and exits. */
struct target_start {
    target_start()
    {
        const char *spec = getenv(target_env);

        if (spec != NULL) {
            std::string copy(spec);
            unsetenv(target_env);
            /* UCX logs to stdout: whole lines, all of them before exit */
            setvbuf(stdout, NULL, _IOLBF, 0);
            int ret = target_main(copy.c_str());
            fflush(stdout);
            fflush(stderr);
            _exit(ret);
        }
    }
} target_start_instance;

/* ---- the test's side -------------------------------------------------------- */

class target {
public:
    ~target() { stop(); }

    void start(const char *kind, int progress, int prov_keys)
    {
        int to[2], from[2];
        char spec[96];

        ASSERT_EQ(0, pipe2(to, O_CLOEXEC));
        ASSERT_EQ(0, pipe2(from, O_CLOEXEC));
        m_pid = fork();
        ASSERT_GE(m_pid, 0);
        if (m_pid == 0) {
            /* the target's ends stay open over exec */
            int in = dup(to[0]), out = dup(from[1]);
            snprintf(spec, sizeof(spec), "%s,%d,%d,%d,%d", kind, in, out,
                     progress, prov_keys);
            setenv(target_env, spec, 1);
            execl("/proc/self/exe", "test_fiprov-hostile-target",
                  (char*)NULL);
            _exit(127);
        }
        ::close(to[0]);
        ::close(from[1]);
        m_to   = to[1];
        m_from = from[0];
        std::vector<uint8_t> msg;
        ASSERT_TRUE(pipe_recv(m_from, &msg)) << "the target did not start";
        ASSERT_TRUE(hello_unpack(msg, &hello));
    }

    /** The target's copy of its memory (empty if it did not answer). */
    std::vector<uint8_t> snapshot()
    {
        std::vector<uint8_t> mem;
        uint8_t cmd = 'G';

        if (!pipe_io(m_to, &cmd, 1, true) || !pipe_recv(m_from, &mem)) {
            mem.clear();
        }
        return mem;
    }

    /** Whether the process is still running (not exited, not killed). */
    bool alive()
    {
        int status;

        if (m_pid <= 0) {
            return false;
        }
        pid_t r = waitpid(m_pid, &status, WNOHANG);
        if (r == m_pid) {
            m_pid         = -1;
            m_exit_status = status;
        }
        return r == 0;
    }

    /** How it ended, for messages. */
    std::string how_it_ended() const
    {
        if (WIFSIGNALED(m_exit_status)) {
            return std::string("killed by signal ") +
                   std::to_string(WTERMSIG(m_exit_status));
        }
        return "exited with " + std::to_string(WEXITSTATUS(m_exit_status));
    }

    /** Ask it to close and exit: its exit status (0 clean, -1 already
     *  gone or killed). */
    int stop()
    {
        uint8_t cmd = 'Q';
        int status, ret = -1;

        if (m_pid > 0) {
            (void)pipe_io(m_to, &cmd, 1, true);
            int64_t deadline = hostile_now_ms() + target_timeout_ms;
            pid_t r;
            while (((r = waitpid(m_pid, &status, WNOHANG)) == 0) &&
                   (hostile_now_ms() < deadline)) {
                usleep(1000);
            }
            if (r == 0) {
                kill(m_pid, SIGKILL);
                waitpid(m_pid, &status, 0);
            } else if (WIFEXITED(status)) {
                ret = WEXITSTATUS(status);
            }
            m_pid = -1;
        }
        if (m_to >= 0) {
            ::close(m_to);
            ::close(m_from);
            m_to = m_from = -1;
        }
        return ret;
    }

    target_hello hello;

private:
    pid_t m_pid         = -1;
    int   m_to          = -1;
    int   m_from        = -1;
    int   m_exit_status = 0;
};

/* The bytes of `now` that differ from the initial pattern, per area. */
std::vector<size_t> changed_per_area(const std::vector<uint8_t> &now)
{
    std::vector<size_t> changed(AREA_COUNT, 0);

    for (size_t i = 0; i < now.size(); ++i) {
        changed[i / area_len] += (now[i] != area_byte(i));
    }
    return changed;
}

/* A forged rkey byte string that names no memory domain (UCP's packed
 * form: a zero memory domain map, host memory); the raw peer's own packed
 * rkey over tcp names tcp's, whose rkeys are empty (anyone's will do). */
const std::vector<uint8_t> zero_rkey(32, 0);

/* The attack families on one address. */
enum attack_family { ATTACK_PUT, ATTACK_GET, ATTACK_AMO };

struct rma_attack {
    uint64_t addr;
    int      area; /* -1: address 0x1000 */
};

} // namespace

/* The same attacks on every area of a target, for the provider and for
 * the controls. */
class hostile_base : public test_base {
protected:
    void TearDown() override
    {
        m_raw.close();
        test_base::TearDown();
    }

    /* Every area's start, middle and last 64 bytes (an atomic attack
     * takes 24 of them), and 0x1000 when `low`. */
    std::vector<rma_attack> rma_targets(bool low)
    {
        std::vector<rma_attack> t;

        for (int a = 0; a < AREA_COUNT; ++a) {
            uint64_t v = m_target.hello.vaddr[a];
            t.push_back({v, a});
            t.push_back({v + area_len / 2, a});
            t.push_back({v + area_len - 64, a});
        }
        if (low) {
            t.push_back({0x1000, -1});
        }
        return t;
    }

    /* Whether a large operation at the target stays inside the target's
     * areas (the controls' target would otherwise be written past its
     * memory). */
    bool fits_large(const rma_attack &t) const
    {
        return (t.area >= 0) &&
               (t.addr + area_len / 4 <=
                m_target.hello.vaddr[AREA_COUNT - 1] + area_len);
    }

    /* Post the family's attacks, each with every rkey, without waiting
     * for completions (an operation the target refuses never completes),
     * then give them time. */
    void attack(attack_family family, const std::vector<rma_attack> &targets,
                const std::vector<std::vector<uint8_t>> &rkeys)
    {
        const int post = 0;

        for (const auto &rk : rkeys) {
            for (const auto &t : targets) {
                switch (family) {
                case ATTACK_PUT:
                    memset(m_raw.buffer(), 0xa5, m_raw.buffer_len());
                    (void)m_raw.put(t.addr, rk, 8, post);
                    if (fits_large(t)) {
                        /* large: UCT tcp's zero-copy PUT where offered */
                        (void)m_raw.put(t.addr, rk, area_len / 4, post);
                    }
                    break;
                case ATTACK_GET:
                    (void)m_raw.get(t.addr, rk, 8, post);
                    if (fits_large(t)) {
                        (void)m_raw.get(t.addr, rk, area_len / 4, post);
                    }
                    break;
                case ATTACK_AMO:
                    /* posted, never waited for: fetching ones that the
                     * target dropped made UCX 1.13.1 fault when their
                     * endpoint closed (purging them), in this process */
                    (void)m_raw.atomic(UCP_ATOMIC_OP_ADD, t.addr, rk, 8, 1,
                                       NULL, post);
                    (void)m_raw.atomic(UCP_ATOMIC_OP_XOR, t.addr + 8, rk,
                                       4, 0x5a5a5a5a, NULL, post);
                    (void)m_raw.atomic(UCP_ATOMIC_OP_OR, t.addr + 16, rk,
                                       8, 0xff00ff00ff00ff00ull, NULL, post);
                    break;
                }
            }
        }
        m_raw.progress_for(1000);
    }

    /* Shared memory with UCP's peer error mode needs the transport's
     * error handling (as the provider sets it) */
    void set_tls(const char *tls)
    {
        save_env("UCX_TLS", tls, &m_saved_tls);
        save_env("UCX_POSIX_ERROR_HANDLING",
                 strstr(tls, "posix") ? "y" : NULL, &m_saved_posix_eh);
    }

    void restore_tls()
    {
        restore_env("UCX_TLS", m_saved_tls);
        restore_env("UCX_POSIX_ERROR_HANDLING", m_saved_posix_eh);
    }

    static void save_env(const char *name, const char *value,
                         std::pair<bool, std::string> *saved)
    {
        const char *old = getenv(name);

        *saved = {old != NULL, (old != NULL) ? old : ""};
        if (value != NULL) {
            setenv(name, value, 1);
        } else {
            unsetenv(name);
        }
    }

    static void restore_env(const char *name,
                            const std::pair<bool, std::string> &saved)
    {
        if (saved.first) {
            setenv(name, saved.second.c_str(), 1);
        } else {
            unsetenv(name);
        }
    }

    std::pair<bool, std::string> m_saved_tls, m_saved_posix_eh;
    target   m_target;
    raw_peer m_raw;
};

/** Against a provider domain. */
class hostile : public hostile_base,
                public testing::WithParamInterface<peer_param> {
protected:
    void SetUp() override
    {
        test_base::SetUp();
        set_tls(GetParam().tls);
        save_env(share_env, GetParam().share ? "1" : NULL, &m_saved_share);
        /* a worker that drops what it has no handler for says so */
        test_common::ucx_log_allow("no registered callback for that id");
        m_target.start("prov", GetParam().progress, GetParam().prov_keys);
        ASSERT_FALSE(HasFatalFailure());
        m_before = m_target.snapshot();
        ASSERT_EQ(AREA_COUNT * area_len, m_before.size());
        ASSERT_EQ(UCS_OK, m_raw.open());
        ASSERT_EQ(UCS_OK, m_raw.connect_fi_addr(m_target.hello.addr));
    }

    void TearDown() override
    {
        m_raw.close();
        if (!IsSkipped()) { /* started */
            EXPECT_EQ(0, m_target.stop()) << "the target's exit status";
        }
        restore_tls();
        restore_env(share_env, m_saved_share);
        hostile_base::TearDown();
    }

    /* The target is alive, its memory as before, and a libfabric peer's
     * read of its registered region returns its bytes. */
    void check_target_intact()
    {
        ASSERT_TRUE(m_target.alive())
            << "the target " << m_target.how_it_ended();
        std::vector<uint8_t> now = m_target.snapshot();
        ASSERT_EQ(m_before.size(), now.size()) << "the target did not answer";
        std::vector<size_t> changed = changed_per_area(now);
        for (int a = 0; a < AREA_COUNT; ++a) {
            EXPECT_EQ(0u, changed[a])
                << changed[a] << " bytes of the " << area_names[a]
                << " area changed";
        }
        m_raw.disconnect();

        objects o;
        open_params p;
        fi_addr_t dest;
        std::vector<uint8_t> got(64, 0);
        p.progress  = GetParam().progress;
        p.prov_keys = GetParam().prov_keys;
        p.caps      = FI_ATOMIC | FI_RMA;
        ASSERT_EQ(0, o.open_domain(p));
        ASSERT_EQ(0, o.open_ep());
        ASSERT_EQ(1, fi_av_insert(o.av, m_target.hello.addr.data(), 1, &dest,
                                  0, NULL));
        ASSERT_EQ(0, fi_read(o.ep, got.data(), got.size(), NULL, dest,
                             m_target.hello.base[AREA_RW] + 64,
                             m_target.hello.key[AREA_RW], NULL));
        ASSERT_EQ(0, fi_cntr_wait(o.rcntr, 1, peer_wait_ms))
            << "the libfabric read did not complete; errors "
            << fi_cntr_readerr(o.rcntr);
        for (size_t i = 0; i < got.size(); ++i) {
            ASSERT_EQ(area_byte(AREA_RW * area_len + 64 + i), got[i])
                << "byte " << i;
        }
    }

    std::vector<uint8_t> m_before;
    std::pair<bool, std::string> m_saved_share;
};

/* UCP's table of handlers has no entry for these (or an uninitialised
 * one): UCX 1.13.1 read the entry before checking the id */
TEST_P(hostile, am_ids_outside_the_table)
{
    const unsigned ids[] = {0, 1, 2, 3, 4, 1000, 1007, 14953, 14954, 32767,
                            32768, 65534, 65535};

    for (unsigned id : ids) {
        for (bool reply : {false, true}) {
            EXPECT_EQ(UCS_OK, m_raw.am_send(id, {}, {}, reply)) << id;
            EXPECT_EQ(UCS_OK, m_raw.am_send(id, {1, 2, 3}, {4, 5}, reply))
                << id;
        }
        m_raw.progress_for(20);
    }
    m_raw.progress_for(300);
    check_target_intact();
}

/* Every id the provider and libfiatomic use, with garbage headers and
 * data of many lengths (eager and rendezvous) */
TEST_P(hostile, am_provider_ids_garbage)
{
    const size_t header_lens[] = {0, 1, 4, 7, 8, 16, 24, 32, 64, 200};
    const size_t data_lens[]   = {0, 1, 8, 24, 4096, 70000};
    unsigned seed              = 12345;

    for (unsigned id = 1008; id <= 1022; ++id) {
        for (size_t hl : header_lens) {
            for (size_t dl : data_lens) {
                std::vector<uint8_t> header(hl), data(dl);
                for (auto &b : header) {
                    b = (uint8_t)rand_r(&seed);
                }
                for (auto &b : data) {
                    b = (uint8_t)rand_r(&seed);
                }
                bool reply = ((hl + dl + id) % 2) != 0;
                /* a rendezvous nobody takes may never complete here */
                (void)m_raw.am_send(id, header, data, reply, 300);
                if (m_raw.ep_failed()) {
                    /* the target may drop a connection that sent
                     * nonsense: a new one goes on */
                    m_raw.disconnect();
                    ASSERT_EQ(UCS_OK,
                              m_raw.connect_fi_addr(m_target.hello.addr));
                }
            }
            m_raw.progress_for(2);
        }
    }
    m_raw.progress_for(300);
    check_target_intact();
}

/** The RMA and atomic families, over tcp: a raw peer's puts, gets and
 *  atomics over shared memory are its own loads and stores into segments
 *  it attached (the target is not asked; a forged key made the peer
 *  itself fault), so only a transport that carries them to the target's
 *  UCP, tcp, is an attack on it. */
class hostile_rma : public hostile {
};

TEST_P(hostile_rma, rma_put)
{
    attack(ATTACK_PUT, rma_targets(true), {m_raw.own_rkey(), zero_rkey});
    check_target_intact();
}

TEST_P(hostile_rma, rma_get)
{
    std::vector<uint8_t> pattern(m_raw.buffer_len(), 0xc3);

    memcpy(m_raw.buffer(), pattern.data(), pattern.size());
    attack(ATTACK_GET, rma_targets(true), {m_raw.own_rkey(), zero_rkey});
    /* nothing of the target's came back */
    EXPECT_EQ(0, memcmp(m_raw.buffer(), pattern.data(), pattern.size()))
        << "a get returned the target's bytes";
    check_target_intact();
}

/* UCP 1.22 sends no software atomic to a tcp peer on this host: its
 * ucp_atomic_op_nbx finds no protocol ("cannot find remote protocol ...
 * amo_post") and nothing leaves the attacker, so the attack path does not
 * exist there to be tried (nor its control to succeed). */
#define SKIP_WITHOUT_UCP_SOFTWARE_ATOMICS() \
    do { \
        unsigned _major, _minor, _release; \
        ucp_get_version(&_major, &_minor, &_release); \
        if (UCP_VERSION(_major, _minor) >= UCP_VERSION(1, 22)) { \
            GTEST_SKIP() << "UCX " << _major << "." << _minor \
                         << " has no software atomics over tcp to try"; \
        } \
    } while (0)

TEST_P(hostile_rma, rma_atomics)
{
    SKIP_WITHOUT_UCP_SOFTWARE_ATOMICS();
    attack(ATTACK_AMO, rma_targets(true), {m_raw.own_rkey(), zero_rkey});
    check_target_intact();
}

/** The domain's listener, over tcp: bound to the address its endpoints
 *  publish, not to every interface. */
class hostile_listener : public hostile {
};

TEST_P(hostile_listener, bound_to_the_published_address_only)
{
    const std::vector<uint8_t> &a = m_target.hello.addr;
    ASSERT_EQ(4, a[1]) << "an IPv4 listener address";
    unsigned port = ((unsigned)a[2] << 8) | a[3];
    uint32_t ipv4 = ((uint32_t)a[4] << 24) | ((uint32_t)a[5] << 16) |
                    ((uint32_t)a[6] << 8) | a[7];
    FILE *f       = fopen("/proc/net/tcp", "r");
    ASSERT_NE(nullptr, f);
    char line[512];
    unsigned listening = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        unsigned local_ip, local_port, state;
        /* "sl: local(ip:port, hex, ip in memory order) remote state" */
        if (sscanf(line, " %*u: %8x:%4x %*8x:%*4x %2x", &local_ip,
                   &local_port, &state) != 3) {
            continue;
        }
        if ((state != 0x0a) || (local_port != port)) {
            continue; /* 0x0a: listening */
        }
        ++listening;
        EXPECT_EQ(ipv4, ntohl(local_ip))
            << "the listener on port " << port << " is bound to "
            << std::hex << ntohl(local_ip);
    }
    fclose(f);
    EXPECT_EQ(1u, listening) << "listening sockets on port " << port;
    check_target_intact();
}

const std::vector<peer_param> hostile_params = {
    {"tcp",   FI_PROGRESS_AUTO,   0},
    {"tcp",   FI_PROGRESS_MANUAL, 1},
    {"posix", FI_PROGRESS_AUTO,   1},
    {"posix", FI_PROGRESS_MANUAL, 0},
    {"posix", FI_PROGRESS_AUTO,   0, 1},
    {"posix", FI_PROGRESS_MANUAL, 1, 1},
};

INSTANTIATE_TEST_SUITE_P(hostile, hostile, testing::ValuesIn(hostile_params),
                         peer_param_name);

const std::vector<peer_param> hostile_params_tcp = {
    {"tcp",   FI_PROGRESS_AUTO,   0},
    {"tcp",   FI_PROGRESS_MANUAL, 1},
};

INSTANTIATE_TEST_SUITE_P(hostile, hostile_listener,
                         testing::ValuesIn(hostile_params_tcp),
                         peer_param_name);
INSTANTIATE_TEST_SUITE_P(hostile, hostile_rma,
                         testing::ValuesIn(hostile_params_tcp),
                         peer_param_name);

/**
 * The positive controls, over tcp as hostile_rma: a plain UCP target whose
 * context asks RMA and atomics (as the provider's did) lets the same raw
 * peer's same attacks change its bytes.
 */
class hostile_control : public hostile_base,
                        public testing::WithParamInterface<const char*> {
protected:
    void SetUp() override
    {
        test_base::SetUp();
        set_tls(GetParam());
    }

    void start(const char *kind)
    {
        m_target.start(kind, 0, 0);
        ASSERT_FALSE(HasFatalFailure());
        ASSERT_EQ(UCS_OK, m_raw.open());
        ASSERT_EQ(UCS_OK, m_raw.connect_worker_addr(m_target.hello.addr));
    }

    void TearDown() override
    {
        m_raw.close();
        if (!IsSkipped()) { /* started */
            EXPECT_EQ(0, m_target.stop()) << "the target's exit status";
        }
        restore_tls();
        hostile_base::TearDown();
    }

    /* every area took the attack */
    void expect_all_changed()
    {
        ASSERT_TRUE(m_target.alive()) << m_target.how_it_ended();
        std::vector<uint8_t> now = m_target.snapshot();
        ASSERT_EQ(AREA_COUNT * area_len, now.size());
        std::vector<size_t> changed = changed_per_area(now);
        for (int a = 0; a < AREA_COUNT; ++a) {
            EXPECT_LT(0u, changed[a]) << "the attack on the " << area_names[a]
                                      << " area changed nothing";
        }
    }

};

TEST_P(hostile_control, rma_put_reaches_memory)
{
    start("ucp");
    ASSERT_FALSE(HasFatalFailure());
    attack(ATTACK_PUT, rma_targets(false), {m_raw.own_rkey(), zero_rkey});
    expect_all_changed();
}

TEST_P(hostile_control, rma_get_reads_memory)
{
    start("ucp");
    ASSERT_FALSE(HasFatalFailure());
    memset(m_raw.buffer(), 0xc3, m_raw.buffer_len());
    ASSERT_EQ(UCS_OK, m_raw.get(m_target.hello.vaddr[AREA_NEVER] + 64,
                                zero_rkey, 64));
    for (size_t i = 0; i < 64; ++i) {
        ASSERT_EQ(area_byte(AREA_NEVER * area_len + 64 + i),
                  m_raw.buffer()[i]) << "byte " << i;
    }
}

TEST_P(hostile_control, rma_atomics_reach_memory)
{
    SKIP_WITHOUT_UCP_SOFTWARE_ATOMICS();
    start("ucp");
    ASSERT_FALSE(HasFatalFailure());
    attack(ATTACK_AMO, rma_targets(false), {m_raw.own_rkey(), zero_rkey});
    expect_all_changed();
}

INSTANTIATE_TEST_SUITE_P(hostile_control, hostile_control,
                         testing::Values("tcp"),
                         [](const testing::TestParamInfo<const char*> &i) {
                             return std::string(i.param);
                         });

} // namespace fiprov_test
