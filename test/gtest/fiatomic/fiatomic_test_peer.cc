/*
 * fiatomic_test_peer: the other processes of the fiatomic tests. Started by
 * the tests with posix_spawn, controlled over fd 3 (fiatomic_test_common.h).
 *
 *   fiatomic_test_peer target <user|alloc|safe> <len0> <len1>
 *       Creates a UCP context/worker (UCX_TLS from the environment), exposes
 *       two regions (safe: target-only user memory), sends MSG_HELLO (worker address, packed keys), then
 *       progresses its worker and serves MSG_WRITE/READ/PAUSE/RESUME/EXIT.
 *       Target memory is read and written here with plain CPU accesses, never
 *       through the library under test.
 *
 *   fiatomic_test_peer initiator
 *       Waits for MSG_CONNECT (a target's hello), connects, then runs the
 *       jobs it is given (MSG_JOB, MSG_GO) through libfiatomic and reports
 *       every fetched value. FIATOMIC_STRATEGY comes from the environment.
 */
#include "fiatomic_test_common.h"
#include "fiatomic_test_remote.h"

#include "fiatomic_ref.h"

#include <algorithm>
#include <memory>

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

using namespace fiatomic_test;

namespace {

const int ctrl_fd = 3;

void die(const char *fmt, ...)
{
    char buf[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    fprintf(stderr, "fiatomic_test_peer[%d]: %s\n", (int)getpid(), buf);
    send_msg(ctrl_fd, MSG_ERROR, buf, strlen(buf));
    _exit(2);
}

void reply_ok(const void *data = NULL, size_t length = 0)
{
    if (send_msg(ctrl_fd, MSG_OK, data, length) != 0) {
        _exit(3); /* the test is gone */
    }
}

void reply_error(const std::string &msg)
{
    if (send_msg(ctrl_fd, MSG_ERROR, msg.data(), msg.size()) != 0) {
        _exit(3);
    }
}

/* ------------------------------------------------------------------------ */
/* Target */

struct region {
    fiatomic_mem_h mem;
    void           *user; /* our own memory (user mode) */
    uint8_t        *base;
    size_t         length;
};

int run_target(bool alloc, bool safe, size_t len0, size_t len1)
{
    ucp_setup setup;
    std::string error;
    region regions[FIATOMIC_TEST_REGIONS];
    size_t lengths[FIATOMIC_TEST_REGIONS] = {len0, len1};
    target_info info;
    ucp_address_t *address;
    size_t address_length;
    ucs_status_t status;
    bool progressing = true, done = false, fia_gone = false;
    unsigned idle = 0, busy = 0;

    status = ucp_setup_create({}, NULL, peer_am_from_env(), &setup, &error);
    if (status != UCS_OK) {
        die("%s", error.c_str());
    }

    /* expose region i (again): zeroed memory, its key into info */
    auto expose_region = [&](int i) {
        fiatomic_mem_params_t params;
        void *key, *addr;
        size_t key_size, length;

        memset(&params, 0, sizeof(params));
        regions[i].user = NULL;
        params.field_mask = FIATOMIC_MEM_PARAM_FIELD_LENGTH;
        params.length     = lengths[i];
        if (safe) {
            params.field_mask |= FIATOMIC_MEM_PARAM_FIELD_FLAGS;
            params.flags       = FIATOMIC_MEM_FLAG_TARGET_ONLY;
        }
        if (alloc) {
            params.field_mask |= FIATOMIC_MEM_PARAM_FIELD_FLAGS;
            params.flags       = FIATOMIC_MEM_FLAG_ALLOCATE;
        } else {
            if (posix_memalign(&regions[i].user, 4096, lengths[i]) != 0) {
                die("posix_memalign(%zu) failed", lengths[i]);
            }
            memset(regions[i].user, 0, lengths[i]);
            params.field_mask |= FIATOMIC_MEM_PARAM_FIELD_ADDRESS;
            params.address     = regions[i].user;
        }
        status = fiatomic_mem_expose(setup.fia, &params, &regions[i].mem);
        if (status != UCS_OK) {
            die("fiatomic_mem_expose(%s, %zu): %s", alloc ? "alloc" : "user",
                lengths[i], ucs_status_string(status));
        }
        status = fiatomic_mem_query(regions[i].mem, &addr, &length);
        if (status != UCS_OK) {
            die("fiatomic_mem_query: %s", ucs_status_string(status));
        }
        if (length < lengths[i]) {
            die("fiatomic_mem_query: length %zu < %zu", length, lengths[i]);
        }
        regions[i].base   = static_cast<uint8_t*>(addr);
        regions[i].length = lengths[i];
        memset(regions[i].base, 0, lengths[i]);
        status = fiatomic_mem_pack_key(regions[i].mem, &key, &key_size);
        if (status != UCS_OK) {
            die("fiatomic_mem_pack_key: %s", ucs_status_string(status));
        }
        info.key[i].assign(static_cast<uint8_t*>(key),
                           static_cast<uint8_t*>(key) + key_size);
        fiatomic_key_release(key);
        info.base[i]   = (uintptr_t)addr;
        info.length[i] = lengths[i];
    };

    for (int i = 0; i < FIATOMIC_TEST_REGIONS; ++i) {
        expose_region(i);
    }

    status = ucp_worker_get_address(setup.worker, &address, &address_length);
    if (status != UCS_OK) {
        die("ucp_worker_get_address: %s", ucs_status_string(status));
    }
    info.pid = getpid();
    info.worker_address.assign(reinterpret_cast<uint8_t*>(address),
                               reinterpret_cast<uint8_t*>(address) +
                               address_length);
    ucp_worker_release_address(setup.worker, address);

    std::vector<uint8_t> hello = info.pack();
    if (send_msg(ctrl_fd, MSG_HELLO, hello.data(), hello.size()) != 0) {
        return 3;
    }

    while (!done) {
        uint32_t type;
        std::vector<uint8_t> payload;
        struct pollfd pfd = {ctrl_fd, POLLIN, 0};
        int ret;

        if (progressing) {
            /* look at the control channel now and then even when busy */
            if (ucp_worker_progress(setup.worker) != 0) {
                idle = 0;
                if ((++busy % 256) != 0) {
                    continue;
                }
            } else if ((++idle % 16) != 0) {
                continue;
            } else {
                sched_yield();
            }
            ret = poll(&pfd, 1, 0);
        } else {
            ret = poll(&pfd, 1, -1);
        }
        if ((ret < 0) && (errno != EINTR)) {
            die("poll: %m");
        } else if (ret <= 0) {
            continue;
        }

        if (recv_msg(ctrl_fd, &type, &payload, -1) != 0) {
            break; /* the test is gone: clean up and leave */
        }

        bytes msg(payload);
        switch (type) {
        case MSG_WRITE: {
            uint32_t r   = msg.get<uint32_t>();
            uint64_t off = msg.get<uint64_t>();
            std::vector<uint8_t> data = msg.get_blob();
            if (!msg.ok() || fia_gone || (r >= FIATOMIC_TEST_REGIONS) ||
                (off > regions[r].length) ||
                (data.size() > regions[r].length - off)) {
                reply_error("bad MSG_WRITE");
                break;
            }
            memcpy(regions[r].base + off, data.data(), data.size());
            __atomic_thread_fence(__ATOMIC_SEQ_CST);
            reply_ok();
            break;
        }
        case MSG_READ: {
            uint32_t r   = msg.get<uint32_t>();
            uint64_t off = msg.get<uint64_t>();
            uint64_t len = msg.get<uint64_t>();
            if (!msg.ok() || fia_gone || (r >= FIATOMIC_TEST_REGIONS) ||
                (off > regions[r].length) ||
                (len > regions[r].length - off)) {
                reply_error("bad MSG_READ");
                break;
            }
            __atomic_thread_fence(__ATOMIC_SEQ_CST);
            reply_ok(regions[r].base + off, len);
            break;
        }
        case MSG_REEXPOSE: {
            /* unexpose a region and expose new memory, normally at the same
             * index: keys of the old one are stale now */
            uint32_t r = msg.get<uint32_t>();
            if (!msg.ok() || fia_gone || (r >= FIATOMIC_TEST_REGIONS)) {
                reply_error("bad MSG_REEXPOSE");
                break;
            }
            status = fiatomic_mem_unexpose(regions[r].mem);
            if (status != UCS_OK) {
                die("fiatomic_mem_unexpose: %s", ucs_status_string(status));
            }
            free(regions[r].user);
            expose_region(r);
            std::vector<uint8_t> packed = info.pack();
            reply_ok(packed.data(), packed.size());
            break;
        }
        case MSG_DESTROY_CONTEXT:
            for (int i = 0; !fia_gone && (i < FIATOMIC_TEST_REGIONS); ++i) {
                fiatomic_mem_unexpose(regions[i].mem);
                free(regions[i].user);
            }
            if (!fia_gone) {
                fiatomic_destroy(setup.fia);
                setup.fia = NULL;
                fia_gone  = true;
            }
            reply_ok();
            break;
        case MSG_PAUSE:
            progressing = false;
            reply_ok();
            break;
        case MSG_RESUME:
            progressing = true;
            reply_ok();
            break;
        case MSG_EXIT:
            done = true;
            break;
        default:
            reply_error("unknown message");
            break;
        }
    }

    for (int i = 0; !fia_gone && (i < FIATOMIC_TEST_REGIONS); ++i) {
        status = fiatomic_mem_unexpose(regions[i].mem);
        if (status != UCS_OK) {
            die("fiatomic_mem_unexpose: %s", ucs_status_string(status));
        }
        free(regions[i].user);
    }
    ucp_setup_destroy(&setup);
    if (done) {
        reply_ok();
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Initiator */

struct initiator {
    bool              faulted; /* a fault test ran: do not wait long */
    ucp_setup         setup;
    ucp_ep_h          ucp_ep;
    fiatomic_ep_h     ep;
    target_info       target;
    uint64_t          keys[FIATOMIC_TEST_REGIONS];
    ucs_status_t      ep_status;
    fiatomic_cntr_h   cntr;    /* bound to ep: counts every operation */
};

void initiator_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    static_cast<initiator*>(arg)->ep_status = status;
}

std::string initiator_connect(initiator *in, const std::vector<uint8_t> &hello)
{
    std::string error;
    ucp_ep_params_t ep_params;
    ucs_status_t status;

    if (!in->target.unpack(hello)) {
        return "bad MSG_CONNECT";
    }
    status = ucp_setup_create({}, NULL, peer_am_from_env(), &in->setup,
                              &error);
    if (status != UCS_OK) {
        return error;
    }

    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask      = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                                UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                                UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep_params.address         = reinterpret_cast<const ucp_address_t*>(
                                        in->target.worker_address.data());
    ep_params.err_mode        = UCP_ERR_HANDLING_MODE_PEER;
    ep_params.err_handler.cb  = initiator_ep_error;
    ep_params.err_handler.arg = in;
    /* "none": UCP's default error mode, as an application that does not ask
     * for peer failures (UCP still fails the endpoint's operations) */
    const char *mode = getenv("FIATOMIC_TEST_EP_ERR_MODE");
    if ((mode != NULL) && !strcmp(mode, "none")) {
        ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    }
    in->ep_status             = UCS_OK;
    status = ucp_ep_create(in->setup.worker, &ep_params, &in->ucp_ep);
    if (status != UCS_OK) {
        return std::string("ucp_ep_create: ") + ucs_status_string(status);
    }
    status = fiatomic_ep_create(in->setup.fia, in->ucp_ep, NULL, &in->ep);
    if (status != UCS_OK) {
        return std::string("fiatomic_ep_create: ") +
               ucs_status_string(status);
    }
    status = fiatomic_cntr_open(in->setup.fia, &in->cntr);
    if (status == UCS_OK) {
        status = fiatomic_ep_bind_cntr(in->ep, in->cntr);
    }
    if (status != UCS_OK) {
        return std::string("counter: ") + ucs_status_string(status);
    }
    for (int i = 0; i < FIATOMIC_TEST_REGIONS; ++i) {
        status = fiatomic_rkey_unpack(in->ep, in->target.key[i].data(),
                                      in->target.key[i].size(),
                                      &in->keys[i]);
        if (status != UCS_OK) {
            return std::string("fiatomic_rkey_unpack: ") +
                   ucs_status_string(status);
        }
    }

    /* finish the wireup before the job starts: read the last u64 of
     * region 1 (or just flush if the strategy cannot read it) */
    fiatomic_request_param_t param;
    uint64_t value;
    memset(&param, 0, sizeof(param));
    status = wait_request(in->setup.worker,
                          fiatomic_fetch_atomic_nbx(
                                  in->ep, NULL, 1, &value,
                                  in->target.base[1] +
                                  in->target.length[1] - 8,
                                  in->keys[1], FI_UINT64, FI_ATOMIC_READ,
                                  &param), 60.0);
    if (status == UCS_ERR_UNSUPPORTED) {
        status = wait_request(in->setup.worker,
                              fiatomic_ep_flush_nbx(in->ep, &param), 60.0);
    }
    if (status != UCS_OK) {
        return std::string("warm-up: ") + ucs_status_string(status);
    }
    return "";
}

void initiator_disconnect(initiator *in)
{
    fiatomic_request_param_t param;

    memset(&param, 0, sizeof(param));
    wait_request(in->setup.worker, fiatomic_ep_flush_nbx(in->ep, &param),
                 ((in->ep_status == UCS_OK) && !in->faulted) ? 30.0 : 5.0);
    for (int i = 0; i < FIATOMIC_TEST_REGIONS; ++i) {
        fiatomic_rkey_release(in->ep, in->keys[i]);
    }
    fiatomic_ep_destroy(in->ep);
    ucp_ep_close_blocking(in->setup.worker, in->ucp_ep,
                          (in->ep_status != UCS_OK) || in->faulted);
    /* the endpoint is gone once UCP released its operations */
    fiatomic_cntr_close(in->cntr);
    ucp_setup_destroy(&in->setup);
}

void add_one(uint8_t *dst, const uint8_t *src, size_t size)
{
    unsigned carry = 1;

    for (size_t i = 0; i < size; ++i) {
        unsigned v = src[i] + carry;
        dst[i] = (uint8_t)v;
        carry  = v >> 8;
    }
}

job_result run_job(initiator *in, const std::vector<job_task> &tasks)
{
    job_result result;
    size_t ntasks = tasks.size();
    std::vector<size_t> size(ntasks);
    std::vector<std::vector<uint8_t>> guess(ntasks), next(ntasks);
    std::vector<void*> reqs(ntasks);
    uint64_t max_iter = 0;
    fiatomic_request_param_t param;
    char msg[256];

    memset(&param, 0, sizeof(param));
    result.compares.resize(ntasks);
    result.fetched.resize(ntasks);
    for (size_t t = 0; t < ntasks; ++t) {
        size[t] = dt_size(tasks[t].datatype);
        if ((size[t] == 0) || (tasks[t].region >= FIATOMIC_TEST_REGIONS)) {
            result.error = "bad task";
            return result;
        }
        if (tasks[t].kind != JOB_REPEAT) {
            result.compares[t].resize(tasks[t].iterations * size[t]);
        }
        if ((tasks[t].kind != JOB_REPEAT) ||
            (tasks[t].family != FIATOMIC_FAMILY_BASE)) {
            result.fetched[t].resize(tasks[t].iterations * size[t]);
        }
        if (tasks[t].kind == JOB_CSWAP_CHAIN) {
            guess[t] = tasks[t].compares;
            next[t].resize(size[t]);
            if (guess[t].size() != size[t]) {
                result.error = "bad chain";
                return result;
            }
        } else if (tasks[t].kind == JOB_REPEAT) {
            if ((tasks[t].operands.size() != size[t]) ||
                (tasks[t].family == FIATOMIC_FAMILY_COMPARE)) {
                result.error = "bad repeat";
                return result;
            }
        } else if ((tasks[t].operands.size() !=
                    tasks[t].iterations * size[t]) ||
                   ((tasks[t].family == FIATOMIC_FAMILY_COMPARE) &&
                    (tasks[t].compares.size() !=
                     tasks[t].iterations * size[t]))) {
            result.error = "bad operands";
            return result;
        }
        max_iter = std::max(max_iter, tasks[t].iterations);
    }

    double t0          = now_sec();
    uint64_t repeat_us = 0, done = max_iter;

    for (size_t t = 0; t < ntasks; ++t) {
        if (tasks[t].kind == JOB_REPEAT) {
            repeat_us = std::max(repeat_us, tasks[t].duration_us);
        }
    }
    for (uint64_t i = 0; i < max_iter; ++i) {
        if ((repeat_us != 0) && (now_sec() > t0 + repeat_us * 1e-6)) {
            done = i; /* time is up */
            break;
        }
        for (size_t t = 0; t < ntasks; ++t) {
            const job_task &task = tasks[t];
            uint64_t addr  = in->target.base[task.region] + task.offset;
            bool kept      = !result.fetched[t].empty();
            uint8_t *fetch = kept ? result.fetched[t].data() + i * size[t] :
                                    NULL;
            uint8_t *cmp   = (task.kind != JOB_REPEAT) ?
                             result.compares[t].data() + i * size[t] : NULL;
            const uint8_t *opnd;
            ucs_status_ptr_t p;

            reqs[t] = NULL;
            if (i >= task.iterations) {
                continue;
            }
            if (task.kind == JOB_REPEAT) {
                p = (task.family == FIATOMIC_FAMILY_BASE) ?
                    fiatomic_atomic_nbx(in->ep, task.operands.data(), 1,
                                        addr, in->keys[task.region],
                                        (enum fi_datatype)task.datatype,
                                        (enum fi_op)task.op, &param) :
                    fiatomic_fetch_atomic_nbx(in->ep, task.operands.data(),
                                              1, fetch, addr,
                                              in->keys[task.region],
                                              (enum fi_datatype)
                                                      task.datatype,
                                              (enum fi_op)task.op, &param);
            } else if (task.kind == JOB_CSWAP_CHAIN) {
                memcpy(cmp, guess[t].data(), size[t]);
                add_one(next[t].data(), guess[t].data(), size[t]);
                p = fiatomic_compare_atomic_nbx(in->ep, next[t].data(), 1,
                                                cmp, fetch, addr,
                                                in->keys[task.region],
                                                (enum fi_datatype)
                                                        task.datatype,
                                                FI_CSWAP, &param);
            } else {
                opnd = task.operands.data() + i * size[t];
                if (task.family == FIATOMIC_FAMILY_COMPARE) {
                    memcpy(cmp, task.compares.data() + i * size[t], size[t]);
                    p = fiatomic_compare_atomic_nbx(
                            in->ep, opnd, 1, cmp, fetch, addr,
                            in->keys[task.region],
                            (enum fi_datatype)task.datatype,
                            (enum fi_op)task.op, &param);
                } else {
                    p = fiatomic_fetch_atomic_nbx(
                            in->ep, opnd, 1, fetch, addr,
                            in->keys[task.region],
                            (enum fi_datatype)task.datatype,
                            (enum fi_op)task.op, &param);
                }
            }
            if (UCS_PTR_IS_ERR(p)) {
                snprintf(msg, sizeof(msg), "task %zu iteration %" PRIu64
                         ": post failed: %s", t, i,
                         ucs_status_string(UCS_PTR_STATUS(p)));
                result.error = msg;
                /* complete what is in flight before leaving */
                for (size_t u = 0; u < t; ++u) {
                    wait_request(in->setup.worker, reqs[u], 60.0);
                }
                return result;
            }
            reqs[t] = p;
        }

        for (size_t t = 0; t < ntasks; ++t) {
            ucs_status_t status = wait_request(in->setup.worker, reqs[t],
                                               120.0);
            if ((status != UCS_OK) && result.error.empty()) {
                snprintf(msg, sizeof(msg), "task %zu iteration %" PRIu64
                         ": %s", t, i, ucs_status_string(status));
                result.error = msg;
            }
            if ((i < tasks[t].iterations) &&
                (tasks[t].kind == JOB_CSWAP_CHAIN)) {
                const uint8_t *f = result.fetched[t].data() + i * size[t];
                if (!memcmp(f, guess[t].data(), size[t])) {
                    guess[t] = next[t]; /* won this step */
                } else {
                    memcpy(guess[t].data(), f, size[t]);
                }
            }
        }
        if (!result.error.empty()) {
            return result;
        }
    }
    for (size_t t = 0; t < ntasks; ++t) {
        if (tasks[t].kind == JOB_REPEAT) {
            uint64_t n = std::min(done, tasks[t].iterations);
            if (tasks[t].family != FIATOMIC_FAMILY_BASE) {
                result.fetched[t].resize(n * size[t]);
            }
            result.compares[t].resize(sizeof(n));
            memcpy(result.compares[t].data(), &n, sizeof(n));
        }
    }
    return result;
}

/* ------------------------------------------------------------------------ */
/* Faults: operations outstanding when the target dies */

struct fault_op {
    void *req;
    bool  must_fail; /* the target had to execute it */
    bool  accepted;  /* the call returned no error: the counter counts it */
};

struct fault_state {
    std::vector<fault_op> ops;
    uint8_t               buf[256], cmp[256], res[256];
    fault_report          report;
    uint64_t              cntr_base, cntr_err_base; /* at the start */
};

/* An operation's outcome, in the report. */
void fault_outcome(fault_report *r, const fault_op &o, ucs_status_t status)
{
    if (status != UCS_OK) {
        r->failed++;
    } else if (o.must_fail) {
        r->wrong++;
    }
    if (o.accepted) {
        ++((status == UCS_OK) ? r->accepted_ok : r->accepted_failed);
    }
}

void fault_start(initiator *in, fault_state *st)
{
    memset(&st->report, 0, sizeof(st->report));
    st->cntr_base     = fiatomic_cntr_read(in->cntr);
    st->cntr_err_base = fiatomic_cntr_readerr(in->cntr);
}

/* A mix of cells: native-able and CAS-loop ones, count 1 and > 1, fetch,
 * compare and base. Unsupported ones (forced strategy) are skipped. */
void fault_post_mix(initiator *in, fault_state *st, std::vector<fault_op> *out)
{
    static const struct {
        int family, op, dt;
        size_t count;
    } cells[] = {
        {FIATOMIC_FAMILY_FETCH, FI_SUM, FI_UINT64, 1},
        {FIATOMIC_FAMILY_FETCH, FI_PROD, FI_UINT8, 16},
        {FIATOMIC_FAMILY_FETCH, FI_MAX, FI_DOUBLE, 4},
        {FIATOMIC_FAMILY_COMPARE, FI_CSWAP, FI_UINT32, 1},
        {FIATOMIC_FAMILY_COMPARE, FI_MSWAP, FI_UINT16, 8},
        {FIATOMIC_FAMILY_BASE, FI_SUM, FI_INT32, 8},
    };
    fiatomic_request_param_t param;

    memset(&param, 0, sizeof(param));
    for (size_t c = 0; c < sizeof(cells) / sizeof(cells[0]); ++c) {
        fiatomic_cell_info_t info;
        uint64_t a = in->target.base[0] + 4096 + c * 256;
        ucs_status_ptr_t p;

        if ((fiatomic_query_cell(in->ep, in->keys[0],
                                 (fiatomic_family_t)cells[c].family,
                                 (enum fi_datatype)cells[c].dt,
                                 (enum fi_op)cells[c].op, &info) != 0) ||
            (info.strategy == FIATOMIC_STRATEGY_NONE)) {
            continue;
        }
        switch (cells[c].family) {
        case FIATOMIC_FAMILY_BASE:
            p = fiatomic_atomic_nbx(in->ep, st->buf, cells[c].count, a,
                                    in->keys[0],
                                    (enum fi_datatype)cells[c].dt,
                                    (enum fi_op)cells[c].op, &param);
            break;
        case FIATOMIC_FAMILY_FETCH:
            p = fiatomic_fetch_atomic_nbx(in->ep, st->buf, cells[c].count,
                                          st->res, a, in->keys[0],
                                          (enum fi_datatype)cells[c].dt,
                                          (enum fi_op)cells[c].op, &param);
            break;
        default:
            p = fiatomic_compare_atomic_nbx(in->ep, st->buf, cells[c].count,
                                            st->cmp, st->res, a, in->keys[0],
                                            (enum fi_datatype)cells[c].dt,
                                            (enum fi_op)cells[c].op, &param);
            break;
        }
        bool needs = (cells[c].family != FIATOMIC_FAMILY_BASE) &&
                     info.needs_target_progress;
        st->report.target_needed |= needs;
        st->report.posted++;
        out->push_back({p, needs, !UCS_PTR_IS_ERR(p)});
    }
}

/* Wait for `ops` until `deadline`, count outcomes; the ones still pending
 * are released (they finish in the background). */
uint64_t fault_wait(initiator *in, std::vector<fault_op> *ops,
                    double deadline, fault_report *r)
{
    uint64_t pending = 0;

    for (fault_op &o : *ops) {
        ucs_status_t status = poll_request(in->setup.worker, o.req, deadline);
        if (status == UCS_INPROGRESS) {
            ++pending;
            fiatomic_request_free(o.req);
        } else {
            fault_outcome(r, o, status);
        }
    }
    ops->clear();
    return pending;
}

void fault_finish(initiator *in, fault_state *st, double bound, double start)
{
    fiatomic_request_param_t param;
    std::vector<fault_op> more;
    ucs_status_t status;

    memset(&param, 0, sizeof(param));
    in->faulted = true;
    st->report.pending += fault_wait(in, &st->ops, now_sec() + bound,
                                     &st->report);
    if (st->report.pending == 0) {
        status = poll_request(in->setup.worker,
                              fiatomic_ep_flush_nbx(in->ep, &param),
                              now_sec() + bound);
        st->report.flush_pending = (status == UCS_INPROGRESS);
        fault_post_mix(in, st, &more);
        st->report.later_pending = fault_wait(in, &more, now_sec() + bound,
                                              &st->report);
        /* quiet across the context after the failure: bounded too */
        ucs_status_ptr_t q = fiatomic_flush_nbx(in->setup.fia, &param);
        status = poll_request(in->setup.worker, q, now_sec() + bound);
        st->report.quiet_pending = (status == UCS_INPROGRESS);
        st->report.quiet_status  = status;
        if (status == UCS_INPROGRESS) {
            fiatomic_request_free(q);
        }
    }
    st->report.seconds     = now_sec() - start;
    st->report.cntr_value  = fiatomic_cntr_read(in->cntr) - st->cntr_base;
    st->report.cntr_errors = fiatomic_cntr_readerr(in->cntr) -
                             st->cntr_err_base;
}

int run_initiator()
{
    std::unique_ptr<fault_state> fault(new fault_state());
    initiator in;
    std::vector<job_task> tasks;

    in.faulted = false;
    bool connected = false;

    for (;;) {
        uint32_t type;
        std::vector<uint8_t> payload;

        if (recv_msg(ctrl_fd, &type, &payload, -1) != 0) {
            if (connected) {
                initiator_disconnect(&in);
            }
            return 0;
        }

        switch (type) {
        case MSG_CONNECT: {
            std::string error = initiator_connect(&in, payload);
            if (!error.empty()) {
                reply_error(error);
                _exit(2);
            }
            connected = true;
            reply_ok();
            break;
        }
        case MSG_JOB:
            if (!unpack_job(payload, &tasks)) {
                reply_error("bad MSG_JOB");
            } else {
                reply_ok();
            }
            break;
        case MSG_GO: {
            if (!connected) {
                reply_error("not connected");
                break;
            }
            /* all initiators start at the same moment (CLOCK_MONOTONIC is
             * system-wide) */
            if (payload.size() == sizeof(double)) {
                double start;
                memcpy(&start, payload.data(), sizeof(start));
                while (now_sec() < start) {
                    ucp_worker_progress(in.setup.worker);
                }
            }
            job_result result = run_job(&in, tasks);
            std::vector<uint8_t> packed = pack_job_result(result);
            reply_ok(packed.data(), packed.size());
            break;
        }
        case MSG_FAULT_POST:
            fault_start(&in, fault.get());
            memset(fault->buf, 3, sizeof(fault->buf));
            memset(fault->cmp, 1, sizeof(fault->cmp));
            for (int r = 0; r < 20; ++r) {
                fault_post_mix(&in, fault.get(), &fault->ops);
            }
            reply_ok();
            break;
        case MSG_FAULT_POST_BASE: {
            fiatomic_request_param_t param;
            uint64_t done = 0;

            memset(&param, 0, sizeof(param));
            memset(&fault->report, 0, sizeof(fault->report));
            memset(fault->buf, 3, sizeof(fault->buf));
            for (int r = 0; r < 20; ++r) {
                ucs_status_ptr_t p = fiatomic_atomic_nbx(
                        in.ep, fault->buf, 8, in.target.base[0] + 4096,
                        in.keys[0], FI_INT32, FI_SUM, &param);
                fault->report.posted++;
                done += (poll_request(in.setup.worker, p, now_sec() + 20.0) ==
                         UCS_OK);
            }
            if (done == fault->report.posted) {
                reply_ok();
            } else {
                reply_error("base-family posts did not complete locally");
            }
            break;
        }
        case MSG_FAULT_WAIT: {
            bytes b(payload);
            double bound = b.get<double>(), start = now_sec();
            uint64_t accepted = 0;
            for (const fault_op &o : fault->ops) {
                accepted += o.accepted;
            }
            /* the counter reaches every accepted operation that did not
             * fail yet, or reports an error on the way */
            fault->report.errors_before_wait =
                    fiatomic_cntr_readerr(in.cntr) - fault->cntr_err_base;
            fault->report.cntr_wait = fiatomic_cntr_wait(
                    in.cntr, fault->cntr_base + accepted -
                    fault->report.errors_before_wait, (int)(bound * 1000));
            fault->report.errors_after_wait =
                    fiatomic_cntr_readerr(in.cntr) - fault->cntr_err_base;
            fault_finish(&in, fault.get(), bound, start);
            reply_ok(&fault->report, sizeof(fault->report));
            break;
        }
        case MSG_FAULT_RUN: {
            bytes b(payload);
            double bound = b.get<double>(), start = now_sec();
            fault_start(&in, fault.get());
            reply_ok();
            /* post and retire until something fails or the bound passes */
            /* (nothing may need the target: shared memory it mapped) */
            while ((fault->report.failed == 0) &&
                   (now_sec() - start <
                    ((fault->report.target_needed || !fault->report.posted) ?
                     bound : 2.0))) {
                std::vector<fault_op> still;
                fault_post_mix(&in, fault.get(), &fault->ops);
                ucp_worker_progress(in.setup.worker);
                for (fault_op &o : fault->ops) {
                    ucs_status_t status = poll_request(in.setup.worker,
                                                       o.req, 0);
                    if (status == UCS_INPROGRESS) {
                        still.push_back(o);
                    } else {
                        fault_outcome(&fault->report, o, status);
                    }
                }
                fault->ops.swap(still);
                while (fault->ops.size() > 256) {
                    std::vector<fault_op> one(1, fault->ops.front());
                    fault->ops.erase(fault->ops.begin());
                    fault->report.pending += fault_wait(&in, &one,
                                                        now_sec() + bound,
                                                        &fault->report);
                }
            }
            /* the bound already passed without a failure: what is still
             * outstanding gets a short last chance only */
            fault_finish(&in, fault.get(),
                         fault->report.failed ? bound : 2.0, start);
            reply_ok(&fault->report, sizeof(fault->report));
            break;
        }
        case MSG_EXIT:
            if (connected) {
                initiator_disconnect(&in);
            }
            reply_ok();
            return 0;
        default:
            reply_error("unknown message");
            break;
        }
    }
}

} // namespace

int main(int argc, char **argv)
{
    if ((argc == 5) && !strcmp(argv[1], "target")) {
        return run_target(!strcmp(argv[2], "alloc"), !strcmp(argv[2], "safe"),
                          strtoull(argv[3], NULL, 0),
                          strtoull(argv[4], NULL, 0));
    } else if ((argc == 2) && !strcmp(argv[1], "initiator")) {
        return run_initiator();
    } else if ((argc == 3) && !strcmp(argv[1], "serve")) {
        return remote_serve(argv[2]);
    } else if ((argc >= 4) && !strcmp(argv[1], "remote")) {
        return remote_relay(argv[2], argc - 3, argv + 3);
    }
    fprintf(stderr, "usage: %s target <user|alloc|safe> <len0> <len1>\n"
            "       %s initiator\n"
            "       %s serve <port>         (peers for another machine)\n"
            "       %s remote <host:port> <target|initiator> [args...]\n",
            argv[0], argv[0], argv[0], argv[0]);
    return 1;
}
