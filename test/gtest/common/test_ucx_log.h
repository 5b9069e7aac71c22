/**
 * UCX's ERROR and WARN lines counted in this process, for tests that must
 * print none: a UCX log handler counts them and lets UCX print them as
 * usual. Shared by the atomicx UCP suite and the libfiatomic suites.
 */
#ifndef TEST_UCX_LOG_H_
#define TEST_UCX_LOG_H_

namespace test_common {

/** Count from 0 again; the handler is installed on the first call and stays
 *  (it only counts) */
void ucx_log_count_reset();

/** UCX ERROR and WARN lines (and worse) since the last reset */
unsigned ucx_log_count();

} // namespace test_common

#endif
