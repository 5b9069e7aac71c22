/**
 * The target process: exposes memory with FIATOMIC_MEM_FLAG_ALLOCATE (so
 * shared-memory transports can map it and the direct strategy applies),
 * maps a second UCP-allocated region for the raw UCP baseline, hands out the
 * worker address and keys, then spins progressing its worker (UCP's software
 * atomics and libfabric's rxm/shm atomics are executed by this CPU) and the
 * libfabric providers opened (one target each, side by side) while serving
 * control commands.
 */
#include "perftest.h"
#include "perftest_ofi.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Worker progress calls between two looks at the control socket: a poll()
 * costs about a microsecond, the progress of an idle worker ~20 ns. */
#define PERF_SERVER_SPIN 256

typedef struct {
    perf_node_t       node;
    fiatomic_mem_h    mem;
    void              *fia_base;
    ucp_mem_h         ucp_memh;
    void              *ucp_base;
    perf_ofi_target_t *ofi[PERF_MAX_OFI_PROVIDERS]; /* --providers */
} perf_server_t;

static int perf_server_setup(perf_server_t *srv, int fd)
{
    fiatomic_mem_params_t mparams;
    ucp_mem_map_params_t map_params;
    ucp_mem_attr_t attr;
    ucp_address_t *address;
    size_t address_len, key_len, rkey_len;
    void *key, *rkey_buf;
    uint64_t fia_base64, ucp_base64;
    int ret = -1;

    mparams.field_mask = FIATOMIC_MEM_PARAM_FIELD_LENGTH |
                         FIATOMIC_MEM_PARAM_FIELD_FLAGS;
    mparams.length     = PERF_REGION_SIZE;
    mparams.flags      = FIATOMIC_MEM_FLAG_ALLOCATE;
    if ((fiatomic_mem_expose(srv->node.fia, &mparams, &srv->mem) != UCS_OK) ||
        (fiatomic_mem_query(srv->mem, &srv->fia_base, NULL) != UCS_OK) ||
        (fiatomic_mem_pack_key(srv->mem, &key, &key_len) != UCS_OK)) {
        fprintf(stderr, PERF_NAME ": cannot expose target memory\n");
        return -1;
    }

    /* The baseline's own UCP-allocated region: the same kind of memory as
     * fiatomic's, so UCP picks the same transport path for both. */
    map_params.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                            UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    map_params.length     = PERF_UCP_REGION_SIZE;
    map_params.flags      = UCP_MEM_MAP_ALLOCATE;
    attr.field_mask       = UCP_MEM_ATTR_FIELD_ADDRESS;
    if ((ucp_mem_map(srv->node.context, &map_params, &srv->ucp_memh) !=
         UCS_OK) ||
        (ucp_mem_query(srv->ucp_memh, &attr) != UCS_OK) ||
        (ucp_rkey_pack(srv->node.context, srv->ucp_memh, &rkey_buf,
                       &rkey_len) != UCS_OK)) {
        fprintf(stderr, PERF_NAME ": cannot map the UCP baseline region\n");
        goto out_key;
    }
    srv->ucp_base = attr.address;
    memset(srv->fia_base, 0, PERF_REGION_SIZE);
    memset(srv->ucp_base, 0, PERF_UCP_REGION_SIZE);

    if (ucp_worker_get_address(srv->node.worker, &address, &address_len) !=
        UCS_OK) {
        goto out_rkey;
    }

    fia_base64 = (uintptr_t)srv->fia_base;
    ucp_base64 = (uintptr_t)srv->ucp_base;
    ret = (perf_ctl_send_blob(fd, address, address_len) ||
           perf_ctl_send_blob(fd, key, key_len) ||
           perf_ctl_send_blob(fd, &fia_base64, sizeof(fia_base64)) ||
           perf_ctl_send_blob(fd, rkey_buf, rkey_len) ||
           perf_ctl_send_blob(fd, &ucp_base64, sizeof(ucp_base64))) ? -1 : 0;

    ucp_worker_release_address(srv->node.worker, address);
out_rkey:
    ucp_rkey_buffer_release(rkey_buf);
out_key:
    fiatomic_key_release(key);
    return ret;
}

static void *perf_server_region(perf_server_t *srv, uint32_t region,
                                size_t *len_p)
{
    switch (region) {
    case PERF_REGION_FIATOMIC:
        *len_p = PERF_REGION_SIZE;
        return srv->fia_base;
    case PERF_REGION_UCP:
        *len_p = PERF_UCP_REGION_SIZE;
        return srv->ucp_base;
    default:
        if ((region >= PERF_REGION_OFI) && (region < PERF_REGION_LAST) &&
            (srv->ofi[region - PERF_REGION_OFI] != NULL)) {
            return perf_ofi_target_memory(srv->ofi[region - PERF_REGION_OFI],
                                          len_p);
        }
        return NULL;
    }
}

static int perf_server_reply(int fd, int32_t status, const void *data,
                             size_t len)
{
    return (perf_ctl_write_all(fd, &status, sizeof(status)) ||
            perf_ctl_write_all(fd, data, len)) ? -1 : 0;
}

/* One command. Returns 1 to go on, 0 on QUIT, -1 on a broken channel. */
static int perf_server_command(perf_server_t *srv, int fd)
{
    perf_msg_hdr_t hdr;
    uint8_t *mem, discard[256];
    size_t len = 0, n;
    void *blob;
    uint64_t rss[2];
    char name[64];
    int in_range;
    perf_ofi_target_t **ofi;

    if (perf_ctl_read_all(fd, &hdr, sizeof(hdr))) {
        return -1;
    }

    mem      = perf_server_region(srv, hdr.region, &len);
    in_range = (mem != NULL) && (hdr.offset <= len) &&
               (hdr.length <= len - hdr.offset);
    /* OFI_OPEN and OFI_CLOSE: the provider's index */
    ofi      = (hdr.offset < PERF_MAX_OFI_PROVIDERS) ? &srv->ofi[hdr.offset] :
               NULL;

    switch (hdr.cmd) {
    case PERF_CMD_WRITE:
        if (in_range) {
            if (perf_ctl_read_all(fd, mem + hdr.offset, hdr.length)) {
                return -1;
            }
            return perf_server_reply(fd, 0, NULL, 0) ? -1 : 1;
        }
        for (; hdr.length > 0; hdr.length -= n) { /* drain the payload */
            n = (hdr.length < sizeof(discard)) ? hdr.length : sizeof(discard);
            if (perf_ctl_read_all(fd, discard, n)) {
                return -1;
            }
        }
        return perf_server_reply(fd, -1, NULL, 0) ? -1 : 1;
    case PERF_CMD_READ:
        if (!in_range) {
            return perf_server_reply(fd, -1, NULL, 0) ? -1 : 1;
        }
        return perf_server_reply(fd, 0, mem + hdr.offset, hdr.length) ?
               -1 : 1;
    case PERF_CMD_RSS:
        rss[0] = perf_rss_bytes();
        rss[1] = perf_malloc_calls();
        return perf_server_reply(fd, 0, rss, sizeof(rss)) ? -1 : 1;
    case PERF_CMD_OFI_OPEN:
        if ((hdr.length >= sizeof(name)) || (ofi == NULL) ||
            perf_ctl_read_all(fd, name, hdr.length)) {
            return -1;
        }
        name[hdr.length] = '\0';
        if (*ofi != NULL) {
            perf_ofi_target_close(*ofi);
            *ofi = NULL;
        }
        if (perf_ofi_target_open(name, ofi) != 0) {
            return perf_server_reply(fd, -1, NULL, 0) ? -1 : 1;
        }
        blob = perf_ofi_target_info(*ofi, &len);
        if (perf_server_reply(fd, 0, NULL, 0) ||
            perf_ctl_send_blob(fd, blob, len)) {
            return -1;
        }
        return 1;
    case PERF_CMD_OFI_CLOSE:
        if (ofi == NULL) {
            return -1;
        }
        if (*ofi != NULL) {
            perf_ofi_target_close(*ofi);
            *ofi = NULL;
        }
        return perf_server_reply(fd, 0, NULL, 0) ? -1 : 1;
    case PERF_CMD_QUIT:
        (void)perf_server_reply(fd, 0, NULL, 0);
        return 0;
    default:
        fprintf(stderr, PERF_NAME ": unknown command %u\n", hdr.cmd);
        return -1;
    }
}

int perf_server_run(int fd)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    perf_server_t srv;
    int ret = 1, i;
    unsigned k;

    memset(&srv, 0, sizeof(srv));
    if (perf_node_init(&srv.node)) {
        return 1;
    }
    if (perf_server_setup(&srv, fd)) {
        goto out;
    }

    for (;;) {
        for (i = 0; i < PERF_SERVER_SPIN; ++i) {
            ucp_worker_progress(srv.node.worker);
            for (k = 0; k < PERF_MAX_OFI_PROVIDERS; ++k) {
                if (srv.ofi[k] != NULL) {
                    perf_ofi_target_progress(srv.ofi[k]);
                }
            }
        }
        if (poll(&pfd, 1, 0) <= 0) {
            continue;
        }
        ret = perf_server_command(&srv, fd);
        if (ret <= 0) {
            ret = -ret; /* QUIT: 0, broken channel: 1 */
            break;
        }
    }

    for (k = 0; k < PERF_MAX_OFI_PROVIDERS; ++k) {
        if (srv.ofi[k] != NULL) {
            perf_ofi_target_close(srv.ofi[k]);
        }
    }
    ucp_mem_unmap(srv.node.context, srv.ucp_memh);
    fiatomic_mem_unexpose(srv.mem);
out:
    perf_node_cleanup(&srv.node);
    return ret;
}
