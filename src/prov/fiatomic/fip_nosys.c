/**
 * What the provider does not implement answers -FI_ENOSYS, as fi_*(3) say
 * for an optional call a provider lacks; every operations table points
 * here instead of leaving a slot NULL (the core's inline calls would jump
 * through it). The queues' strerror, which has no table of texts to look
 * in, is here too: one answer for every provider error number.
 */
#include "fip.h"

#include <stdio.h>

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

const char *fip_prov_strerror(int prov_errno, char *buf, size_t len)
{
    static const char *unknown = "fiatomic: unknown provider error";

    if ((buf == NULL) || (len == 0)) {
        return unknown;
    }
    snprintf(buf, len, "fiatomic: provider error %d", prov_errno);
    return buf;
}
