/**
 * Allocation counter for goal 5 ("no allocation per operation in steady
 * state"): this executable's malloc family counts calls and forwards to
 * glibc's own. glibc supports interposing malloc; every library of the
 * process (fiatomic, UCX) then allocates through these. Not built with the
 * sanitizers, whose runtime must own malloc; under valgrind, whose
 * replacement takes precedence, the counter stays still and the goal says
 * so (perf_malloc_count_works).
 */
#include "perftest.h"

#include <errno.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t nmemb, size_t size);
extern void *__libc_realloc(void *ptr, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);

static uint64_t perf_mallocs;

static void perf_malloc_count(void)
{
    /* UCX's async thread may allocate too */
    __atomic_fetch_add(&perf_mallocs, 1, __ATOMIC_RELAXED);
}

void *malloc(size_t size)
{
    perf_malloc_count();
    return __libc_malloc(size);
}

void *calloc(size_t nmemb, size_t size)
{
    perf_malloc_count();
    return __libc_calloc(nmemb, size);
}

void *realloc(void *ptr, size_t size)
{
    perf_malloc_count();
    return __libc_realloc(ptr, size);
}

void *memalign(size_t alignment, size_t size)
{
    perf_malloc_count();
    return __libc_memalign(alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size)
{
    perf_malloc_count();
    return __libc_memalign(alignment, size);
}

int posix_memalign(void **ptr, size_t alignment, size_t size)
{
    void *p;

    if ((alignment % sizeof(void*)) || (alignment & (alignment - 1))) {
        return EINVAL;
    }
    perf_malloc_count();
    p = __libc_memalign(alignment, size);
    if (p == NULL) {
        return ENOMEM;
    }
    *ptr = p;
    return 0;
}

uint64_t perf_malloc_calls(void)
{
    return __atomic_load_n(&perf_mallocs, __ATOMIC_RELAXED);
}
