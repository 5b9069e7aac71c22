/**
 * The attributes the provider offers (fi_getinfo's answer before the hints
 * narrow it). One place, so that what fi_info lists is what the objects do:
 * a capability, flag or ordering is offered only once the provider
 * implements it (FIP_CAPS, FIP_TX_OP_FLAGS and FIP_MSG_ORDER in fip.h).
 */
#include "fip.h"

#include <string.h>

void fip_attr_fill(struct fi_info *info, uint64_t mr_mode)
{
    info->caps         = FIP_CAPS;
    info->mode         = 0;
    /* the provider's own address format: no transfers yet, no address */
    info->addr_format  = FI_FORMAT_UNSPEC;

    info->tx_attr->caps          = FIP_CAPS;
    info->tx_attr->mode          = 0;
    info->tx_attr->op_flags      = FIP_TX_OP_FLAGS;
    info->tx_attr->msg_order     = FIP_MSG_ORDER | FIP_MSG_ORDER_MSG;
    info->tx_attr->comp_order    = FI_ORDER_NONE;
    info->tx_attr->inject_size   = FIP_INJECT_SIZE;
    info->tx_attr->size          = FIATOMIC_MAX_INFLIGHT_DEFAULT;
    info->tx_attr->iov_limit     = FIP_IOV_LIMIT;
    info->tx_attr->rma_iov_limit = FIP_IOV_LIMIT;

    info->rx_attr->caps          = FIP_CAPS;
    info->rx_attr->mode          = 0;
    info->rx_attr->op_flags      = FIP_RX_OP_FLAGS;
    info->rx_attr->msg_order     = FIP_MSG_ORDER | FIP_MSG_ORDER_MSG;
    info->rx_attr->comp_order    = FI_ORDER_NONE;
    info->rx_attr->size          = FIATOMIC_MAX_INFLIGHT_DEFAULT;
    info->rx_attr->iov_limit     = FIP_IOV_LIMIT;

    info->ep_attr->type          = FI_EP_RDM;
    info->ep_attr->protocol      = FI_PROTO_UNSPEC;
    /* the largest message; an atomic call's elements are bounded by
     * fi_query_atomic's count (libfiatomic's elements per call) */
    info->ep_attr->max_msg_size  = FIP_MSG_MAX;
    info->ep_attr->mem_tag_format = FIP_MEM_TAG_FORMAT;
    info->ep_attr->tx_ctx_cnt    = 1;
    info->ep_attr->rx_ctx_cnt    = 1;

    info->domain_attr->threading        = FI_THREAD_SAFE;
    info->domain_attr->control_progress = FI_PROGRESS_AUTO;
    info->domain_attr->data_progress    = FI_PROGRESS_AUTO;
    info->domain_attr->resource_mgmt    = FI_RM_ENABLED;
    info->domain_attr->av_type          = FI_AV_UNSPEC;
    info->domain_attr->mr_mode          = (int)mr_mode;
    info->domain_attr->mr_key_size      = sizeof(uint64_t);
    /* remote CQ data with messages (fi_senddata), not with RMA */
    info->domain_attr->cq_data_size     = sizeof(uint64_t);
    info->domain_attr->cq_cnt           = 0;
    info->domain_attr->ep_cnt           = 0;
    info->domain_attr->tx_ctx_cnt       = 0;
    info->domain_attr->rx_ctx_cnt       = 0;
    info->domain_attr->max_ep_tx_ctx    = 1;
    info->domain_attr->max_ep_rx_ctx    = 1;
    info->domain_attr->mr_iov_limit     = 1;
    info->domain_attr->caps             = 0;
    info->domain_attr->mode             = 0;
    info->domain_attr->mr_cnt           = 0;

    info->fabric_attr->prov_version = FIP_PROV_VERSION;
}
