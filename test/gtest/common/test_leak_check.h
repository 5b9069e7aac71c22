/**
 * Pausing LeakSanitizer for the calling thread, for a test whose scenario
 * drives UCX through a path where UCX itself leaks (each caller says which
 * and why): allocations this thread makes while paused are never reported.
 * Every other thread, and this thread outside the pause, stays checked. A
 * build without AddressSanitizer compiles both calls to nothing.
 */
#ifndef TEST_LEAK_CHECK_H_
#define TEST_LEAK_CHECK_H_

#if defined(__SANITIZE_ADDRESS__)
#define TEST_LEAK_CHECK_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_LEAK_CHECK_LSAN 1
#endif
#endif

#ifdef TEST_LEAK_CHECK_LSAN
#include <sanitizer/lsan_interface.h>
#endif

namespace test_common {

/** Stop reporting this thread's allocations until leak_check_resume();
 *  pauses nest */
inline void leak_check_pause()
{
#ifdef TEST_LEAK_CHECK_LSAN
    __lsan_disable();
#endif
}

/** End one leak_check_pause() */
inline void leak_check_resume()
{
#ifdef TEST_LEAK_CHECK_LSAN
    __lsan_enable();
#endif
}

} // namespace test_common

#endif
