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

/** Until the next reset, do not count lines whose message contains
 *  `text`: for a test whose scenario makes UCX report a failure it expects
 *  (each caller says why) */
void ucx_log_allow(const char *text);

} // namespace test_common

#endif
