/**
 * Address vectors (fi_av(3)), FI_AV_TABLE and FI_AV_MAP: a growing array of
 * validated peer addresses (fip_addr.c). In both types the fi_addr_t the
 * program gets is the entry's index: in insertion order from 0 for a table,
 * as fi_av(3) requires, and equally opaque-but-stable for a map. A removed
 * entry's index is never handed out again, so a stale fi_addr_t cannot
 * silently name a newer peer. Inserts are synchronous (no FI_EVENT: an
 * event queue a program binds gets nothing); the number of entries is
 * capped (FIP_AV_MAX). A reverse map (fip_av_reverse) finds the entry of a
 * message's source address: hash chains of the used entries, kept on
 * insert and remove, with no more buckets than entries handed out.
 */
#include "fip.h"

#include <stdlib.h>
#include <string.h>

/* first allocation when the program gives no count */
#define FIP_AV_COUNT_DEFAULT 64
/* the reverse map's first bucket count */
#define FIP_AV_RBUCKETS_MIN  64

static fip_av_t *fip_av_of(struct fid_av *av_fid)
{
    return fip_container_of(av_fid, fip_av_t, av_fid);
}

/* the entry of fi_addr in use, NULL if none; under av->lock */
static fip_av_entry_t *fip_av_entry(fip_av_t *av, fi_addr_t fi_addr)
{
    if ((fi_addr >= av->count) || !av->entries[fi_addr].used) {
        return NULL;
    }
    return &av->entries[fi_addr];
}

int fip_av_get(fip_av_t *av, fi_addr_t fi_addr, fip_addr_t *addr)
{
    fip_av_entry_t *entry;
    int ret = 0;

    if (av == NULL) {
        return -FI_ENOAV;
    }
    pthread_mutex_lock(&av->lock);
    entry = fip_av_entry(av, fi_addr);
    if (entry == NULL) {
        ret = -FI_EINVAL;
    } else {
        *addr = entry->addr;
    }
    pthread_mutex_unlock(&av->lock);
    return ret;
}

/* FNV-1a of a packed address: its bytes are opaque here */
static uint32_t fip_av_hash(const uint8_t *packed)
{
    uint32_t h = 2166136261u;
    size_t i;

    for (i = 0; i < FIP_ADDR_LEN; ++i) {
        h = (h ^ packed[i]) * 16777619u;
    }
    return h;
}

static uint32_t *fip_av_rbucket(fip_av_t *av, const uint8_t *packed)
{
    return &av->rbuckets[fip_av_hash(packed) & (av->rbucket_count - 1)];
}

/* chain a used entry into the reverse map, at its bucket's head (so that a
 * lookup finds the newest of equal addresses); under av->lock */
static void fip_av_rlink(fip_av_t *av, uint32_t index)
{
    uint32_t *bucket = fip_av_rbucket(av, av->entries[index].packed);

    av->entries[index].rnext = *bucket;
    *bucket                  = index;
}

static void fip_av_runlink(fip_av_t *av, uint32_t index)
{
    uint32_t *p = fip_av_rbucket(av, av->entries[index].packed);

    while (*p != FIP_AV_RNIL) {
        if (*p == index) {
            *p = av->entries[index].rnext;
            return;
        }
        p = &av->entries[*p].rnext;
    }
}

/* as many buckets as used entries once they outgrow them (the chains stay
 * short); a failed growth keeps the old buckets. Under av->lock. */
static void fip_av_rgrow(fip_av_t *av)
{
    size_t count = av->rbucket_count * 2;
    uint32_t *buckets;
    size_t i;

    if ((av->used_count <= av->rbucket_count) || (count > FIP_AV_MAX)) {
        return;
    }
    buckets = malloc(count * sizeof(*buckets));
    if (buckets == NULL) {
        return;
    }
    for (i = 0; i < count; ++i) {
        buckets[i] = FIP_AV_RNIL;
    }
    free(av->rbuckets);
    av->rbuckets      = buckets;
    av->rbucket_count = count;
    /* oldest first, so that each chain keeps the newest at its head */
    for (i = 0; i < av->count; ++i) {
        if (av->entries[i].used) {
            fip_av_rlink(av, (uint32_t)i);
        }
    }
}

fi_addr_t fip_av_reverse(fip_av_t *av, const uint8_t *packed)
{
    fi_addr_t found = FI_ADDR_NOTAVAIL;
    uint32_t index;

    if (av == NULL) {
        return FI_ADDR_NOTAVAIL;
    }
    pthread_mutex_lock(&av->lock);
    for (index = *fip_av_rbucket(av, packed); index != FIP_AV_RNIL;
         index = av->entries[index].rnext) {
        if (memcmp(av->entries[index].packed, packed, FIP_ADDR_LEN) == 0) {
            found = index;
            break;
        }
    }
    pthread_mutex_unlock(&av->lock);
    return found;
}

/* room for one more entry; under av->lock */
static int fip_av_reserve(fip_av_t *av)
{
    fip_av_entry_t *entries;
    size_t capacity;

    if (av->count < av->capacity) {
        return 0;
    }
    if (av->count >= FIP_AV_MAX) {
        return -FI_ENOSPC;
    }
    capacity = av->capacity * 2;
    if (capacity > FIP_AV_MAX) {
        capacity = FIP_AV_MAX;
    }
    entries = realloc(av->entries, capacity * sizeof(*entries));
    if (entries == NULL) {
        return -FI_ENOMEM;
    }
    av->entries  = entries;
    av->capacity = capacity;
    return 0;
}

static int fip_av_insert(struct fid_av *av_fid, const void *addr,
                         size_t count, fi_addr_t *fi_addr, uint64_t flags,
                         void *context)
{
    fip_av_t *av   = fip_av_of(av_fid);
    int *errors    = (flags & FI_SYNC_ERR) ? context : NULL;
    int inserted   = 0;
    fip_addr_t decoded;
    size_t i;
    int ret;

    if ((flags & ~(uint64_t)FI_SYNC_ERR) != 0) {
        return -FI_EBADFLAGS;
    }
    if ((count > 0) && (addr == NULL)) {
        return -FI_EINVAL;
    }
    /* a map's addresses exist only in fi_addr; a table's are implied */
    if ((av->type == FI_AV_MAP) && (count > 0) && (fi_addr == NULL)) {
        return -FI_EINVAL;
    }
    if ((errors == NULL) && (flags & FI_SYNC_ERR) && (count > 0)) {
        return -FI_EINVAL;
    }

    pthread_mutex_lock(&av->lock);
    for (i = 0; i < count; ++i) {
        const uint8_t *bytes = (const uint8_t*)addr + i * FIP_ADDR_LEN;

        ret = fip_addr_unpack(bytes, FIP_ADDR_LEN, &decoded);
        if (ret == 0) {
            ret = fip_av_reserve(av);
        }
        if (ret == 0) {
            av->entries[av->count].used = 1;
            av->entries[av->count].addr = decoded;
            /* repacked: the form a message's source comes in */
            fip_addr_pack(&decoded, av->entries[av->count].packed);
            fip_av_rlink(av, (uint32_t)av->count);
            if (fi_addr != NULL) {
                fi_addr[i] = av->count;
            }
            ++av->count;
            ++av->used_count;
            ++inserted;
            fip_av_rgrow(av);
        } else if (fi_addr != NULL) {
            fi_addr[i] = FI_ADDR_NOTAVAIL;
        }
        if (errors != NULL) {
            errors[i] = ret;
        }
    }
    pthread_mutex_unlock(&av->lock);
    return inserted;
}

static int fip_av_insertsvc(struct fid_av *av, const char *node,
                            const char *service, fi_addr_t *fi_addr,
                            uint64_t flags, void *context)
{
    return -FI_ENOSYS;
}

static int fip_av_insertsym(struct fid_av *av, const char *node,
                            size_t nodecnt, const char *service,
                            size_t svccnt, fi_addr_t *fi_addr,
                            uint64_t flags, void *context)
{
    return -FI_ENOSYS;
}

/* all or nothing: an unknown address fails the call before any removal */
static int fip_av_remove(struct fid_av *av_fid, fi_addr_t *fi_addr,
                         size_t count, uint64_t flags)
{
    fip_av_t *av = fip_av_of(av_fid);
    int ret      = 0;
    size_t i, j;

    if (flags != 0) {
        return -FI_EBADFLAGS;
    }
    if ((count > 0) && (fi_addr == NULL)) {
        return -FI_EINVAL;
    }
    pthread_mutex_lock(&av->lock);
    for (i = 0; (i < count) && (ret == 0); ++i) {
        if (fip_av_entry(av, fi_addr[i]) == NULL) {
            ret = -FI_EINVAL;
        }
        /* the same address twice in one call is one bad request */
        for (j = 0; (j < i) && (ret == 0); ++j) {
            if (fi_addr[j] == fi_addr[i]) {
                ret = -FI_EINVAL;
            }
        }
    }
    for (i = 0; (i < count) && (ret == 0); ++i) {
        fip_av_runlink(av, (uint32_t)fi_addr[i]);
        av->entries[fi_addr[i]].used = 0;
        --av->used_count;
    }
    pthread_mutex_unlock(&av->lock);
    return ret;
}

static int fip_av_lookup(struct fid_av *av_fid, fi_addr_t fi_addr,
                         void *addr, size_t *addrlen)
{
    fip_av_t *av = fip_av_of(av_fid);
    uint8_t packed[FIP_ADDR_LEN];
    fip_av_entry_t *entry;

    if (addrlen == NULL) {
        return -FI_EINVAL;
    }
    pthread_mutex_lock(&av->lock);
    entry = fip_av_entry(av, fi_addr);
    if (entry != NULL) {
        fip_addr_pack(&entry->addr, packed);
    }
    pthread_mutex_unlock(&av->lock);
    if (entry == NULL) {
        return -FI_EINVAL;
    }

    /* as much as fits; *addrlen then tells the whole length */
    if (addr != NULL) {
        memcpy(addr, packed,
               (*addrlen < FIP_ADDR_LEN) ? *addrlen : FIP_ADDR_LEN);
    }
    *addrlen = FIP_ADDR_LEN;
    return 0;
}

static const char *fip_av_straddr(struct fid_av *av_fid, const void *addr,
                                  char *buf, size_t *len)
{
    fip_addr_t decoded;
    char str[FIP_ADDR_STRLEN];
    size_t need;

    if ((buf == NULL) || (len == NULL)) {
        return NULL;
    }
    if (fip_addr_unpack(addr, FIP_ADDR_LEN, &decoded) != 0) {
        need = strlen("fiatomic://invalid") + 1;
        memcpy(str, "fiatomic://invalid", need);
    } else {
        need = fip_addr_str(&decoded, str, sizeof(str));
    }
    /* truncated to the buffer, NUL-terminated; *len the length needed */
    if (*len > 0) {
        size_t n = (need < *len) ? need : *len;

        memcpy(buf, str, n);
        buf[n - 1] = '\0';
    }
    *len = need;
    return buf;
}

static int fip_av_close(struct fid *fid)
{
    fip_av_t *av = fip_container_of(fid, fip_av_t, av_fid.fid);
    int bound;

    pthread_mutex_lock(&av->lock);
    bound = av->bound;
    pthread_mutex_unlock(&av->lock);
    if (bound != 0) {
        return -FI_EBUSY;
    }
    if (av->eq != NULL) {
        fip_eq_unbind(av->eq);
    }
    fip_domain_child_remove(av->domain);
    pthread_mutex_destroy(&av->lock);
    free(av->rbuckets);
    free(av->entries);
    free(av);
    return 0;
}

/* fi_av_bind: one event queue, which gets no events, as the provider offers
 * no FI_EVENT and inserts complete before they return */
static int fip_av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    fip_av_t *av = fip_container_of(fid, fip_av_t, av_fid.fid);
    fip_eq_t *eq;
    int ret;

    if ((bfid == NULL) || (bfid->fclass != FI_CLASS_EQ)) {
        return -FI_EINVAL;
    }
    eq = fip_container_of(bfid, fip_eq_t, eq_fid.fid);
    pthread_mutex_lock(&av->lock);
    if (av->eq != NULL) {
        ret = -FI_EINVAL;
    } else {
        ret = fip_eq_bind(eq, av->domain->fabric, flags);
        if (ret == 0) {
            av->eq = eq;
        }
    }
    pthread_mutex_unlock(&av->lock);
    return ret;
}

static struct fi_ops fip_av_fi_ops = {
    .size     = sizeof(struct fi_ops),
    .close    = fip_av_close,
    .bind     = fip_av_bind,
    .control  = fip_nosys_control,
    .ops_open = fip_nosys_ops_open,
    .tostr    = fip_nosys_tostr,
    .ops_set  = fip_nosys_ops_set
};

static struct fi_ops_av fip_av_ops = {
    .size      = sizeof(struct fi_ops_av),
    .insert    = fip_av_insert,
    .insertsvc = fip_av_insertsvc,
    .insertsym = fip_av_insertsym,
    .remove    = fip_av_remove,
    .lookup    = fip_av_lookup,
    .straddr   = fip_av_straddr
};

int fip_av_open(struct fid_domain *domain_fid, struct fi_av_attr *attr,
                struct fid_av **av_p, void *context)
{
    fip_domain_t *domain = fip_container_of(domain_fid, fip_domain_t,
                                            domain_fid);
    size_t capacity      = FIP_AV_COUNT_DEFAULT;
    enum fi_av_type type;
    fip_av_t *av;
    size_t i;

    if ((attr == NULL) || (av_p == NULL)) {
        return -FI_EINVAL;
    }
    switch (attr->type) {
    case FI_AV_UNSPEC:
        /* the provider's choice, told back to the program */
        attr->type = FI_AV_TABLE;
        type       = FI_AV_TABLE;
        break;
    case FI_AV_TABLE:
        type = FI_AV_TABLE;
        break;
    case FI_AV_MAP:
        type = FI_AV_MAP;
        break;
    default:
        return -FI_EINVAL;
    }
    /* no scalable endpoints (rx_ctx_bits), no shared named AVs, no event
     * queue (FI_EVENT); FI_SYMMETRIC is a hint the provider may ignore */
    if (attr->rx_ctx_bits != 0) {
        return -FI_EINVAL;
    }
    if ((attr->name != NULL) || (attr->flags & ~(uint64_t)FI_SYMMETRIC)) {
        return -FI_ENOSYS;
    }
    if (attr->count > 0) {
        capacity = (attr->count < FIP_AV_MAX) ? attr->count : FIP_AV_MAX;
    }

    av = calloc(1, sizeof(*av));
    if (av == NULL) {
        return -FI_ENOMEM;
    }
    av->entries  = calloc(capacity, sizeof(*av->entries));
    av->rbuckets = malloc(FIP_AV_RBUCKETS_MIN * sizeof(*av->rbuckets));
    if ((av->entries == NULL) || (av->rbuckets == NULL)) {
        free(av->rbuckets);
        free(av->entries);
        free(av);
        return -FI_ENOMEM;
    }
    for (i = 0; i < FIP_AV_RBUCKETS_MIN; ++i) {
        av->rbuckets[i] = FIP_AV_RNIL;
    }
    av->rbucket_count     = FIP_AV_RBUCKETS_MIN;
    pthread_mutex_init(&av->lock, NULL);
    av->domain            = domain;
    av->type              = type;
    av->capacity          = capacity;
    av->av_fid.fid.fclass = FI_CLASS_AV;
    av->av_fid.fid.context = context;
    av->av_fid.fid.ops    = &fip_av_fi_ops;
    av->av_fid.ops        = &fip_av_ops;
    fip_domain_child_add(domain);
    *av_p = &av->av_fid;
    return 0;
}
