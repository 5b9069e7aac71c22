/**
 * The libfabric side of the benchmark (--baseline libfabric): a target
 * (server process) and a driver (client), over the shm or tcp;ofi_rxm
 * provider. Built only when configure found libfabric (HAVE_LIBFABRIC);
 * otherwise the stubs report it unavailable.
 */
#ifndef FIATOMIC_PERFTEST_OFI_H_
#define FIATOMIC_PERFTEST_OFI_H_

#include <stddef.h>

typedef struct perf_ofi_target perf_ofi_target_t;

/** Open the provider, register target memory, enable an endpoint. */
int perf_ofi_target_open(const char *provider, perf_ofi_target_t **t_p);
/** What the initiator needs (address, key, base); owned by the target. */
void *perf_ofi_target_info(perf_ofi_target_t *t, size_t *len_p);
void *perf_ofi_target_memory(perf_ofi_target_t *t, size_t *len_p);
/** The providers execute atomics at the target when it reads its CQ. */
void perf_ofi_target_progress(perf_ofi_target_t *t);
void perf_ofi_target_close(perf_ofi_target_t *t);

#endif
