/**
 * The libfabric provider "fiatomic": its objects and the functions its files
 * share. Each object embeds libfabric's fid structure first, so that a
 * struct fid_* pointer the core hands back converts to the provider's object
 * with fip_container_of().
 *
 * Files: fip_init.c (fi_prov_ini, the provider), fip_attr.c (the attributes
 * the provider offers), fip_getinfo.c (hint matching), fip_fabric.c,
 * fip_domain.c (UCP context, worker and libfiatomic context; fi_query_atomic),
 * fip_cntr.c (counters), fip_mr.c (memory registration, key table),
 * fip_addr.c (the fixed-length endpoint address), fip_av.c (address
 * vectors), fip_ep.c (endpoints), fip_listen.c (the domain's listener),
 * fip_cq.c (completion queues), fip_eq.c (event queues), fip_wait.c (the
 * bounded waits of CQs, EQs and counters), fip_peer.c (connections to
 * peer domains, made on first use),
 * fip_key.c (the key service: a peer's 64-bit key resolved at its domain),
 * fip_progress.c (the progress thread of FI_PROGRESS_AUTO), fip_atomic.c
 * (the atomic calls and their completions), fip_rma.c (RMA),
 * fip_rma_wire.c (RMA's messages, checked at the target), fip_msg.c
 * (send and receive over UCP active messages, tag matching), fip_tagged.c
 * (the tagged calls over fip_msg.c), fip_ep_nosys.c (the transfer
 * calls not implemented), fip_nosys.c (the answers for what the provider
 * does not implement).
 */
#ifndef FIP_H_
#define FIP_H_

#include <fiatomic.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/providers/fi_prov.h>

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define FIP_PROV_NAME    "fiatomic"
#define FIP_FABRIC_NAME  "fiatomic"
#define FIP_DOMAIN_NAME  "ucp"
/* provider version: the project's 0.1 */
#define FIP_PROV_VERSION FI_VERSION(0, 1)
/* the API the provider was built against serves callers asking for it or
 * any older one */
#define FIP_FI_VERSION   FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)

#define fip_container_of(_ptr, _type, _member) \
    ((_type*)((char*)(_ptr) - offsetof(_type, _member)))

extern struct fi_provider fip_provider;

typedef struct fip_fabric {
    struct fid_fabric fabric_fid;
    int               domains;     /* open domains (fi_close -> -FI_EBUSY) */
    int               eqs;         /* open event queues, likewise */
    pthread_mutex_t   lock;
} fip_fabric_t;

/* the key table: buckets of a domain's regions, and their cap */
#define FIP_MR_BUCKETS 256
#define FIP_MR_MAX     65536

typedef struct fip_mr fip_mr_t;
typedef struct fip_share fip_share_t;
typedef struct fip_peer fip_peer_t;
typedef struct fip_key_wait fip_key_wait_t;

/* connections peers made to the domain's listener, and their cap */
#define FIP_ACCEPT_MAX 4096
/* the message streams' table (one per connection messages come over) */
#define FIP_MSG_STREAM_BUCKETS 64
/* answers in flight per connection (fip_reply.c) */
typedef struct fip_reply_credit fip_reply_credit_t;
#define FIP_REPLY_BUCKETS      64
#define FIP_REPLY_INFLIGHT_MAX 256

typedef struct fip_domain {
    struct fid_domain  domain_fid;
    fip_fabric_t       *fabric;
    ucp_context_h      ucp_context;
    ucp_worker_h       ucp_worker;
    fiatomic_h         fia;
    enum fi_threading  threading;
    enum fi_progress   data_progress;
    uint64_t           mr_mode;
    /* FI_FIATOMIC_MR_SHARE: registered pages placed in shared memory
     * (fip_share.c); share_none once UCP gave this domain no shared
     * memory to place them in (no shared-memory transport) */
    int                mr_share;
    int                share_none;
    int                children;    /* objects opened on the domain */
    ucp_listener_h     ucp_listener; /* once an endpoint opened */
    uint32_t           listen_ipv4;  /* the address it names, host order */
    uint16_t           listen_port;
    /* no connection manager in the transport set (or no listener): the
     * domain's addresses are of FIP_ADDR_FAMILY_LOCAL, its worker address
     * published in a file (fip_publish.c) */
    int                local;
    int                published;    /* the file exists; under lock */
    uint64_t           nonce;        /* random, not zero: names the file */
    /* the peers confirmed to have connected to it, and its connection
     * back to each (fip_caller.c), under conn_lock */
    struct {
        uint32_t       pid;
        uint64_t       nonce;
        ucp_ep_h       ep;
    }                  *callers;
    size_t             caller_count;
    /* the greetings' claims being checked (FIP_VERIFY_MAX), and the
     * connections back that ended, closed at the next greeting or at
     * close (fip_caller.c); under conn_lock */
    fip_reply_credit_t *replies[FIP_REPLY_BUCKETS];
    struct fip_verify  *verifies;
    ucp_ep_h           *verify_gone;
    size_t             verify_gone_count;
    int                closing;      /* its connections are closing */
    uint32_t           next_ep_id;   /* under lock */
    fip_mr_t           *mr_buckets[FIP_MR_BUCKETS]; /* under mr_lock */
    size_t             mr_count;
    /* the key table's own lock: the key service reads it inside UCP's
     * progress, so it is never held across a UCP call */
    pthread_mutex_t    mr_lock;
    pthread_mutex_t    lock;
    /* connections this domain made, one per peer domain (fip_peer.c) */
    fip_peer_t         *peers;       /* under peer_lock */
    size_t             peer_count;
    pthread_mutex_t    peer_lock;
    /* connections peers made to this domain's listener */
    ucp_ep_h           *accepted;    /* under conn_lock */
    size_t             accepted_count;
    /* accepted connections whose peer left: their slot is free again,
     * the endpoint closed at the next accept or at close (not from inside
     * its own error callback); under conn_lock */
    ucp_ep_h           *accepted_gone;
    size_t             gone_count;
    pthread_mutex_t    conn_lock;
    /* the closing handshake (fip_bye.c), at close only: the connections
     * asked (those this domain made, then those peers made to it), per
     * connection 1 asked, 2 answered or gone */
    ucp_ep_h           *bye_eps;
    uint8_t            *bye_asked;
    size_t             bye_count;
    size_t             bye_acks;
    uint64_t           bye_token;    /* random per close (fip_bye.c) */
    /* key requests waiting for their reply (fip_key.c) */
    fip_key_wait_t     *key_waits;   /* under key_lock */
    pthread_mutex_t    key_lock;
    /* endpoints with FI_MSG, found by the id a message addresses
     * (fip_msg.c); taken inside UCP's progress, never held across a UCP
     * call */
    struct fip_ep      *msg_eps;     /* under msg_lock */
    pthread_mutex_t    msg_lock;
    /* the order of each connection's messages (fip_msg.c): taken first by
     * the message handler, which UCP may call outside progress (a send
     * over the self transport) */
    struct fip_msg_stream *streams[FIP_MSG_STREAM_BUCKETS]; /* under
                                                               stream_lock */
    size_t             stream_count;
    size_t             held_count;   /* messages waiting for their turn */
    size_t             held_bytes;
    pthread_mutex_t    stream_lock;
    /* Held around every progress of the worker and around the libfiatomic
     * calls that read an endpoint's lanes (fiatomic_ep_create,
     * fiatomic_rkey_unpack): UCX 1.22's ucp_ep_print_info takes the
     * endpoint's configuration before the worker's lock, from an array
     * that wireup, inside another thread's progress, may grow and move.
     * Never taken under libfiatomic's lock or in a UCP callback. */
    pthread_mutex_t    ucp_lock;
    /* when libfiatomic is next asked to look at what is overdue
     * (fip_domain_check_overdue); atomic */
    int64_t            overdue_next_ns;
    /* FI_PROGRESS_AUTO's thread (fip_progress.c) */
    pthread_t          progress_thread;
    int                progress_running;
    int                progress_stop; /* atomic */
    /* RMA's pieces waiting for answers, and what the domain holds to
     * answer peers' (fip_rma_wire.c) */
    struct fip_rma_wire *rma_wire;
    /* the job admission (fip_admit.c); NULL without a job key */
    struct fip_admit   *admit;
} fip_domain_t;

struct fip_mr {
    struct fid_mr      mr_fid;      /* key: the region's 64-bit key */
    fip_domain_t       *domain;
    fip_mr_t           *next;       /* in its key table bucket */
    void               *addr;
    size_t             length;
    uint64_t           access;
    uint64_t           remote_base; /* the address peers give for addr */
    /* where libfiatomic and UCP know the buffer: addr, or its place in
     * the shared segment the pages were moved into (fip_share.c) */
    void               *exposed;
    fip_share_t        *share;      /* NULL unless the pages are shared */
    fiatomic_mem_h     mem;         /* NULL without remote access */
    void               *packed;     /* mem's packed key, for the key
                                       service */
    size_t             packed_len;
};

typedef struct fip_cntr {
    struct fid_cntr    cntr_fid;
    fip_domain_t       *domain;
    uint64_t           value;   /* atomic: read without the lock */
    uint64_t           errors;  /* atomic */
    int                bound;   /* endpoints bound (fi_close -> -FI_EBUSY) */
    pthread_mutex_t    lock;    /* updates and waiters */
    pthread_cond_t     cond;    /* CLOCK_MONOTONIC */
} fip_cntr_t;

/* ---- addresses (fip_addr.c) ------------------------------------------- */

/** The packed address's length in bytes: the same on every process. */
#define FIP_ADDR_LEN         24
#define FIP_ADDR_VERSION     1
#define FIP_ADDR_FAMILY_IPV4 4
/** A same-host address: the domain publishes its UCP worker address in a
 *  file its host's peers read (fip_publish.c), for transport sets with no
 *  connection manager (UCX_TLS=posix). */
#define FIP_ADDR_FAMILY_LOCAL 2
/** Room for fip_addr_str's text and its NUL. */
#define FIP_ADDR_STRLEN      64

/** A decoded address, host byte order. */
typedef struct fip_addr {
    uint8_t  family;   /* FIP_ADDR_FAMILY_IPV4 or FIP_ADDR_FAMILY_LOCAL */
    uint32_t ipv4;     /* IPV4: where the peer's domain listens */
    uint16_t port;
    uint32_t pid;      /* LOCAL: the peer's process */
    uint32_t host;     /* LOCAL: its host's identity (fip_publish_host) */
    uint32_t ep_id;    /* the endpoint in that domain */
    uint64_t nonce;    /* random, not zero: tells endpoints apart over time
                        * (LOCAL: the domain's, which names its file) */
} fip_addr_t;

/** A greeting's claim being checked (fip_caller.c): the connection that
 *  claims (its reply endpoint), this domain's connection back to the
 *  domain claimed, the question's random id; free when conn is NULL. */
typedef struct fip_verify {
    ucp_ep_h   conn;
    ucp_ep_h   ep;
    uint64_t   req_id;
    fip_addr_t claimed;
    int64_t    deadline;
} fip_verify_t;

/** Pack into FIP_ADDR_LEN bytes. */
void fip_addr_pack(const fip_addr_t *addr, uint8_t *buf);

/** Decode and validate `len` bytes from the program or a peer: 0, or
 *  -FI_EINVAL when short, of another version or family, with a non-zero
 *  reserved field, or with a zero port, IPv4 address or nonce; a LOCAL
 *  one with a zero process id or one of another host. */
int fip_addr_unpack(const void *buf, size_t len, fip_addr_t *addr);

/** Whether two addresses name endpoints of the same domain: the same
 *  listener (IPV4), or the same host, process and domain nonce (LOCAL). */
int fip_addr_same_domain(const fip_addr_t *a, const fip_addr_t *b);

/** The address as text into buf (at most len bytes, NUL-terminated);
 *  returns the length it needs with its NUL. */
size_t fip_addr_str(const fip_addr_t *addr, char *buf, size_t len);


/* ---- address vectors (fip_av.c) ---------------------------------------- */

/** The most entries an address vector holds (inserted ones, removed ones
 *  included: their indices are not reused). */
#define FIP_AV_MAX (1u << 20)

/** The end of a chain of the reverse map (fip_av_entry_t's rnext). */
#define FIP_AV_RNIL UINT32_MAX

typedef struct fip_av_entry {
    fip_addr_t addr;
    int        used;    /* 0 once removed */
    uint8_t    packed[FIP_ADDR_LEN]; /* the bytes inserted, as fi_getname
                                        gives them and messages carry */
    uint32_t   rnext;   /* the next used entry in its reverse-map chain */
} fip_av_entry_t;

typedef struct fip_av {
    struct fid_av      av_fid;
    fip_domain_t       *domain;
    enum fi_av_type    type;       /* FI_AV_TABLE or FI_AV_MAP */
    fip_av_entry_t     *entries;   /* under lock */
    size_t             count;      /* entries handed out */
    size_t             capacity;
    /* the reverse map (fip_av_reverse): chains of the used entries by
     * the hash of their packed address, at most one bucket per entry
     * handed out (and FIP_AV_MAX) */
    uint32_t           *rbuckets;  /* under lock */
    size_t             rbucket_count; /* a power of two */
    size_t             used_count; /* entries in the chains */
    int                bound;      /* endpoints bound (-FI_EBUSY) */
    struct fip_eq      *eq;        /* bound event queue: inserts complete
                                      before they return, so no events */
    pthread_mutex_t    lock;
} fip_av_t;

int fip_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
                struct fid_av **av_p, void *context);

/** The fi_addr_t of the used entry whose packed address is `packed`
 *  (FIP_ADDR_LEN bytes, compared as they are), the newest one if several;
 *  FI_ADDR_NOTAVAIL when none or without an address vector. */
fi_addr_t fip_av_reverse(fip_av_t *av, const uint8_t *packed);


/* ---- endpoints (fip_ep.c, fip_listen.c, fip_ep_nosys.c) ---------------- */

/* ---- completion queues (fip_cq.c) -------------------------------------- */

/** The largest queue size a program may ask for. */
#define FIP_CQ_MAX (1u << 20)

/** One operation of an endpoint, from its post to its completion entry:
 *  the entry is the operation's own memory, so a completion allocates
 *  nothing. */
typedef struct fip_op {
    struct fip_op      *next;      /* in its queue once complete */
    struct fip_ep      *ep;
    struct fip_cq      *cq;        /* the entry's queue, NULL: none */
    struct fip_cntr    *cntr;      /* counted into, NULL: none */
    void               *context;   /* the program's op_context */
    uint64_t           flags;      /* the entry's flags */
    void               *buf;       /* the entry's buf (results) */
    int                report;     /* an entry on success too */
    int                err;        /* FI_E* (positive) once failed */
    size_t             len;        /* the entry's len (receives) */
    uint64_t           data;       /* remote CQ data (FI_REMOTE_CQ_DATA) */
    size_t             olen;       /* bytes cut off (FI_ETRUNC) */
    uint64_t           tag;        /* a tagged receive's message tag */
    fi_addr_t          src;        /* a receive's source (FI_SOURCE) */
    /* RMA: the UCP requests still running, plus one while posting; the
     * first failure */
    int                pending;    /* atomic */
    ucs_status_t       status;     /* atomic */
    /* atomics on misaligned result buffers (fip_atomic_stage.c): where
     * libfiatomic wrote the results, and the program's buffers */
    void               *staged;
    struct fi_ioc      *staged_to;
    size_t             staged_count;
    size_t             staged_size;
} fip_op_t;

typedef struct fip_cq {
    struct fid_cq      cq_fid;
    fip_domain_t       *domain;
    enum fi_cq_format  format;
    enum fi_wait_obj   wait_obj;
    int                bound;      /* atomic: endpoint bindings */
    int                signaled;   /* under lock */
    fip_op_t           *head, *tail;         /* completions, under lock */
    fip_op_t           *err_head, *err_tail; /* error entries */
    pthread_mutex_t    lock;
    pthread_cond_t     cond;       /* CLOCK_MONOTONIC */
} fip_cq_t;

/** Queue a completed operation's entry (an error entry when op->err),
 *  waking the queue's waiters; the queue frees it once read. */
void fip_cq_push(fip_cq_t *cq, fip_op_t *op);

int fip_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
                struct fid_cq **cq_p, void *context);

/* ---- event queues (fip_eq.c) ------------------------------------------- */

/** The size of a queue opened with size 0, and the largest one a program
 *  may ask for: only the program's own fi_eq_write events go there. */
#define FIP_EQ_DEFAULT_SIZE 1024
#define FIP_EQ_MAX          (1u << 16)
/** The longest event data fi_eq_write takes. */
#define FIP_EQ_DATA_MAX     4096

typedef struct fip_eq_event fip_eq_event_t;

typedef struct fip_eq {
    struct fid_eq      eq_fid;
    fip_fabric_t       *fabric;
    enum fi_wait_obj   wait_obj;
    uint64_t           flags;      /* FI_WRITE: fi_eq_write allowed */
    size_t             size;       /* the most events it holds */
    int                bound;      /* atomic: endpoint and AV bindings */
    fip_eq_event_t     *head, *tail; /* under lock */
    size_t             count;
    pthread_mutex_t    lock;
    pthread_cond_t     cond;       /* CLOCK_MONOTONIC */
} fip_eq_t;

int fip_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
                struct fid_eq **eq_p, void *context);

/** An endpoint or address vector binds the queue (fi_close of the queue
 *  -> -FI_EBUSY until it lets go): 0, or -FI_EINVAL for flags, or for a
 *  queue of another fabric than `fabric`. */
int fip_eq_bind(fip_eq_t *eq, fip_fabric_t *fabric, uint64_t flags);
void fip_eq_unbind(fip_eq_t *eq);

/** The directions a counter binds to, in the order of fip_ep_t's cntrs. */
#define FIP_EP_CNTR_FLAGS {FI_SEND, FI_RECV, FI_READ, FI_WRITE, \
                           FI_REMOTE_READ, FI_REMOTE_WRITE}
#define FIP_EP_CNTRS 6

/** Receives posted and messages that came before them, of one kind
 *  (untagged or tagged): they match only each other. */
typedef struct fip_msg_queue {
    struct fip_msg_rx  *rx_head, *rx_tail;   /* posted receives, FIFO */
    struct fip_msg_ux  *ux_head, *ux_tail;   /* unexpected messages */
    struct fip_msg_ux  *claimed;  /* taken by FI_PEEK | FI_CLAIM, waiting
                                     for the FI_CLAIM receive that names
                                     their claim's context */
} fip_msg_queue_t;

/** fip_ep_t's queues: untagged, tagged. */
#define FIP_MSG_Q_UNTAGGED 0
#define FIP_MSG_Q_TAGGED   1

typedef struct fip_ep {
    struct fid_ep      ep_fid;
    fip_domain_t       *domain;
    fip_addr_t         addr;       /* what fi_getname gives */
    fip_av_t           *av;        /* bound address vector */
    fip_eq_t           *eq;        /* bound event queue (no events) */
    fip_cq_t           *tx_cq;     /* bound with FI_TRANSMIT */
    fip_cq_t           *rx_cq;     /* bound with FI_RECV */
    uint64_t           cq_flags;   /* FI_SELECTIVE_COMPLETION per bind */
    fip_cntr_t         *cntrs[FIP_EP_CNTRS];
    uint64_t           op_flags;   /* tx_attr's op_flags at open */
    uint64_t           rx_op_flags; /* rx_attr's */
    int                rx_selective; /* FI_RECV CQ bound with
                                        FI_SELECTIVE_COMPLETION */
    int                enabled;
    int                inflight;   /* atomic: posted, not yet complete */
    /* messages (fip_msg.c), when the endpoint has FI_MSG, FI_TAGGED */
    int                msg;
    int                tagged;
    int                directed;   /* FI_DIRECTED_RECV: receives match
                                      their src_addr */
    struct fip_ep      *msg_next;  /* in the domain's msg_eps */
    pthread_mutex_t    rx_lock;    /* the queues below */
    fip_msg_queue_t    queues[2];  /* FIP_MSG_Q_UNTAGGED, _TAGGED */
    size_t             ux_count;   /* unexpected messages of both kinds */
    size_t             ux_bytes;
} fip_ep_t;

/** The counter index of a direction flag in fip_ep_t's cntrs. */
#define FIP_EP_CNTR_SEND  0
#define FIP_EP_CNTR_RECV  1
#define FIP_EP_CNTR_READ  2
#define FIP_EP_CNTR_WRITE 3

extern struct fi_ops_atomic fip_atomic_ops;
extern struct fi_ops_rma fip_rma_ops;
extern struct fi_ops_msg fip_msg_ops;
extern struct fi_ops_tagged fip_tagged_ops;

/* ---- messages (fip_msg.c) ---------------------------------------------- */

/** The largest message (ep_attr's max_msg_size). */
#define FIP_MSG_MAX          (4UL << 20)
/** Unexpected messages (arrived before a receive) an endpoint holds, in
 *  all and from one source (an address of its AV, or every unknown one
 *  together): one beyond a cap is dropped and counted as an error of the
 *  endpoint's FI_RECV counter. A source that filled its share leaves the
 *  rest to the others. */
#define FIP_MSG_UX_MAX          4096
#define FIP_MSG_UX_BYTES        (64UL << 20)
#define FIP_MSG_UX_SOURCE_MAX   1024
#define FIP_MSG_UX_SOURCE_BYTES (32UL << 20)
/** Messages of all connections of a domain held until those sent before
 *  them arrive (UCP may deliver a connection's messages out of order while
 *  it wires the connection up); beyond either cap the messages held go
 *  on in the order they have. */
#define FIP_MSG_HOLD_MAX     4096
#define FIP_MSG_HOLD_BYTES   (16UL << 20)
/** The active message id of a message (after the key service's). */
#define FIP_AM_MSG           1012

/* ---- RMA over validated messages (fip_rma_wire.c) ---------------------- */

/** A piece's request to the target, and the target's answer. */
#define FIP_AM_RMA_REQ       1018
#define FIP_AM_RMA_REP       1019
/** The most bytes one piece carries (fip_rma.c cuts longer ones): each
 *  piece is a rendezvous handshake with the target (Sandia OpenSHMEM's
 *  bigget, 16 MiB reads over posix on a loaded machine: 17 s per 100 with
 *  4 MiB pieces, 10 s with 16 MiB). */
#define FIP_RMA_PIECE_MAX    (16UL << 20)
/** Pieces an initiator has waiting for answers from one peer, and answers
 *  and rendezvous a target holds for one connection. */
#define FIP_RMA_PEER_INFLIGHT 256
/** Bytes an initiator has waiting for one peer (one operation alone may
 *  have more), so that a few initiators stay under the target's
 *  FIP_RMA_HELD_MAX. */
#define FIP_RMA_PEER_BYTES   (64UL << 20)
/** Bytes a target holds for all its connections' answers and bounces. */
#define FIP_RMA_HELD_MAX     (256UL << 20)
/** How long a piece waits for its answer. */
#define FIP_RMA_TIMEOUT_MS   30000

int fip_rma_wire_init(fip_domain_t *domain);
/** Free what is left (after the worker is destroyed). */
void fip_rma_wire_cleanup(fip_domain_t *domain);
/** Count `pieces` of `bytes` more waiting for `peer`'s answers: 0, or
 *  -FI_EAGAIN beyond FIP_RMA_PEER_INFLIGHT or FIP_RMA_PEER_BYTES (unless
 *  nothing waits); unreserve those not posted. Each posted piece lets go
 *  of its count when it completes. */
int fip_rma_wire_reserve(fip_peer_t *peer, size_t pieces, uint64_t bytes);
void fip_rma_wire_unreserve(fip_peer_t *peer, size_t pieces,
                            uint64_t bytes);
/** Post one piece of `op` (reading: into lbuf) of len bytes (1 ..
 *  FIP_RMA_PIECE_MAX) at the program's `key` and remote `addr`: two pieces
 *  of op (the send and the answer) are started. 0, or -FI_ENOMEM (none). */
int fip_rma_wire_post(fip_op_t *op, fip_peer_t *peer, int reading,
                      void *lbuf, size_t len, uint64_t key, uint64_t addr);
/** Fail the pieces past their deadline or of a failed peer (from
 *  fip_domain_check_overdue). */
void fip_rma_wire_check_overdue(fip_domain_t *domain);

/** Post a send or a receive (fip_msg.c); `tagged`: a tagged one, with
 *  tag `tag` (a receive: matching the messages whose tag equals it in the
 *  bits not set in `ignore`). The flags are the call's (FI_INJECT,
 *  FI_REMOTE_CQ_DATA, completion levels; FI_COMPLETION for receives). */
ssize_t fip_msg_send_post(fip_ep_t *ep, const struct fi_msg *msg,
                          uint64_t flags, int tagged, uint64_t tag);
ssize_t fip_msg_recv_post(fip_ep_t *ep, const struct fi_msg *msg,
                          uint64_t flags, int tagged, uint64_t tag,
                          uint64_t ignore);

/** The fi_msg of a call that names its parts one by one (fi_send,
 *  fi_recvv, fi_tsend ...: fip_msg.c and fip_tagged.c). */
void fip_msg_fill(struct fi_msg *msg, const struct iovec *iov, void **desc,
                  size_t count, fi_addr_t addr, void *context,
                  uint64_t data);

/** Register the message handler on the domain's worker. */
int fip_msg_init(fip_domain_t *domain);

/* fip_ucx_config.c: the UCX configuration of a domain's context, with the
 * shared-memory transports' error handling the peer error mode needs:
 * read, and (UCX before 1.22) the environment it needs from before ucp_init
 * to after ucp_worker_create */
typedef struct {
    unsigned set;  /* the variables set here, cleared by fip_ucx_env_end */
} fip_ucx_env_t;

int fip_ucx_config_read(int local, ucp_config_t **config_p);
void fip_ucx_env_begin(fip_ucx_env_t *env);
void fip_ucx_env_end(fip_ucx_env_t *env);
/** Free the streams and the messages held (the progress thread stopped,
 *  before the worker is destroyed). */
void fip_msg_cleanup(fip_domain_t *domain);
/** A connection ended: what it still holds goes on (its turn is no longer
 *  waited for), then its stream is freed (inside UCP's progress). */
void fip_msg_stream_forget(fip_domain_t *domain, ucp_ep_h ep);
/** A connection's greeting claims a domain: the claim is checked
 *  (fip_caller_verify_start) at once (`now`, the caller starts it) or on
 *  the connection's first message, and its messages wait until then
 *  (bounded). 0, or -1 if it claimed before or already sent messages (or
 *  there is no room for it). */
int fip_msg_stream_claim(fip_domain_t *domain, ucp_ep_h ep,
                         const fip_addr_t *claimed, uint64_t token, int now);
/** Check a connection's claim: over a connection back to the domain
 *  claimed (fip_caller.c); the stream learns the outcome. */
void fip_caller_verify_start(fip_domain_t *domain, ucp_ep_h conn,
                             const fip_addr_t *claimed, uint64_t token);
/** The check ended: the connection's messages come from `who`'s domain,
 *  or (NULL) have no source; those waiting go on. */
void fip_msg_stream_verified(fip_domain_t *domain, ucp_ep_h ep,
                             const fip_addr_t *who);
/** An endpoint with FI_MSG starts (fi_enable) or stops (fi_close, after no
 *  handler can reach it any more, its queues are freed). */
void fip_msg_ep_add(fip_ep_t *ep);
void fip_msg_ep_remove(fip_ep_t *ep);
void fip_msg_ep_cleanup(fip_ep_t *ep);

/** A new operation of the endpoint (counted in flight): its counter is the
 *  FI_READ one when `reading`, else FI_WRITE; its entry flags `cq_flags`
 *  and buf `buf`; whether a success gets an entry follows `flags` and the
 *  queue's binding. NULL when out of memory. `extra` bytes follow it. */
fip_op_t *fip_op_alloc(fip_ep_t *ep, int reading, void *context,
                       uint64_t flags, uint64_t cq_flags, void *buf,
                       size_t extra);
/** Forget an operation that never started (not counted). */
void fip_op_cancel(fip_op_t *op);
/** A random nonce, not zero: 0, or -FI_EOTHER. */
int fip_ep_nonce(uint64_t *nonce_p);

/** The endpoint's peer for fi_addr (fip_av_get + fip_peer_get). */
int fip_ep_peer(fip_ep_t *ep, fi_addr_t dest, fip_peer_t **peer_p);

/** An operation's completion: count it, queue its entry (or an error
 *  entry), free it when no entry is due; status from libfiatomic. */
void fip_op_complete(fip_op_t *op, ucs_status_t status);

/* An operation of several UCP requests (fip_op_piece.c): op->pending is set
 * to 1 (the posting hold) before the first; each UCP call is preceded by
 * fip_op_piece_starting() and followed by fip_op_piece_started() with its
 * answer, its requests use fip_op_piece_cb, and fip_op_piece_done(op,
 * UCS_OK) lets go of the hold once all are posted. */
void fip_op_piece_done(fip_op_t *op, ucs_status_t status);
void fip_op_piece_cb(void *request, ucs_status_t status, void *user_data);
void fip_op_piece_starting(fip_op_t *op);
void fip_op_piece_started(fip_op_t *op, ucs_status_ptr_t sptr);

/** An atomic call's staged lists: one aligned entry each. */
typedef struct fip_atomic_staged {
    struct fi_ioc operands;
    struct fi_ioc compare;
    struct fi_ioc results;
} fip_atomic_staged_t;

/** Bytes an operation needs to stage a call's local buffers, 0 when they
 *  are all aligned as libfiatomic takes them (size: element bytes). */
size_t fip_atomic_stage_bytes(size_t size, const struct fi_msg_atomic *msg,
                              const struct fi_ioc *comparev,
                              size_t compare_count,
                              const struct fi_ioc *resultv,
                              size_t result_count);

/** Stage them into the operation's extra bytes (allocated with
 *  fip_atomic_stage_bytes()): the call's lists are pointed at `staged`. */
void fip_atomic_stage(fip_op_t *op, size_t size, struct fi_msg_atomic *msg,
                      fip_atomic_staged_t *staged,
                      const struct fi_ioc **comparev, size_t *compare_count,
                      struct fi_ioc **resultv, size_t *result_count);

/** At a successful completion: the results to the program's buffers. */
void fip_atomic_unstage(fip_op_t *op);

int fip_ep_open(struct fid_domain *domain, struct fi_info *info,
                struct fid_ep **ep_p, void *context);

/* ---- the published worker address (fip_publish.c) --------------------- */

/** The most bytes a published worker address may have (a reader takes no
 *  more). */
#define FIP_PUBLISH_ADDR_MAX 8192

/** This host's identity (a hash of its boot id; not zero). */
uint32_t fip_publish_host(void);
/** The file a LOCAL address's domain publishes in (at most len bytes). */
void fip_publish_path(uint32_t pid, uint64_t nonce, char *buf, size_t len);
/** Publish the domain's worker address (under domain->lock, once): 0, or
 *  a negative errno. */
int fip_publish_start(fip_domain_t *domain);
/** Remove the domain's file. */
void fip_publish_stop(fip_domain_t *domain);
/** Read and validate the worker address a LOCAL address names: 0 and a
 *  malloc'd copy, or -FI_ECONNREFUSED (no such domain, or its process
 *  exited: a stale file of a dead process is removed) or -FI_EINVAL (a
 *  file that is not a domain's). */
int fip_publish_read(const fip_addr_t *addr, void **worker_addr,
                     size_t *len);

/** Whether UCX_TLS names shared-memory and loopback transports only, none
 *  with a connection manager (fip_ucx_config.c). */
int fip_ucx_tls_local_only(void);

/** Start the domain's listener if not yet (under domain->lock): 0, or
 *  -FI_EADDRNOTAVAIL. */
int fip_listen_start(fip_domain_t *domain);
void fip_listen_stop(fip_domain_t *domain);

extern struct fi_ops_msg fip_nosys_msg_ops;
extern struct fi_ops_rma fip_nosys_rma_ops;
extern struct fi_ops_tagged fip_nosys_tagged_ops;
extern struct fi_ops_atomic fip_nosys_atomic_ops;
extern struct fi_ops_collective fip_nosys_collective_ops;


/* ---- attributes (fip_attr.c) ------------------------------------------ */

/** The capabilities the provider implements: the only ones it offers. */
#define FIP_CAPS            (FI_ATOMIC | FI_RMA | FI_MSG | FI_TAGGED | \
                             FI_READ | FI_WRITE | FI_REMOTE_READ | \
                             FI_REMOTE_WRITE | FI_SEND | FI_RECV | \
                             FI_DIRECTED_RECV | FI_SOURCE | \
                             FI_LOCAL_COMM | FI_REMOTE_COMM)
/** The tag format offered when the hints name none: 64 bits, unstructured
 *  (fi_endpoint(3): alternating ones and zeros); every bit of a tag and of
 *  an ignore mask matters. */
#define FIP_MEM_TAG_FORMAT  0xaaaaaaaaaaaaaaaaULL
/** Operation flags a transmit context accepts as defaults (op_flags). */
#define FIP_TX_OP_FLAGS     (FI_COMPLETION | FI_DELIVERY_COMPLETE | \
                             FI_TRANSMIT_COMPLETE | FI_INJECT_COMPLETE)
/** Operation flags a receive context accepts as defaults: FI_COMPLETION
 *  (a receive reports its success under FI_SELECTIVE_COMPLETION; Open MPI's
 *  mtl ofi asks for it). */
#define FIP_RX_OP_FLAGS     FI_COMPLETION
/** Orderings the provider guarantees (msg_order): every peer's operations
 *  go through one libfiatomic endpoint created with these orderings. */
#define FIP_MSG_ORDER       (FI_ORDER_ATOMIC_RAR | FI_ORDER_ATOMIC_RAW | \
                             FI_ORDER_ATOMIC_WAR | FI_ORDER_ATOMIC_WAW)
/** And of messages, offered besides (fip_msg.c): a connection's messages
 *  are numbered by its sender and matched at the target in that order,
 *  and all endpoints of one domain send to another domain over its one
 *  connection, so sends from one endpoint to another match in the order
 *  they were posted (FI_ORDER_SAS). */
#define FIP_MSG_ORDER_MSG   FI_ORDER_SAS
/** iov and rma_iov entries one call takes (tx_attr's limits). */
#define FIP_IOV_LIMIT       4
/** Bytes FI_INJECT takes (tx_attr's inject_size): one 32-byte element and
 *  more. */
#define FIP_INJECT_SIZE     64
/** The two memory registration modes: program-chosen keys with offset
 *  addressing (0), and provider keys on virtual addresses of allocated
 *  memory. */
#define FIP_MR_MODE_PROV    (FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | \
                             FI_MR_ALLOCATED)
#define FIP_MR_MODE_PROGRAM 0ULL

/** Fill a fresh fi_info (from fi_allocinfo) with the provider's attributes
 *  and the given memory registration mode. */
void fip_attr_fill(struct fi_info *info, uint64_t mr_mode);


/* ---- getinfo (fip_getinfo.c) ------------------------------------------ */

int fip_getinfo(uint32_t version, const char *node, const char *service,
                uint64_t flags, const struct fi_info *hints,
                struct fi_info **info_p);

/**
 * Whether `hints` accept the offer `prov` (an info from fip_attr_fill), as
 * fi_getinfo(3) of libfabric 1.17 defines it; 0 if so, else -FI_ENODATA.
 * On success the offer is narrowed to what the hints ask (progress,
 * threading, capabilities) so that it describes the objects the caller
 * will open.
 */
int fip_info_match(uint32_t version, const struct fi_info *hints,
                   struct fi_info *prov);

/** Whether `info`, given to fi_domain, asks only what one of the offers
 *  gives: 0, else -FI_EINVAL. */
int fip_getinfo_check_open(uint32_t version, const struct fi_info *info);


/* ---- objects ------------------------------------------------------------ */

int fip_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric_p,
                    void *context);

int fip_domain_open(struct fid_fabric *fabric, struct fi_info *info,
                    struct fid_domain **domain_p, void *context);

/** Objects opened on a domain: it cannot close while any is open. */
void fip_domain_child_add(fip_domain_t *domain);
void fip_domain_child_remove(fip_domain_t *domain);

/** One round of the domain's progress where the program drives it
 *  (FI_PROGRESS_MANUAL); nothing under automatic progress. */
void fip_domain_progress(fip_domain_t *domain);

/** ucp_worker_progress() of the domain's worker, under its ucp_lock. */
unsigned fip_domain_worker_progress(fip_domain_t *domain);

/** Let libfiatomic look at what the domain's operations wait for (late
 *  target-side replies, the operation timeout), at most once per
 *  FIP_OVERDUE_CHECK_MS; from the program's waits and the progress thread,
 *  never from a UCP callback. */
void fip_domain_check_overdue(fip_domain_t *domain);

/** Register `cb` for active-message id `id` on the domain's worker, the
 *  domain as its argument (the key service, messages, the close message). */
int fip_domain_am_handler_set(fip_domain_t *domain, unsigned id,
                              ucp_am_recv_callback_t cb);
/** Set every entry of the worker's table of active message handlers (no
 *  callback) where UCX needs it (fip_am_table.c); before any handler. */
int fip_am_table_fill(ucp_worker_h worker);

int fip_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
                  struct fid_cntr **cntr_p, void *context);

extern struct fi_ops_mr fip_mr_ops;

/** The domain's region of key `key`, NULL if none; under mr_lock. */
fip_mr_t *fip_mr_lookup_locked(fip_domain_t *domain, uint64_t key);

/* ---- registered memory in shared memory (fip_share.c) ------------------ */

/** The provider's runtime parameters, defined once when libfabric loads
 *  it (fi_param_define: `fi_info -e` lists them). */
void fip_params_define(void);
/** FI_FIATOMIC_UCP_ONESIDED: the domain's UCP context asks for RMA and
 *  atomics (UCP then serves every peer's one-sided access to any address
 *  of the process); read by fip_domain.c. */
#define FIP_UCP_ONESIDED_PARAM "ucp_onesided"
/** Whether FI_FIATOMIC_MR_SHARE asks for shared registrations. */
int fip_share_wanted(void);
/** With the domain's mr_share: move the pages of [mr->addr, +length) into
 *  a shared segment that libfiatomic allocated and exposed (mr->mem,
 *  mr->exposed, mr->share set); -FI_ENOSYS when the range is not eligible
 *  or the kernel refuses (the caller registers as usual then). */
int fip_share_register(fip_domain_t *domain, fip_mr_t *mr);
/** Give the program private pages with the same content again and free
 *  the segment (unexposes mr->mem). */
void fip_share_release(fip_mr_t *mr);

/** Count one completed operation, as a success or an error. */
void fip_cntr_inc(fip_cntr_t *cntr, int error);

/* ---- bounded waits (fip_wait.c) ---------------------------------------- */

/** Sleep slice of a wait between two looks at what it waits for. */
#define FIP_WAIT_SLICE_NS 1000000L

/** A waitable object's lock, and its condition on the monotonic clock the
 * waits' deadlines use. */
void fip_wait_init(pthread_mutex_t *lock, pthread_cond_t *cond);

int64_t fip_now_ns(void);

/** The deadline of a wait of timeout_ms (negative: none). */
int64_t fip_wait_deadline(int timeout_ms);

/**
 * One slice of a bounded wait on `cond` under `lock` (held by the caller):
 * sleeps until woken, the slice ends or the deadline passes. Returns
 * -FI_ETIMEDOUT once the deadline has passed, else 0 (look again).
 */
int fip_wait_slice(pthread_mutex_t *lock, pthread_cond_t *cond,
                   int64_t deadline);

/** Destroy what fip_wait_init made (no waiter left). */
void fip_wait_destroy(pthread_mutex_t *lock, pthread_cond_t *cond);

/** Whether a queue may be opened with wait_obj: 0 for the ones its waits
 *  sleep on (its own condition variable), -FI_ENOSYS for a file
 *  descriptor or a wait set, -FI_EINVAL for a value fi_eq(3) lacks. */
int fip_wait_obj_check(enum fi_wait_obj wait_obj);

/** What a blocking wait calls: see fip_wait_loop. */
typedef ssize_t (*fip_wait_look_func_t)(void *arg);

/**
 * The loop of a blocking wait (fi_cq_sread, fi_eq_sread, fi_cntr_wait):
 * look(arg), without the lock (it may progress the domain), until it
 * answers other than -FI_EAGAIN. Between two looks, under `lock`,
 * idle_locked(arg) answers -FI_EAGAIN to sleep one slice on `cond` (what
 * the wait is for is still missing: an update between the look and the
 * lock has woken no one yet, it broadcasts under the lock), 0 to look
 * again at once, or else the wait's answer. Once `deadline` has passed
 * the wait looks a last time and answers -FI_ETIMEDOUT if that look
 * found nothing.
 */
ssize_t fip_wait_loop(pthread_mutex_t *lock, pthread_cond_t *cond,
                      int64_t deadline, fip_wait_look_func_t look,
                      fip_wait_look_func_t idle_locked, void *arg);

/* ---- peers and keys (fip_peer.c, fip_key.c) ---------------------------- */

/** How long a connection or key resolution may take before the call that
 *  needs it fails with -FI_ETIMEDOUT. */
#define FIP_RESOLVE_TIMEOUT_MS 30000
/** Resolved keys cached per peer domain. */
#define FIP_PEER_KEYS_MAX      65536
#define FIP_PEER_KEY_BUCKETS   64
/** Largest key service reply data (both keys) a peer may send back. */
#define FIP_KEY_PACKED_MAX     8192
/** The key service's active message ids (libfiatomic's are 1008, 1009). */
#define FIP_AM_KEY_REQ         1010
#define FIP_AM_KEY_REP         1011
/** The closing handshake's (fip_bye.c). */
#define FIP_AM_BYE             1013
#define FIP_AM_BYE_ACK         1014

/** A peer that connected to a domain without a listener says who it is
 *  (fip_caller.c). */
#define FIP_AM_HELLO           1017
/** The check of a greeting's claim, and its answer (fip_caller.c). */
#define FIP_AM_VERIFY          1020
#define FIP_AM_VERIFY_ACK      1021
/** Checks running at a time per domain, and how long each may take. */
#define FIP_VERIFY_MAX         64
#define FIP_VERIFY_TIMEOUT_MS  5000
/** How long a connection's wireup is waited for once the domain closes. */
#define FIP_CALLER_TIMEOUT_MS  1000

/* How often the domain's waits and progress thread let libfiatomic look at
 * what is overdue: a few clock reads per call in between, and a dead
 * target's operations fail this long after UCP found it gone (libfiatomic
 * probes a reply 50 ms late). */
#define FIP_OVERDUE_CHECK_MS   10

/** A connection's greeting: the domain that made it, and its token. */
typedef struct fip_hello_msg {
    uint32_t magic;
    uint32_t pid;      /* same host: the caller's process */
    uint64_t nonce;    /* and its domain's nonce */
    uint64_t token;    /* random per connection: the caller confirms it */
    uint32_t ipv4;     /* listener: where the caller's domain listens */
    uint16_t port;
    uint16_t reserved; /* 0 */
    uint64_t mac;      /* with a job key: the proof (fip_admit.c) */
} fip_hello_msg_t;

/* fip_caller.c: who is on a connection a peer made to a domain (a claim
 * in its greeting, confirmed by the domain claimed over a connection back
 * to it), and, without a listener, that connection back kept for the
 * closing handshake */
int fip_caller_init(fip_domain_t *domain);
/** Greet on a new connection this domain made (the peer's hello). */
void fip_caller_hello(fip_domain_t *domain, fip_peer_t *peer);
/** Before the listener goes: the connection requests it queued are
 *  accepted (progress, at most FIP_ACCEPT_DRAIN_MS). */
#define FIP_ACCEPT_DRAIN_MS 20
void fip_peer_accept_drain(fip_domain_t *domain);
/** End the checks past their time (their connections' messages go on
 *  with no source): from fip_domain_check_overdue, outside UCP callbacks,
 *  so that a check never answered holds no message for longer. */
void fip_caller_check_overdue(fip_domain_t *domain);
/** A connection a peer made ended: its claim's check, if any, too. */
void fip_caller_conn_gone(fip_domain_t *domain, ucp_ep_h conn);
/* ---- job admission (fip_admit.c, fip_mac.c) ---------------------------- */

/** A domain tells a connection it refused (another job key, or none). */
#define FIP_AM_REFUSED         1022
/** FI_FIATOMIC_AUTH_KEY, and the longest job key taken (bytes). */
#define FIP_AUTH_KEY_PARAM     "auth_key"
#define FIP_AUTH_KEY_MAX       4096
/** Connections whose admission is remembered, and its table. */
#define FIP_ADMIT_MAX          (2 * FIP_ACCEPT_MAX)
#define FIP_ADMIT_BUCKETS      64
/** Refused connections waiting to be closed, and how long they wait (the
 *  refusal's notice goes first). */
#define FIP_ADMIT_CLOSE_MAX    256
#define FIP_ADMIT_CLOSE_MS     100

/** The domain's job key from its info's auth_key, else from
 *  FI_FIATOMIC_AUTH_KEY (none: admission off); -FI_EINVAL for a key
 *  longer than FIP_AUTH_KEY_MAX. */
int fip_admit_init(fip_domain_t *domain, const struct fi_info *info);
/** Whether `key` is the domain's job key (0 without one). */
int fip_admit_key_is(fip_domain_t *domain, const void *key, size_t len);
/** The refusal notice's handler (every domain: it may be refused). */
int fip_admit_handler_init(fip_domain_t *domain);
void fip_admit_cleanup(fip_domain_t *domain);
/** Whether a request arriving on `ep` is acted on: 1 without a key or
 *  when admitted; else 0 (dropped, logged; a connection not seen before
 *  is refused and closed). Inside UCP's callbacks. */
int fip_admit_gate(fip_domain_t *domain, ucp_ep_h ep, const char *what);
/** fip_admit_gate for the closing handshake, which a peer also sends on
 *  the connections this domain made to it. */
int fip_admit_gate_bye(fip_domain_t *domain, ucp_ep_h ep);
/** The greeting's proof, for the peer it goes to (0 without a key). */
void fip_admit_hello_sign(fip_domain_t *domain, fip_peer_t *peer);
/** A greeting on `ep`: 1 to go on (admitted, or no key), 0 dropped. */
int fip_admit_hello_check(fip_domain_t *domain, ucp_ep_h ep,
                          const fip_hello_msg_t *msg);
/** The proof of a claim's question to the domain `asked`. */
uint64_t fip_admit_verify_sign(fip_domain_t *domain, const fip_addr_t *asked,
                               uint64_t token, uint64_t req_id);
/** A claim's question on `ep`: 1 to answer, 0 dropped. */
int fip_admit_verify_check(fip_domain_t *domain, ucp_ep_h ep,
                           uint64_t token, uint64_t req_id, uint64_t mac);
/** A connection ended: its handle may come again for another. */
void fip_admit_forget(fip_domain_t *domain, ucp_ep_h ep);
/** Close the refused connections whose time came (never from a UCP
 *  callback), or all of them (closing, progress stopped). */
void fip_admit_sweep(fip_domain_t *domain);
void fip_admit_close_all(fip_domain_t *domain);

/** The connections back to confirmed callers kept (same host): count. */
size_t fip_caller_eps(fip_domain_t *domain, ucp_ep_h *eps);
/** Close them, and the checks still running (the progress thread
 *  stopped). */
void fip_caller_close_all(fip_domain_t *domain);
/** End a UCP endpoint, bounded (fip_peer.c; progress thread stopped). */
void fip_peer_ucp_close(fip_domain_t *domain, ucp_ep_h ep);

/* fip_reply.c: at most FIP_REPLY_INFLIGHT_MAX answers on their way per
 * connection. Take one before sending an answer (0, or -FI_EAGAIN past
 * the cap: no answer), give it back when its send completes. */
int fip_reply_take(fip_domain_t *domain, ucp_ep_h ep);
void fip_reply_done(fip_domain_t *domain, ucp_ep_h ep);
void fip_reply_cleanup(fip_domain_t *domain);
/** Send an answer (a malloc'd buffer: header, then data; freed here) as a
 *  UCP reply on the connection asked, within the cap: 0, or -FI_EAGAIN
 *  past it, or another error (not sent). */
int fip_reply_send(fip_domain_t *domain, ucp_ep_h ep, unsigned am_id,
                   void *buf, size_t header_len, size_t data_len);

/* fip_bye.c: before a domain closes its connections (those it made and
 * those peers made to it), the peer answers a message on each, bounded */
int fip_bye_init(fip_domain_t *domain);
void fip_bye_all(fip_domain_t *domain);
/* a connection's peer failed: not waited for (the closing thread only) */
void fip_bye_ep_gone(fip_domain_t *domain, ucp_ep_h ep);

/** A peer's key resolved: what libfiatomic takes, and where the remote
 *  addresses the program gives fall. */
typedef struct fip_rkey {
    struct fip_rkey    *next;
    uint64_t           key;         /* the program's 64-bit key */
    uint64_t           fkey;        /* libfiatomic's, for this peer */
    uint64_t           vaddr;       /* the region at the peer */
    uint64_t           length;
    uint64_t           remote_base; /* the address the program gives for
                                       vaddr (an offset with program keys) */
    uint64_t           access;      /* FI_REMOTE_READ, FI_REMOTE_WRITE */
} fip_rkey_t;

struct fip_peer {
    fip_peer_t         *next;
    fip_domain_t       *domain;     /* the peer's failure tells it */
    uint8_t            family;      /* what names the peer domain: */
    uint32_t           ipv4;        /* IPV4: its listener */
    uint16_t           port;
    uint32_t           pid;         /* LOCAL: its process and nonce */
    uint64_t           nonce;
    struct fip_hello_msg hello;     /* LOCAL: sent once connected */
    ucp_ep_h           ucp_ep;
    fiatomic_ep_h      fep;
    uint64_t           msg_seq;     /* atomic: the next message's number */
    int                failed;      /* atomic: UCP reported the peer dead */
    int                refused;     /* atomic: the peer domain refused the
                                       connection (another job) */
    int                rma_inflight; /* atomic: RMA pieces waiting for
                                        their answer (fip_rma_wire.c) */
    uint64_t           rma_bytes;    /* atomic: and their bytes */
    fip_rkey_t         *keys[FIP_PEER_KEY_BUCKETS]; /* under peer_lock */
    size_t             key_count;
};

/** What a failed peer's operations fail with: 0 (not failed), -FI_EIO,
 *  or -FI_EACCES once it refused the connection. */
static inline int fip_peer_failed_errno(fip_peer_t *peer)
{
    if (!__atomic_load_n(&peer->failed, __ATOMIC_ACQUIRE)) {
        return 0;
    }
    return __atomic_load_n(&peer->refused, __ATOMIC_ACQUIRE) ? -FI_EACCES :
                                                               -FI_EIO;
}

/** The connection to the domain `addr` names, made on first use: 0, or
 *  -FI_E*. */
int fip_peer_get(fip_domain_t *domain, const fip_addr_t *addr,
                 fip_peer_t **peer_p);

/** Resolve `key` at `peer` (cached after the first time) and translate the
 *  program's remote address `addr` of `len` bytes (atomics: 1, libfiatomic
 *  checks each element) with `access` (FI_REMOTE_READ/WRITE: what the
 *  operation reads or writes, atomics included): *raddr_p, and
 *  libfiatomic's key. -FI_ENOKEY for a key the peer does
 *  not know, -FI_EINVAL for bytes outside the region, -FI_EACCES without
 *  the access, -FI_ETIMEDOUT. */
int fip_peer_key(fip_domain_t *domain, fip_peer_t *peer, uint64_t key,
                 uint64_t addr, uint64_t len, uint64_t access,
                 uint64_t *fkey_p, uint64_t *raddr_p);

/** The peer domain on `ep` said it closes (fip_bye.c): later operations
 *  to it fail at once (-FI_EIO). Without a connection manager nothing else
 *  would tell: operations to it would wait for UCP's keepalive. */
void fip_peer_gone(fip_domain_t *domain, ucp_ep_h ep);

/** Accept a peer's connection request (the listener's handler). */
void fip_peer_accept(fip_domain_t *domain, ucp_conn_request_h request);

/** Close every connection (domain close, progress stopped). */
void fip_peer_close_all(fip_domain_t *domain);

/** Register the key service's handlers on the domain's worker. */
int fip_key_service_init(fip_domain_t *domain);

/** What a peer's key service answered for a key. */
typedef struct fip_key_reply {
    void     *data;        /* fkey_len bytes of libfiatomic key; malloc'd */
    size_t   fkey_len;
    uint64_t vaddr;
    uint64_t length;
    uint64_t remote_base;
    uint64_t access;       /* FI_REMOTE_READ, FI_REMOTE_WRITE */
} fip_key_reply_t;

/** Ask `peer`'s domain for key `key` (bounded): 0 and *reply, whose data
 *  the caller frees; -FI_ENOKEY, -FI_ETIMEDOUT, -FI_EIO. */
int fip_key_request(fip_domain_t *domain, fip_peer_t *peer, uint64_t key,
                    fip_key_reply_t *reply);

/** The peer of fi_addr in the endpoint's address vector. */
int fip_av_get(fip_av_t *av, fi_addr_t fi_addr, fip_addr_t *addr);

/* ---- progress (fip_progress.c) ----------------------------------------- */

/** Start the domain's progress thread (FI_PROGRESS_AUTO). */
int fip_progress_start(fip_domain_t *domain);
/** Stop it and wait for it (bounded by one progress round and a sleep). */
void fip_progress_stop(fip_domain_t *domain);

/* fip_nosys.c: what the provider does not implement */

/** The fi_ops of an object whose one call is fi_close: nothing binds to it,
 *  and no control (no file descriptor or wait set to hand out:
 *  FI_GETWAIT), no ops_open, tostr or ops_set. */
#define FIP_FI_OPS_CLOSE_ONLY(_close) \
    { \
        .size     = sizeof(struct fi_ops), \
        .close    = (_close), \
        .bind     = fip_nosys_bind, \
        .control  = fip_nosys_control, \
        .ops_open = fip_nosys_ops_open, \
        .tostr    = fip_nosys_tostr, \
        .ops_set  = fip_nosys_ops_set \
    }

/** The text of a provider error number (fi_cq_strerror, fi_eq_strerror):
 *  written into buf, or a fixed text when there is no buf. */
const char *fip_prov_strerror(int prov_errno, char *buf, size_t len);

int fip_nosys_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int fip_nosys_control(struct fid *fid, int command, void *arg);
int fip_nosys_ops_open(struct fid *fid, const char *name, uint64_t flags,
                       void **ops, void *context);
int fip_nosys_tostr(const struct fid *fid, char *buf, size_t len);
int fip_nosys_ops_set(struct fid *fid, const char *name, uint64_t flags,
                      void *ops, void *context);

#endif
