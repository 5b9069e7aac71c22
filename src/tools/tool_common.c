/**
 * I/O and UCP set-up shared by the tools (tool_common.h).
 */
#include "tool_common.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* Move all `len` bytes to (writing) or from fd through short transfers and
 * EINTR: -1 when the other end is gone or fails. */
static int tool_transfer_all(int fd, char *p, size_t len, int writing)
{
    int is_socket = writing; /* send() for MSG_NOSIGNAL on sockets; a pipe
                                takes write() */
    ssize_t n;

    while (len > 0) {
        if (!writing) {
            n = read(fd, p, len);
        } else if (is_socket) {
            n = send(fd, p, len, MSG_NOSIGNAL);
            if ((n < 0) && (errno == ENOTSOCK)) {
                is_socket = 0;
                continue;
            }
        } else {
            n = write(fd, p, len);
        }
        if ((n < 0) && (errno == EINTR)) {
            continue;
        } else if (n <= 0) {
            return -1;
        }
        p   += n;
        len -= n;
    }
    return 0;
}

int tool_write_all(int fd, const void *buf, size_t len)
{
    return tool_transfer_all(fd, (char*)buf, len, 1); /* only read from */
}

int tool_read_all(int fd, void *buf, size_t len)
{
    return tool_transfer_all(fd, buf, len, 0);
}

int tool_send_blob(int fd, const void *buf, size_t len)
{
    uint64_t len64 = len;

    return (tool_write_all(fd, &len64, sizeof(len64)) ||
            tool_write_all(fd, buf, len)) ? -1 : 0;
}

void *tool_recv_blob(int fd, size_t max_len, size_t *len_p)
{
    uint64_t len64;
    void *buf;

    if (tool_read_all(fd, &len64, sizeof(len64)) || (len64 > max_len)) {
        return NULL;
    }

    buf = malloc(len64 ? len64 : 1);
    if ((buf == NULL) || tool_read_all(fd, buf, len64)) {
        free(buf);
        return NULL;
    }

    *len_p = len64;
    return buf;
}

int tool_node_init(tool_node_t *node, const char *name,
                   const fiatomic_params_t *fparams)
{
    ucp_params_t params;
    ucp_worker_params_t wparams;
    ucs_status_t status;

    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    /* AM: the target executes fiatomic's target-side requests (16/32-byte
     * elements, and one round trip for emulated cells over tcp) */
    params.features   = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 |
                        UCP_FEATURE_AMO64 | UCP_FEATURE_AM;
    status = ucp_init(&params, NULL, &node->context);
    if (status != UCS_OK) {
        fprintf(stderr, "%s: ucp_init: %s\n", name,
                ucs_status_string(status));
        return -1;
    }

    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(node->context, &wparams, &node->worker);
    if (status != UCS_OK) {
        fprintf(stderr, "%s: ucp_worker_create: %s\n", name,
                ucs_status_string(status));
        goto err_cleanup;
    }

    status = fiatomic_create(node->context, node->worker, fparams,
                             &node->fia);
    if (status != UCS_OK) {
        fprintf(stderr, "%s: fiatomic_create: %s\n", name,
                ucs_status_string(status));
        goto err_worker;
    }
    return 0;

err_worker:
    ucp_worker_destroy(node->worker);
err_cleanup:
    ucp_cleanup(node->context);
    return -1;
}

void tool_node_cleanup(tool_node_t *node)
{
    fiatomic_destroy(node->fia);
    ucp_worker_destroy(node->worker);
    ucp_cleanup(node->context);
}
