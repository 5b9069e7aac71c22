/**
 * Per-slot buffers of the timed loops: slot k of the window has its own
 * operands, compare values and results locally and its own elements at the
 * target, each on separate cache lines. Everything is allocated before the
 * loop starts: nothing is allocated per call.
 */
#include "perftest.h"
#include "fiatomic_ref.h"

#include <stdlib.h>
#include <string.h>

size_t perf_slot_stride(const perf_params_t *p)
{
    size_t bytes = p->count * fiatomic_ref_datatype_size(p->cell.datatype);

    return (bytes + PERF_SLOT_ALIGN - 1) & ~(size_t)(PERF_SLOT_ALIGN - 1);
}

int perf_slots_init(perf_slots_t *sl, const perf_params_t *p)
{
    size_t size = fiatomic_ref_datatype_size(p->cell.datatype);
    size_t total, k, i;

    sl->stride = perf_slot_stride(p);
    total      = sl->stride * p->window;
    if ((size == 0) || (total > PERF_REGION_SIZE / 2)) {
        fprintf(stderr, PERF_NAME ": window x count too large\n");
        return -1;
    }

    /* one block, so that one memory registration covers every buffer */
    sl->operand = aligned_alloc(PERF_SLOT_ALIGN, 3 * total);
    if (sl->operand == NULL) {
        return -1;
    }
    sl->compare = sl->operand + total;
    sl->result  = sl->operand + 2 * total;

    memset(sl->result, 0, total);
    for (k = 0; k < p->window; ++k) {
        for (i = 0; i < p->count; ++i) {
            perf_bench_operand(&p->cell,
                               sl->operand + k * sl->stride + i * size,
                               sl->compare + k * sl->stride + i * size);
        }
    }
    return 0;
}

void perf_slots_cleanup(perf_slots_t *sl)
{
    free(sl->operand);
    sl->operand = sl->compare = sl->result = NULL;
}
