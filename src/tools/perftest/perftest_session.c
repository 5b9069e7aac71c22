/**
 * The initiator's side of a connection to a target: bootstrap over the
 * control channel, UCP endpoint, fiatomic endpoint and keys, and target
 * memory access through the control channel. Loopback mode starts the
 * target as a child process on a socketpair.
 */
#include "perftest.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int perf_session_bootstrap(perf_session_t *s)
{
    void *address = NULL, *key = NULL, *base = NULL, *rkey = NULL;
    void *ucp_base = NULL;
    size_t address_len, key_len, base_len, rkey_len, ucp_base_len;
    ucp_ep_params_t ep_params;
    ucs_status_t status;
    int ret = -1;

    address  = perf_ctl_recv_blob(s->ctl_fd, &address_len);
    key      = address  ? perf_ctl_recv_blob(s->ctl_fd, &key_len) : NULL;
    base     = key      ? perf_ctl_recv_blob(s->ctl_fd, &base_len) : NULL;
    rkey     = base     ? perf_ctl_recv_blob(s->ctl_fd, &rkey_len) : NULL;
    ucp_base = rkey     ? perf_ctl_recv_blob(s->ctl_fd, &ucp_base_len) : NULL;
    if ((ucp_base == NULL) || (base_len != sizeof(uint64_t)) ||
        (ucp_base_len != sizeof(uint64_t))) {
        fprintf(stderr, PERF_NAME ": the target failed to start\n");
        goto out;
    }
    memcpy(&s->base, base, sizeof(s->base));
    memcpy(&s->ucp_base, ucp_base, sizeof(s->ucp_base));

    if (perf_node_init(&s->node)) {
        goto out;
    }

    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep_params.address    = address;
    status = ucp_ep_create(s->node.worker, &ep_params, &s->ucp_ep);
    if (status != UCS_OK) {
        fprintf(stderr, PERF_NAME ": ucp_ep_create: %s\n",
                ucs_status_string(status));
        goto err_node;
    }

    status = fiatomic_ep_create(s->node.fia, s->ucp_ep, NULL, &s->ep);
    if (status == UCS_OK) {
        status = fiatomic_rkey_unpack(s->ep, key, key_len, &s->key);
    }
    if (status == UCS_OK) {
        status = ucp_ep_rkey_unpack(s->ucp_ep, rkey, &s->ucp_rkey);
    }
    if (status != UCS_OK) {
        fprintf(stderr, PERF_NAME ": endpoint/key setup: %s\n",
                ucs_status_string(status));
        goto err_node; /* a failed setup ends the process anyway */
    }

    s->key_buf     = key; /* for an ordered endpoint later */
    s->key_len     = key_len;
    s->address_buf = address; /* for the initiators of a scaling run */
    s->address_len = address_len;
    s->ucp_rkey_buf = rkey;
    s->ucp_rkey_len = rkey_len;
    key            = NULL;
    address        = NULL;
    rkey           = NULL;
    ret            = 0;
    goto out;

err_node:
    perf_node_cleanup(&s->node);
out:
    free(address);
    free(key);
    free(base);
    free(rkey);
    free(ucp_base);
    return ret;
}

static void perf_session_defaults(perf_session_t *s)
{
    const char *tls = getenv("UCX_TLS");

    memset(s, 0, sizeof(*s));
    s->ctl_fd     = -1;
    s->server_pid = -1;
    s->transport  = tls ? tls : "default";
}

int perf_session_loopback(perf_session_t *s, const char *self_exe,
                          int cpu_server)
{
    posix_spawn_file_actions_t actions;
    char fd_arg[16], cpu_arg[16];
    char *argv[6];
    pid_t pid;
    int sv[2], argc = 0;

    perf_session_defaults(s);
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
        perror(PERF_NAME ": socketpair");
        return -1;
    }

    snprintf(fd_arg, sizeof(fd_arg), "%d", sv[1]);
    snprintf(cpu_arg, sizeof(cpu_arg), "%d", cpu_server);
    argv[argc++] = (char*)PERF_NAME;
    argv[argc++] = (char*)"--serve-fd";
    argv[argc++] = fd_arg;
    if (cpu_server >= 0) {
        argv[argc++] = (char*)"--cpu";
        argv[argc++] = cpu_arg;
    }
    argv[argc] = NULL;

    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addclose(&actions, sv[0]);
    if (posix_spawn(&pid, self_exe, &actions, NULL, argv, environ)) {
        perror(PERF_NAME ": posix_spawn");
        posix_spawn_file_actions_destroy(&actions);
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    posix_spawn_file_actions_destroy(&actions);
    close(sv[1]);

    s->ctl_fd     = sv[0];
    s->server_pid = pid;
    if (perf_session_bootstrap(s)) {
        close(s->ctl_fd);
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
        return -1;
    }
    return 0;
}

int perf_session_open(perf_session_t *s, const perf_opts_t *o)
{
    return (o->host != NULL) ? perf_session_connect(s, o->host, o->port) :
           perf_session_loopback(s, o->self_exe, o->cpu_server);
}

int perf_session_connect(perf_session_t *s, const char *host, int port)
{
    perf_session_defaults(s);
    s->ctl_fd = perf_ctl_connect(host, port);
    if (s->ctl_fd < 0) {
        return -1;
    }
    if (perf_session_bootstrap(s)) {
        close(s->ctl_fd);
        return -1;
    }
    return 0;
}

int perf_session_attach(perf_session_t *s, int fd)
{
    perf_session_defaults(s);
    s->ctl_fd = fd;
    return perf_session_bootstrap(s);
}

static int perf_session_command(perf_session_t *s, uint32_t cmd,
                                perf_region_t region, uint64_t offset,
                                const void *payload, size_t len)
{
    perf_msg_hdr_t hdr = {cmd, region, offset, len};
    int32_t status;

    if (perf_ctl_write_all(s->ctl_fd, &hdr, sizeof(hdr)) ||
        perf_ctl_write_all(s->ctl_fd, payload, payload ? len : 0) ||
        perf_ctl_read_all(s->ctl_fd, &status, sizeof(status))) {
        fprintf(stderr, PERF_NAME ": lost the target\n");
        return -1;
    }
    return status;
}

int perf_session_write(perf_session_t *s, perf_region_t region,
                       uint64_t offset, const void *buf, size_t len)
{
    return perf_session_command(s, PERF_CMD_WRITE, region, offset, buf, len);
}

int perf_session_read(perf_session_t *s, perf_region_t region,
                      uint64_t offset, void *buf, size_t len)
{
    if (perf_session_command(s, PERF_CMD_READ, region, offset, NULL, len)) {
        return -1;
    }
    return perf_ctl_read_all(s->ctl_fd, buf, len);
}

int perf_session_server_rss(perf_session_t *s, uint64_t *rss_p,
                            uint64_t *mallocs_p)
{
    uint64_t v[2];

    if (perf_session_command(s, PERF_CMD_RSS, 0, 0, NULL, 0) ||
        perf_ctl_read_all(s->ctl_fd, v, sizeof(v))) {
        return -1;
    }
    *rss_p     = v[0];
    *mallocs_p = v[1];
    return 0;
}

ucs_status_t perf_session_wait(perf_session_t *s, ucs_status_ptr_t sptr)
{
    ucs_status_t status;

    if (!UCS_PTR_IS_PTR(sptr)) {
        return UCS_PTR_STATUS(sptr);
    }

    while ((status = fiatomic_request_check_status(sptr)) == UCS_INPROGRESS) {
        ucp_worker_progress(s->node.worker);
    }
    fiatomic_request_free(sptr);
    return status;
}

ucs_status_t perf_session_flush(perf_session_t *s)
{
    return perf_session_wait(s, fiatomic_ep_flush_nbx(s->ep, NULL));
}

/* fiatomic_ep_flush_nbx() can return while UCP still holds the library's
 * internal active-message sends of the target strategy (seen with 64 calls
 * in flight over tcp); the endpoint would then outlive fiatomic_destroy().
 * A UCP flush of the endpoint completes them. */
static void perf_session_ucp_flush(perf_session_t *s)
{
    ucp_request_param_t param;
    ucs_status_ptr_t sptr;

    param.op_attr_mask = 0;
    sptr = ucp_ep_flush_nbx(s->ucp_ep, &param);
    if (!UCS_PTR_IS_PTR(sptr)) {
        return;
    }
    while (ucp_request_check_status(sptr) == UCS_INPROGRESS) {
        ucp_worker_progress(s->node.worker);
    }
    ucp_request_free(sptr);
}

void perf_session_teardown(perf_session_t *s)
{
    ucp_request_param_t param;
    ucs_status_ptr_t sptr;

    perf_drv_ofi_close(s);
    (void)perf_session_flush(s);
    if (getenv("FIATOMIC_PERFTEST_NO_UCP_FLUSH") == NULL) { /* reproducer */
        perf_session_ucp_flush(s);
    }
    fiatomic_rkey_release(s->ep, s->key);
    fiatomic_ep_destroy(s->ep);
    if (s->ep_ordered != NULL) {
        fiatomic_rkey_release(s->ep_ordered, s->key_ordered);
        fiatomic_ep_destroy(s->ep_ordered);
    }
    free(s->key_buf);
    free(s->address_buf);
    free(s->ucp_rkey_buf);
    ucp_rkey_destroy(s->ucp_rkey);

    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    sptr = ucp_ep_close_nbx(s->ucp_ep, &param);
    while (UCS_PTR_IS_PTR(sptr) &&
           (ucp_request_check_status(sptr) == UCS_INPROGRESS)) {
        ucp_worker_progress(s->node.worker);
    }
    if (UCS_PTR_IS_PTR(sptr)) {
        ucp_request_free(sptr);
    }
    perf_node_cleanup(&s->node);
}

void perf_session_close(perf_session_t *s)
{
    int status_code;

    perf_session_teardown(s);
    (void)perf_session_command(s, PERF_CMD_QUIT, 0, 0, NULL, 0);
    close(s->ctl_fd);
    if ((s->server_pid > 0) &&
        ((waitpid(s->server_pid, &status_code, 0) < 0) ||
         !WIFEXITED(status_code) || WEXITSTATUS(status_code))) {
        fprintf(stderr, PERF_NAME ": the target process failed\n");
    }
}

int perf_session_swap_ordered(perf_session_t *s)
{
    fiatomic_ep_params_t params;
    ucs_status_t status;
    fiatomic_ep_h ep;
    uint64_t key;

    if (s->ep_ordered == NULL) {
        params.field_mask = FIATOMIC_EP_PARAM_FIELD_MSG_ORDER;
        params.msg_order  = FIATOMIC_EP_MSG_ORDER_SUPPORTED;
        status = fiatomic_ep_create(s->node.fia, s->ucp_ep, &params,
                                    &s->ep_ordered);
        if (status == UCS_OK) {
            status = fiatomic_rkey_unpack(s->ep_ordered, s->key_buf,
                                          s->key_len, &s->key_ordered);
            if (status != UCS_OK) {
                fiatomic_ep_destroy(s->ep_ordered);
            }
        }
        if (status != UCS_OK) {
            s->ep_ordered = NULL;
            fprintf(stderr, PERF_NAME ": ordered endpoint: %s\n",
                    ucs_status_string(status));
            return -1;
        }
    }

    ep            = s->ep;
    key           = s->key;
    s->ep         = s->ep_ordered;
    s->key        = s->key_ordered;
    s->ep_ordered = ep;
    s->key_ordered = key;
    return 0;
}

/* The transport name of a lane line of ucp_ep_print_info(), e.g.
 * "lane[0]:  2:posix/memory.0 md[1] -> md[1]/posix/sysdev[255] amo#0 am":
 * the text between the resource number's ':' and the '/'. */
static int perf_lane_line_tl(const char *line, char *tl, size_t max)
{
    const char *p = strstr(line, "]:"), *end;

    p   = (p != NULL) ? strchr(p + 2, ':') : NULL;
    end = (p != NULL) ? strchr(p, '/') : NULL;
    if ((end == NULL) || (end - p - 1 <= 0) || ((size_t)(end - p) > max)) {
        return -1;
    }
    memcpy(tl, p + 1, end - p - 1);
    tl[end - p - 1] = '\0';
    return 0;
}

const char *perf_session_lane_tl(perf_session_t *s)
{
    char *text = NULL, *line, *save = NULL, am_tl[32] = "";
    size_t size = 0;
    FILE *stream;

    if (s->lane_tl[0] != '\0') {
        return s->lane_tl;
    }
    snprintf(s->lane_tl, sizeof(s->lane_tl), "unknown");
    stream = open_memstream(&text, &size);
    if (stream == NULL) {
        return s->lane_tl;
    }
    ucp_ep_print_info(s->ucp_ep, stream);
    fclose(stream);
    for (line = strtok_r(text, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        if (strstr(line, "lane[") == NULL) {
            continue;
        }
        if ((strstr(line, " amo#") != NULL) &&
            (perf_lane_line_tl(line, s->lane_tl, sizeof(s->lane_tl)) == 0)) {
            break;
        }
        if ((am_tl[0] == '\0') &&
            ((strstr(line, " am ") != NULL) ||
             (strcmp(line + strlen(line) - 3, " am") == 0))) {
            perf_lane_line_tl(line, am_tl, sizeof(am_tl));
        }
    }
    free(text);
    if (!strcmp(s->lane_tl, "unknown") && (am_tl[0] != '\0')) {
        snprintf(s->lane_tl, sizeof(s->lane_tl), "%s", am_tl);
    }
    return s->lane_tl;
}
