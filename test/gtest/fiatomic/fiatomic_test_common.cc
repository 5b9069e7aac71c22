#include "fiatomic_test_common.h"

#include "fiatomic_ref.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

namespace fiatomic_test {

static int wait_fd(int fd, short events, int timeout_ms)
{
    struct pollfd pfd = {fd, events, 0};
    int ret;

    do {
        ret = poll(&pfd, 1, timeout_ms);
    } while ((ret < 0) && (errno == EINTR));
    return ret; /* 0: timeout */
}

static int write_all(int fd, const void *data, size_t length)
{
    const uint8_t *p = static_cast<const uint8_t*>(data);
    ssize_t n;

    while (length > 0) {
        n = send(fd, p, length, MSG_NOSIGNAL); /* a dead peer: EPIPE */
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN) {
                wait_fd(fd, POLLOUT, -1);
                continue;
            }
            return -1;
        }
        p      += n;
        length -= n;
    }
    return 0;
}

static int read_all(int fd, void *data, size_t length, double deadline)
{
    uint8_t *p = static_cast<uint8_t*>(data);
    ssize_t n;
    int ret, timeout_ms;

    while (length > 0) {
        if (deadline > 0) {
            timeout_ms = (int)((deadline - now_sec()) * 1000.0);
            if (timeout_ms <= 0) {
                return -2;
            }
        } else {
            timeout_ms = -1;
        }
        ret = wait_fd(fd, POLLIN, timeout_ms);
        if (ret == 0) {
            return -2;
        } else if (ret < 0) {
            return -1;
        }
        n = read(fd, p, length);
        if (n < 0) {
            if ((errno == EINTR) || (errno == EAGAIN)) {
                continue;
            }
            return -1;
        } else if (n == 0) {
            return -1; /* EOF */
        }
        p      += n;
        length -= n;
    }
    return 0;
}

int send_msg(int fd, uint32_t type, const void *data, size_t length)
{
    msg_header hdr = {type, 0, length};

    if (write_all(fd, &hdr, sizeof(hdr)) != 0) {
        return -1;
    }
    return (length > 0) ? write_all(fd, data, length) : 0;
}

int recv_msg(int fd, uint32_t *type, std::vector<uint8_t> *payload,
             int timeout_ms, uint64_t max_length)
{
    double deadline = (timeout_ms < 0) ? 0 : now_sec() + timeout_ms / 1000.0;
    msg_header hdr;
    int ret;

    ret = read_all(fd, &hdr, sizeof(hdr), deadline);
    if (ret != 0) {
        return ret;
    }
    if (hdr.length > max_length) {
        return -1;
    }
    *type = hdr.type;
    payload->resize(hdr.length);
    if (hdr.length == 0) {
        return 0;
    }
    /* the body follows the header at once: no deadline for it */
    return read_all(fd, payload->data(), hdr.length, 0);
}

bool bytes::get_raw(void *p, size_t n)
{
    if ((m_pos > m_data.size()) || (m_data.size() - m_pos < n)) {
        m_pos = m_data.size() + 1; /* poison */
        if (n > 0) {
            memset(p, 0, n);
        }
        return false;
    }
    if (n > 0) {
        memcpy(p, m_data.data() + m_pos, n);
    }
    m_pos += n;
    return true;
}

std::vector<uint8_t> bytes::get_blob()
{
    uint64_t n = get<uint64_t>();
    std::vector<uint8_t> v;

    if (!ok() || (n > m_data.size() - m_pos)) {
        m_pos = m_data.size() + 1;
        return v;
    }
    v.resize(n);
    get_raw(v.data(), n);
    return v;
}

std::vector<uint8_t> target_info::pack() const
{
    bytes b;

    b.put(pid);
    b.put_blob(worker_address.data(), worker_address.size());
    for (int i = 0; i < FIATOMIC_TEST_REGIONS; ++i) {
        b.put(base[i]);
        b.put(length[i]);
        b.put_blob(key[i].data(), key[i].size());
    }
    return b.data();
}

bool target_info::unpack(const std::vector<uint8_t> &data)
{
    bytes b(data);

    pid            = b.get<uint64_t>();
    worker_address = b.get_blob();
    for (int i = 0; i < FIATOMIC_TEST_REGIONS; ++i) {
        base[i]   = b.get<uint64_t>();
        length[i] = b.get<uint64_t>();
        key[i]    = b.get_blob();
    }
    return b.ok();
}

std::vector<uint8_t> pack_job(const std::vector<job_task> &tasks)
{
    bytes b;

    b.put<uint64_t>(tasks.size());
    for (const job_task &t : tasks) {
        b.put(t.kind);
        b.put(t.family);
        b.put(t.op);
        b.put(t.datatype);
        b.put(t.region);
        b.put(t.offset);
        b.put(t.iterations);
        b.put_blob(t.operands.data(), t.operands.size());
        b.put_blob(t.compares.data(), t.compares.size());
        b.put(t.duration_us);
    }
    return b.data();
}

bool unpack_job(const std::vector<uint8_t> &data, std::vector<job_task> *tasks)
{
    bytes b(data);
    uint64_t n = b.get<uint64_t>();

    if (n > 4096) {
        return false;
    }
    tasks->resize(n);
    for (job_task &t : *tasks) {
        t.kind       = b.get<uint32_t>();
        t.family     = b.get<uint32_t>();
        t.op         = b.get<uint32_t>();
        t.datatype   = b.get<uint32_t>();
        t.region     = b.get<uint32_t>();
        t.offset     = b.get<uint64_t>();
        t.iterations = b.get<uint64_t>();
        t.operands   = b.get_blob();
        t.compares   = b.get_blob();
        t.duration_us = b.get<uint64_t>();
    }
    return b.ok();
}

std::vector<uint8_t> pack_job_result(const job_result &result)
{
    bytes b;

    b.put_blob(result.error.data(), result.error.size());
    b.put<uint64_t>(result.fetched.size());
    for (size_t i = 0; i < result.fetched.size(); ++i) {
        b.put_blob(result.compares[i].data(), result.compares[i].size());
        b.put_blob(result.fetched[i].data(), result.fetched[i].size());
    }
    return b.data();
}

bool unpack_job_result(const std::vector<uint8_t> &data, job_result *result)
{
    bytes b(data);
    std::vector<uint8_t> err = b.get_blob();
    uint64_t n;

    result->error.assign(err.begin(), err.end());
    n = b.get<uint64_t>();
    if (!b.ok() || (n > 4096)) {
        return false;
    }
    result->compares.resize(n);
    result->fetched.resize(n);
    for (uint64_t i = 0; i < n; ++i) {
        result->compares[i] = b.get_blob();
        result->fetched[i]  = b.get_blob();
    }
    return b.ok();
}

ucs_status_t ucp_setup_create(const std::vector<std::pair<std::string,
                                                          std::string>> &cfg,
                              const fiatomic_params_t *params, bool am,
                              ucp_setup *setup, std::string *error,
                              bool multi_thread)
{
    ucp_params_t ucp_params;
    ucp_worker_params_t worker_params;
    ucp_config_t *config;
    ucs_status_t status;

    setup->context = NULL;
    setup->worker  = NULL;
    setup->fia     = NULL;

    status = ucp_config_read(NULL, NULL, &config);
    if (status != UCS_OK) {
        *error = std::string("ucp_config_read: ") +
                 ucs_status_string(status);
        return status;
    }
    for (const auto &kv : cfg) {
        status = ucp_config_modify(config, kv.first.c_str(),
                                   kv.second.c_str());
        if (status != UCS_OK) {
            *error = "ucp_config_modify(" + kv.first + "=" + kv.second +
                     "): " + ucs_status_string(status);
            ucp_config_release(config);
            return status;
        }
    }

    memset(&ucp_params, 0, sizeof(ucp_params));
    ucp_params.field_mask = UCP_PARAM_FIELD_FEATURES;
    ucp_params.features   = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 |
                            UCP_FEATURE_AMO64 | (am ? UCP_FEATURE_AM : 0);
    if (am && (getenv("FIATOMIC_TEST_AM_ONLY") != NULL)) {
        /* a target that exposes only target-only memory needs nothing else:
         * without RMA/AMO, UCP's software RMA is not even registered */
        ucp_params.features = UCP_FEATURE_AM;
    }
    status = ucp_init(&ucp_params, config, &setup->context);
    ucp_config_release(config);
    if (status != UCS_OK) {
        *error = std::string("ucp_init: ") + ucs_status_string(status);
        return status;
    }

    memset(&worker_params, 0, sizeof(worker_params));
    worker_params.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    worker_params.thread_mode = multi_thread ? UCS_THREAD_MODE_MULTI :
                                               UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(setup->context, &worker_params,
                               &setup->worker);
    if (status != UCS_OK) {
        *error = std::string("ucp_worker_create: ") +
                 ucs_status_string(status);
        goto err_cleanup;
    }

    status = fiatomic_create(setup->context, setup->worker, params,
                             &setup->fia);
    if (status != UCS_OK) {
        *error = std::string("fiatomic_create: ") + ucs_status_string(status);
        goto err_cleanup;
    }
    return UCS_OK;

err_cleanup:
    ucp_setup_destroy(setup);
    return status;
}

void ucp_setup_destroy(ucp_setup *setup)
{
    if (setup->fia != NULL) {
        fiatomic_destroy(setup->fia);
        setup->fia = NULL;
    }
    if (setup->worker != NULL) {
        ucp_worker_destroy(setup->worker);
        setup->worker = NULL;
    }
    if (setup->context != NULL) {
        ucp_cleanup(setup->context);
        setup->context = NULL;
    }
}

/* Progresses until a UCP request completes or the deadline passes (the
 * request is then released when it completes) */
static void ucp_request_wait_until(ucp_worker_h worker, ucs_status_ptr_t req,
                                   double deadline)
{
    ucs_status_t status;

    if (!UCS_PTR_IS_PTR(req)) {
        return;
    }
    do {
        ucp_worker_progress(worker);
        status = ucp_request_check_status(req);
    } while ((status == UCS_INPROGRESS) && (now_sec() < deadline));
    ucp_request_free(req);
}

void ucp_ep_close_blocking(ucp_worker_h worker, ucp_ep_h ep, bool force)
{
    ucp_request_param_t param;
    double deadline = now_sec() + 30.0;

    memset(&param, 0, sizeof(param));
    if (!force) {
        /* Settle first: flush while the peer still progresses, so that the
         * endpoint owes it nothing (wireup's request sent, its reply
         * received). An endpoint closed right after ucp_ep_create can
         * otherwise still hold wireup's REQ in the pending queue of a tcp
         * lane whose connection is being set up, and UCX 1.13.1 aborts
         * (ucp_request.c:684, from uct_tcp_ep_pending_purge) when a close
         * or a failure purges it; the peer, left with its reply pending on
         * a connection to a process that is gone, fails the same way. */
        ucp_request_wait_until(worker, ucp_ep_flush_nbx(ep, &param),
                               now_sec() + 10.0);
    }
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    ucp_request_wait_until(worker, ucp_ep_close_nbx(ep, &param), deadline);
}

double now_sec()
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

ucs_status_t poll_request(ucp_worker_h worker, ucs_status_ptr_t p,
                          double deadline)
{
    ucs_status_t status;
    unsigned idle = 0;

    if (p == NULL) {
        return UCS_OK;
    } else if (UCS_PTR_IS_ERR(p)) {
        return UCS_PTR_STATUS(p);
    }

    for (;;) {
        status = fiatomic_request_check_status(p);
        if (status != UCS_INPROGRESS) {
            break;
        }
        if (ucp_worker_progress(worker) == 0) {
            if ((++idle % 64) == 0) {
                if (now_sec() > deadline) {
                    return UCS_INPROGRESS;
                }
                sched_yield();
            }
        }
    }
    fiatomic_request_free(p);
    return status;
}

ucs_status_t wait_request(ucp_worker_h worker, ucs_status_ptr_t p,
                          double timeout_sec)
{
    ucs_status_t status = poll_request(worker, p, now_sec() + timeout_sec);

    if (status == UCS_INPROGRESS) {
        fiatomic_request_free(p);
        return UCS_ERR_TIMED_OUT;
    }
    return status;
}

bool peer_am_from_env()
{
    const char *v = getenv("FIATOMIC_TEST_AM");

    return (v == NULL) || strcmp(v, "0");
}

size_t dt_size(int datatype)
{
    return fiatomic_ref_datatype_size(datatype);
}

abuf::abuf(size_t size, size_t align) : m_p(NULL), m_size(0), m_align(align)
{
    resize(size);
}

abuf::~abuf()
{
    free(m_p);
}

void abuf::resize(size_t size)
{
    void *p = NULL;

    free(m_p);
    m_p    = NULL;
    m_size = size;
    if (posix_memalign(&p, m_align, (size == 0) ? 1 : size) != 0) {
        abort();
    }
    m_p = static_cast<uint8_t*>(p);
    memset(m_p, 0, (size == 0) ? 1 : size);
}

} // namespace fiatomic_test
