/**
 * The per-worker context: configuration (environment) and the request cache.
 */
#include "fiatomic_int.h"

#include <ucs/debug/log_def.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static const char *fiatomic_strategy_names[] = {
    [FIATOMIC_STRATEGY_NONE]   = "none",
    [FIATOMIC_STRATEGY_NATIVE] = "native",
    [FIATOMIC_STRATEGY_CAS]    = "cas",
    [FIATOMIC_STRATEGY_DIRECT] = "direct",
    [FIATOMIC_STRATEGY_TARGET] = "target"
};

FIATOMIC_API const char *fiatomic_strategy_name(fiatomic_strategy_t strategy)
{
    if ((strategy < 0) || (strategy >= FIATOMIC_STRATEGY_LAST)) {
        return NULL;
    }

    return fiatomic_strategy_names[strategy];
}

/* FIATOMIC_STRATEGY=auto|native|cas|direct|target; NONE means auto. An unknown value
 * is an error at fiatomic_create(), not a silent fallback. */
static ucs_status_t fiatomic_parse_strategy(fiatomic_strategy_t *strategy_p)
{
    const char *value = getenv("FIATOMIC_STRATEGY");
    int i;

    *strategy_p = FIATOMIC_STRATEGY_NONE;
    if ((value == NULL) || (*value == '\0') || !strcasecmp(value, "auto")) {
        return UCS_OK;
    }

    for (i = FIATOMIC_STRATEGY_NATIVE; i < FIATOMIC_STRATEGY_LAST; ++i) {
        if (!strcasecmp(value, fiatomic_strategy_names[i])) {
            *strategy_p = (fiatomic_strategy_t)i;
            return UCS_OK;
        }
    }

    ucs_error("invalid FIATOMIC_STRATEGY '%s' (expected auto, native, cas, "
              "direct or target)", value);
    return UCS_ERR_INVALID_PARAM;
}

/* A value that differs between processes and between contexts of one
 * process: a key packed here and unpacked here allows the direct path. */
static uint64_t fiatomic_make_nonce(const void *ctx)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^
           ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)(uintptr_t)ctx;
}

/* Region tokens: unguessable enough that a request must have come through
 * the key (splitmix64 seeded from urandom). Not a cryptographic boundary:
 * the peer is a UCX endpoint this process connected to. */
uint64_t fiatomic_random64(fiatomic_h fia)
{
    uint64_t z = (fia->rand_state += UINT64_C(0x9e3779b97f4a7c15));

    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static uint64_t fiatomic_seed(const void *ctx)
{
    uint64_t seed = 0;
    FILE *f       = fopen("/dev/urandom", "r");

    if ((f == NULL) || (fread(&seed, sizeof(seed), 1, f) != 1)) {
        seed = fiatomic_make_nonce(ctx) * UINT64_C(0x2545f4914f6cdd1d);
    }
    if (f != NULL) {
        fclose(f);
    }
    return seed;
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
static void fiatomic_context_detect_tls(fiatomic_h fia)
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

FIATOMIC_API ucs_status_t fiatomic_create(ucp_context_h context,
                                          ucp_worker_h worker,
                                          const fiatomic_params_t *params,
                                          fiatomic_h *fia_p)
{
    fiatomic_h fia;
    ucs_status_t status;
    size_t max_count    = FIATOMIC_MAX_COUNT_DEFAULT;
    size_t max_inflight = FIATOMIC_MAX_INFLIGHT_DEFAULT;
    unsigned am_id   = FIATOMIC_AM_ID_DEFAULT;

    if ((context == NULL) || (worker == NULL) || (fia_p == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }

    if ((params != NULL) &&
        (params->field_mask & FIATOMIC_PARAM_FIELD_MAX_COUNT)) {
        if ((params->max_count == 0) ||
            (params->max_count > FIATOMIC_MAX_COUNT_LIMIT)) {
            return UCS_ERR_INVALID_PARAM;
        }
        max_count = params->max_count;
    }

    if ((params != NULL) &&
        (params->field_mask & FIATOMIC_PARAM_FIELD_MAX_INFLIGHT)) {
        if ((params->max_inflight == 0) ||
            (params->max_inflight > FIATOMIC_MAX_INFLIGHT_LIMIT)) {
            return UCS_ERR_INVALID_PARAM;
        }
        max_inflight = params->max_inflight;
    }

    if ((params != NULL) && (params->field_mask & FIATOMIC_PARAM_FIELD_AM_ID)) {
        if (params->am_id >= UINT16_MAX) {
            return UCS_ERR_INVALID_PARAM;
        }
        am_id = params->am_id;
    }

    fia = calloc(1, sizeof(*fia));
    if (fia == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = fiatomic_parse_strategy(&fia->forced);
    if (status != UCS_OK) {
        free(fia);
        return status;
    }

    fia->ucp_context = context;
    fia->worker      = worker;
    fia->max_count   = max_count;
    fia->max_inflight = max_inflight;
    fia->nonce       = fiatomic_make_nonce(fia);
    fia->rand_state  = fiatomic_seed(fia);
    fia->am_id       = am_id;
    ucs_list_head_init(&fia->free_reqs);
    ucs_list_head_init(&fia->free_replies);
    ucs_list_head_init(&fia->free_msgs);

    fiatomic_context_detect_tls(fia);
    status = fiatomic_target_init(fia);
    if (status != UCS_OK) {
        free(fia);
        return status;
    }

    *fia_p = fia;
    return UCS_OK;
}

static void fiatomic_context_free(fiatomic_h fia)
{
    fiatomic_target_msgs_cleanup(fia);
    fiatomic_req_cache_purge(fia);
    free(fia);
}

void fiatomic_context_release(fiatomic_h fia)
{
    if (fia->destroyed && (fia->num_eps == 0) &&
        (fia->replies_inflight == 0)) {
        fiatomic_context_free(fia);
    }
}

FIATOMIC_API void fiatomic_destroy(fiatomic_h fia)
{
    if (fia == NULL) {
        return;
    }

    if (fia->num_mems) {
        ucs_warn("fiatomic context %p destroyed with %u exposed regions",
                 fia, fia->num_mems);
    }

    /* No more target-side requests or replies through this context. */
    fiatomic_target_cleanup(fia);

    /* Endpoints destroyed with UCP operations still in flight (a dead peer,
     * the worker not progressed) keep the context: their callbacks run when
     * UCP completes or purges those operations (ucp_worker_destroy does),
     * and free it after the last one. */
    fia->destroyed = true;
    fiatomic_context_release(fia);
}
