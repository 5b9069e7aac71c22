/**
 * atomicx guest tests at the UCP level: with UCX_TLS=atomicx,tcp, UCP must
 * choose atomicx for its atomic lane (device atomics), and every
 * ucp_atomic_op_nbx op at both sizes must give the reference result while the
 * target process does not progress at all (it is blocked in read()).
 */

#include "atomicx_test_uct.h"

#include <gtest/gtest.h>

#include <ucp/api/ucp.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

extern "C" uint64_t uct_atomicx_ops_started(void);
extern "C" uint64_t uct_atomicx_ops_completed(void);

using atomicx_test::read_all;
using atomicx_test::write_all;

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

void arm_watchdog(unsigned seconds)
{
    signal(SIGALRM, watchdog);
    alarm(seconds);
}

std::string test_device()
{
    const char *dev = getenv("ATOMICX_TEST_DEV");
    return (dev != nullptr) ? dev : "rxe0:1";
}

void write_blob(int fd, const void *buf, uint32_t len)
{
    write_all(fd, &len, sizeof(len));
    write_all(fd, buf, len);
}

std::vector<char> read_blob(int fd)
{
    uint32_t len;
    read_all(fd, &len, sizeof(len));
    std::vector<char> blob(len);
    read_all(fd, blob.data(), len);
    return blob;
}

/* One UCP process: context, worker and an endpoint to the peer */
struct ucp_side {
    ucp_context_h context = nullptr;
    ucp_worker_h  worker  = nullptr;
    ucp_ep_h      ep      = nullptr;

    ucs_status_t init()
    {
        ucp_config_t *config;
        ucp_params_t params;
        ucs_status_t status;

        status = ucp_config_read(NULL, NULL, &config);
        if (status != UCS_OK) {
            return status;
        }
        /* The configuration under test, unless the caller overrides it */
        if (getenv("UCX_TLS") == nullptr) {
            ucp_config_modify(config, "TLS", "atomicx,tcp");
        }
        params.field_mask = UCP_PARAM_FIELD_FEATURES;
        params.features   = UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64;
        status = ucp_init(&params, config, &context);
        ucp_config_release(config);
        if (status != UCS_OK) {
            return status;
        }

        ucp_worker_params_t wparams;
        wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
        wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
        return ucp_worker_create(context, &wparams, &worker);
    }

    /* Exchange worker addresses over fd and connect, progressing until the
     * peer is connected too */
    ucs_status_t connect(int fd)
    {
        ucp_address_t *addr;
        size_t addr_len;
        ucs_status_t status;

        status = ucp_worker_get_address(worker, &addr, &addr_len);
        if (status != UCS_OK) {
            return status;
        }
        write_blob(fd, addr, addr_len);
        ucp_worker_release_address(worker, addr);
        std::vector<char> peer = read_blob(fd);

        ucp_ep_params_t eparams;
        eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        eparams.address    = (const ucp_address_t*)peer.data();
        status = ucp_ep_create(worker, &eparams, &ep);
        if (status != UCS_OK) {
            return status;
        }

        phase  = "connect: flush";
        status = flush();
        if (status != UCS_OK) {
            return status;
        }
        phase = "connect: waiting for the peer";

        /* Keep progressing until the peer's flush is done as well */
        write_all(fd, "R", 1);
        struct pollfd pfd = {fd, POLLIN, 0};
        while (poll(&pfd, 1, 0) == 0) {
            ucp_worker_progress(worker);
        }
        char c;
        read_all(fd, &c, 1);
        return UCS_OK;
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

    /*
     * Wait until every atomicx op started in this process has completed,
     * progressing only this worker. Used instead of ucp_ep_flush_nbx while
     * the target is idle: UCP's flush also flushes the tcp lane, and with
     * UCX 1.13.1 it was seen to wait forever there (about 1 run in 8) with
     * atomicx idle (no op in flight, queues empty, QP in RTS).
     */
    void drain_atomicx()
    {
        while (uct_atomicx_ops_completed() != uct_atomicx_ops_started()) {
            ucp_worker_progress(worker);
        }
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

const size_t target_size = 64;
const uint64_t guard     = 0x5555aaaa5555aaaaull;

/* The target: exposes memory, then blocks in read() without progressing
 * until the initiator is done, and sends its memory back */
int target_main(int fd)
{
    ucp_side side;
    std::vector<uint64_t> mem(target_size / 8, guard);

    arm_watchdog(120);
    phase = "target: init";
    if (side.init() != UCS_OK) {
        return 10;
    }
    if (side.connect(fd) != UCS_OK) {
        return 11;
    }

    ucp_mem_map_params_t mparams;
    ucp_mem_h memh;
    mparams.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                         UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mparams.address    = mem.data();
    mparams.length     = target_size;
    if (ucp_mem_map(side.context, &mparams, &memh) != UCS_OK) {
        return 12;
    }

    void *rkey_buf;
    size_t rkey_size;
    if (ucp_rkey_pack(side.context, memh, &rkey_buf, &rkey_size) != UCS_OK) {
        return 13;
    }
    write_blob(fd, rkey_buf, rkey_size);
    ucp_rkey_buffer_release(rkey_buf);
    uint64_t base = (uintptr_t)mem.data();
    write_all(fd, &base, sizeof(base));

    /* The initiator's atomic lane may still be wiring up (flush does not wait
     * for it): progress until its warm-up atomic is done */
    struct pollfd pfd = {fd, POLLIN, 0};
    while (poll(&pfd, 1, 0) == 0) {
        ucp_worker_progress(side.worker);
    }
    char c;
    read_all(fd, &c, 1);

    /* No progress from here on */
    phase = "target: passive";
    read_all(fd, &c, 1);
    write_all(fd, mem.data(), target_size);
    read_all(fd, &c, 1);

    phase = "target: teardown";
    ucp_mem_unmap(side.context, memh);
    side.close();
    return 0;
}

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
};


/* Every UCP atomic op at 32 and 64 bits against the reference, with the
 * target blocked; UCP's lane table and atomicx's op counter show that the
 * atomic lane is atomicx */
TEST_F(atomicx_ucp, all_ops_target_not_progressing)
{
    int sv[2];
    ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        ::close(sv[0]);
        _exit(target_main(sv[1]));
    }
    ::close(sv[1]);
    int fd = sv[0];

    arm_watchdog(120);
    phase = "initiator: init";
    ucp_side side;
    ASSERT_EQ(UCS_OK, side.init());
    ASSERT_EQ(UCS_OK, side.connect(fd));

    std::vector<char> rkey_buf = read_blob(fd);
    uint64_t base;
    read_all(fd, &base, sizeof(base));
    ucp_rkey_h rkey;
    ASSERT_EQ(UCS_OK, ucp_ep_rkey_unpack(side.ep, rkey_buf.data(), &rkey));

    phase = "initiator: warm-up";
    /* Warm-up while the target still progresses: completes the wireup of
     * the atomic lane (an atomic read of a guard word) */
    {
        uint64_t zero = 0, reply = 0;
        ucp_request_param_t param;
        param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE |
                             UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        param.datatype     = ucp_dt_make_contig(8);
        param.reply_buffer = &reply;
        ASSERT_EQ(UCS_OK, side.wait(ucp_atomic_op_nbx(side.ep,
                                                      UCP_ATOMIC_OP_ADD,
                                                      &zero, 1, base, rkey,
                                                      &param)));
        ASSERT_EQ(guard, reply);
    }
    write_all(fd, "W", 1);

    /* UCX's own lane table: the atomic lane is atomicx on the device */
    char *info = nullptr;
    size_t info_len = 0;
    FILE *stream = open_memstream(&info, &info_len);
    ucp_ep_print_info(side.ep, stream);
    fclose(stream);
    std::string lanes(info, info_len);
    free(info);
    std::string amo_line;
    size_t pos = 0;
    while (pos < lanes.size()) {
        size_t end = lanes.find('\n', pos);
        std::string line = lanes.substr(pos, end - pos);
        if (line.find("amo#0") != std::string::npos) {
            amo_line = line;
        }
        pos = (end == std::string::npos) ? lanes.size() : end + 1;
    }
    EXPECT_NE(std::string::npos,
              amo_line.find("atomicx/" + test_device()))
            << "the atomic lane is not atomicx:\n" << lanes;

    phase = "initiator: ops";
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

    for (unsigned round = 0; round < 4; ++round) {
        for (const op_desc &d : ucp_ops) {
            for (unsigned size : {4u, 8u}) {
                for (unsigned half = 0; half < ((size == 4) ? 2u : 1u);
                     ++half) {
                    uint64_t value = next(), compare;
                    uint64_t addr, old;
                    if (size == 8) {
                        addr    = base + 8;
                        old     = model64;
                    } else {
                        addr    = base + 16 + 4 * half;
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
                            side.ep, d.op, &buffer, 1, addr, rkey, &param);
                    ASSERT_EQ(UCS_OK, side.wait(req)) << d.name << size * 8;
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
                        /* a post completes locally: wait for it on the
                         * device before the next op reads the word */
                        side.drain_atomicx();
                    }
                }
            }
        }
    }

    side.drain_atomicx();
    uint64_t started = uct_atomicx_ops_started() - started_before;
    EXPECT_EQ(issued, started) << "each UCP atomic is one atomicx op";

    /* The target's memory, as the target itself sees it */
    write_all(fd, "D", 1);
    std::vector<uint64_t> mem(target_size / 8);
    read_all(fd, mem.data(), target_size);
    EXPECT_EQ(guard, mem[0]);
    EXPECT_EQ(model64, mem[1]);
    uint32_t halves[2];
    memcpy(halves, &mem[2], 8);
    EXPECT_EQ(model32[0], halves[0]);
    EXPECT_EQ(model32[1], halves[1]);
    for (size_t i = 3; i < mem.size(); ++i) {
        EXPECT_EQ(guard, mem[i]);
    }

    phase = "initiator: teardown";
    ucp_rkey_destroy(rkey);
    write_all(fd, "E", 1);
    side.close();
    phase = "initiator: waitpid";
    int wstatus;
    ASSERT_EQ(pid, waitpid(pid, &wstatus, 0));
    EXPECT_TRUE(WIFEXITED(wstatus) && (WEXITSTATUS(wstatus) == 0))
            << "target status " << wstatus;
    ::close(fd);
    alarm(0);
}
