/**
 * The per-worker context: configuration (environment) and the request cache.
 */
#include "fiatomic_int.h"

#include <ucs/debug/log_def.h>

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static const char *fiatomic_strategy_names[] = {
    [FIATOMIC_STRATEGY_NONE]   = "none",
    [FIATOMIC_STRATEGY_NATIVE] = "native",
    [FIATOMIC_STRATEGY_CAS]    = "cas",
    [FIATOMIC_STRATEGY_DIRECT] = "direct"
};

FIATOMIC_API const char *fiatomic_strategy_name(fiatomic_strategy_t strategy)
{
    if ((strategy < 0) || (strategy >= FIATOMIC_STRATEGY_LAST)) {
        return NULL;
    }

    return fiatomic_strategy_names[strategy];
}

/* FIATOMIC_STRATEGY=auto|native|cas|direct; NONE means auto. An unknown value
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

    ucs_error("invalid FIATOMIC_STRATEGY '%s' (expected auto, native, cas or "
              "direct)", value);
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

FIATOMIC_API ucs_status_t fiatomic_create(ucp_context_h context,
                                          ucp_worker_h worker,
                                          const fiatomic_params_t *params,
                                          fiatomic_h *fia_p)
{
    fiatomic_h fia;
    ucs_status_t status;
    size_t max_count = FIATOMIC_MAX_COUNT_DEFAULT;

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
    fia->nonce       = fiatomic_make_nonce(fia);
    ucs_list_head_init(&fia->free_reqs);
    *fia_p = fia;
    return UCS_OK;
}

FIATOMIC_API void fiatomic_destroy(fiatomic_h fia)
{
    if (fia == NULL) {
        return;
    }

    if (fia->num_eps || fia->num_mems) {
        ucs_warn("fiatomic context %p destroyed with %u endpoints and %u "
                 "exposed regions still alive", fia, fia->num_eps,
                 fia->num_mems);
    }

    fiatomic_req_cache_purge(fia);
    free(fia);
}
