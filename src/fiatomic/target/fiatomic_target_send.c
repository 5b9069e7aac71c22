/**
 * Target-side strategy, the initiator's half (fiatomic_target.h): the
 * strategy's table, and the reply handler. Consecutive elements of a
 * request go to the target in one active message (as many as fit in
 * FIATOMIC_WIRE_MAX_PAYLOAD; larger arrays become several messages, all in
 * flight at once); the target executes them with CPU atomics and replies
 * with the status and the initial values.
 *
 * A reply is lost if the target dies, stops, or does not serve the request
 * (no handler, dropped): the operation timeout ends every wait. A dead
 * target is found sooner: UCP fails its own operations on a failed endpoint
 * but knows nothing of a reply we wait for, so once a reply is overdue
 * (FIATOMIC_PROBE_DELAY after its send), an endpoint flush ("probe") is
 * posted while replies are awaited: UCP fails it when the endpoint failed,
 * and that error completes every awaited message. Probing only overdue
 * messages keeps the probe off the normal path (a probe per round trip cost
 * a third of the latency over tcp). The overdue check runs when the library
 * is called (posting, fiatomic_request_check_status, flush, a counter's
 * wait) and on every reply.
 */
#include "cell/fiatomic_cpu.h"
#include "core/fiatomic_strategy.h"
#include "target/fiatomic_target.h"
#include "base/fiatomic_wire.h"

#include <stdlib.h>
#include <string.h>

struct fiatomic_am_msg {
    ucs_list_link_t list;      /* ep->target.am_pending, or fia->free_msgs */
    uint64_t        sent_ns;   /* when it was sent (monotonic) */
    fiatomic_h      fia;
    fiatomic_ep_h   ep;
    fiatomic_req_t  *req;
    fiatomic_rkey_t *key;
    size_t          first;     /* first element of req */
    size_t          count;
    uint64_t        id;        /* its handle in fia->msgs */
    bool            sending;   /* the AM send is still in UCP's hands */
    bool            awaiting;  /* the reply has not come */
    size_t          length;
    uint8_t         buffer[sizeof(fiatomic_wire_req_t) +
                           FIATOMIC_WIRE_MAX_PAYLOAD];
};

/* A reply later than this makes the endpoint probe its target. */
#define FIATOMIC_PROBE_DELAY_NS (50ull * 1000 * 1000)

static bool fiatomic_target_supports(const fiatomic_cell_t *cell)
{
    return fiatomic_cpu_has_size(cell->size);
}

/* The target's CPU atomics are atomic with respect to UCP's own on 1..8-byte
 * elements only where UCP's are CPU atomics too; 16/32-byte elements are out
 * of UCP's reach. */
static bool fiatomic_target_usable(const fiatomic_ep_h ep,
                                   const fiatomic_rkey_t *key,
                                   const fiatomic_cell_t *cell,
                                   uint64_t flags)
{
    /* Target-only memory (no UCP rkey): nothing else reaches it, so the
     * target is its only actor for every size. */
    return fiatomic_target_supports(cell) && key->target_ok &&
           ((cell->size > 8) || (ep->domain == FIATOMIC_DOMAIN_CPU) ||
            (key->rkey == NULL));
}

static bool fiatomic_target_needs_target_progress(const fiatomic_rkey_t *key)
{
    return true;
}

/* ------------------------------------------------------------------------ */
/* Message slots and cache                                                   */

/* A message's id (fia->msgs' handle) is what its reply echoes: a late or
 * forged reply names no message awaiting one and is dropped. */
static fiatomic_am_msg_t *fiatomic_msg_get(fiatomic_h fia)
{
    ucs_list_link_t *link = fiatomic_freelist_get(&fia->free_msgs);
    fiatomic_am_msg_t *msg;

    if (link != NULL) {
        msg = ucs_container_of(link, fiatomic_am_msg_t, list);
    } else {
        msg = malloc(sizeof(*msg));
        if (msg == NULL) {
            return NULL;
        }
    }

    if (fiatomic_handle_add(&fia->msgs, msg, &msg->id, NULL) != UCS_OK) {
        if (!fiatomic_freelist_put(&fia->free_msgs, &msg->list)) {
            free(msg);
        }
        return NULL;
    }
    msg->fia      = fia;
    msg->sending  = false;
    msg->awaiting = false;
    return msg;
}

static fiatomic_am_msg_t *fiatomic_msg_lookup(fiatomic_h fia, uint64_t id)
{
    fiatomic_am_msg_t *msg = fiatomic_handle_get(&fia->msgs, id);

    return ((msg != NULL) && msg->awaiting) ? msg : NULL;
}

/* The message is done with both its send and its reply (or the wait was
 * abandoned): its slot and buffer can be reused. */
static void fiatomic_msg_release(fiatomic_am_msg_t *msg)
{
    fiatomic_h fia = msg->fia;

    fiatomic_handle_remove(&fia->msgs, msg->id); /* a late reply is dropped */
    if (!fiatomic_freelist_put(&fia->free_msgs, &msg->list)) {
        free(msg);
    }
}

static void fiatomic_msg_free_link(ucs_list_link_t *link)
{
    free(ucs_container_of(link, fiatomic_am_msg_t, list));
}

void fiatomic_target_msgs_cleanup(fiatomic_h fia)
{
    fiatomic_freelist_purge(&fia->free_msgs, fiatomic_msg_free_link);
    fiatomic_handle_table_cleanup(&fia->msgs);
}

/* ------------------------------------------------------------------------ */
/* Completion                                                                */

/* The message's elements finish with `status`; fetched values (already
 * copied) are valid when it is UCS_OK. */
static void fiatomic_msg_finish(fiatomic_am_msg_t *msg, ucs_status_t status)
{
    fiatomic_req_t *req = msg->req;
    size_t first = msg->first, count = msg->count, i;

    msg->awaiting = false;
    ucs_list_del(&msg->list);
    if (!msg->sending) {
        fiatomic_msg_release(msg);
    }

    for (i = 0; i < count; ++i) {
        /* the last one may complete and recycle req: nothing after */
        fiatomic_elem_done(&req->elems[first + i], status);
    }
}

void fiatomic_target_ep_fail(fiatomic_ep_h ep, ucs_status_t status)
{
    fiatomic_am_msg_t *msg;

    while (!ucs_list_is_empty(&ep->target.am_pending)) {
        msg = ucs_list_head(&ep->target.am_pending, fiatomic_am_msg_t, list);
        fiatomic_msg_finish(msg, status);
    }
}

static void fiatomic_target_probe(fiatomic_ep_h ep);

void fiatomic_target_check_overdue(fiatomic_ep_h ep)
{
    uint64_t timeout = ep->fia->op_timeout_ns;
    fiatomic_am_msg_t *oldest;
    uint64_t now;

    if (ep->destroyed || ucs_list_is_empty(&ep->target.am_pending)) {
        return;
    }

    /* Messages are pending in send order: the oldest first. A reply later
     * than the operation timeout is not waited for (a target that stopped,
     * lost its handler, or dropped the request); a late one is dropped by
     * its id. */
    now = fiatomic_now_ns();
    while (!ucs_list_is_empty(&ep->target.am_pending)) {
        oldest = ucs_list_head(&ep->target.am_pending, fiatomic_am_msg_t, list);
        if ((now - oldest->sent_ns) < timeout) {
            break;
        }
        fiatomic_msg_finish(oldest, UCS_ERR_TIMED_OUT);
    }

    if (ep->target.probe_inflight || ucs_list_is_empty(&ep->target.am_pending)) {
        return;
    }

    oldest = ucs_list_head(&ep->target.am_pending, fiatomic_am_msg_t, list);
    if ((now - oldest->sent_ns) >= FIATOMIC_PROBE_DELAY_NS) {
        fiatomic_target_probe(ep);
    }
}

static void fiatomic_target_probe_cb(void *request, ucs_status_t status,
                                     void *user_data)
{
    fiatomic_ep_h ep = user_data;
    fiatomic_h fia   = ep->fia;
    bool locked;

    FIATOMIC_CB_ENTER_SEND(fia, fiatomic_target_probe_cb, request, status,
                           user_data, locked);
    ucp_request_free(request);
    ep->target.probe_inflight = false;
    if (status != UCS_OK) {
        fiatomic_target_ep_fail(ep, status);
    } else {
        fiatomic_target_check_overdue(ep); /* still waiting: probe again */
    }
    fiatomic_ep_inflight_remove(ep); /* last: may free a destroyed ep */
    fiatomic_leave(fia, locked);
}

static void fiatomic_target_probe(fiatomic_ep_h ep)
{
    ucp_request_param_t param;
    ucs_status_ptr_t sptr;

    if (ep->target.probe_inflight || ep->destroyed ||
        ucs_list_is_empty(&ep->target.am_pending)) {
        return;
    }

    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send      = fiatomic_target_probe_cb;
    param.user_data    = ep;
    /* A flush, never a read of the target's memory: the key's memory may
     * have been unexposed and freed (the very reason a reply may not come),
     * and UCX's software RMA reads whatever address it is given. A flush
     * fails once UCP has found the endpoint failed. */
    sptr = ucp_ep_flush_nbx(ep->ucp_ep, &param);
    if (UCS_PTR_IS_PTR(sptr)) {
        ep->target.probe_inflight = true;
        fiatomic_ep_inflight_add(ep);
    } else if (UCS_PTR_IS_ERR(sptr)) {
        fiatomic_target_ep_fail(ep, UCS_PTR_STATUS(sptr));
    }
    /* Completed in place: the endpoint is alive; the next send or reply
     * probes again. */
}

static ucs_status_t
fiatomic_target_reply_handler_locked(fiatomic_h fia, void *data,
                                     size_t length,
                                     const ucp_am_recv_param_t *param);

static ucs_status_t
fiatomic_target_reply_handler(void *arg, const void *header,
                              size_t header_length, void *data, size_t length,
                              const ucp_am_recv_param_t *param)
{
    fiatomic_h fia = arg;
    ucs_status_t status;
    bool locked    = fia->mt;

    if (locked &&
        !fiatomic_cb_enter_am(fia, fiatomic_target_reply_handler, arg, data,
                              length, param, &status)) {
        return status; /* queued for the thread inside the library */
    }
    status = fiatomic_target_reply_handler_locked(fia, data, length, param);
    fiatomic_leave(fia, locked);
    return status;
}

static ucs_status_t
fiatomic_target_reply_handler_locked(fiatomic_h fia, void *data,
                                     size_t length,
                                     const ucp_am_recv_param_t *param)
{
    fiatomic_wire_reply_t reply;
    fiatomic_am_msg_t *msg;
    fiatomic_ep_h ep;
    fiatomic_elem_t *elem;
    const uint8_t *values;
    ucs_status_t status;
    size_t size, i;

    if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) ||
        (length < sizeof(reply))) {
        /* Our targets never reply like this; nothing to match it to.
         * UCS_OK declines a rendezvous without receiving it (UCP answers
         * its sender and frees the descriptor; one that arrived while the
         * context was busy was declined then, fiatomic_cb_enter_am). */
        return UCS_OK;
    }

    memcpy(&reply, data, sizeof(reply));
    msg = (reply.magic == FIATOMIC_WIRE_REPLY_MAGIC) ?
          fiatomic_msg_lookup(fia, reply.id) : NULL;
    if (msg == NULL) {
        return UCS_OK; /* late (abandoned) or not ours */
    }

    status = reply.status;
    size   = msg->req->cell->size;
    values = (const uint8_t*)data + sizeof(reply);
    if ((status == UCS_OK) &&
        (msg->req->cell->family != FIATOMIC_FAMILY_BASE)) {
        if ((reply.count != msg->count) ||
            (length != sizeof(reply) + msg->count * size)) {
            status = UCS_ERR_IO_ERROR; /* a reply that does not fit */
        } else {
            for (i = 0; i < msg->count; ++i) {
                elem = &msg->req->elems[msg->first + i];
                memcpy(elem->result, values + i * size, size);
            }
        }
    }

    ep = msg->ep;
    fiatomic_msg_finish(msg, status);
    fiatomic_target_check_overdue(ep);
    return UCS_OK;
}

FIATOMIC_TARGET_DEFINE_AM(reply, FIATOMIC_WIRE_AM_REPLY,
                          fiatomic_target_reply_handler);

static void fiatomic_target_sent_cb(void *request, ucs_status_t status,
                                    void *user_data)
{
    fiatomic_am_msg_t *msg = user_data;
    fiatomic_h fia         = msg->ep->fia;
    fiatomic_ep_h ep;
    bool locked;

    FIATOMIC_CB_ENTER_SEND(fia, fiatomic_target_sent_cb, request, status,
                           user_data, locked);
    ep = msg->ep;
    ucp_request_free(request);
    msg->sending = false;
    if (msg->awaiting) {
        if (status != UCS_OK) {
            fiatomic_msg_finish(msg, status); /* never reached the target */
        }
    } else {
        fiatomic_msg_release(msg);
    }
    fiatomic_ep_inflight_remove(ep); /* last: may free a destroyed ep */
    fiatomic_leave(fia, locked);
}

/* ------------------------------------------------------------------------ */
/* Start                                                                     */

/* How many elements from `first` can share one message: consecutive remote
 * addresses under the same key, within the payload limit. */
static size_t fiatomic_target_run(const fiatomic_req_t *req, size_t first,
                                  size_t count)
{
    const fiatomic_cell_t *cell = req->cell;
    size_t size     = cell->size;
    size_t per_elem = ((cell->op != FI_ATOMIC_READ) ? size : 0) +
                      ((cell->family == FIATOMIC_FAMILY_COMPARE) ? size : 0);
    size_t limit    = FIATOMIC_WIRE_MAX_PAYLOAD /
                      ((per_elem != 0) ? per_elem : size);
    const fiatomic_elem_t *e = &req->elems[first];
    size_t n;

    for (n = 1; (n < count) && (n < limit); ++n) {
        if ((e[n].strategy != FIATOMIC_STRATEGY_TARGET) ||
            (e[n].key != e[0].key) || (e[n].raddr != e[0].raddr + n * size)) {
            break;
        }
    }
    return n;
}

static size_t fiatomic_target_start(fiatomic_req_t *req, size_t first,
                                    size_t count)
{
    const fiatomic_cell_t *cell = req->cell;
    fiatomic_ep_h ep        = req->ep;
    fiatomic_elem_t *elems  = &req->elems[first];
    size_t size             = cell->size;
    fiatomic_wire_req_t hdr = {0};
    ucp_request_param_t param;
    fiatomic_am_msg_t *msg;
    ucs_status_ptr_t sptr;
    uint8_t *p;
    size_t n, i;

    n   = fiatomic_target_run(req, first, count);
    msg = fiatomic_msg_get(ep->fia);
    if (msg == NULL) {
        for (i = 0; i < n; ++i) {
            fiatomic_elem_done(&elems[i], UCS_ERR_NO_MEMORY);
        }
        return n;
    }

    msg->ep    = ep;
    msg->req   = req;
    msg->key   = elems[0].key;
    msg->first = first;
    msg->count = n;

    hdr.magic    = FIATOMIC_WIRE_REQ_MAGIC;
    hdr.version  = FIATOMIC_WIRE_VERSION;
    hdr.family   = cell->family;
    hdr.op       = cell->op;
    hdr.datatype = cell->datatype;
    hdr.count    = n;
    hdr.reserved = 0;
    hdr.region   = msg->key->region;
    hdr.token    = msg->key->token;
    hdr.raddr    = elems[0].raddr;
    hdr.id       = msg->id;
    memcpy(msg->buffer, &hdr, sizeof(hdr));
    p = msg->buffer + sizeof(hdr);
    if (cell->op != FI_ATOMIC_READ) {
        for (i = 0; i < n; ++i, p += size) {
            memcpy(p, elems[i].operand, size);
            fiatomic_clear_padding(cell->datatype, p);
        }
    }
    if (cell->family == FIATOMIC_FAMILY_COMPARE) {
        for (i = 0; i < n; ++i, p += size) {
            memcpy(p, elems[i].compare, size);
            fiatomic_clear_padding(cell->datatype, p);
        }
    }
    msg->length = p - msg->buffer;

    msg->awaiting = true;
    msg->sent_ns  = fiatomic_now_ns();
    ucs_list_add_tail(&ep->target.am_pending, &msg->list);

    /* The target needs our endpoint to reply on. Eager: a request is at
     * most a few kilobytes, and UCP 1.22 would send one by rendezvous over
     * self and shared memory (an extra round trip and a handshake the
     * target must progress). */
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FIELD_FLAGS;
    param.cb.send      = fiatomic_target_sent_cb;
    param.user_data    = msg;
    param.flags        = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER;
    sptr = ucp_am_send_nbx(ep->ucp_ep,
                           ep->fia->am_id + FIATOMIC_WIRE_AM_REQUEST, NULL, 0,
                           msg->buffer, msg->length, &param);
    if (UCS_PTR_IS_PTR(sptr)) {
        msg->sending = true;
        fiatomic_ep_inflight_add(ep);
    } else if (UCS_PTR_IS_ERR(sptr)) {
        fiatomic_msg_finish(msg, UCS_PTR_STATUS(sptr));
        return n;
    }

    fiatomic_target_check_overdue(ep);
    return n;
}

const fiatomic_strategy_ops_t fiatomic_target_ops = {
    .id                    = FIATOMIC_STRATEGY_TARGET,
    .name                  = "target",
    .supports              = fiatomic_target_supports,
    .usable                = fiatomic_target_usable,
    .start                 = fiatomic_target_start,
    .needs_target_progress = fiatomic_target_needs_target_progress
};
