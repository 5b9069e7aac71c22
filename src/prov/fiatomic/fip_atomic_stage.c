/**
 * Program buffers of an atomic call that libfiatomic cannot take as they
 * are. libfabric asks nothing of the alignment of an atomic's local
 * buffers (operands, compare values, results: bytes to it), and programs
 * pass what their language aligns, a C double complex at 8 bytes among
 * them (Sandia OpenSHMEM's reductions hand such operands in its bounce
 * buffers); libfiatomic takes every element at its natural alignment
 * (its size, 16 at most; fiatomic(3)). A call with any local buffer
 * off that alignment is staged: its operands and compare values are
 * copied, each list into one aligned buffer of the operation, and its
 * results land in another, copied out to the program's buffers when the
 * operation completes. Aligned calls are not touched.
 */
#include "fip.h"

#include <string.h>

/* libfiatomic's alignment of an element of `size` bytes */
static size_t fip_stage_align(size_t size)
{
    return (size < 16) ? size : 16;
}

static size_t fip_stage_elements(const struct fi_ioc *iov, size_t count)
{
    size_t total = 0, i;

    for (i = 0; (iov != NULL) && (i < count); ++i) {
        total += iov[i].count;
    }
    return total;
}

static int fip_stage_misaligned(const struct fi_ioc *iov, size_t count,
                                size_t align)
{
    size_t i;

    for (i = 0; (iov != NULL) && (i < count); ++i) {
        if ((iov[i].count > 0) && ((uintptr_t)iov[i].addr & (align - 1))) {
            return 1;
        }
    }
    return 0;
}

size_t fip_atomic_stage_bytes(size_t size, const struct fi_msg_atomic *msg,
                              const struct fi_ioc *comparev,
                              size_t compare_count,
                              const struct fi_ioc *resultv,
                              size_t result_count)
{
    size_t align = fip_stage_align(size);

    if ((size == 0) ||
        (!fip_stage_misaligned(msg->msg_iov, msg->iov_count, align) &&
         !fip_stage_misaligned(comparev, compare_count, align) &&
         !fip_stage_misaligned(resultv, result_count, align))) {
        return 0;
    }
    /* room to align the start and the results' places, the three
     * copies, the results' places */
    return 16 + 8 + size * (fip_stage_elements(msg->msg_iov, msg->iov_count) +
                        fip_stage_elements(comparev, compare_count) +
                        fip_stage_elements(resultv, result_count)) +
           result_count * sizeof(struct fi_ioc);
}

/* copy a list's elements into one buffer at *at; the buffer's entry */
static struct fi_ioc fip_stage_gather(const struct fi_ioc *iov, size_t count,
                                      size_t size, char **at)
{
    struct fi_ioc one = {*at, 0};
    size_t i;

    for (i = 0; i < count; ++i) {
        if ((iov[i].count > 0) && (iov[i].addr != NULL)) {
            memcpy(*at, iov[i].addr, iov[i].count * size);
        }
        *at       += iov[i].count * size;
        one.count += iov[i].count;
    }
    return one;
}

void fip_atomic_stage(fip_op_t *op, size_t size, struct fi_msg_atomic *msg,
                      fip_atomic_staged_t *staged,
                      const struct fi_ioc **comparev, size_t *compare_count,
                      struct fi_ioc **resultv, size_t *result_count)
{
    char *at = (char*)(((uintptr_t)(op + 1) + 15) & ~(uintptr_t)15);
    size_t elements;

    if ((msg->msg_iov != NULL) && (msg->iov_count > 0)) {
        staged->operands = fip_stage_gather(msg->msg_iov, msg->iov_count,
                                            size, &at);
        msg->msg_iov     = &staged->operands;
        msg->iov_count   = 1;
    }
    if ((*comparev != NULL) && (*compare_count > 0)) {
        staged->compare = fip_stage_gather(*comparev, *compare_count, size,
                                           &at);
        *comparev       = &staged->compare;
        *compare_count  = 1;
    }
    if ((*resultv != NULL) && (*result_count > 0)) {
        elements          = fip_stage_elements(*resultv, *result_count);
        staged->results   = (struct fi_ioc){at, elements};
        op->staged        = at;
        op->staged_to     = (struct fi_ioc*)
                            (((uintptr_t)at + elements * size + 7) &
                             ~(uintptr_t)7);
        op->staged_count  = *result_count;
        op->staged_size   = size;
        memcpy(op->staged_to, *resultv, *result_count * sizeof(**resultv));
        *resultv          = &staged->results;
        *result_count     = 1;
    }
}

void fip_atomic_unstage(fip_op_t *op)
{
    const char *from = op->staged;
    size_t i, bytes;

    for (i = 0; i < op->staged_count; ++i) {
        bytes = op->staged_to[i].count * op->staged_size;
        if (bytes > 0) {
            memcpy(op->staged_to[i].addr, from, bytes);
        }
        from += bytes;
    }
}
