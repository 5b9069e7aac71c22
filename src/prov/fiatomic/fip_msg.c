/**
 * Messages (fi_msg(3)) on FI_EP_RDM endpoints with FI_MSG: fi_send,
 * fi_sendv, fi_sendmsg, fi_inject, fi_senddata, fi_injectdata, fi_recv,
 * fi_recvv and fi_recvmsg, over UCP active messages (FIP_AM_MSG) on the
 * connection to the peer's domain (fip_peer.c); and the same for tagged
 * messages (fi_tagged(3), the calls in fip_tagged.c) with FI_TAGGED. A
 * message names the endpoint it is for (the id and nonce of its address);
 * the domain's handler finds it there and matches the message to the
 * oldest receive it has posted of its kind that takes its source: an
 * untagged message the oldest untagged receive, a tagged one the oldest
 * tagged receive whose tag equals the message's in the bits its ignore
 * mask leaves, so that messages from one endpoint to another fill the
 * receives they match in the order they were sent. Every message carries
 * its sender's endpoint address (FIP_ADDR_LEN bytes, as fi_getname gives
 * it), which the receiving endpoint looks up in its address vector on
 * arrival (fip_av_reverse): the source of its completion (FI_SOURCE,
 * FI_ADDR_NOTAVAIL when the vector has no such entry) and, on an endpoint
 * with FI_DIRECTED_RECV, what a receive posted with a src_addr other than
 * FI_ADDR_UNSPEC must equal to take it (a message from an unknown sender
 * matches only FI_ADDR_UNSPEC receives). The address travels in every
 * message rather than once per connection: a connection carries the
 * messages of all endpoints of its domain, and a message then stands on
 * its own, whatever order the connection's first messages arrive in. A message
 * that finds no receive waits in the endpoint's unexpected queue (copied,
 * or fetched by rendezvous into a buffer of its own), capped at
 * FIP_MSG_UX_MAX messages and FIP_MSG_UX_BYTES bytes in all and a share of
 * them per source: a message beyond a cap is dropped and counted as an error of the endpoint's FI_RECV
 * counter (the sender is not told). A message larger than its receive
 * fills the receive and completes it with an FI_ETRUNC error entry whose
 * olen is the rest. Everything in a message's header is checked (magic,
 * lengths, flags, a tag only with its flag, an endpoint that exists with
 * that nonce and takes messages of that kind); a message that fails is
 * dropped. A send completes when UCP has sent it, or, with
 * FI_DELIVERY_COMPLETE, after a flush of the connection that follows it.
 * A source address must decode as an address, and name an endpoint of
 * the domain that confirmed it made the connection (fip_caller.c): a peer
 * may name any endpoint of its own domain, but not one of another domain;
 * a connection's messages wait while its greeting's claim is checked, and
 * have no source on a connection not confirmed.
 */
#include "fip.h"

#include <rdma/providers/fi_log.h>

#include <stdlib.h>
#include <string.h>

#define FIP_MSG_MAGIC    0x6669704du /* "fipM" */
#define FIP_MSG_HDR_DATA   1u        /* data holds remote CQ data */
#define FIP_MSG_HDR_TAGGED 2u        /* a tagged message: tag holds it */
#define FIP_MSG_HDR_FLAGS  (FIP_MSG_HDR_DATA | FIP_MSG_HDR_TAGGED)

typedef struct fip_msg_hdr {
    uint32_t magic;
    uint32_t ep_id;     /* the endpoint the message is for */
    uint64_t nonce;     /* and its nonce */
    uint64_t len;       /* the message's bytes */
    uint64_t data;      /* remote CQ data, with FIP_MSG_HDR_DATA */
    uint64_t seq;       /* its number on its connection, from 0 */
    uint64_t tag;       /* with FIP_MSG_HDR_TAGGED, else 0 */
    uint32_t flags;
    uint32_t reserved;  /* 0 */
    uint8_t  src[FIP_ADDR_LEN]; /* the sending endpoint's address */
} fip_msg_hdr_t;

/* a message that came before its turn: its header, and its bytes (copied)
 * or UCP's rendezvous descriptor */
typedef struct fip_msg_held {
    struct fip_msg_held *next;   /* by seq */
    fip_msg_hdr_t       hdr;
    void                *desc;   /* rendezvous, else NULL */
} fip_msg_held_t;

/* who a connection is (fip_caller.c) */
enum {
    FIP_STREAM_UNKNOWN,   /* no claim: its messages have no source */
    FIP_STREAM_GREETED,   /* a claim, checked on the first message */
    FIP_STREAM_CLAIMED,   /* a claim being checked: its messages wait */
    FIP_STREAM_CONFIRMED, /* its messages come from `sender`'s domain */
    FIP_STREAM_REFUSED    /* no source */
};

/* the messages of one connection (UCP's endpoint they come over) */
typedef struct fip_msg_stream {
    struct fip_msg_stream *next;
    ucp_ep_h              ep;
    uint64_t              expected;   /* the next seq to deliver */
    int                   state;      /* FIP_STREAM_* */
    int64_t               deadline;   /* CLAIMED: waits no longer */
    fip_addr_t            sender;     /* the domain claimed, CONFIRMED:
                                         the peer domain */
    uint64_t              token;      /* the greeting's */
    fip_msg_held_t        *held;      /* sorted by seq */
} fip_msg_stream_t;

/* a send: the operation, the header UCP sends from, the program's iov;
 * injected bytes follow */
typedef struct fip_msg_tx {
    fip_op_t      op;
    fip_msg_hdr_t hdr;
    ucp_dt_iov_t  iov[FIP_IOV_LIMIT];
} fip_msg_tx_t;

/* a posted receive; the operation first, so that the CQ frees it whole */
typedef struct fip_msg_rx {
    fip_op_t          op;
    struct fip_msg_rx *next;
    struct iovec      iov[FIP_IOV_LIMIT];
    size_t            iov_count;
    size_t            size;      /* the iov's bytes */
    uint64_t          tag;       /* tagged: the tag it matches */
    uint64_t          ignore;    /* and the bits it ignores */
    fi_addr_t         src;       /* the source it takes, FI_ADDR_UNSPEC:
                                    any */
    void              *bounce;   /* a rendezvous into a buffer of ours */
    size_t            msg_len;   /* the rendezvous's message */
    uint64_t          msg_data;
    uint64_t          msg_flags;
    uint64_t          msg_tag;
} fip_msg_rx_t;

/* an unexpected message; its bytes follow */
typedef struct fip_msg_ux {
    struct fip_msg_ux *next;
    fip_ep_t          *ep;
    size_t            len;
    uint64_t          data;
    uint64_t          flags;     /* FI_REMOTE_CQ_DATA */
    uint64_t          tag;       /* a tagged message's */
    fi_addr_t         src;       /* its source in the endpoint's AV */
    int               arriving;  /* under rx_lock: rendezvous running */
    int               failed;    /* its rendezvous failed */
    fip_msg_rx_t      *rx;       /* under rx_lock: matched while arriving */
    int               discard;   /* rx drops it rather than receive it */
    void              *claim;    /* claimed: the claim's context */
} fip_msg_ux_t;

static fip_ep_t *fip_msg_ep(struct fid_ep *ep_fid)
{
    return fip_container_of(ep_fid, fip_ep_t, ep_fid);
}

static size_t fip_msg_iov_bytes(const struct iovec *iov, size_t count)
{
    size_t total = 0;
    size_t i;

    for (i = 0; i < count; ++i) {
        total += iov[i].iov_len;
    }
    return total;
}

/* ---- receiving ---------------------------------------------------------- */

/* copy len bytes into the receive's iov (at most its size) */
static void fip_msg_scatter(fip_msg_rx_t *rx, const void *src, size_t len)
{
    size_t i, n, off = 0;

    for (i = 0; (i < rx->iov_count) && (off < len); ++i) {
        n = rx->iov[i].iov_len;
        if (n > len - off) {
            n = len - off;
        }
        memcpy(rx->iov[i].iov_base, (const char*)src + off, n);
        off += n;
    }
}

/* a receive got a message of len bytes (already in its buffers): its entry
 * (FI_ETRUNC when cut short) and counter; the receive counts in flight */
static void fip_msg_rx_done(fip_msg_rx_t *rx, size_t len, uint64_t data,
                            uint64_t flags, uint64_t tag, int err)
{
    fip_op_t *op = &rx->op;

    op->flags |= flags;
    op->data   = data;
    op->tag    = tag;
    if (err != 0) {
        op->err = err;
        op->len = 0;
    } else if (len > rx->size) {
        op->err  = FI_ETRUNC;
        op->len  = rx->size;
        op->olen = len - rx->size;
    } else {
        op->len = len;
    }
    fip_op_complete(op, UCS_OK);
}

static void fip_msg_rx_deliver(fip_msg_rx_t *rx, const void *src, size_t len,
                               uint64_t data, uint64_t flags, uint64_t tag)
{
    fip_msg_scatter(rx, src, len);
    fip_msg_rx_done(rx, len, data, flags, tag, 0);
}

/* a rendezvous into a receive finished */
static void fip_msg_rndv_rx_cb(void *request, ucs_status_t status,
                               size_t length, void *user_data)
{
    fip_msg_rx_t *rx = user_data;

    if (request != NULL) {
        ucp_request_free(request);
    }
    if ((status == UCS_OK) && (rx->bounce != NULL)) {
        fip_msg_scatter(rx, rx->bounce, rx->msg_len);
    }
    free(rx->bounce);
    rx->bounce = NULL;
    fip_msg_rx_done(rx, rx->msg_len, rx->msg_data, rx->msg_flags,
                    rx->msg_tag, (status == UCS_OK) ? 0 : FI_EIO);
}

/* a rendezvous into an unexpected message's buffer finished */
static void fip_msg_rndv_ux_cb(void *request, ucs_status_t status,
                               size_t length, void *user_data)
{
    fip_msg_ux_t *ux = user_data;
    fip_ep_t *ep     = ux->ep;
    fip_msg_rx_t *rx;

    if (request != NULL) {
        ucp_request_free(request);
    }
    pthread_mutex_lock(&ep->rx_lock);
    ux->arriving = 0;
    ux->failed   = (status != UCS_OK);
    rx           = ux->rx;
    if (rx != NULL) {
        /* a receive took it while it arrived: it left the queue then */
        ep->ux_bytes -= ux->len;
    }
    pthread_mutex_unlock(&ep->rx_lock);
    if (rx != NULL) {
        if (ux->failed) {
            fip_msg_rx_done(rx, 0, 0, 0, ux->tag, FI_EIO);
        } else if (ux->discard) {
            fip_msg_rx_done(rx, 0, ux->data, ux->flags, ux->tag, 0);
        } else {
            fip_msg_rx_deliver(rx, ux + 1, ux->len, ux->data, ux->flags,
                               ux->tag);
        }
        free(ux);
    }
    /* the rendezvous counted in flight */
    __atomic_sub_fetch(&ep->inflight, 1, __ATOMIC_RELEASE);
}

/* the endpoint a message names, with its rx_lock held; NULL if none, or
 * if it does not take messages of the message's kind */
static fip_ep_t *fip_msg_ep_find(fip_domain_t *domain,
                                 const fip_msg_hdr_t *hdr)
{
    int tagged = !!(hdr->flags & FIP_MSG_HDR_TAGGED);
    fip_ep_t *ep;

    for (ep = domain->msg_eps; ep != NULL; ep = ep->msg_next) {
        if ((ep->addr.ep_id == hdr->ep_id) &&
            (ep->addr.nonce == hdr->nonce) &&
            (tagged ? ep->tagged : ep->msg)) {
            pthread_mutex_lock(&ep->rx_lock);
            return ep;
        }
    }
    return NULL;
}

/* whether a receive takes a message of tag `tag` (fi_tagged(3); every
 * untagged receive takes every untagged message) from `src` (a directed
 * receive only its source's; FI_ADDR_UNSPEC and FI_ADDR_NOTAVAIL are the
 * same value, so a message from an unknown sender matches only receives
 * of any source) */
static int fip_msg_matches(int tagged, const fip_msg_rx_t *rx, uint64_t tag,
                           fi_addr_t src)
{
    return ((rx->src == FI_ADDR_UNSPEC) || (rx->src == src)) &&
           (!tagged || (((tag ^ rx->tag) & ~rx->ignore) == 0));
}

/* take the oldest posted receive of the queue the message matches; NULL if
 * none. Under rx_lock. */
static fip_msg_rx_t *fip_msg_rx_take(fip_msg_queue_t *q, int tagged,
                                     uint64_t tag, fi_addr_t src)
{
    fip_msg_rx_t *rx, *prev = NULL;

    for (rx = q->rx_head; rx != NULL; prev = rx, rx = rx->next) {
        if (fip_msg_matches(tagged, rx, tag, src)) {
            break;
        }
    }
    if (rx == NULL) {
        return NULL;
    }
    if (prev == NULL) {
        q->rx_head = rx->next;
    } else {
        prev->next = rx->next;
    }
    if (q->rx_tail == rx) {
        q->rx_tail = prev;
    }
    return rx;
}

/* the oldest unexpected message of the queue that the receive matches
 * (*prev: the one before it); NULL if none. Under rx_lock. */
static fip_msg_ux_t *fip_msg_ux_find(fip_msg_queue_t *q, int tagged,
                                     const fip_msg_rx_t *rx,
                                     fip_msg_ux_t **prev)
{
    fip_msg_ux_t *ux;

    *prev = NULL;
    for (ux = q->ux_head; ux != NULL; *prev = ux, ux = ux->next) {
        if (fip_msg_matches(tagged, rx, ux->tag, ux->src)) {
            return ux;
        }
    }
    return NULL;
}

/* unlink an unexpected message from its queue. Under rx_lock. */
static void fip_msg_ux_unlink(fip_msg_queue_t *q, fip_msg_ux_t *prev,
                              fip_msg_ux_t *ux)
{
    if (prev == NULL) {
        q->ux_head = ux->next;
    } else {
        prev->next = ux->next;
    }
    if (q->ux_tail == ux) {
        q->ux_tail = prev;
    }
    ux->next = NULL;
}

/* take the oldest unexpected message of the queue that the receive
 * matches; NULL if none. Under rx_lock. */
static fip_msg_ux_t *fip_msg_ux_take(fip_msg_queue_t *q, int tagged,
                                     const fip_msg_rx_t *rx)
{
    fip_msg_ux_t *prev;
    fip_msg_ux_t *ux = fip_msg_ux_find(q, tagged, rx, &prev);

    if (ux != NULL) {
        fip_msg_ux_unlink(q, prev, ux);
    }
    return ux;
}

/* the link to the claimed message whose claim is `context`; NULL if none.
 * Under rx_lock. */
static fip_msg_ux_t **fip_msg_claim_find(fip_msg_queue_t *q, void *context)
{
    fip_msg_ux_t **p;

    for (p = &q->claimed; *p != NULL; p = &(*p)->next) {
        if ((*p)->claim == context) {
            return p;
        }
    }
    return NULL;
}

/* a receive takes an unexpected message that has left its queue (called
 * with rx_lock held, released here): its bytes go to the receive's
 * buffers, or with `discard` nowhere (an entry without data); a message
 * still arriving is finished by its rendezvous callback. It stops counting
 * against the endpoint's caps. */
static void fip_msg_ux_consume(fip_ep_t *ep, fip_msg_rx_t *rx,
                               fip_msg_ux_t *ux, int discard)
{
    __atomic_add_fetch(&ep->inflight, 1, __ATOMIC_RELAXED);
    rx->op.src    = ux->src;
    ep->ux_count -= 1;
    if (ux->arriving) {
        /* its rendezvous callback delivers it (and gives its bytes back) */
        ux->rx      = rx;
        ux->discard = discard;
        pthread_mutex_unlock(&ep->rx_lock);
        return;
    }
    ep->ux_bytes -= ux->len;
    pthread_mutex_unlock(&ep->rx_lock);
    if (ux->failed) {
        fip_msg_rx_done(rx, 0, 0, 0, ux->tag, FI_EIO);
    } else if (discard) {
        fip_msg_rx_done(rx, 0, ux->data, ux->flags, ux->tag, 0);
    } else {
        fip_msg_rx_deliver(rx, ux + 1, ux->len, ux->data, ux->flags,
                           ux->tag);
    }
    free(ux);
}

static void fip_msg_rndv(fip_domain_t *domain, void *desc, void *buf,
                         size_t len, ucp_am_recv_data_nbx_callback_t cb,
                         void *user_data)
{
    ucp_request_param_t param = {0};
    ucs_status_ptr_t sptr;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.recv_am   = cb;
    param.user_data    = user_data;
    sptr = ucp_am_recv_data_nbx(domain->ucp_worker, desc, buf, len, &param);
    if (!UCS_PTR_IS_PTR(sptr)) {
        /* done at once (no callback then), or failed */
        cb(NULL, UCS_PTR_STATUS(sptr), len, user_data);
    }
}

/* what one source holds of a list of unexpected messages */
static void fip_msg_ux_held(const fip_msg_ux_t *ux, fi_addr_t src,
                            size_t *count, size_t *bytes)
{
    for (; ux != NULL; ux = ux->next) {
        *count += (ux->src == src);
        *bytes += (ux->src == src) ? ux->len : 0;
    }
}

/* whether an endpoint's unexpected queues take `length` more bytes from
 * `src`: within the caps of all and of that source (its messages queued
 * and claimed), whose holdings are counted only when the queues could hold
 * more than a share. Under rx_lock. */
static int fip_msg_ux_room(fip_ep_t *ep, fi_addr_t src, size_t length)
{
    size_t count = 0, bytes = 0;
    int q;

    if ((ep->ux_count >= FIP_MSG_UX_MAX) ||
        (ep->ux_bytes + length > FIP_MSG_UX_BYTES)) {
        return 0;
    }
    if ((ep->ux_count < FIP_MSG_UX_SOURCE_MAX) &&
        (ep->ux_bytes + length <= FIP_MSG_UX_SOURCE_BYTES)) {
        return 1;
    }
    for (q = FIP_MSG_Q_UNTAGGED; q <= FIP_MSG_Q_TAGGED; ++q) {
        fip_msg_ux_held(ep->queues[q].ux_head, src, &count, &bytes);
        fip_msg_ux_held(ep->queues[q].claimed, src, &count, &bytes);
    }
    return (count < FIP_MSG_UX_SOURCE_MAX) &&
           (bytes + length <= FIP_MSG_UX_SOURCE_BYTES);
}

/* deliver one message in its turn to the endpoint it names: to its oldest
 * receive, else into its unexpected queue, else dropped and counted.
 * `deferred`: a rendezvous held back, whose descriptor must be released
 * if it is not received. */
static void fip_msg_dispatch(fip_domain_t *domain, const fip_msg_hdr_t *hdr,
                             void *data, int rndv, int deferred)
{
    size_t length        = hdr->len;
    int tagged           = !!(hdr->flags & FIP_MSG_HDR_TAGGED);
    fip_msg_rx_t *rx     = NULL;
    fip_msg_ux_t *ux     = NULL;
    int dropped          = 0;
    fip_msg_queue_t *q;
    uint64_t flags;
    fi_addr_t src;
    fip_ep_t *ep;

    flags = (hdr->flags & FIP_MSG_HDR_DATA) ? FI_REMOTE_CQ_DATA : 0;
    pthread_mutex_lock(&domain->msg_lock);
    ep = fip_msg_ep_find(domain, hdr);
    pthread_mutex_unlock(&domain->msg_lock);
    if (ep == NULL) {
        goto drop;
    }
    /* rx_lock held: the endpoint cannot leave msg_eps and free before it
     * is released (fip_msg_ep_remove takes it) */
    q   = &ep->queues[tagged ? FIP_MSG_Q_TAGGED : FIP_MSG_Q_UNTAGGED];
    /* the AV is bound before the endpoint takes messages, and stays */
    src = fip_av_reverse(ep->av, hdr->src);
    rx  = fip_msg_rx_take(q, tagged, hdr->tag, src);
    if (rx != NULL) {
        rx->op.src = src;
        __atomic_add_fetch(&ep->inflight, 1, __ATOMIC_RELAXED);
    } else if (!fip_msg_ux_room(ep, src, length) ||
               ((ux = malloc(sizeof(*ux) + length)) == NULL)) {
        /* counted while the endpoint (and so its counter) surely lives */
        if (ep->cntrs[FIP_EP_CNTR_RECV] != NULL) {
            fip_cntr_inc(ep->cntrs[FIP_EP_CNTR_RECV], 1);
        }
        dropped = 1;
    } else {
        memset(ux, 0, sizeof(*ux));
        ux->ep       = ep;
        ux->len      = length;
        ux->data     = hdr->data;
        ux->flags    = flags;
        ux->tag      = hdr->tag;
        ux->src      = src;
        ux->arriving = rndv;
        if (!rndv) {
            memcpy(ux + 1, data, length);
        } else {
            __atomic_add_fetch(&ep->inflight, 1, __ATOMIC_RELAXED);
        }
        if (q->ux_tail == NULL) {
            q->ux_head = ux;
        } else {
            q->ux_tail->next = ux;
        }
        q->ux_tail    = ux;
        ep->ux_count += 1;
        ep->ux_bytes += length;
    }
    pthread_mutex_unlock(&ep->rx_lock);

    if (dropped) {
        FI_WARN_SPARSE(&fip_provider, FI_LOG_EP_DATA,
                       "message dropped: no receive, and the endpoint's "
                       "unexpected queue or its source's share of it is "
                       "full (or no memory)\n");
        goto drop;
    } else if ((rx != NULL) && !rndv) {
        fip_msg_rx_deliver(rx, data, length, hdr->data, flags, hdr->tag);
    } else if (rx != NULL) {
        rx->msg_len   = length;
        rx->msg_data  = hdr->data;
        rx->msg_flags = flags;
        rx->msg_tag   = hdr->tag;
        if ((rx->iov_count == 1) && (rx->size >= length)) {
            fip_msg_rndv(domain, data, rx->iov[0].iov_base, length,
                         fip_msg_rndv_rx_cb, rx);
        } else {
            rx->bounce = malloc(length);
            if (rx->bounce == NULL) {
                fip_msg_rx_done(rx, 0, 0, 0, hdr->tag, FI_ENOMEM);
                goto drop;
            }
            fip_msg_rndv(domain, data, rx->bounce, length,
                         fip_msg_rndv_rx_cb, rx);
        }
    } else if (rndv) {
        fip_msg_rndv(domain, data, ux + 1, length, fip_msg_rndv_ux_cb, ux);
    }
    return;

drop:
    /* a rendezvous not received: UCP tells its sender it is done */
    if (rndv && deferred) {
        ucp_am_data_release(domain->ucp_worker, data);
    }
}

static size_t fip_msg_stream_bucket(ucp_ep_h ep)
{
    return ((uintptr_t)ep >> 4) % FIP_MSG_STREAM_BUCKETS;
}

/* the stream of a connection, new on its first message (capped as the
 * connections are); under stream_lock */
static fip_msg_stream_t *fip_msg_stream_get(fip_domain_t *domain,
                                            ucp_ep_h ep)
{
    size_t b = fip_msg_stream_bucket(ep);
    fip_msg_stream_t *stream;

    for (stream = domain->streams[b]; stream != NULL; stream = stream->next) {
        if (stream->ep == ep) {
            return stream;
        }
    }
    if (domain->stream_count >= 2 * FIP_ACCEPT_MAX) {
        return NULL;
    }
    stream = calloc(1, sizeof(*stream));
    if (stream == NULL) {
        return NULL;
    }
    stream->ep          = ep;
    stream->next        = domain->streams[b];
    domain->streams[b]  = stream;
    domain->stream_count += 1;
    return stream;
}

/* a message's source is the connection's confirmed domain: a source of
 * any other domain, or on a connection not confirmed, is erased (no
 * address vector entry is all zero), and the message goes on with none */
static void fip_msg_source_check(const fip_msg_stream_t *stream,
                                 fip_msg_hdr_t *hdr)
{
    fip_addr_t src;

    if ((stream->state != FIP_STREAM_CONFIRMED) ||
        (fip_addr_unpack(hdr->src, sizeof(hdr->src), &src) != 0) ||
        !fip_addr_same_domain(&stream->sender, &src)) {
        memset(hdr->src, 0, sizeof(hdr->src));
    }
}

/* deliver the held messages whose turn came; all of them (in their order)
 * when `all` */
static void fip_msg_stream_drain(fip_domain_t *domain,
                                 fip_msg_stream_t *stream, int all)
{
    fip_msg_held_t *held;

    while ((held = stream->held) != NULL) {
        if (!all && (held->hdr.seq < stream->expected)) {
            /* a number held twice (its repeat came while the connection's
             * claim was checked) is delivered once */
            stream->held        = held->next;
            domain->held_count -= 1;
            if (held->desc != NULL) {
                ucp_am_data_release(domain->ucp_worker, held->desc);
            } else {
                domain->held_bytes -= held->hdr.len;
            }
            free(held);
            continue;
        }
        if (!all && (held->hdr.seq != stream->expected)) {
            break;
        }
        stream->held      = held->next;
        stream->expected  = held->hdr.seq + 1;
        domain->held_count -= 1;
        if (held->desc == NULL) {
            domain->held_bytes -= held->hdr.len;
        }
        fip_msg_source_check(stream, &held->hdr);
        fip_msg_dispatch(domain, &held->hdr,
                         (held->desc != NULL) ? held->desc : (void*)(held + 1),
                         held->desc != NULL, 1);
        free(held);
    }
}

/* hold a message that came early: 1 if held (a rendezvous's descriptor is
 * then kept), 0 if the caps are reached */
static int fip_msg_hold(fip_domain_t *domain, fip_msg_stream_t *stream,
                        const fip_msg_hdr_t *hdr, void *data, int rndv)
{
    size_t bytes = rndv ? 0 : hdr->len;
    fip_msg_held_t *held, **p;

    if ((domain->held_count >= FIP_MSG_HOLD_MAX) ||
        (domain->held_bytes + bytes > FIP_MSG_HOLD_BYTES)) {
        return 0;
    }
    held = malloc(sizeof(*held) + bytes);
    if (held == NULL) {
        return 0;
    }
    held->hdr  = *hdr;
    held->desc = rndv ? data : NULL;
    if (!rndv) {
        memcpy(held + 1, data, bytes);
    }
    /* after any of the same number: the first one is delivered */
    for (p = &stream->held; (*p != NULL) && ((*p)->hdr.seq <= hdr->seq);
         p = &(*p)->next) {
    }
    held->next = *p;
    *p         = held;
    domain->held_count += 1;
    domain->held_bytes += bytes;
    return 1;
}

static ucs_status_t fip_msg_handler(void *arg, const void *header,
                                    size_t header_length, void *data,
                                    size_t length,
                                    const ucp_am_recv_param_t *param)
{
    fip_domain_t *domain = arg;
    int rndv = !!(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV);
    ucs_status_t status  = UCS_OK;
    fip_msg_stream_t *stream;
    fip_addr_t claimed   = {0};
    uint64_t token       = 0;
    fip_msg_hdr_t hdr;
    fip_addr_t src;

    /* a message that fails a check is dropped (a rendezvous not started
     * is dropped with it) */
    if (!(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ||
        !fip_admit_gate(domain, param->reply_ep, "message") ||
        (header_length != sizeof(hdr))) {
        return UCS_OK;
    }
    memcpy(&hdr, header, sizeof(hdr));
    if ((hdr.magic != FIP_MSG_MAGIC) || (hdr.reserved != 0) ||
        (fip_addr_unpack(hdr.src, sizeof(hdr.src), &src) != 0) ||
        (hdr.flags & ~FIP_MSG_HDR_FLAGS) || (hdr.len != length) ||
        (length > FIP_MSG_MAX) ||
        (!(hdr.flags & FIP_MSG_HDR_DATA) && (hdr.data != 0)) ||
        (!(hdr.flags & FIP_MSG_HDR_TAGGED) && (hdr.tag != 0))) {
        return UCS_OK;
    }

    pthread_mutex_lock(&domain->stream_lock);
    stream = fip_msg_stream_get(domain, param->reply_ep);
    if ((stream == NULL) || (hdr.seq < stream->expected)) {
        /* no room for another connection, or a number already delivered
         * (the sender does not repeat one) */
        goto out;
    }
    if (stream->state == FIP_STREAM_GREETED) {
        /* the first message: the claim is checked now (below, once the
         * stream is let go), its messages wait meanwhile */
        stream->state    = FIP_STREAM_CLAIMED;
        stream->deadline = fip_wait_deadline(FIP_VERIFY_TIMEOUT_MS);
        claimed          = stream->sender;
        token            = stream->token;
    }
    if ((stream->state == FIP_STREAM_CLAIMED) &&
        (fip_now_ns() >= stream->deadline)) {
        FI_WARN_SPARSE(&fip_provider, FI_LOG_EP_DATA,
                       "a connection's claim was not confirmed in time: "
                       "its messages have no source\n");
        stream->state = FIP_STREAM_REFUSED;
        fip_msg_stream_drain(domain, stream, 0);
    }
    if (stream->state == FIP_STREAM_CLAIMED) {
        /* who sent it is not known yet: it waits for the check */
        if (fip_msg_hold(domain, stream, &hdr, data, rndv)) {
            status = rndv ? UCS_INPROGRESS : UCS_OK;
            goto out;
        }
        FI_WARN_SPARSE(&fip_provider, FI_LOG_EP_DATA,
                       "no room to hold a connection's messages until its "
                       "claim is checked: they have no source\n");
        stream->state = FIP_STREAM_REFUSED;
        fip_msg_stream_drain(domain, stream, 0);
    }
    fip_msg_source_check(stream, &hdr);
    if (hdr.seq > stream->expected) {
        if (fip_msg_hold(domain, stream, &hdr, data, rndv)) {
            status = rndv ? UCS_INPROGRESS : UCS_OK;
            goto out;
        }
        /* nothing more can wait: what waits goes on, then this one */
        fip_msg_stream_drain(domain, stream, 1);
    }
    fip_msg_dispatch(domain, &hdr, data, rndv, 0);
    stream->expected = hdr.seq + 1;
    fip_msg_stream_drain(domain, stream, 0);
out:
    pthread_mutex_unlock(&domain->stream_lock);
    if (token != 0) {
        fip_caller_verify_start(domain, param->reply_ep, &claimed, token);
    }
    return status;
}

int fip_msg_stream_claim(fip_domain_t *domain, ucp_ep_h ep,
                         const fip_addr_t *claimed, uint64_t token, int now)
{
    fip_msg_stream_t *stream;
    int ret = -1;

    pthread_mutex_lock(&domain->stream_lock);
    stream = fip_msg_stream_get(domain, ep);
    if ((stream != NULL) && (stream->state == FIP_STREAM_UNKNOWN) &&
        (stream->expected == 0) && (stream->held == NULL)) {
        stream->state    = now ? FIP_STREAM_CLAIMED : FIP_STREAM_GREETED;
        stream->deadline = fip_wait_deadline(FIP_VERIFY_TIMEOUT_MS);
        stream->sender   = *claimed;
        stream->token    = token;
        ret              = 0;
    }
    pthread_mutex_unlock(&domain->stream_lock);
    return ret;
}

void fip_msg_stream_verified(fip_domain_t *domain, ucp_ep_h ep,
                             const fip_addr_t *who)
{
    fip_msg_stream_t *stream;

    pthread_mutex_lock(&domain->stream_lock);
    for (stream = domain->streams[fip_msg_stream_bucket(ep)];
         stream != NULL; stream = stream->next) {
        if ((stream->ep == ep) && (stream->state == FIP_STREAM_CLAIMED)) {
            if (who != NULL) {
                stream->state  = FIP_STREAM_CONFIRMED;
                stream->sender = *who;
            } else {
                stream->state  = FIP_STREAM_REFUSED;
            }
            fip_msg_stream_drain(domain, stream, 0);
            break;
        }
    }
    pthread_mutex_unlock(&domain->stream_lock);
}

void fip_msg_stream_forget(fip_domain_t *domain, ucp_ep_h ep)
{
    fip_msg_stream_t **p, *stream;

    pthread_mutex_lock(&domain->stream_lock);
    for (p = &domain->streams[fip_msg_stream_bucket(ep)]; *p != NULL;
         p = &(*p)->next) {
        if ((*p)->ep == ep) {
            stream = *p;
            *p     = stream->next;
            /* no message of it comes any more: what waited goes on */
            fip_msg_stream_drain(domain, stream, 1);
            free(stream);
            domain->stream_count -= 1;
            break;
        }
    }
    pthread_mutex_unlock(&domain->stream_lock);
}

void fip_msg_cleanup(fip_domain_t *domain)
{
    fip_msg_stream_t *stream;
    fip_msg_held_t *held;
    size_t b;

    for (b = 0; b < FIP_MSG_STREAM_BUCKETS; ++b) {
        while ((stream = domain->streams[b]) != NULL) {
            domain->streams[b] = stream->next;
            while ((held = stream->held) != NULL) {
                stream->held = held->next;
                if (held->desc != NULL) {
                    ucp_am_data_release(domain->ucp_worker, held->desc);
                }
                free(held);
            }
            free(stream);
        }
    }
    domain->stream_count = 0;
    domain->held_count   = 0;
    domain->held_bytes   = 0;
}

int fip_msg_init(fip_domain_t *domain)
{
    return fip_domain_am_handler_set(domain, FIP_AM_MSG, fip_msg_handler);
}

void fip_msg_ep_add(fip_ep_t *ep)
{
    fip_domain_t *domain = ep->domain;

    pthread_mutex_lock(&domain->msg_lock);
    ep->msg_next     = domain->msg_eps;
    domain->msg_eps  = ep;
    pthread_mutex_unlock(&domain->msg_lock);
}

void fip_msg_ep_remove(fip_ep_t *ep)
{
    fip_domain_t *domain = ep->domain;
    fip_ep_t **p;

    pthread_mutex_lock(&domain->msg_lock);
    for (p = &domain->msg_eps; *p != NULL; p = &(*p)->msg_next) {
        if (*p == ep) {
            *p = ep->msg_next;
            break;
        }
    }
    pthread_mutex_unlock(&domain->msg_lock);
    /* a handler that found it before holds its rx_lock: wait it out */
    pthread_mutex_lock(&ep->rx_lock);
    pthread_mutex_unlock(&ep->rx_lock);
}

void fip_msg_ep_cleanup(fip_ep_t *ep)
{
    fip_msg_queue_t *q;
    fip_msg_rx_t *rx;
    fip_msg_ux_t *ux;

    /* receives still posted end with the endpoint (fi_endpoint(3)) */
    for (q = ep->queues; q < ep->queues + 2; ++q) {
        while ((rx = q->rx_head) != NULL) {
            q->rx_head = rx->next;
            free(rx);
        }
        while ((ux = q->ux_head) != NULL) {
            q->ux_head = ux->next;
            free(ux);
        }
        /* claimed and never received: they end with the endpoint too */
        while ((ux = q->claimed) != NULL) {
            q->claimed = ux->next;
            free(ux);
        }
        q->rx_tail = NULL;
        q->ux_tail = NULL;
    }
}

/* FI_PEEK (fi_tagged(3)): the oldest waiting message the receive matches,
 * left where it is, reported by an entry with its length, tag and remote CQ
 * data, else by an FI_ENOMSG error entry; the receive's buffers are not
 * written and its counter does not count it. With FI_CLAIM the message
 * moves to the claimed list under the receive's context (no later receive
 * or peek sees it; -FI_EINVAL if that context holds a claim already); with
 * FI_DISCARD it is dropped, its entry without data, counted as a receive.
 * Returns 0, the receive then owned by its completion, or an error, the
 * receive untouched. */
static ssize_t fip_msg_peek(fip_ep_t *ep, fip_msg_queue_t *q,
                            fip_msg_rx_t *rx, uint64_t flags)
{
    fip_op_t *op = &rx->op;
    fip_msg_ux_t *ux, *prev;

    pthread_mutex_lock(&ep->rx_lock);
    if ((flags & FI_CLAIM) &&
        (fip_msg_claim_find(q, op->context) != NULL)) {
        pthread_mutex_unlock(&ep->rx_lock);
        return -FI_EINVAL;
    }
    op->buf    = NULL;
    /* its entry is the peek's only answer */
    op->report = 1;
    ux = fip_msg_ux_find(q, 1, rx, &prev);
    if ((ux != NULL) && (flags & FI_DISCARD)) {
        fip_msg_ux_unlink(q, prev, ux);
        fip_msg_ux_consume(ep, rx, ux, 1);
        return 0;
    }
    op->cntr = NULL;
    __atomic_add_fetch(&ep->inflight, 1, __ATOMIC_RELAXED);
    if (ux != NULL) {
        op->src    = ux->src;
        op->len    = ux->len;
        op->data   = ux->data;
        op->flags |= ux->flags;
        op->tag    = ux->tag;
        if (flags & FI_CLAIM) {
            /* it still counts against the caps until received */
            fip_msg_ux_unlink(q, prev, ux);
            ux->claim  = op->context;
            ux->next   = q->claimed;
            q->claimed = ux;
        }
    } else {
        op->err = FI_ENOMSG;
    }
    pthread_mutex_unlock(&ep->rx_lock);
    fip_op_complete(op, UCS_OK);
    return 0;
}

/* FI_CLAIM without FI_PEEK: the message claimed under the receive's
 * context into its buffers (as any receive: truncation, counter), or with
 * FI_DISCARD dropped (an entry without data); -FI_EINVAL, the receive
 * untouched, if the context holds no claim */
static ssize_t fip_msg_claim_recv(fip_ep_t *ep, fip_msg_queue_t *q,
                                  fip_msg_rx_t *rx, uint64_t flags)
{
    fip_msg_ux_t **p, *ux;

    pthread_mutex_lock(&ep->rx_lock);
    p = fip_msg_claim_find(q, rx->op.context);
    if (p == NULL) {
        pthread_mutex_unlock(&ep->rx_lock);
        return -FI_EINVAL;
    }
    ux       = *p;
    *p       = ux->next;
    ux->next = NULL;
    if (flags & FI_DISCARD) {
        rx->op.buf    = NULL;
        rx->op.report = 1;
    }
    fip_msg_ux_consume(ep, rx, ux, !!(flags & FI_DISCARD));
    return 0;
}

/* whether the receive flags are a valid combination: FI_PEEK, FI_CLAIM
 * and FI_DISCARD on tagged receives only, FI_DISCARD with FI_PEEK or
 * FI_CLAIM (not both), a claim named by a context; no FI_MULTI_RECV */
static int fip_msg_recv_flags_valid(uint64_t flags, int tagged,
                                    const void *context)
{
    uint64_t special = flags & (FI_PEEK | FI_CLAIM | FI_DISCARD);

    if (flags & FI_MULTI_RECV) {
        return 0;
    }
    if (special == 0) {
        return 1;
    }
    return tagged &&
           (!(special & FI_DISCARD) || (special == (FI_PEEK | FI_DISCARD)) ||
            (special == (FI_CLAIM | FI_DISCARD))) &&
           (!(special & FI_CLAIM) || (context != NULL));
}

ssize_t fip_msg_recv_post(fip_ep_t *ep, const struct fi_msg *msg,
                          uint64_t flags, int tagged, uint64_t tag,
                          uint64_t ignore)
{
    fip_msg_queue_t *q;
    fip_msg_rx_t *rx;
    fip_msg_ux_t *ux;
    ssize_t ret;
    size_t i;

    if (msg == NULL) {
        return -FI_EINVAL;
    }
    if (!ep->enabled) {
        return -FI_EOPBADSTATE;
    }
    if ((msg->iov_count > FIP_IOV_LIMIT) ||
        ((msg->iov_count > 0) && (msg->msg_iov == NULL)) ||
        !fip_msg_recv_flags_valid(flags, tagged, msg->context)) {
        return -FI_EINVAL;
    }
    for (i = 0; i < msg->iov_count; ++i) {
        if ((msg->msg_iov[i].iov_base == NULL) &&
            (msg->msg_iov[i].iov_len > 0)) {
            return -FI_EINVAL;
        }
    }

    rx = calloc(1, sizeof(*rx));
    if (rx == NULL) {
        return -FI_ENOMEM;
    }
    rx->op.ep      = ep;
    rx->op.cq      = ep->rx_cq;
    rx->op.cntr    = ep->cntrs[FIP_EP_CNTR_RECV];
    rx->op.context = msg->context;
    rx->op.flags   = (tagged ? FI_TAGGED : FI_MSG) | FI_RECV;
    rx->tag        = tag;
    rx->ignore     = ignore;
    /* fi_msg(3): without FI_DIRECTED_RECV src_addr is ignored */
    rx->src        = ep->directed ? msg->addr : FI_ADDR_UNSPEC;
    rx->op.src     = FI_ADDR_NOTAVAIL;
    /* fi_cq(3): with selective completion only FI_COMPLETION (in the
     * call's flags, else the receive side's op_flags) reports a success */
    rx->op.report  = !ep->rx_selective || (flags & FI_COMPLETION);
    rx->iov_count  = msg->iov_count;
    if (msg->iov_count > 0) {
        memcpy(rx->iov, msg->msg_iov, msg->iov_count * sizeof(rx->iov[0]));
    }
    rx->size = fip_msg_iov_bytes(rx->iov, rx->iov_count);
    if (rx->size > 0) {
        rx->op.buf = rx->iov[0].iov_base;
    }

    q = &ep->queues[tagged ? FIP_MSG_Q_TAGGED : FIP_MSG_Q_UNTAGGED];
    if (flags & (FI_PEEK | FI_CLAIM)) {
        ret = (flags & FI_PEEK) ? fip_msg_peek(ep, q, rx, flags) :
                                  fip_msg_claim_recv(ep, q, rx, flags);
        if (ret != 0) {
            free(rx);
        }
        return ret;
    }
    pthread_mutex_lock(&ep->rx_lock);
    /* the oldest unexpected message it matches, in the order they
     * arrived */
    ux = fip_msg_ux_take(q, tagged, rx);
    if (ux == NULL) {
        rx->next = NULL;
        if (q->rx_tail == NULL) {
            q->rx_head = rx;
        } else {
            q->rx_tail->next = rx;
        }
        q->rx_tail = rx;
        pthread_mutex_unlock(&ep->rx_lock);
        return 0;
    }
    fip_msg_ux_consume(ep, rx, ux, 0);
    return 0;
}

/* ---- sending ------------------------------------------------------------ */

/* whether a send completes only once it is at the target */
static int fip_msg_delivery(const fip_ep_t *ep, uint64_t flags)
{
    uint64_t level = flags & (FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE |
                              FI_DELIVERY_COMPLETE);

    if (level == 0) {
        level = ep->op_flags & FI_DELIVERY_COMPLETE;
    }
    return !!(level & FI_DELIVERY_COMPLETE);
}

ssize_t fip_msg_send_post(fip_ep_t *ep, const struct fi_msg *msg,
                          uint64_t flags, int tagged, uint64_t tag)
{
    ucp_request_param_t param = {0};
    fip_addr_t dest;
    fip_msg_tx_t *tx;
    fip_peer_t *peer;
    size_t total, i, n;
    const void *buffer;
    size_t count;
    int ret;

    if (msg == NULL) {
        return -FI_EINVAL;
    }
    if (!ep->enabled) {
        return -FI_EOPBADSTATE;
    }
    if ((msg->iov_count > FIP_IOV_LIMIT) ||
        ((msg->iov_count > 0) && (msg->msg_iov == NULL))) {
        return -FI_EINVAL;
    }
    for (i = 0; i < msg->iov_count; ++i) {
        if ((msg->msg_iov[i].iov_base == NULL) &&
            (msg->msg_iov[i].iov_len > 0)) {
            return -FI_EINVAL;
        }
    }
    total = fip_msg_iov_bytes(msg->msg_iov, msg->iov_count);
    if ((total > FIP_MSG_MAX) ||
        ((flags & FI_INJECT) && (total > FIP_INJECT_SIZE))) {
        return -FI_EINVAL;
    }

    ret = fip_av_get(ep->av, msg->addr, &dest);
    if (ret != 0) {
        return ret;
    }
    ret = fip_peer_get(ep->domain, &dest, &peer);
    if (ret != 0) {
        return ret;
    }

    tx = (fip_msg_tx_t*)fip_op_alloc(ep, 0, msg->context, flags,
                                     (tagged ? FI_TAGGED : FI_MSG) | FI_SEND,
                                     NULL,
                                     sizeof(*tx) - sizeof(tx->op) +
                                     ((flags & FI_INJECT) ? total : 0));
    if (tx == NULL) {
        return -FI_ENOMEM;
    }
    tx->op.cntr    = ep->cntrs[FIP_EP_CNTR_SEND];
    tx->op.pending = 1; /* held while posting */
    tx->op.status  = UCS_OK;
    tx->hdr.magic  = FIP_MSG_MAGIC;
    tx->hdr.ep_id  = dest.ep_id;
    tx->hdr.nonce  = dest.nonce;
    tx->hdr.len    = total;
    fip_addr_pack(&ep->addr, tx->hdr.src);
    /* numbered in the order of the calls: the target restores it */
    tx->hdr.seq    = __atomic_fetch_add(&peer->msg_seq, 1, __ATOMIC_RELAXED);
    if (flags & FI_REMOTE_CQ_DATA) {
        tx->hdr.flags = FIP_MSG_HDR_DATA;
        tx->hdr.data  = msg->data;
    }
    if (tagged) {
        tx->hdr.flags |= FIP_MSG_HDR_TAGGED;
        tx->hdr.tag    = tag;
    }

    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FIELD_FLAGS;
    /* the reply endpoint names the connection at the target */
    param.flags        = UCP_AM_SEND_FLAG_REPLY;
    param.cb.send      = fip_op_piece_cb;
    param.user_data    = &tx->op;
    if (flags & FI_INJECT) {
        /* the program's buffer is its own again on return */
        for (i = 0, n = 0; i < msg->iov_count; ++i) {
            memcpy((char*)(tx + 1) + n, msg->msg_iov[i].iov_base,
                   msg->msg_iov[i].iov_len);
            n += msg->msg_iov[i].iov_len;
        }
        buffer = (total > 0) ? (const void*)(tx + 1) : NULL;
        count  = total;
    } else if (msg->iov_count > 1) {
        for (i = 0; i < msg->iov_count; ++i) {
            tx->iov[i].buffer = msg->msg_iov[i].iov_base;
            tx->iov[i].length = msg->msg_iov[i].iov_len;
        }
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
        param.datatype      = ucp_dt_make_iov();
        buffer              = tx->iov;
        count               = msg->iov_count;
    } else {
        buffer = (total > 0) ? msg->msg_iov[0].iov_base : NULL;
        count  = total;
    }

    fip_op_piece_starting(&tx->op);
    fip_op_piece_started(&tx->op, ucp_am_send_nbx(peer->ucp_ep, FIP_AM_MSG,
                                                &tx->hdr, sizeof(tx->hdr),
                                                buffer, count, &param));
    if ((__atomic_load_n(&tx->op.status, __ATOMIC_ACQUIRE) != UCS_OK) &&
        (__atomic_load_n(&tx->op.pending, __ATOMIC_ACQUIRE) == 1)) {
        /* nothing runs: reported here, never counted */
        ret = fiatomic_status_to_fi_errno(tx->op.status);
        fip_op_cancel(&tx->op);
        return (ret != 0) ? ret : -FI_EIO;
    }
    if (fip_msg_delivery(ep, flags) &&
        (__atomic_load_n(&tx->op.status, __ATOMIC_ACQUIRE) == UCS_OK)) {
        ucp_request_param_t fparam = {0};

        fparam.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                              UCP_OP_ATTR_FIELD_USER_DATA;
        fparam.cb.send      = fip_op_piece_cb;
        fparam.user_data    = &tx->op;
        fip_op_piece_starting(&tx->op);
        fip_op_piece_started(&tx->op, ucp_ep_flush_nbx(peer->ucp_ep, &fparam));
    }
    fip_op_piece_done(&tx->op, UCS_OK);
    return 0;
}

/* ---- the calls ---------------------------------------------------------- */

void fip_msg_fill(struct fi_msg *msg, const struct iovec *iov, void **desc,
                  size_t count, fi_addr_t addr, void *context, uint64_t data)
{
    memset(msg, 0, sizeof(*msg));
    msg->msg_iov   = iov;
    msg->desc      = desc;
    msg->iov_count = count;
    msg->addr      = addr;
    msg->context   = context;
    msg->data      = data;
}

static ssize_t fip_msg_recvv(struct fid_ep *ep_fid, const struct iovec *iov,
                             void **desc, size_t count, fi_addr_t src,
                             void *context)
{
    fip_ep_t *ep = fip_msg_ep(ep_fid);
    struct fi_msg msg;

    if ((iov == NULL) && (count > 0)) {
        return -FI_EINVAL;
    }
    fip_msg_fill(&msg, iov, desc, count, src, context, 0);
    return fip_msg_recv_post(ep, &msg, ep->rx_op_flags, 0, 0, 0);
}

static ssize_t fip_msg_recv(struct fid_ep *ep_fid, void *buf, size_t len,
                            void *desc, fi_addr_t src, void *context)
{
    struct iovec iov = {buf, len};

    return fip_msg_recvv(ep_fid, &iov, &desc, 1, src, context);
}

static ssize_t fip_msg_recvmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
                               uint64_t flags)
{
    return fip_msg_recv_post(fip_msg_ep(ep_fid), msg, flags, 0, 0, 0);
}

static ssize_t fip_msg_sendv(struct fid_ep *ep_fid, const struct iovec *iov,
                             void **desc, size_t count, fi_addr_t dest,
                             void *context)
{
    fip_ep_t *ep = fip_msg_ep(ep_fid);
    struct fi_msg msg;

    if ((iov == NULL) && (count > 0)) {
        return -FI_EINVAL;
    }
    fip_msg_fill(&msg, iov, desc, count, dest, context, 0);
    return fip_msg_send_post(ep, &msg, ep->op_flags, 0, 0);
}

static ssize_t fip_msg_send(struct fid_ep *ep_fid, const void *buf,
                            size_t len, void *desc, fi_addr_t dest,
                            void *context)
{
    struct iovec iov = {(void*)buf, len};

    return fip_msg_sendv(ep_fid, &iov, &desc, 1, dest, context);
}

static ssize_t fip_msg_sendmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
                               uint64_t flags)
{
    return fip_msg_send_post(fip_msg_ep(ep_fid), msg, flags, 0, 0);
}

static ssize_t fip_msg_inject(struct fid_ep *ep_fid, const void *buf,
                              size_t len, fi_addr_t dest)
{
    fip_ep_t *ep     = fip_msg_ep(ep_fid);
    struct iovec iov = {(void*)buf, len};
    struct fi_msg msg;

    fip_msg_fill(&msg, &iov, NULL, 1, dest, NULL, 0);
    return fip_msg_send_post(ep, &msg, FI_INJECT | ep->op_flags, 0, 0);
}

static ssize_t fip_msg_senddata(struct fid_ep *ep_fid, const void *buf,
                                size_t len, void *desc, uint64_t data,
                                fi_addr_t dest, void *context)
{
    fip_ep_t *ep     = fip_msg_ep(ep_fid);
    struct iovec iov = {(void*)buf, len};
    struct fi_msg msg;

    fip_msg_fill(&msg, &iov, &desc, 1, dest, context, data);
    return fip_msg_send_post(ep, &msg, FI_REMOTE_CQ_DATA | ep->op_flags, 0,
                             0);
}

static ssize_t fip_msg_injectdata(struct fid_ep *ep_fid, const void *buf,
                                  size_t len, uint64_t data, fi_addr_t dest)
{
    fip_ep_t *ep     = fip_msg_ep(ep_fid);
    struct iovec iov = {(void*)buf, len};
    struct fi_msg msg;

    fip_msg_fill(&msg, &iov, NULL, 1, dest, NULL, data);
    return fip_msg_send_post(ep, &msg,
                             FI_INJECT | FI_REMOTE_CQ_DATA | ep->op_flags, 0,
                             0);
}

struct fi_ops_msg fip_msg_ops = {
    .size       = sizeof(struct fi_ops_msg),
    .recv       = fip_msg_recv,
    .recvv      = fip_msg_recvv,
    .recvmsg    = fip_msg_recvmsg,
    .send       = fip_msg_send,
    .sendv      = fip_msg_sendv,
    .sendmsg    = fip_msg_sendmsg,
    .inject     = fip_msg_inject,
    .senddata   = fip_msg_senddata,
    .injectdata = fip_msg_injectdata
};
