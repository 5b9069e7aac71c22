/**
 * Verification of one cell between two processes: the target's memory is
 * set and read back by the target's CPU over the control channel, the call
 * goes through libfiatomic, and the outcome (every target element, every
 * fetched value, the untouched neighbours) is compared with the independent
 * reference model src/ref/fiatomic_ref.
 */
#include "perftest.h"
#include "fiatomic_ref.h"

#include <stdlib.h>
#include <string.h>

#define PERF_VERIFY_ROUNDS 4
/* Where in the target region verification works (away from the slots the
 * timed loops use, which start at 0). */
#define PERF_VERIFY_OFFSET (PERF_REGION_SIZE / 2)

typedef struct {
    uint8_t *init;     /* target before: guard, count elements, guard */
    uint8_t *expected; /* target after, by the reference */
    uint8_t *actual;   /* target after, read back */
    uint8_t *operand;
    uint8_t *compare;
    uint8_t *fetched;  /* fetched values, by the reference */
    uint8_t *result;   /* fetched values, from the library */
} perf_verify_bufs_t;

static int perf_verify_alloc(perf_verify_bufs_t *b, size_t count, size_t size)
{
    size_t span = (count + 2) * size;

    b->init     = malloc(span);
    b->expected = malloc(span);
    b->actual   = malloc(span);
    /* 16-byte aligned: the library checks natural alignment */
    b->operand  = aligned_alloc(32, (count * size + 31) & ~(size_t)31);
    b->compare  = aligned_alloc(32, (count * size + 31) & ~(size_t)31);
    b->fetched  = malloc(count * size);
    b->result   = aligned_alloc(32, (count * size + 31) & ~(size_t)31);
    return (b->init && b->expected && b->actual && b->operand &&
            b->compare && b->fetched && b->result) ? 0 : -1;
}

static void perf_verify_free(perf_verify_bufs_t *b)
{
    free(b->init);
    free(b->expected);
    free(b->actual);
    free(b->operand);
    free(b->compare);
    free(b->fetched);
    free(b->result);
}

/* Round r: element i starts from value seed r*5+i, the operand is another
 * seed, and every other compare value equals the target so that both
 * outcomes of each predicate occur. */
static void perf_verify_fill(perf_verify_bufs_t *b, int datatype,
                             size_t count, size_t size, unsigned r)
{
    size_t i;

    perf_value(datatype, 11 + r, b->init);
    perf_value(datatype, 12 + r, b->init + (count + 1) * size);
    for (i = 0; i < count; ++i) {
        perf_value(datatype, r * 5 + i, b->init + (i + 1) * size);
        perf_value(datatype, r * 3 + 2 * i + 1, b->operand + i * size);
        if (i % 2) {
            perf_value(datatype, r + 7 * i + 2, b->compare + i * size);
        } else {
            memcpy(b->compare + i * size, b->init + (i + 1) * size, size);
        }
    }
    memset(b->result, 0xa5, count * size); /* poison */
}

static ucs_status_t perf_verify_call(perf_session_t *s,
                                     const perf_cell_t *cell,
                                     perf_verify_bufs_t *b, size_t count,
                                     uint64_t raddr)
{
    const void *operand = (cell->op == FI_ATOMIC_READ) ? NULL : b->operand;
    ucs_status_ptr_t sptr;
    ucs_status_t status;

    switch (cell->family) {
    case FIATOMIC_FAMILY_BASE:
        sptr = fiatomic_atomic_nbx(s->ep, operand, count, raddr, s->key,
                                   cell->datatype, cell->op, NULL);
        break;
    case FIATOMIC_FAMILY_FETCH:
        sptr = fiatomic_fetch_atomic_nbx(s->ep, operand, count, b->result,
                                         raddr, s->key, cell->datatype,
                                         cell->op, NULL);
        break;
    default:
        sptr = fiatomic_compare_atomic_nbx(s->ep, operand, count, b->compare,
                                           b->result, raddr, s->key,
                                           cell->datatype, cell->op, NULL);
        break;
    }

    status = perf_session_wait(s, sptr);
    if ((status == UCS_OK) && (cell->family == FIATOMIC_FAMILY_BASE)) {
        /* base completion is local: the update is visible after a flush */
        status = perf_session_flush(s);
    }
    return status;
}

static int perf_verify_compare(const perf_cell_t *cell,
                               const perf_verify_bufs_t *b, size_t count,
                               size_t size, unsigned r, char *msg,
                               size_t max)
{
    char e[96], a[96], t[96];
    size_t i;

    if (memcmp(b->actual, b->init, size) ||
        memcmp(b->actual + (count + 1) * size,
               b->init + (count + 1) * size, size)) {
        snprintf(msg, max, "round %u: a neighbouring element changed", r);
        return -1;
    }

    for (i = 0; i < count; ++i) {
        const uint8_t *exp_i = b->expected + (i + 1) * size;
        const uint8_t *act_i = b->actual + (i + 1) * size;

        fiatomic_ref_format(cell->datatype, b->init + (i + 1) * size, t,
                            sizeof(t));
        if (!fiatomic_ref_result_equal(cell->op, cell->datatype, exp_i,
                                       act_i)) {
            fiatomic_ref_format(cell->datatype, exp_i, e, sizeof(e));
            fiatomic_ref_format(cell->datatype, act_i, a, sizeof(a));
            snprintf(msg, max, "round %u elem %zu: target %s became %s, "
                     "expected %s", r, i, t, a, e);
            return -1;
        }
        if ((cell->family != FIATOMIC_FAMILY_BASE) &&
            !fiatomic_ref_bits_equal(cell->datatype, b->fetched + i * size,
                                     b->result + i * size)) {
            fiatomic_ref_format(cell->datatype, b->result + i * size, a,
                                sizeof(a));
            snprintf(msg, max, "round %u elem %zu: fetched %s, expected %s",
                     r, i, a, t);
            return -1;
        }
    }
    return 0;
}

int perf_verify_cell(perf_session_t *s, const perf_cell_t *cell,
                     size_t count, char *msg, size_t max)
{
    size_t size = fiatomic_ref_datatype_size(cell->datatype);
    size_t span = (count + 2) * size;
    perf_verify_bufs_t b = {0};
    ucs_status_t status;
    uint64_t offset;
    unsigned r;
    size_t i;
    int ret = -2;

    if ((size == 0) || perf_verify_alloc(&b, count, size)) {
        snprintf(msg, max, "no memory");
        perf_verify_free(&b);
        return -2;
    }

    for (r = 0; r < PERF_VERIFY_ROUNDS; ++r) {
        /* a different start each round: elements at every position of the
         * word a 1- or 2-byte element is emulated through */
        offset = PERF_VERIFY_OFFSET + r * size;
        perf_verify_fill(&b, cell->datatype, count, size, r);
        if (perf_session_write(s, PERF_REGION_FIATOMIC, offset, b.init,
                               span)) {
            snprintf(msg, max, "control channel write failed");
            goto out;
        }

        status = perf_verify_call(s, cell, &b, count,
                                  s->base + offset + size);
        if (status != UCS_OK) {
            snprintf(msg, max, "round %u: %s", r, ucs_status_string(status));
            goto out;
        }

        if (perf_session_read(s, PERF_REGION_FIATOMIC, offset, b.actual,
                              span)) {
            snprintf(msg, max, "control channel read failed");
            goto out;
        }

        memcpy(b.expected, b.init, span);
        for (i = 0; i < count; ++i) {
            fiatomic_ref_apply(cell->family, cell->op, cell->datatype,
                               b.expected + (i + 1) * size,
                               b.operand + i * size, b.compare + i * size,
                               b.fetched + i * size);
        }

        ret = perf_verify_compare(cell, &b, count, size, r, msg, max);
        if (ret != 0) {
            goto out;
        }
    }
    ret = 0;

out:
    perf_verify_free(&b);
    return ret;
}
