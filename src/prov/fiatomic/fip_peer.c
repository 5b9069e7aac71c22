/**
 * Connections to peer domains, made on first use: an operation to an
 * fi_addr_t names a peer domain's listener (fip_addr.c); the first one
 * creates a UCP endpoint to it by socket address and a libfiatomic
 * endpoint over that, cached per listener for every endpoint of the
 * domain. Every peer's libfiatomic endpoint orders same-address atomics
 * (FIP_MSG_ORDER). The keys a peer's regions go by are resolved once per
 * peer (fip_key.c) and cached here, capped per peer. The other direction,
 * connections peers make to this domain's listener, is accepted here too.
 * A same-host address (UCX_TLS=posix: no connection manager) names the
 * peer domain's published worker address instead (fip_publish.c): the
 * endpoint is created to that, cached per peer domain likewise, and the
 * peer's side of it is UCP's own, which its replies go over (UCP's active
 * message reply endpoints: key replies, message acknowledgements, the
 * closing handshake's answers). A connection a peer made to the listener
 * holds one of FIP_ACCEPT_MAX slots while it lasts: when its peer leaves
 * (the connection fails or is closed) the slot is free for another.
 */
#include "fip.h"

#include <rdma/providers/fi_log.h>

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

static void fip_peer_err(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    fip_peer_t *peer = arg;

    /* later operations to the peer fail at once */
    __atomic_store_n(&peer->failed, 1, __ATOMIC_RELEASE);
    /* a closing domain waits no more for its answer (fip_bye.c) */
    fip_bye_ep_gone(peer->domain, ep);
}

static void fip_peer_accepted_err(void *arg, ucp_ep_h ep,
                                  ucs_status_t status)
{
    fip_domain_t *domain = arg;
    size_t i;

    /* the peer went away: a closing domain waits no more for its answer */
    fip_bye_ep_gone(domain, ep);
    /* its claim's check ends; what it sent before goes on; its slot is
     * free for another peer, its endpoint closed later */
    fip_caller_conn_gone(domain, ep);
    fip_msg_stream_forget(domain, ep);
    fip_admit_forget(domain, ep);
    pthread_mutex_lock(&domain->conn_lock);
    for (i = 0; i < domain->accepted_count; ++i) {
        if (domain->accepted[i] == ep) {
            domain->accepted[i] = domain->accepted[--domain->accepted_count];
            domain->accepted_gone[domain->gone_count++] = ep;
            break;
        }
    }
    pthread_mutex_unlock(&domain->conn_lock);
}

/* close the endpoints of peers that left, without waiting (a forced close
 * completes on its own); under conn_lock */
static void fip_peer_gone_close(fip_domain_t *domain)
{
    ucp_request_param_t param = {0};
    ucs_status_ptr_t req;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    while (domain->gone_count > 0) {
        req = ucp_ep_close_nbx(domain->accepted_gone[--domain->gone_count],
                               &param);
        if (UCS_PTR_IS_PTR(req)) {
            ucp_request_free(req);
        }
    }
}

void fip_peer_accept_drain(fip_domain_t *domain)
{
    int64_t deadline = fip_wait_deadline(FIP_ACCEPT_DRAIN_MS);
    int idle         = 0;

    /* UCX 1.13's ucp_listener_destroy drops the connection requests it
     * has queued for the program without rejecting them, and an event on
     * one later calls into freed memory: the requests that came (a peer's
     * connection back to check this domain's greeting, fip_caller.c) reach
     * fip_peer_accept first, bounded */
    if (domain->ucp_listener == NULL) {
        return;
    }
    while ((idle < 3) && (fip_now_ns() < deadline)) {
        idle = (fip_domain_worker_progress(domain) == 0) ? idle + 1 : 0;
    }
}

void fip_peer_accept(fip_domain_t *domain, ucp_conn_request_h request)
{
    ucp_ep_params_t params = {0};
    ucs_status_t status;
    ucp_ep_h ep;

    pthread_mutex_lock(&domain->conn_lock);
    fip_peer_gone_close(domain);
    if (domain->accepted_count >= FIP_ACCEPT_MAX) {
        pthread_mutex_unlock(&domain->conn_lock);
        FI_WARN_SPARSE(&fip_provider, FI_LOG_EP_CTRL,
                       "connection refused: %d connections already\n",
                       FIP_ACCEPT_MAX);
        ucp_listener_reject(domain->ucp_listener, request);
        return;
    }
    params.field_mask      = UCP_EP_PARAM_FIELD_CONN_REQUEST |
                             UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                             UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.conn_request    = request;
    params.err_mode        = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb  = fip_peer_accepted_err;
    params.err_handler.arg = domain;
    status = ucp_ep_create(domain->ucp_worker, &params, &ep);
    if (status == UCS_OK) {
        domain->accepted[domain->accepted_count++] = ep;
    }
    pthread_mutex_unlock(&domain->conn_lock);
}

/* wait for a UCP request, bounded; 1 if it ended */
static int fip_peer_ucp_wait(fip_domain_t *domain, ucs_status_ptr_t req,
                             int64_t deadline);

/* Wait, bounded, until the new endpoint's wireup has ended (a flush ends
 * after it; over a published worker address it sends the peer its own
 * address, and the peer's side can answer once it has it): a client's endpoint to a socket address starts on the lanes
 * of the first transport wireup finds (tcp) and moves to those both sides
 * share (posix, sysv) when wireup ends. A message sent meanwhile waited for
 * the new lanes with a protocol chosen for the old ones: UCX 1.13 then sent
 * a 164-byte message as a posix short message (at most 100 bytes), failed
 * it ("Invalid am_short_iov length") and the message was lost
 * (msg2p.unexpected_messages_keep_their_order, shm, automatic progress).
 * Keys unpacked meanwhile knew only the first lanes' memory domains. A peer
 * that does not answer in time leaves the endpoint as it is. */
static void fip_peer_wireup_wait(fip_domain_t *domain, ucp_ep_h ep)
{
    ucp_request_param_t param = {0};
    ucs_status_ptr_t flush;

    flush = ucp_ep_flush_nbx(ep, &param);
    if (UCS_PTR_IS_PTR(flush)) {
        /* a closing domain connecting back to its callers (fip_caller.c)
         * waits less: the close goes on without it */
        (void)fip_peer_ucp_wait(domain, flush,
                                fip_wait_deadline(domain->closing ?
                                                  FIP_CALLER_TIMEOUT_MS :
                                                  FIP_RESOLVE_TIMEOUT_MS));
        ucp_request_free(flush);
    }
}

/* the UCP endpoint to the domain a same-host address names, by the worker
 * address it published (fip_publish.c) */
static int fip_peer_create_local(fip_domain_t *domain, fip_peer_t *peer,
                                 ucp_ep_params_t *params)
{
    fip_addr_t addr = {0};
    void *worker_addr;
    size_t len;
    ucs_status_t status;
    int ret;

    addr.family = FIP_ADDR_FAMILY_LOCAL;
    addr.pid    = peer->pid;
    addr.nonce  = peer->nonce;
    ret         = fip_publish_read(&addr, &worker_addr, &len);
    if (ret != 0) {
        return ret;
    }
    params->field_mask |= UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params->address     = worker_addr;
    /* see fip_peer_connect for the lock */
    pthread_mutex_lock(&domain->ucp_lock);
    status = ucp_ep_create(domain->ucp_worker, params, &peer->ucp_ep);
    pthread_mutex_unlock(&domain->ucp_lock);
    free(worker_addr);
    if (status != UCS_OK) {
        peer->ucp_ep = NULL;
        return -FI_ECONNREFUSED;
    }
    return 0;
}

static int fip_peer_connect(fip_domain_t *domain, fip_peer_t *peer)
{
    ucp_ep_params_t params      = {0};
    fiatomic_ep_params_t fparams = {0};
    struct sockaddr_in sin       = {0};
    ucs_status_t status;
    int ret;

    params.field_mask        = UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                               UCP_EP_PARAM_FIELD_ERR_HANDLER;
    /* a dead peer fails operations instead of hanging them */
    params.err_mode          = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb    = fip_peer_err;
    params.err_handler.arg   = peer;
    if (peer->family == FIP_ADDR_FAMILY_LOCAL) {
        ret = fip_peer_create_local(domain, peer, &params);
        if (ret != 0) {
            return ret;
        }
        goto created;
    }
    sin.sin_family           = AF_INET;
    sin.sin_addr.s_addr      = htonl(peer->ipv4);
    sin.sin_port             = htons(peer->port);
    params.field_mask       |= UCP_EP_PARAM_FIELD_FLAGS |
                               UCP_EP_PARAM_FIELD_SOCK_ADDR;
    params.flags             = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    params.sockaddr.addr     = (const struct sockaddr*)&sin;
    params.sockaddr.addrlen  = sizeof(sin);
    /* wireup starts with the endpoint, and fiatomic_ep_create reads its
     * lanes: no other thread progresses the worker meanwhile (ucp_lock, not
     * held while this thread waits for wireup, which progresses) */
    pthread_mutex_lock(&domain->ucp_lock);
    status = ucp_ep_create(domain->ucp_worker, &params, &peer->ucp_ep);
    pthread_mutex_unlock(&domain->ucp_lock);
    if (status != UCS_OK) {
        peer->ucp_ep = NULL;
        return -FI_ECONNREFUSED;
    }
created:
    fip_peer_wireup_wait(domain, peer->ucp_ep);

    fparams.field_mask = FIATOMIC_EP_PARAM_FIELD_MSG_ORDER |
                         FIATOMIC_EP_PARAM_FIELD_FLAGS;
    fparams.msg_order  = FIP_MSG_ORDER;
    /* said, not left to the library to read: a wireup that did not end in
     * time leaves the endpoint without the keepalive lane that tells it */
    fparams.flags      = FIATOMIC_EP_FLAG_PEER_ERR_MODE;
    pthread_mutex_lock(&domain->ucp_lock);
    status = fiatomic_ep_create(domain->fia, peer->ucp_ep, &fparams,
                                &peer->fep);
    pthread_mutex_unlock(&domain->ucp_lock);
    if (status != UCS_OK) {
        peer->fep = NULL;
        return fiatomic_status_to_fi_errno(status);
    }
    return 0;
}

/* wait for a UCP request, bounded; 1 if it ended */
static int fip_peer_ucp_wait(fip_domain_t *domain, ucs_status_ptr_t req,
                             int64_t deadline)
{
    while (ucp_request_check_status(req) == UCS_INPROGRESS) {
        if (fip_now_ns() >= deadline) {
            return 0;
        }
        fip_domain_worker_progress(domain);
    }
    return 1;
}

/* End a UCP endpoint, bounded (the progress thread is stopped): flushed
 * first, then closed by force. The flush sends what this side still owes
 * the peer, the transport's acknowledgements of the peer's writes included:
 * a forced close alone dropped them, and a peer that counts a write once it
 * is acknowledged (delivery complete) saw it fail when this process closed
 * its domain right after seeing the data (Sandia OpenSHMEM's last barrier).
 * The forced close does not wait for the peer (a flushing close waits for
 * its disconnect, which a peer that is not progressing never gives) and
 * ends the flush if the deadline passed. */
void fip_peer_ucp_close(fip_domain_t *domain, ucp_ep_h ep)
{
    ucp_request_param_t param = {0};
    int64_t deadline = fip_wait_deadline(1000);
    ucs_status_ptr_t flush, req;

    fip_admit_forget(domain, ep);
    flush = ucp_ep_flush_nbx(ep, &param);
    if (UCS_PTR_IS_PTR(flush)) {
        (void)fip_peer_ucp_wait(domain, flush, deadline);
    }

    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    req = ucp_ep_close_nbx(ep, &param);
    if (UCS_PTR_IS_PTR(req)) {
        (void)fip_peer_ucp_wait(domain, req, fip_wait_deadline(1000));
        ucp_request_free(req);
    }
    if (UCS_PTR_IS_PTR(flush)) {
        ucp_request_free(flush);
    }
}

/* flush every endpoint of the worker, bounded (the progress thread is
 * stopped) */
static void fip_peer_worker_flush(fip_domain_t *domain)
{
    ucp_request_param_t param = {0};
    ucs_status_ptr_t flush;

    flush = ucp_worker_flush_nbx(domain->ucp_worker, &param);
    if (UCS_PTR_IS_PTR(flush)) {
        (void)fip_peer_ucp_wait(domain, flush, fip_wait_deadline(1000));
        ucp_request_free(flush);
    }
}

static void fip_peer_free(fip_domain_t *domain, fip_peer_t *peer)
{
    fip_rkey_t *rkey;
    int i;

    for (i = 0; i < FIP_PEER_KEY_BUCKETS; ++i) {
        while ((rkey = peer->keys[i]) != NULL) {
            peer->keys[i] = rkey->next;
            fiatomic_rkey_release(peer->fep, rkey->fkey);
            free(rkey);
        }
    }
    if (peer->fep != NULL) {
        fiatomic_ep_destroy(peer->fep);
    }
    if (peer->ucp_ep != NULL) {
        fip_peer_ucp_close(domain, peer->ucp_ep);
    }
    free(peer);
}

int fip_peer_get(fip_domain_t *domain, const fip_addr_t *addr,
                 fip_peer_t **peer_p)
{
    fip_peer_t *peer;
    int ret;

    /* a domain reaches the peers of its own family only: one over
     * same-host transports has no listener a peer could connect to, and
     * one with a listener published no worker address */
    if (addr->family != (domain->local ? FIP_ADDR_FAMILY_LOCAL :
                                         FIP_ADDR_FAMILY_IPV4)) {
        return -FI_EINVAL;
    }
    pthread_mutex_lock(&domain->peer_lock);
    for (peer = domain->peers; peer != NULL; peer = peer->next) {
        if ((peer->family == FIP_ADDR_FAMILY_LOCAL) ?
            ((peer->pid == addr->pid) && (peer->nonce == addr->nonce)) :
            ((peer->ipv4 == addr->ipv4) && (peer->port == addr->port))) {
            break;
        }
    }
    if (peer == NULL) {
        peer = calloc(1, sizeof(*peer));
        if (peer == NULL) {
            pthread_mutex_unlock(&domain->peer_lock);
            return -FI_ENOMEM;
        }
        peer->domain = domain;
        peer->family = addr->family;
        peer->ipv4   = addr->ipv4;
        peer->port   = addr->port;
        peer->pid    = addr->pid;
        peer->nonce  = addr->nonce;
        ret          = fip_peer_connect(domain, peer);
        if (ret != 0) {
            pthread_mutex_unlock(&domain->peer_lock);
            fip_peer_free(domain, peer);
            return ret;
        }
        peer->next    = domain->peers;
        /* published whole: the closing handshake's handler reads the list
         * without the lock (fip_peer_gone) */
        __atomic_store_n(&domain->peers, peer, __ATOMIC_RELEASE);
        ++domain->peer_count;
        /* who this connection is for the peer, to be confirmed over the
         * peer's connection back (fip_caller.c): greeted once in the list,
         * where the question about it is answered from (a question that
         * came before found no such connection, and the peer took this
         * domain's messages to have no source) */
        fip_caller_hello(domain, peer);
    }
    pthread_mutex_unlock(&domain->peer_lock);

    ret = fip_peer_failed_errno(peer);
    if (ret != 0) {
        return ret;
    }
    *peer_p = peer;
    return 0;
}

void fip_peer_gone(fip_domain_t *domain, ucp_ep_h ep)
{
    fip_peer_t *peer;

    /* inside UCP's progress, where peer_lock may not be taken (a thread
     * connecting holds it while it progresses): peers are added whole at
     * the head and freed only at close, after progress stopped */
    for (peer = __atomic_load_n(&domain->peers, __ATOMIC_ACQUIRE);
         peer != NULL; peer = peer->next) {
        if (peer->ucp_ep == ep) {
            __atomic_store_n(&peer->failed, 1, __ATOMIC_RELEASE);
        }
    }
}

static size_t fip_peer_key_bucket(uint64_t key)
{
    key ^= key >> 29;
    key *= 0xbf58476d1ce4e5b9ULL;
    key ^= key >> 32;
    return key % FIP_PEER_KEY_BUCKETS;
}

/* under peer_lock */
static fip_rkey_t *fip_peer_key_find(fip_peer_t *peer, uint64_t key)
{
    fip_rkey_t *rkey;

    for (rkey = peer->keys[fip_peer_key_bucket(key)]; rkey != NULL;
         rkey = rkey->next) {
        if (rkey->key == key) {
            return rkey;
        }
    }
    return NULL;
}

/* ask the peer, unpack, and enter the key; under peer_lock */
static int fip_peer_key_resolve(fip_domain_t *domain, fip_peer_t *peer,
                                uint64_t key, fip_rkey_t **rkey_p)
{
    fip_key_reply_t reply = {0};
    fip_rkey_t *rkey;
    ucs_status_t status;
    size_t bucket;
    int ret;

    if (peer->key_count >= FIP_PEER_KEYS_MAX) {
        return -FI_ENOSPC;
    }
    rkey = calloc(1, sizeof(*rkey));
    if (rkey == NULL) {
        return -FI_ENOMEM;
    }
    ret = fip_key_request(domain, peer, key, &reply);
    if (ret != 0) {
        goto err_free;
    }
    rkey->vaddr       = reply.vaddr;
    rkey->length      = reply.length;
    rkey->remote_base = reply.remote_base;
    rkey->access      = reply.access;
    /* a reply that libfiatomic does not take names nothing */
    pthread_mutex_lock(&domain->ucp_lock); /* it reads the lanes again */
    status = fiatomic_rkey_unpack(peer->fep, reply.data, reply.fkey_len,
                                  &rkey->fkey);
    pthread_mutex_unlock(&domain->ucp_lock);
    if (status != UCS_OK) {
        ret = -FI_ENOKEY;
        goto err_free_data;
    }
    free(reply.data);
    rkey->key         = key;
    bucket            = fip_peer_key_bucket(key);
    rkey->next        = peer->keys[bucket];
    peer->keys[bucket] = rkey;
    ++peer->key_count;
    *rkey_p = rkey;
    return 0;

err_free_data:
    free(reply.data);
err_free:
    free(rkey);
    return ret;
}

int fip_peer_key(fip_domain_t *domain, fip_peer_t *peer, uint64_t key,
                 uint64_t addr, uint64_t len, uint64_t access,
                 uint64_t *fkey_p, uint64_t *raddr_p)
{
    fip_rkey_t *rkey;
    uint64_t offset;
    int ret = 0;

    pthread_mutex_lock(&domain->peer_lock);
    rkey = fip_peer_key_find(peer, key);
    if (rkey == NULL) {
        ret = fip_peer_key_resolve(domain, peer, key, &rkey);
    }
    if (ret == 0) {
        offset = addr - rkey->remote_base;
        if ((addr < rkey->remote_base) || (offset >= rkey->length) ||
            (len > rkey->length - offset)) {
            ret = -FI_EINVAL;
        } else if ((access & rkey->access) != access) {
            ret = -FI_EACCES;
        } else {
            *raddr_p = rkey->vaddr + offset;
            *fkey_p  = rkey->fkey;
        }
    }
    pthread_mutex_unlock(&domain->peer_lock);
    return ret;
}

void fip_peer_close_all(fip_domain_t *domain)
{
    fip_peer_t *peer;
    ucp_ep_h ep;

    domain->closing = 1;
    /* the peers have read what this side sent them, on every connection
     * (without a listener, to the peers that connected to this domain on
     * its connection back to each, fip_caller.c), before it goes */
    fip_bye_all(domain);
    fip_caller_close_all(domain);
    /* without a listener, the connections peers made to this domain are
     * UCP's own (no accept): what this side still owes them, answers and
     * acknowledgements, goes out before the worker does */
    if (domain->local) {
        fip_peer_worker_flush(domain);
    }
    while ((peer = domain->peers) != NULL) {
        domain->peers = peer->next;
        fip_peer_free(domain, peer);
    }
    domain->peer_count = 0;
    /* one at a time off the end: a peer that leaves meanwhile (its error
     * callback, in this thread's progress) moves its own from one list to
     * the other */
    for (;;) {
        pthread_mutex_lock(&domain->conn_lock);
        ep = (domain->accepted_count > 0) ?
             domain->accepted[--domain->accepted_count] :
             (domain->gone_count > 0) ?
             domain->accepted_gone[--domain->gone_count] : NULL;
        pthread_mutex_unlock(&domain->conn_lock);
        if (ep == NULL) {
            break;
        }
        fip_peer_ucp_close(domain, ep);
    }
}
