/**
 * fiatomic_perftest: shared types of the benchmark. One file per job:
 *   perftest_ctl.c      control channel (bootstrap and target access)
 *   perftest_node.c     UCP context, worker and fiatomic context
 *   perftest_server.c   the target process
 *   perftest_session.c  the initiator's connection to a target (+ loopback)
 *   perftest_values.c   operand/target values per datatype
 *   perftest_verify.c   one cell checked against the reference model
 *   perftest_drv_*.c    how a call is posted: fiatomic, raw UCP, libfabric
 *   perftest_measure.c  latency and rate loops, statistics
 *   perftest_report.c   ucx_perftest-style output, tables and CSV
 *   perftest_matrix.c   sweep over every supported cell
 *   perftest_goals.c    the performance goals, measured and judged
 */
#ifndef FIATOMIC_PERFTEST_H_
#define FIATOMIC_PERFTEST_H_

#include "fiatomic.h"
#include "tool_common.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PERF_NAME              "fiatomic_perftest"
#define PERF_DEFAULT_PORT      13338
#define PERF_MAX_ELEM_SIZE     32
/* Target memory: big enough for the largest window x count x element. */
#define PERF_REGION_SIZE       (16u << 20)
#define PERF_UCP_REGION_SIZE   (1u << 20)
#define PERF_SLOT_ALIGN        64  /* slots on separate cache lines */
/* --providers: libfabric providers timed side by side in one run */
#define PERF_MAX_OFI_PROVIDERS 4
#define PERF_MAX_OFI_NAME      48  /* characters of a provider's name */

/* Regions of the target the control channel can read and write. */
typedef enum {
    PERF_REGION_FIATOMIC = 0, /* exposed by fiatomic (ALLOCATE) */
    PERF_REGION_UCP      = 1, /* raw ucp_mem_map for the UCP baseline */
    PERF_REGION_OFI      = 2, /* registered with libfabric: one region per
                                 provider, PERF_REGION_OFI + its index */
    PERF_REGION_LAST     = PERF_REGION_OFI + PERF_MAX_OFI_PROVIDERS
} perf_region_t;

typedef struct perf_cell {
    int family;   /* fiatomic_family_t */
    int op;       /* enum fi_op */
    int datatype; /* enum fi_datatype */
} perf_cell_t;

/* What is measured for one cell. */
typedef struct perf_params {
    perf_cell_t cell;
    size_t      count;    /* elements per call */
    unsigned    window;   /* calls in flight; 1 = latency test */
    size_t      iters;
    size_t      warmup;
} perf_params_t;

/* Latencies in us. See perftest_measure.c for the three views. */
typedef struct perf_result {
    size_t iters;
    double lat_typical; /* median over batches of (batch time / calls) */
    double lat_avg;     /* timed span / calls ("overall") */
    double lat_median;  /* post-to-completion of sampled calls */
    double lat_min;
    double lat_p90;
    double lat_p99;
    double lat_max;
    double rate;        /* calls per second, overall (1 / lat_avg) */
} perf_result_t;


/* ------------------------------------------------------------------------ */
/* Control channel (perftest_ctl.c): length-prefixed messages over a stream
 * socket; the target's memory is read and written by the target's CPU, so
 * verification does not depend on the library under test. */

enum {
    PERF_CMD_WRITE = 1, /* payload -> region at offset; reply empty */
    PERF_CMD_READ,      /* reply: length bytes of region at offset */
    PERF_CMD_RSS,       /* reply: uint64_t RSS bytes, uint64_t mallocs */
    PERF_CMD_OFI_OPEN,  /* payload: provider name, offset: the provider's
                           index; reply: ofi target info */
    PERF_CMD_OFI_CLOSE, /* offset: the provider's index */
    PERF_CMD_QUIT
};

typedef struct perf_msg_hdr {
    uint32_t cmd;
    uint32_t region;
    uint64_t offset;
    uint64_t length;   /* READ: bytes wanted; others: payload bytes */
} perf_msg_hdr_t;

int perf_ctl_write_all(int fd, const void *buf, size_t len);
int perf_ctl_read_all(int fd, void *buf, size_t len);
int perf_ctl_send_blob(int fd, const void *buf, size_t len);
/** malloc'ed blob (free it), NULL on error. */
void *perf_ctl_recv_blob(int fd, size_t *len_p);
int perf_ctl_listen(int port);
int perf_ctl_accept(int listen_fd);
int perf_ctl_connect(const char *host, int port);


/* ------------------------------------------------------------------------ */
/* UCP node (perftest_node.c)                                                */

typedef tool_node_t perf_node_t;

int perf_node_init(perf_node_t *node);
void perf_node_cleanup(perf_node_t *node);
/** RSS of this process in bytes (from /proc/self/statm). */
uint64_t perf_rss_bytes(void);
/** Calls to the malloc family so far (perftest_malloc.c); stays 0 where
 *  they cannot be counted (sanitizers, valgrind). */
uint64_t perf_malloc_calls(void);
/** 1 when perf_malloc_calls() really counts. */
int perf_malloc_count_works(void);


/* ------------------------------------------------------------------------ */
/* Target side (perftest_server.c)                                           */

/** Serve one initiator on a connected control socket until it quits. */
int perf_server_run(int ctl_fd);


/* ------------------------------------------------------------------------ */
/* Initiator session (perftest_session.c)                                    */

typedef struct perf_session {
    int           ctl_fd;
    int           server_pid;   /* loopback child, or -1 */
    perf_node_t   node;
    ucp_ep_h      ucp_ep;
    fiatomic_ep_h ep;
    uint64_t      key;          /* fiatomic key of the target region */
    uint64_t      base;         /* its remote address */
    ucp_rkey_h    ucp_rkey;     /* raw UCP key of the baseline region */
    uint64_t      ucp_base;
    const char    *transport;   /* UCX_TLS of the session, for reports */
    char          lane_tl[32];  /* the transport UCP chose for the atomic
                                   lane (else the active-message lane);
                                   "" until perf_session_lane_tl() */
    struct perf_ofi_client *ofi[PERF_MAX_OFI_PROVIDERS]; /* libfabric
                                   baselines, opened on demand */
    void          *key_buf;     /* the target's packed fiatomic key */
    size_t        key_len;
    fiatomic_ep_h ep_ordered;   /* --ordered: same ucp_ep, same-address
                                   ordering; NULL until asked for */
    uint64_t      key_ordered;  /* its key */
    void          *address_buf; /* the target's worker address */
    size_t        address_len;
    void          *ucp_rkey_buf; /* its packed UCP key (baseline region) */
    size_t        ucp_rkey_len;
    int           no_reset;     /* the drivers leave target memory as it
                                   is (a scaling initiator: the coordinator
                                   prepared it) */
} perf_session_t;

/** Loopback: start a target process with this environment and connect.
 *  cpu_server >= 0 pins it. */
int perf_session_loopback(perf_session_t *s, const char *self_exe,
                          int cpu_server);
/** Connect to a running `fiatomic_perftest --server`. */
int perf_session_connect(perf_session_t *s, const char *host, int port);
void perf_session_close(perf_session_t *s);
/** The UCX half of perf_session_close(): endpoints, keys, node; the control
 *  channel stays open. */
void perf_session_teardown(perf_session_t *s);
/** Bootstrap (worker address and keys, as a target sends them) from a
 *  connected fd that stays the caller's: a scaling initiator. */
int perf_session_attach(perf_session_t *s, int fd);
/** Open (once) a second fiatomic endpoint over the session's ucp_ep with
 *  every same-address atomic ordering, and swap it with s->ep/s->key
 *  (called again: swap back). */
int perf_session_swap_ordered(perf_session_t *s);
/** The transport UCP uses for the session's atomics: that of the endpoint's
 * atomic lane, else of its active-message lane (software atomics), read from
 * ucp_ep_print_info() ("posix", "tcp", ...); "unknown" when unreadable. */
const char *perf_session_lane_tl(perf_session_t *s);

/** Target memory through the control channel (target CPU, not UCX). */
int perf_session_write(perf_session_t *s, perf_region_t region,
                       uint64_t offset, const void *buf, size_t len);
int perf_session_read(perf_session_t *s, perf_region_t region,
                      uint64_t offset, void *buf, size_t len);
int perf_session_server_rss(perf_session_t *s, uint64_t *rss_p,
                            uint64_t *mallocs_p);

/** Progress until a fiatomic request completes; frees it. */
ucs_status_t perf_session_wait(perf_session_t *s, ucs_status_ptr_t sptr);
ucs_status_t perf_session_flush(perf_session_t *s);


/* ------------------------------------------------------------------------ */
/* Values (perftest_values.c)                                                */

/** Element value number `seed` of a datatype: integers, signed zeros,
 *  NaN, infinities, complex pairs. Writes fiatomic_ref_datatype_size()
 *  bytes (padding of long double zeroed). */
void perf_value(int datatype, unsigned seed, void *out);
/** Operands for the timed loops: keep the target stable or bounded. */
void perf_bench_operand(const perf_cell_t *cell, void *operand,
                        void *compare);


/* ------------------------------------------------------------------------ */
/* Verification (perftest_verify.c)                                          */

/** Check a cell against fiatomic_ref with several calls of `count`
 *  elements. 0 = ok; -1 = mismatch (described in msg); -2 = an error
 *  status from the library (in msg). */
int perf_verify_cell(perf_session_t *s, const perf_cell_t *cell,
                     size_t count, char *msg, size_t max);


/* ------------------------------------------------------------------------ */
/* Drivers: the same loops time fiatomic, raw UCP and libfabric.             */

typedef struct perf_driver perf_driver_t;
struct perf_driver {
    const char *name;
    void       *arg;
    /** Post the call of slot `slot`. delivery: the call completes only when
     *  done at the target. *req_p = NULL when it completed in place. */
    ucs_status_t (*post)(void *arg, unsigned slot, int delivery,
                         void **req_p);
    /** UCS_INPROGRESS, or the final status (the request is released). */
    ucs_status_t (*test)(void *arg, void *req);
    void         (*progress)(void *arg);
    /** Complete everything posted (blocking). */
    ucs_status_t (*flush)(void *arg);
    void         (*cleanup)(void *arg);
};

/* perftest_drv_fia.c */
int perf_drv_fia_init(perf_driver_t *drv, perf_session_t *s,
                      const perf_params_t *p);
/* perftest_drv_ucp.c: 0, or -1 when UCP has no such operation */
int perf_drv_ucp_has(const perf_cell_t *cell);
int perf_drv_ucp_init(perf_driver_t *drv, perf_session_t *s,
                      const perf_params_t *p);
/* perftest_drv_ofi.c */
int perf_drv_ofi_available(void);
/** The provider as the index-th libfabric baseline of the session: 0, -1
 *  when it lacks the cell, -2 when it cannot be opened at all. */
int perf_drv_ofi_init(perf_driver_t *drv, perf_session_t *s, unsigned index,
                      const perf_params_t *p, const char *provider);
/** libfabric provider that corresponds to a UCX transport, NULL if none. */
const char *perf_drv_ofi_provider_for(const char *transport);
/** Close the session's libfabric baselines, those opened. */
void perf_drv_ofi_close(perf_session_t *s);

/* perftest_slots.c: buffers of the window's slots; slot k works on the
 * target at k * stride. operand, compare and result are one block of
 * 3 * stride * window bytes starting at operand. */
typedef struct perf_slots {
    size_t  stride;
    uint8_t *operand;
    uint8_t *compare;
    uint8_t *result;
} perf_slots_t;

size_t perf_slot_stride(const perf_params_t *p);
int perf_slots_init(perf_slots_t *sl, const perf_params_t *p);
void perf_slots_cleanup(perf_slots_t *sl);


/* ------------------------------------------------------------------------ */
/* Measurement (perftest_time.c, perftest_measure.c)                         */

void perf_time_init(void);
uint64_t perf_time_now(void);
double perf_time_to_us(uint64_t ticks);

/** Seconds between progress lines of a long measurement; 0: none. */
void perf_measure_report_interval(double seconds);
double perf_measure_report_seconds(void);
/** Run warm-up and iterations; 0 or -1 (error printed). */
int perf_measure(perf_driver_t *drv, const perf_params_t *p,
                 perf_result_t *res);


/* ------------------------------------------------------------------------ */
/* Options (fiatomic_perftest.c) and modes                                   */

#define PERF_MAX_TRANSPORTS 8
#define PERF_MAX_GOAL_NAMES 32
#define PERF_SCALE_MAX_POINTS      16
#define PERF_SCALE_MAX_STRATEGIES  8
#define PERF_SCALE_MAX_INITIATORS  64
#define PERF_SCALE_MAX_WINDOW      64

/* What a scaling run's coordinator tells each initiator (after the five
 * bootstrap blobs of a target, whose base is that of the initiator's
 * elements). */
typedef struct perf_scale_task {
    perf_cell_t cell;
    uint64_t    count;
    uint32_t    window;
    uint32_t    index;          /* initiator number, from 0 */
    uint64_t    warmup;         /* calls before the timed span */
    double      report_us;      /* progress messages; 0: none */
    char        strategy[16];   /* FIATOMIC_STRATEGY; "" = inherited */
} perf_scale_task_t;

enum {
    PERF_SCALE_READY = 1,  /* initiator -> coordinator: set up, warmed up */
    PERF_SCALE_PROGRESS,   /* calls so far */
    PERF_SCALE_DONE,       /* the timed span ended; counts final */
    PERF_SCALE_FAILED      /* error[] says why */
};

/* The coordinator's start signal: CLOCK_MONOTONIC nanoseconds. */
typedef struct perf_scale_go {
    uint64_t start_ns;
    uint64_t end_ns;
} perf_scale_go_t;

/* Initiator -> coordinator, always whole. */
typedef struct perf_scale_msg {
    uint32_t type;
    int32_t  strategy;          /* fiatomic_strategy_t of the cell here */
    uint64_t calls;             /* completed in the timed span */
    uint64_t slot_calls[PERF_SCALE_MAX_WINDOW]; /* every call that took
                                   effect per slot, warm-up included */
    uint64_t cas_attempts;      /* timed span only */
    uint64_t cas_retries;
    uint64_t cas_handoffs;
    double   seconds;           /* the timed span as measured here */
    char     error[160];
} perf_scale_msg_t;

uint64_t perf_scale_clock_ns(void);

typedef enum {
    PERF_FMT_TEXT,
    PERF_FMT_CSV
} perf_fmt_t;

typedef struct perf_opts {
    perf_params_t params;
    const char    *host;          /* client of a --server; NULL: loopback */
    int           port;
    const char    *transports[PERF_MAX_TRANSPORTS]; /* matrix: UCX_TLS list */
    unsigned      num_transports;
    const char    *strategy;      /* FIATOMIC_STRATEGY, NULL = environment */
    int           verify;
    size_t        verify_count;
    int           baseline_ucp;
    int           baseline_ofi;
    /* --providers: the libfabric providers to time, in this order; none:
     * the one for the transport (perf_drv_ofi_provider_for) */
    const char    *ofi_providers[PERF_MAX_OFI_PROVIDERS];
    unsigned      num_ofi_providers;
    int           ordered;        /* also on an ordered endpoint */
    perf_fmt_t    fmt;
    int           cpu_client;     /* -1: not pinned */
    int           cpu_server;
    int           progress;       /* progress lines on stderr */
    const char    *self_exe;
    /* scaling mode (perftest_scale.c) */
    unsigned      scale_counts[PERF_SCALE_MAX_POINTS]; /* initiators */
    unsigned      num_scale_counts;
    int           scale_same;     /* every initiator on the same elements */
    int           scale_disjoint; /* each on its own elements */
    double        scale_seconds;  /* timed span of each point */
    char          *scale_strategies[PERF_SCALE_MAX_STRATEGIES]; /* per
                                     initiator, round robin; none: as the
                                     environment says */
    unsigned      num_scale_strategies;
    /* --goal: the goals to measure (names); none: every goal */
    char          *goal_names[PERF_MAX_GOAL_NAMES];
    unsigned      num_goal_names;
} perf_opts_t;

/* perftest_single.c: one cell, ucx_perftest style */
int perf_single_run(const perf_opts_t *o);
/* perftest_matrix.c: every supported cell, a table per transport; returns
 * the number of failed cells (or -1 on a setup error) */
int perf_matrix_run(const perf_opts_t *o);
/* perftest_goals.c: the performance goals, measured and judged */
int perf_goals_run(const perf_opts_t *o);
/* 1 when `name` is one of the goals perf_goals_run() judges */
int perf_goal_known(const char *name);
/* the goal names, comma-separated (for messages) */
const char *perf_goal_names(void);
/* perftest_scale.c: N initiator processes on one target; returns the number
 * of failed points (lost updates, errors) or -1 on a setup error */
int perf_scale_run(const perf_opts_t *o);
typedef struct perf_scale_summary {
    double aggregate;          /* calls per second, all initiators */
    double jain;
    double retries_per_call;
    double handoffs_per_call;
    int    check;              /* final values: 1 ok, 0 FAIL */
    int    oversubscribed;     /* more processes than CPUs */
    char   msg[512];
} perf_scale_summary_t;
/** One point (n initiators, same or disjoint elements) of o's cell and
 *  strategies on an open session; -1 with sum->msg when it failed. */
int perf_scale_once(const perf_opts_t *o, perf_session_t *s, unsigned n,
                    int same, perf_scale_summary_t *sum);
/* perftest_scale_initiator.c: one initiator of a scaling run, driven over
 * the connected fd by perf_scale_run() (exit status) */
int perf_scale_initiator_main(int fd);

/** Start a session as the options say (loopback or client). */
int perf_session_open(perf_session_t *s, const perf_opts_t *o);

/* ------------------------------------------------------------------------ */
/* One cell: verify, measure, baselines (perftest_row.c)                     */

typedef struct perf_row {
    perf_cell_t         cell;
    fiatomic_strategy_t strategy;      /* NONE: unsupported here */
    int                 needs_progress;
    int                 verified;      /* 1 ok, 0 FAIL, -1 not checked */
    int                 failed;        /* verification or an error */
    char                msg[256];      /* why it failed */
    int                 has_fia;
    perf_result_t       fia;
    int                 has_ucp;       /* --baseline ucp, UCP has the op */
    perf_result_t       ucp;
    /* --baseline libfabric, per provider (perf_row_ofi_name): it has it */
    int                 has_ofi[PERF_MAX_OFI_PROVIDERS];
    perf_result_t       ofi[PERF_MAX_OFI_PROVIDERS];
} perf_row_t;

/** Classify a cell on this session: 0 and row->strategy, or -1 when the
 *  library does not know it (not a cell). */
int perf_row_query(perf_session_t *s, const perf_cell_t *cell,
                   perf_row_t *row);
/** How many libfabric providers a row times, and the index-th one's name
 *  in reports: "libfabric" for the one for the transport, else as named. */
unsigned perf_row_num_ofi(const perf_opts_t *o);
const char *perf_row_ofi_name(const perf_opts_t *o, unsigned index);
/** Verify (if o->verify) and measure one cell with params p. */
void perf_row_run(perf_session_t *s, const perf_opts_t *o,
                  const perf_params_t *p, perf_row_t *row);

/* ------------------------------------------------------------------------ */
/* Reports (perftest_report.c)                                               */

void perf_report_single_header(void);
void perf_report_single(const char *stage, const perf_result_t *r);
void perf_report_table_header(const perf_opts_t *o, const char *transport);
void perf_report_table_row(const perf_opts_t *o, const char *transport,
                           const perf_row_t *row);
void perf_report_csv_header(const perf_opts_t *o);
/** "FI_UINT64" -> "UINT64" */
const char *perf_short_name(const char *fi_name);
/** "fetch SUM UINT64" */
const char *perf_cell_str(const perf_cell_t *cell, char *buf, size_t max);

#endif
