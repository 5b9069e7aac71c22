/**
 * fi_getinfo for the provider: the offers (one per memory registration
 * mode), each matched against the caller's hints with libfabric 1.17's
 * rules (fi_getinfo(3), fi_domain(3), fi_endpoint(3)) and narrowed to what
 * the hints ask. The core has already checked the API version (the
 * provider's fi_version) and the provider name. A destination address in
 * the hints is validated and copied into the offers.
 */
#include "fip.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FIP_NODATA -FI_ENODATA

/* bits asked but not offered */
#define FIP_EXCESS(_asked, _offered) (((_asked) & ~(_offered)) != 0)
/* a size asked above the one offered (0 asks nothing) */
#define FIP_ABOVE(_asked, _offered)  ((_asked) > (_offered))

static int fip_match_progress(enum fi_progress asked, enum fi_progress *p)
{
    /* both models are implemented: the caller's choice, else the offer's */
    switch (asked) {
    case FI_PROGRESS_UNSPEC:
        return 0;
    case FI_PROGRESS_AUTO:
    case FI_PROGRESS_MANUAL:
        *p = asked;
        return 0;
    default:
        return FIP_NODATA;
    }
}

/*
 * Memory registration: before API 1.5 mr_mode is one of FI_MR_UNSPEC (any),
 * FI_MR_BASIC (provider keys on virtual addresses of allocated memory) or
 * FI_MR_SCALABLE (program keys, offsets). From 1.5 it is the set of mode
 * bits the caller supports, where FI_MR_BASIC and FI_MR_SCALABLE still
 * stand for those two modes; an offer matches when the caller supports
 * every bit it requires.
 */
static int fip_match_mr_mode(uint32_t version, int asked, uint64_t offered,
                             int *result)
{
    int basic = (offered == FIP_MR_MODE_PROV);

    if (FI_VERSION_LT(version, FI_VERSION(1, 5))) {
        if ((asked == FI_MR_BASIC && !basic) ||
            (asked == FI_MR_SCALABLE && basic) ||
            (asked != FI_MR_UNSPEC && asked != FI_MR_BASIC &&
             asked != FI_MR_SCALABLE)) {
            return FIP_NODATA;
        }
        *result = basic ? FI_MR_BASIC : FI_MR_SCALABLE;
        return 0;
    }

    if (asked & FI_MR_BASIC) {
        if (!basic) {
            return FIP_NODATA;
        }
    } else if (asked & FI_MR_SCALABLE) {
        if (basic) {
            return FIP_NODATA;
        }
    } else if (FIP_EXCESS(offered, (uint64_t)asked)) {
        return FIP_NODATA;
    }
    *result = (int)offered;
    return 0;
}

static int fip_match_name(const char *asked, const char *offered)
{
    return ((asked == NULL) || !strcmp(asked, offered)) ? 0 : FIP_NODATA;
}

static int fip_match_fabric(const struct fi_fabric_attr *h,
                            const struct fi_fabric_attr *p)
{
    if (h == NULL) {
        return 0;
    }
    if (fip_match_name(h->name, p->name) ||
        ((h->prov_name != NULL) &&
         strcasecmp(h->prov_name, FIP_PROV_NAME))) {
        return FIP_NODATA;
    }
    return 0;
}

static int fip_match_domain(uint32_t version, const struct fi_domain_attr *h,
                            struct fi_domain_attr *p, uint64_t mr_mode)
{
    if (h == NULL) {
        return 0;
    }

    if (fip_match_name(h->name, p->name) ||
        fip_match_progress(h->control_progress, &p->control_progress) ||
        fip_match_progress(h->data_progress, &p->data_progress) ||
        fip_match_mr_mode(version, h->mr_mode, mr_mode, &p->mr_mode) ||
        FIP_EXCESS(h->caps, p->caps) || FIP_EXCESS(p->mode, h->mode) ||
        FIP_ABOVE(h->mr_key_size, p->mr_key_size) ||
        FIP_ABOVE(h->cq_data_size, p->cq_data_size) ||
        FIP_ABOVE(h->max_ep_tx_ctx, p->max_ep_tx_ctx) ||
        FIP_ABOVE(h->max_ep_rx_ctx, p->max_ep_rx_ctx) ||
        FIP_ABOVE(h->mr_iov_limit, p->mr_iov_limit) ||
        /* a job key (fip_admit.c) of any bytes, up to its limit */
        ((h->auth_key_size != 0) &&
         ((h->auth_key == NULL) || (h->auth_key_size > FIP_AUTH_KEY_MAX)))) {
        return FIP_NODATA;
    }

    /* every threading level is implemented (the domain's lock serves
     * FI_THREAD_SAFE and costs nothing uncontended for the others) */
    if (h->threading > FI_THREAD_ENDPOINT) {
        return FIP_NODATA;
    } else if (h->threading != FI_THREAD_UNSPEC) {
        p->threading = h->threading;
    }

    switch (h->resource_mgmt) {
    case FI_RM_UNSPEC:
        break;
    case FI_RM_DISABLED:
    case FI_RM_ENABLED:
        p->resource_mgmt = h->resource_mgmt;
        break;
    default:
        return FIP_NODATA;
    }

    switch (h->av_type) {
    case FI_AV_UNSPEC:
        break;
    case FI_AV_MAP:
    case FI_AV_TABLE:
        p->av_type = h->av_type;
        break;
    default:
        return FIP_NODATA;
    }
    return 0;
}

static int fip_match_ep(const struct fi_ep_attr *h, struct fi_ep_attr *p)
{
    if (h == NULL) {
        return 0;
    }
    if (((h->type != FI_EP_UNSPEC) && (h->type != p->type)) ||
        ((h->protocol != FI_PROTO_UNSPEC) && (h->protocol != p->protocol)) ||
        FIP_ABOVE(h->max_msg_size, p->max_msg_size) ||
        FIP_ABOVE(h->msg_prefix_size, p->msg_prefix_size) ||
        FIP_ABOVE(h->max_order_raw_size, p->max_order_raw_size) ||
        FIP_ABOVE(h->max_order_war_size, p->max_order_war_size) ||
        FIP_ABOVE(h->max_order_waw_size, p->max_order_waw_size) ||
        /* no shared or scalable contexts */
        FIP_ABOVE(h->tx_ctx_cnt, p->tx_ctx_cnt) ||
        FIP_ABOVE(h->rx_ctx_cnt, p->rx_ctx_cnt) ||
        (h->auth_key_size != 0)) {
        return FIP_NODATA;
    }
    /* any tag format fits the 64 bits matched whole: the fields asked
     * are given as asked (fi_endpoint(3)) */
    if (h->mem_tag_format != 0) {
        p->mem_tag_format = h->mem_tag_format;
    }
    return 0;
}

static int fip_match_tx(const struct fi_tx_attr *h, struct fi_tx_attr *p)
{
    if (h == NULL) {
        return 0;
    }
    if (FIP_EXCESS(h->caps, p->caps) || FIP_EXCESS(p->mode, h->mode) ||
        FIP_EXCESS(h->op_flags, p->op_flags) ||
        FIP_EXCESS(h->msg_order, p->msg_order) ||
        FIP_EXCESS(h->comp_order, p->comp_order) ||
        FIP_ABOVE(h->inject_size, p->inject_size) ||
        FIP_ABOVE(h->size, p->size) ||
        FIP_ABOVE(h->iov_limit, p->iov_limit) ||
        FIP_ABOVE(h->rma_iov_limit, p->rma_iov_limit)) {
        return FIP_NODATA;
    }
    if (h->caps != 0) {
        p->caps = h->caps;
    }
    p->op_flags = h->op_flags;
    return 0;
}

static int fip_match_rx(const struct fi_rx_attr *h, struct fi_rx_attr *p)
{
    if (h == NULL) {
        return 0;
    }
    if (FIP_EXCESS(h->caps, p->caps) || FIP_EXCESS(p->mode, h->mode) ||
        FIP_EXCESS(h->op_flags, p->op_flags) ||
        FIP_EXCESS(h->msg_order, p->msg_order) ||
        FIP_EXCESS(h->comp_order, p->comp_order) ||
        FIP_ABOVE(h->total_buffered_recv, p->total_buffered_recv) ||
        FIP_ABOVE(h->size, p->size) ||
        FIP_ABOVE(h->iov_limit, p->iov_limit)) {
        return FIP_NODATA;
    }
    if (h->caps != 0) {
        p->caps = h->caps;
    }
    p->op_flags = h->op_flags;
    return 0;
}

int fip_info_match(uint32_t version, const struct fi_info *hints,
                   struct fi_info *prov)
{
    uint64_t mr_mode = (uint64_t)prov->domain_attr->mr_mode;

    if (hints == NULL) {
        return 0;
    }

    if (FIP_EXCESS(hints->caps, prov->caps) ||
        FIP_EXCESS(prov->mode, hints->mode) ||
        ((hints->addr_format != FI_FORMAT_UNSPEC) &&
         (hints->addr_format != prov->addr_format)) ||
        (hints->handle != NULL) ||
        fip_match_fabric(hints->fabric_attr, prov->fabric_attr) ||
        fip_match_domain(version, hints->domain_attr, prov->domain_attr,
                         mr_mode) ||
        fip_match_ep(hints->ep_attr, prov->ep_attr) ||
        fip_match_tx(hints->tx_attr, prov->tx_attr) ||
        fip_match_rx(hints->rx_attr, prov->rx_attr)) {
        return FIP_NODATA;
    }

    /* the primary capabilities asked for, not more (fi_getinfo(3)) */
    if (hints->caps != 0) {
        prov->caps = hints->caps;
    }
    return 0;
}

static struct fi_info *fip_offer(uint64_t mr_mode)
{
    struct fi_info *info = fi_allocinfo();

    if (info == NULL) {
        return NULL;
    }
    info->fabric_attr->name = strdup(FIP_FABRIC_NAME);
    info->domain_attr->name = strdup(FIP_DOMAIN_NAME);
    if ((info->fabric_attr->name == NULL) ||
        (info->domain_attr->name == NULL)) {
        fi_freeinfo(info);
        return NULL;
    }
    fip_attr_fill(info, mr_mode);
    return info;
}

int fip_getinfo(uint32_t version, const char *node, const char *service,
                uint64_t flags, const struct fi_info *hints,
                struct fi_info **info_p)
{
    /* provider keys first: any peer can use them unchanged */
    static const uint64_t mr_modes[] = {FIP_MR_MODE_PROV,
                                        FIP_MR_MODE_PROGRAM};
    struct fi_info *head = NULL, **tail = &head, *info;
    fip_addr_t dest;
    size_t i;
    int ret;

    if (info_p == NULL) {
        return -FI_EINVAL;
    }

    /* no name service: a node, a service or a source address to resolve
     * cannot be answered. A destination in the provider's own format (the
     * bytes of a peer's fi_getname, as fi_pingpong's client gives) is
     * validated and told back in every offer. */
    if ((node != NULL) || (service != NULL) ||
        ((hints != NULL) && (hints->src_addr != NULL))) {
        return FIP_NODATA;
    }
    if ((hints != NULL) && (hints->dest_addr != NULL) &&
        ((hints->dest_addrlen != FIP_ADDR_LEN) ||
         (fip_addr_unpack(hints->dest_addr, hints->dest_addrlen,
                          &dest) != 0))) {
        return FIP_NODATA;
    }

    for (i = 0; i < sizeof(mr_modes) / sizeof(mr_modes[0]); ++i) {
        info = fip_offer(mr_modes[i]);
        if (info == NULL) {
            fi_freeinfo(head);
            return -FI_ENOMEM;
        }
        ret = fip_info_match(version, hints, info);
        if (ret != 0) {
            fi_freeinfo(info);
            continue;
        }
        /* the job key asked for, told back: fi_domain takes it from there */
        if ((hints != NULL) && (hints->domain_attr != NULL) &&
            (hints->domain_attr->auth_key_size != 0)) {
            info->domain_attr->auth_key =
                malloc(hints->domain_attr->auth_key_size);
            if (info->domain_attr->auth_key == NULL) {
                fi_freeinfo(info);
                fi_freeinfo(head);
                return -FI_ENOMEM;
            }
            memcpy(info->domain_attr->auth_key, hints->domain_attr->auth_key,
                   hints->domain_attr->auth_key_size);
            info->domain_attr->auth_key_size =
                hints->domain_attr->auth_key_size;
        }
        if ((hints != NULL) && (hints->dest_addr != NULL)) {
            info->dest_addr = malloc(FIP_ADDR_LEN);
            if (info->dest_addr == NULL) {
                fi_freeinfo(info);
                fi_freeinfo(head);
                return -FI_ENOMEM;
            }
            memcpy(info->dest_addr, hints->dest_addr, FIP_ADDR_LEN);
            info->dest_addrlen = FIP_ADDR_LEN;
        }
        *tail = info;
        tail  = &info->next;
    }

    if (head == NULL) {
        return FIP_NODATA;
    }
    *info_p = head;
    return 0;
}

/* FI_SEND and FI_RECV modify the message capabilities (FI_MSG, FI_TAGGED):
 * without either they restrict nothing, and a program may name them when it
 * opens an endpoint (Sandia OpenSHMEM adds FI_RECV to an RMA and atomic
 * endpoint "to drive progress on the CQ"). Drop them from a copy of the
 * info then, so that the endpoint opens with what it implements. */
static void fip_drop_idle_modifiers(struct fi_info *info)
{
    const uint64_t msg = FI_MSG | FI_TAGGED;
    const uint64_t modifiers = FI_SEND | FI_RECV;

    if (!(info->caps & msg)) {
        info->caps &= ~modifiers;
    }
    if ((info->tx_attr != NULL) && !(info->tx_attr->caps & msg)) {
        info->tx_attr->caps &= ~modifiers;
    }
    if ((info->rx_attr != NULL) && !(info->rx_attr->caps & msg)) {
        info->rx_attr->caps &= ~modifiers;
    }
}

int fip_getinfo_check_open(uint32_t version, const struct fi_info *info)
{
    static const uint64_t mr_modes[] = {FIP_MR_MODE_PROV,
                                        FIP_MR_MODE_PROGRAM};
    struct fi_info *offer, *asked;
    size_t i;
    int ret = -FI_EINVAL;

    asked = fi_dupinfo(info);
    if (asked == NULL) {
        return -FI_ENOMEM;
    }
    fip_drop_idle_modifiers(asked);
    /* an info the provider gave (or one it would accept as hints) names
     * attributes the provider implements */
    for (i = 0; i < sizeof(mr_modes) / sizeof(mr_modes[0]); ++i) {
        offer = fip_offer(mr_modes[i]);
        if (offer == NULL) {
            ret = -FI_ENOMEM;
            break;
        }
        ret = (fip_info_match(version, asked, offer) == 0) ? 0 : -FI_EINVAL;
        fi_freeinfo(offer);
        if (ret == 0) {
            break;
        }
    }
    fi_freeinfo(asked);
    return ret;
}
