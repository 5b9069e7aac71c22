/**
 * The per-worker context's start and end, the public calls:
 * fiatomic_create() checks the parameters, reads the settings a context
 * keeps (FIATOMIC_STRATEGY, FIATOMIC_OP_TIMEOUT, FIATOMIC_CAS_HANDOFF) and
 * its worker's thread mode, sets up its lock, caches and tables, and plugs
 * the target side in (its hooks, the only way the core reaches it);
 * fiatomic_destroy() ends it. The context is freed once its last endpoint
 * and reply are gone (core/fiatomic_context.c). The caches are filled and
 * emptied by their users (requests: fiatomic_request.c; target-side
 * messages and replies: fiatomic_target_send.c, fiatomic_target_serve.c).
 */
#include "base/fiatomic_config.h"
#include "base/fiatomic_random.h"
#include "core/fiatomic_strategy.h"
#include "target/fiatomic_target.h"

#include <ucs/debug/log_def.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* FIATOMIC_STRATEGY=auto|native|cas|direct|target, spelled exactly so (lower
 * case, as fiatomic(3) lists them); NONE means auto. Any other value is an
 * error at fiatomic_create(), not a silent fallback. */
static ucs_status_t fiatomic_parse_strategy(fiatomic_strategy_t *strategy_p)
{
    const char *value = fiatomic_config_get(FIATOMIC_CONFIG_STRATEGY);
    int i;

    *strategy_p = FIATOMIC_STRATEGY_NONE;
    if (!strcmp(value, "auto")) {
        return UCS_OK;
    }

    for (i = FIATOMIC_STRATEGY_NATIVE; i < FIATOMIC_STRATEGY_LAST; ++i) {
        if (!strcmp(value, fiatomic_strategy_name((fiatomic_strategy_t)i))) {
            *strategy_p = (fiatomic_strategy_t)i;
            return UCS_OK;
        }
    }

    ucs_error("invalid FIATOMIC_STRATEGY '%s' (expected auto, native, cas, "
              "direct or target)", value);
    return UCS_ERR_INVALID_PARAM;
}

/* A time in seconds, "<number>[s|ms|us]" or "inf"; false if malformed. */
static bool fiatomic_parse_seconds(const char *text, double *sec_p)
{
    char *end;
    double v;

    if (!strcasecmp(text, "inf") || !strcasecmp(text, "infinity")) {
        *sec_p = INFINITY;
        return true;
    }

    v = strtod(text, &end);
    if ((end == text) || !(v > 0) || isinf(v)) {
        return false;
    }
    if (!strcmp(end, "ms")) {
        v /= 1e3;
    } else if (!strcmp(end, "us")) {
        v /= 1e6;
    } else if ((*end != '\0') && strcmp(end, "s")) {
        return false;
    }
    *sec_p = v;
    return true;
}

/* FIATOMIC_CAS_HANDOFF=yes|no (default yes), spelled exactly so: whether a
 * contended CAS-loop element goes to the target where that is atomic
 * (fiatomic_exec_cas.c); "no" measures the plain loop. */
static ucs_status_t fiatomic_parse_cas_handoff(bool *handoff_p)
{
    const char *value = fiatomic_config_get(FIATOMIC_CONFIG_CAS_HANDOFF);

    *handoff_p = true;
    if (!strcmp(value, "yes")) {
        return UCS_OK;
    }
    if (!strcmp(value, "no")) {
        *handoff_p = false;
        return UCS_OK;
    }
    ucs_error("invalid FIATOMIC_CAS_HANDOFF '%s' (expected yes or no)",
              value);
    return UCS_ERR_INVALID_PARAM;
}

/* The operation timeout: the parameter, else FIATOMIC_OP_TIMEOUT, else the
 * default (both from the settings table). */
static ucs_status_t fiatomic_op_timeout(const fiatomic_params_t *params,
                                        uint64_t *timeout_ns_p)
{
    const char *value = fiatomic_config_get(FIATOMIC_CONFIG_OP_TIMEOUT);
    double sec;

    if ((params != NULL) &&
        (params->field_mask & FIATOMIC_PARAM_FIELD_OP_TIMEOUT)) {
        if (!(params->op_timeout > 0)) { /* NaN too */
            return UCS_ERR_INVALID_PARAM;
        }
        sec = params->op_timeout;
    } else if (!fiatomic_parse_seconds(value, &sec)) {
        ucs_error("invalid FIATOMIC_OP_TIMEOUT '%s' (expected seconds, "
                  "<n>ms, <n>us or inf)", value);
        return UCS_ERR_INVALID_PARAM;
    }

    *timeout_ns_p = (sec >= (double)UINT64_MAX / 1e9) ? UINT64_MAX :
                    (uint64_t)(sec * 1e9);
    return UCS_OK;
}

/* Whether the worker may be used by several threads at once: then every
 * call takes the context's lock. SERIALIZED is one thread at a time, as
 * SINGLE. */
static ucs_status_t fiatomic_worker_mt(ucp_worker_h worker, bool *mt_p)
{
    ucp_worker_attr_t attr;
    ucs_status_t status;

    attr.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE;
    status          = ucp_worker_query(worker, &attr);
    if (status != UCS_OK) {
        return status;
    }
    *mt_p = (attr.thread_mode == UCS_THREAD_MODE_MULTI);
    return UCS_OK;
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
    int i;

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

    if ((params != NULL) && (params->field_mask & FIATOMIC_PARAM_FIELD_FLAGS) &&
        (params->flags & ~FIATOMIC_PARAM_FLAG_NO_ONESIDED)) {
        return UCS_ERR_INVALID_PARAM;
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
        goto err_free;
    }

    status = fiatomic_op_timeout(params, &fia->op_timeout_ns);
    if (status != UCS_OK) {
        goto err_free;
    }

    status = fiatomic_parse_cas_handoff(&fia->cas_handoff);
    if (status != UCS_OK) {
        goto err_free;
    }

    /* A hint only (is this key possibly ours?): keys are recognised as this
     * context's by their live region, never by the nonce alone. */
    status = fiatomic_random_bytes(&fia->nonce, sizeof(fia->nonce));
    if (status != UCS_OK) {
        goto err_free;
    }

    status = fiatomic_worker_mt(worker, &fia->mt);
    if (status != UCS_OK) {
        goto err_free;
    }

    status = fiatomic_lock_init(fia);
    if (status != UCS_OK) {
        goto err_free;
    }

    fia->ucp_context = context;
    fia->worker      = worker;
    fia->max_count   = max_count;
    fia->max_inflight = max_inflight;
    fia->am_id       = am_id;
    fia->onesided    = !((params != NULL) &&
                         (params->field_mask & FIATOMIC_PARAM_FIELD_FLAGS) &&
                         (params->flags & FIATOMIC_PARAM_FLAG_NO_ONESIDED));
    fiatomic_freelist_init(&fia->free_reqs, FIATOMIC_REQ_CACHE_MAX);
    fiatomic_freelist_init(&fia->free_replies, FIATOMIC_REPLY_CACHE_MAX);
    fiatomic_freelist_init(&fia->free_msgs, FIATOMIC_MSG_CACHE_MAX);
    fiatomic_handle_table_init(&fia->msgs, UINT32_MAX);
    ucs_list_head_init(&fia->eps);

    fiatomic_check_atomicx_loaded();
    fiatomic_ucx_context_detect_tls(fia);
    fiatomic_ucx_context_detect_amo(fia);
    for (i = 0; i < FIATOMIC_STRATEGY_LAST; ++i) {
        fia->strategy_ops[i] = fiatomic_strategy_ops((fiatomic_strategy_t)i);
    }
    fia->target = &fiatomic_target_hooks;
    status = fiatomic_target_init(fia);
    if (status != UCS_OK) {
        goto err_lock_cleanup;
    }

    *fia_p = fia;
    return UCS_OK;

err_lock_cleanup:
    fiatomic_lock_cleanup(fia);
err_free:
    free(fia);
    return status;
}

FIATOMIC_API void fiatomic_destroy(fiatomic_h fia)
{
    bool locked;

    if (fia == NULL) {
        return;
    }

    locked = fiatomic_enter(fia);
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
    fiatomic_leave(fia, locked); /* frees it in multi-threaded mode */
}
