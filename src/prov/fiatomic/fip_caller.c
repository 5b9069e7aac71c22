/**
 * Who is on a connection a peer made to this domain. A connection's
 * messages are believed to come from a peer domain only once that domain
 * confirmed it made the connection: what a connection says of itself is a
 * claim, and any process can connect and claim any address. The domain
 * that connects greets first (FIP_AM_HELLO, sent as a UCP reply so that
 * the handler has the connection): its own domain's address (listener, or
 * process and domain nonce) and a random token of this connection. The
 * domain greeted connects back to the address claimed (over a listener
 * when the connection's first message comes, without one at once), with
 * a connection of its own (the listener's socket address; the published
 * worker address of that process and nonce, fip_publish.c: only a domain
 * of this user on this host publishes one), and asks there
 * (FIP_AM_VERIFY) whether it made
 * a connection with that token to this domain; the answer
 * (FIP_AM_VERIFY_ACK) is taken only from that connection with the random
 * id of the question. Until then the connection's messages wait (held,
 * capped as every early message is, fip_msg.c); confirmed, they come from
 * that domain; refused, unanswered, or never claimed, they have no source
 * (FI_ADDR_NOTAVAIL: no receive directed to a peer takes them). At most
 * FIP_VERIFY_MAX checks run at a time, one per connection, each bounded by
 * FIP_VERIFY_TIMEOUT_MS; a claim beyond them is not checked (no source),
 * and logged.
 *
 * Without a listener (same-host addresses) the connection back is also the
 * one a closing domain asks to read what it still has (fip_bye.c): the
 * peer's connection here is UCP's own, an endpoint the program never sees,
 * and UCP pairs the first endpoints two workers make to each other. It is
 * kept, once per confirmed caller, capped (FIP_ACCEPT_MAX), until the
 * domain closes; over a listener it is closed once answered.
 */
#include "fip.h"

#include <rdma/providers/fi_log.h>

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FIP_HELLO_MAGIC  0x66697048u /* "fipH" */
#define FIP_VERIFY_MAGIC 0x66697056u /* "fipV" */

typedef struct fip_verify_msg {
    uint32_t magic;
    uint32_t ok;       /* the answer: 1 if the asker's connection */
    uint64_t token;    /* the greeting's */
    uint64_t req_id;   /* random: the answer repeats it */
    uint32_t ipv4;     /* the asker's domain: listener ... */
    uint16_t port;
    uint16_t reserved;
    uint32_t pid;      /* ... or process and domain nonce */
    uint32_t reserved2;
    uint64_t nonce;
    uint64_t mac;      /* with a job key: the question's proof */
} fip_verify_msg_t;

/* a message buffer UCP holds until the send completes */
static void fip_caller_send_done(void *request, ucs_status_t status,
                                 void *user_data)
{
    free(user_data);
    ucp_request_free(request);
}

/* send a malloc'd header as a reply-capable message (freed once sent) */
static void fip_caller_send(ucp_ep_h ep, unsigned am_id, void *msg,
                            size_t len)
{
    ucp_request_param_t param = {0};
    ucs_status_ptr_t req;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FIELD_FLAGS;
    param.cb.send      = fip_caller_send_done;
    param.user_data    = msg;
    param.flags        = UCP_AM_SEND_FLAG_REPLY;
    req = ucp_am_send_nbx(ep, am_id, msg, len, NULL, 0, &param);
    if (!UCS_PTR_IS_PTR(req)) {
        free(msg);
    }
}

/* close without waiting (a forced close completes on its own); its
 * admission forgotten, as UCP may give the handle to a later connection */
static void fip_caller_ep_drop(fip_domain_t *domain, ucp_ep_h ep)
{
    ucp_request_param_t param = {0};
    ucs_status_ptr_t req;

    fip_admit_forget(domain, ep);

    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    req = ucp_ep_close_nbx(ep, &param);
    if (UCS_PTR_IS_PTR(req)) {
        ucp_request_free(req);
    }
}

/* a check ends: the connection's messages go on, with the claimed domain
 * as their source or with none; the connection back is kept (same host,
 * confirmed: a caller) or closed later. Under conn_lock. */
static void fip_caller_verify_end(fip_domain_t *domain, fip_verify_t *v,
                                  int ok, const char *why)
{
    char str[FIP_ADDR_STRLEN];
    size_t i;

    if (!ok) {
        fip_addr_str(&v->claimed, str, sizeof(str));
        FI_WARN_SPARSE(&fip_provider, FI_LOG_EP_CTRL,
                       "connection claiming %s: %s; its messages have no "
                       "source\n", str, why);
    }
    fip_msg_stream_verified(domain, v->conn, ok ? &v->claimed : NULL);
    if (ok && domain->local) {
        for (i = 0; i < domain->caller_count; ++i) {
            if ((domain->callers[i].pid == v->claimed.pid) &&
                (domain->callers[i].nonce == v->claimed.nonce)) {
                break;
            }
        }
        if ((i == domain->caller_count) && (i < FIP_ACCEPT_MAX)) {
            domain->callers[i].pid   = v->claimed.pid;
            domain->callers[i].nonce = v->claimed.nonce;
            domain->callers[i].ep    = v->ep;
            ++domain->caller_count;
            v->ep = NULL;
        }
    }
    if (v->ep != NULL) {
        if (domain->verify_gone_count < FIP_VERIFY_MAX) {
            domain->verify_gone[domain->verify_gone_count++] = v->ep;
        } else {
            fip_caller_ep_drop(domain, v->ep);
        }
    }
    memset(v, 0, sizeof(*v));
}

/* the checks past their time, ended: their connections' messages go on
 * with no source. Under conn_lock */
static void fip_caller_end_overdue(fip_domain_t *domain)
{
    int64_t now = fip_now_ns();
    size_t i;

    for (i = 0; i < FIP_VERIFY_MAX; ++i) {
        if ((domain->verifies[i].conn != NULL) &&
            (now >= domain->verifies[i].deadline)) {
            fip_caller_verify_end(domain, &domain->verifies[i], 0,
                                  "not confirmed in time");
        }
    }
}

/* the connections back that ended, closed; checks past their time ended.
 * Under conn_lock, in UCP's progress (not inside the closed endpoint's own
 * callbacks) */
static void fip_caller_sweep(fip_domain_t *domain)
{
    while (domain->verify_gone_count > 0) {
        fip_caller_ep_drop(domain,
                           domain->verify_gone[--domain->verify_gone_count]);
    }
    fip_caller_end_overdue(domain);
}

void fip_caller_check_overdue(fip_domain_t *domain)
{
    pthread_mutex_lock(&domain->conn_lock);
    fip_caller_end_overdue(domain);
    pthread_mutex_unlock(&domain->conn_lock);
}

static void fip_caller_verify_err(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    fip_domain_t *domain = arg;
    size_t i;

    pthread_mutex_lock(&domain->conn_lock);
    for (i = 0; i < FIP_VERIFY_MAX; ++i) {
        if (domain->verifies[i].ep == ep) {
            /* closed later, outside its own callback */
            fip_caller_verify_end(domain, &domain->verifies[i], 0,
                                  "the address claimed cannot be reached");
        }
    }
    pthread_mutex_unlock(&domain->conn_lock);
    /* a closing domain waits no more for this connection's answer */
    fip_bye_ep_gone(domain, ep);
}

void fip_caller_conn_gone(fip_domain_t *domain, ucp_ep_h conn)
{
    size_t i;

    /* its check ends with it: UCP may give a later connection the same
     * handle, which this check must not confirm */
    pthread_mutex_lock(&domain->conn_lock);
    for (i = 0; i < FIP_VERIFY_MAX; ++i) {
        if (domain->verifies[i].conn == conn) {
            fip_caller_verify_end(domain, &domain->verifies[i], 0,
                                  "the connection ended first");
        }
    }
    pthread_mutex_unlock(&domain->conn_lock);
}

/* whether this domain made a connection greeted with `token` to the domain
 * `asker` describes (its listener, or its process and nonce); inside UCP's
 * progress the list is read as fip_peer_gone does */
static int fip_caller_made(fip_domain_t *domain, const fip_verify_msg_t *asker)
{
    fip_peer_t *peer;

    for (peer = __atomic_load_n(&domain->peers, __ATOMIC_ACQUIRE);
         peer != NULL; peer = peer->next) {
        if ((peer->hello.token == asker->token) &&
            ((peer->family == FIP_ADDR_FAMILY_LOCAL) ?
             ((peer->pid == asker->pid) && (peer->nonce == asker->nonce)) :
             ((peer->ipv4 == asker->ipv4) && (peer->port == asker->port)))) {
            return 1;
        }
    }
    return 0;
}

/* the question about `token`, asked by this domain */
static void fip_caller_ask_fill(fip_domain_t *domain, uint64_t token,
                                fip_verify_msg_t *ask)
{
    ask->magic = FIP_VERIFY_MAGIC;
    ask->token = token;
    if (domain->local) {
        ask->pid   = (uint32_t)getpid();
        ask->nonce = domain->nonce;
    } else {
        ask->ipv4  = domain->listen_ipv4;
        ask->port  = domain->listen_port;
    }
}

/* whether `claimed` is this domain itself */
static int fip_caller_is_self(fip_domain_t *domain, const fip_addr_t *claimed)
{
    return domain->local ?
           ((claimed->pid == (uint32_t)getpid()) &&
            (claimed->nonce == domain->nonce)) :
           ((claimed->family == FIP_ADDR_FAMILY_IPV4) &&
            (claimed->ipv4 == domain->listen_ipv4) &&
            (claimed->port == domain->listen_port));
}

/* this domain's own connection to the domain claimed */
static int fip_caller_connect_back(fip_domain_t *domain,
                                   const fip_addr_t *claimed, ucp_ep_h *ep)
{
    ucp_ep_params_t params = {0};
    struct sockaddr_in sin = {0};
    void *worker_addr      = NULL;
    ucs_status_t status;
    size_t len;

    params.field_mask      = UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                             UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.err_mode        = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb  = fip_caller_verify_err;
    params.err_handler.arg = domain;
    if (domain->local) {
        /* only a domain that published this process and nonce */
        if (fip_publish_read(claimed, &worker_addr, &len) != 0) {
            return -FI_ECONNREFUSED;
        }
        params.field_mask |= UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        params.address     = worker_addr;
    } else {
        sin.sin_family          = AF_INET;
        sin.sin_addr.s_addr     = htonl(claimed->ipv4);
        sin.sin_port            = htons(claimed->port);
        params.field_mask      |= UCP_EP_PARAM_FIELD_FLAGS |
                                  UCP_EP_PARAM_FIELD_SOCK_ADDR;
        params.flags            = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
        params.sockaddr.addr    = (const struct sockaddr*)&sin;
        params.sockaddr.addrlen = sizeof(sin);
    }
    status = ucp_ep_create(domain->ucp_worker, &params, ep);
    free(worker_addr);
    return (status == UCS_OK) ? 0 : -FI_ECONNREFUSED;
}

void fip_caller_verify_start(fip_domain_t *domain, ucp_ep_h conn,
                             const fip_addr_t *claimed, uint64_t token)
{
    fip_verify_msg_t *ask;
    fip_verify_t *v = NULL;
    size_t i;

    pthread_mutex_lock(&domain->conn_lock);
    fip_caller_sweep(domain);
    for (i = 0; i < FIP_VERIFY_MAX; ++i) {
        if (domain->verifies[i].conn == NULL) {
            v = &domain->verifies[i];
            break;
        }
    }
    ask = calloc(1, sizeof(*ask));
    if ((v == NULL) || (ask == NULL) || (fip_ep_nonce(&v->req_id) != 0)) {
        pthread_mutex_unlock(&domain->conn_lock);
        free(ask);
        FI_WARN_SPARSE(&fip_provider, FI_LOG_EP_CTRL,
                       "a connection's claim is not checked (%d checks "
                       "running, or no memory): its messages have no "
                       "source\n", FIP_VERIFY_MAX);
        fip_msg_stream_verified(domain, conn, NULL);
        return;
    }
    v->conn     = conn;
    v->claimed  = *claimed;
    v->deadline = fip_wait_deadline(FIP_VERIFY_TIMEOUT_MS);
    fip_caller_ask_fill(domain, token, ask);
    ask->req_id = v->req_id;
    ask->mac    = fip_admit_verify_sign(domain, claimed, token, v->req_id);
    if (fip_caller_is_self(domain, claimed)) {
        /* a connection to itself: answered from its own connections, with
         * no connection back (UCX 1.13's tcp connection manager crashed when
         * a domain closed one to its own listener in the middle) */
        fip_caller_verify_end(domain, v, fip_caller_made(domain, ask),
                              "the domain itself made no such connection");
        pthread_mutex_unlock(&domain->conn_lock);
        free(ask);
        return;
    }
    if (fip_caller_connect_back(domain, claimed, &v->ep) != 0) {
        free(ask);
        v->ep = NULL;
        fip_caller_verify_end(domain, v, 0,
                              "the address claimed cannot be reached");
        pthread_mutex_unlock(&domain->conn_lock);
        return;
    }
    fip_caller_send(v->ep, FIP_AM_VERIFY, ask, sizeof(*ask));
    pthread_mutex_unlock(&domain->conn_lock);
}

/* the greeting: the domain the connection claims to be, and its token;
 * over a listener checked on the connection's first message (a connection
 * that sends none, for RMA and atomics only, costs no connection back) */
static ucs_status_t fip_caller_handler(void *arg, const void *header,
                                       size_t header_length, void *data,
                                       size_t length,
                                       const ucp_am_recv_param_t *param)
{
    fip_domain_t *domain = arg;
    fip_addr_t claimed   = {0};
    fip_hello_msg_t msg;

    if (!(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
        FI_WARN_SPARSE(&fip_provider, FI_LOG_EP_CTRL,
                       "greeting dropped: malformed\n");
        return UCS_OK;
    }
    if ((header_length != sizeof(msg)) || (length != 0)) {
        /* with a job key a connection that begins so is refused */
        if (fip_admit_gate(domain, param->reply_ep, "malformed greeting")) {
            FI_WARN_SPARSE(&fip_provider, FI_LOG_EP_CTRL,
                           "greeting dropped: malformed\n");
        }
        return UCS_OK;
    }
    memcpy(&msg, header, sizeof(msg));
    claimed.family = domain->local ? FIP_ADDR_FAMILY_LOCAL :
                                     FIP_ADDR_FAMILY_IPV4;
    claimed.ipv4   = msg.ipv4;
    claimed.port   = msg.port;
    claimed.pid    = msg.pid;
    claimed.nonce  = msg.nonce;
    claimed.host   = domain->local ? fip_publish_host() : 0;
    if ((msg.magic != FIP_HELLO_MAGIC) || (msg.token == 0) ||
        (msg.reserved != 0) ||
        (domain->local ? ((msg.pid == 0) || (msg.nonce == 0)) :
                         ((msg.ipv4 == 0) || (msg.port == 0)))) {
        if (fip_admit_gate(domain, param->reply_ep, "malformed greeting")) {
            FI_WARN_SPARSE(&fip_provider, FI_LOG_EP_CTRL,
                           "greeting dropped: malformed\n");
        }
        return UCS_OK;
    }
    /* with a job key: its proof first, and nothing else is acted on
     * until it passed */
    if (!fip_admit_hello_check(domain, param->reply_ep, &msg)) {
        return UCS_OK;
    }
    /* one claim per connection, before its first message; without a
     * listener checked at once, as its connection back is the closing
     * handshake's to that caller whether it sends messages or not */
    if (fip_msg_stream_claim(domain, param->reply_ep, &claimed, msg.token,
                             domain->local) != 0) {
        FI_WARN_SPARSE(&fip_provider, FI_LOG_EP_CTRL,
                       "greeting refused: a second claim, or one after "
                       "the connection's messages\n");
    } else if (domain->local) {
        fip_caller_verify_start(domain, param->reply_ep, &claimed,
                                msg.token);
    }
    return UCS_OK;
}

/* a domain asks whether this domain made the connection with that token
 * to it: yes only for a connection this domain made to the asker */
static ucs_status_t fip_caller_verify_handler(void *arg, const void *header,
                                              size_t header_length,
                                              void *data, size_t length,
                                              const ucp_am_recv_param_t *param)
{
    fip_domain_t *domain = arg;
    fip_verify_msg_t msg, *ans;

    if ((header_length != sizeof(msg)) || (length != 0) ||
        !(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
        return UCS_OK;
    }
    memcpy(&msg, header, sizeof(msg));
    if ((msg.magic != FIP_VERIFY_MAGIC) || (msg.token == 0)) {
        (void)fip_admit_gate(domain, param->reply_ep, "malformed claim "
                             "check");
        return UCS_OK;
    }
    /* with a job key only a question of the same job is answered */
    if (!fip_admit_verify_check(domain, param->reply_ep, msg.token,
                                msg.req_id, msg.mac)) {
        return UCS_OK;
    }
    ans = malloc(sizeof(*ans));
    if (ans == NULL) {
        return UCS_OK;
    }
    *ans    = msg;
    ans->ok = (uint32_t)fip_caller_made(domain, &msg);
    (void)fip_reply_send(domain, param->reply_ep, FIP_AM_VERIFY_ACK, ans,
                         sizeof(*ans), 0);
    return UCS_OK;
}

/* the answer, from the connection asked, to the question asked */
static ucs_status_t fip_caller_verify_ack_handler(void *arg,
                                                  const void *header,
                                                  size_t header_length,
                                                  void *data, size_t length,
                                                  const ucp_am_recv_param_t
                                                  *param)
{
    fip_domain_t *domain = arg;
    fip_verify_msg_t msg;
    size_t i;

    if ((header_length != sizeof(msg)) || (length != 0) ||
        !(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
        return UCS_OK;
    }
    memcpy(&msg, header, sizeof(msg));
    if (msg.magic != FIP_VERIFY_MAGIC) {
        return UCS_OK;
    }
    pthread_mutex_lock(&domain->conn_lock);
    for (i = 0; i < FIP_VERIFY_MAX; ++i) {
        if ((domain->verifies[i].conn != NULL) &&
            (domain->verifies[i].ep == param->reply_ep) &&
            (domain->verifies[i].req_id == msg.req_id)) {
            fip_caller_verify_end(domain, &domain->verifies[i],
                                  msg.ok == 1,
                                  "the domain claimed denies it");
            break;
        }
    }
    pthread_mutex_unlock(&domain->conn_lock);
    if (i == FIP_VERIFY_MAX) {
        FI_WARN_SPARSE(&fip_provider, FI_LOG_EP_CTRL,
                       "confirmation dropped: no question of that id on "
                       "its connection\n");
    }
    return UCS_OK;
}

int fip_caller_init(fip_domain_t *domain)
{
    int ret;

    ret = fip_domain_am_handler_set(domain, FIP_AM_HELLO,
                                    fip_caller_handler);
    if (ret == 0) {
        ret = fip_domain_am_handler_set(domain, FIP_AM_VERIFY,
                                        fip_caller_verify_handler);
    }
    if (ret == 0) {
        ret = fip_domain_am_handler_set(domain, FIP_AM_VERIFY_ACK,
                                        fip_caller_verify_ack_handler);
    }
    return ret;
}

void fip_caller_hello(fip_domain_t *domain, fip_peer_t *peer)
{
    ucp_request_param_t param = {0};
    ucs_status_ptr_t req;

    /* in the peer, which lives until its endpoint is flushed and closed;
     * a domain that cannot draw a token sends none (no source there) */
    memset(&peer->hello, 0, sizeof(peer->hello));
    if (fip_ep_nonce(&peer->hello.token) != 0) {
        return;
    }
    peer->hello.magic = FIP_HELLO_MAGIC;
    if (domain->local) {
        peer->hello.pid   = (uint32_t)getpid();
        peer->hello.nonce = domain->nonce;
    } else {
        peer->hello.ipv4  = domain->listen_ipv4;
        peer->hello.port  = domain->listen_port;
    }
    fip_admit_hello_sign(domain, peer);
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_AM_SEND_FLAG_REPLY;
    pthread_mutex_lock(&domain->ucp_lock);
    req = ucp_am_send_nbx(peer->ucp_ep, FIP_AM_HELLO, &peer->hello,
                          sizeof(peer->hello), NULL, 0, &param);
    pthread_mutex_unlock(&domain->ucp_lock);
    if (UCS_PTR_IS_PTR(req)) {
        ucp_request_free(req); /* completes on its own */
    }
}

size_t fip_caller_eps(fip_domain_t *domain, ucp_ep_h *eps)
{
    size_t i, count = 0;

    for (i = 0; i < domain->caller_count; ++i) {
        if (domain->callers[i].ep != NULL) {
            eps[count++] = domain->callers[i].ep;
        }
    }
    return count;
}

void fip_caller_close_all(fip_domain_t *domain)
{
    ucp_ep_h ep;
    size_t i;

    /* the progress thread is stopped; one at a time, each bounded, as a
     * check that fails meanwhile ends in this thread's progress */
    for (;;) {
        pthread_mutex_lock(&domain->conn_lock);
        ep = NULL;
        for (i = 0; (i < FIP_VERIFY_MAX) && (ep == NULL); ++i) {
            ep = domain->verifies[i].ep;
            memset(&domain->verifies[i], 0, sizeof(domain->verifies[i]));
        }
        if ((ep == NULL) && (domain->verify_gone_count > 0)) {
            ep = domain->verify_gone[--domain->verify_gone_count];
        }
        if ((ep == NULL) && (domain->caller_count > 0)) {
            ep = domain->callers[--domain->caller_count].ep;
        }
        pthread_mutex_unlock(&domain->conn_lock);
        if (ep == NULL) {
            break;
        }
        fip_peer_ucp_close(domain, ep);
    }
}
