/**
 * fiatomic_perftest: latency and message rate of libfiatomic's calls
 * between two processes, like ucx_perftest:
 *   fiatomic_perftest --server [-p PORT]        the target
 *   fiatomic_perftest HOST [-p PORT] [options]  the initiator
 *   fiatomic_perftest [options]                 loopback: starts its own
 *                                               target process
 * and a matrix mode that verifies and times every supported cell per
 * transport. See usage() and docs/performance.md.
 */
#define _GNU_SOURCE /* sched_setaffinity */
#include "perftest.h"
#include "fiatomic_ref.h"

#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

enum {
    PERF_OPT_SERVE_FD = 256,
    PERF_OPT_CPU,
    PERF_OPT_MATRIX,
    PERF_OPT_TRANSPORTS,
    PERF_OPT_STRATEGY,
    PERF_OPT_VERIFY,
    PERF_OPT_NO_VERIFY,
    PERF_OPT_VERIFY_COUNT,
    PERF_OPT_BASELINE,
    PERF_OPT_PROVIDERS,
    PERF_OPT_ORDERED,
    PERF_OPT_CSV,
    PERF_OPT_PIN,
    PERF_OPT_GOALS,
    PERF_OPT_GOAL,
    PERF_OPT_PROGRESS,
    PERF_OPT_REPORT_INTERVAL,
    PERF_OPT_SCALE,
    PERF_OPT_INITIATORS,
    PERF_OPT_ELEMENTS,
    PERF_OPT_SECONDS,
    PERF_OPT_SCALE_INITIATOR
};

static void usage(void)
{
    const char *names;

    printf(
"Usage: fiatomic_perftest [HOST] [options]\n"
"  Latency and message rate of libfiatomic calls between two processes.\n"
"  Without HOST and --server it runs in loopback mode: it starts its own\n"
"  target process (same environment: UCX_TLS, FIATOMIC_STRATEGY).\n"
"\n"
"Roles:\n"
"  --server            be the target; serve one initiator, then exit\n"
"  HOST                be the initiator of a target at HOST\n"
"  -p, --port PORT     control port (default %d)\n"
"\n"
"What to run (single-cell mode):\n"
"  -f, --family F      base | fetch | compare (default fetch)\n"
"  -o, --op OP         FI_SUM, sum, cswap_le, ... (default FI_SUM)\n"
"  -d, --datatype DT   FI_UINT64, u64, f32, ... (default FI_UINT64)\n"
"  -c, --count N       elements per call (default 1, at most %u)\n"
"  -W, --window N      calls in flight (default 1 = latency test)\n"
"  -n, --iters N       timed calls (default 10000)\n"
"  -w, --warmup N      untimed calls first (default 1000)\n"
"  --strategy S        set FIATOMIC_STRATEGY=auto|native|cas|direct|target\n"
"                      (--scale: a comma-separated list is given to the\n"
"                      initiators in turn, e.g. cas,target,native)\n"
"  --baseline ucp      also time raw ucp_atomic_op_nbx (cells UCP has)\n"
"  --baseline libfabric  also time libfabric's shm or tcp;ofi_rxm\n"
"  --providers LIST    also time these libfabric providers, side by side\n"
"                      (comma-separated, at most %d; e.g. 'fiatomic,shm,\n"
"                      tcp;ofi_rxm'; one outside libfabric's directory is\n"
"                      loaded from FI_PROVIDER_PATH)\n"
"  --ordered           also time the cell on an endpoint with same-address\n"
"                      ordering (FI_ORDER_ATOMIC_RAR|RAW|WAR|WAW), side by\n"
"                      side with the unordered one\n"
"  --verify / --no-verify  check results against the reference model\n"
"                      (default: on in matrix mode, off otherwise)\n"
"  --verify-count N    elements per verification call (default 8)\n"
"\n"
"Modes:\n"
"  --matrix            every supported cell, one table per transport\n"
"  --transports LIST   matrix/goals transports (default posix,tcp); join\n"
"                      several into one UCX_TLS with '+': atomicx+tcp\n"
"  --goals             measure and judge the performance goals\n"
"  --goal LIST         --goals, only the goals named (comma-separated,\n"
"                      e.g. mallocs-per-call,rss-growth-mib)\n"
"  --scale             N initiator processes on one target, the same\n"
"                      elements and disjoint ones: aggregate and\n"
"                      per-initiator rates, Jain's fairness, CAS retries,\n"
"                      final values checked against the reference model\n"
"  --initiators LIST   --scale sweep (default 1,2,4,8,16; each 1 to %d)\n"
"  --elements E        --scale: same | disjoint | both (default both)\n"
"  --seconds S         --scale: timed span of each point (default 1)\n"
"\n"
"Output:\n"
"  --csv               CSV instead of tables\n"
"  --progress          a line per cell on stderr (matrix, goals)\n"
"  --pin C,S           pin initiator to CPU C and the target to CPU S\n"
"  -h, --help          this text\n"
"  -V, --version       the version, and that of the UCX in use\n"
"  --report-interval S a progress line on stderr every S seconds of a long\n"
"                      measurement (default 1; 0: none)\n",
    PERF_DEFAULT_PORT, FIATOMIC_MAX_COUNT_LIMIT, PERF_MAX_OFI_PROVIDERS,
    PERF_SCALE_MAX_INITIATORS);
    /* the goal names, one a line, from the table --goal checks against */
    printf("\nGoals (--goals measures every one, --goal LIST those named):\n"
           "  ");
    for (names = perf_goal_names(); *names != '\0'; ++names) {
        if ((names[0] == ',') && (names[1] == ' ')) {
            printf("\n  ");
            ++names;
        } else {
            putchar(*names);
        }
    }
    printf("\nSee fiatomic_perftest(1).\n");
}

static void version(void)
{
    printf(PERF_NAME " (atomicx) %s\nUCX %s\n", FIATOMIC_VERSION_STRING,
           ucp_get_version_string());
}

/* A bad value, named: "invalid datatype 's16': expected ..." (exit 2). */
static int perf_bad_value(const char *what, const char *value,
                          const char *expected)
{
    fprintf(stderr, PERF_NAME ": invalid %s '%s': expected %s\n"
            "Try '" PERF_NAME " --help'.\n", what, value, expected);
    return -1;
}

/* A decimal number in [min, max], nothing else. */
static int perf_parse_number(const char *what, const char *arg,
                             unsigned long long min, unsigned long long max,
                             unsigned long long *value_p)
{
    char expected[96];
    unsigned long long v;
    char *end;

    snprintf(expected, sizeof(expected), "a number from %llu to %llu", min,
             max);
    errno = 0;
    v     = strtoull(arg, &end, 10);
    if ((*arg == '\0') || (*arg == '-') || (*end != '\0') ||
        (errno != 0) || (v < min) || (v > max)) {
        return perf_bad_value(what, arg, expected);
    }
    *value_p = v;
    return 0;
}

/* "min, max, sum, ..." from a name table */
static const char *perf_name_list(int last, const char *(*name)(int),
                                  char *buf, size_t max)
{
    size_t len = 0;
    int i;

    buf[0] = '\0';
    for (i = 0; (i < last) && (len < max); ++i) {
        if (name(i) != NULL) {
            len += snprintf(buf + len, max - len, "%s%s", len ? ", " : "",
                            name(i));
        }
    }
    return buf;
}

/* "FI_SUM", "SUM", "sum" all name FI_SUM. */
static int perf_parse_name(const char *arg, int last,
                           const char *(*fi_name)(int),
                           const char *(*short_name)(int))
{
    const char *name;
    int i;

    for (i = 0; i < last; ++i) {
        name = fi_name(i);
        if ((name != NULL) &&
            (!strcasecmp(arg, name) || !strcasecmp(arg, name + 3))) {
            return i;
        }
        name = short_name(i);
        if ((name != NULL) && !strcasecmp(arg, name)) {
            return i;
        }
    }
    return -1;
}

static int perf_parse_family(const char *arg)
{
    int f;

    for (f = 0; f < FIATOMIC_FAMILY_LAST; ++f) {
        if (!strcasecmp(arg, fiatomic_family_name(f))) {
            return f;
        }
    }
    return -1;
}

/* Whether a comma-separated list has no empty element: strtok_r() would
 * silently skip the one in "1,,2" or "1,2,", and a list that does not say
 * what the user meant must be refused, not guessed. `seps` are the
 * separators ("," or ",+" for transports joined with '+'). */
static int perf_list_well_formed(const char *arg, const char *seps)
{
    const char *p;

    if ((*arg == '\0') || (strchr(seps, *arg) != NULL)) {
        return 0;
    }
    for (p = arg; *p != '\0'; ++p) {
        if ((strchr(seps, p[0]) != NULL) &&
            ((p[1] == '\0') || (strchr(seps, p[1]) != NULL))) {
            return 0;
        }
    }
    return 1;
}

/* "posix,tcp" is two runs; "atomicx+tcp" is one run with UCX_TLS=atomicx,tcp */
static int perf_parse_list(char *arg, perf_opts_t *o)
{
    char *tok, *save = NULL, *plus;

    if (!perf_list_well_formed(arg, ",+")) {
        return -1;
    }
    o->num_transports = 0;
    for (tok = strtok_r(arg, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (o->num_transports == PERF_MAX_TRANSPORTS) {
            return -1;
        }
        for (plus = strchr(tok, '+'); plus != NULL; plus = strchr(plus, '+')) {
            *plus = ',';
        }
        o->transports[o->num_transports++] = tok;
    }
    return o->num_transports ? 0 : -1;
}

/* --goal mallocs-per-call,rss-growth-mib: the goals to measure */
static int perf_parse_goal_names(char *arg, perf_opts_t *o)
{
    char *tok, *save = NULL;

    if (!perf_list_well_formed(arg, ",")) {
        perf_bad_value("goal list", arg, "goal names separated by single "
                       "commas");
        return -1;
    }
    o->num_goal_names = 0;
    for (tok = strtok_r(arg, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (!perf_goal_known(tok)) {
            perf_bad_value("goal", tok, perf_goal_names());
            return -1;
        }
        if (o->num_goal_names == PERF_MAX_GOAL_NAMES) {
            perf_bad_value("goal list", tok, "at most 32 goals");
            return -1;
        }
        o->goal_names[o->num_goal_names++] = tok;
    }
    if (o->num_goal_names == 0) {
        perf_bad_value("goal", arg, perf_goal_names());
        return -1;
    }
    return 0;
}

/* --providers fiatomic,shm,tcp;ofi_rxm: libfabric's names, passed to
 * fi_getinfo as they are (a name it does not know fails the run then) */
static int perf_parse_providers(char *arg, perf_opts_t *o)
{
    char *tok, *save = NULL;
    char expected[96];
    unsigned num = 1;
    const char *p;
    size_t len = 0;

    snprintf(expected, sizeof(expected), "1 to %d libfabric provider names "
             "separated by single commas", PERF_MAX_OFI_PROVIDERS);
    /* judged whole before strtok_r() cuts it, so the message shows it */
    for (p = arg; *p != '\0'; ++p) {
        num += (*p == ',');
        len  = (*p == ',') ? 0 : len + 1;
        if (len > PERF_MAX_OFI_NAME) {
            break;
        }
    }
    if (!perf_list_well_formed(arg, ",") || (num > PERF_MAX_OFI_PROVIDERS) ||
        (len > PERF_MAX_OFI_NAME)) {
        return perf_bad_value("provider list", arg, expected);
    }
    o->num_ofi_providers = 0;
    for (tok = strtok_r(arg, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        o->ofi_providers[o->num_ofi_providers++] = tok;
    }
    return 0;
}

/* "cas" or, for --scale, "cas,target,native": one per initiator in turn.
 * A single name also goes to FIATOMIC_STRATEGY of every process. */
static int perf_parse_strategies(char *arg, perf_opts_t *o)
{
    static const char *const names[] = {"auto", "native", "cas", "direct",
                                        "target"};
    char *tok, *save = NULL;
    unsigned i;

    if (!perf_list_well_formed(arg, ",")) {
        perf_bad_value("strategy list", arg, "strategies separated by single "
                       "commas");
        return -1;
    }
    o->num_scale_strategies = 0;
    for (tok = strtok_r(arg, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        for (i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
            if (!strcmp(tok, names[i])) { /* FIATOMIC_STRATEGY's spelling */
                break;
            }
        }
        if (i == sizeof(names) / sizeof(names[0])) {
            perf_bad_value("strategy", tok,
                           "auto, native, cas, direct or target (--scale: "
                           "a comma-separated list)");
            return -1;
        }
        if (o->num_scale_strategies == PERF_SCALE_MAX_STRATEGIES) {
            perf_bad_value("strategy list", tok, "at most 8 strategies");
            return -1;
        }
        o->scale_strategies[o->num_scale_strategies++] = tok;
    }
    if (o->num_scale_strategies == 0) {
        perf_bad_value("strategy", arg, "auto, native, cas, direct or "
                       "target");
        return -1;
    }
    o->strategy = (o->num_scale_strategies == 1) ? o->scale_strategies[0] :
                  NULL;
    return 0;
}

/* "1,2,4,8,16" */
static int perf_parse_initiators(char *arg, perf_opts_t *o)
{
    char expected[96], *tok, *save = NULL;
    unsigned long long num;

    snprintf(expected, sizeof(expected), "a comma-separated list of at "
             "most %d counts", PERF_SCALE_MAX_POINTS);
    if (!perf_list_well_formed(arg, ",")) {
        return perf_bad_value("initiator list", arg, expected);
    }
    o->num_scale_counts = 0;
    for (tok = strtok_r(arg, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (perf_parse_number("initiator count", tok, 1,
                              PERF_SCALE_MAX_INITIATORS, &num)) {
            return -1;
        }
        if (o->num_scale_counts == PERF_SCALE_MAX_POINTS) {
            return perf_bad_value("initiator list", tok, expected);
        }
        o->scale_counts[o->num_scale_counts++] = (unsigned)num;
    }
    if (o->num_scale_counts == 0) {
        return perf_bad_value("initiator list", arg, expected);
    }
    return 0;
}

/* "--pin C,S": two CPUs this process may run on (its affinity mask, which
 * the target process inherits); a CPU that does not exist or is not in the
 * mask could not be honoured, so it is refused rather than ignored. */
static int perf_parse_pin(const char *arg, perf_opts_t *o)
{
    char extra;
    int cpus[2], i;
    cpu_set_t set;

    if ((sscanf(arg, "%d,%d%c", &cpus[0], &cpus[1], &extra) != 2) ||
        (cpus[0] < 0) || (cpus[1] < 0)) {
        return perf_bad_value("CPU pair", arg,
                              "two CPU numbers, INITIATOR,TARGET");
    }
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set)) {
        perror(PERF_NAME ": sched_getaffinity");
        return -1;
    }
    for (i = 0; i < 2; ++i) {
        if ((cpus[i] >= CPU_SETSIZE) || !CPU_ISSET(cpus[i], &set)) {
            fprintf(stderr, PERF_NAME ": invalid CPU pair '%s': CPU %d is "
                    "not one this process may run on (%d CPUs in its "
                    "affinity mask)\nTry '" PERF_NAME " --help'.\n", arg,
                    cpus[i], CPU_COUNT(&set));
            return -1;
        }
    }
    o->cpu_client = cpus[0];
    o->cpu_server = cpus[1];
    return 0;
}

static void perf_pin(int cpu)
{
    cpu_set_t set;

    if (cpu < 0) {
        return;
    }
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set)) {
        perror(PERF_NAME ": sched_setaffinity");
    }
}

static int perf_server_listen(int port)
{
    int lfd, fd, ret;

    lfd = perf_ctl_listen(port);
    if (lfd < 0) {
        return 1;
    }
    printf("Waiting for connection on port %d...\n", port);
    fflush(stdout);
    fd = perf_ctl_accept(lfd);
    close(lfd);
    if (fd < 0) {
        return 1;
    }
    ret = perf_server_run(fd);
    close(fd);
    return ret;
}

/* main's steps: parse the options, check them together, set up and run
 * (each mode reports as it measures). */
#define PERF_GO_ON      (-1) /* no exit status yet: the next step */
#define PERF_EXIT_OK    0
#define PERF_EXIT_USAGE 2    /* a bad option or combination */

/* What the command line asks for besides perf_opts_t. */
typedef struct perf_cmd {
    int server;   /* -s: wait for a client */
    int serve_fd; /* the target of a loopback run, on this socket */
    int matrix;
    int goals;
    int verify;   /* -1: as the mode's default */
    int scale;
    int scale_fd; /* an initiator of a scaling run, on this socket */
} perf_cmd_t;

/* The options' defaults (the transports: posix,tcp; the executable the
 * target process runs: this one's real path). */
static void perf_opts_init(perf_opts_t *o)
{
    /* kept: o points into both */
    static char default_tls[] = "posix,tcp";
    static char self_exe[4096];
    ssize_t len;

    memset(o, 0, sizeof(*o));
    o->port                 = PERF_DEFAULT_PORT;
    o->params.cell.family   = FIATOMIC_FAMILY_FETCH;
    o->params.cell.op       = FI_SUM;
    o->params.cell.datatype = FI_UINT64;
    o->params.count         = 1;
    o->params.window        = 1;
    o->params.iters         = 10000;
    o->params.warmup        = 1000;
    o->verify_count         = 8;
    o->cpu_client           = -1;
    o->cpu_server           = -1;
    o->self_exe             = "/proc/self/exe";
    o->scale_same           = 1;
    o->scale_disjoint       = 1;
    o->scale_seconds        = 1.0;
    o->num_scale_counts     = 5;
    o->scale_counts[0]      = 1;
    o->scale_counts[1]      = 2;
    o->scale_counts[2]      = 4;
    o->scale_counts[3]      = 8;
    o->scale_counts[4]      = 16;
    /* the real path, so that valgrind (which virtualizes this readlink)
     * follows the target process too */
    len = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
    if (len > 0) {
        self_exe[len] = '\0';
        o->self_exe    = self_exe;
    }
    perf_parse_list(default_tls, o);
}

/* Step 1: the command line into o and cmd. PERF_GO_ON, or the exit
 * status when it ends the run here (--help, --version, a bad option). */
static int perf_parse_args(int argc, char **argv, perf_opts_t *o,
                           perf_cmd_t *cmd)
{
    static const struct option options[] = {
        {"server",       no_argument,       NULL, 's'},
        {"port",         required_argument, NULL, 'p'},
        {"family",       required_argument, NULL, 'f'},
        {"op",           required_argument, NULL, 'o'},
        {"datatype",     required_argument, NULL, 'd'},
        {"count",        required_argument, NULL, 'c'},
        {"window",       required_argument, NULL, 'W'},
        {"iters",        required_argument, NULL, 'n'},
        {"warmup",       required_argument, NULL, 'w'},
        {"help",         no_argument,       NULL, 'h'},
        {"version",      no_argument,       NULL, 'V'},
        {"serve-fd",     required_argument, NULL, PERF_OPT_SERVE_FD},
        {"cpu",          required_argument, NULL, PERF_OPT_CPU},
        {"matrix",       no_argument,       NULL, PERF_OPT_MATRIX},
        {"transports",   required_argument, NULL, PERF_OPT_TRANSPORTS},
        {"strategy",     required_argument, NULL, PERF_OPT_STRATEGY},
        {"verify",       no_argument,       NULL, PERF_OPT_VERIFY},
        {"no-verify",    no_argument,       NULL, PERF_OPT_NO_VERIFY},
        {"verify-count", required_argument, NULL, PERF_OPT_VERIFY_COUNT},
        {"baseline",     required_argument, NULL, PERF_OPT_BASELINE},
        {"providers",    required_argument, NULL, PERF_OPT_PROVIDERS},
        {"ordered",      no_argument,       NULL, PERF_OPT_ORDERED},
        {"csv",          no_argument,       NULL, PERF_OPT_CSV},
        {"pin",          required_argument, NULL, PERF_OPT_PIN},
        {"goals",        no_argument,       NULL, PERF_OPT_GOALS},
        {"goal",         required_argument, NULL, PERF_OPT_GOAL},
        {"progress",     no_argument,       NULL, PERF_OPT_PROGRESS},
        {"report-interval", required_argument, NULL,
         PERF_OPT_REPORT_INTERVAL},
        {"scale",        no_argument,       NULL, PERF_OPT_SCALE},
        {"initiators",   required_argument, NULL, PERF_OPT_INITIATORS},
        {"elements",     required_argument, NULL, PERF_OPT_ELEMENTS},
        {"seconds",      required_argument, NULL, PERF_OPT_SECONDS},
        {"scale-initiator", required_argument, NULL,
         PERF_OPT_SCALE_INITIATOR},
        {NULL, 0, NULL, 0}
    };
    unsigned long long num;
    char names[512], *end;
    double seconds;
    int opt;

    while ((opt = getopt_long(argc, argv, "sp:f:o:d:c:W:n:w:hV", options,
                              NULL)) != -1) {
        switch (opt) {
        case 's': cmd->server = 1; break;
        case 'p':
            if (perf_parse_number("port", optarg, 1, 65535, &num)) {
                return PERF_EXIT_USAGE;
            }
            o->port = (int)num;
            break;
        case 'f':
            o->params.cell.family = perf_parse_family(optarg);
            if (o->params.cell.family < 0) {
                perf_bad_value("family", optarg, "base, fetch or compare");
                return PERF_EXIT_USAGE;
            }
            break;
        case 'o':
            o->params.cell.op = perf_parse_name(optarg, FI_ATOMIC_OP_LAST,
                                               fiatomic_ref_op_name,
                                               fiatomic_ref_op_short_name);
            if (o->params.cell.op < 0) {
                perf_bad_value("op", optarg,
                               perf_name_list(FI_ATOMIC_OP_LAST,
                                              fiatomic_ref_op_short_name,
                                              names, sizeof(names)));
                return PERF_EXIT_USAGE;
            }
            break;
        case 'd':
            o->params.cell.datatype =
                perf_parse_name(optarg, FIATOMIC_REF_DATATYPE_COUNT,
                                fiatomic_ref_datatype_name,
                                fiatomic_ref_datatype_short_name);
            if (o->params.cell.datatype < 0) {
                perf_bad_value("datatype", optarg,
                               perf_name_list(FIATOMIC_REF_DATATYPE_COUNT,
                                              fiatomic_ref_datatype_short_name,
                                              names, sizeof(names)));
                return PERF_EXIT_USAGE;
            }
            break;
        case 'c':
            if (perf_parse_number("count", optarg, 1,
                                  FIATOMIC_MAX_COUNT_LIMIT, &num)) {
                return PERF_EXIT_USAGE;
            }
            o->params.count = num;
            break;
        case 'W':
            if (perf_parse_number("window", optarg, 1,
                                  FIATOMIC_MAX_INFLIGHT_LIMIT, &num)) {
                return PERF_EXIT_USAGE;
            }
            o->params.window = (unsigned)num;
            break;
        case 'n':
            if (perf_parse_number("iteration count", optarg, 1, SIZE_MAX,
                                  &num)) {
                return PERF_EXIT_USAGE;
            }
            o->params.iters = num;
            break;
        case 'w':
            if (perf_parse_number("warm-up count", optarg, 0, SIZE_MAX,
                                  &num)) {
                return PERF_EXIT_USAGE;
            }
            o->params.warmup = num;
            break;
        case PERF_OPT_SERVE_FD: cmd->serve_fd = atoi(optarg); break;
        case PERF_OPT_CPU: o->cpu_server = atoi(optarg); break;
        case PERF_OPT_MATRIX: cmd->matrix = 1; break;
        case PERF_OPT_TRANSPORTS:
            if (perf_parse_list(optarg, o)) {
                snprintf(names, sizeof(names), "1 to %d transports, "
                         "comma-separated (posix,tcp; atomicx+tcp)",
                         PERF_MAX_TRANSPORTS);
                perf_bad_value("transport list", optarg, names);
                return PERF_EXIT_USAGE;
            }
            break;
        case PERF_OPT_STRATEGY:
            if (perf_parse_strategies(optarg, o)) {
                return PERF_EXIT_USAGE;
            }
            break;
        case PERF_OPT_SCALE: cmd->scale = 1; break;
        case PERF_OPT_INITIATORS:
            if (perf_parse_initiators(optarg, o)) {
                return PERF_EXIT_USAGE;
            }
            break;
        case PERF_OPT_ELEMENTS:
            o->scale_same     = !strcasecmp(optarg, "same") ||
                               !strcasecmp(optarg, "both");
            o->scale_disjoint = !strcasecmp(optarg, "disjoint") ||
                               !strcasecmp(optarg, "both");
            if (!o->scale_same && !o->scale_disjoint) {
                perf_bad_value("element layout", optarg,
                               "same, disjoint or both");
                return PERF_EXIT_USAGE;
            }
            break;
        case PERF_OPT_SECONDS:
            seconds = strtod(optarg, &end);
            if ((end == optarg) || (*end != '\0') || !(seconds >= 0.01) ||
                (seconds > 3600)) {
                perf_bad_value("timed span", optarg,
                               "seconds from 0.01 to 3600");
                return PERF_EXIT_USAGE;
            }
            o->scale_seconds = seconds;
            break;
        case PERF_OPT_SCALE_INITIATOR: cmd->scale_fd = atoi(optarg); break;
        case PERF_OPT_VERIFY: cmd->verify = 1; break;
        case PERF_OPT_ORDERED: o->ordered = 1; break;
        case PERF_OPT_NO_VERIFY: cmd->verify = 0; break;
        case PERF_OPT_VERIFY_COUNT:
            if (perf_parse_number("verification count", optarg, 1,
                                  FIATOMIC_MAX_COUNT_LIMIT, &num)) {
                return PERF_EXIT_USAGE;
            }
            o->verify_count = num;
            break;
        case PERF_OPT_BASELINE:
            if (!strcasecmp(optarg, "ucp")) {
                o->baseline_ucp = 1;
            } else if (!strcasecmp(optarg, "libfabric") ||
                       !strcasecmp(optarg, "ofi")) {
                if (!perf_drv_ofi_available()) {
                    fprintf(stderr, PERF_NAME ": built without libfabric "
                            "(configure --with-libfabric)\n");
                    return PERF_EXIT_USAGE;
                }
                o->baseline_ofi = 1;
            } else {
                perf_bad_value("baseline", optarg, "ucp or libfabric");
                return PERF_EXIT_USAGE;
            }
            break;
        case PERF_OPT_PROVIDERS:
            if (!perf_drv_ofi_available()) {
                fprintf(stderr, PERF_NAME ": built without libfabric "
                        "(configure --with-libfabric)\n");
                return PERF_EXIT_USAGE;
            }
            if (perf_parse_providers(optarg, o)) {
                return PERF_EXIT_USAGE;
            }
            o->baseline_ofi = 1;
            break;
        case PERF_OPT_CSV: o->fmt = PERF_FMT_CSV; break;
        case PERF_OPT_PIN:
            if (perf_parse_pin(optarg, o)) {
                return PERF_EXIT_USAGE;
            }
            break;
        case PERF_OPT_GOALS: cmd->goals = 1; break;
        case PERF_OPT_GOAL:
            if (perf_parse_goal_names(optarg, o)) {
                return PERF_EXIT_USAGE;
            }
            cmd->goals = 1;
            break;
        case PERF_OPT_PROGRESS: o->progress = 1; break;
        case PERF_OPT_REPORT_INTERVAL:
            seconds = strtod(optarg, &end);
            if ((end == optarg) || (*end != '\0') || !(seconds >= 0) ||
                (seconds > 86400)) {
                perf_bad_value("report interval", optarg,
                               "seconds from 0 (none) to 86400");
                return PERF_EXIT_USAGE;
            }
            perf_measure_report_interval(seconds);
            break;
        case 'h': usage(); return PERF_EXIT_OK;
        case 'V': version(); return PERF_EXIT_OK;
        default:
            fprintf(stderr, "Try '" PERF_NAME " --help'.\n");
            return PERF_EXIT_USAGE;
        }
    }

    return PERF_GO_ON;
}

/* Step 2: what the options ask for together, and the HOST argument.
 * PERF_GO_ON, or the exit status of a refused combination. */
static int perf_check_args(int argc, char **argv, perf_opts_t *o,
                           const perf_cmd_t *cmd)
{
    if (optind + 1 < argc) {
        fprintf(stderr, PERF_NAME ": unexpected argument '%s' (one HOST at "
                "most)\nTry '" PERF_NAME " --help'.\n", argv[optind + 1]);
        return PERF_EXIT_USAGE;
    }
    /* the window's elements must fit the target's region (perftest_slots.c) */
    if (perf_slot_stride(&o->params) * o->params.window >
        PERF_REGION_SIZE / 2) {
        fprintf(stderr, PERF_NAME ": window %u x count %zu of %s (%zu bytes "
                "each) needs more than the %u MiB of target memory the test "
                "uses; lower -W or -c\n", o->params.window,
                o->params.count,
                fiatomic_ref_datatype_name(o->params.cell.datatype),
                fiatomic_ref_datatype_size(o->params.cell.datatype),
                PERF_REGION_SIZE / 2 / (1u << 20));
        return PERF_EXIT_USAGE;
    }
    if (optind < argc) {
        o->host = argv[optind];
    }
    if ((o->num_scale_strategies > 1) && !cmd->scale) {
        fprintf(stderr, PERF_NAME ": a list of strategies is for --scale "
                "(one per initiator)\nTry '" PERF_NAME " --help'.\n");
        return PERF_EXIT_USAGE;
    }
    if (cmd->scale && (o->params.window > PERF_SCALE_MAX_WINDOW)) {
        fprintf(stderr, PERF_NAME ": invalid window '%u' for --scale: "
                "expected 1 to %d\n", o->params.window,
                PERF_SCALE_MAX_WINDOW);
        return PERF_EXIT_USAGE;
    }
    if (cmd->scale && (cmd->goals || cmd->matrix)) {
        fprintf(stderr, PERF_NAME ": --scale, --matrix and --goals are "
                "separate modes\nTry '" PERF_NAME " --help'.\n");
        return PERF_EXIT_USAGE;
    }
    return PERF_GO_ON;
}

/* Steps 3 and 4: set up this process (the strategy the library reads,
 * the CPU, the clock) and run the mode asked for, which reports its
 * results as it measures them (perftest_report.c). The exit status. */
static int perf_run(perf_opts_t *o, const perf_cmd_t *cmd)
{
    int ret;

    if (o->strategy != NULL) {
        setenv("FIATOMIC_STRATEGY", o->strategy, 1);
    }

    if (cmd->server) {
        return perf_server_listen(o->port);
    }

    perf_pin(o->cpu_client);
    perf_time_init();
    o->verify = (cmd->verify >= 0) ? cmd->verify : cmd->matrix;

    if (cmd->scale) {
        ret = perf_scale_run(o);
    } else if (cmd->goals) {
        ret = perf_goals_run(o);
    } else if (cmd->matrix) {
        ret = perf_matrix_run(o);
    } else {
        ret = perf_single_run(o);
    }
    return (ret == 0) ? 0 : 1;
}

int main(int argc, char **argv)
{
    perf_cmd_t cmd = {
        .serve_fd = -1,
        .verify   = -1,
        .scale_fd = -1
    };
    perf_opts_t o;
    int ret;

    perf_opts_init(&o);
    ret = perf_parse_args(argc, argv, &o, &cmd);
    if (ret != PERF_GO_ON) {
        return ret;
    }

    if (cmd.scale_fd >= 0) { /* an initiator of a scaling run */
        return perf_scale_initiator_main(cmd.scale_fd);
    }
    if (cmd.serve_fd >= 0) { /* the target of a loopback run */
        perf_pin(o.cpu_server);
        return perf_server_run(cmd.serve_fd);
    }

    ret = perf_check_args(argc, argv, &o, &cmd);
    if (ret != PERF_GO_ON) {
        return ret;
    }
    return perf_run(&o, &cmd);
}
