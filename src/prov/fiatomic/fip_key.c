/**
 * The key service: a 64-bit key from fi_mr_key works at any peer as is.
 * On its first use with a peer, the initiator asks the peer's domain, in a
 * UCP active message, what the key names; the target looks the key up in
 * its key table (fip_mr.c) and answers with the region's libfiatomic
 * packed key, its address, length, remote access and
 * the base the program addresses it by, or with -FI_ENOKEY for a key it does not have (guessed, forged, or
 * of a region closed since): such a key reaches no memory. Both sides
 * validate what they receive (exact lengths, a magic word, the reply's
 * size capped at FIP_KEY_PACKED_MAX, a reply matched to a request still
 * waiting); a wait for a reply is bounded (FIP_RESOLVE_TIMEOUT_MS) and
 * progresses the domain under manual progress. A reply names its request
 * by a random 64-bit id (no other process can guess it) and is taken only
 * from the connection the request went out on (UCP's reply endpoint of
 * the answer, sent as a reply, is the waiter's endpoint to the peer): an
 * answer forged by a third party on a connection of its own names no
 * memory here. A target has at most FIP_REPLY_INFLIGHT_MAX answers of one
 * connection on their way (fip_reply.c): a peer that does not read its
 * answers gets no more until they went out.
 */
#include "fip.h"

#include <rdma/providers/fi_log.h>

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define FIP_KEY_MAGIC 0x6669704bu /* "fipK" */

typedef struct fip_key_req_msg {
    uint32_t magic;
    uint32_t reserved;  /* 0 */
    uint64_t req_id;
    uint64_t key;
} fip_key_req_msg_t;

/* followed by fkey_len bytes of libfiatomic key */
typedef struct fip_key_rep_msg {
    uint32_t magic;
    int32_t  status;    /* 0 or -FI_E* */
    uint64_t req_id;
    uint64_t vaddr;
    uint64_t length;
    uint64_t remote_base;
    uint64_t access;    /* FI_REMOTE_READ, FI_REMOTE_WRITE */
    uint32_t fkey_len;
    uint32_t reserved;  /* 0 */
} fip_key_rep_msg_t;

/* a request waiting for its reply, on the waiter's stack */
struct fip_key_wait {
    fip_key_wait_t *next;
    uint64_t       req_id;  /* random */
    ucp_ep_h       ep;      /* the connection the request went out on */
    int            done;    /* under key_lock */
    int            status;
    fip_key_rep_msg_t rep;
    void           *packed; /* malloc'd by the handler */
    size_t         packed_len;
};

/* a message buffer UCP holds until the send completes */
static void fip_key_send_done(void *request, ucs_status_t status,
                              void *user_data)
{
    free(user_data);
    ucp_request_free(request);
}

/* send header+data (one malloc'd buffer, freed once sent) */
static int fip_key_send(ucp_ep_h ep, unsigned am_id, void *msg,
                        size_t header_len, size_t data_len, uint32_t flags)
{
    ucp_request_param_t param = {0};
    ucs_status_ptr_t req;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FIELD_FLAGS;
    param.cb.send      = fip_key_send_done;
    param.user_data    = msg;
    param.flags        = flags;
    req = ucp_am_send_nbx(ep, am_id, msg, header_len,
                          (char*)msg + header_len, data_len, &param);
    if (UCS_PTR_IS_ERR(req)) {
        free(msg);
        return -FI_EIO;
    }
    if (req == NULL) {
        free(msg);
    }
    return 0;
}

/* the target: answer a peer's request for a key */
static ucs_status_t fip_key_req_handler(void *arg, const void *header,
                                        size_t header_length, void *data,
                                        size_t length,
                                        const ucp_am_recv_param_t *param)
{
    fip_domain_t *domain = arg;
    fip_key_req_msg_t req;
    fip_key_rep_msg_t *rep;
    size_t packed_len = 0;
    fip_mr_t *mr;

    /* a request is exactly its header, sent with a reply endpoint */
    if (!(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ||
        !fip_admit_gate(domain, param->reply_ep, "key request") ||
        (header_length != sizeof(req)) || (length != 0)) {
        return UCS_OK;
    }
    memcpy(&req, header, sizeof(req));
    if ((req.magic != FIP_KEY_MAGIC) || (req.reserved != 0)) {
        return UCS_OK;
    }

    pthread_mutex_lock(&domain->mr_lock);
    mr = fip_mr_lookup_locked(domain, req.key);
    if ((mr != NULL) && (mr->packed != NULL)) {
        packed_len = mr->packed_len;
    }
    rep = malloc(sizeof(*rep) + packed_len);
    if (rep != NULL) {
        memset(rep, 0, sizeof(*rep));
        rep->magic  = FIP_KEY_MAGIC;
        rep->req_id = req.req_id;
        if (packed_len == 0) {
            /* not in the table, or no remote access */
            rep->status = -FI_ENOKEY;
        } else {
            rep->vaddr       = (uint64_t)(uintptr_t)mr->exposed;
            rep->length      = mr->length;
            rep->remote_base = mr->remote_base;
            rep->access      = mr->access & (FI_REMOTE_READ |
                                             FI_REMOTE_WRITE);
            rep->fkey_len    = (uint32_t)mr->packed_len;
            memcpy(rep + 1, mr->packed, mr->packed_len);
        }
    }
    pthread_mutex_unlock(&domain->mr_lock);
    if (rep != NULL) {
        /* as a reply: the requester takes it from this connection only;
         * within the connection's cap of answers in flight */
        (void)fip_reply_send(domain, param->reply_ep, FIP_AM_KEY_REP, rep,
                             sizeof(*rep), packed_len);
    }
    return UCS_OK;
}

/* the initiator: a reply to one of its requests */
static ucs_status_t fip_key_rep_handler(void *arg, const void *header,
                                        size_t header_length, void *data,
                                        size_t length,
                                        const ucp_am_recv_param_t *param)
{
    fip_domain_t *domain = arg;
    fip_key_rep_msg_t rep;
    fip_key_wait_t *wait;
    void *packed = NULL;

    if ((header_length != sizeof(rep)) || (length > FIP_KEY_PACKED_MAX) ||
        (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) ||
        !(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
        FI_WARN_SPARSE(&fip_provider, FI_LOG_EP_CTRL,
                       "key reply dropped: malformed\n");
        return UCS_OK;
    }
    memcpy(&rep, header, sizeof(rep));
    if ((rep.magic != FIP_KEY_MAGIC) || (rep.status > 0) ||
        (rep.reserved != 0) || (rep.fkey_len != length) ||
        ((rep.status == 0) && (rep.fkey_len == 0)) ||
        ((rep.status != 0) && (length != 0))) {
        FI_WARN_SPARSE(&fip_provider, FI_LOG_EP_CTRL,
                       "key reply dropped: malformed\n");
        return UCS_OK;
    }
    if (length > 0) {
        packed = malloc(length);
        if (packed == NULL) {
            return UCS_OK; /* the waiter times out */
        }
        memcpy(packed, data, length);
    }

    pthread_mutex_lock(&domain->key_lock);
    for (wait = domain->key_waits; wait != NULL; wait = wait->next) {
        if ((wait->req_id == rep.req_id) && (wait->ep == param->reply_ep) &&
            !wait->done) {
            break;
        }
    }
    if (wait != NULL) {
        wait->rep        = rep;
        wait->status     = rep.status;
        wait->packed     = packed;
        wait->packed_len = length;
        wait->done       = 1;
        packed           = NULL;
    }
    pthread_mutex_unlock(&domain->key_lock);
    /* a reply nobody waits for (late, or forged) is dropped */
    if (wait == NULL) {
        FI_WARN_SPARSE(&fip_provider, FI_LOG_EP_CTRL,
                       "key reply dropped: no request of that id waits "
                       "for it on its connection\n");
    }
    free(packed);
    return UCS_OK;
}

int fip_key_service_init(fip_domain_t *domain)
{
    int ret;

    ret = fip_domain_am_handler_set(domain, FIP_AM_KEY_REQ,
                                    fip_key_req_handler);
    if (ret != 0) {
        return ret;
    }
    return fip_domain_am_handler_set(domain, FIP_AM_KEY_REP,
                                     fip_key_rep_handler);
}

static void fip_key_wait_remove(fip_domain_t *domain, fip_key_wait_t *wait)
{
    fip_key_wait_t **p;

    pthread_mutex_lock(&domain->key_lock);
    for (p = &domain->key_waits; *p != NULL; p = &(*p)->next) {
        if (*p == wait) {
            *p = wait->next;
            break;
        }
    }
    pthread_mutex_unlock(&domain->key_lock);
}

int fip_key_request(fip_domain_t *domain, fip_peer_t *peer, uint64_t key,
                    fip_key_reply_t *reply)
{
    int64_t deadline = fip_wait_deadline(FIP_RESOLVE_TIMEOUT_MS);
    fip_key_wait_t wait = {0};
    fip_key_req_msg_t *msg;
    int done, ret;

    msg = calloc(1, sizeof(*msg));
    if (msg == NULL) {
        return -FI_ENOMEM;
    }
    /* an id a third party cannot predict */
    ret = fip_ep_nonce(&wait.req_id);
    if (ret != 0) {
        free(msg);
        return ret;
    }
    wait.ep           = peer->ucp_ep;
    pthread_mutex_lock(&domain->key_lock);
    wait.next         = domain->key_waits;
    domain->key_waits = &wait;
    pthread_mutex_unlock(&domain->key_lock);

    msg->magic  = FIP_KEY_MAGIC;
    msg->req_id = wait.req_id;
    msg->key    = key;
    ret = fip_key_send(peer->ucp_ep, FIP_AM_KEY_REQ, msg, sizeof(*msg), 0,
                       UCP_AM_SEND_FLAG_REPLY);
    if (ret != 0) {
        goto out;
    }

    for (;;) {
        pthread_mutex_lock(&domain->key_lock);
        done = wait.done;
        pthread_mutex_unlock(&domain->key_lock);
        if (done) {
            break;
        }
        ret = fip_peer_failed_errno(peer);
        if (ret != 0) {
            goto out;
        }
        if (fip_now_ns() >= deadline) {
            ret = -FI_ETIMEDOUT;
            goto out;
        }
        if (domain->data_progress == FI_PROGRESS_MANUAL) {
            fip_domain_worker_progress(domain);
        } else {
            sched_yield();
        }
    }

    /* the peer's status is one bit of information: known or not */
    ret = (wait.status == 0) ? 0 : -FI_ENOKEY;
    if (ret == 0) {
        reply->data        = wait.packed;
        reply->fkey_len    = wait.rep.fkey_len;
        reply->vaddr       = wait.rep.vaddr;
        reply->length      = wait.rep.length;
        reply->remote_base = wait.rep.remote_base;
        reply->access      = wait.rep.access;
        wait.packed        = NULL;
    }
out:
    fip_key_wait_remove(domain, &wait);
    free(wait.packed);
    return ret;
}
