/**
 * The provider as libfabric's core loads it: fi_prov_ini() (the one
 * exported symbol of libfiatomic-fi.so) returns the provider's name, the
 * API it serves and its entry points.
 */
#include "fip.h"

static void fip_cleanup(void)
{
    /* nothing global: every resource belongs to a fabric or a domain */
}

struct fi_provider fip_provider = {
    .version    = FIP_PROV_VERSION,
    .fi_version = FIP_FI_VERSION,
    .name       = FIP_PROV_NAME,
    .getinfo    = fip_getinfo,
    .fabric     = fip_fabric_open,
    .cleanup    = fip_cleanup
};

FI_EXT_INI
{
    fip_params_define();
    return &fip_provider;
}
