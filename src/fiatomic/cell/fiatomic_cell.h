/**
 * The cells of fi_atomic(3): one constant fiatomic_cell_t per (family, op,
 * datatype) (fiatomic_matrix.c), its combine function (fiatomic_combine.c)
 * and its CPU executor (fiatomic_cpu_cell.c).
 */
#ifndef FIATOMIC_CELL_H_
#define FIATOMIC_CELL_H_

#include "base/fiatomic_int.h"

/* ------------------------------------------------------------------------ */
/* Combine functions (fiatomic_combine.c)                                    */

/**
 * Apply op to one element: *value holds the target's current value on entry
 * and the value to store on exit. operand/compare may be NULL when the op
 * does not use them. Pure: no memory other than *value is touched.
 */
typedef void (*fiatomic_combine_fn_t)(void *value, const void *operand,
                                      const void *compare);

#define FIATOMIC_DECL_COMBINE_CELL(_dt, _T, _U, _sfx, _tcls, _op, _ocls) \
    FIATOMIC_IF_##_ocls##_##_tcls( \
        void fiatomic_combine_##_op##_##_sfx(void *value, \
                                             const void *operand, \
                                             const void *compare);)
#define FIATOMIC_DECL_COMBINE_ROW(_op_enum, _op, _ocls, _fam) \
    FIATOMIC_FOREACH_DATATYPE(FIATOMIC_DECL_COMBINE_CELL, _op, _ocls)
FIATOMIC_FOREACH_OP(FIATOMIC_DECL_COMBINE_ROW)
#undef FIATOMIC_DECL_COMBINE_ROW
#undef FIATOMIC_DECL_COMBINE_CELL

/* ------------------------------------------------------------------------ */
/* CPU executors of cells (fiatomic_cpu_cell.c)                              */

/**
 * Execute the cell's op on the element at ptr with CPU atomics; its old
 * value goes to *old (element size bytes, naturally aligned). operand and
 * compare are NULL when the op does not use them.
 */
typedef void (*fiatomic_cpu_fn_t)(void *ptr, const void *operand,
                                  const void *compare, void *old);

/* Element sizes with a CPU executor: all but 32 bytes (long double
 * complex, executed under a lock: fiatomic_cpu.c). Expands its argument or
 * not, by a datatype's short name. */
#define FIATOMIC_IF_CPU_CELL_i8(...)   __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_u8(...)   __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_i16(...)  __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_u16(...)  __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_i32(...)  __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_u32(...)  __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_i64(...)  __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_u64(...)  __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_f32(...)  __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_f64(...)  __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_c32(...)  __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_c64(...)  __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_f80(...)  __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_c80(...)
#define FIATOMIC_IF_CPU_CELL_i128(...) __VA_ARGS__
#define FIATOMIC_IF_CPU_CELL_u128(...) __VA_ARGS__

#define FIATOMIC_DECL_CPU_CELL(_dt, _T, _U, _sfx, _tcls, _op, _ocls) \
    FIATOMIC_IF_##_ocls##_##_tcls(FIATOMIC_IF_CPU_CELL_##_sfx( \
        void fiatomic_cpu_##_op##_##_sfx(void *ptr, const void *operand, \
                                         const void *compare, void *old);))
#define FIATOMIC_DECL_CPU_CELL_ROW(_op_enum, _op, _ocls, _fam) \
    FIATOMIC_FOREACH_DATATYPE(FIATOMIC_DECL_CPU_CELL, _op, _ocls)
FIATOMIC_FOREACH_OP(FIATOMIC_DECL_CPU_CELL_ROW)
#undef FIATOMIC_DECL_CPU_CELL_ROW
#undef FIATOMIC_DECL_CPU_CELL

/* ------------------------------------------------------------------------ */
/* Cells (fiatomic_matrix.c)                                                 */

/**
 * One (family, op, datatype) cell, resolved once from the lists: what every
 * layer needs to know about it. Constant; passed by pointer.
 */
struct fiatomic_cell {
    fiatomic_combine_fn_t combine;  /* NULL: not a cell of fi_atomic(3) */
    fiatomic_cpu_fn_t     cpu;      /* CPU executor; NULL for 32 bytes */
    uint8_t               family;   /* fiatomic_family_t */
    uint8_t               op;       /* enum fi_op */
    uint8_t               datatype; /* enum fi_datatype */
    uint8_t               size;     /* element bytes */
    uint8_t               align;    /* natural alignment: size, 16 at most */
    uint8_t               tcls;     /* FIATOMIC_TCLS_* */
    int8_t                ucp_op;   /* ucp_atomic_op_t that is exactly the
                                       op on this type, or -1 */
    uint16_t              index;    /* in fiatomic_cells, flattened */
};

/* Hidden: the post path reaches it relative to its own code, not through
 * the GOT (the library is built with -fvisibility=hidden, but that does not
 * cover a declaration). */
extern const fiatomic_cell_t
fiatomic_cells[FIATOMIC_FAMILY_LAST][FIATOMIC_OP_COUNT]
              [FIATOMIC_DATATYPE_COUNT] __attribute__((visibility("hidden")));

/** The table entry of (family, op, datatype), a hole of the matrix
 *  included, or NULL when a value is out of range. */
static inline const fiatomic_cell_t *
fiatomic_cell_entry(int family, int op, int datatype)
{
    if (((unsigned)family >= FIATOMIC_FAMILY_LAST) ||
        ((unsigned)op >= FIATOMIC_OP_COUNT) ||
        ((unsigned)datatype >= FIATOMIC_DATATYPE_COUNT)) {
        return NULL;
    }
    return &fiatomic_cells[family][op][datatype];
}

/** The cell, or NULL when (family, op, datatype) is not one (out-of-range
 *  values included). */
static inline const fiatomic_cell_t *
fiatomic_cell_get(int family, int op, int datatype)
{
    const fiatomic_cell_t *cell = fiatomic_cell_entry(family, op, datatype);

    return ((cell != NULL) && (cell->combine != NULL)) ? cell : NULL;
}

/** The library supports (family, op, datatype) at all (any configuration):
 *  false for out-of-range enum values too. */
bool fiatomic_cell_defined(fiatomic_family_t family, int op, int datatype);
/** Element size of a datatype, 0 if out of range. */
size_t fiatomic_datatype_size(int datatype);
/** Natural alignment of an element: its size, 16 for 32-byte elements. */
size_t fiatomic_datatype_alignment(int datatype);
/** The query flag word (0/FI_FETCH_ATOMIC/FI_COMPARE_ATOMIC) -> family;
 *  false for invalid combinations. */
bool fiatomic_family_from_flags(uint64_t flags, fiatomic_family_t *family_p);

#endif
