/**
 * What libfiatomic needs from UCP beyond its public queries, and the UCX
 * version workarounds: the one place to change when UCX changes.
 *  - the transports of an endpoint's atomic lanes and of a context, read
 *    from UCP's printed information (ucp_ep_print_info,
 *    ucp_context_print_info): UCP has no query for them;
 *  - UCP atomics that return wrong results on some UCX versions.
 */
#include "core/fiatomic_ep.h"

#include <ucp/api/ucp_version.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The UCX library loaded at run time (not the headers built against). */
static unsigned fiatomic_ucx_version(void)
{
    unsigned major, minor, release;

    ucp_get_version(&major, &minor, &release);
    return UCP_VERSION(major, minor);
}

/* UCT transports whose atomics are CPU atomics on the target's memory
 * (UCT_IFACE_FLAG_ATOMIC_CPU). An amo lane on anything else is taken to be a
 * device: the safe assumption, since it only disables the direct path. */
static const char *fiatomic_cpu_amo_tls[] = {
    "self", "posix", "sysv", "xpmem", "cma", "knem"
};

static bool fiatomic_tl_is_cpu(const char *name, size_t len)
{
    size_t i;

    for (i = 0; i < ucs_static_array_size(fiatomic_cpu_amo_tls); ++i) {
        if ((strlen(fiatomic_cpu_amo_tls[i]) == len) &&
            !strncmp(fiatomic_cpu_amo_tls[i], name, len)) {
            return true;
        }
    }
    return false;
}

/*
 * UCP 1.13 has no query for the transports of an endpoint's atomic lanes, so
 * read them from ucp_ep_print_info(): lines like
 *   "lane[0]:  2:posix/memory.0 md[1] -> md[1]/posix/sysdev[255] amo#0 am"
 * No amo lane means software atomics over active messages: executed by the
 * target's CPU with CPU atomics, and only when the target progresses.
 */
void fiatomic_ucx_ep_detect_lanes(fiatomic_ep_h ep)
{
    bool any_amo = false, all_cpu = true, sm = false;
    bool peer_err = (ep->flags & FIATOMIC_EP_FLAG_PEER_ERR_MODE) != 0;
    char *text = NULL, *line, *save = NULL, *tl, *end;
    size_t size = 0;
    FILE *stream;

    stream = open_memstream(&text, &size);
    if (stream == NULL) {
        goto out_unknown;
    }
    ucp_ep_print_info(ep->ucp_ep, stream);
    fclose(stream);

    for (line = strtok_r(text, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        if (strstr(line, "lane[") == NULL) {
            continue;
        }
        if (strstr(line, " keepalive") != NULL) {
            peer_err = true; /* UCP adds the lane for that mode only */
        }
        if (strstr(line, " amo#") == NULL) {
            continue;
        }
        tl = strstr(line, "]:");
        if (tl == NULL) {
            goto out_unknown;
        }
        tl = strchr(tl, ':');
        tl = (tl != NULL) ? strchr(tl + 1, ':') : NULL; /* "N:" resource */
        end = (tl != NULL) ? strchr(tl, '/') : NULL;
        if (end == NULL) {
            goto out_unknown;
        }
        ++tl;
        any_amo = true;
        if (fiatomic_tl_is_cpu(tl, end - tl)) {
            sm = true;
        } else {
            all_cpu = false;
        }
    }

    free(text);
    ep->domain         = all_cpu ? FIATOMIC_DOMAIN_CPU : FIATOMIC_DOMAIN_DEVICE;
    ep->needs_progress = !any_amo;
    ep->sm_amo         = sm;
    ep->ucp_amo_ok     = !(peer_err && ep->fia->ucp_amo_peer_err_broken);
    return;

out_unknown:
    free(text);
    ep->domain         = FIATOMIC_DOMAIN_DEVICE;
    ep->needs_progress = true;
    ep->sm_amo         = false;
    ep->ucp_amo_ok     = !ep->fia->ucp_amo_peer_err_broken;
}

/*
 * What endpoints of this context can be, from its transport resources
 * (ucp_context_print_info lines "# resource 0 : md 0 dev 0 flags -- tl/dev"):
 * a CPU-atomic transport (shm, self) gives endpoints in the CPU domain with
 * UCP's own atomic lanes; anything else but tcp (no atomics: software atomics
 * over active messages) may execute atomics in a device. When the resources
 * cannot be read, both are assumed: the context query stays on the safe
 * side.
 */
void fiatomic_ucx_context_detect_tls(fiatomic_h fia)
{
    char *text = NULL, *line, *save = NULL, *tl, *end;
    size_t size = 0;
    FILE *stream;

    fia->tl_cpu_amo = true;
    fia->tl_device  = true;
    stream = open_memstream(&text, &size);
    if (stream == NULL) {
        return;
    }
    ucp_context_print_info(fia->ucp_context, stream);
    fclose(stream);

    fia->tl_cpu_amo = false;
    fia->tl_device  = false;
    for (line = strtok_r(text, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        if (strstr(line, " resource ") == NULL) {
            continue;
        }
        tl  = strstr(line, " flags ");
        tl  = (tl != NULL) ? strchr(tl + 7, ' ') : NULL; /* after the flags */
        end = (tl != NULL) ? strchr(tl, '/') : NULL;
        if (end == NULL) {
            fia->tl_cpu_amo = fia->tl_device = true;
            break;
        }
        while (*tl == ' ') {
            ++tl;
        }
        if (fiatomic_tl_is_cpu(tl, end - tl)) {
            fia->tl_cpu_amo = true;
        } else if (((end - tl) != 3) || strncmp(tl, "tcp", 3)) {
            fia->tl_device = true;
        }
    }
    free(text);
}

/*
 * Whether the context's UCP selects protocols with its "v2" logic
 * (UCX_PROTO_ENABLE, yes by default from UCX 1.16 on): read from the
 * environment the context was configured from.
 */
static bool fiatomic_ucx_proto_v2(void)
{
    char *text = NULL;
    ucp_config_t *config;
    size_t size = 0;
    FILE *stream;
    bool v2;

    if (ucp_config_read(NULL, NULL, &config) != UCS_OK) {
        return true;
    }
    stream = open_memstream(&text, &size);
    if (stream == NULL) {
        ucp_config_release(config);
        return true;
    }
    ucp_config_print(config, stream, NULL, UCS_CONFIG_PRINT_CONFIG);
    fclose(stream);
    ucp_config_release(config);
    v2 = (strstr(text, "UCX_PROTO_ENABLE=n") == NULL);
    free(text);
    return v2;
}

/*
 * UCX 1.22's protocols (v2) have no atomic protocol, neither on an atomic
 * lane nor in software over active messages, for an endpoint created with
 * UCP_ERR_HANDLING_MODE_PEER: the operation fails with "cannot find remote
 * protocol" and UCP fails the endpoint. Such an endpoint has a keepalive
 * lane (UCP adds one for the peer error mode only), which is how
 * fiatomic_ucx_ep_detect_lanes() tells it, unless the program said so with
 * FIATOMIC_EP_FLAG_PEER_ERR_MODE: a client's endpoint to a socket address
 * gets its keepalive lane only when wireup ends, after a first round trip
 * of active messages can already have completed. (Every endpoint's lane
 * that carries wireup messages keeps its "wireup" mark for good, error
 * mode or not, so it tells nothing.) UCX 1.13.1 and 1.22's v1
 * protocols (UCX_PROTO_ENABLE=n) execute them.
 */
void fiatomic_ucx_context_detect_amo(fiatomic_h fia)
{
    unsigned version = fiatomic_ucx_version();

    fia->ucp_amo_peer_err_broken = (version >= UCP_VERSION(1, 22)) &&
                                   fiatomic_ucx_proto_v2();
    fia->ucp_sm_fetch_bitwise_broken = (version < UCP_VERSION(1, 22));
}

/*
 * UCX 1.13.1's shared-memory and self transports return wrong results for
 * the fetching AND/OR/XOR (fetch-AND of 7 with 0x80000001 leaves 7; a
 * base-family FI_BXOR with FI_DELIVERY_COMPLETE, which takes the fetching
 * form, writes 0); the non-fetching forms, ADD, SWAP and CSWAP are right.
 * UCX 1.22.0 computes them right (the matrix suite over self, and over
 * posix and sysv with UCX_PROTO_ENABLE=n, with this workaround off); the
 * versions between were not measured and keep it.
 */
bool fiatomic_ucx_amo_broken(fiatomic_ep_h ep, ucp_atomic_op_t op, bool fetch)
{
    bool bitwise = (op == UCP_ATOMIC_OP_AND) || (op == UCP_ATOMIC_OP_OR) ||
                   (op == UCP_ATOMIC_OP_XOR);

    if (!ep->ucp_amo_ok || !ep->fia->onesided) {
        return true; /* nor are they where the context has no such feature */
    }
    return ep->fia->ucp_sm_fetch_bitwise_broken && ep->sm_amo && bitwise &&
           fetch;
}
