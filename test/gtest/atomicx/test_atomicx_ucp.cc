/**
 * atomicx guest tests at the UCP level: with UCX_TLS=atomicx,tcp, UCP must
 * choose atomicx for its atomic lane (device atomics), every
 * ucp_atomic_op_nbx op at both sizes must give the reference result while the
 * target process does not progress at all (it is blocked in read()), and
 * ucp_ep_flush_nbx / ucp_worker_flush_nbx must complete without the target.
 *
 * Flushing while the target is idle: UCP's endpoint flush also flushes the
 * tcp lane (active messages, wireup), and UCX 1.13.1's tcp transport needs
 * the peer for that flush when the endpoint sent anything since its last
 * flush (a zero-length PUT and its ACK) or its connection is still being set
 * up, both possible right after connecting (wireup's last message is sent
 * after the flush that waited for the connection). So after connecting, the
 * initiator flushes once more while the target still progresses ("settle"
 * below, the way docs/atomicx.md gives to applications); from then on
 * atomics go through atomicx only and no flush of the initiator needs the
 * target.
 *
 * Every endpoint, memory map and rkey a runtime uses must take the device
 * path: an error-handling (peer failure) endpoint, memory mapped after the
 * endpoint exists or allocated by UCP, a process's endpoint to itself. A
 * software atomic towards a worker that selected device atomics is never
 * answered by UCX 1.13.1 (amo_sw.c prints an ERROR line): each test counts
 * the UCX ERROR and WARN lines of both processes and expects none.
 */

#include "atomicx_test_uct.h"
#include "test_ucx_log.h"

#include <gtest/gtest.h>

#include <ucp/api/ucp.h>
#include <ucs/debug/log_def.h>
#include <uct/atomicx/atomicx_counters.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <vector>

using atomicx_test::read_all;
using atomicx_test::read_blob;
using atomicx_test::write_all;
using atomicx_test::write_blob;

namespace {

/* A hang must fail the test with a hint, not stall CI */
const char *volatile phase = "start";

void watchdog(int sig)
{
    char msg[256];
    int len = snprintf(msg, sizeof(msg), "atomicx_ucp: pid %d timed out in "
                       "phase '%s'\n", getpid(), phase);
    if (write(2, msg, len) < 0) {
        /* nothing more to do */
    }
    _exit(99);
}

/* Seconds a test may take: $ATOMICX_TEST_TIMEOUT, default 240 (qemu TCG) */
unsigned test_timeout()
{
    const char *env = getenv("ATOMICX_TEST_TIMEOUT");
    return (env != nullptr) ? (unsigned)atoi(env) : 240;
}

void arm_watchdog()
{
    signal(SIGALRM, watchdog);
    alarm(test_timeout());
}

std::string test_device()
{
    const char *dev = getenv("ATOMICX_TEST_DEV");
    return (dev != nullptr) ? dev : "rxe0:1";
}

/* UCP 1.22's protocol layer (UCX_PROTO_ENABLE=y, its default there) has no
 * atomic protocol that supports error handling, on any transport (neither
 * its device atomic protocols nor its software atomics implement abort):
 * an atomic on an endpoint created with UCP_ERR_HANDLING_MODE_PEER finds no
 * protocol ("cannot find remote protocol"), is canceled, and the endpoint
 * fails. Its previous protocol layer (UCX_PROTO_ENABLE=n) still serves such
 * endpoints, over the same lanes, as UCX 1.13.1 does by default. */
bool peer_mode_needs_proto_v1()
{
    unsigned major, minor, release;

    ucp_get_version(&major, &minor, &release);
    return (major > 1) || ((major == 1) && (minor >= 22));
}

/* How a test sets up its pair of processes */
struct pair_options {
    bool     err_peer = false;  /* UCP_ERR_HANDLING_MODE_PEER endpoints */
    bool     allocate = false;  /* target memory allocated by ucp_mem_map */
    /* TX_QUEUE_LEN of atomicx in both processes ("" = default) */
    std::string tx_queue_len;
};

/* One UCP process: context, worker and an endpoint */
struct ucp_side {
    ucp_context_h context = nullptr;
    ucp_worker_h  worker  = nullptr;
    ucp_ep_h      ep      = nullptr;
    ucs_status_t  ep_error = UCS_OK;

    ucs_status_t init(const pair_options &opts = pair_options())
    {
        ucp_config_t *config;
        ucp_params_t params;
        ucs_status_t status;

        test_common::ucx_log_count_reset();
        status = ucp_config_read(NULL, NULL, &config);
        if (status != UCS_OK) {
            return status;
        }
        /* The configuration under test, unless the caller overrides it */
        if (getenv("UCX_TLS") == nullptr) {
            ucp_config_modify(config, "TLS", "atomicx,tcp");
        }
        if (opts.err_peer) {
            /* Error-handling endpoints get keepalive on their tcp lane: an
             * active message every interval, after which a flush is a round
             * trip to the peer again (docs/atomicx.md). Peer failure is
             * still detected by atomicx's RC retries and tcp's sockets. */
            ucp_config_modify(config, "KEEPALIVE_INTERVAL", "inf");
            if (peer_mode_needs_proto_v1()) {
                ucp_config_modify(config, "PROTO_ENABLE", "n");
            }
        }
        /* The interfaces read their configuration when the worker opens
         * them */
        if (!opts.tx_queue_len.empty()) {
            setenv("UCX_ATOMICX_TX_QUEUE_LEN", opts.tx_queue_len.c_str(), 1);
        }
        params.field_mask = UCP_PARAM_FIELD_FEATURES;
        params.features   = UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64;
        status = ucp_init(&params, config, &context);
        ucp_config_release(config);
        if (status == UCS_OK) {
            ucp_worker_params_t wparams;
            wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
            wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
            status = ucp_worker_create(context, &wparams, &worker);
        }
        if (!opts.tx_queue_len.empty()) {
            unsetenv("UCX_ATOMICX_TX_QUEUE_LEN");
        }
        return status;
    }

    static void ep_error_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
    {
        static_cast<ucp_side*>(arg)->ep_error = status;
    }

    ucs_status_t create_ep(const ucp_address_t *address, bool err_peer)
    {
        ucp_ep_params_t eparams;
        eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        eparams.address    = address;
        if (err_peer) {
            eparams.field_mask    |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                                     UCP_EP_PARAM_FIELD_ERR_HANDLER;
            eparams.err_mode       = UCP_ERR_HANDLING_MODE_PEER;
            eparams.err_handler.cb  = ep_error_cb;
            eparams.err_handler.arg = this;
        }
        return ucp_ep_create(worker, &eparams, &ep);
    }

    /* Exchange worker addresses over fd and connect; progressing until both
     * sides have flushed their endpoint */
    ucs_status_t connect(int fd, bool err_peer)
    {
        ucp_address_t *addr;
        size_t addr_len;
        ucs_status_t status;

        status = ucp_worker_get_address(worker, &addr, &addr_len);
        if (status != UCS_OK) {
            return status;
        }
        write_blob(fd, std::vector<char>((char*)addr, (char*)addr + addr_len));
        ucp_worker_release_address(worker, addr);
        std::vector<char> peer = read_blob(fd);

        status = create_ep((const ucp_address_t*)peer.data(), err_peer);
        if (status != UCS_OK) {
            return status;
        }

        phase  = "connect: flush";
        status = flush();
        if (status != UCS_OK) {
            return status;
        }
        phase = "connect: waiting for the peer";
        return sync(fd);
    }

    /* Both processes progress until both have reached this point */
    ucs_status_t sync(int fd)
    {
        write_all(fd, "R", 1);
        struct pollfd pfd = {fd, POLLIN, 0};
        while (poll(&pfd, 1, 0) == 0) {
            ucp_worker_progress(worker);
        }
        char c;
        read_all(fd, &c, 1);
        return (c == 'R') ? UCS_OK : UCS_ERR_IO_ERROR;
    }

    ucs_status_t wait(ucs_status_ptr_t req)
    {
        ucs_status_t status;

        if (req == NULL) {
            return UCS_OK;
        }
        if (UCS_PTR_IS_ERR(req)) {
            return UCS_PTR_STATUS(req);
        }
        while ((status = ucp_request_check_status(req)) == UCS_INPROGRESS) {
            ucp_worker_progress(worker);
        }
        ucp_request_free(req);
        return status;
    }

    ucs_status_t flush()
    {
        ucp_request_param_t param;
        param.op_attr_mask = 0;
        return wait(ucp_ep_flush_nbx(ep, &param));
    }

    ucs_status_t flush_worker()
    {
        ucp_request_param_t param;
        param.op_attr_mask = 0;
        return wait(ucp_worker_flush_nbx(worker, &param));
    }

    void close()
    {
        if (ep != nullptr) {
            ucp_request_param_t param;
            param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
            param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
            wait(ucp_ep_close_nbx(ep, &param));
            ep = nullptr;
        }
        if (worker != nullptr) {
            ucp_worker_destroy(worker);
            worker = nullptr;
        }
        if (context != nullptr) {
            ucp_cleanup(context);
            context = nullptr;
        }
    }
};

/* The line of UCP's lane table that describes the first atomic lane */
std::string amo_lane(ucp_ep_h ep, std::string *all_lanes)
{
    char *info = nullptr;
    size_t info_len = 0;
    FILE *stream = open_memstream(&info, &info_len);
    ucp_ep_print_info(ep, stream);
    fclose(stream);
    std::string lanes(info, info_len);
    free(info);
    *all_lanes = lanes;

    size_t pos = 0;
    while (pos < lanes.size()) {
        size_t end = lanes.find('\n', pos);
        std::string line = lanes.substr(pos, end - pos);
        if (line.find("amo#0") != std::string::npos) {
            return line;
        }
        pos = (end == std::string::npos) ? lanes.size() : end + 1;
    }
    return "";
}

const size_t target_size = 64;
const uint64_t guard     = 0x5555aaaa5555aaaaull;

/* The target: exposes memory, then blocks in read() without progressing
 * until the initiator is done, and sends its memory and its count of UCX
 * ERROR/WARN lines back */
int target_main(int fd, const pair_options &opts)
{
    ucp_side side;
    std::vector<uint64_t> user_mem(target_size / 8, guard);

    arm_watchdog();
    phase = "target: init";
    if (side.init(opts) != UCS_OK) {
        return 10;
    }
    if (side.connect(fd, opts.err_peer) != UCS_OK) {
        return 11;
    }
    /* Progress while the initiator settles its endpoint */
    phase = "target: settle";
    if (side.sync(fd) != UCS_OK) {
        return 16;
    }

    /* Mapped after the endpoint exists */
    ucp_mem_map_params_t mparams;
    ucp_mem_h memh;
    mparams.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                         UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mparams.address    = opts.allocate ? nullptr : user_mem.data();
    mparams.length     = target_size;
    if (opts.allocate) {
        mparams.field_mask |= UCP_MEM_MAP_PARAM_FIELD_FLAGS;
        mparams.flags       = UCP_MEM_MAP_ALLOCATE;
    }
    if (ucp_mem_map(side.context, &mparams, &memh) != UCS_OK) {
        return 12;
    }
    uint64_t *mem = (uint64_t*)user_mem.data();
    if (opts.allocate) {
        ucp_mem_attr_t attr;
        attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
        if (ucp_mem_query(memh, &attr) != UCS_OK) {
            return 14;
        }
        mem = (uint64_t*)attr.address;
        for (size_t i = 0; i < target_size / 8; ++i) {
            mem[i] = guard;
        }
    }

    void *rkey_buf;
    size_t rkey_size;
    if (ucp_rkey_pack(side.context, memh, &rkey_buf, &rkey_size) != UCS_OK) {
        return 13;
    }
    write_blob(fd, std::vector<char>((char*)rkey_buf,
                                     (char*)rkey_buf + rkey_size));
    ucp_rkey_buffer_release(rkey_buf);
    uint64_t base = (uintptr_t)mem;
    write_all(fd, &base, sizeof(base));

    /* The initiator's warm-up: progress until it is done */
    phase = "target: warm-up";
    if (side.sync(fd) != UCS_OK) {
        return 15;
    }

    /* No progress from here on */
    phase = "target: passive";
    char c;
    read_all(fd, &c, 1);
    write_all(fd, mem, target_size);
    read_all(fd, &c, 1);

    phase = "target: teardown";
    ucp_mem_unmap(side.context, memh);
    side.close();
    unsigned bad_lines = test_common::ucx_log_count();
    write_all(fd, &bad_lines, sizeof(bad_lines));
    return 0;
}

/* The initiator's view of the pair */
struct pair {
    ucp_side         side;
    ucp_rkey_h       rkey = nullptr;
    uint64_t         base = 0;
    int              fd   = -1;
    pid_t            pid  = -1;
    pair_options     opts;

    /* Forks the target, connects, unpacks its rkey and runs a warm-up
     * atomic while the target still progresses */
    void start(const pair_options &o)
    {
        opts = o;
        int sv[2];
        ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
        pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            ::close(sv[0]);
            _exit(target_main(sv[1], opts));
        }
        ::close(sv[1]);
        fd = sv[0];

        arm_watchdog();
        phase = "initiator: init";
        ASSERT_EQ(UCS_OK, side.init(opts));
        ASSERT_EQ(UCS_OK, side.connect(fd, opts.err_peer));
        /* Settle: flush once more while the target progresses, so that the
         * tcp lane owes the target nothing (wireup's last message, the tcp
         * connection handshake) */
        phase = "initiator: settle";
        ASSERT_EQ(UCS_OK, side.flush());
        ASSERT_EQ(UCS_OK, side.sync(fd));

        std::vector<char> rkey_buf = read_blob(fd);
        read_all(fd, &base, sizeof(base));
        ASSERT_EQ(UCS_OK, ucp_ep_rkey_unpack(side.ep, rkey_buf.data(),
                                             &rkey));

        phase = "initiator: warm-up";
        uint64_t reply = 0;
        ASSERT_EQ(UCS_OK, fetch_add(base, 0, &reply));
        ASSERT_EQ(guard, reply);
        ASSERT_EQ(UCS_OK, side.sync(fd));
        phase = "initiator: target idle";
    }

    ucs_status_t fetch_add(uint64_t addr, uint64_t value, uint64_t *reply)
    {
        ucp_request_param_t param;
        param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE |
                             UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        param.datatype     = ucp_dt_make_contig(8);
        param.reply_buffer = reply;
        return side.wait(ucp_atomic_op_nbx(side.ep, UCP_ATOMIC_OP_ADD,
                                           &value, 1, addr, rkey, &param));
    }

    /* The target's memory, as the target sees it */
    std::vector<uint64_t> target_memory()
    {
        write_all(fd, "D", 1);
        std::vector<uint64_t> mem(target_size / 8);
        read_all(fd, mem.data(), target_size);
        return mem;
    }

    /* Tears both down; the target's count of UCX ERROR/WARN lines */
    unsigned finish()
    {
        phase = "initiator: teardown";
        ucp_rkey_destroy(rkey);
        write_all(fd, "E", 1);
        side.close();
        unsigned target_bad = ~0u;
        read_all(fd, &target_bad, sizeof(target_bad));
        phase = "initiator: waitpid";
        int wstatus;
        EXPECT_EQ(pid, waitpid(pid, &wstatus, 0));
        EXPECT_TRUE(WIFEXITED(wstatus) && (WEXITSTATUS(wstatus) == 0))
                << "target status " << wstatus;
        ::close(fd);
        alarm(0);
        return target_bad;
    }

    void expect_device_amo_lane()
    {
        std::string lanes;
        EXPECT_NE(std::string::npos,
                  amo_lane(side.ep, &lanes).find("atomicx/" + test_device()))
                << "the atomic lane is not atomicx:\n" << lanes;
    }
};

struct op_desc {
    ucp_atomic_op_t op;
    bool            fetch;
    const char      *name;
};

const op_desc ucp_ops[] = {
    {UCP_ATOMIC_OP_ADD,   false, "add"},
    {UCP_ATOMIC_OP_AND,   false, "and"},
    {UCP_ATOMIC_OP_OR,    false, "or"},
    {UCP_ATOMIC_OP_XOR,   false, "xor"},
    {UCP_ATOMIC_OP_ADD,   true,  "fadd"},
    {UCP_ATOMIC_OP_AND,   true,  "fand"},
    {UCP_ATOMIC_OP_OR,    true,  "for"},
    {UCP_ATOMIC_OP_XOR,   true,  "fxor"},
    {UCP_ATOMIC_OP_SWAP,  true,  "swap"},
    {UCP_ATOMIC_OP_CSWAP, true,  "cswap"},
};

template <typename T>
T reference(ucp_atomic_op_t op, T old, T value, T compare)
{
    switch (op) {
    case UCP_ATOMIC_OP_ADD:   return (T)(old + value);
    case UCP_ATOMIC_OP_AND:   return old & value;
    case UCP_ATOMIC_OP_OR:    return old | value;
    case UCP_ATOMIC_OP_XOR:   return old ^ value;
    case UCP_ATOMIC_OP_SWAP:  return value;
    case UCP_ATOMIC_OP_CSWAP: return (old == compare) ? value : old;
    default:                  return old;
    }
}

/* Every op at both sizes, each followed by a flush of the endpoint (post
 * ops) or checked by its reply (fetch ops), then a worker flush; the target
 * memory is checked against the model */
void run_all_ops(pair &p)
{
    uint64_t started_before = uct_atomicx_ops_started();
    unsigned issued = 0;

    /* Model of the target memory: word 1 for 64-bit ops, the two halves of
     * word 2 for 32-bit ops; words 0 and 3.. keep the guard */
    uint64_t model64 = guard;
    uint32_t model32[2] = {(uint32_t)guard, (uint32_t)(guard >> 32)};
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    auto next = [&]() {
        seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;
        return seed;
    };

    phase = "initiator: ops";
    for (unsigned round = 0; round < 4; ++round) {
        for (const op_desc &d : ucp_ops) {
            for (unsigned size : {4u, 8u}) {
                for (unsigned half = 0; half < ((size == 4) ? 2u : 1u);
                     ++half) {
                    uint64_t value = next(), compare;
                    uint64_t addr, old;
                    if (size == 8) {
                        addr    = p.base + 8;
                        old     = model64;
                    } else {
                        addr    = p.base + 16 + 4 * half;
                        old     = model32[half];
                        value  &= 0xffffffff;
                    }
                    compare = (round % 2) ? old : ~old;
                    if (size == 4) {
                        compare &= 0xffffffff;
                    }

                    uint64_t buffer = value, reply = 0;
                    ucp_request_param_t param;
                    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
                    param.datatype     = ucp_dt_make_contig(size);
                    if (d.op == UCP_ATOMIC_OP_CSWAP) {
                        /* compare in buffer, new value in the reply buffer,
                         * which then receives the old value */
                        buffer = compare;
                        reply  = value;
                    }
                    if (d.fetch) {
                        param.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
                        param.reply_buffer  = &reply;
                    }
                    ucs_status_ptr_t req = ucp_atomic_op_nbx(
                            p.side.ep, d.op, &buffer, 1, addr, p.rkey,
                            &param);
                    ASSERT_EQ(UCS_OK, p.side.wait(req)) << d.name << size * 8;
                    ++issued;

                    if (size == 8) {
                        model64 = reference<uint64_t>(d.op, old, value,
                                                      compare);
                    } else {
                        model32[half] = reference<uint32_t>(
                                d.op, (uint32_t)old, (uint32_t)value,
                                (uint32_t)compare);
                    }

                    if (d.fetch) {
                        uint32_t reply32;
                        memcpy(&reply32, &reply, sizeof(reply32));
                        uint64_t got = (size == 8) ? reply : reply32;
                        EXPECT_EQ(old, got) << d.name << size * 8
                                            << " round " << round;
                    } else {
                        /* a post completes locally: the endpoint flush
                         * tells when it is done at the target */
                        phase = "initiator: ep flush after a post";
                        ASSERT_EQ(UCS_OK, p.side.flush());
                        phase = "initiator: ops";
                    }
                }
            }
        }
    }

    phase = "initiator: worker flush";
    ASSERT_EQ(UCS_OK, p.side.flush_worker());
    EXPECT_EQ(uct_atomicx_ops_started(), uct_atomicx_ops_completed())
            << "flushed with device ops in flight";
    uint64_t started = uct_atomicx_ops_started() - started_before;
    EXPECT_EQ(issued, started) << "each UCP atomic is one atomicx op";

    std::vector<uint64_t> mem = p.target_memory();
    EXPECT_EQ(guard, mem[0]);
    EXPECT_EQ(model64, mem[1]);
    uint32_t halves[2];
    memcpy(halves, &mem[2], 8);
    EXPECT_EQ(model32[0], halves[0]);
    EXPECT_EQ(model32[1], halves[1]);
    for (size_t i = 3; i < mem.size(); ++i) {
        EXPECT_EQ(guard, mem[i]);
    }
}

} // namespace


class atomicx_ucp : public ::testing::Test {
protected:
    void SetUp() override
    {
        std::string dev = test_device();
        std::string ibdev = dev.substr(0, dev.find(':'));
        struct stat st;
        if (stat(("/sys/class/infiniband/" + ibdev).c_str(), &st) != 0) {
            std::string why = "no verbs device " + ibdev +
                              " (the soft-RoCE guest provides rxe0)";
            const char *guest = getenv("ATOMICX_GUEST");
            if ((guest != nullptr) && !strcmp(guest, "1")) {
                FAIL() << why;
            }
            GTEST_SKIP() << why;
        }
    }

    void loopback(bool err_peer);

    /* The whole test with the given setup: all ops, flushes, no bad line */
    void all_ops(const pair_options &opts)
    {
        pair p;
        p.start(opts);
        if (HasFatalFailure()) {
            return;
        }
        p.expect_device_amo_lane();
        run_all_ops(p);
        unsigned target_bad = p.finish();
        EXPECT_EQ(0u, test_common::ucx_log_count()) << "UCX ERROR/WARN lines (initiator)";
        EXPECT_EQ(0u, target_bad) << "UCX ERROR/WARN lines (target)";
        EXPECT_EQ(UCS_OK, p.side.ep_error);
    }
};


/* Every UCP atomic op at 32 and 64 bits against the reference, with the
 * target blocked, and ep / worker flushes that complete without it; the
 * target's memory is mapped after the endpoints exist */
TEST_F(atomicx_ucp, all_ops_target_not_progressing)
{
    all_ops(pair_options());
}


/* Error-handling endpoints (UCP_ERR_HANDLING_MODE_PEER, what MPI and
 * OpenSHMEM runtimes ask for): the atomic lane is still atomicx */
TEST_F(atomicx_ucp, err_mode_peer_uses_device_atomics)
{
    pair_options opts;
    opts.err_peer = true;
    all_ops(opts);
}


/* Target memory allocated by ucp_mem_map (UCP_MEM_MAP_ALLOCATE) */
TEST_F(atomicx_ucp, memory_allocated_by_ucp)
{
    pair_options opts;
    opts.allocate = true;
    all_ops(opts);
}


/* A worker flush while atomics are in flight and more wait in UCP's pending
 * queue on the atomicx lane (a 2-entry send queue): the flush succeeds
 * (UCS_OK, no ERROR line) without the target, and only once every op has
 * been executed */
TEST_F(atomicx_ucp, worker_flush_with_ops_in_flight_and_pending)
{
    pair_options opts;
    opts.tx_queue_len = "2";
    pair p;
    p.start(opts);
    if (HasFatalFailure()) {
        return;
    }
    p.expect_device_amo_lane();

    const unsigned count = 200;
    std::vector<ucs_status_ptr_t> reqs;
    std::vector<uint64_t> values(count), replies(count, 0);
    uint64_t started_before = uct_atomicx_ops_started();
    uint64_t sum64 = 0;
    uint32_t sum32 = 0;

    phase = "initiator: posting";
    for (unsigned i = 0; i < count; ++i) {
        bool fetch = (i % 4) == 3;
        unsigned size = (i % 2) ? 4 : 8;
        values[i] = i + 1;
        ucp_request_param_t param;
        param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
        param.datatype     = ucp_dt_make_contig(size);
        if (fetch) {
            param.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
            param.reply_buffer  = &replies[i];
        }
        uint64_t addr = p.base + ((size == 8) ? 8 : 16);
        ucs_status_ptr_t req = ucp_atomic_op_nbx(p.side.ep, UCP_ATOMIC_OP_ADD,
                                                 &values[i], 1, addr, p.rkey,
                                                 &param);
        ASSERT_FALSE(UCS_PTR_IS_ERR(req))
                << ucs_status_string(UCS_PTR_STATUS(req));
        if (req != NULL) {
            reqs.push_back(req);
        }
        if (size == 8) {
            sum64 += values[i];
        } else {
            sum32 += (uint32_t)values[i];
        }
    }
    EXPECT_GT(reqs.size(), 0u) << "nothing was left in flight or pending";

    phase = "initiator: worker flush";
    ucs_status_t status = p.side.flush_worker();
    EXPECT_EQ(UCS_OK, status) << ucs_status_string(status);
    EXPECT_EQ(uct_atomicx_ops_started(), uct_atomicx_ops_completed())
            << "the worker flush completed with device ops in flight";
    EXPECT_EQ(count, uct_atomicx_ops_started() - started_before);
    for (ucs_status_ptr_t req : reqs) {
        EXPECT_EQ(UCS_OK, ucp_request_check_status(req))
                << "an op was not complete after the worker flush";
        ucp_request_free(req);
    }

    phase = "initiator: ep flush";
    EXPECT_EQ(UCS_OK, p.side.flush());

    std::vector<uint64_t> mem = p.target_memory();
    EXPECT_EQ(guard, mem[0]);
    EXPECT_EQ(guard + sum64, mem[1]);
    uint32_t halves[2];
    memcpy(halves, &mem[2], 8);
    EXPECT_EQ((uint32_t)guard + sum32, halves[0]);
    EXPECT_EQ((uint32_t)(guard >> 32), halves[1]);

    unsigned target_bad = p.finish();
    EXPECT_EQ(0u, test_common::ucx_log_count()) << "UCX ERROR/WARN lines (initiator)";
    EXPECT_EQ(0u, target_bad) << "UCX ERROR/WARN lines (target)";
}


/* A process updating its own memory through its endpoint to itself (what
 * MPI does for a window rank targeting itself): atomicx, no software path */
void atomicx_ucp::loopback(bool err_peer)
{
    arm_watchdog();
    phase = "loopback: init";
    ucp_side side;
    pair_options opts;
    opts.err_peer = err_peer;
    ASSERT_EQ(UCS_OK, side.init(opts));

    ucp_address_t *addr;
    size_t addr_len;
    ASSERT_EQ(UCS_OK, ucp_worker_get_address(side.worker, &addr, &addr_len));
    ucs_status_t status = side.create_ep(addr, err_peer);
    ucp_worker_release_address(side.worker, addr);
    ASSERT_EQ(UCS_OK, status);
    phase = "loopback: flush";
    ASSERT_EQ(UCS_OK, side.flush());

    std::vector<uint64_t> mem(target_size / 8, guard);
    ucp_mem_map_params_t mparams;
    ucp_mem_h memh;
    mparams.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                         UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mparams.address    = mem.data();
    mparams.length     = target_size;
    ASSERT_EQ(UCS_OK, ucp_mem_map(side.context, &mparams, &memh));
    void *rkey_buf;
    size_t rkey_size;
    ASSERT_EQ(UCS_OK, ucp_rkey_pack(side.context, memh, &rkey_buf,
                                    &rkey_size));
    ucp_rkey_h rkey;
    ASSERT_EQ(UCS_OK, ucp_ep_rkey_unpack(side.ep, rkey_buf, &rkey));
    ucp_rkey_buffer_release(rkey_buf);

    std::string lanes;
    EXPECT_NE(std::string::npos,
              amo_lane(side.ep, &lanes).find("atomicx/" + test_device()))
            << "the atomic lane is not atomicx:\n" << lanes;

    phase = "loopback: ops";
    uint64_t started_before = uct_atomicx_ops_started();
    uint64_t expect64 = guard;
    uint32_t expect32 = (uint32_t)guard;
    for (unsigned i = 0; i < 32; ++i) {
        unsigned size = (i % 2) ? 4 : 8;
        uint64_t value = 3 * i + 1, reply = 0;
        ucp_request_param_t param;
        param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE |
                             UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        param.datatype     = ucp_dt_make_contig(size);
        param.reply_buffer = &reply;
        uint64_t target = (uintptr_t)mem.data() + ((size == 8) ? 8 : 16);
        ASSERT_EQ(UCS_OK, side.wait(ucp_atomic_op_nbx(side.ep,
                                                      UCP_ATOMIC_OP_XOR,
                                                      &value, 1, target, rkey,
                                                      &param)));
        if (size == 8) {
            EXPECT_EQ(expect64, reply);
            expect64 ^= value;
        } else {
            EXPECT_EQ(expect32, (uint32_t)reply);
            expect32 ^= (uint32_t)value;
        }
    }
    phase = "loopback: worker flush";
    ASSERT_EQ(UCS_OK, side.flush_worker());
    EXPECT_EQ(32u, uct_atomicx_ops_started() - started_before)
            << "the ops did not go through atomicx";
    EXPECT_EQ(expect64, mem[1]);
    EXPECT_EQ(expect32, (uint32_t)mem[2]);
    EXPECT_EQ(guard, mem[0]);

    phase = "loopback: teardown";
    ucp_rkey_destroy(rkey);
    ucp_mem_unmap(side.context, memh);
    side.close();
    EXPECT_EQ(0u, test_common::ucx_log_count()) << "UCX ERROR/WARN lines";
    alarm(0);
}


TEST_F(atomicx_ucp, loopback_endpoint_to_own_worker)
{
    loopback(false);
}


/* The same with an error-handling endpoint (UCP_ERR_HANDLING_MODE_PEER) */
TEST_F(atomicx_ucp, loopback_endpoint_to_own_worker_err_mode_peer)
{
    loopback(true);
}


/* The target process dies (SIGKILL) under an error-handling endpoint: the
 * initiator's next atomic completes with an error and the endpoint's error
 * handler is called, both within a bounded time; never a hang. Whichever
 * lane notices first reports it: atomicx (the target's QP is gone, the
 * transport retries run out) or tcp (the connection is reset). */
TEST_F(atomicx_ucp, peer_killed_error_reported)
{
    pair_options opts;
    opts.err_peer = true;
    pair p;
    p.start(opts);
    if (HasFatalFailure()) {
        return;
    }
    p.expect_device_amo_lane();

    phase = "initiator: killing the target";
    ASSERT_EQ(0, kill(p.pid, SIGKILL));
    int wstatus;
    ASSERT_EQ(p.pid, waitpid(p.pid, &wstatus, 0));
    ASSERT_TRUE(WIFSIGNALED(wstatus));

    /* The op ends (the watchdog bounds a hang), and with an error: the
     * target's memory and QP are gone with its process */
    phase = "initiator: atomic towards the dead target";
    uint64_t reply = 0;
    ucs_status_t status = p.fetch_add(p.base + 8, 1, &reply);
    EXPECT_NE(UCS_OK, status) << "an atomic on a dead target succeeded";

    /* The error handler: within 60 s of progress */
    phase = "initiator: waiting for the error handler";
    time_t deadline = time(NULL) + 60;
    while ((p.side.ep_error == UCS_OK) && (time(NULL) < deadline)) {
        ucp_worker_progress(p.side.worker);
    }
    EXPECT_NE(UCS_OK, p.side.ep_error) << "no error handler call in 60 s";
    printf("atomic: %s, error handler: %s\n", ucs_status_string(status),
           ucs_status_string(p.side.ep_error));

    /* The endpoint takes no more atomics */
    phase = "initiator: atomic on the failed endpoint";
    EXPECT_NE(UCS_OK, p.fetch_add(p.base + 8, 1, &reply));

    phase = "initiator: teardown";
    ucp_rkey_destroy(p.rkey);
    p.side.close();
    ::close(p.fd);
    alarm(0);
}
