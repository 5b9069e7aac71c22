/**
 * atomicx: what the transport tells about itself in this process, for tests
 * and tools that link or dlopen it (C linkage, no UCX internal header): how
 * many atomic ops it started and completed, and whether it registered with
 * libuct.
 */

#ifndef UCT_ATOMICX_COUNTERS_H_
#define UCT_ATOMICX_COUNTERS_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Atomic ops accepted by endpoints of this process since it loaded atomicx
 * (one per uct_ep_atomic* call that returned UCS_OK or UCS_INPROGRESS): lets
 * a test prove that atomicx executed them */
uint64_t uct_atomicx_ops_started(void);

/* ... of which completed, with any status: equal to the started ones once
 * nothing is in flight, so a test can wait for them without a UCP flush */
uint64_t uct_atomicx_ops_completed(void);

/* 1 when this copy of the library registered the component with libuct */
int uct_atomicx_is_registered(void);

/* Its type, for a test that dlopen()s the library */
typedef int (*uct_atomicx_is_registered_func_t)(void);

#ifdef __cplusplus
}
#endif

#endif
