/**
 * Force-included (after UCX's build configuration) into UCX's own UCP gtest
 * sources: instantiates every test case on UCX_TLS=atomicx,tcp (named
 * atomicx_tcp) instead of UCX's list (dc_x, ud_v, rc_v, shm, tcp, ...):
 * atomicx for the AMO lanes in the device atomic mode, tcp for wireup and
 * active messages (and for UCP's software atomics in the cpu mode).
 *
 * Not atomicx,ud_v: under qemu TCG, UCX's ud_verbs on soft-RoCE aborts these
 * tests ("UD endpoint ...: unhandled timeout error") with or without atomicx
 * loaded.
 *
 * UCP's test (ucp_test::enum_test_params) silently drops an instantiation
 * whose transports cannot create a context; the runner checks that the
 * tests ran and that UCP's AMO lane is atomicx.
 */
#ifndef ATOMICX_UCP_GTEST_TLS_H
#define ATOMICX_UCP_GTEST_TLS_H

#include <ucp/ucp_test.h>

#undef UCP_INSTANTIATE_TEST_CASE
#undef UCP_INSTANTIATE_TEST_CASE_GPU_AWARE

#define UCP_INSTANTIATE_TEST_CASE(_test_case) \
    UCP_INSTANTIATE_TEST_CASE_TLS(_test_case, atomicx_tcp, "atomicx,tcp")
#define UCP_INSTANTIATE_TEST_CASE_GPU_AWARE(_test_case) \
    UCP_INSTANTIATE_TEST_CASE(_test_case)

#endif
