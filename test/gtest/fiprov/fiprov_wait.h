/**
 * The bounded waits the message suites share: a monotonic clock in
 * milliseconds, the next entry of a completion queue, a counter reaching a
 * value; each gives up after peer_wait_ms.
 */
#ifndef FIPROV_WAIT_H_
#define FIPROV_WAIT_H_

#include "fiprov_peer.h"

#include <rdma/fi_eq.h>

#include <stdint.h>
#include <string.h>

namespace fiprov_test {

/** CLOCK_MONOTONIC in milliseconds */
int64_t now_ms();

/** The next entry of the CQ (any entry format), bounded: 1; an error entry
 *  read into *err: -FI_EAVAIL; or -FI_ETIMEDOUT. With skip_sends, the
 *  entries (and error entries) of this side's sends are read and passed
 *  over. */
template <typename entry_t>
ssize_t next_entry(struct fid_cq *cq, entry_t *e, struct fi_cq_err_entry *err,
                   bool skip_sends = false)
{
    int64_t deadline = now_ms() + peer_wait_ms;
    ssize_t n;

    for (;;) {
        n = fi_cq_read(cq, e, 1);
        if (n == -FI_EAVAIL) {
            memset(err, 0, sizeof(*err));
            if (fi_cq_readerr(cq, err, 0) != 1) {
                return -FI_EIO;
            }
            if (skip_sends && (err->flags & FI_SEND)) {
                continue;
            }
            return -FI_EAVAIL;
        }
        if (skip_sends && (n == 1) && (e->flags & FI_SEND)) {
            continue;
        }
        if (n != -FI_EAGAIN) {
            return n;
        }
        if (now_ms() > deadline) {
            return -FI_ETIMEDOUT;
        }
    }
}

/** Wait until the counter reaches value (bounded, progressing); a gtest
 *  assertion fails otherwise */
void wait_cntr(struct fid_cntr *c, uint64_t value);

} // namespace fiprov_test

#endif
