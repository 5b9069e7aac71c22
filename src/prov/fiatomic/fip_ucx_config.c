/**
 * The UCX configuration a domain's UCP context is read with: the
 * provider's endpoints use UCP's peer error mode (a dead peer fails
 * operations instead of hanging them, fip_peer.c), and UCP gives such an
 * endpoint a shared-memory lane (posix, sysv) only when that transport
 * exposes error handling, which it does only when configured to
 * (UCX_POSIX_ERROR_HANDLING, UCX_SYSV_ERROR_HANDLING; default no). Without
 * it, two processes on one host talk over tcp: a fetch-add took ~19 us
 * instead of ~6. The setting is made for each shared-memory transport the
 * context may use (UCX_TLS unset, or naming it, or one of its aliases),
 * and never where the user set the variable. On UCX 1.22 ucp_config_modify
 * takes it; UCX 1.13 silently ignores a transport's setting made that way,
 * so there it goes through the environment, set from before ucp_init to
 * after ucp_worker_create and cleared then (UCX reports the UCX_ variables
 * no transport used: one set for a transport not in UCX_TLS would be
 * reported, hence the test of UCX_TLS).
 *
 * tcp's zero-copy PUT is left as UCX has it: UCT's tcp transport writes
 * a PUT request's data at whatever address it names, but turning it off
 * failed the wireup of a domain with a peer that has it (UCX 1.13.1
 * aborts, wireup.c: ep_addr_index < num_ep_addrs; 1.22 reports no remote
 * address for a lane), fi_fiatomic(7) SECURITY.
 */
#include "fip.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *tl;       /* as UCX_TLS names it */
    const char *name;     /* ucp_config_modify's name */
    const char *env;      /* the environment's name */
    const char *value;
    int        shm;       /* UCX_TLS's shared-memory aliases take it in */
} fip_ucx_tl_setting_t;

static const fip_ucx_tl_setting_t fip_ucx_tl_settings[] = {
    {"posix", "POSIX_ERROR_HANDLING", "UCX_POSIX_ERROR_HANDLING", "y", 1},
    {"sysv",  "SYSV_ERROR_HANDLING",  "UCX_SYSV_ERROR_HANDLING",  "y", 1}
};

/* UCX_TLS's names that take in every shared-memory transport */
static const char *fip_ucx_shm_aliases[] = {"all", "sm", "shm", "mm"};

static int fip_ucx_tls_token_is(const char *tok, size_t len, const char *name)
{
    return (strlen(name) == len) && !strncmp(tok, name, len);
}

/* whether UCX_TLS (a comma-separated list, "^" first: all but those)
 * lets the context use transport `tl` (a shared-memory one: `shm`) */
static int fip_ucx_tls_names(const char *tls, const char *tl, int shm)
{
    const char *tok, *end;
    int negate, named = 0;
    size_t len, i;

    if ((tls == NULL) || (*tls == '\0')) {
        return 1;
    }
    negate = (*tls == '^');
    for (tok = tls + negate; *tok != '\0'; tok = end + (*end == ',')) {
        end = strchr(tok, ',');
        end = (end != NULL) ? end : tok + strlen(tok);
        len = end - tok;
        named |= fip_ucx_tls_token_is(tok, len, tl);
        /* "all" (the first) takes in every transport */
        for (i = 0; i < (shm ? sizeof(fip_ucx_shm_aliases) /
                               sizeof(fip_ucx_shm_aliases[0]) : 1); ++i) {
            /* "^sm" leaves shared memory out, as "sm" takes it in */
            named |= fip_ucx_tls_token_is(tok, len, fip_ucx_shm_aliases[i]) &&
                     (!negate || (i > 0));
        }
    }
    return negate ? !named : named;
}

static int fip_ucx_modify_works(void)
{
    unsigned major, minor, release;

    ucp_get_version(&major, &minor, &release);
    return UCP_VERSION(major, minor) >= UCP_VERSION(1, 22);
}

/* the environment is the process's: one domain at a time sets and clears */
static pthread_mutex_t fip_ucx_env_lock = PTHREAD_MUTEX_INITIALIZER;

void fip_ucx_env_begin(fip_ucx_env_t *env)
{
    const char *tls = getenv("UCX_TLS");
    size_t i;

    pthread_mutex_lock(&fip_ucx_env_lock);
    env->set = 0;
    if (fip_ucx_modify_works()) {
        return;
    }
    for (i = 0; i < sizeof(fip_ucx_tl_settings) / sizeof(fip_ucx_tl_settings[0]);
         ++i) {
        /* a value the user set stays; the environment is UCX 1.13's way */
        if (fip_ucx_tls_names(tls, fip_ucx_tl_settings[i].tl,
                              fip_ucx_tl_settings[i].shm) &&
            (getenv(fip_ucx_tl_settings[i].env) == NULL) &&
            (setenv(fip_ucx_tl_settings[i].env, fip_ucx_tl_settings[i].value,
                    0) == 0)) {
            env->set |= 1u << i;
        }
    }
}

/* Once the worker exists (its interfaces read their configuration from
 * the environment when they open), the variables set go: left set, they
 * would reach the UCP contexts the program opens later and the processes
 * it starts, which report them as unused where UCX_TLS has no posix. */
void fip_ucx_env_end(fip_ucx_env_t *env)
{
    size_t i;

    for (i = 0; i < sizeof(fip_ucx_tl_settings) / sizeof(fip_ucx_tl_settings[0]);
         ++i) {
        if (env->set & (1u << i)) {
            (void)unsetenv(fip_ucx_tl_settings[i].env);
        }
    }
    env->set = 0;
    pthread_mutex_unlock(&fip_ucx_env_lock);
}

/* Over same-host transports alone a peer's end shows only in UCP's
 * keepalive (no connection manager reports it): the peer's process gone,
 * checked every interval. A peer that closed its domain says so on the
 * connections it made (fip_bye.c), but not on those made to it, whose
 * initiator learns it from the keepalive: one second instead of UCX's
 * default (20 s on 1.13), a check of a few endpoints' peer processes per
 * second. Not where the user set it. */
#define FIP_UCX_LOCAL_KEEPALIVE "1s"

int fip_ucx_config_read(int local, ucp_config_t **config_p)
{
    const char *tls = getenv("UCX_TLS");
    ucp_config_t *config;
    ucs_status_t status;
    size_t i;

    status = ucp_config_read(NULL, NULL, &config);
    if (status != UCS_OK) {
        return (fiatomic_status_to_fi_errno(status) != 0) ?
               fiatomic_status_to_fi_errno(status) : -FI_EOTHER;
    }
    if (fip_ucx_modify_works()) {
        for (i = 0; i < sizeof(fip_ucx_tl_settings) / sizeof(fip_ucx_tl_settings[0]);
             ++i) {
            if (fip_ucx_tls_names(tls, fip_ucx_tl_settings[i].tl,
                                  fip_ucx_tl_settings[i].shm) &&
                (getenv(fip_ucx_tl_settings[i].env) == NULL)) {
                (void)ucp_config_modify(config, fip_ucx_tl_settings[i].name,
                                        fip_ucx_tl_settings[i].value);
            }
        }
    }
    if (local && (getenv("UCX_KEEPALIVE_INTERVAL") == NULL)) {
        (void)ucp_config_modify(config, "KEEPALIVE_INTERVAL",
                                FIP_UCX_LOCAL_KEEPALIVE);
    }
    *config_p = config;
    return 0;
}

/* UCX_TLS's names of transports that reach this host only (shared memory
 * and loopback, and their aliases): none brings a connection manager, and
 * over them alone a listener's connection never completes */
static const char *fip_ucx_local_tls[] = {
    "posix", "sysv", "self", "cma", "knem", "xpmem", "sm", "shm", "mm"
};

int fip_ucx_tls_local_only(void)
{
    const char *tls = getenv("UCX_TLS");
    const char *tok, *end;
    size_t len, i;
    int local;

    if ((tls == NULL) || (*tls == '\0') || (*tls == '^')) {
        return 0;
    }
    for (tok = tls; *tok != '\0'; tok = end + (*end == ',')) {
        end = strchr(tok, ',');
        end = (end != NULL) ? end : tok + strlen(tok);
        len = end - tok;
        local = 0;
        for (i = 0; i < sizeof(fip_ucx_local_tls) /
                        sizeof(fip_ucx_local_tls[0]); ++i) {
            local |= fip_ucx_tls_token_is(tok, len, fip_ucx_local_tls[i]);
        }
        if (!local) {
            return 0;
        }
    }
    return 1;
}
