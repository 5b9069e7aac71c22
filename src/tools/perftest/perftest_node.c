/**
 * One UCP context + worker + fiatomic context (tool_common.c): the same
 * setup on both sides, with the transports from the environment (UCX_TLS);
 * and what the benchmark measures of its own process.
 */
#include "perftest.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int perf_node_init(perf_node_t *node)
{
    fiatomic_params_t fparams;

    /* the window (-W) is the benchmark's own bound on calls in flight, and
     * -c any count up to the library's limit */
    fparams.field_mask   = FIATOMIC_PARAM_FIELD_MAX_INFLIGHT |
                           FIATOMIC_PARAM_FIELD_MAX_COUNT;
    fparams.max_inflight = FIATOMIC_MAX_INFLIGHT_LIMIT;
    fparams.max_count    = FIATOMIC_MAX_COUNT_LIMIT;
    return tool_node_init(node, PERF_NAME, &fparams);
}

void perf_node_cleanup(perf_node_t *node)
{
    tool_node_cleanup(node);
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
