/**
 * Force-included (after UCX's build configuration) into UCX's own UCT gtest
 * sources: instantiates every test case on the atomicx transport only.
 *
 * UCX names the transports a test case runs on at compile time
 * (UCT_TEST_TLS and its subsets in test/gtest/uct/uct_test.h); each
 * instantiation then enumerates the matching resources at run time
 * (uct_test::enum_resources). Here every list is atomicx, and instantiations
 * that UCX makes for one named transport (posix, cma, cuda_ipc, ...) are
 * filtered to atomicx too, so they enumerate nothing. The suites UCX
 * instantiates only for its IB transports (UCT_INSTANTIATE_IB_TEST_CASE:
 * they exercise uct_ib_iface settings such as IB_TX_INLINE_RESP) are not
 * instantiated at all.
 */
#ifndef ATOMICX_UCT_GTEST_TLS_H
#define ATOMICX_UCT_GTEST_TLS_H

#include <uct/uct_test.h>

namespace atomicx_gtest {

static inline std::vector<const resource*>
only_atomicx(const std::vector<const resource*> &resources)
{
    std::vector<const resource*> result;

    for (size_t i = 0; i < resources.size(); ++i) {
        if (resources[i]->tl_name == "atomicx") {
            result.push_back(resources[i]);
        }
    }
    return result;
}

} // namespace atomicx_gtest

#undef UCT_TEST_TLS
#undef UCT_TEST_NO_SELF_TLS
#undef UCT_TEST_NO_GPU_MEM_TYPE_TLS
#undef UCT_TEST_IB_TLS
#undef UCT_INSTANTIATE_IB_TEST_CASE
#undef UCT_INSTANTIATE_RC_TEST_CASE
#undef UCT_INSTANTIATE_RC_DC_TEST_CASE
#undef _UCT_INSTANTIATE_TEST_CASE

#define UCT_TEST_TLS                  atomicx
#define UCT_TEST_NO_SELF_TLS          atomicx
#define UCT_TEST_NO_GPU_MEM_TYPE_TLS  atomicx
#define UCT_TEST_IB_TLS               atomicx
#define UCT_INSTANTIATE_IB_TEST_CASE(_test_case)
#define UCT_INSTANTIATE_RC_TEST_CASE(_test_case)
#define UCT_INSTANTIATE_RC_DC_TEST_CASE(_test_case)
#define _UCT_INSTANTIATE_TEST_CASE(_test_case, _tl_name) \
    INSTANTIATE_TEST_SUITE_P(_tl_name, _test_case, \
        testing::ValuesIn(atomicx_gtest::only_atomicx( \
            _test_case::enum_resources(UCS_PP_QUOTE(_tl_name)))));

#endif
