/**
 * One UCP context + worker + fiatomic context: the same setup on both sides,
 * with the transports from the environment (UCX_TLS).
 */
#include "perftest.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int perf_node_init(perf_node_t *node)
{
    ucp_params_t params;
    ucp_worker_params_t wparams;
    fiatomic_params_t fparams;
    ucs_status_t status;

    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    /* AM: the target executes fiatomic's target-side requests (16/32-byte
     * elements, and one round trip for emulated cells over tcp) */
    params.features   = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 |
                        UCP_FEATURE_AMO64 | UCP_FEATURE_AM;
    status = ucp_init(&params, NULL, &node->context);
    if (status != UCS_OK) {
        fprintf(stderr, PERF_NAME ": ucp_init: %s\n",
                ucs_status_string(status));
        return -1;
    }

    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(node->context, &wparams, &node->worker);
    if (status != UCS_OK) {
        fprintf(stderr, PERF_NAME ": ucp_worker_create: %s\n",
                ucs_status_string(status));
        goto err_cleanup;
    }

    /* the window (-W) is the benchmark's own bound on calls in flight, and
     * -c any count up to the library's limit */
    fparams.field_mask   = FIATOMIC_PARAM_FIELD_MAX_INFLIGHT |
                           FIATOMIC_PARAM_FIELD_MAX_COUNT;
    fparams.max_inflight = FIATOMIC_MAX_INFLIGHT_LIMIT;
    fparams.max_count    = FIATOMIC_MAX_COUNT_LIMIT;
    status = fiatomic_create(node->context, node->worker, &fparams,
                             &node->fia);
    if (status != UCS_OK) {
        fprintf(stderr, PERF_NAME ": fiatomic_create: %s\n",
                ucs_status_string(status));
        goto err_worker;
    }
    return 0;

err_worker:
    ucp_worker_destroy(node->worker);
err_cleanup:
    ucp_cleanup(node->context);
    return -1;
}

void perf_node_cleanup(perf_node_t *node)
{
    fiatomic_destroy(node->fia);
    ucp_worker_destroy(node->worker);
    ucp_cleanup(node->context);
}

uint64_t perf_rss_bytes(void)
{
    unsigned long size = 0, resident = 0;
    FILE *f;

    f = fopen("/proc/self/statm", "r");
    if (f == NULL) {
        return 0;
    }
    if (fscanf(f, "%lu %lu", &size, &resident) != 2) {
        resident = 0;
    }
    fclose(f);
    return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

int perf_malloc_count_works(void)
{
    uint64_t before = perf_malloc_calls();
    void *volatile p = malloc(64);

    free(p);
    return perf_malloc_calls() != before;
}
