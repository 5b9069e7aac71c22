/**
 * The names, in one table each: ops and datatypes as libfabric spells them,
 * families and strategies as fiatomic(3) and the FIATOMIC_STRATEGY setting
 * do. No logging here: names are asked for in loops.
 */
#include "base/fiatomic_int.h"

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

static const char *fiatomic_strategy_names[] = {
    [FIATOMIC_STRATEGY_NONE]   = "none",
    [FIATOMIC_STRATEGY_NATIVE] = "native",
    [FIATOMIC_STRATEGY_CAS]    = "cas",
    [FIATOMIC_STRATEGY_DIRECT] = "direct",
    [FIATOMIC_STRATEGY_TARGET] = "target"
};

FIATOMIC_API const char *fiatomic_strategy_name(fiatomic_strategy_t strategy)
{
    if ((strategy < 0) || (strategy >= FIATOMIC_STRATEGY_LAST)) {
        return NULL;
    }

    return fiatomic_strategy_names[strategy];
}
