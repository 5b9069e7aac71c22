/*
 * A complete libfiatomic example: a target worker exposes memory, an
 * initiator worker reaches it through a UCP endpoint, and runs a fetching
 * MIN on an array of doubles and a compare-and-swap-if-greater on an int16 -
 * two cells UCP has no native operation for.
 * Both workers live in this process to keep the example short; across
 * processes the worker address and the packed key travel over any channel
 * (a socket, MPI, PMIx, ...).
 */
#include <fiatomic.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(_call) \
    do { \
        ucs_status_t _s = (_call); \
        if (_s != UCS_OK) { \
            fprintf(stderr, "%s: %s\n", #_call, ucs_status_string(_s)); \
            exit(1); \
        } \
    } while (0)

/* Progress both sides until a request completes (the target must progress
 * for cells that need it: see fiatomic_query_cell). */
static ucs_status_t wait(ucp_worker_h initiator, ucp_worker_h target,
                         ucs_status_ptr_t request)
{
    ucs_status_t status;

    if (!UCS_PTR_IS_PTR(request)) {
        return UCS_PTR_STATUS(request); /* NULL: done at once; or an error */
    }
    while ((status = fiatomic_request_check_status(request)) ==
           UCS_INPROGRESS) {
        ucp_worker_progress(initiator);
        ucp_worker_progress(target);
    }
    fiatomic_request_free(request);
    return status;
}

int main(void)
{
    ucp_params_t params = {
        .field_mask = UCP_PARAM_FIELD_FEATURES,
        .features   = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 |
                      UCP_FEATURE_AMO64 | UCP_FEATURE_AM
    };
    ucp_worker_params_t wparams = {
        .field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SINGLE
    };
    fiatomic_mem_params_t mparams = {
        .field_mask = FIATOMIC_MEM_PARAM_FIELD_LENGTH |
                      FIATOMIC_MEM_PARAM_FIELD_FLAGS,
        .length     = 4096,
        .flags      = FIATOMIC_MEM_FLAG_ALLOCATE
    };
    double mins[4] = {2.5, -1.0, 7.0, 0.0}, old_d[4];
    int16_t greater = 100, compare = 50, old_s;
    ucp_worker_h target_worker, init_worker;
    fiatomic_h target_fia, init_fia;
    ucp_ep_params_t ep_params;
    ucp_address_t *address;
    fiatomic_cell_info_t info;
    fiatomic_mem_h mem;
    fiatomic_ep_h ep;
    ucp_context_h context;
    ucs_status_t status;
    size_t address_len, key_len;
    void *key_buf, *base, *close_req;
    ucs_status_ptr_t request;
    uint64_t key, remote;
    ucp_ep_h ucp_ep;
    double *target_d;
    int i;

    CHECK(ucp_init(&params, NULL, &context));
    CHECK(ucp_worker_create(context, &wparams, &target_worker));
    CHECK(ucp_worker_create(context, &wparams, &init_worker));

    /* Target: expose memory and pack its key. */
    CHECK(fiatomic_create(context, target_worker, NULL, &target_fia));
    CHECK(fiatomic_mem_expose(target_fia, &mparams, &mem));
    CHECK(fiatomic_mem_query(mem, &base, NULL));
    CHECK(fiatomic_mem_pack_key(mem, &key_buf, &key_len));
    target_d = base;
    for (i = 0; i < 4; ++i) {
        target_d[i] = 1.0 + i; /* 1 2 3 4 */
    }
    *(int16_t*)(target_d + 4) = 42;
    CHECK(ucp_worker_get_address(target_worker, &address, &address_len));

    /* Initiator: an endpoint to the target and the unpacked key. (With
     * .err_mode = UCP_ERR_HANDLING_MODE_PEER, on transports that support
     * it, operations fail instead of waiting when the target dies.) */
    CHECK(fiatomic_create(context, init_worker, NULL, &init_fia));
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep_params.address    = address;
    CHECK(ucp_ep_create(init_worker, &ep_params, &ucp_ep));
    CHECK(fiatomic_ep_create(init_fia, ucp_ep, NULL, &ep));
    CHECK(fiatomic_rkey_unpack(ep, key_buf, key_len, &key));
    remote = (uintptr_t)base; /* the target's address, sent with the key */

    /* fi_fetch_atomic(FI_MIN, FI_DOUBLE) on 4 elements at once. */
    status = wait(init_worker, target_worker,
                  fiatomic_fetch_atomic_nbx(ep, mins, 4, old_d, remote, key,
                                            FI_DOUBLE, FI_MIN, NULL));
    fiatomic_query_cell(ep, key, FIATOMIC_FAMILY_FETCH, FI_DOUBLE, FI_MIN,
                        &info);
    CHECK(status);
    printf("fetch MIN double x4 via %s: old %g %g %g %g, now %g %g %g %g\n",
           fiatomic_strategy_name(info.strategy), old_d[0], old_d[1],
           old_d[2], old_d[3], target_d[0], target_d[1], target_d[2],
           target_d[3]);

    /* fi_compare_atomic(FI_CSWAP_GT, FI_INT16): swap if compare > target. */
    status = wait(init_worker, target_worker,
                  fiatomic_compare_atomic_nbx(ep, &greater, 1, &compare,
                                              &old_s, remote + 32, key,
                                              FI_INT16, FI_CSWAP_GT, NULL));
    CHECK(status);
    printf("compare CSWAP_GT int16: old %d, now %d\n", old_s,
           *(int16_t*)(target_d + 4));

    /* Errors are statuses, convertible to libfabric's -FI_E* codes. (Keep
     * the pointer: UCS_PTR_STATUS() evaluates its argument twice.) */
    request = fiatomic_atomic_nbx(ep, &greater, 1, remote + 1, key, FI_INT16,
                                  FI_SUM, NULL);
    status  = UCS_PTR_STATUS(request);
    printf("misaligned int16: %s (%d)\n", ucs_status_string(status),
           fiatomic_status_to_fi_errno(status));

    fiatomic_rkey_release(ep, key);
    fiatomic_ep_destroy(ep);
    close_req = ucp_ep_close_nb(ucp_ep, UCP_EP_CLOSE_MODE_FLUSH);
    while (UCS_PTR_IS_PTR(close_req) &&
           (ucp_request_check_status(close_req) == UCS_INPROGRESS)) {
        ucp_worker_progress(init_worker);
        ucp_worker_progress(target_worker);
    }
    if (UCS_PTR_IS_PTR(close_req)) {
        ucp_request_free(close_req);
    }
    fiatomic_destroy(init_fia);
    ucp_worker_release_address(target_worker, address);
    fiatomic_key_release(key_buf);
    fiatomic_mem_unexpose(mem);
    fiatomic_destroy(target_fia);
    ucp_worker_destroy(init_worker);
    ucp_worker_destroy(target_worker);
    ucp_cleanup(context);
    return 0;
}
