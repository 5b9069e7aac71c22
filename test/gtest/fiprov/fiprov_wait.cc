/**
 * The bounded waits the message suites share (fiprov_wait.h).
 */
#include "fiprov_wait.h"

#include <gtest/gtest.h>

#include <time.h>

namespace fiprov_test {

int64_t now_ms()
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void wait_cntr(struct fid_cntr *c, uint64_t value)
{
    ASSERT_EQ(0, fi_cntr_wait(c, value, peer_wait_ms))
        << fi_cntr_read(c) << "/" << value << ", errors "
        << fi_cntr_readerr(c);
}

} // namespace fiprov_test
