/**
 * Memory registration (fi_mr(3)) in the two modes SOS uses:
 *  - provider keys (FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED):
 *    the key is 64 random bits from the kernel's generator, so a guessed
 *    key names no region; peers address the region by virtual address;
 *  - program keys (mode 0): the requested key, unique in the domain
 *    (-FI_ENOKEY otherwise); peers address the region by offset, the
 *    registered buffer starting at the `offset` given.
 * A region with remote access is exposed through libfiatomic
 * (fiatomic_mem_expose, with the remote access it was registered with:
 * atomics are refused what it does not grant, at both ends), and its
 * packed key kept for the key service (fip_key.c), which peers ask what a
 * key names. It is not mapped with UCP: RMA is the provider's own checked
 * messages (fip_rma_wire.c), and a UCP rkey would let a peer's UCP reach
 * the region with access the registration does not grant (a NIC's). With
 * FI_FIATOMIC_MR_SHARE the pages of a region with remote read and write
 * are first moved into shared memory at their own address (fip_share.c)
 * and exposed where UCP allocated them. The domain's key table finds a
 * region by key; its size is capped (FIP_MR_MAX). Closing a region takes
 * its key out of the table first, so later requests are refused.
 */
#include "fip.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define FIP_MR_ACCESS (FI_READ | FI_WRITE | FI_SEND | FI_RECV | \
                       FI_REMOTE_READ | FI_REMOTE_WRITE)
#define FIP_MR_REMOTE_RW (FI_REMOTE_READ | FI_REMOTE_WRITE)

static size_t fip_mr_bucket(uint64_t key)
{
    /* provider keys are random already; program keys are often 0, 1, 2 */
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return key % FIP_MR_BUCKETS;
}

/* with the domain's mr_lock held */
static fip_mr_t *fip_mr_find(fip_domain_t *domain, uint64_t key)
{
    fip_mr_t *mr;

    for (mr = domain->mr_buckets[fip_mr_bucket(key)]; mr != NULL;
         mr = mr->next) {
        if (mr->mr_fid.key == key) {
            return mr;
        }
    }
    return NULL;
}

fip_mr_t *fip_mr_lookup_locked(fip_domain_t *domain, uint64_t key)
{
    return fip_mr_find(domain, key);
}

static int fip_mr_random_key(uint64_t *key_p)
{
    uint64_t key;

    do {
        if (getrandom(&key, sizeof(key), 0) != sizeof(key)) {
            return -FI_EOTHER;
        }
    } while (key == 0);
    *key_p = key;
    return 0;
}

/* enter the region in the domain's table under a key of the mode's kind */
static int fip_mr_insert(fip_domain_t *domain, fip_mr_t *mr,
                         uint64_t requested_key)
{
    int prov_keys = (domain->mr_mode == FIP_MR_MODE_PROV);
    uint64_t key  = requested_key;
    size_t bucket;
    int ret = 0, tries;

    pthread_mutex_lock(&domain->mr_lock);
    if (domain->mr_count >= FIP_MR_MAX) {
        ret = -FI_ENOSPC;
        goto out;
    }
    for (tries = 0; ; ++tries) {
        if (prov_keys) {
            ret = fip_mr_random_key(&key);
            if (ret != 0) {
                goto out;
            }
        }
        if (fip_mr_find(domain, key) == NULL) {
            break;
        }
        /* a program key in use; a random key drawn twice (2^-64) */
        if (!prov_keys || (tries > 8)) {
            ret = -FI_ENOKEY;
            goto out;
        }
    }
    mr->mr_fid.key = key;
    bucket         = fip_mr_bucket(key);
    mr->next       = domain->mr_buckets[bucket];
    domain->mr_buckets[bucket] = mr;
    ++domain->mr_count;
out:
    pthread_mutex_unlock(&domain->mr_lock);
    return ret;
}

static void fip_mr_remove(fip_domain_t *domain, fip_mr_t *mr)
{
    fip_mr_t **p;

    pthread_mutex_lock(&domain->mr_lock);
    for (p = &domain->mr_buckets[fip_mr_bucket(mr->mr_fid.key)]; *p != NULL;
         p = &(*p)->next) {
        if (*p == mr) {
            *p = mr->next;
            --domain->mr_count;
            break;
        }
    }
    pthread_mutex_unlock(&domain->mr_lock);
}

/* what registration took, in reverse */
static void fip_mr_release(fip_mr_t *mr)
{
    if (mr->packed != NULL) {
        fiatomic_key_release(mr->packed);
    }
    if (mr->share != NULL) {
        fip_share_release(mr); /* the program's private pages back */
    } else if (mr->mem != NULL) {
        fiatomic_mem_unexpose(mr->mem);
    }
}

/* expose the region (in shared memory when asked and eligible, else where
 * it is) and pack what the key service hands peers that ask for its key */
static int fip_mr_expose(fip_domain_t *domain, fip_mr_t *mr)
{
    fiatomic_mem_params_t params;
    ucs_status_t status;

    /* peers map a shared registration read-write: only for regions that
     * grant both */
    if (domain->mr_share && !domain->share_none &&
        ((mr->access & FIP_MR_REMOTE_RW) == FIP_MR_REMOTE_RW)) {
        (void)fip_share_register(domain, mr);
    }
    if (mr->mem == NULL) {
        params.field_mask = FIATOMIC_MEM_PARAM_FIELD_ADDRESS |
                            FIATOMIC_MEM_PARAM_FIELD_LENGTH |
                            FIATOMIC_MEM_PARAM_FIELD_FLAGS;
        params.address    = mr->addr;
        params.length     = mr->length;
        /* atomics as registered: libfiatomic refuses what the region does
         * not grant, at its target too */
        params.flags      = (!(mr->access & FI_REMOTE_READ) ?
                             FIATOMIC_MEM_FLAG_NO_REMOTE_READ : 0) |
                            (!(mr->access & FI_REMOTE_WRITE) ?
                             FIATOMIC_MEM_FLAG_NO_REMOTE_WRITE : 0);
        status = fiatomic_mem_expose(domain->fia, &params, &mr->mem);
        if (status != UCS_OK) {
            mr->mem = NULL;
            return fiatomic_status_to_fi_errno(status);
        }
    }
    status = fiatomic_mem_pack_key(mr->mem, &mr->packed, &mr->packed_len);
    if (status != UCS_OK) {
        mr->packed = NULL;
        return fiatomic_status_to_fi_errno(status);
    }
    return (mr->packed_len > FIP_KEY_PACKED_MAX) ? -FI_ENOSPC : 0;
}

static int fip_mr_close(struct fid *fid)
{
    fip_mr_t *mr = fip_container_of(fid, fip_mr_t, mr_fid.fid);

    /* out of the key table first: the key service refuses it from now */
    fip_mr_remove(mr->domain, mr);
    fip_mr_release(mr);
    fip_domain_child_remove(mr->domain);
    free(mr);
    return 0;
}

static struct fi_ops fip_mr_fi_ops = {
    .size     = sizeof(struct fi_ops),
    .close    = fip_mr_close,
    .bind     = fip_nosys_bind,
    .control  = fip_nosys_control,
    .ops_open = fip_nosys_ops_open,
    .tostr    = fip_nosys_tostr,
    .ops_set  = fip_nosys_ops_set
};

static int fip_mr_register(fip_domain_t *domain, const void *buf, size_t len,
                           uint64_t access, uint64_t offset,
                           uint64_t requested_key, uint64_t flags,
                           struct fid_mr **mr_p, void *context)
{
    fip_mr_t *mr;
    int ret;

    if ((mr_p == NULL) || (buf == NULL) || (len == 0) || (flags != 0) ||
        (access & ~FIP_MR_ACCESS)) {
        return -FI_EINVAL;
    }

    mr = calloc(1, sizeof(*mr));
    if (mr == NULL) {
        return -FI_ENOMEM;
    }
    mr->domain = domain;
    mr->addr    = (void*)buf;
    mr->exposed = (void*)buf;
    mr->length  = len;
    mr->access = access;
    /* where peers find the buffer: its address, or the program's offset */
    mr->remote_base = (domain->mr_mode == FIP_MR_MODE_PROV) ?
                      (uint64_t)(uintptr_t)buf : offset;

    if (access & (FI_REMOTE_READ | FI_REMOTE_WRITE)) {
        ret = fip_mr_expose(domain, mr);
        if (ret != 0) {
            goto err_unexpose;
        }
    }

    ret = fip_mr_insert(domain, mr, requested_key);
    if (ret != 0) {
        goto err_unexpose;
    }

    mr->mr_fid.fid.fclass  = FI_CLASS_MR;
    mr->mr_fid.fid.context = context;
    mr->mr_fid.fid.ops     = &fip_mr_fi_ops;
    mr->mr_fid.mem_desc    = mr;
    fip_domain_child_add(domain);
    *mr_p = &mr->mr_fid;
    return 0;

err_unexpose:
    fip_mr_release(mr);
    free(mr);
    return (ret != 0) ? ret : -FI_EOTHER;
}

static fip_domain_t *fip_mr_domain(struct fid *fid)
{
    if ((fid == NULL) || (fid->fclass != FI_CLASS_DOMAIN)) {
        return NULL;
    }
    return fip_container_of(fid, fip_domain_t, domain_fid.fid);
}

static int fip_mr_reg(struct fid *fid, const void *buf, size_t len,
                      uint64_t access, uint64_t offset,
                      uint64_t requested_key, uint64_t flags,
                      struct fid_mr **mr_p, void *context)
{
    fip_domain_t *domain = fip_mr_domain(fid);

    if (domain == NULL) {
        return -FI_EINVAL;
    }
    return fip_mr_register(domain, buf, len, access, offset, requested_key,
                           flags, mr_p, context);
}

static int fip_mr_regv(struct fid *fid, const struct iovec *iov,
                       size_t count, uint64_t access, uint64_t offset,
                       uint64_t requested_key, uint64_t flags,
                       struct fid_mr **mr_p, void *context)
{
    /* one segment per region (mr_iov_limit 1) */
    if ((iov == NULL) || (count != 1)) {
        return -FI_EINVAL;
    }
    return fip_mr_reg(fid, iov[0].iov_base, iov[0].iov_len, access, offset,
                      requested_key, flags, mr_p, context);
}

static int fip_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
                          uint64_t flags, struct fid_mr **mr_p)
{
    if ((attr == NULL) || (attr->iface != FI_HMEM_SYSTEM)) {
        return -FI_EINVAL;
    }
    /* a region's key can only be its domain's job key: admission is per
     * connection, not per region */
    if ((attr->auth_key_size != 0) &&
        ((fip_mr_domain(fid) == NULL) ||
         !fip_admit_key_is(fip_mr_domain(fid), attr->auth_key,
                           attr->auth_key_size))) {
        return -FI_EINVAL;
    }
    return fip_mr_regv(fid, attr->mr_iov, attr->iov_count, attr->access,
                       attr->offset, attr->requested_key, flags, mr_p,
                       attr->context);
}

struct fi_ops_mr fip_mr_ops = {
    .size    = sizeof(struct fi_ops_mr),
    .reg     = fip_mr_reg,
    .regv    = fip_mr_regv,
    .regattr = fip_mr_regattr
};
