/**
 * RMA's wire: fip_rma.c cuts an operation into pieces, and each piece is
 * one active message to the peer's domain, which checks it and answers.
 * A write carries the program's 64-bit key, the remote address as the
 * program gives it, its length and its bytes; the target looks the key up
 * in its key table (fip_mr.c) and, under the table's lock, checks that the
 * bytes lie inside the live region and that the region allows
 * FI_REMOTE_WRITE, then copies them, and answers 0, -FI_ENOKEY (no such
 * key: unknown, or closed), -FI_EINVAL (outside the region) or -FI_EACCES.
 * A read is the same request without bytes; the target copies the region's
 * bytes under the lock and answers with them. Closing a region takes its
 * key out of the table first, under that lock: nothing reaches it after
 * fi_close, whatever a peer cached. A write's bytes that come by rendezvous
 * land in a bounce buffer and are checked again once in.
 *
 * The answer is what completes a piece, so a counted write is at the
 * target (delivery complete) and a refusal completes the operation with
 * its error. Bounds: a piece carries at most FIP_RMA_PIECE_MAX bytes; an
 * initiator has at most FIP_RMA_PEER_INFLIGHT pieces in flight to one peer
 * (a post beyond them: -FI_EAGAIN), and a piece not answered within
 * FIP_RMA_TIMEOUT_MS, or whose peer failed, completes with -FI_ETIMEDOUT
 * or -FI_EIO; a target holds at most FIP_RMA_PEER_INFLIGHT answers and
 * rendezvous per connection (beyond: the request is dropped and logged)
 * and FIP_RMA_HELD_MAX bytes in all (beyond: answered -FI_EAGAIN). Every
 * message is checked (its exact lengths, a magic word, an answer matched
 * to a piece waiting on the connection it came over); one that fails is
 * dropped and logged.
 */
#include "fip.h"

#include <rdma/providers/fi_log.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define FIP_RMA_MAGIC    0x66697052u /* "fipR" */
#define FIP_RMA_OP_WRITE 1
#define FIP_RMA_OP_READ  2
#define FIP_RMA_BUCKETS  64

typedef struct fip_rma_req_msg {
    uint32_t magic;
    uint16_t op;        /* FIP_RMA_OP_* */
    uint16_t reserved;  /* 0 */
    uint64_t id;        /* echoed by the answer */
    uint64_t key;       /* the program's */
    uint64_t addr;      /* as the program gives it */
    uint64_t len;       /* a write's bytes follow */
} fip_rma_req_msg_t;

typedef struct fip_rma_rep_msg {
    uint32_t magic;
    int32_t  status;    /* 0 or -FI_E* */
    uint64_t id;
    uint64_t len;       /* a read's bytes that follow */
} fip_rma_rep_msg_t;

/* a piece waiting for its answer (initiator) */
typedef struct fip_rma_wait {
    struct fip_rma_wait *next;     /* in its bucket, until claimed */
    fip_rma_req_msg_t   req;       /* UCP holds it until it is sent */
    fip_op_t            *op;
    fip_peer_t          *peer;
    void                *lbuf;     /* a read's destination */
    int64_t             deadline;
    int                 refs;      /* atomic: the send and the answer */
} fip_rma_wait_t;

/* what a target holds for one connection */
typedef struct fip_rma_conn {
    struct fip_rma_conn *next;
    ucp_ep_h            ep;
    unsigned            held;
} fip_rma_conn_t;

/* one request a target serves: its answer (header, then a read's bytes),
 * or first a write's bounce buffer */
typedef struct fip_rma_held {
    fip_domain_t        *domain;
    ucp_ep_h            ep;        /* the connection it counts against */
    size_t              bytes;
    fip_rma_req_msg_t   req;
    fip_rma_rep_msg_t   rep;       /* data follows */
} fip_rma_held_t;

struct fip_rma_wire {
    pthread_mutex_t     lock;
    fip_rma_wait_t      *waits[FIP_RMA_BUCKETS];
    size_t              wait_count; /* atomic reads outside the lock */
    uint64_t            next_id;
    fip_rma_conn_t      *conns[FIP_RMA_BUCKETS];
    size_t              held_bytes;
};

static size_t fip_rma_id_bucket(uint64_t id)
{
    return id % FIP_RMA_BUCKETS;
}

static size_t fip_rma_ep_bucket(ucp_ep_h ep)
{
    return ((uintptr_t)ep >> 4) % FIP_RMA_BUCKETS;
}

/* ---- target ------------------------------------------------------------ */

/* count a request of `ep` holding `bytes`: 0, else -FI_EAGAIN over the
 * domain's bytes, -FI_ENOSPC over the connection's count */
static int fip_rma_hold(fip_domain_t *domain, ucp_ep_h ep, size_t bytes)
{
    struct fip_rma_wire *wire = domain->rma_wire;
    size_t b = fip_rma_ep_bucket(ep);
    fip_rma_conn_t *conn;
    int ret = 0;

    pthread_mutex_lock(&wire->lock);
    for (conn = wire->conns[b]; conn != NULL; conn = conn->next) {
        if (conn->ep == ep) {
            break;
        }
    }
    if ((conn != NULL) && (conn->held >= FIP_RMA_PEER_INFLIGHT)) {
        ret = -FI_ENOSPC;
    } else if (wire->held_bytes + bytes > FIP_RMA_HELD_MAX) {
        ret = -FI_EAGAIN;
    } else if (conn == NULL) {
        conn = calloc(1, sizeof(*conn));
        if (conn == NULL) {
            ret = -FI_EAGAIN;
        } else {
            conn->ep        = ep;
            conn->next      = wire->conns[b];
            wire->conns[b]  = conn;
        }
    }
    if (ret == 0) {
        ++conn->held;
        wire->held_bytes += bytes;
    }
    pthread_mutex_unlock(&wire->lock);
    return ret;
}

static void fip_rma_unhold(fip_domain_t *domain, ucp_ep_h ep, size_t bytes)
{
    struct fip_rma_wire *wire = domain->rma_wire;
    fip_rma_conn_t **p, *conn;

    pthread_mutex_lock(&wire->lock);
    wire->held_bytes -= bytes;
    for (p = &wire->conns[fip_rma_ep_bucket(ep)]; *p != NULL;
         p = &(*p)->next) {
        conn = *p;
        if (conn->ep == ep) {
            if (--conn->held == 0) {
                *p = conn->next;
                free(conn);
            }
            break;
        }
    }
    pthread_mutex_unlock(&wire->lock);
}

static void fip_rma_held_free(fip_rma_held_t *held)
{
    fip_rma_unhold(held->domain, held->ep, held->bytes);
    free(held);
}

static void fip_rma_answer_sent(void *request, ucs_status_t status,
                                void *user_data)
{
    ucp_request_free(request);
    fip_rma_held_free(user_data);
}

/* send held's answer over its connection (with `len` bytes after it), and
 * let go of held once UCP has */
static void fip_rma_answer(fip_rma_held_t *held, int status, size_t len)
{
    ucp_request_param_t param = {0};
    ucs_status_ptr_t sptr;

    held->rep.magic  = FIP_RMA_MAGIC;
    held->rep.status = status;
    held->rep.id     = held->req.id;
    held->rep.len    = len;
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FIELD_FLAGS;
    param.cb.send      = fip_rma_answer_sent;
    param.user_data    = held;
    param.flags        = UCP_AM_SEND_FLAG_REPLY;
    sptr = ucp_am_send_nbx(held->ep, FIP_AM_RMA_REP, &held->rep,
                           sizeof(held->rep), &held->rep + 1, len, &param);
    if (!UCS_PTR_IS_PTR(sptr)) {
        fip_rma_held_free(held);
    }
}

/* the region a request may touch, under mr_lock: 0 and its bytes' place,
 * else the refusal */
static int fip_rma_check_locked(fip_domain_t *domain,
                                const fip_rma_req_msg_t *req, char **dst_p)
{
    const uint64_t access = (req->op == FIP_RMA_OP_READ) ? FI_REMOTE_READ :
                                                           FI_REMOTE_WRITE;
    fip_mr_t *mr = fip_mr_lookup_locked(domain, req->key);
    uint64_t offset;

    if ((mr == NULL) || !(mr->access & (FI_REMOTE_READ | FI_REMOTE_WRITE))) {
        return -FI_ENOKEY;
    }
    offset = req->addr - mr->remote_base;
    if ((req->addr < mr->remote_base) || (offset >= mr->length) ||
        (req->len > mr->length - offset)) {
        return -FI_EINVAL;
    }
    if (!(mr->access & access)) {
        return -FI_EACCES;
    }
    *dst_p = (char*)mr->addr + offset;
    return 0;
}

/* a write's bytes into the region, if it still takes them */
static int fip_rma_land(fip_domain_t *domain, const fip_rma_req_msg_t *req,
                        const void *data)
{
    char *dst = NULL;
    int ret;

    pthread_mutex_lock(&domain->mr_lock);
    ret = fip_rma_check_locked(domain, req, &dst);
    if (ret == 0) {
        memcpy(dst, data, req->len);
    }
    pthread_mutex_unlock(&domain->mr_lock);
    return ret;
}

static void fip_rma_bounce_done(void *request, ucs_status_t status,
                                size_t length, void *user_data)
{
    fip_rma_held_t *held = user_data;

    if (request != NULL) {
        ucp_request_free(request);
    }
    if ((status != UCS_OK) || (length != held->req.len)) {
        /* the connection failed: nobody to answer */
        FI_WARN(&fip_provider, FI_LOG_EP_DATA,
                "RMA write of %" PRIu64 " bytes not received: %s\n",
                held->req.len, ucs_status_string(status));
        fip_rma_held_free(held);
        return;
    }
    /* the bounce buffer follows the answer header; answered without it */
    fip_rma_answer(held, fip_rma_land(held->domain, &held->req,
                                      &held->rep + 1), 0);
}

static void fip_rma_serve_write(fip_domain_t *domain, fip_rma_held_t *held,
                                void *data, int rndv)
{
    ucp_request_param_t param = {0};
    ucs_status_ptr_t sptr;

    if (!rndv) {
        fip_rma_answer(held, fip_rma_land(domain, &held->req, data), 0);
        return;
    }
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.recv_am   = fip_rma_bounce_done;
    param.user_data    = held;
    sptr = ucp_am_recv_data_nbx(domain->ucp_worker, data, &held->rep + 1,
                                held->req.len, &param);
    if (!UCS_PTR_IS_PTR(sptr)) {
        fip_rma_bounce_done(NULL, UCS_PTR_STATUS(sptr), held->req.len,
                            held);
    }
}

static void fip_rma_serve_read(fip_domain_t *domain, fip_rma_held_t *held)
{
    char *src = NULL;
    int ret;

    pthread_mutex_lock(&domain->mr_lock);
    ret = fip_rma_check_locked(domain, &held->req, &src);
    if (ret == 0) {
        memcpy(&held->rep + 1, src, held->req.len);
    }
    pthread_mutex_unlock(&domain->mr_lock);
    fip_rma_answer(held, ret, (ret == 0) ? held->req.len : 0);
}

static ucs_status_t fip_rma_req_handler(void *arg, const void *header,
                                        size_t header_length, void *data,
                                        size_t length,
                                        const ucp_am_recv_param_t *param)
{
    fip_domain_t *domain = arg;
    int rndv = !!(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV);
    fip_rma_held_t *held;
    fip_rma_req_msg_t req;
    size_t bytes;
    int ret;

    /* a rendezvous not started here is dropped with its request */
    if ((param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) &&
        !fip_admit_gate(domain, param->reply_ep, "RMA request")) {
        return UCS_OK;
    }
    if ((header_length != sizeof(req)) ||
        !(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
        FI_WARN(&fip_provider, FI_LOG_EP_DATA,
                "RMA request of %zu header bytes dropped\n", header_length);
        return UCS_OK;
    }
    memcpy(&req, header, sizeof(req));
    if ((req.magic != FIP_RMA_MAGIC) || (req.reserved != 0) ||
        (req.len == 0) || (req.len > FIP_RMA_PIECE_MAX) ||
        !(((req.op == FIP_RMA_OP_WRITE) && (length == req.len)) ||
          ((req.op == FIP_RMA_OP_READ) && (length == 0) && !rndv))) {
        FI_WARN(&fip_provider, FI_LOG_EP_DATA,
                "malformed RMA request dropped (op %u, %" PRIu64 " bytes "
                "said, %zu came)\n", req.op, req.len, length);
        return UCS_OK;
    }

    /* what it holds until answered: the answer, a read's bytes or a
     * write's bounce buffer */
    bytes = sizeof(*held) +
            (((req.op == FIP_RMA_OP_READ) || rndv) ? req.len : 0);
    ret   = fip_rma_hold(domain, param->reply_ep, bytes);
    if (ret == -FI_EAGAIN) {
        /* the domain holds its most: refused, answered small */
        bytes = sizeof(*held);
        if (fip_rma_hold(domain, param->reply_ep, bytes) != 0) {
            ret = -FI_ENOSPC;
        }
    }
    if (ret == -FI_ENOSPC) {
        FI_WARN(&fip_provider, FI_LOG_EP_DATA,
                "RMA request dropped: its connection has %d answers "
                "pending\n", FIP_RMA_PEER_INFLIGHT);
        return UCS_OK;
    }
    held = malloc(bytes);
    if (held == NULL) {
        fip_rma_unhold(domain, param->reply_ep, bytes);
        return UCS_OK; /* the initiator's piece times out */
    }
    held->domain = domain;
    held->ep     = param->reply_ep;
    held->bytes  = bytes;
    held->req    = req;
    if (ret != 0) {
        fip_rma_answer(held, ret, 0);
    } else if (req.op == FIP_RMA_OP_READ) {
        fip_rma_serve_read(domain, held);
    } else {
        fip_rma_serve_write(domain, held, data, rndv);
    }
    return UCS_OK;
}

/* ---- initiator --------------------------------------------------------- */

static void fip_rma_wait_unref(fip_rma_wait_t *wait)
{
    if (__atomic_sub_fetch(&wait->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        free(wait);
    }
}

/* take the piece `id` out of the table (NULL: not waiting); with `ep`, only
 * if it was sent over it */
static fip_rma_wait_t *fip_rma_claim(fip_domain_t *domain, uint64_t id,
                                     ucp_ep_h ep)
{
    struct fip_rma_wire *wire = domain->rma_wire;
    fip_rma_wait_t **p, *wait = NULL;

    pthread_mutex_lock(&wire->lock);
    for (p = &wire->waits[fip_rma_id_bucket(id)]; *p != NULL;
         p = &(*p)->next) {
        if (((*p)->req.id == id) &&
            ((ep == NULL) || ((*p)->peer->ucp_ep == ep))) {
            wait  = *p;
            *p    = wait->next;
            __atomic_sub_fetch(&wire->wait_count, 1, __ATOMIC_RELAXED);
            break;
        }
    }
    pthread_mutex_unlock(&wire->lock);
    return wait;
}

/* a claimed piece's answer is in (status 0 or -FI_E*) */
static void fip_rma_finish(fip_rma_wait_t *wait, int status)
{
    fip_op_t *op = wait->op;
    int none     = 0;

    fip_rma_wire_unreserve(wait->peer, 1, wait->req.len);
    if (status != 0) {
        /* the operation's first error is its own */
        __atomic_compare_exchange_n(&op->err, &none, -status, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    }
    fip_rma_wait_unref(wait);
    fip_op_piece_done(op, UCS_OK);
}

static void fip_rma_read_in(void *request, ucs_status_t status,
                            size_t length, void *user_data)
{
    fip_rma_wait_t *wait = user_data;

    if (request != NULL) {
        ucp_request_free(request);
    }
    fip_rma_finish(wait, ((status == UCS_OK) &&
                          (length == wait->req.len)) ? 0 : -FI_EIO);
}

static ucs_status_t fip_rma_rep_handler(void *arg, const void *header,
                                        size_t header_length, void *data,
                                        size_t length,
                                        const ucp_am_recv_param_t *param)
{
    fip_domain_t *domain = arg;
    int rndv = !!(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV);
    ucp_request_param_t rparam = {0};
    fip_rma_rep_msg_t rep;
    fip_rma_wait_t *wait;
    ucs_status_ptr_t sptr;
    size_t expect;

    if ((header_length != sizeof(rep)) ||
        !(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
        FI_WARN(&fip_provider, FI_LOG_EP_DATA,
                "RMA answer of %zu header bytes dropped\n", header_length);
        return UCS_OK;
    }
    memcpy(&rep, header, sizeof(rep));
    if ((rep.magic != FIP_RMA_MAGIC) || (rep.status > 0) ||
        (rep.len != length) || ((rep.status != 0) && (length != 0))) {
        FI_WARN(&fip_provider, FI_LOG_EP_DATA,
                "malformed RMA answer dropped\n");
        return UCS_OK;
    }
    wait = fip_rma_claim(domain, rep.id, param->reply_ep);
    if (wait == NULL) {
        FI_WARN(&fip_provider, FI_LOG_EP_DATA,
                "RMA answer for no piece waiting on its connection "
                "dropped (late, or forged)\n");
        return UCS_OK;
    }
    expect = ((rep.status == 0) && (wait->req.op == FIP_RMA_OP_READ)) ?
             wait->req.len : 0;
    if (length != expect) {
        FI_WARN(&fip_provider, FI_LOG_EP_DATA,
                "RMA answer with %zu bytes for %zu: the piece fails\n",
                length, expect);
        fip_rma_finish(wait, -FI_EIO);
        return UCS_OK;
    }
    if ((length == 0) || !rndv) {
        if (length > 0) {
            memcpy(wait->lbuf, data, length);
        }
        fip_rma_finish(wait, rep.status);
        return UCS_OK;
    }
    rparam.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                          UCP_OP_ATTR_FIELD_USER_DATA;
    rparam.cb.recv_am   = fip_rma_read_in;
    rparam.user_data    = wait;
    sptr = ucp_am_recv_data_nbx(domain->ucp_worker, data, wait->lbuf, length,
                                &rparam);
    if (!UCS_PTR_IS_PTR(sptr)) {
        fip_rma_read_in(NULL, UCS_PTR_STATUS(sptr), length, wait);
    }
    return UCS_OK;
}

/* the request's send is over: a failed one gets no answer */
static void fip_rma_sent(fip_rma_wait_t *wait, ucs_status_t status)
{
    fip_op_t *op = wait->op;
    fip_rma_wait_t *claimed;

    if (status != UCS_OK) {
        claimed = fip_rma_claim(op->ep->domain, wait->req.id, NULL);
        if (claimed != NULL) {
            fip_rma_finish(claimed, fiatomic_status_to_fi_errno(status) ?
                           fiatomic_status_to_fi_errno(status) : -FI_EIO);
        }
    }
    fip_rma_wait_unref(wait);
    fip_op_piece_done(op, status);
}

static void fip_rma_sent_cb(void *request, ucs_status_t status,
                            void *user_data)
{
    ucp_request_free(request);
    fip_rma_sent(user_data, status);
}

int fip_rma_wire_reserve(fip_peer_t *peer, size_t pieces, uint64_t bytes)
{
    uint64_t held = __atomic_add_fetch(&peer->rma_bytes, bytes,
                                       __ATOMIC_RELAXED);

    if ((__atomic_add_fetch(&peer->rma_inflight, (int)pieces,
                            __ATOMIC_RELAXED) > FIP_RMA_PEER_INFLIGHT) ||
        ((held > FIP_RMA_PEER_BYTES) && (held != bytes))) {
        fip_rma_wire_unreserve(peer, pieces, bytes);
        return -FI_EAGAIN;
    }
    return 0;
}

void fip_rma_wire_unreserve(fip_peer_t *peer, size_t pieces, uint64_t bytes)
{
    __atomic_sub_fetch(&peer->rma_inflight, (int)pieces, __ATOMIC_RELAXED);
    __atomic_sub_fetch(&peer->rma_bytes, bytes, __ATOMIC_RELAXED);
}

int fip_rma_wire_post(fip_op_t *op, fip_peer_t *peer, int reading,
                      void *lbuf, size_t len, uint64_t key, uint64_t addr)
{
    struct fip_rma_wire *wire = op->ep->domain->rma_wire;
    ucp_request_param_t param = {0};
    fip_rma_wait_t *wait;
    ucs_status_ptr_t sptr;
    size_t b;

    wait = calloc(1, sizeof(*wait));
    if (wait == NULL) {
        return -FI_ENOMEM;
    }
    wait->req.magic = FIP_RMA_MAGIC;
    wait->req.op    = reading ? FIP_RMA_OP_READ : FIP_RMA_OP_WRITE;
    wait->req.key   = key;
    wait->req.addr  = addr;
    wait->req.len   = len;
    wait->op        = op;
    wait->peer      = peer;
    wait->lbuf      = lbuf;
    wait->deadline  = fip_wait_deadline(FIP_RMA_TIMEOUT_MS);
    wait->refs      = 2;

    /* its answer and its send, each a piece of the operation */
    fip_op_piece_starting(op);
    fip_op_piece_starting(op);
    pthread_mutex_lock(&wire->lock);
    wait->req.id     = ++wire->next_id;
    b                = fip_rma_id_bucket(wait->req.id);
    wait->next       = wire->waits[b];
    wire->waits[b]   = wait;
    __atomic_add_fetch(&wire->wait_count, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&wire->lock);

    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FIELD_FLAGS;
    param.cb.send      = fip_rma_sent_cb;
    param.user_data    = wait;
    param.flags        = UCP_AM_SEND_FLAG_REPLY;
    sptr = ucp_am_send_nbx(peer->ucp_ep, FIP_AM_RMA_REQ, &wait->req,
                           sizeof(wait->req), reading ? NULL : lbuf,
                           reading ? 0 : len, &param);
    if (!UCS_PTR_IS_PTR(sptr)) {
        /* sent or failed at once: no callback comes */
        fip_rma_sent(wait, UCS_PTR_STATUS(sptr));
    }
    return 0;
}

/* pieces past their deadline, or of a failed peer, complete with an error;
 * from where fip_domain_check_overdue runs (never a UCP callback) */
void fip_rma_wire_check_overdue(fip_domain_t *domain)
{
    struct fip_rma_wire *wire = domain->rma_wire;
    fip_rma_wait_t **p, *wait, *expired = NULL;
    int64_t now;
    size_t b;

    if ((wire == NULL) ||
        (__atomic_load_n(&wire->wait_count, __ATOMIC_RELAXED) == 0)) {
        return;
    }
    now = fip_now_ns();
    pthread_mutex_lock(&wire->lock);
    for (b = 0; b < FIP_RMA_BUCKETS; ++b) {
        for (p = &wire->waits[b]; (wait = *p) != NULL;) {
            if ((now >= wait->deadline) ||
                __atomic_load_n(&wait->peer->failed, __ATOMIC_ACQUIRE)) {
                *p         = wait->next;
                wait->next = expired;
                expired    = wait;
                __atomic_sub_fetch(&wire->wait_count, 1, __ATOMIC_RELAXED);
            } else {
                p = &wait->next;
            }
        }
    }
    pthread_mutex_unlock(&wire->lock);
    while ((wait = expired) != NULL) {
        expired = wait->next;
        FI_WARN(&fip_provider, FI_LOG_EP_DATA,
                "RMA piece of %" PRIu64 " bytes not answered: %s\n",
                wait->req.len,
                __atomic_load_n(&wait->peer->failed, __ATOMIC_ACQUIRE) ?
                "its peer failed" : "timed out");
        fip_rma_finish(wait,
                       __atomic_load_n(&wait->peer->failed,
                                       __ATOMIC_ACQUIRE) ?
                       fip_peer_failed_errno(wait->peer) : -FI_ETIMEDOUT);
    }
}

int fip_rma_wire_init(fip_domain_t *domain)
{
    int ret;

    domain->rma_wire = calloc(1, sizeof(*domain->rma_wire));
    if (domain->rma_wire == NULL) {
        return -FI_ENOMEM;
    }
    pthread_mutex_init(&domain->rma_wire->lock, NULL);
    ret = fip_domain_am_handler_set(domain, FIP_AM_RMA_REQ,
                                    fip_rma_req_handler);
    if (ret != 0) {
        return ret;
    }
    return fip_domain_am_handler_set(domain, FIP_AM_RMA_REP,
                                     fip_rma_rep_handler);
}

void fip_rma_wire_cleanup(fip_domain_t *domain)
{
    struct fip_rma_wire *wire = domain->rma_wire;
    fip_rma_conn_t *conn;
    fip_rma_wait_t *wait;
    size_t b;

    if (wire == NULL) {
        return;
    }
    /* the worker is gone: what is left has no callback to come */
    for (b = 0; b < FIP_RMA_BUCKETS; ++b) {
        while ((wait = wire->waits[b]) != NULL) {
            wire->waits[b] = wait->next;
            free(wait);
        }
        while ((conn = wire->conns[b]) != NULL) {
            wire->conns[b] = conn->next;
            free(conn);
        }
    }
    pthread_mutex_destroy(&wire->lock);
    free(wire);
    domain->rma_wire = NULL;
}
