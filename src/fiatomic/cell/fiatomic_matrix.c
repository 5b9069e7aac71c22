/**
 * The support matrix, derived from the lists (fiatomic_types.h): a cell is
 * defined when its op belongs to the family and takes the datatype's class.
 * That is 414 cells, each resolved here once into a constant descriptor
 * (fiatomic_cell_t) that every layer receives by pointer; which of them a
 * configuration executes is decided by the selector (fiatomic_select.c).
 */
#include "cell/fiatomic_cell.h"

_Static_assert((int)FIATOMIC_OP_COUNT == (int)FI_ATOMIC_OP_LAST,
               "the op list must cover enum fi_op exactly");
_Static_assert((int)FIATOMIC_DATATYPE_COUNT == (int)FI_UINT128 + 1,
               "the datatype list must cover enum fi_datatype up to FI_UINT128");

/*
 * The UCP atomic that is exactly the op, on 4- and 8-byte elements: integer
 * SUM/BOR/BAND/BXOR/CSWAP, and ATOMIC_WRITE (SWAP) and ATOMIC_READ (fetching
 * ADD of 0) of any type, whose bits UCP does not interpret. Floats never use
 * UCP's CSWAP: it compares bits, fi_atomic compares values.
 */
#define FIATOMIC_UCP_OP_min       -1
#define FIATOMIC_UCP_OP_max       -1
#define FIATOMIC_UCP_OP_sum       UCP_ATOMIC_OP_ADD
#define FIATOMIC_UCP_OP_prod      -1
#define FIATOMIC_UCP_OP_lor       -1
#define FIATOMIC_UCP_OP_land      -1
#define FIATOMIC_UCP_OP_bor       UCP_ATOMIC_OP_OR
#define FIATOMIC_UCP_OP_band      UCP_ATOMIC_OP_AND
#define FIATOMIC_UCP_OP_lxor      -1
#define FIATOMIC_UCP_OP_bxor      UCP_ATOMIC_OP_XOR
#define FIATOMIC_UCP_OP_read      UCP_ATOMIC_OP_ADD
#define FIATOMIC_UCP_OP_write     UCP_ATOMIC_OP_SWAP
#define FIATOMIC_UCP_OP_cswap     UCP_ATOMIC_OP_CSWAP
#define FIATOMIC_UCP_OP_cswap_ne  -1
#define FIATOMIC_UCP_OP_cswap_le  -1
#define FIATOMIC_UCP_OP_cswap_lt  -1
#define FIATOMIC_UCP_OP_cswap_ge  -1
#define FIATOMIC_UCP_OP_cswap_gt  -1
#define FIATOMIC_UCP_OP_mswap     -1
/* ... of any type (bits moved, not interpreted) */
#define FIATOMIC_UCP_ANY_TYPE_min       0
#define FIATOMIC_UCP_ANY_TYPE_max       0
#define FIATOMIC_UCP_ANY_TYPE_sum       0
#define FIATOMIC_UCP_ANY_TYPE_prod      0
#define FIATOMIC_UCP_ANY_TYPE_lor       0
#define FIATOMIC_UCP_ANY_TYPE_land      0
#define FIATOMIC_UCP_ANY_TYPE_bor       0
#define FIATOMIC_UCP_ANY_TYPE_band      0
#define FIATOMIC_UCP_ANY_TYPE_lxor      0
#define FIATOMIC_UCP_ANY_TYPE_bxor      0
#define FIATOMIC_UCP_ANY_TYPE_read      1
#define FIATOMIC_UCP_ANY_TYPE_write     1
#define FIATOMIC_UCP_ANY_TYPE_cswap     0
#define FIATOMIC_UCP_ANY_TYPE_cswap_ne  0
#define FIATOMIC_UCP_ANY_TYPE_cswap_le  0
#define FIATOMIC_UCP_ANY_TYPE_cswap_lt  0
#define FIATOMIC_UCP_ANY_TYPE_cswap_ge  0
#define FIATOMIC_UCP_ANY_TYPE_cswap_gt  0
#define FIATOMIC_UCP_ANY_TYPE_mswap     0
#define FIATOMIC_CELL_UCP_OP(_op, _T, _tcls) \
    ((((sizeof(_T) == 4) || (sizeof(_T) == 8)) && \
      ((FIATOMIC_TCLS_##_tcls == FIATOMIC_TCLS_INT) || \
       FIATOMIC_UCP_ANY_TYPE_##_op)) ? (int)(FIATOMIC_UCP_OP_##_op) : -1)

#define FIATOMIC_CELL_INIT(_family, _op_enum, _op, _dt, _T, _sfx, _tcls) \
    [_family][_op_enum][_dt] = { \
        .combine  = fiatomic_combine_##_op##_##_sfx, \
        FIATOMIC_IF_CPU_CELL_##_sfx(.cpu = fiatomic_cpu_##_op##_##_sfx,) \
        .family   = _family, \
        .op       = _op_enum, \
        .datatype = _dt, \
        .size     = sizeof(_T), \
        .align    = (sizeof(_T) > 16) ? 16 : sizeof(_T), \
        .tcls     = FIATOMIC_TCLS_##_tcls, \
        .ucp_op   = FIATOMIC_CELL_UCP_OP(_op, _T, _tcls), \
        .index    = ((_family) * FIATOMIC_OP_COUNT + (_op_enum)) * \
                    FIATOMIC_DATATYPE_COUNT + (_dt) \
    },

#define FIATOMIC_CELL_OF_DT(_dt, _T, _U, _sfx, _tcls, _op_enum, _op, _ocls, \
                            _fam) \
    FIATOMIC_IF_##_ocls##_##_tcls( \
        FIATOMIC_IF_FAM_##_fam##_BASE(FIATOMIC_CELL_INIT( \
            FIATOMIC_FAMILY_BASE, _op_enum, _op, _dt, _T, _sfx, _tcls)) \
        FIATOMIC_IF_FAM_##_fam##_FETCH(FIATOMIC_CELL_INIT( \
            FIATOMIC_FAMILY_FETCH, _op_enum, _op, _dt, _T, _sfx, _tcls)) \
        FIATOMIC_IF_FAM_##_fam##_COMPARE(FIATOMIC_CELL_INIT( \
            FIATOMIC_FAMILY_COMPARE, _op_enum, _op, _dt, _T, _sfx, _tcls)))
#define FIATOMIC_CELLS_OF_OP(_op_enum, _op, _ocls, _fam) \
    FIATOMIC_FOREACH_DATATYPE(FIATOMIC_CELL_OF_DT, _op_enum, _op, _ocls, _fam)

const fiatomic_cell_t
fiatomic_cells[FIATOMIC_FAMILY_LAST][FIATOMIC_OP_COUNT]
              [FIATOMIC_DATATYPE_COUNT] = {
    FIATOMIC_FOREACH_OP(FIATOMIC_CELLS_OF_OP)
};

#undef FIATOMIC_CELLS_OF_OP
#undef FIATOMIC_CELL_OF_DT
#undef FIATOMIC_CELL_INIT

bool fiatomic_cell_defined(fiatomic_family_t family, int op, int datatype)
{
    return fiatomic_cell_get(family, op, datatype) != NULL;
}

#define FIATOMIC_DT_SIZE(_dt, _T, _U, _sfx, _tcls, ...) [_dt] = sizeof(_T),
static const size_t fiatomic_datatype_sizes[FIATOMIC_DATATYPE_COUNT] = {
    FIATOMIC_FOREACH_DATATYPE(FIATOMIC_DT_SIZE, )
};
#undef FIATOMIC_DT_SIZE

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

size_t fiatomic_datatype_alignment(int datatype)
{
    size_t size = fiatomic_datatype_size(datatype);

    return (size > 16) ? 16 : size;
}
