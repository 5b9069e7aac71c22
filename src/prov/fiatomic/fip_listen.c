/**
 * The domain's UCP listener: the place its endpoints' addresses name
 * (fip_addr.c). Started when the domain's first endpoint opens, with a
 * port the system picks, on the address handed out alone: the host's first
 * non-loopback IPv4 interface that is up (127.0.0.1 when it has none). No
 * other interface takes connections (peers learn only that address; a
 * listener on all of them would take connections from networks the
 * program never meant to serve). Peers connect with
 * ucp_ep_create(sockaddr) on first use (fip_peer.c), which accepts them.
 */
#include "fip.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <string.h>

static void fip_listen_conn(ucp_conn_request_h conn_request, void *arg)
{
    fip_peer_accept(arg, conn_request);
}

/* the host's first non-loopback IPv4 address that is up, in host order */
static uint32_t fip_listen_host_ipv4(void)
{
    uint32_t ipv4 = INADDR_LOOPBACK;
    struct ifaddrs *ifs, *ifa;

    if (getifaddrs(&ifs) != 0) {
        return ipv4;
    }
    for (ifa = ifs; ifa != NULL; ifa = ifa->ifa_next) {
        if ((ifa->ifa_addr == NULL) || (ifa->ifa_addr->sa_family != AF_INET) ||
            !(ifa->ifa_flags & IFF_UP) || (ifa->ifa_flags & IFF_LOOPBACK)) {
            continue;
        }
        ipv4 = ntohl(((struct sockaddr_in*)ifa->ifa_addr)->sin_addr.s_addr);
        break;
    }
    freeifaddrs(ifs);
    return ipv4;
}

int fip_listen_start(fip_domain_t *domain)
{
    ucp_listener_params_t params = {0};
    ucp_listener_attr_t attr     = {0};
    struct sockaddr_in bound     = {0};
    uint32_t ipv4;
    ucs_status_t status;

    /* under domain->lock */
    if (domain->ucp_listener != NULL) {
        return 0;
    }
    ipv4                       = fip_listen_host_ipv4();
    bound.sin_family           = AF_INET;
    bound.sin_addr.s_addr      = htonl(ipv4);
    params.field_mask          = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR |
                                 UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    params.sockaddr.addr       = (const struct sockaddr*)&bound;
    params.sockaddr.addrlen    = sizeof(bound);
    params.conn_handler.cb     = fip_listen_conn;
    params.conn_handler.arg    = domain;
    status = ucp_listener_create(domain->ucp_worker, &params,
                                 &domain->ucp_listener);
    if (status != UCS_OK) {
        domain->ucp_listener = NULL;
        return -FI_EADDRNOTAVAIL;
    }

    attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
    status          = ucp_listener_query(domain->ucp_listener, &attr);
    if ((status != UCS_OK) || (attr.sockaddr.ss_family != AF_INET)) {
        ucp_listener_destroy(domain->ucp_listener);
        domain->ucp_listener = NULL;
        return -FI_EADDRNOTAVAIL;
    }
    domain->listen_port =
        ntohs(((struct sockaddr_in*)&attr.sockaddr)->sin_port);
    domain->listen_ipv4 = ipv4;
    return 0;
}

void fip_listen_stop(fip_domain_t *domain)
{
    if (domain->ucp_listener != NULL) {
        ucp_listener_destroy(domain->ucp_listener);
        domain->ucp_listener = NULL;
    }
}
