/**
 * Queries: fi_query_atomic and the *atomicvalid calls, the per-endpoint cell
 * query, and names as libfabric spells them. No logging here: queries are
 * called in loops.
 */
#include "fiatomic_int.h"

#define FIATOMIC_OP_NAME(_op_enum, _op, _ocls, _fam) [_op_enum] = #_op_enum,
static const char *fiatomic_op_names[FIATOMIC_OP_COUNT] = {
    FIATOMIC_FOREACH_OP(FIATOMIC_OP_NAME)
};
#undef FIATOMIC_OP_NAME

#define FIATOMIC_DT_NAME(_dt, ...) [_dt] = #_dt,
static const char *fiatomic_datatype_names[FIATOMIC_DATATYPE_COUNT] = {
    FIATOMIC_FOREACH_DATATYPE(FIATOMIC_DT_NAME, )
};
#undef FIATOMIC_DT_NAME

static const char *fiatomic_family_names[FIATOMIC_FAMILY_LAST] = {
    [FIATOMIC_FAMILY_BASE]    = "base",
    [FIATOMIC_FAMILY_FETCH]   = "fetch",
    [FIATOMIC_FAMILY_COMPARE] = "compare"
};

FIATOMIC_API const char *fiatomic_op_name(enum fi_op op)
{
    return (((int)op < 0) || ((int)op >= FIATOMIC_OP_COUNT)) ? NULL :
           fiatomic_op_names[op];
}

FIATOMIC_API const char *fiatomic_datatype_name(enum fi_datatype datatype)
{
    return (((int)datatype < 0) || ((int)datatype >= FIATOMIC_DATATYPE_COUNT)) ?
           NULL : fiatomic_datatype_names[datatype];
}

FIATOMIC_API const char *fiatomic_family_name(fiatomic_family_t family)
{
    return (((int)family < 0) || (family >= FIATOMIC_FAMILY_LAST)) ? NULL :
           fiatomic_family_names[family];
}

/*
 * Whether some endpoint of this configuration can execute the cell: the same
 * predicates fiatomic_ep_select() uses, with the endpoint-specific direct
 * path assumed available (as fi_query_atomic answers "for suitably
 * configured endpoints"); fiatomic_query_cell() gives the exact answer.
 */
static bool fiatomic_cell_configured(fiatomic_h fia, fiatomic_family_t family,
                                     int op, int datatype)
{
    bool target = fia->am_enabled &&
                  fiatomic_target_has(family, op, datatype);

    switch (fia->forced) {
    case FIATOMIC_STRATEGY_NATIVE:
        return fiatomic_native_has(family, op, datatype);
    case FIATOMIC_STRATEGY_CAS:
        return fiatomic_cas_has(family, op, datatype);
    case FIATOMIC_STRATEGY_DIRECT:
        return fiatomic_direct_has(family, op, datatype);
    case FIATOMIC_STRATEGY_TARGET:
        return target;
    default:
        /* 16/32-byte elements: target-side, or direct on mapped memory */
        return fiatomic_native_has(family, op, datatype) ||
               fiatomic_cas_has(family, op, datatype) || target ||
               fiatomic_direct_has(family, op, datatype);
    }
}

FIATOMIC_API int fiatomic_query_atomic(fiatomic_h fia,
                                       enum fi_datatype datatype,
                                       enum fi_op op,
                                       struct fi_atomic_attr *attr,
                                       uint64_t flags)
{
    fiatomic_family_t family;

    if ((fia == NULL) || (attr == NULL)) {
        return -FI_EINVAL;
    }
    if (flags & FI_TAGGED) {
        return -FI_EOPNOTSUPP;
    }
    if ((flags & ~(FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC)) ||
        !fiatomic_family_from_flags(flags, &family)) {
        return -FI_EINVAL;
    }
    if (!fiatomic_cell_configured(fia, family, op, datatype)) {
        return -FI_EOPNOTSUPP;
    }

    attr->count = fia->max_count;
    attr->size  = fiatomic_datatype_size(datatype);
    return 0;
}

static int fiatomic_valid(fiatomic_h fia, enum fi_datatype datatype,
                          enum fi_op op, uint64_t flags, size_t *count)
{
    struct fi_atomic_attr attr;
    int ret;

    if (count == NULL) {
        return -FI_EINVAL;
    }

    ret = fiatomic_query_atomic(fia, datatype, op, &attr, flags);
    if (ret == 0) {
        *count = attr.count;
    }
    return ret;
}

FIATOMIC_API int fiatomic_atomicvalid(fiatomic_h fia,
                                      enum fi_datatype datatype,
                                      enum fi_op op, size_t *count)
{
    return fiatomic_valid(fia, datatype, op, 0, count);
}

FIATOMIC_API int fiatomic_fetch_atomicvalid(fiatomic_h fia,
                                            enum fi_datatype datatype,
                                            enum fi_op op, size_t *count)
{
    return fiatomic_valid(fia, datatype, op, FI_FETCH_ATOMIC, count);
}

FIATOMIC_API int fiatomic_compare_atomicvalid(fiatomic_h fia,
                                              enum fi_datatype datatype,
                                              enum fi_op op, size_t *count)
{
    return fiatomic_valid(fia, datatype, op, FI_COMPARE_ATOMIC, count);
}

FIATOMIC_API int fiatomic_query_cell(fiatomic_ep_h ep, uint64_t key,
                                     fiatomic_family_t family,
                                     enum fi_datatype datatype, enum fi_op op,
                                     fiatomic_cell_info_t *info)
{
    fiatomic_rkey_t *rkey;

    if ((ep == NULL) || (info == NULL)) {
        return -FI_EINVAL;
    }

    rkey = fiatomic_ep_key_lookup(ep, key);
    if (rkey == NULL) {
        return -FI_EINVAL;
    }

    info->strategy = fiatomic_ep_select(ep, rkey, family, op, datatype);
    if (info->strategy == FIATOMIC_STRATEGY_NONE) {
        info->needs_target_progress = 0;
        return fiatomic_cell_defined(family, op, datatype) ? 0 :
               -FI_EOPNOTSUPP;
    }

    /* Direct is a local CPU atomic; target-side is executed by the target's
     * CPU; native and CAS go through UCP, which needs the target's CPU when
     * its atomics on this memory are software atomics. */
    switch (info->strategy) {
    case FIATOMIC_STRATEGY_DIRECT:
        info->needs_target_progress = 0;
        break;
    case FIATOMIC_STRATEGY_TARGET:
        info->needs_target_progress = 1;
        break;
    default:
        info->needs_target_progress = rkey->sw_amo;
        break;
    }
    return 0;
}
