/**
 * The arithmetic of every (op, datatype) cell, generated from the two lists
 * in fiatomic_types.h: one tiny pure function per cell that turns the
 * target's current value into the value to store. The strategies own the
 * loops and the atomicity; this file owns only the semantics of fi_atomic(3),
 * written as in the man page (compare on the left for CSWAP_*).
 */
#include "cell/fiatomic_cell.h"

#include "cell/fiatomic_combine_expr.h"

#define FIATOMIC_DEF_COMBINE(_dt, _T, _U, _sfx, _tcls, _op, _ocls) \
    FIATOMIC_IF_##_ocls##_##_tcls( \
    void fiatomic_combine_##_op##_##_sfx(void *value, const void *operand, \
                                         const void *compare) \
    { \
        FIATOMIC_COMBINE_BODY(_T, _U, _tcls, _op, value, operand, compare); \
    })

#define FIATOMIC_DEF_COMBINE_ROW(_op_enum, _op, _ocls, _fam) \
    FIATOMIC_FOREACH_DATATYPE(FIATOMIC_DEF_COMBINE_CELL, _op, _ocls)
#define FIATOMIC_DEF_COMBINE_CELL(_dt, _T, _U, _sfx, _tcls, _op, _ocls) \
    FIATOMIC_DEF_COMBINE(_dt, _T, _U, _sfx, _tcls, _op, _ocls)

FIATOMIC_FOREACH_OP(FIATOMIC_DEF_COMBINE_ROW)

#undef FIATOMIC_DEF_COMBINE_ROW
#undef FIATOMIC_DEF_COMBINE_CELL
