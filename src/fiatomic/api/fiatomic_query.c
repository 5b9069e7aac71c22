/**
 * Queries: fi_query_atomic and the *atomicvalid calls, the per-endpoint cell
 * query (the names: base/fiatomic_names.c). No logging here: queries are
 * called in loops.
 */
#include "core/fiatomic_strategy.h"

FIATOMIC_API int fiatomic_query_atomic(fiatomic_h fia,
                                       enum fi_datatype datatype,
                                       enum fi_op op,
                                       struct fi_atomic_attr *attr,
                                       uint64_t flags)
{
    const fiatomic_cell_t *cell;
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
    /* Supported when every endpoint and key of this context executes the
     * cell (the selector, as the call asks it); fiatomic_query_cell()
     * answers for one endpoint and key (the direct strategy, for one, is a
     * property of the key's memory). */
    cell = fiatomic_cell_get(family, op, datatype);
    if ((cell == NULL) || !fiatomic_select_configured(fia, cell)) {
        return -FI_EOPNOTSUPP;
    }

    attr->count = fia->max_count;
    attr->size  = cell->size;
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

static int fiatomic_query_cell_locked(fiatomic_ep_h ep, uint64_t key,
                                      fiatomic_family_t family,
                                      enum fi_datatype datatype,
                                      enum fi_op op,
                                      fiatomic_cell_info_t *info)
{
    const fiatomic_strategy_ops_t *ops;
    const fiatomic_cell_t *cell;
    fiatomic_rkey_t *rkey;

    rkey = fiatomic_ep_key_lookup(ep, key);
    if (rkey == NULL) {
        return -FI_EINVAL;
    }

    cell = fiatomic_cell_get(family, op, datatype);
    if (cell == NULL) {
        info->strategy              = FIATOMIC_STRATEGY_NONE;
        info->needs_target_progress = 0;
        return -FI_EOPNOTSUPP;
    }

    /* the very decision a call with one element takes */
    info->strategy = fiatomic_select_cached(ep, rkey, cell);
    ops            = fiatomic_strategy_ops(info->strategy);
    info->needs_target_progress = (ops != NULL) &&
                                  ops->needs_target_progress(rkey);
    return 0;
}

FIATOMIC_API int fiatomic_query_cell(fiatomic_ep_h ep, uint64_t key,
                                     fiatomic_family_t family,
                                     enum fi_datatype datatype, enum fi_op op,
                                     fiatomic_cell_info_t *info)
{
    bool locked;
    int ret;

    if ((ep == NULL) || (info == NULL)) {
        return -FI_EINVAL;
    }

    locked = fiatomic_enter(ep->fia); /* the key's strategy cache */
    ret    = fiatomic_query_cell_locked(ep, key, family, datatype, op, info);
    fiatomic_leave(ep->fia, locked);
    return ret;
}
