/**
 * Built when configure did not find libfabric: the libfabric baseline is
 * reported unavailable, everything else works.
 */
#include "perftest.h"
#include "perftest_ofi.h"

int perf_ofi_target_open(const char *provider, perf_ofi_target_t **t_p)
{
    return -1;
}

void *perf_ofi_target_info(perf_ofi_target_t *t, size_t *len_p)
{
    return NULL;
}

void *perf_ofi_target_memory(perf_ofi_target_t *t, size_t *len_p)
{
    return NULL;
}

void perf_ofi_target_progress(perf_ofi_target_t *t)
{
}

void perf_ofi_target_close(perf_ofi_target_t *t)
{
}

int perf_drv_ofi_available(void)
{
    return 0;
}

const char *perf_drv_ofi_provider_for(const char *transport)
{
    return NULL;
}

int perf_drv_ofi_init(perf_driver_t *drv, perf_session_t *s, unsigned index,
                      const perf_params_t *p, const char *provider)
{
    return -2;
}

void perf_drv_ofi_close(perf_session_t *s)
{
}
