/**
 * Connections to peer domains, made on first use: an operation to an
 * fi_addr_t names a peer domain's listener (fip_addr.c); the first one
 * creates a UCP endpoint to it by socket address and a libfiatomic
 * endpoint over that, cached per listener for every endpoint of the
 * domain. Every peer's libfiatomic endpoint orders same-address atomics
 * (FIP_MSG_ORDER). The keys a peer's regions go by are resolved once per
 * peer (fip_key.c) and cached here, capped per peer. The other direction,
 * connections peers make to this domain's listener, is accepted here too.
 */
#include "fip.h"

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
    /* the peer went away: its endpoint is closed with the domain, which
     * waits no more for its answer if it is closing */
    fip_bye_ep_gone(arg, ep);
}

void fip_peer_accept(fip_domain_t *domain, ucp_conn_request_h request)
{
    ucp_ep_params_t params = {0};
    ucs_status_t status;
    ucp_ep_h ep;

    pthread_mutex_lock(&domain->conn_lock);
    if (domain->accepted_count >= FIP_ACCEPT_MAX) {
        pthread_mutex_unlock(&domain->conn_lock);
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
 * after it): a client's endpoint to a socket address starts on the lanes
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
        (void)fip_peer_ucp_wait(domain, flush,
                                fip_wait_deadline(FIP_RESOLVE_TIMEOUT_MS));
        ucp_request_free(flush);
    }
}

static int fip_peer_connect(fip_domain_t *domain, fip_peer_t *peer)
{
    ucp_ep_params_t params      = {0};
    fiatomic_ep_params_t fparams = {0};
    struct sockaddr_in sin       = {0};
    ucs_status_t status;

    sin.sin_family           = AF_INET;
    sin.sin_addr.s_addr      = htonl(peer->ipv4);
    sin.sin_port             = htons(peer->port);
    params.field_mask        = UCP_EP_PARAM_FIELD_FLAGS |
                               UCP_EP_PARAM_FIELD_SOCK_ADDR |
                               UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                               UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.flags             = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    params.sockaddr.addr     = (const struct sockaddr*)&sin;
    params.sockaddr.addrlen  = sizeof(sin);
    /* a dead peer fails operations instead of hanging them */
    params.err_mode          = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb    = fip_peer_err;
    params.err_handler.arg   = peer;
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
static void fip_peer_ucp_close(fip_domain_t *domain, ucp_ep_h ep)
{
    ucp_request_param_t param = {0};
    int64_t deadline = fip_wait_deadline(1000);
    ucs_status_ptr_t flush, req;

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

static void fip_peer_free(fip_domain_t *domain, fip_peer_t *peer)
{
    fip_rkey_t *rkey;
    int i;

    for (i = 0; i < FIP_PEER_KEY_BUCKETS; ++i) {
        while ((rkey = peer->keys[i]) != NULL) {
            peer->keys[i] = rkey->next;
            fiatomic_rkey_release(peer->fep, rkey->fkey);
            ucp_rkey_destroy(rkey->ucp_rkey);
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

    pthread_mutex_lock(&domain->peer_lock);
    for (peer = domain->peers; peer != NULL; peer = peer->next) {
        if ((peer->ipv4 == addr->ipv4) && (peer->port == addr->port)) {
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
        peer->ipv4   = addr->ipv4;
        peer->port   = addr->port;
        ret          = fip_peer_connect(domain, peer);
        if (ret != 0) {
            pthread_mutex_unlock(&domain->peer_lock);
            fip_peer_free(domain, peer);
            return ret;
        }
        peer->next    = domain->peers;
        domain->peers = peer;
        ++domain->peer_count;
    }
    pthread_mutex_unlock(&domain->peer_lock);

    if (__atomic_load_n(&peer->failed, __ATOMIC_ACQUIRE)) {
        return -FI_EIO;
    }
    *peer_p = peer;
    return 0;
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
    /* a reply that libfiatomic or UCP does not take names nothing */
    pthread_mutex_lock(&domain->ucp_lock); /* it reads the lanes again */
    status = fiatomic_rkey_unpack(peer->fep, reply.data, reply.fkey_len,
                                  &rkey->fkey);
    pthread_mutex_unlock(&domain->ucp_lock);
    if (status != UCS_OK) {
        ret = -FI_ENOKEY;
        goto err_free_data;
    }
    status = ucp_ep_rkey_unpack(peer->ucp_ep,
                                (char*)reply.data + reply.fkey_len,
                                &rkey->ucp_rkey);
    if (status != UCS_OK) {
        fiatomic_rkey_release(peer->fep, rkey->fkey);
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
                 uint64_t *fkey_p, uint64_t *raddr_p, ucp_rkey_h *rkey_p)
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
            *rkey_p  = rkey->ucp_rkey;
        }
    }
    pthread_mutex_unlock(&domain->peer_lock);
    return ret;
}

void fip_peer_close_all(fip_domain_t *domain)
{
    fip_peer_t *peer;
    size_t i;

    /* the peers have read what this side sent them, on every connection,
     * before it goes */
    fip_bye_all(domain);
    while ((peer = domain->peers) != NULL) {
        domain->peers = peer->next;
        fip_peer_free(domain, peer);
    }
    domain->peer_count = 0;
    for (i = 0; i < domain->accepted_count; ++i) {
        fip_peer_ucp_close(domain, domain->accepted[i]);
    }
    domain->accepted_count = 0;
}
