/**
 * Answers in flight per connection: what a domain sends back to a peer's
 * request (a key reply, a closing answer, a confirmation of a greeting)
 * stays in memory until UCP has sent it, and a peer that asks without
 * reading the answers would make it grow without bound. So at most
 * FIP_REPLY_INFLIGHT_MAX answers per connection are on their way at a
 * time (as libfiatomic does per peer); a request beyond them gets no
 * answer until they went out (the asker's wait is bounded), and the
 * first one refused of each burst is logged. A connection is counted here
 * only while it has answers in flight.
 */
#include "fip.h"

#include <rdma/providers/fi_log.h>

#include <stdlib.h>

struct fip_reply_credit {
    struct fip_reply_credit *next;
    ucp_ep_h                ep;
    size_t                  inflight;
    size_t                  refused;   /* in this burst */
};

static size_t fip_reply_bucket(ucp_ep_h ep)
{
    return ((uintptr_t)ep >> 4) % FIP_REPLY_BUCKETS;
}

int fip_reply_take(fip_domain_t *domain, ucp_ep_h ep)
{
    fip_reply_credit_t **head = &domain->replies[fip_reply_bucket(ep)];
    fip_reply_credit_t *c;
    int ret = 0;

    pthread_mutex_lock(&domain->conn_lock);
    for (c = *head; (c != NULL) && (c->ep != ep); c = c->next) {
    }
    if (c == NULL) {
        c = calloc(1, sizeof(*c));
        if (c == NULL) {
            ret = -FI_ENOMEM;
            goto out;
        }
        c->ep   = ep;
        c->next = *head;
        *head   = c;
    }
    if (c->inflight >= FIP_REPLY_INFLIGHT_MAX) {
        if (c->refused++ == 0) {
            FI_WARN(&fip_provider, FI_LOG_EP_CTRL,
                    "a peer does not read its answers: %d in flight on "
                    "its connection, its requests go unanswered until "
                    "they went out\n", FIP_REPLY_INFLIGHT_MAX);
        }
        ret = -FI_EAGAIN;
        goto out;
    }
    ++c->inflight;
out:
    pthread_mutex_unlock(&domain->conn_lock);
    return ret;
}

void fip_reply_done(fip_domain_t *domain, ucp_ep_h ep)
{
    fip_reply_credit_t **p = &domain->replies[fip_reply_bucket(ep)];
    fip_reply_credit_t *c;

    pthread_mutex_lock(&domain->conn_lock);
    for (; (*p != NULL) && ((*p)->ep != ep); p = &(*p)->next) {
    }
    c = *p;
    if ((c != NULL) && (--c->inflight == 0)) {
        if (c->refused > 0) {
            FI_WARN(&fip_provider, FI_LOG_EP_CTRL,
                    "%zu requests of a peer went unanswered (its answers "
                    "were not read)\n", c->refused);
        }
        *p = c->next;
        free(c);
    }
    pthread_mutex_unlock(&domain->conn_lock);
}

/* an answer on its way */
typedef struct fip_reply_send {
    fip_domain_t *domain;
    ucp_ep_h     ep;
    void         *buf;
} fip_reply_send_t;

static void fip_reply_send_done(void *request, ucs_status_t status,
                                void *user_data)
{
    fip_reply_send_t *send = user_data;

    fip_reply_done(send->domain, send->ep);
    free(send->buf);
    free(send);
    ucp_request_free(request);
}

int fip_reply_send(fip_domain_t *domain, ucp_ep_h ep, unsigned am_id,
                   void *buf, size_t header_len, size_t data_len)
{
    ucp_request_param_t param = {0};
    fip_reply_send_t *send;
    ucs_status_ptr_t req;
    int ret;

    ret = fip_reply_take(domain, ep);
    if (ret != 0) {
        free(buf);
        return ret;
    }
    send = malloc(sizeof(*send));
    if (send == NULL) {
        fip_reply_done(domain, ep);
        free(buf);
        return -FI_ENOMEM;
    }
    send->domain       = domain;
    send->ep           = ep;
    send->buf          = buf;
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FIELD_FLAGS;
    param.cb.send      = fip_reply_send_done;
    param.user_data    = send;
    /* as a reply: the asker takes it from this connection only */
    param.flags        = UCP_AM_SEND_FLAG_REPLY;
    req = ucp_am_send_nbx(ep, am_id, buf, header_len,
                          (char*)buf + header_len, data_len, &param);
    if (!UCS_PTR_IS_PTR(req)) {
        fip_reply_done(domain, ep);
        free(buf);
        free(send);
        return UCS_PTR_IS_ERR(req) ? -FI_EIO : 0;
    }
    return 0;
}

void fip_reply_cleanup(fip_domain_t *domain)
{
    fip_reply_credit_t *c;
    size_t b;

    for (b = 0; b < FIP_REPLY_BUCKETS; ++b) {
        while ((c = domain->replies[b]) != NULL) {
            domain->replies[b] = c->next;
            free(c);
        }
    }
}
