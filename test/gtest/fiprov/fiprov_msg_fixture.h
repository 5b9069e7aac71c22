/**
 * The fixtures the message suites (msg, tagged, claim) share: a peer test
 * that knows this endpoint's own address for the peer's echoes, and an
 * endpoint in one process that sends to itself; the iovecs of the
 * ping-pongs' vector forms, and the checks of a truncated echo and of the
 * message counters that they repeat.
 */
#ifndef FIPROV_MSG_FIXTURE_H_
#define FIPROV_MSG_FIXTURE_H_

#include "fiprov_peer.h"
#include "fiprov_wait.h"

#include <stdint.h>

#include <algorithm>
#include <vector>

namespace fiprov_test {

/** peer_test, and this endpoint's address, which the peer echoes to. */
class msg_peer_test : public peer_test {
protected:
    void SetUp() override;

    std::vector<uint8_t> m_self;  /* this endpoint's address */
};

/** One process: an endpoint whose address vector holds its own address
 *  (m_self), to send to itself. */
class self_ep_test : public test_base {
protected:
    /** Open the domain and endpoint asking for caps, with a CQ of the
     *  format; a fatal failure on error. */
    void open_self(uint64_t caps, enum fi_cq_format format);
    void TearDown() override;

    objects   m_o;
    fi_addr_t m_self = FI_ADDR_UNSPEC;
};

/**
 * One message `out` sent (its context &out) that the peer echoes into the
 * smaller receive `in` (context &in) of `given` bytes, both of `kind`
 * (FI_MSG or FI_TAGGED): the send's entry into *e and the receive's error
 * entry into *err, in either order (the peer's acknowledgement of a
 * rendezvous and its echo come over two connections), each exactly once;
 * their flags, in the bits of FI_SEND or FI_RECV and `mask`, name the
 * direction and kind. The error entry is FI_ETRUNC with the given length
 * and olen the bytes cut off, and the receive holds the first given bytes
 * and nothing past them (`in` filled with 0xee before). Fatal failures:
 * call it under ASSERT_NO_FATAL_FAILURE.
 */
template <typename entry_t>
void expect_truncated_echo(struct fid_cq *cq, entry_t *e,
                           const std::vector<uint8_t> &out,
                           const std::vector<uint8_t> &in, size_t given,
                           uint64_t kind, uint64_t mask,
                           struct fi_cq_err_entry *err)
{
    bool sent_ok = false, truncated = false;

    while (!sent_ok || !truncated) {
        ssize_t r = next_entry(cq, e, err);
        if (r == 1) {
            ASSERT_FALSE(sent_ok);
            EXPECT_EQ(FI_SEND | kind, e->flags & (FI_SEND | mask));
            EXPECT_EQ((const void*)&out, e->op_context);
            sent_ok = true;
        } else {
            ASSERT_EQ(-FI_EAVAIL, r);
            ASSERT_FALSE(truncated);
            truncated = true;
        }
    }
    EXPECT_EQ(FI_ETRUNC, err->err);
    EXPECT_EQ((const void*)&in, err->op_context);
    EXPECT_EQ(FI_RECV | kind, err->flags & (FI_RECV | mask));
    EXPECT_EQ(given, err->len);
    EXPECT_EQ(out.size() - given, err->olen);
    EXPECT_TRUE(std::equal(out.begin(), out.begin() + given, in.begin()));
    EXPECT_EQ(0xee, in[given]) << "written past the receive";
}

/** The iovecs of the ping-pongs' vector call forms: the message `out` in
 *  three (siov), the receive buffer `in` (16 bytes longer, so that a write
 *  past the message shows) in two (riov). */
void split_iov(std::vector<uint8_t> &out, std::vector<uint8_t> &in,
               struct iovec siov[3], struct iovec riov[2]);

/** n messages sent and n received, all counted by the FI_SEND and FI_RECV
 *  counters and none as an error, and nothing as a read or a write. */
void expect_msg_counters(const objects &o, uint64_t n);

} // namespace fiprov_test

#endif
