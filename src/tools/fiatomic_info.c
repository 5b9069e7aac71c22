/**
 * fiatomic_info: the support matrix for the UCX configuration in the
 * environment, as a table or (--csv) one line per cell:
 *   family,op,datatype,supported,strategy,needs_target_progress
 *
 * Strategies depend on the endpoint and the key (a peer in another process
 * cannot take the direct path over tcp, one in this process could), so the
 * tool starts a second process as the target, exposes memory there, and asks
 * about a real endpoint to it.
 */
#include "fiatomic.h"
#include "tool_common.h"

#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define INFO_TARGET_LENGTH 4096

/* A pipe carries the target's address and key: a few KiB. */
#define INFO_MAX_BLOB (1u << 20)

/*
 * UCX logs to standard output by default (the FILE it took when it loaded,
 * before main), which would put its lines between those of the table or the
 * CSV. Point file descriptor 1 at standard error, so that every UCX line of
 * this process (and of the target, which inherits it) goes there, and write
 * the results to a stream on a copy of the original standard output.
 */
static FILE *info_stdout_for_results(void)
{
    FILE *out;
    int fd;

    fflush(stdout);
    fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    if ((fd < 0) || (dup2(STDERR_FILENO, STDOUT_FILENO) < 0)) {
        perror("fiatomic_info: redirecting UCX's log to stderr");
        return NULL;
    }
    out = fdopen(fd, "w");
    if (out == NULL) {
        perror("fiatomic_info: fdopen");
        close(fd);
    }
    return out;
}

/* The target process: expose memory, hand out address and key, progress
 * until the initiator closes the pipe. */
static int info_serve_target(int in_fd, int out_fd)
{
    fiatomic_mem_params_t mparams;
    ucp_address_t *address;
    size_t address_len, key_len;
    fiatomic_mem_h mem;
    tool_node_t node;
    void *key, *base;
    uint64_t base64;
    char byte;

    if (tool_node_init(&node, "fiatomic_info", NULL)) {
        return 1;
    }

    mparams.field_mask = FIATOMIC_MEM_PARAM_FIELD_LENGTH |
                         FIATOMIC_MEM_PARAM_FIELD_FLAGS;
    mparams.length     = INFO_TARGET_LENGTH;
    mparams.flags      = FIATOMIC_MEM_FLAG_ALLOCATE;
    if ((fiatomic_mem_expose(node.fia, &mparams, &mem) != UCS_OK) ||
        (fiatomic_mem_query(mem, &base, NULL) != UCS_OK) ||
        (fiatomic_mem_pack_key(mem, &key, &key_len) != UCS_OK) ||
        (ucp_worker_get_address(node.worker, &address, &address_len) !=
         UCS_OK)) {
        fprintf(stderr, "fiatomic_info: target setup failed\n");
        return 1;
    }

    base64 = (uintptr_t)base;
    if (tool_send_blob(out_fd, address, address_len) ||
        tool_send_blob(out_fd, key, key_len) ||
        tool_send_blob(out_fd, &base64, sizeof(base64))) {
        return 1;
    }
    ucp_worker_release_address(node.worker, address);
    fiatomic_key_release(key);

    /* Software atomics over active messages need this side to progress. */
    for (;;) {
        fd_set set;
        struct timeval tv = {0, 1000};

        ucp_worker_progress(node.worker);
        FD_ZERO(&set);
        FD_SET(in_fd, &set);
        if ((select(in_fd + 1, &set, NULL, NULL, &tv) > 0) &&
            (read(in_fd, &byte, 1) <= 0)) {
            break;
        }
    }

    fiatomic_mem_unexpose(mem);
    tool_node_cleanup(&node);
    return 0;
}

typedef struct {
    pid_t pid;
    int   to_target;   /* closing it tells the target to exit */
    int   from_target;
} info_target_t;

static int info_spawn_target(info_target_t *target)
{
    int to[2], from[2];
    char in_arg[16], out_arg[16];
    char *argv[5];
    posix_spawn_file_actions_t actions;

    if (pipe(to) || pipe(from)) {
        perror("fiatomic_info: pipe");
        return -1;
    }

    snprintf(in_arg, sizeof(in_arg), "%d", to[0]);
    snprintf(out_arg, sizeof(out_arg), "%d", from[1]);
    argv[0] = "fiatomic_info";
    argv[1] = "--serve-target";
    argv[2] = in_arg;
    argv[3] = out_arg;
    argv[4] = NULL;

    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addclose(&actions, to[1]);
    posix_spawn_file_actions_addclose(&actions, from[0]);
    /* the target's UCX log lines (UCX logs to stdout) must not land in the
     * middle of the table or CSV */
    posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
    if (posix_spawn(&target->pid, "/proc/self/exe", &actions, NULL, argv,
                    environ)) {
        perror("fiatomic_info: posix_spawn");
        return -1;
    }
    posix_spawn_file_actions_destroy(&actions);
    close(to[0]);
    close(from[1]);
    target->to_target   = to[1];
    target->from_target = from[0];
    return 0;
}

/* Elements of at most 8 bytes: everything before FI_DOUBLE_COMPLEX in enum
 * order, the 128-bit integers come after FI_DATATYPE_LAST. */
static int info_is_small(int datatype)
{
    return datatype < FI_DOUBLE_COMPLEX;
}

static void info_flush_cb(void *request, ucs_status_t status)
{
}

static void info_wait(ucp_worker_h worker, void *request)
{
    if (!UCS_PTR_IS_PTR(request)) {
        return;
    }
    while (ucp_request_check_status(request) == UCS_INPROGRESS) {
        ucp_worker_progress(worker);
    }
    ucp_request_free(request);
}

/* Is op a cell of this family for some datatype? */
static int info_op_in_family(fiatomic_ep_h ep, uint64_t key, int family,
                             int op)
{
    fiatomic_cell_info_t info;
    int dt;

    for (dt = 0; dt <= FI_UINT128; ++dt) {
        if (fiatomic_query_cell(ep, key, family, dt, op, &info) == 0) {
            return 1;
        }
    }
    return 0;
}

/* One block per family: a row per datatype, named in full (DOUBLE and
 * DOUBLE_COMPLEX must not look alike), a column per op of the family. */
static void info_print_table(FILE *out, fiatomic_ep_h ep, uint64_t key,
                             unsigned *supported,
                             unsigned *small_supported)
{
    fiatomic_cell_info_t info;
    int family, op, dt, width;
    int ops[FI_ATOMIC_OP_LAST], num_ops;

    fprintf(out, "strategy per cell: N native, C cas, D direct, "
            "T target-side, x unsupported here, . not a cell; "
            "* completion needs target progress\n");
    for (family = 0; family < FIATOMIC_FAMILY_LAST; ++family) {
        num_ops = 0;
        for (op = 0; op < FI_ATOMIC_OP_LAST; ++op) {
            if (info_op_in_family(ep, key, family, op)) {
                ops[num_ops++] = op;
            }
        }

        /* "FI_LONG_DOUBLE_COMPLEX" -> "LONG_DOUBLE_COMPLEX" */
        fprintf(out, "\n%s family\n%-20s", fiatomic_family_name(family),
                "");
        for (op = 0; op < num_ops; ++op) {
            fprintf(out, " %s", fiatomic_op_name(ops[op]) + 3);
        }
        fprintf(out, "\n");
        for (dt = 0; dt <= FI_UINT128; ++dt) {
            fprintf(out, "%-20s", fiatomic_datatype_name(dt) + 3);
            for (op = 0; op < num_ops; ++op) {
                char cell[3] = ".";
                if (fiatomic_query_cell(ep, key, family, dt, ops[op],
                                        &info) == 0) {
                    cell[0] = "xNCDT"[info.strategy];
                    cell[1] = info.needs_target_progress ? '*' : '\0';
                    if (info.strategy != FIATOMIC_STRATEGY_NONE) {
                        ++*supported;
                        *small_supported += info_is_small(dt);
                    }
                }
                /* no trailing blanks after the last column */
                width = (op + 1 == num_ops) ? 0 :
                        (int)strlen(fiatomic_op_name(ops[op]) + 3);
                fprintf(out, " %-*s", width, cell);
            }
            fprintf(out, "\n");
        }
    }
}

static void info_print_csv(FILE *out, fiatomic_ep_h ep, uint64_t key, int all,
                           unsigned *supported, unsigned *small_supported)
{
    fiatomic_cell_info_t info;
    int family, op, dt, ret;

    fprintf(out, "family,op,datatype,supported,strategy,"
            "needs_target_progress\n");
    for (family = 0; family < FIATOMIC_FAMILY_LAST; ++family) {
        for (op = 0; op < FI_ATOMIC_OP_LAST; ++op) {
            for (dt = 0; dt <= FI_UINT128; ++dt) {
                ret = fiatomic_query_cell(ep, key, family, dt, op, &info);
                if ((ret != 0) && !all) {
                    continue; /* not a cell of fi_atomic(3) at all */
                }
                if (ret != 0) {
                    info.strategy              = FIATOMIC_STRATEGY_NONE;
                    info.needs_target_progress = 0;
                }
                fprintf(out, "%s,%s,%s,%d,%s,%d\n",
                        fiatomic_family_name(family), fiatomic_op_name(op),
                        fiatomic_datatype_name(dt),
                        info.strategy != FIATOMIC_STRATEGY_NONE,
                        fiatomic_strategy_name(info.strategy),
                        info.needs_target_progress);
                if (info.strategy != FIATOMIC_STRATEGY_NONE) {
                    ++*supported;
                    *small_supported += info_is_small(dt);
                }
            }
        }
    }
}

static void usage(FILE *stream)
{
    fprintf(stream,
            "Usage: fiatomic_info [--csv [--all]]\n"
            "       fiatomic_info -c | --config\n"
            "       fiatomic_info --help | --version\n"
            "  Prints which fi_atomic(3) cells libfiatomic executes, and how,\n"
            "  for the UCX configuration in the environment (UCX_TLS, ...)\n"
            "  and FIATOMIC_STRATEGY, between this process and a target\n"
            "  process it starts.\n"
            "  -c, --config   list libfiatomic's FIATOMIC_* settings (meaning,\n"
            "                 default, value in effect) and exit\n"
            "  --csv          one line per cell: family,op,datatype,supported,"
            "strategy,needs_target_progress\n"
            "  --all          with --csv, also the (family, op, datatype)\n"
            "                 triples that are not cells of fi_atomic(3)\n"
            "                 (supported=0)\n"
            "  -h, --help     this text\n"
            "  -V, --version  the version, and that of the UCX in use\n"
            "See fiatomic_info(1).\n");
}

static void version(void)
{
    printf("fiatomic_info (atomicx) %s\nUCX %s\n", FIATOMIC_VERSION_STRING,
           ucp_get_version_string());
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"csv",  no_argument, NULL, 's'},
        {"config", no_argument, NULL, 'c'},
        {"all",  no_argument, NULL, 'a'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}
    };
    unsigned supported = 0, small_supported = 0;
    int csv = 0, all = 0, config = 0, opt, status_code;
    void *address, *key_buf, *base_buf;
    size_t address_len, key_len, base_len;
    ucp_ep_params_t ep_params;
    info_target_t target;
    ucp_ep_h ucp_ep;
    fiatomic_ep_h ep;
    tool_node_t node;
    uint64_t key;
    void *close_req;
    FILE *out;

    if ((argc == 4) && !strcmp(argv[1], "--serve-target")) {
        return info_serve_target(atoi(argv[2]), atoi(argv[3]));
    }

    while ((opt = getopt_long(argc, argv, "cahV", options, NULL)) != -1) {
        switch (opt) {
        case 'c': config = 1; break;
        case 's': csv = 1; break;
        case 'a': all = 1; break;
        case 'h': usage(stdout); return 0;
        case 'V': version(); return 0;
        default:  usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "fiatomic_info: unexpected argument '%s'\n",
                argv[optind]);
        usage(stderr);
        return 2;
    }
    if (all && !csv) {
        fprintf(stderr, "fiatomic_info: --all needs --csv\n");
        return 2;
    }
    if (config && (csv || all)) {
        fprintf(stderr, "fiatomic_info: --config takes no other option\n");
        return 2;
    }
    if (config) {
        fiatomic_config_print(stdout);
        return 0;
    }

    signal(SIGPIPE, SIG_IGN);
    out = info_stdout_for_results();
    if ((out == NULL) || info_spawn_target(&target) ||
        tool_node_init(&node, "fiatomic_info", NULL)) {
        return 1;
    }

    address  = tool_recv_blob(target.from_target, INFO_MAX_BLOB,
                              &address_len);
    key_buf  = tool_recv_blob(target.from_target, INFO_MAX_BLOB, &key_len);
    base_buf = tool_recv_blob(target.from_target, INFO_MAX_BLOB, &base_len);
    if ((address == NULL) || (key_buf == NULL) || (base_buf == NULL)) {
        fprintf(stderr, "fiatomic_info: the target process failed\n");
        return 1;
    }

    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep_params.address    = address;
    if ((ucp_ep_create(node.worker, &ep_params, &ucp_ep) != UCS_OK) ||
        (fiatomic_ep_create(node.fia, ucp_ep, NULL, &ep) != UCS_OK) ||
        (fiatomic_rkey_unpack(ep, key_buf, key_len, &key) != UCS_OK)) {
        fprintf(stderr, "fiatomic_info: cannot reach the target over UCX\n");
        return 1;
    }
    /* Complete wireup both ways before asking (lanes decide strategies)
     * and before tearing down (UCX 1.13 asserts on a worker destroyed with
     * wireup still pending). */
    info_wait(node.worker, ucp_ep_flush_nb(ucp_ep, 0, info_flush_cb));

    if (csv) {
        info_print_csv(out, ep, key, all, &supported, &small_supported);
    } else {
        const char *tls = getenv("UCX_TLS");
        const char *forced = getenv("FIATOMIC_STRATEGY");
        fprintf(out, "libfiatomic %s, UCX %s, UCX_TLS=%s, "
                "FIATOMIC_STRATEGY=%s\n\n", FIATOMIC_VERSION_STRING,
                ucp_get_version_string(), tls ? tls : "(default)",
                forced ? forced : "auto");
        info_print_table(out, ep, key, &supported, &small_supported);
        fprintf(out, "\n%u supported cells (%u with elements of at most 8 "
                "bytes) of 414\n", supported, small_supported);
    }
    if (fclose(out) != 0) {
        perror("fiatomic_info: writing the output");
        return 1;
    }

    fiatomic_rkey_release(ep, key);
    fiatomic_ep_destroy(ep);
    close_req = ucp_ep_close_nb(ucp_ep, UCP_EP_CLOSE_MODE_FLUSH);
    info_wait(node.worker, close_req);
    tool_node_cleanup(&node);
    free(address);
    free(key_buf);
    free(base_buf);

    close(target.to_target);
    if ((waitpid(target.pid, &status_code, 0) < 0) ||
        !WIFEXITED(status_code) || WEXITSTATUS(status_code)) {
        fprintf(stderr, "fiatomic_info: the target process failed\n");
        return 1;
    }
    return 0;
}
