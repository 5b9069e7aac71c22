/**
 * Control channel: blocking, length-prefixed messages over a stream socket
 * (TCP between --server and a client, a socketpair in loopback mode). It
 * carries the bootstrap (worker address, keys) and the verification
 * accesses to target memory; never anything that is timed.
 */
#include "perftest.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A blob larger than this is a protocol error, not something to malloc. */
#define PERF_CTL_MAX_BLOB (64u << 20)

int perf_ctl_write_all(int fd, const void *buf, size_t len)
{
    return tool_write_all(fd, buf, len);
}

int perf_ctl_read_all(int fd, void *buf, size_t len)
{
    return tool_read_all(fd, buf, len);
}

int perf_ctl_send_blob(int fd, const void *buf, size_t len)
{
    return tool_send_blob(fd, buf, len);
}

void *perf_ctl_recv_blob(int fd, size_t *len_p)
{
    return tool_recv_blob(fd, PERF_CTL_MAX_BLOB, len_p);
}

/* The control messages are small request/reply pairs: no Nagle delay. */
static void perf_ctl_nodelay(int fd)
{
    int one = 1;

    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int perf_ctl_listen(int port)
{
    struct sockaddr_in addr;
    int fd, one = 1;

    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        perror(PERF_NAME ": socket");
        return -1;
    }

    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&addr, 0, sizeof(addr));
    addr.sin_family      = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port        = htons(port);
    if (bind(fd, (struct sockaddr*)&addr, sizeof(addr)) || listen(fd, 1)) {
        perror(PERF_NAME ": bind/listen");
        close(fd);
        return -1;
    }
    return fd;
}

int perf_ctl_accept(int listen_fd)
{
    int fd;

    do {
        fd = accept(listen_fd, NULL, NULL);
    } while ((fd < 0) && (errno == EINTR));

    if (fd < 0) {
        perror(PERF_NAME ": accept");
        return -1;
    }
    perf_ctl_nodelay(fd);
    return fd;
}

int perf_ctl_connect(const char *host, int port)
{
    struct addrinfo hints, *res, *ai;
    char port_str[16];
    int fd = -1, ret;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family   = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(port_str, sizeof(port_str), "%d", port);
    ret = getaddrinfo(host, port_str, &hints, &res);
    if (ret != 0) {
        fprintf(stderr, PERF_NAME ": %s: %s\n", host, gai_strerror(ret));
        return -1;
    }

    for (ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0) {
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            break;
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);

    if (fd < 0) {
        fprintf(stderr, PERF_NAME ": cannot connect to %s:%d: %m\n", host,
                port);
        return -1;
    }
    perf_ctl_nodelay(fd);
    return fd;
}
