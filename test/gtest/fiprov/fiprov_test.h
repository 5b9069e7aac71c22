/**
 * Shared by the provider's suites: they reach the provider only through
 * libfabric's API (fi_getinfo ... fi_close), as an unmodified program does;
 * main() points libfabric at the build's provider directory first.
 */
#ifndef FIPROV_TEST_H_
#define FIPROV_TEST_H_

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

namespace fiprov_test {

/** The API version the suites ask for: the headers' own. */
static const uint32_t api_version = FI_VERSION(FI_MAJOR_VERSION,
                                               FI_MINOR_VERSION);

/** Hints naming the provider and supporting every memory registration
 *  mode bit, to be filled further; freed by the caller with fi_freeinfo. */
struct fi_info *hints_alloc();

/** fi_getinfo with the hints: the return value, and the infos' list. */
int getinfo(const struct fi_info *hints, std::vector<struct fi_info*> *infos,
            struct fi_info **head, uint32_t version = api_version);

/** The clock of the suites' timing checks (how long a bounded wait took). */
typedef std::chrono::steady_clock test_clock;

/** Seconds on test_clock since start. */
double seconds_since(test_clock::time_point start);

/** Every test: no UCX ERROR/WARN line printed while it ran. */
class test_base : public testing::Test {
protected:
    void SetUp() override;
    void TearDown() override;
};

} // namespace fiprov_test

#endif
