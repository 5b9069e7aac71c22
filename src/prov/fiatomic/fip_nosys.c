/**
 * What the provider does not implement answers -FI_ENOSYS, as fi_*(3) say
 * for an optional call a provider lacks; every operations table points
 * here instead of leaving a slot NULL (the core's inline calls would jump
 * through it).
 */
#include "fip.h"

int fip_nosys_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    return -FI_ENOSYS;
}

int fip_nosys_control(struct fid *fid, int command, void *arg)
{
    return -FI_ENOSYS;
}

int fip_nosys_ops_open(struct fid *fid, const char *name, uint64_t flags,
                       void **ops, void *context)
{
    return -FI_ENOSYS;
}

int fip_nosys_tostr(const struct fid *fid, char *buf, size_t len)
{
    return -FI_ENOSYS;
}

int fip_nosys_ops_set(struct fid *fid, const char *name, uint64_t flags,
                      void *ops, void *context)
{
    return -FI_ENOSYS;
}
