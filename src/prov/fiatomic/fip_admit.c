/**
 * Job admission: with a job key (the domain attribute auth_key, or the
 * provider variable FI_FIATOMIC_AUTH_KEY; the attribute wins) a connection
 * a peer opens to the domain is acted on only once its first message
 * proved that the peer holds the same key. The proof is a SipHash-2-4 MAC
 * (fip_mac.c) under a 128-bit key derived from the job key's bytes, over
 * the connection's random token and the address of the domain greeted
 * (its listener, or its process and domain nonce): a greeting
 * (FIP_AM_HELLO) carries it, and so does the question of a claim's check
 * (FIP_AM_VERIFY), which a domain asks over a connection of its own. Every
 * handler of a request (messages, the key service, RMA, the closing
 * handshake, the claim's question) asks fip_admit_gate first; answers are
 * taken only on connections this domain made, to questions of random ids
 * (as without a key). A connection whose first message is not a greeting
 * with a valid proof is refused: what it sends is dropped and logged, it
 * is told (FIP_AM_REFUSED, so that its domain fails its operations with
 * -FI_EACCES rather than waiting) and closed shortly after, outside UCP's
 * callbacks. A connection this domain made itself is never closed here:
 * a request on it without admission is dropped. Without a key nothing
 * changes. The key proves membership, not identity (fip_caller.c does
 * that), and the traffic is not encrypted: fi_fiatomic(7), SECURITY.
 */
#include "fip.h"
#include "fip_mac.h"

#include <rdma/providers/fi_log.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FIP_REFUSED_MAGIC 0x66697052u /* "fipR" */
#define FIP_MAC_HELLO     0x48u       /* what a MAC is of: 'H' */
#define FIP_MAC_VERIFY    0x56u       /* 'V' */

typedef struct fip_admit_conn {
    struct fip_admit_conn *next;
    ucp_ep_h              ep;
    int                   admitted;   /* else refused */
} fip_admit_conn_t;

typedef struct fip_admit_close {
    ucp_ep_h ep;
    int64_t  at;
} fip_admit_close_t;

struct fip_admit {
    uint8_t           key[16];
    /* taken inside UCP's callbacks: never held across a UCP call */
    pthread_mutex_t   lock;
    fip_admit_conn_t  *buckets[FIP_ADMIT_BUCKETS];
    size_t            count;
    fip_admit_close_t closes[FIP_ADMIT_CLOSE_MAX];
    size_t            close_count;
};

typedef struct fip_refused_msg {
    uint32_t magic;
    uint32_t reserved;
} fip_refused_msg_t;

static size_t fip_admit_bucket(ucp_ep_h ep)
{
    uintptr_t v = (uintptr_t)ep;

    return (size_t)((v >> 4) ^ (v >> 12)) % FIP_ADMIT_BUCKETS;
}

static fip_admit_conn_t **fip_admit_find(struct fip_admit *admit,
                                         ucp_ep_h ep)
{
    fip_admit_conn_t **p = &admit->buckets[fip_admit_bucket(ep)];

    while ((*p != NULL) && ((*p)->ep != ep)) {
        p = &(*p)->next;
    }
    return p;
}

/* the MAC of what `tag` says, over the token, a number and the address of
 * the domain it is for (listener, or process and domain nonce) */
static uint64_t fip_admit_mac(const struct fip_admit *admit, uint32_t tag,
                              uint64_t token, uint64_t id, uint64_t addr_a,
                              uint64_t addr_b)
{
    const uint64_t words[5] = {tag, token, id, addr_a, addr_b};
    uint8_t buf[sizeof(words)];
    size_t i, j;

    /* little-endian whatever the host: both ends compute the same bytes */
    for (i = 0; i < 5; ++i) {
        for (j = 0; j < 8; ++j) {
            buf[8 * i + j] = (uint8_t)(words[i] >> (8 * j));
        }
    }
    return fip_siphash24(admit->key, buf, sizeof(buf));
}

/* this domain's address, as the MACs of what is sent to it name it */
static void fip_admit_self(fip_domain_t *domain, uint64_t *a, uint64_t *b)
{
    if (domain->local) {
        *a = (uint32_t)getpid();
        *b = domain->nonce;
    } else {
        *a = domain->listen_ipv4;
        *b = domain->listen_port;
    }
}

static int fip_admit_mac_equal(uint64_t a, uint64_t b)
{
    uint64_t d = a ^ b;

    /* no early exit on the first differing byte */
    d |= d >> 32;
    d |= d >> 16;
    d |= d >> 8;
    return (d & 0xff) == 0;
}

/* whether this domain made `ep` (its connections to peers, its checks'
 * connections back, the callers kept) or closes it elsewhere (a listener's
 * connection whose peer left); the peers' list is read as fip_peer_gone
 * does */
static int fip_admit_own_ep(fip_domain_t *domain, ucp_ep_h ep)
{
    fip_peer_t *peer;
    size_t i;
    int own = 0;

    for (peer = __atomic_load_n(&domain->peers, __ATOMIC_ACQUIRE);
         peer != NULL; peer = peer->next) {
        if (peer->ucp_ep == ep) {
            return 1;
        }
    }
    pthread_mutex_lock(&domain->conn_lock);
    for (i = 0; (i < FIP_VERIFY_MAX) && !own; ++i) {
        own = (domain->verifies[i].ep == ep);
    }
    for (i = 0; (i < domain->verify_gone_count) && !own; ++i) {
        own = (domain->verify_gone[i] == ep);
    }
    for (i = 0; (i < domain->caller_count) && !own; ++i) {
        own = (domain->callers[i].ep == ep);
    }
    for (i = 0; (i < domain->gone_count) && !own; ++i) {
        own = (domain->accepted_gone[i] == ep);
    }
    pthread_mutex_unlock(&domain->conn_lock);
    return own;
}

/* refuse the connection: drop what it sent, tell it, close it shortly
 * (not inside its own callback); a connection this domain made is only
 * dropped from */
static void fip_admit_refuse(fip_domain_t *domain, ucp_ep_h ep,
                             const char *what, const char *why)
{
    struct fip_admit *admit = domain->admit;
    fip_refused_msg_t *msg;
    fip_admit_conn_t **p, *conn;
    int known, own, queued = 0;
    size_t i;

    own = fip_admit_own_ep(domain, ep);
    pthread_mutex_lock(&admit->lock);
    p     = fip_admit_find(admit, ep);
    known = (*p != NULL);
    if (!known && !own && (admit->close_count < FIP_ADMIT_CLOSE_MAX)) {
        admit->closes[admit->close_count].ep   = ep;
        admit->closes[admit->close_count++].at =
            fip_wait_deadline(FIP_ADMIT_CLOSE_MS);
        queued = 1;
    }
    /* remembered refused until closed (then forgotten), or for good when
     * this domain made it; one not queued for closing is refused again at
     * its next message, so that refusals do not fill the table */
    if (!known && (queued || own) && (admit->count < FIP_ADMIT_MAX) &&
        ((conn = calloc(1, sizeof(*conn))) != NULL)) {
        conn->ep = ep;
        *p       = conn;
        ++admit->count;
    }
    pthread_mutex_unlock(&admit->lock);
    FI_WARN_SPARSE(&fip_provider, FI_LOG_EP_CTRL,
                   "%s dropped: the connection is not admitted (%s)%s\n",
                   what, why, queued ? "; it is closed" : "");
    if (!queued) {
        return;
    }
    /* no longer the closing handshake's nor a slot of the listener's */
    pthread_mutex_lock(&domain->conn_lock);
    for (i = 0; i < domain->accepted_count; ++i) {
        if (domain->accepted[i] == ep) {
            domain->accepted[i] = domain->accepted[--domain->accepted_count];
            break;
        }
    }
    pthread_mutex_unlock(&domain->conn_lock);
    msg = calloc(1, sizeof(*msg));
    if (msg != NULL) {
        msg->magic = FIP_REFUSED_MAGIC;
        (void)fip_reply_send(domain, ep, FIP_AM_REFUSED, msg, sizeof(*msg),
                             0);
    }
}

/* admit `ep` when it is new; 1 if it is admitted now */
static int fip_admit_add(fip_domain_t *domain, ucp_ep_h ep)
{
    struct fip_admit *admit = domain->admit;
    fip_admit_conn_t **p, *conn;
    int ret = 0;

    pthread_mutex_lock(&admit->lock);
    p = fip_admit_find(admit, ep);
    if (*p != NULL) {
        ret = (*p)->admitted;
    } else if ((admit->count < FIP_ADMIT_MAX) &&
               ((conn = calloc(1, sizeof(*conn))) != NULL)) {
        conn->ep       = ep;
        conn->admitted = 1;
        *p             = conn;
        ++admit->count;
        ret = 1;
    }
    pthread_mutex_unlock(&admit->lock);
    return ret;
}

/* 1 if `ep` is admitted; else what it sent is dropped, and a connection
 * not seen before refused for `why` */
static int fip_admit_check(fip_domain_t *domain, ucp_ep_h ep,
                           const char *what, const char *why)
{
    struct fip_admit *admit = domain->admit;
    fip_admit_conn_t **p;
    int known, admitted;

    pthread_mutex_lock(&admit->lock);
    p        = fip_admit_find(admit, ep);
    known    = (*p != NULL);
    admitted = known && (*p)->admitted;
    pthread_mutex_unlock(&admit->lock);
    if (admitted) {
        return 1;
    }
    if (known) {
        FI_WARN_SPARSE(&fip_provider, FI_LOG_EP_CTRL,
                       "%s dropped: its connection was refused\n", what);
        return 0;
    }
    fip_admit_refuse(domain, ep, what, why);
    return 0;
}

int fip_admit_gate(fip_domain_t *domain, ucp_ep_h ep, const char *what)
{
    return (domain->admit == NULL) ||
           fip_admit_check(domain, ep, what,
                           "its first message was no greeting");
}

int fip_admit_gate_bye(fip_domain_t *domain, ucp_ep_h ep)
{
    /* a peer this domain connected to may say it closes on that
     * connection: it only ends this domain's use of it */
    return (domain->admit == NULL) || fip_admit_own_ep(domain, ep) ||
           fip_admit_gate(domain, ep, "closing handshake");
}

void fip_admit_hello_sign(fip_domain_t *domain, fip_peer_t *peer)
{
    int local = (peer->family == FIP_ADDR_FAMILY_LOCAL);

    peer->hello.mac = (domain->admit == NULL) ? 0 :
        fip_admit_mac(domain->admit, FIP_MAC_HELLO, peer->hello.token, 0,
                      local ? peer->pid : peer->ipv4,
                      local ? peer->nonce : peer->port);
}

int fip_admit_hello_check(fip_domain_t *domain, ucp_ep_h ep,
                          const fip_hello_msg_t *msg)
{
    uint64_t a, b;

    if (domain->admit == NULL) {
        return 1;
    }
    fip_admit_self(domain, &a, &b);
    if (fip_admit_mac_equal(msg->mac,
                            fip_admit_mac(domain->admit, FIP_MAC_HELLO,
                                          msg->token, 0, a, b))) {
        /* admitted now, or before (a second greeting, which fip_caller.c
         * refuses as such) */
        return fip_admit_add(domain, ep) ||
               fip_admit_check(domain, ep, "greeting",
                                "no room to admit it");
    }
    if (fip_admit_check(domain, ep, "greeting",
                        "its proof is not of this job")) {
        FI_WARN_SPARSE(&fip_provider, FI_LOG_EP_CTRL,
                       "second greeting dropped: its proof is not of this "
                       "job\n");
    }
    return 0;
}

uint64_t fip_admit_verify_sign(fip_domain_t *domain, const fip_addr_t *asked,
                               uint64_t token, uint64_t req_id)
{
    int local = (asked->family == FIP_ADDR_FAMILY_LOCAL);

    return (domain->admit == NULL) ? 0 :
           fip_admit_mac(domain->admit, FIP_MAC_VERIFY, token, req_id,
                         local ? asked->pid : asked->ipv4,
                         local ? asked->nonce : asked->port);
}

int fip_admit_verify_check(fip_domain_t *domain, ucp_ep_h ep,
                           uint64_t token, uint64_t req_id, uint64_t mac)
{
    uint64_t a, b;

    if (domain->admit == NULL) {
        return 1;
    }
    fip_admit_self(domain, &a, &b);
    if (fip_admit_mac_equal(mac, fip_admit_mac(domain->admit,
                                               FIP_MAC_VERIFY, token,
                                               req_id, a, b)) &&
        fip_admit_add(domain, ep)) {
        return 1;
    }
    if (fip_admit_check(domain, ep, "claim check",
                        "its proof is not of this job")) {
        FI_WARN_SPARSE(&fip_provider, FI_LOG_EP_CTRL,
                       "claim check dropped: its proof is not of this "
                       "job\n");
    }
    return 0;
}

void fip_admit_forget(fip_domain_t *domain, ucp_ep_h ep)
{
    struct fip_admit *admit = domain->admit;
    fip_admit_conn_t **p, *conn;

    if (admit == NULL) {
        return;
    }
    pthread_mutex_lock(&admit->lock);
    p = fip_admit_find(admit, ep);
    if ((conn = *p) != NULL) {
        *p = conn->next;
        --admit->count;
        free(conn);
    }
    pthread_mutex_unlock(&admit->lock);
}

/* close a refused connection without waiting (a forced close completes
 * on its own); its handle then forgotten, as UCP may give it again */
static void fip_admit_close(fip_domain_t *domain, ucp_ep_h ep)
{
    ucp_request_param_t param = {0};
    ucs_status_ptr_t req;

    fip_admit_forget(domain, ep);
    fip_caller_conn_gone(domain, ep);
    fip_msg_stream_forget(domain, ep);
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    req = ucp_ep_close_nbx(ep, &param);
    if (UCS_PTR_IS_PTR(req)) {
        ucp_request_free(req);
    }
}

static void fip_admit_close_due(fip_domain_t *domain, int all)
{
    struct fip_admit *admit = domain->admit;
    int64_t now             = fip_now_ns();
    ucp_ep_h ep;
    size_t i;

    if ((admit == NULL) ||
        (__atomic_load_n(&admit->close_count, __ATOMIC_RELAXED) == 0)) {
        return;
    }
    for (;;) {
        ep = NULL;
        pthread_mutex_lock(&admit->lock);
        for (i = 0; i < admit->close_count; ++i) {
            if (all || (now >= admit->closes[i].at)) {
                ep = admit->closes[i].ep;
                admit->closes[i] = admit->closes[--admit->close_count];
                break;
            }
        }
        pthread_mutex_unlock(&admit->lock);
        if (ep == NULL) {
            return;
        }
        fip_admit_close(domain, ep);
    }
}

void fip_admit_sweep(fip_domain_t *domain)
{
    fip_admit_close_due(domain, 0);
}

void fip_admit_close_all(fip_domain_t *domain)
{
    fip_admit_close_due(domain, 1);
}

/* the domain a connection this domain made refused it: its operations
 * there fail with -FI_EACCES from now on */
static ucs_status_t fip_admit_refused_handler(void *arg, const void *header,
                                              size_t header_length,
                                              void *data, size_t length,
                                              const ucp_am_recv_param_t
                                              *param)
{
    fip_domain_t *domain = arg;
    fip_refused_msg_t msg;
    fip_peer_t *peer;
    char str[FIP_ADDR_STRLEN];
    fip_addr_t addr = {0};

    if ((header_length != sizeof(msg)) || (length != 0) ||
        !(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
        return UCS_OK;
    }
    memcpy(&msg, header, sizeof(msg));
    if ((msg.magic != FIP_REFUSED_MAGIC) || (msg.reserved != 0)) {
        return UCS_OK;
    }
    for (peer = __atomic_load_n(&domain->peers, __ATOMIC_ACQUIRE);
         peer != NULL; peer = peer->next) {
        if (peer->ucp_ep == param->reply_ep) {
            addr.family = peer->family;
            addr.ipv4   = peer->ipv4;
            addr.port   = peer->port;
            addr.pid    = peer->pid;
            addr.nonce  = peer->nonce;
            fip_addr_str(&addr, str, sizeof(str));
            FI_WARN(&fip_provider, FI_LOG_EP_CTRL,
                    "%s refused this domain's connection: not of its job "
                    "(another job key, or none)\n", str);
            __atomic_store_n(&peer->refused, 1, __ATOMIC_RELEASE);
            __atomic_store_n(&peer->failed, 1, __ATOMIC_RELEASE);
        }
    }
    return UCS_OK;
}

/* the job key: the domain's attribute, else FI_FIATOMIC_AUTH_KEY */
static int fip_admit_job_key(const struct fi_info *info, const void **key,
                             size_t *len)
{
    char *param = NULL;

    if ((info != NULL) && (info->domain_attr != NULL) &&
        (info->domain_attr->auth_key_size != 0)) {
        *key = info->domain_attr->auth_key;
        *len = info->domain_attr->auth_key_size;
        return (*key != NULL) && (*len <= FIP_AUTH_KEY_MAX);
    }
    if ((fi_param_get_str(&fip_provider, FIP_AUTH_KEY_PARAM, &param) == 0) &&
        (param != NULL) && (param[0] != '\0')) {
        *key = param;
        *len = strlen(param);
        return *len <= FIP_AUTH_KEY_MAX;
    }
    *key = NULL;
    *len = 0;
    return 1;
}

int fip_admit_init(fip_domain_t *domain, const struct fi_info *info)
{
    const void *key;
    size_t len;

    if (!fip_admit_job_key(info, &key, &len)) {
        return -FI_EINVAL;
    }
    if (key != NULL) {
        domain->admit = calloc(1, sizeof(*domain->admit));
        if (domain->admit == NULL) {
            return -FI_ENOMEM;
        }
        pthread_mutex_init(&domain->admit->lock, NULL);
        fip_mac_key_derive(key, len, domain->admit->key);
    }
    return 0;
}

int fip_admit_key_is(fip_domain_t *domain, const void *key, size_t len)
{
    uint8_t derived[16];
    int same;

    if ((domain->admit == NULL) || (key == NULL) ||
        (len > FIP_AUTH_KEY_MAX)) {
        return 0;
    }
    fip_mac_key_derive(key, len, derived);
    same = !memcmp(derived, domain->admit->key, sizeof(derived));
    memset(derived, 0, sizeof(derived));
    return same;
}

int fip_admit_handler_init(fip_domain_t *domain)
{
    return fip_domain_am_handler_set(domain, FIP_AM_REFUSED,
                                     fip_admit_refused_handler);
}

void fip_admit_cleanup(fip_domain_t *domain)
{
    struct fip_admit *admit = domain->admit;
    fip_admit_conn_t *conn;
    size_t b;

    if (admit == NULL) {
        return;
    }
    for (b = 0; b < FIP_ADMIT_BUCKETS; ++b) {
        while ((conn = admit->buckets[b]) != NULL) {
            admit->buckets[b] = conn->next;
            free(conn);
        }
    }
    pthread_mutex_destroy(&admit->lock);
    memset(admit->key, 0, sizeof(admit->key));
    free(admit);
    domain->admit = NULL;
}
