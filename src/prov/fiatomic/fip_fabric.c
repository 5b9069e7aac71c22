/**
 * The fabric object: the root of a provider's objects. It holds no UCP
 * resource (each domain has its own UCP context and worker; event queues
 * are fip_eq.c's); it counts its domains and event queues so that closing
 * it under them fails with -FI_EBUSY.
 */
#include "fip.h"

#include <stdlib.h>
#include <string.h>

static int fip_fabric_close(struct fid *fid)
{
    fip_fabric_t *fabric = fip_container_of(fid, fip_fabric_t,
                                            fabric_fid.fid);
    int children;

    pthread_mutex_lock(&fabric->lock);
    children = fabric->domains + fabric->eqs;
    pthread_mutex_unlock(&fabric->lock);
    if (children != 0) {
        return -FI_EBUSY;
    }

    pthread_mutex_destroy(&fabric->lock);
    free(fabric);
    return 0;
}

static int fip_fabric_nosys_pep(struct fid_fabric *fabric,
                                struct fi_info *info, struct fid_pep **pep,
                                void *context)
{
    return -FI_ENOSYS;
}

static int fip_fabric_nosys_wait(struct fid_fabric *fabric,
                                 struct fi_wait_attr *attr,
                                 struct fid_wait **waitset)
{
    return -FI_ENOSYS;
}

static int fip_fabric_nosys_trywait(struct fid_fabric *fabric,
                                    struct fid **fids, int count)
{
    return -FI_ENOSYS;
}

static int fip_fabric_domain2(struct fid_fabric *fabric, struct fi_info *info,
                              struct fid_domain **domain_p, uint64_t flags,
                              void *context)
{
    /* no peer or other extended domains */
    if (flags != 0) {
        return -FI_ENOSYS;
    }
    return fip_domain_open(fabric, info, domain_p, context);
}

static struct fi_ops fip_fabric_fi_ops = {
    .size     = sizeof(struct fi_ops),
    .close    = fip_fabric_close,
    .bind     = fip_nosys_bind,
    .control  = fip_nosys_control,
    .ops_open = fip_nosys_ops_open,
    .tostr    = fip_nosys_tostr,
    .ops_set  = fip_nosys_ops_set
};

static struct fi_ops_fabric fip_fabric_ops = {
    .size       = sizeof(struct fi_ops_fabric),
    .domain     = fip_domain_open,
    .passive_ep = fip_fabric_nosys_pep,
    .eq_open    = fip_eq_open,
    .wait_open  = fip_fabric_nosys_wait,
    .trywait    = fip_fabric_nosys_trywait,
    .domain2    = fip_fabric_domain2
};

int fip_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric_p,
                    void *context)
{
    fip_fabric_t *fabric;

    if ((attr == NULL) || (fabric_p == NULL)) {
        return -FI_EINVAL;
    }
    if ((attr->name != NULL) && strcmp(attr->name, FIP_FABRIC_NAME)) {
        return -FI_ENODATA;
    }

    fabric = calloc(1, sizeof(*fabric));
    if (fabric == NULL) {
        return -FI_ENOMEM;
    }
    pthread_mutex_init(&fabric->lock, NULL);
    fabric->fabric_fid.fid.fclass  = FI_CLASS_FABRIC;
    fabric->fabric_fid.fid.context = context;
    fabric->fabric_fid.fid.ops     = &fip_fabric_fi_ops;
    fabric->fabric_fid.ops         = &fip_fabric_ops;
    /* a hand-made attr without the API version: the provider's own */
    fabric->fabric_fid.api_version = (attr->api_version != 0) ?
                                     attr->api_version : FIP_FI_VERSION;
    *fabric_p = &fabric->fabric_fid;
    return 0;
}
