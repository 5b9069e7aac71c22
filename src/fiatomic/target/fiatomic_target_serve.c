/**
 * Target-side strategy, the target's half (fiatomic_target.h): the request
 * handler, the bounds that keep a peer from growing this process, the
 * replies, and the unit's handlers on and off.
 *
 * A peer is the reply endpoint UCP gives with its requests. Each peer has at
 * most FIATOMIC_TARGET_REPLIES_MAX replies that UCP is still sending (a peer
 * that does not read its replies fills them). Its requests beyond that wait
 * for a reply slot, held: UCP's own data where UCP lets us keep it
 * (UCP_AM_RECV_ATTR_FLAG_DATA, returning UCS_INPROGRESS and releasing it
 * later), else a copy; up to FIATOMIC_TARGET_HELD_MAX bytes per peer. Past
 * that, its requests are dropped: only a peer that keeps sending without
 * reading gets there (the library's initiators keep fewer requests in
 * flight), and it sees its own operation timeout. Other peers keep their
 * own slots, so a flood from one delays, and never stops, the others.
 *
 * Replies are sized to their content; small reply buffers are cached (at
 * most FIATOMIC_REPLY_CACHE_MAX), larger ones freed once sent.
 *
 * A peer that has nothing in UCP's hands is idle: it stays in the table
 * (its next request finds it: no allocation per request when replies
 * complete in place) on the context's list of idle peers (fiatomic_lru_t),
 * which keeps FIATOMIC_IDLE_PEERS_MAX of them: one more pushes the least
 * recently used out, freed. An idle peer holds nothing and
 * is the same as a new one (its failed mark is cleared), so a reply
 * endpoint that UCP freed and reused at the same address meets a fresh
 * state.
 */
#include "core/fiatomic_context.h"
#include "target/fiatomic_target.h"
#include "base/fiatomic_wire.h"

#include <ucs/datastruct/khash.h>

#include <stdlib.h>
#include <string.h>

/* Largest valid request: header, operands and compare values. */
#define FIATOMIC_REQUEST_MAX \
    (sizeof(fiatomic_wire_req_t) + 2 * FIATOMIC_WIRE_MAX_PAYLOAD)

/* Reply buffers of at most this many bytes are cached: the reply of any
 * single-element request. */
#define FIATOMIC_REPLY_SMALL \
    (sizeof(fiatomic_wire_reply_t) + FIATOMIC_MAX_ELEM_SIZE)

typedef struct fiatomic_peer fiatomic_peer_t;

typedef struct fiatomic_reply_buf {
    ucs_list_link_t list;     /* in the cache */
    fiatomic_h      fia;
    fiatomic_peer_t *peer;
    size_t          capacity;
    uint8_t         data[];
} fiatomic_reply_buf_t;

/* A request waiting for a reply slot of its peer. */
typedef struct fiatomic_held {
    ucs_list_link_t list;
    void            *desc;    /* UCP's data to release, or NULL (copied) */
    size_t          length;
    size_t          cost;     /* counted in the peer's held bytes */
    const uint8_t   *data;
    uint8_t         copy[];
} fiatomic_held_t;

struct fiatomic_peer {
    fiatomic_h      fia;
    ucp_ep_h        ep;
    unsigned        replies;     /* replies UCP is still sending */
    unsigned        receiving;   /* rendezvous requests being received */
    size_t          held_bytes;  /* held and receiving requests */
    ucs_list_link_t held;
    ucs_list_link_t idle_list;   /* in fia->idle_peers while idle */
    bool            idle;
    bool            failed;      /* a reply failed: no more sends on ep */
};

KHASH_MAP_INIT_INT64(fiatomic_peers, fiatomic_peer_t*)

static fiatomic_peer_t *fiatomic_peer_get(fiatomic_h fia, ucp_ep_h ep)
{
    khash_t(fiatomic_peers) *peers = fia->peers;
    fiatomic_peer_t *peer;
    khiter_t iter;
    int ret;

    iter = kh_get(fiatomic_peers, peers, (uintptr_t)ep);
    if (iter != kh_end(peers)) {
        peer = kh_val(peers, iter);
        if (peer->idle) {
            fiatomic_lru_remove(&fia->idle_peers, &peer->idle_list);
            peer->idle = false;
        }
        return peer;
    }

    peer = calloc(1, sizeof(*peer));
    if (peer == NULL) {
        return NULL;
    }

    iter = kh_put(fiatomic_peers, peers, (uintptr_t)ep, &ret);
    if (ret < 0) {
        free(peer);
        return NULL;
    }

    peer->fia = fia;
    peer->ep  = ep;
    ucs_list_head_init(&peer->held);
    kh_val(peers, iter) = peer;
    return peer;
}

static void fiatomic_peer_free(fiatomic_peer_t *peer)
{
    khash_t(fiatomic_peers) *peers = peer->fia->peers;
    khiter_t iter;

    if (peer->idle) {
        fiatomic_lru_remove(&peer->fia->idle_peers, &peer->idle_list);
    }
    iter = kh_get(fiatomic_peers, peers, (uintptr_t)peer->ep);
    if (iter != kh_end(peers)) {
        kh_del(fiatomic_peers, peers, iter);
    }
    free(peer);
}

/* An idle peer the idle list let go of (it is off the list already). */
static void fiatomic_peer_free_idle(ucs_list_link_t *link)
{
    fiatomic_peer_t *peer = ucs_container_of(link, fiatomic_peer_t,
                                             idle_list);

    peer->idle = false;
    fiatomic_peer_free(peer);
}

/* A peer is busy while UCP holds something of it: then its endpoint is
 * alive (a failed one completes our sends before it goes). Once nothing is
 * left it becomes idle (freed after fiatomic_destroy). */
static void fiatomic_peer_put(fiatomic_peer_t *peer)
{
    fiatomic_h fia = peer->fia;
    ucs_list_link_t *out;

    if ((peer->replies > 0) || (peer->receiving > 0) ||
        !ucs_list_is_empty(&peer->held) || peer->idle) {
        return;
    }

    if (fia->destroyed) {
        fiatomic_peer_free(peer);
        return;
    }

    peer->failed = false; /* as a new peer: the endpoint may be another */
    peer->idle   = true;
    out          = fiatomic_lru_add(&fia->idle_peers, &peer->idle_list);
    if (out != NULL) {
        fiatomic_peer_free_idle(out);
    }
}

/* ------------------------------------------------------------------------ */
/* Reply buffers                                                             */

static fiatomic_reply_buf_t *fiatomic_reply_buf_get(fiatomic_h fia,
                                                    size_t length)
{
    ucs_list_link_t *link;
    fiatomic_reply_buf_t *buf;

    if ((length <= FIATOMIC_REPLY_SMALL) &&
        ((link = fiatomic_freelist_get(&fia->free_replies)) != NULL)) {
        return ucs_container_of(link, fiatomic_reply_buf_t, list);
    }

    if (length < FIATOMIC_REPLY_SMALL) {
        length = FIATOMIC_REPLY_SMALL; /* cacheable */
    }
    buf = malloc(sizeof(*buf) + length);
    if (buf != NULL) {
        buf->fia      = fia;
        buf->capacity = length;
    }
    return buf;
}

static void fiatomic_reply_buf_put(fiatomic_reply_buf_t *buf)
{
    fiatomic_h fia = buf->fia;

    if (fia->destroyed || (buf->capacity != FIATOMIC_REPLY_SMALL) ||
        !fiatomic_freelist_put(&fia->free_replies, &buf->list)) {
        free(buf);
    }
}

static void fiatomic_reply_buf_free_link(ucs_list_link_t *link)
{
    free(ucs_container_of(link, fiatomic_reply_buf_t, list));
}

/* ------------------------------------------------------------------------ */
/* Serving                                                                   */

static void fiatomic_peer_drop_held(fiatomic_peer_t *peer)
{
    fiatomic_held_t *held;

    while (!ucs_list_is_empty(&peer->held)) {
        held = ucs_list_extract_head(&peer->held, fiatomic_held_t, list);
        if (held->desc != NULL) {
            ucp_am_data_release(peer->fia->worker, held->desc);
        }
        peer->held_bytes -= held->cost;
        free(held);
    }
}

static void fiatomic_peer_serve_held(fiatomic_peer_t *peer);

static void fiatomic_reply_sent_cb(void *request, ucs_status_t status,
                                   void *user_data)
{
    fiatomic_reply_buf_t *buf = user_data;
    fiatomic_h fia            = buf->fia;
    fiatomic_peer_t *peer;
    bool locked;

    FIATOMIC_CB_ENTER_SEND(fia, fiatomic_reply_sent_cb, request, status,
                           user_data, locked);
    peer = buf->peer;
    ucp_request_free(request);
    fiatomic_reply_buf_put(buf);
    --fia->replies_inflight;
    --peer->replies;
    if (status != UCS_OK) {
        /* The initiator learns of it through its own endpoint; nothing more
         * goes to this one. */
        peer->failed = true;
        fiatomic_peer_drop_held(peer);
    } else {
        fiatomic_peer_serve_held(peer);
    }
    fiatomic_peer_put(peer);
    fiatomic_context_release(fia); /* after fiatomic_destroy: the last one */
    fiatomic_leave(fia, locked);
}

/* Execute one request and send its reply. */
static void fiatomic_peer_serve(fiatomic_peer_t *peer, const void *msg,
                                size_t length)
{
    fiatomic_h fia = peer->fia;
    uint8_t reply[FIATOMIC_WIRE_REPLY_MAX];
    ucp_request_param_t param;
    fiatomic_reply_buf_t *buf;
    ucs_status_ptr_t sptr;
    size_t reply_len;

    reply_len = fiatomic_target_execute(&fia->regions, msg, length, reply);
    buf       = fiatomic_reply_buf_get(fia, reply_len);
    if (buf == NULL) {
        ucs_error("fiatomic: no memory for a target-side reply");
        return;
    }

    memcpy(buf->data, reply, reply_len);
    buf->peer          = peer;
    /* Eager: initiators take replies only so (UCP 1.22 would send a full
     * reply by rendezvous over self and shared memory). */
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FIELD_FLAGS;
    param.cb.send      = fiatomic_reply_sent_cb;
    param.user_data    = buf;
    param.flags        = UCP_AM_SEND_FLAG_EAGER;
    /* Counted before the send: over self, UCP delivers the reply at once,
     * and the initiator's next request may come in (and finish with the
     * peer) before ucp_am_send_nbx returns. */
    ++peer->replies;
    ++fia->replies_inflight;
    sptr = ucp_am_send_nbx(peer->ep, fia->am_id + FIATOMIC_WIRE_AM_REPLY, NULL,
                           0, buf->data, reply_len, &param);
    if (!UCS_PTR_IS_PTR(sptr)) {
        --peer->replies;
        --fia->replies_inflight;
        fiatomic_reply_buf_put(buf);
    }
}

static void fiatomic_peer_serve_held(fiatomic_peer_t *peer)
{
    fiatomic_held_t *held;

    while (!peer->failed && !peer->fia->destroyed &&
           (peer->replies < FIATOMIC_TARGET_REPLIES_MAX) &&
           !ucs_list_is_empty(&peer->held)) {
        held = ucs_list_extract_head(&peer->held, fiatomic_held_t, list);
        peer->held_bytes -= held->cost;
        fiatomic_peer_serve(peer, held->data, held->length);
        if (held->desc != NULL) {
            ucp_am_data_release(peer->fia->worker, held->desc);
        }
        free(held);
    }
}

/* A request of the peer: served now if it has a free reply slot and nothing
 * waits before it, else held (UCS_INPROGRESS: UCP's data is kept), or
 * dropped past the peer's bound. `desc` is non-NULL when UCP lets us keep
 * the data. */
static ucs_status_t fiatomic_peer_request(fiatomic_peer_t *peer,
                                          const void *msg, size_t length,
                                          void *desc)
{
    fiatomic_held_t *held;
    size_t cost;

    if (peer->failed) {
        return UCS_OK;
    }

    if ((peer->replies < FIATOMIC_TARGET_REPLIES_MAX) &&
        ucs_list_is_empty(&peer->held)) {
        fiatomic_peer_serve(peer, msg, length);
        return UCS_OK;
    }

    cost = sizeof(*held) + length; /* UCP's or ours: memory either way */
    if ((length > FIATOMIC_REQUEST_MAX) ||
        (peer->held_bytes + cost > FIATOMIC_TARGET_HELD_MAX)) {
        ++peer->fia->requests_dropped;
        ucs_debug("fiatomic: peer ep %p does not read its replies: request "
                  "dropped (%u replies pending, %zu bytes held)", peer->ep,
                  peer->replies, peer->held_bytes);
        return UCS_OK;
    }

    held = malloc(sizeof(*held) + ((desc == NULL) ? length : 0));
    if (held == NULL) {
        ++peer->fia->requests_dropped;
        return UCS_OK;
    }

    held->desc   = desc;
    held->length = length;
    held->cost   = cost;
    if (desc == NULL) {
        if (length > 0) {
            memcpy(held->copy, msg, length);
        }
        held->data = held->copy;
    } else {
        held->data = msg;
    }
    peer->held_bytes += cost;
    ucs_list_add_tail(&peer->held, &held->list);
    return (desc != NULL) ? UCS_INPROGRESS : UCS_OK;
}

/* A request that came by rendezvous (larger than our initiators send, so
 * from someone else): received into a buffer, counted in the peer's held
 * bytes meanwhile, then handled like any other. */
typedef struct fiatomic_rndv_recv {
    fiatomic_peer_t *peer;
    size_t          length;
    uint8_t         data[];
} fiatomic_rndv_recv_t;

static void fiatomic_rndv_recv_done(fiatomic_rndv_recv_t *rndv,
                                    size_t length)
{
    fiatomic_peer_t *peer = rndv->peer;
    fiatomic_h fia        = peer->fia;

    --fia->replies_inflight;
    peer->held_bytes -= rndv->length;
    if (!peer->fia->destroyed) {
        /* Handling it answers even a failed receive: the decoder sees a
         * short message and replies with an error. */
        fiatomic_peer_request(peer, rndv->data, length, NULL);
    }
    /* Still receiving while it was handled: a request of the peer that
     * comes in meanwhile (over self, within the reply's send) must not
     * release the peer under us. */
    --peer->receiving;
    free(rndv);
    fiatomic_peer_put(peer);
    fiatomic_context_release(fia); /* after fiatomic_destroy: the last one */
}

static void fiatomic_rndv_recv_cb(void *request, ucs_status_t status,
                                  size_t length, void *user_data)
{
    fiatomic_h fia = ((fiatomic_rndv_recv_t*)user_data)->peer->fia;
    bool locked    = fia->mt;

    if (locked &&
        !fiatomic_cb_enter_recv(fia, fiatomic_rndv_recv_cb, request, status,
                                length, user_data)) {
        return; /* queued for the thread inside the library */
    }
    ucp_request_free(request);
    fiatomic_rndv_recv_done(user_data, (status == UCS_OK) ? length : 0);
    fiatomic_leave(fia, locked);
}

/* A request announced by rendezvous: its receive started (UCS_INPROGRESS:
 * UCP owns the descriptor from now on, whatever comes of it), or refused
 * without receiving its data (UCS_OK: the descriptor is untouched, the
 * caller declines it) and answered with an error. */
static ucs_status_t fiatomic_target_recv_rndv(fiatomic_peer_t *peer,
                                              void *desc, size_t length)
{
    fiatomic_h fia = peer->fia;
    ucp_request_param_t param;
    fiatomic_rndv_recv_t *rndv;
    ucs_status_ptr_t sptr;
    size_t received;

    if ((length < sizeof(fiatomic_wire_req_t)) ||
        (length > FIATOMIC_REQUEST_MAX) ||
        (peer->held_bytes + length > FIATOMIC_TARGET_HELD_MAX)) {
        /* no valid request is that short (nothing to receive: UCP would
         * complete it at once, and outside its callback keep the
         * descriptor) or that long */
        rndv = NULL;
    } else {
        rndv = malloc(sizeof(*rndv) + length);
    }
    if (rndv == NULL) {
        fiatomic_peer_request(peer, NULL, 0, NULL); /* the error reply */
        return UCS_OK;
    }

    rndv->peer             = peer;
    rndv->length           = length;
    peer->held_bytes      += length;
    ++peer->receiving;
    ++fia->replies_inflight; /* keeps the context until it completes */
    param.op_attr_mask     = UCP_OP_ATTR_FIELD_CALLBACK |
                             UCP_OP_ATTR_FIELD_USER_DATA |
                             UCP_OP_ATTR_FIELD_RECV_INFO;
    param.cb.recv_am       = fiatomic_rndv_recv_cb;
    param.user_data        = rndv;
    param.recv_info.length = &received;
    sptr = ucp_am_recv_data_nbx(fia->worker, desc, rndv->data, length,
                                &param);
    if (!UCS_PTR_IS_PTR(sptr)) {
        fiatomic_rndv_recv_done(rndv, UCS_PTR_IS_ERR(sptr) ? 0 : length);
    }
    return UCS_INPROGRESS;
}

static ucs_status_t fiatomic_target_request_handler_locked(
        fiatomic_h fia, void *data, size_t length,
        const ucp_am_recv_param_t *param);

static ucs_status_t fiatomic_target_request_handler(
        void *arg, const void *header, size_t header_length, void *data,
        size_t length, const ucp_am_recv_param_t *param)
{
    fiatomic_h fia = arg;
    ucs_status_t status;
    bool locked    = fia->mt;

    if (locked &&
        !fiatomic_cb_enter_am(fia, fiatomic_target_request_handler, arg,
                              data, length, param, &status)) {
        return status; /* queued for the thread inside the library */
    }
    status = fiatomic_target_request_handler_locked(fia, data, length,
                                                    param);
    fiatomic_leave(fia, locked);
    return status;
}

/* UCP's AM contract for a rendezvous descriptor (UCP_AM_RECV_ATTR_FLAG_RNDV):
 * it is either received (ucp_am_recv_data_nbx) or declined, once. Inside
 * UCP's callback, returning UCS_OK without a receive declines it: UCP
 * answers the sender and frees the descriptor itself, so releasing it here
 * as well would answer and free it twice. Hence this handler never
 * releases one: UCS_INPROGRESS says a receive took it, UCS_OK that it is
 * declined, and UCP declines it (a rendezvous that arrives while the context
 * is busy is declined inside UCP's callback and reaches this handler later
 * as an empty message: fiatomic_cb_enter_am).
 * Eager data kept by UCP (UCP_AM_RECV_ATTR_FLAG_DATA) follows the same
 * rule: UCS_INPROGRESS while we hold it. */
static ucs_status_t fiatomic_target_request_handler_locked(
        fiatomic_h fia, void *data, size_t length,
        const ucp_am_recv_param_t *param)
{
    fiatomic_peer_t *peer;
    ucs_status_t status;

    if (fia->destroyed) {
        return UCS_OK; /* queued before fiatomic_destroy: nobody serves */
    }

    if (!(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
        /* Nobody could learn the outcome: never execute blindly. */
        ucs_debug("fiatomic: dropping a target-side request without reply ep");
        return UCS_OK;
    }

    peer = fiatomic_peer_get(fia, param->reply_ep);
    if (peer == NULL) {
        ++fia->requests_dropped;
        return UCS_OK;
    }

    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        status = fiatomic_target_recv_rndv(peer, data, length);
    } else {
        status = fiatomic_peer_request(peer, data, length,
                                       (param->recv_attr &
                                        UCP_AM_RECV_ATTR_FLAG_DATA) ?
                                       data : NULL);
    }
    fiatomic_peer_put(peer);
    return status;
}

FIATOMIC_TARGET_DEFINE_AM(request, FIATOMIC_WIRE_AM_REQUEST,
                          fiatomic_target_request_handler);

/* ------------------------------------------------------------------------ */
/* Handlers on and off                                                       */

/* Every handler of the unit, each defined beside its function. */
static const fiatomic_target_am_t *const fiatomic_target_ams[] = {
    &fiatomic_target_am_request,
    &fiatomic_target_am_reply
};

#define FIATOMIC_TARGET_NUM_AMS \
    (sizeof(fiatomic_target_ams) / sizeof(fiatomic_target_ams[0]))

/* The handler of `am` on (or off: `on` false) on the context's worker. */
static ucs_status_t fiatomic_target_set_handler(fiatomic_h fia,
                                                const fiatomic_target_am_t *am,
                                                bool on)
{
    ucp_am_handler_param_t param;

    param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                       UCP_AM_HANDLER_PARAM_FIELD_CB |
                       UCP_AM_HANDLER_PARAM_FIELD_ARG |
                       UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
    param.id         = fia->am_id + am->offset;
    param.cb         = on ? am->cb : NULL;
    param.arg        = fia;
    param.flags      = UCP_AM_FLAG_WHOLE_MSG;
    return ucp_worker_set_am_recv_handler(fia->worker, &param);
}

/* Whether the UCP context has UCP_FEATURE_AM: UCP gives no AM header room
 * without it (asking UCP to set a handler then logs an error). */
static bool fiatomic_target_am_available(fiatomic_h fia)
{
    ucp_worker_attr_t attr;

    attr.field_mask = UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER;
    return (ucp_worker_query(fia->worker, &attr) == UCS_OK) &&
           (attr.max_am_header > 0);
}

ucs_status_t fiatomic_target_init(fiatomic_h fia)
{
    unsigned i;

    fiatomic_lru_init(&fia->idle_peers, FIATOMIC_IDLE_PEERS_MAX);
    fiatomic_regions_init(&fia->regions, fia->wide_locks,
                          fia->op_timeout_ns);
    fia->peers              = kh_init(fiatomic_peers);
    if (fia->peers == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    /* Without UCP_FEATURE_AM target-side execution is simply not offered
     * (keys say so, the selector never chooses it), everything else
     * works. */
    fia->am_enabled = false;
    if (!fiatomic_target_am_available(fia)) {
        return UCS_OK;
    }

    for (i = 0; i < FIATOMIC_TARGET_NUM_AMS; ++i) {
        if (fiatomic_target_set_handler(fia, fiatomic_target_ams[i], true) !=
            UCS_OK) {
            while (i-- > 0) {
                fiatomic_target_set_handler(fia, fiatomic_target_ams[i],
                                            false);
            }
            return UCS_OK;
        }
    }

    fia->am_enabled = true;
    return UCS_OK;
}

/* fiatomic_destroy(): no more requests; held ones are dropped, replies UCP
 * still sends keep their peers (and the context) until they complete. */
void fiatomic_target_cleanup(fiatomic_h fia)
{
    khash_t(fiatomic_peers) *peers = fia->peers;
    ucs_list_link_t *link;
    khiter_t iter;
    unsigned i;

    if (fia->am_enabled) {
        for (i = 0; i < FIATOMIC_TARGET_NUM_AMS; ++i) {
            fiatomic_target_set_handler(fia, fiatomic_target_ams[i], false);
        }
        fia->am_enabled = false;
    }

    for (iter = kh_begin(peers); iter != kh_end(peers); ++iter) {
        if (kh_exist(peers, iter)) {
            fiatomic_peer_drop_held(kh_val(peers, iter));
        }
    }
    /* busy peers go when UCP gives back what it holds of them */
    while ((link = fiatomic_lru_pop(&fia->idle_peers)) != NULL) {
        fiatomic_peer_free_idle(link);
    }

    fiatomic_freelist_purge(&fia->free_replies, fiatomic_reply_buf_free_link);
    fiatomic_regions_cleanup(&fia->regions);
}

/* The context is freed: nothing of it is in UCP's hands any more, so no
 * peer is left. */
void fiatomic_target_free(fiatomic_h fia)
{
    khash_t(fiatomic_peers) *peers = fia->peers;

    if (peers == NULL) {
        return;
    }
    fiatomic_assert(kh_size(peers) == 0);
    kh_destroy(fiatomic_peers, peers);
    fia->peers = NULL;
}

static void fiatomic_target_context_free(fiatomic_h fia)
{
    fiatomic_target_free(fia);
    fiatomic_target_msgs_cleanup(fia);
}

const fiatomic_target_hooks_t fiatomic_target_hooks = {
    .free          = fiatomic_target_context_free,
    .check_overdue = fiatomic_target_check_overdue,
    .ep_fail       = fiatomic_target_ep_fail
};
