/**
 * atomicx: RC queue pairs (create, connect, post one atomic work request).
 */

#include "atomicx.h"

#include <ucs/debug/log.h>
#include <string.h>


ucs_status_t uct_atomicx_qp_create(uct_atomicx_iface_t *iface,
                                   struct ibv_qp **qp_p)
{
    uct_atomicx_md_t *md = ucs_derived_of(iface->super.md, uct_atomicx_md_t);
    struct ibv_qp_init_attr init_attr;
    struct ibv_qp_attr qp_attr;
    struct ibv_qp *qp;

    memset(&init_attr, 0, sizeof(init_attr));
    init_attr.send_cq          = iface->cq;
    init_attr.recv_cq          = iface->cq;
    init_attr.qp_type          = IBV_QPT_RC;
    init_attr.sq_sig_all       = 1;
    init_attr.cap.max_send_wr  = iface->config.tx_queue_len;
    init_attr.cap.max_send_sge = 1;
    /* Nothing is ever received: atomics complete on the initiator only */
    init_attr.cap.max_recv_wr  = 1;
    init_attr.cap.max_recv_sge = 1;

    qp = ibv_create_qp(md->pd, &init_attr);
    if (qp == NULL) {
        ucs_error("%s: ibv_create_qp(max_send_wr %u) failed: %m",
                  md->dev_name, iface->config.tx_queue_len);
        return UCS_ERR_IO_ERROR;
    }

    memset(&qp_attr, 0, sizeof(qp_attr));
    qp_attr.qp_state        = IBV_QPS_INIT;
    qp_attr.pkey_index      = 0;
    qp_attr.port_num        = iface->port_num;
    qp_attr.qp_access_flags = IBV_ACCESS_REMOTE_ATOMIC |
                              IBV_ACCESS_REMOTE_READ |
                              IBV_ACCESS_REMOTE_WRITE;
    if (ibv_modify_qp(qp, &qp_attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0) {
        ucs_error("%s: failed to move qp 0x%x to INIT: %m", md->dev_name,
                  qp->qp_num);
        ibv_destroy_qp(qp);
        return UCS_ERR_IO_ERROR;
    }

    *qp_p = qp;
    return UCS_OK;
}


ucs_status_t uct_atomicx_qp_connect(uct_atomicx_iface_t *iface,
                                    struct ibv_qp *qp,
                                    const uct_atomicx_dev_addr_t *dev_addr,
                                    uint32_t dest_qp_num)
{
    uct_atomicx_md_t *md = ucs_derived_of(iface->super.md, uct_atomicx_md_t);
    struct ibv_qp_attr qp_attr;

    memset(&qp_attr, 0, sizeof(qp_attr));
    qp_attr.qp_state              = IBV_QPS_RTR;
    qp_attr.path_mtu              = iface->config.path_mtu;
    qp_attr.dest_qp_num           = dest_qp_num;
    qp_attr.rq_psn                = 0;
    /* The responder must accept as many atomics in flight as we send */
    qp_attr.max_dest_rd_atomic    = iface->config.max_rd_atomic;
    qp_attr.min_rnr_timer         = 12;
    qp_attr.ah_attr.port_num      = iface->port_num;
    qp_attr.ah_attr.sl            = iface->config.sl;
    qp_attr.ah_attr.dlid          = dev_addr->lid;
    if (dev_addr->is_global) {
        /* RoCE has no LIDs: every packet carries a GRH */
        qp_attr.ah_attr.is_global      = 1;
        qp_attr.ah_attr.grh.dgid       = dev_addr->gid;
        qp_attr.ah_attr.grh.sgid_index = iface->gid_index;
        qp_attr.ah_attr.grh.hop_limit  = 64;
    }

    if (ibv_modify_qp(qp, &qp_attr, IBV_QP_STATE | IBV_QP_AV |
                                    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                                    IBV_QP_MIN_RNR_TIMER) != 0) {
        ucs_error("%s: failed to move qp 0x%x to RTR (dest qp 0x%x): %m",
                  md->dev_name, qp->qp_num, dest_qp_num);
        return UCS_ERR_IO_ERROR;
    }

    memset(&qp_attr, 0, sizeof(qp_attr));
    qp_attr.qp_state      = IBV_QPS_RTS;
    qp_attr.sq_psn        = 0;
    qp_attr.timeout       = iface->config.timeout;
    qp_attr.retry_cnt     = iface->config.retry_count;
    qp_attr.rnr_retry     = 7;
    qp_attr.max_rd_atomic = iface->config.max_rd_atomic;
    if (ibv_modify_qp(qp, &qp_attr, IBV_QP_STATE | IBV_QP_SQ_PSN |
                                    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                    IBV_QP_RNR_RETRY |
                                    IBV_QP_MAX_QP_RD_ATOMIC) != 0) {
        ucs_error("%s: failed to move qp 0x%x to RTS: %m", md->dev_name,
                  qp->qp_num);
        return UCS_ERR_IO_ERROR;
    }

    ucs_debug("%s: connected qp 0x%x to qp 0x%x", md->dev_name, qp->qp_num,
              dest_qp_num);
    return UCS_OK;
}


ucs_status_t uct_atomicx_post_wr(uct_atomicx_iface_t *iface,
                                 struct ibv_qp *qp, enum ibv_wr_opcode opcode,
                                 uint32_t slot, uint64_t word_addr,
                                 uint32_t rkey, uint64_t compare_add,
                                 uint64_t swap)
{
    struct ibv_send_wr wr, *bad_wr;
    struct ibv_sge sge;
    int ret;

    ucs_assertv((opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) ||
                (opcode == IBV_WR_ATOMIC_CMP_AND_SWP), "opcode %d", opcode);

    sge.addr                  = (uintptr_t)&iface->results[slot];
    sge.length                = sizeof(uint64_t);
    sge.lkey                  = iface->results_mr->lkey;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id                  = slot;
    wr.sg_list                = &sge;
    wr.num_sge                = 1;
    wr.opcode                 = opcode;
    wr.send_flags             = IBV_SEND_SIGNALED;
    wr.wr.atomic.remote_addr  = word_addr;
    wr.wr.atomic.rkey         = rkey;
    wr.wr.atomic.compare_add  = compare_add;
    wr.wr.atomic.swap         = swap;

    ucs_trace_data("qp 0x%x post %s [0x%" PRIx64 " rkey 0x%x] 0x%" PRIx64
                   " 0x%" PRIx64 " slot %u", qp->qp_num,
                   (opcode == IBV_WR_ATOMIC_CMP_AND_SWP) ? "CAS" : "FADD",
                   word_addr, rkey, compare_add, swap, slot);

    ret = ibv_post_send(qp, &wr, &bad_wr);
    if (ret != 0) {
        ucs_error("ibv_post_send(qp 0x%x) failed: %s", qp->qp_num,
                  strerror(ret));
        return UCS_ERR_IO_ERROR;
    }

    return UCS_OK;
}


ucs_status_t uct_atomicx_wc_status(enum ibv_wc_status wc_status)
{
    switch (wc_status) {
    case IBV_WC_SUCCESS:
        return UCS_OK;
    case IBV_WC_WR_FLUSH_ERR:
        return UCS_ERR_CANCELED;
    case IBV_WC_RETRY_EXC_ERR:
    case IBV_WC_RNR_RETRY_EXC_ERR:
        return UCS_ERR_ENDPOINT_TIMEOUT;
    case IBV_WC_REM_ACCESS_ERR:
    case IBV_WC_LOC_PROT_ERR:
        return UCS_ERR_INVALID_ADDR;
    default:
        return UCS_ERR_IO_ERROR;
    }
}
