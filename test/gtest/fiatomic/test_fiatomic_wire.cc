/*
 * Target-side security, tested by a client that speaks the wire format
 * directly (its own UCP context and worker, no libfiatomic): every malformed
 * or unauthorised request gets an error reply, the target's memory is
 * unchanged byte for byte, and the target goes on serving other clients (the
 * library's own connection) afterwards. A well-formed request through the
 * same raw client is the positive control.
 */
#include "fiatomic_test_env.h"
#include "fiatomic_test_raw.h"

extern "C" {
#include "fiatomic_wire.h"
}

using namespace fiatomic_test;

namespace {

class wire : public connection_test {
protected:
    void set_up() override
    {
        std::string error;
        fiatomic_key_hdr_t hdr;

        /* region 0's handle and token, from the key the target gave out */
        const std::vector<uint8_t> &key = m_conn->tgt().info().key[0];
        ASSERT_GE(key.size(), sizeof(hdr));
        memcpy(&hdr, key.data(), sizeof(hdr));
        m_region = hdr.region;
        m_token  = hdr.token;
        m_base   = m_conn->base(0);
        m_length = m_conn->length(0);

        std::vector<uint8_t> fill(4096);
        for (size_t i = 0; i < fill.size(); ++i) {
            fill[i] = (uint8_t)(i * 13 + 7);
        }
        ASSERT_TRUE(m_conn->tgt().write(0, 0, fill.data(), fill.size(),
                                        &error)) << error;
        ASSERT_TRUE(take_snapshot(m_conn, &m_snap, &error)) << error;
        ASSERT_TRUE(m_client.start(GetParam().tl,
                                   m_conn->tgt().info().worker_address,
                                   &error)) << error;
    }

    /* A well-formed SUM u32 request for `count` elements at `offset`. */
    fiatomic_wire_req_t request(uint64_t offset, uint32_t count)
    {
        return wire_fetch_sum(FI_UINT32, count, m_region, m_token,
                              m_base + offset, 0x1234);
    }

    static std::vector<uint8_t> message(const fiatomic_wire_req_t &req,
                                        size_t operand_bytes)
    {
        std::vector<uint8_t> msg(sizeof(req) + operand_bytes, 0x01);
        memcpy(msg.data(), &req, sizeof(req));
        return msg;
    }

    /* The target refuses the message with `expected`, touches nothing, and
     * still serves the library's connection. */
    void expect_refused(const std::vector<uint8_t> &msg, ucs_status_t expected,
                        const std::string &what)
    {
        fiatomic_wire_reply_t reply;
        std::vector<uint8_t> values;
        std::string error;

        ASSERT_TRUE(m_client.call(msg, &reply, &values, &error))
                << what << ": " << error;
        EXPECT_EQ(FIATOMIC_WIRE_REPLY_MAGIC, reply.magic) << what;
        EXPECT_EQ(expected, (ucs_status_t)reply.status)
                << what << ": " << ucs_status_string((ucs_status_t)reply.status);
        EXPECT_EQ(0u, reply.count) << what;
        EXPECT_TRUE(values.empty()) << what;
        expect_unchanged(m_conn, m_snap, what);
        expect_still_serving(what);
    }

    void expect_still_serving(const std::string &what)
    {
        uint64_t offset = 8192, one = 1, old = 0, now = 0, saved;
        std::string error;

        ASSERT_TRUE(m_conn->tgt().read(0, offset, &saved, sizeof(saved),
                                       &error)) << error;
        ASSERT_TRUE(m_conn->tgt().write(0, offset, &old, sizeof(old), &error))
                << error;
        EXPECT_EQ(UCS_OK, m_conn->wait(fiatomic_fetch_atomic_nbx(
                                  m_conn->ep(), &one, 1, &old,
                                  m_base + offset, m_conn->key(0), FI_UINT64,
                                  FI_SUM, NULL)))
                << what << ": the target stopped serving";
        ASSERT_TRUE(m_conn->tgt().read(0, offset, &now, sizeof(now), &error))
                << error;
        EXPECT_EQ(1u, now) << what;
        ASSERT_TRUE(m_conn->tgt().write(0, offset, &saved, sizeof(saved),
                                        &error)) << error;
    }

    raw_client      m_client;
    target_snapshot m_snap;
    uint64_t        m_region = 0;
    uint64_t        m_token  = 0;
    uint64_t        m_base   = 0;
    uint64_t        m_length = 0;
};

/* The positive control: the raw client's own well-formed request works. */
TEST_P(wire, well_formed_request_is_executed)
{
    fiatomic_wire_reply_t reply;
    std::vector<uint8_t> values;
    std::string error;
    uint32_t before[2], after[2], operands[2] = {5, 0xffffffffu};
    fiatomic_wire_req_t req = request(64, 2);
    std::vector<uint8_t> msg = message(req, sizeof(operands));

    memcpy(msg.data() + sizeof(req), operands, sizeof(operands));
    ASSERT_TRUE(m_conn->tgt().read(0, 64, before, sizeof(before), &error));
    ASSERT_TRUE(m_client.call(msg, &reply, &values, &error)) << error;
    EXPECT_EQ(UCS_OK, (ucs_status_t)reply.status);
    EXPECT_EQ(req.id, reply.id);
    ASSERT_EQ(sizeof(before), values.size());
    EXPECT_EQ(0, memcmp(before, values.data(), sizeof(before)));
    ASSERT_TRUE(m_conn->tgt().read(0, 64, after, sizeof(after), &error));
    EXPECT_EQ((uint32_t)(before[0] + 5), after[0]);
    EXPECT_EQ((uint32_t)(before[1] - 1), after[1]);
}

TEST_P(wire, unknown_key)
{
    fiatomic_wire_req_t req = request(64, 1);

    req.region = m_region + 1000;
    expect_refused(message(req, 4), UCS_ERR_INVALID_PARAM, "unknown region");
    req         = request(64, 1);
    req.region += 1ull << 32;
    expect_refused(message(req, 4), UCS_ERR_INVALID_PARAM,
                   "the region's index, another generation");
    req        = request(64, 1);
    req.token ^= 1;
    expect_refused(message(req, 4), UCS_ERR_INVALID_PARAM, "wrong token");
}

TEST_P(wire, out_of_range)
{
    fiatomic_wire_req_t req = request(m_length - 4, 2);

    expect_refused(message(req, 8), UCS_ERR_INVALID_PARAM, "past the end");
    req       = request(0, 1);
    req.raddr = m_base - 4;
    expect_refused(message(req, 4), UCS_ERR_INVALID_PARAM, "below the start");
    req       = request(0, 1);
    req.raddr = m_base + m_length;
    expect_refused(message(req, 4), UCS_ERR_INVALID_PARAM, "at the end");
}

TEST_P(wire, address_overflow)
{
    /* address + count * size wraps around: must not look "in range" */
    fiatomic_wire_req_t req = request(0, 1024);

    req.raddr = UINT64_MAX - 1023;
    req.raddr &= ~(uint64_t)3;
    expect_refused(message(req, 4096), UCS_ERR_INVALID_PARAM,
                   "address + count * size overflows");
}

TEST_P(wire, misaligned)
{
    fiatomic_wire_req_t req = request(65, 1);

    expect_refused(message(req, 4), UCS_ERR_INVALID_PARAM, "u32 at +1");
}

TEST_P(wire, unknown_op_or_type)
{
    fiatomic_wire_req_t req = request(64, 1);

    req.op = FI_ATOMIC_OP_LAST;
    expect_refused(message(req, 4), UCS_ERR_UNSUPPORTED, "op out of range");
    req          = request(64, 1);
    req.datatype = FI_UINT128 + 1;
    expect_refused(message(req, 4), UCS_ERR_UNSUPPORTED, "type out of range");
    req        = request(64, 1);
    req.family = FIATOMIC_FAMILY_LAST;
    expect_refused(message(req, 4), UCS_ERR_UNSUPPORTED,
                   "family out of range");
    req          = request(64, 1);
    req.op       = FI_BOR;
    req.datatype = FI_FLOAT;
    expect_refused(message(req, 4), UCS_ERR_UNSUPPORTED, "BOR on float");
    req        = request(64, 1);
    req.family = FIATOMIC_FAMILY_BASE;
    req.op     = FI_ATOMIC_READ;
    expect_refused(message(req, 0), UCS_ERR_UNSUPPORTED, "READ in base");
}

TEST_P(wire, malformed)
{
    fiatomic_wire_req_t req = request(64, 2);
    std::vector<uint8_t> msg;

    expect_refused(message(req, 4), UCS_ERR_INVALID_PARAM,
                   "truncated operands");
    expect_refused(message(req, 9), UCS_ERR_INVALID_PARAM, "trailing bytes");
    msg = message(req, 8);
    msg.resize(sizeof(req) - 1);
    expect_refused(msg, UCS_ERR_INVALID_PARAM, "truncated header");
    expect_refused(std::vector<uint8_t>(), UCS_ERR_INVALID_PARAM, "empty");
    req       = request(64, 2);
    req.magic = 0;
    expect_refused(message(req, 8), UCS_ERR_INVALID_PARAM, "bad magic");
    req         = request(64, 2);
    req.version = FIATOMIC_WIRE_VERSION + 1;
    expect_refused(message(req, 8), UCS_ERR_INVALID_PARAM, "bad version");
    req          = request(64, 2);
    req.reserved = 1;
    expect_refused(message(req, 8), UCS_ERR_INVALID_PARAM, "reserved bits");
    req       = request(64, 0);
    expect_refused(message(req, 0), UCS_ERR_INVALID_PARAM, "count 0");
    req       = request(64, FIATOMIC_WIRE_MAX_PAYLOAD / 4 + 1);
    expect_refused(message(req, (FIATOMIC_WIRE_MAX_PAYLOAD / 4 + 1) * 4),
                   UCS_ERR_INVALID_PARAM, "payload above the limit");
}

#define WIRE_INSTANTIATE(_tl, _mem, _strategy) \
    FIATOMIC_TEST_INSTANTIATE(wire, _tl, _mem, _strategy)

WIRE_INSTANTIATE(tcp, user, auto)
WIRE_INSTANTIATE(tcp, alloc, auto)
WIRE_INSTANTIATE(posix, user, auto)
WIRE_INSTANTIATE(sysv, alloc, auto)
WIRE_INSTANTIATE(tcp, safe, auto)

} // namespace
