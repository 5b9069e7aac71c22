/**
 * The connections peers made to a domain without a listener (same-host
 * addresses, fip_publish.c). A listener's domain accepts each one
 * (fip_peer_accept) and so asks its peer, when it closes, to read what it
 * still has on it (fip_bye.c); here the peer's endpoint reaches this
 * domain's worker through UCP alone, whose side of it is UCP's own (an
 * endpoint the program never sees, destroyed by UCP when the peer fails:
 * not one to keep). So a peer that connects says who it is (FIP_AM_HELLO:
 * its process id and its domain's nonce, which name its published worker
 * address), and a closing domain first connects back to each caller that
 * is still there: UCP pairs that endpoint with the one the caller's
 * connection made here (the same two workers, each one's first to the
 * other), and the closing handshake then runs on it as on a connection
 * this domain made. Without it a peer that closed the moment it saw its
 * data left the caller's last operations waiting for ever (its messages
 * still queued for the peer's full FIFO). Callers are kept once each,
 * capped (FIP_ACCEPT_MAX); a message of another size or without the magic
 * word is ignored.
 */
#include "fip.h"

#include <string.h>
#include <unistd.h>

#define FIP_HELLO_MAGIC 0x66697048u /* "fipH" */

static ucs_status_t fip_caller_handler(void *arg, const void *header,
                                       size_t header_length, void *data,
                                       size_t length,
                                       const ucp_am_recv_param_t *param)
{
    fip_domain_t *domain = arg;
    fip_hello_msg_t msg;
    size_t i;

    if ((header_length != sizeof(msg)) || (length != 0)) {
        return UCS_OK;
    }
    memcpy(&msg, header, sizeof(msg));
    if ((msg.magic != FIP_HELLO_MAGIC) || (msg.pid == 0) ||
        (msg.nonce == 0)) {
        return UCS_OK;
    }
    pthread_mutex_lock(&domain->conn_lock);
    for (i = 0; i < domain->caller_count; ++i) {
        if ((domain->callers[i].pid == msg.pid) &&
            (domain->callers[i].nonce == msg.nonce)) {
            break;
        }
    }
    if ((i == domain->caller_count) && (i < FIP_ACCEPT_MAX)) {
        domain->callers[i].pid   = msg.pid;
        domain->callers[i].nonce = msg.nonce;
        ++domain->caller_count;
    }
    pthread_mutex_unlock(&domain->conn_lock);
    return UCS_OK;
}

int fip_caller_init(fip_domain_t *domain)
{
    return fip_domain_am_handler_set(domain, FIP_AM_HELLO,
                                     fip_caller_handler);
}

void fip_caller_hello(fip_domain_t *domain, fip_peer_t *peer)
{
    ucp_request_param_t param = {0};
    ucs_status_ptr_t req;

    /* in the peer, which lives until its endpoint is flushed and closed */
    peer->hello.magic = FIP_HELLO_MAGIC;
    peer->hello.pid   = (uint32_t)getpid();
    peer->hello.nonce = domain->nonce;
    pthread_mutex_lock(&domain->ucp_lock);
    req = ucp_am_send_nbx(peer->ucp_ep, FIP_AM_HELLO, &peer->hello,
                          sizeof(peer->hello), NULL, 0, &param);
    pthread_mutex_unlock(&domain->ucp_lock);
    if (UCS_PTR_IS_PTR(req)) {
        ucp_request_free(req); /* completes on its own */
    }
}

void fip_caller_connect_all(fip_domain_t *domain)
{
    int64_t deadline = fip_wait_deadline(FIP_CALLERS_TIMEOUT_MS);
    fip_addr_t addr  = {0};
    fip_peer_t *peer;
    size_t i;

    /* the progress thread is stopped: no caller is added meanwhile but
     * by this thread's own progress. Bounded: callers that do not answer
     * in time are not asked (fip_peer_wireup_wait) */
    domain->closing = 1;
    addr.family     = FIP_ADDR_FAMILY_LOCAL;
    addr.host       = fip_publish_host();
    for (i = 0; (i < domain->caller_count) && (fip_now_ns() < deadline);
         ++i) {
        addr.pid   = domain->callers[i].pid;
        addr.nonce = domain->callers[i].nonce;
        /* a caller that is gone, or refuses, is not asked */
        (void)fip_peer_get(domain, &addr, &peer);
    }
}
