/**
 * The provider's endpoint address: one fixed length on every process
 * (FIP_ADDR_LEN bytes), as programs that exchange addresses in arrays
 * (OpenSHMEM's) need. A UCP worker address (79 to 215 bytes, varying with
 * the transports) cannot serve; the address instead names where the peer's
 * domain listens (an IPv4 socket address), which endpoint of that domain it
 * is, and a random nonce that tells a restarted or different endpoint at
 * the same place apart. All fields are packed in network byte order, so the
 * bytes mean the same on every host:
 *
 *   0  version (FIP_ADDR_VERSION)      8  endpoint id (32 bits)
 *   1  family (FIP_ADDR_FAMILY_IPV4)  12  reserved, zero (32 bits)
 *   2  port (16 bits, not zero)       16  nonce (64 bits, not zero)
 *   4  IPv4 address (not 0.0.0.0)
 *
 * A domain whose transports have no connection manager (UCX_TLS=posix)
 * gives same-host addresses instead: its host, process and nonce name the
 * file its worker address is published in (fip_publish.c); the nonce is
 * the domain's, the endpoint id tells its endpoints apart:
 *
 *   0  version (FIP_ADDR_VERSION)      8  endpoint id (32 bits)
 *   1  family (FIP_ADDR_FAMILY_LOCAL) 12  host identity (32 bits, not zero)
 *   2  reserved, zero (16 bits)       16  nonce (64 bits, not zero)
 *   4  process id (32 bits, not zero)
 *
 * A same-host address of another host is refused here.
 *
 * Every address the program hands in is decoded and validated here.
 */
#include "fip.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

static void fip_put_be(uint8_t *p, uint64_t value, size_t bytes)
{
    size_t i;

    for (i = 0; i < bytes; ++i) {
        p[bytes - 1 - i] = (uint8_t)(value >> (8 * i));
    }
}

static uint64_t fip_get_be(const uint8_t *p, size_t bytes)
{
    uint64_t value = 0;
    size_t i;

    for (i = 0; i < bytes; ++i) {
        value = (value << 8) | p[i];
    }
    return value;
}

void fip_addr_pack(const fip_addr_t *addr, uint8_t *buf)
{
    buf[0] = FIP_ADDR_VERSION;
    buf[1] = addr->family;
    if (addr->family == FIP_ADDR_FAMILY_LOCAL) {
        fip_put_be(buf + 2, 0, 2);
        fip_put_be(buf + 4, addr->pid, 4);
        fip_put_be(buf + 12, addr->host, 4);
    } else {
        fip_put_be(buf + 2, addr->port, 2);
        fip_put_be(buf + 4, addr->ipv4, 4);
        fip_put_be(buf + 12, 0, 4);
    }
    fip_put_be(buf + 8, addr->ep_id, 4);
    fip_put_be(buf + 16, addr->nonce, 8);
}

static int fip_addr_unpack_local(const uint8_t *p, fip_addr_t *addr)
{
    if (fip_get_be(p + 2, 2) != 0) {
        return -FI_EINVAL;
    }
    memset(addr, 0, sizeof(*addr));
    addr->family = FIP_ADDR_FAMILY_LOCAL;
    addr->pid    = (uint32_t)fip_get_be(p + 4, 4);
    addr->ep_id  = (uint32_t)fip_get_be(p + 8, 4);
    addr->host   = (uint32_t)fip_get_be(p + 12, 4);
    addr->nonce  = fip_get_be(p + 16, 8);
    /* the file it names is on this host only */
    if ((addr->pid == 0) || (addr->nonce == 0) ||
        (addr->host != fip_publish_host())) {
        return -FI_EINVAL;
    }
    return 0;
}

int fip_addr_unpack(const void *buf, size_t len, fip_addr_t *addr)
{
    const uint8_t *p = buf;

    if ((buf == NULL) || (len < FIP_ADDR_LEN) ||
        (p[0] != FIP_ADDR_VERSION)) {
        return -FI_EINVAL;
    }
    if (p[1] == FIP_ADDR_FAMILY_LOCAL) {
        return fip_addr_unpack_local(p, addr);
    }
    if ((p[1] != FIP_ADDR_FAMILY_IPV4) || (fip_get_be(p + 12, 4) != 0)) {
        return -FI_EINVAL;
    }
    memset(addr, 0, sizeof(*addr));
    addr->family = FIP_ADDR_FAMILY_IPV4;
    addr->port  = (uint16_t)fip_get_be(p + 2, 2);
    addr->ipv4  = (uint32_t)fip_get_be(p + 4, 4);
    addr->ep_id = (uint32_t)fip_get_be(p + 8, 4);
    addr->nonce = fip_get_be(p + 16, 8);
    if ((addr->port == 0) || (addr->ipv4 == 0) || (addr->nonce == 0)) {
        return -FI_EINVAL;
    }
    return 0;
}

int fip_addr_same_domain(const fip_addr_t *a, const fip_addr_t *b)
{
    if (a->family != b->family) {
        return 0;
    }
    if (a->family == FIP_ADDR_FAMILY_LOCAL) {
        return (a->host == b->host) && (a->pid == b->pid) &&
               (a->nonce == b->nonce);
    }
    /* an IPv4 address's nonce is its endpoint's: the listener is the
     * domain */
    return (a->ipv4 == b->ipv4) && (a->port == b->port);
}

size_t fip_addr_str(const fip_addr_t *addr, char *buf, size_t len)
{
    struct in_addr in = { .s_addr = htonl(addr->ipv4) };
    char ip[INET_ADDRSTRLEN];
    int n;

    if (addr->family == FIP_ADDR_FAMILY_LOCAL) {
        n = snprintf(buf, len, "fiatomic-shm://%08x/%u/%u/%016llx",
                     (unsigned)addr->host, (unsigned)addr->pid,
                     (unsigned)addr->ep_id, (unsigned long long)addr->nonce);
        return (n < 0) ? 0 : (size_t)n + 1;
    }
    if (inet_ntop(AF_INET, &in, ip, sizeof(ip)) == NULL) {
        ip[0] = '\0';
    }
    n = snprintf(buf, len, "fiatomic://%s:%u/%u/%016llx", ip,
                 (unsigned)addr->port, (unsigned)addr->ep_id,
                 (unsigned long long)addr->nonce);
    return (n < 0) ? 0 : (size_t)n + 1;
}
