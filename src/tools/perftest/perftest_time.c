/**
 * Timestamps for per-call latency. A clock_gettime() costs ~20 ns, half the
 * cost of a shared-memory fetch-add, so on x86-64 (constant TSC) the loops
 * read the TSC, as ucx_perftest does, calibrated once against
 * CLOCK_MONOTONIC.
 */
#include "perftest.h"

#include <time.h>
#if defined(__x86_64__)
#  include <x86intrin.h>
#endif

static double perf_ticks_per_us = 1.0;

static uint64_t perf_mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

uint64_t perf_time_now(void)
{
#if defined(__x86_64__)
    return __rdtsc();
#else
    return perf_mono_ns();
#endif
}

void perf_time_init(void)
{
#if defined(__x86_64__)
    uint64_t ns0, ns1, t0, t1;

    /* 20 ms: calibration error well below 0.1% */
    ns0 = perf_mono_ns();
    t0  = perf_time_now();
    do {
        ns1 = perf_mono_ns();
    } while (ns1 - ns0 < 20000000ull);
    t1 = perf_time_now();
    perf_ticks_per_us = (double)(t1 - t0) * 1000.0 / (double)(ns1 - ns0);
#else
    perf_ticks_per_us = 1000.0;
#endif
}

double perf_time_to_us(uint64_t ticks)
{
    return (double)ticks / perf_ticks_per_us;
}
