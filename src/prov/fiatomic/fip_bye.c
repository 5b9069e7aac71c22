/**
 * The closing handshake: before a domain closes its connections, those it
 * made and those peers made to it, it tells the peer on each (FIP_AM_BYE)
 * and waits, bounded, for the peer's answer (FIP_AM_BYE_ACK). A peer
 * answers from its active message handler, which runs after the handlers
 * of everything this domain sent before on the same lane: its messages,
 * and the transport's acknowledgements of the peer's atomics and writes.
 * Without it, over shared memory a peer learnt that the connection was
 * gone (from the connection manager, out of band) before it had read what
 * was already in its queue, and UCP dropped that: on a connection a peer
 * made, the acknowledgements, so that a peer closing its domain the moment
 * it saw the data (Sandia OpenSHMEM's last barrier) made the initiator's
 * last atomics fail; on a connection this domain made, its last messages,
 * so that a program that closed once its last send completed (libfabric's
 * fi_pingpong) left its peer waiting for that message forever. Over tcp
 * the disconnect comes after the data on the same stream. Both messages
 * are exact, checked, and an answer is counted once per connection asked;
 * a connection whose peer is known failed is not asked, one that fails
 * meanwhile (its peer closed or died) is not waited for, and a peer that
 * does not answer in time (not progressing) leaves the close to go on.
 * A peer's question also tells this domain that the peer goes: later
 * operations to it fail at once (over same-host transports with no
 * connection manager, nothing else tells until UCP's keepalive).
 */
#include "fip.h"

#include <rdma/providers/fi_log.h>

#include <stdlib.h>
#include <string.h>

#define FIP_BYE_MAGIC      0x66697042u /* "fipB" */
#define FIP_BYE_TIMEOUT_MS 1000

typedef struct fip_bye_msg {
    uint32_t magic;
    uint32_t index;    /* the connection's, at the side that closes */
    uint64_t token;    /* random per close; the answer repeats it */
} fip_bye_msg_t;

/* a message on its way, and who sent it */
typedef struct fip_bye_send {
    fip_bye_msg_t msg;
    fip_domain_t  *domain;
    unsigned      am_id;
} fip_bye_send_t;

/* a connection asked that will not answer, or need not: not waited for */
static void fip_bye_gone(fip_domain_t *domain, size_t index)
{
    if ((domain->bye_asked != NULL) && (index < domain->bye_count) &&
        (domain->bye_asked[index] == 1)) {
        domain->bye_asked[index] = 2;
        ++domain->bye_acks;
    }
}

void fip_bye_ep_gone(fip_domain_t *domain, ucp_ep_h ep)
{
    size_t i;

    /* only the closing thread progresses while it asks, so that this runs
     * there and nowhere else then */
    if (domain->bye_asked == NULL) {
        return;
    }
    for (i = 0; i < domain->bye_count; ++i) {
        if (domain->bye_eps[i] == ep) {
            fip_bye_gone(domain, i);
        }
    }
}

static void fip_bye_send_done(void *request, ucs_status_t status,
                              void *user_data)
{
    fip_bye_send_t *send = user_data;

    if ((status != UCS_OK) && (send->am_id == FIP_AM_BYE)) {
        fip_bye_gone(send->domain, send->msg.index);
    }
    free(send);
    ucp_request_free(request);
}

/* 0 if sent or on its way */
static int fip_bye_send(fip_domain_t *domain, ucp_ep_h ep, unsigned am_id,
                        uint32_t index, uint64_t token, uint32_t flags)
{
    ucp_request_param_t param = {0};
    fip_bye_send_t *send      = malloc(sizeof(*send));
    fip_bye_msg_t *msg;
    ucs_status_ptr_t req;

    if (send == NULL) {
        return -1;
    }
    send->domain       = domain;
    send->am_id        = am_id;
    msg                = &send->msg;
    msg->magic         = FIP_BYE_MAGIC;
    msg->index         = index;
    msg->token         = token;
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FIELD_FLAGS;
    param.cb.send      = fip_bye_send_done;
    param.user_data    = send;
    param.flags        = flags;
    req = ucp_am_send_nbx(ep, am_id, msg, sizeof(*msg), NULL, 0, &param);
    if (UCS_PTR_IS_ERR(req)) {
        free(send);
        return -1;
    }
    if (req == NULL) {
        free(send);
    }
    return 0;
}

/* exactly a message, with the magic word */
static int fip_bye_parse(const void *header, size_t header_length,
                         size_t length, fip_bye_msg_t *msg)
{
    if ((header_length != sizeof(*msg)) || (length != 0)) {
        return -1;
    }
    memcpy(msg, header, sizeof(*msg));
    return (msg->magic == FIP_BYE_MAGIC) ? 0 : -1;
}

/* a peer closes: answer on the connection it asked on. If this domain
 * closes too, it asks that peer nothing more on the connection: the peer
 * goes, and what this side sent it there it no longer waits for (its
 * answer to this side's question may never come: a peer that had its own
 * answers closes without reading more). */
static ucs_status_t fip_bye_handler(void *arg, const void *header,
                                    size_t header_length, void *data,
                                    size_t length,
                                    const ucp_am_recv_param_t *param)
{
    fip_bye_msg_t msg;

    if ((param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) &&
        fip_admit_gate_bye(arg, param->reply_ep) &&
        (fip_bye_parse(header, header_length, length, &msg) == 0)) {
        fip_bye_msg_t *ack = malloc(sizeof(*ack));

        /* as a reply (the asker takes it from this connection only),
         * within the connection's cap of answers in flight */
        if (ack != NULL) {
            *ack = msg;
            (void)fip_reply_send(arg, param->reply_ep, FIP_AM_BYE_ACK, ack,
                                 sizeof(*ack), 0);
        }
        fip_bye_ep_gone(arg, param->reply_ep);
        /* the peer domain goes: nothing more to it on this connection */
        fip_peer_gone(arg, param->reply_ep);
    }
    return UCS_OK;
}

/* a peer's answer: counted once per connection asked, while asking (the
 * handshake's state changes only in this thread's progress) */
static ucs_status_t fip_bye_ack_handler(void *arg, const void *header,
                                        size_t header_length, void *data,
                                        size_t length,
                                        const ucp_am_recv_param_t *param)
{
    fip_domain_t *domain = arg;
    fip_bye_msg_t msg;

    if ((fip_bye_parse(header, header_length, length, &msg) != 0) ||
        !(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ||
        (domain->bye_asked == NULL) || (msg.index >= domain->bye_count) ||
        (domain->bye_eps[msg.index] != param->reply_ep) ||
        (msg.token != domain->bye_token)) {
        FI_WARN_SPARSE(&fip_provider, FI_LOG_EP_CTRL,
                       "closing handshake answer dropped: not from the "
                       "connection asked, or not this close's\n");
        return UCS_OK;
    }
    fip_bye_gone(domain, msg.index);
    return UCS_OK;
}

int fip_bye_init(fip_domain_t *domain)
{
    int ret = fip_domain_am_handler_set(domain, FIP_AM_BYE, fip_bye_handler);

    return (ret != 0) ? ret :
           fip_domain_am_handler_set(domain, FIP_AM_BYE_ACK,
                                     fip_bye_ack_handler);
}

/* the connections to ask: those this domain made whose peer is not known
 * failed, then those peers made to it; their count */
static size_t fip_bye_collect(fip_domain_t *domain, ucp_ep_h *eps)
{
    size_t count = 0;
    fip_peer_t *peer;
    size_t i;

    for (peer = domain->peers; peer != NULL; peer = peer->next) {
        if ((peer->ucp_ep != NULL) &&
            !__atomic_load_n(&peer->failed, __ATOMIC_ACQUIRE)) {
            eps[count++] = peer->ucp_ep;
        }
    }
    for (i = 0; i < domain->accepted_count; ++i) {
        eps[count++] = domain->accepted[i];
    }
    return count + fip_caller_eps(domain, eps + count);
}

void fip_bye_all(fip_domain_t *domain)
{
    int64_t deadline = fip_wait_deadline(FIP_BYE_TIMEOUT_MS);
    size_t i, count, asked = 0;

    count = domain->peer_count + domain->accepted_count +
            domain->caller_count;
    if (count == 0) {
        return;
    }
    /* the progress thread is stopped: only this thread runs the handlers */
    domain->bye_eps   = calloc(count, sizeof(*domain->bye_eps));
    domain->bye_asked = calloc(count, 1);
    if ((domain->bye_eps == NULL) || (domain->bye_asked == NULL)) {
        goto out;
    }
    if (fip_ep_nonce(&domain->bye_token) != 0) {
        goto out;
    }
    domain->bye_count = fip_bye_collect(domain, domain->bye_eps);
    domain->bye_acks  = 0;
    for (i = 0; i < domain->bye_count; ++i) {
        if (fip_bye_send(domain, domain->bye_eps[i], FIP_AM_BYE,
                         (uint32_t)i, domain->bye_token,
                         UCP_AM_SEND_FLAG_REPLY) == 0) {
            domain->bye_asked[i] = 1;
            ++asked;
        }
    }
    while ((domain->bye_acks < asked) && (fip_now_ns() < deadline)) {
        fip_domain_worker_progress(domain);
    }
out:
    free(domain->bye_asked);
    free(domain->bye_eps);
    domain->bye_asked = NULL;
    domain->bye_eps   = NULL;
    domain->bye_count = 0;
}
