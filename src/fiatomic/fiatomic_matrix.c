/**
 * The support matrix, derived from the lists (fiatomic_types.h): a cell is
 * defined when its op belongs to the family and takes the datatype's class.
 * That is 414 cells; which of them a configuration executes is decided by
 * the strategies (fiatomic_ep_select).
 */
#include "fiatomic_int.h"

_Static_assert((int)FIATOMIC_OP_COUNT == (int)FI_ATOMIC_OP_LAST,
               "the op list must cover enum fi_op exactly");
_Static_assert((int)FIATOMIC_DATATYPE_COUNT == (int)FI_UINT128 + 1,
               "the datatype list must cover enum fi_datatype up to FI_UINT128");

#define FIATOMIC_OP_FAMILIES(_op_enum, _op, _ocls, _fam) \
    [_op_enum] = FIATOMIC_FAM_##_fam,
static const unsigned fiatomic_op_families[FIATOMIC_OP_COUNT] = {
    FIATOMIC_FOREACH_OP(FIATOMIC_OP_FAMILIES)
};
#undef FIATOMIC_OP_FAMILIES

#define FIATOMIC_DT_SIZE(_dt, _T, _U, _sfx, _tcls, ...) [_dt] = sizeof(_T),
static const size_t fiatomic_datatype_sizes[FIATOMIC_DATATYPE_COUNT] = {
    FIATOMIC_FOREACH_DATATYPE(FIATOMIC_DT_SIZE, )
};
#undef FIATOMIC_DT_SIZE

bool fiatomic_cell_defined(fiatomic_family_t family, int op, int datatype)
{
    if ((family < 0) || (family >= FIATOMIC_FAMILY_LAST) || (op < 0) ||
        (op >= FIATOMIC_OP_COUNT) || (datatype < 0) ||
        (datatype >= FIATOMIC_DATATYPE_COUNT)) {
        return false;
    }

    return (fiatomic_op_families[op] & UCS_BIT(family)) &&
           (fiatomic_combine_lookup(op, datatype) != NULL);
}

size_t fiatomic_datatype_size(int datatype)
{
    if ((datatype < 0) || (datatype >= FIATOMIC_DATATYPE_COUNT)) {
        return 0;
    }

    return fiatomic_datatype_sizes[datatype];
}

bool fiatomic_family_from_flags(uint64_t flags, fiatomic_family_t *family_p)
{
    switch (flags & (FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC)) {
    case 0:
        *family_p = FIATOMIC_FAMILY_BASE;
        return true;
    case FI_FETCH_ATOMIC:
        *family_p = FIATOMIC_FAMILY_FETCH;
        return true;
    case FI_COMPARE_ATOMIC:
        *family_p = FIATOMIC_FAMILY_COMPARE;
        return true;
    default:
        return false; /* both bits: fi_atomic(3) forbids it */
    }
}

#define FIATOMIC_DT_CLASS(_dt, _T, _U, _sfx, _tcls, ...) \
    [_dt] = FIATOMIC_TCLS_##_tcls,
static const unsigned fiatomic_datatype_classes[FIATOMIC_DATATYPE_COUNT] = {
    FIATOMIC_FOREACH_DATATYPE(FIATOMIC_DT_CLASS, )
};
#undef FIATOMIC_DT_CLASS

unsigned fiatomic_datatype_class(int datatype)
{
    if ((datatype < 0) || (datatype >= FIATOMIC_DATATYPE_COUNT)) {
        return 0;
    }

    return fiatomic_datatype_classes[datatype];
}

size_t fiatomic_datatype_alignment(int datatype)
{
    size_t size = fiatomic_datatype_size(datatype);

    return (size > 16) ? 16 : size;
}
