/**
 * The provider suites' main() and helpers (fiprov_test.h): libfabric is
 * told where the build's provider is (FI_PROVIDER_PATH) and to load only it
 * (FI_PROVIDER) before its first call reads the environment.
 */
#include "fiprov_test.h"
#include "fiprov_peer.h"

#include "test_ucx_log.h"

#include <stdlib.h>
#include <signal.h>
#include <string.h>

namespace fiprov_test {

struct fi_info *hints_alloc()
{
    struct fi_info *hints = fi_allocinfo();

    if (hints != NULL) {
        hints->fabric_attr->prov_name = strdup("fiatomic");
        /* as fi_info(1): every mode bit supported, neither old value */
        hints->domain_attr->mr_mode   = ~(FI_MR_BASIC | FI_MR_SCALABLE);
    }
    return hints;
}

double seconds_since(test_clock::time_point start)
{
    return std::chrono::duration<double>(test_clock::now() - start).count();
}

int getinfo(const struct fi_info *hints, std::vector<struct fi_info*> *infos,
            struct fi_info **head, uint32_t version)
{
    struct fi_info *list = NULL;
    int ret = fi_getinfo(version, NULL, NULL, 0, hints, &list);

    infos->clear();
    for (struct fi_info *info = list; info != NULL; info = info->next) {
        infos->push_back(info);
    }
    *head = list;
    return ret;
}

void test_base::SetUp()
{
    test_common::ucx_log_count_reset();
}

void test_base::TearDown()
{
    EXPECT_EQ(0u, test_common::ucx_log_count())
        << "UCX printed ERROR/WARN lines during the test";
}

} // namespace fiprov_test

int main(int argc, char **argv)
{
    /* FIP_TEST_PROVIDER_DIR: the build's .libs with libfiatomic-fi.so;
     * an explicit FI_PROVIDER_PATH (an installed provider) wins */
    setenv("FI_PROVIDER_PATH", FIP_TEST_PROVIDER_DIR, 0);
    setenv("FI_PROVIDER", "fiatomic", 1);
    /* the second process of the two-process tests (fiprov_peer.h) */
    if ((argc > 1) && (strcmp(argv[1], fiprov_test::peer_flag) == 0)) {
        return fiprov_test::peer_main(argc, argv);
    }
    /* a peer that already left (a failed test's) makes the write of its
     * stop command fail, instead of killing the run */
    signal(SIGPIPE, SIG_IGN);
    testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
