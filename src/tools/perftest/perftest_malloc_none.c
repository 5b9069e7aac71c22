/**
 * Sanitizer builds: the sanitizer runtime owns malloc, so allocations are
 * not counted (goal 5 then reports RSS only).
 */
#include "perftest.h"

uint64_t perf_malloc_calls(void)
{
    return 0;
}
