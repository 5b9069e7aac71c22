/**
 * What fiatomic_info and fiatomic_perftest share: blocking I/O of whole
 * buffers and length-prefixed blobs on a socket or a pipe (the bootstrap
 * between two processes: worker address, keys), and the set-up of one UCP
 * context + worker + fiatomic context with the transports of the
 * environment (UCX_TLS).
 */
#ifndef FIATOMIC_TOOL_COMMON_H_
#define FIATOMIC_TOOL_COMMON_H_

#include "fiatomic.h"

#include <stddef.h>

/** Write or read exactly `len` bytes (EINTR retried); -1 on error or end of
 *  stream. Writing to a socket never raises SIGPIPE. */
int tool_write_all(int fd, const void *buf, size_t len);
int tool_read_all(int fd, void *buf, size_t len);

/** A blob: its length as 64 bits, then its bytes. */
int tool_send_blob(int fd, const void *buf, size_t len);
/** malloc'ed blob (free it); NULL on error or when the peer announces more
 *  than `max_len` bytes (a protocol error, not something to allocate). */
void *tool_recv_blob(int fd, size_t max_len, size_t *len_p);

typedef struct tool_node {
    ucp_context_h context;
    ucp_worker_h  worker;
    fiatomic_h    fia;
} tool_node_t;

/** UCP context (RMA, AMO32/64 and AM: the target serves fiatomic's
 *  target-side requests), single-threaded worker, and a fiatomic context
 *  with `fparams` (NULL: the defaults). Errors are printed to stderr after
 *  `name`; -1 then, and nothing is left to clean up. */
int tool_node_init(tool_node_t *node, const char *name,
                   const fiatomic_params_t *fparams);
void tool_node_cleanup(tool_node_t *node);

#endif
