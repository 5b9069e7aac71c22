/*
 * Shared by the fiatomic test suites and fiatomic_test_peer: the control
 * channel protocol (independent of UCX and of the library under test), byte
 * buffers, UCP setup and request waiting.
 */
#ifndef FIATOMIC_TEST_COMMON_H_
#define FIATOMIC_TEST_COMMON_H_

#include <fiatomic.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

namespace fiatomic_test {

/* ------------------------------------------------------------------------ */
/* Control channel: a SOCK_STREAM socket (fd 3 in the peer). Every message is
 * a header and `length` bytes of payload. */

enum msg_type : uint32_t {
    /* test -> peer */
    MSG_WRITE = 1,   /* u32 region, u64 offset, bytes: store target bytes */
    MSG_READ,        /* u32 region, u64 offset, u64 length: dump them */
    MSG_PAUSE,       /* stop calling ucp_worker_progress until RESUME */
    MSG_RESUME,
    MSG_EXIT,        /* clean up and exit(0) */
    MSG_CONNECT,     /* initiator: the target's hello; answer when ready */
    MSG_JOB,         /* initiator: a job (see job_task) */
    MSG_GO,          /* initiator: f64 start time (now_sec()): run the job
                        then, answer with its results */
    MSG_FAULT_POST,  /* initiator: post a mix of operations and keep them
                        outstanding; answer at once */
    MSG_FAULT_WAIT,  /* initiator: f64 bound: wait for them, flush, post
                        more; answer with a fault_report */
    MSG_FAULT_RUN,   /* initiator: f64 bound: answer at once, then post
                        continuously until operations fail (or the bound
                        passes), wait for the rest; a second answer with a
                        fault_report */
    MSG_REEXPOSE,    /* target: u32 region: unexpose it, expose new memory
                        (zeroed) of the same length; answer with the new
                        target_info */
    MSG_DESTROY_CONTEXT, /* target: unexpose everything and destroy the
                            fiatomic context, keep progressing the worker */
    MSG_FAULT_POST_BASE, /* initiator: post base-family operations that
                            complete locally only (no reply), wait for that
                            local completion; answer at once */
    /* peer -> test */
    MSG_HELLO = 100, /* target: worker address, keys, regions */
    MSG_OK,          /* reply, with optional payload */
    MSG_ERROR,       /* reply, payload is a message */
    /* across machines (fiatomic_test_remote.h) */
    MSG_SPAWN = 200, /* relay -> launcher: u32 argc, blobs; u32 envc, blobs */
    MSG_PEER_EXIT    /* launcher -> relay: i32 wait status of the peer */
};

struct msg_header {
    uint32_t type;
    uint32_t reserved;
    uint64_t length;
};

/* 0 on success, -1 on error/EOF, -2 on timeout (timeout_ms < 0: none). */
int send_msg(int fd, uint32_t type, const void *data, size_t length);
int recv_msg(int fd, uint32_t *type, std::vector<uint8_t> *payload,
             int timeout_ms, uint64_t max_length = 1ull << 32);

/** Append / consume raw values. */
class bytes {
public:
    bytes() : m_pos(0) {}
    explicit bytes(std::vector<uint8_t> data) : m_data(data), m_pos(0) {}

    template <typename T> void put(const T &v)
    {
        put_raw(&v, sizeof(v));
    }
    void put_raw(const void *p, size_t n)
    {
        const uint8_t *b = static_cast<const uint8_t*>(p);
        if (n > 0) {
            m_data.insert(m_data.end(), b, b + n);
        }
    }
    void put_blob(const void *p, size_t n)
    {
        put<uint64_t>(n);
        put_raw(p, n);
    }

    template <typename T> T get()
    {
        T v;
        get_raw(&v, sizeof(v));
        return v;
    }
    bool get_raw(void *p, size_t n);
    std::vector<uint8_t> get_blob();
    bool ok() const { return m_pos <= m_data.size(); }

    const std::vector<uint8_t> &data() const { return m_data; }

private:
    std::vector<uint8_t> m_data;
    size_t               m_pos;
};

/* ------------------------------------------------------------------------ */
/* What a target tells its initiators. Two exposed regions, so that vectors
 * can mix keys. */

#define FIATOMIC_TEST_REGIONS 2

struct target_info {
    uint64_t             pid;
    std::vector<uint8_t> worker_address;
    uint64_t             base[FIATOMIC_TEST_REGIONS];
    uint64_t             length[FIATOMIC_TEST_REGIONS];
    std::vector<uint8_t> key[FIATOMIC_TEST_REGIONS];

    std::vector<uint8_t> pack() const;
    bool                 unpack(const std::vector<uint8_t> &data);
};

/* ------------------------------------------------------------------------ */
/* A job for an initiator process: tasks run in lock step, one operation per
 * task per iteration, all of an iteration's operations in flight at once. */

enum job_kind : uint32_t {
    JOB_EXPLICIT = 1, /* operands (and compares) given per iteration */
    JOB_CSWAP_CHAIN,  /* FI_CSWAP(compare = guess, new = guess + 1); guess
                         becomes the fetched value on a loss, guess + 1 on
                         a win */
    JOB_REPEAT        /* the one operand (base or fetch family) over and
                         over for duration_us (at most `iterations` times):
                         the result's compares are the number of
                         operations done (a uint64_t), its fetched values
                         those of the fetch family */
};

struct job_task {
    uint32_t             kind;
    uint32_t             family;     /* fiatomic_family_t */
    uint32_t             op;
    uint32_t             datatype;
    uint32_t             region;
    uint64_t             offset;
    uint64_t             iterations;
    std::vector<uint8_t> operands;   /* iterations * size (EXPLICIT) */
    std::vector<uint8_t> compares;   /* iterations * size (EXPLICIT,
                                        compare family), or the chain's
                                        initial guess (size bytes) */
    uint64_t             duration_us = 0; /* JOB_REPEAT: run for so long
                                             (at most `iterations`) */
};

struct job_result {
    /* per task: the compare value used and the fetched value, per
     * iteration (iterations * size each) */
    std::vector<std::vector<uint8_t>> compares;
    std::vector<std::vector<uint8_t>> fetched;
    std::string                       error; /* empty when all succeeded */
};

std::vector<uint8_t> pack_job(const std::vector<job_task> &tasks);
bool unpack_job(const std::vector<uint8_t> &data, std::vector<job_task> *tasks);
std::vector<uint8_t> pack_job_result(const job_result &result);
bool unpack_job_result(const std::vector<uint8_t> &data, job_result *result);

/* What an initiator saw when its target died. */
struct fault_report {
    uint64_t posted;            /* operations posted */
    uint64_t failed;            /* completed with an error */
    uint64_t pending;           /* not complete at the bound */
    uint64_t wrong;             /* succeeded though the target had to act */
    uint64_t flush_pending;     /* flush not complete at the bound */
    uint64_t later_pending;     /* operations posted after the failure,
                                   not complete at the bound */
    uint64_t target_needed;     /* some posted cell needs target progress */
    double   seconds;           /* from the first wait to the end */
    /* the counter bound to the endpoint: what it must count (operations
     * whose call returned no error, by outcome) and what it counted */
    uint64_t accepted_ok;
    uint64_t accepted_failed;
    uint64_t cntr_value;        /* since the fault test started */
    uint64_t cntr_errors;
    int64_t  cntr_wait;         /* fiatomic_cntr_wait for every accepted
                                   operation not failed yet, at the first
                                   wait (FAULT_WAIT) */
    uint64_t errors_before_wait; /* errors counted before that wait */
    uint64_t errors_after_wait;  /* ... and when it returned */
    uint64_t quiet_pending;     /* fiatomic_flush_nbx not complete */
    int64_t  quiet_status;      /* its status */
};

/* ------------------------------------------------------------------------ */
/* UCP helpers */

struct ucp_setup {
    ucp_context_h context;
    ucp_worker_h  worker;
    fiatomic_h    fia;
};

/**
 * Create a UCP context (RMA|AMO32|AMO64, plus AM when `am`: target-side
 * execution; AM only when `am` and FIATOMIC_TEST_AM_ONLY is set) with the
 * given UCX configuration overrides ("TLS", "tcp"), a worker
 * (UCS_THREAD_MODE_MULTI with `multi_thread`, else SINGLE), and a fiatomic
 * context.
 */
ucs_status_t ucp_setup_create(const std::vector<std::pair<std::string,
                                                          std::string>> &cfg,
                              const fiatomic_params_t *params, bool am,
                              ucp_setup *setup, std::string *error,
                              bool multi_thread = false);

/** Whether a peer process uses UCP_FEATURE_AM (FIATOMIC_TEST_AM=0|1). */
bool peer_am_from_env();
void ucp_setup_destroy(ucp_setup *setup);

/** Close a ucp endpoint, progressing: flushed first (bounded) so that no
 *  wireup message is left pending, or forced after a failure (the peer
 *  gone or the endpoint failed: no flush). */
void ucp_ep_close_blocking(ucp_worker_h worker, ucp_ep_h ep, bool force);

/** Monotonic seconds. */
double now_sec();

/**
 * Wait for an operation's result: NULL -> UCS_OK, error pointer -> its
 * status, request -> progress until complete (then free it). Gives
 * UCS_ERR_TIMED_OUT (and frees the request) after `timeout_sec`.
 */
ucs_status_t wait_request(ucp_worker_h worker, ucs_status_ptr_t p,
                          double timeout_sec);

/**
 * Progress until the request completes or `deadline` (now_sec()) passes:
 * UCS_INPROGRESS then (the request stays valid), else the final status and
 * the request is freed. NULL and error pointers as wait_request().
 */
ucs_status_t poll_request(ucp_worker_h worker, ucs_status_ptr_t p,
                          double deadline);

/** Element size of a datatype (the reference model's idea). */
size_t dt_size(int datatype);

/** Aligned, zeroed heap buffer. */
class abuf {
public:
    explicit abuf(size_t size = 0, size_t align = 64);
    ~abuf();
    abuf(const abuf &) = delete;
    abuf &operator=(const abuf &) = delete;
    uint8_t *data() { return m_p; }
    const uint8_t *data() const { return m_p; }
    size_t size() const { return m_size; }
    void resize(size_t size);

private:
    uint8_t *m_p;
    size_t   m_size;
    size_t   m_align;
};

} // namespace fiatomic_test

#endif
