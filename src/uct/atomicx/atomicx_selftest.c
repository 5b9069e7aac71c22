/**
 * atomicx: the byte-order self-test run at interface creation.
 *
 * Verbs leaves the byte order of a fetched atomic value to the device:
 * soft-RoCE returns it in host order, mlx5 in big-endian unless configured
 * otherwise. A FETCH_AND_ADD through a loopback QP on a known word settles it
 * for the device at hand, and also verifies what the CAS loops rely on: that
 * the device adds to the word as a host-order 64-bit integer.
 */

#include "atomicx.h"

#include <ucs/debug/log.h>
#include <ucs/time/time.h>


#define UCT_ATOMICX_SELFTEST_VALUE 0x0102030405060708ull


ucs_status_t uct_atomicx_selftest(uct_atomicx_iface_t *iface, double timeout)
{
    uct_atomicx_md_t *md = ucs_derived_of(iface->super.md, uct_atomicx_md_t);
    uint32_t result_slot = iface->config.max_ops;
    uint64_t *target     = &iface->results[result_slot + 1];
    volatile uint64_t *result = &iface->results[result_slot];
    ucs_time_t deadline;
    struct ibv_qp *qp;
    struct ibv_wc wc;
    ucs_status_t status;
    int n;

    status = uct_atomicx_qp_create(iface, &qp);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_atomicx_qp_connect(iface, qp, &iface->dev_addr, qp->qp_num);
    if (status != UCS_OK) {
        goto out_destroy_qp;
    }

    *target = UCT_ATOMICX_SELFTEST_VALUE;
    *result = 0;
    status  = uct_atomicx_post_wr(iface, qp, IBV_WR_ATOMIC_FETCH_AND_ADD,
                                  result_slot, (uintptr_t)target,
                                  iface->results_mr->rkey, 1, 0);
    if (status != UCS_OK) {
        goto out_destroy_qp;
    }

    deadline = ucs_get_time() + ucs_time_from_sec(timeout);
    do {
        n = ibv_poll_cq(iface->cq, 1, &wc);
    } while ((n == 0) && (ucs_get_time() < deadline));

    if (n <= 0) {
        ucs_error("%s: atomic self-test got no completion in %.1f s",
                  md->dev_name, timeout);
        status = UCS_ERR_TIMED_OUT;
        goto out_destroy_qp;
    }

    if (wc.status != IBV_WC_SUCCESS) {
        ucs_error("%s: atomic self-test failed: %s", md->dev_name,
                  ibv_wc_status_str(wc.status));
        status = UCS_ERR_IO_ERROR;
        goto out_destroy_qp;
    }

    if (*target != UCT_ATOMICX_SELFTEST_VALUE + 1) {
        ucs_error("%s: the device does not add to memory in host byte order "
                  "(0x%016llx + 1 gave 0x%016llx); atomicx cannot use it",
                  md->dev_name, UCT_ATOMICX_SELFTEST_VALUE,
                  (unsigned long long)*target);
        status = UCS_ERR_UNSUPPORTED;
    } else if (*result == UCT_ATOMICX_SELFTEST_VALUE) {
        iface->reply_order = UCT_ATOMICX_REPLY_HOST;
    } else if (*result == __builtin_bswap64(UCT_ATOMICX_SELFTEST_VALUE)) {
        iface->reply_order = UCT_ATOMICX_REPLY_BE;
    } else {
        ucs_error("%s: atomic self-test fetched 0x%016llx, expected 0x%016llx "
                  "in either byte order", md->dev_name,
                  (unsigned long long)*result, UCT_ATOMICX_SELFTEST_VALUE);
        status = UCS_ERR_UNSUPPORTED;
    }

out_destroy_qp:
    ibv_destroy_qp(qp);
    return status;
}
