/*
 * Bad input: each case is refused with the documented -FI_E* before anything
 * is sent (the target is compared byte for byte before and after).
 */
#include "fiatomic_test_env.h"
#include "fiatomic_test_values.h"

using namespace fiatomic_test;

namespace {

class bad_input : public connection_test {
protected:
    void set_up() override
    {
        std::string error;

        memset(&m_param, 0, sizeof(m_param));
        /* a recognisable, non-zero target */
        std::vector<uint8_t> fill(40 * 1024);
        for (size_t i = 0; i < fill.size(); ++i) {
            fill[i] = (uint8_t)(i * 7 + 1);
        }
        ASSERT_TRUE(m_conn->tgt().write(0, 0, fill.data(), fill.size(),
                                        &error)) << error;
        ASSERT_TRUE(m_conn->tgt().write(1, 0, fill.data(),
                                        m_conn->length(1), &error)) << error;
        ASSERT_TRUE(take_snapshot(m_conn, &m_snap, &error)) << error;
        for (size_t i = 0; i < sizeof(m_buf); ++i) {
            m_buf[i] = (uint8_t)(i + 3);
            m_cmp[i] = (uint8_t)(i + 5);
        }
    }

    /* `ret` must be this immediate error; a request is waited for */
    void expect_errno(int expected, ucs_status_ptr_t p, const std::string &what)
    {
        int ret = immediate_errno(p);

        EXPECT_EQ(expected, ret) << what;
        if (ret == 1) {
            m_conn->wait(p);
        }
    }

    uint64_t addr(int region, uint64_t offset)
    {
        return m_conn->base(region) + offset;
    }

    fiatomic_request_param_t m_param;
    target_snapshot          m_snap;
    alignas(64) uint8_t      m_buf[256];
    alignas(64) uint8_t      m_cmp[256];
    alignas(64) uint8_t      m_res[256];
};

TEST_P(bad_input, count_zero)
{
    fiatomic_ep_h ep = m_conn->ep();
    uint64_t key     = m_conn->key(0);
    struct fi_ioc iov     = {m_buf, 0}, res = {m_res, 0};
    struct fi_rma_ioc rma = {addr(0, 64), 0, key};

    expect_errno(-FI_EINVAL, fiatomic_atomic_nbx(ep, m_buf, 0, addr(0, 64),
                                                 key, FI_UINT64, FI_SUM,
                                                 &m_param), "base");
    expect_errno(-FI_EINVAL, fiatomic_fetch_atomic_nbx(ep, m_buf, 0, m_res,
                                                       addr(0, 64), key,
                                                       FI_UINT32, FI_PROD,
                                                       &m_param), "fetch");
    expect_errno(-FI_EINVAL, fiatomic_compare_atomic_nbx(ep, m_buf, 0, m_cmp,
                                                         m_res, addr(0, 64),
                                                         key, FI_UINT8,
                                                         FI_CSWAP, &m_param),
                 "compare");
    EXPECT_EQ(-FI_EINVAL, fiatomic_status_to_fi_errno(fiatomic_inject_atomic(
                                  ep, m_buf, 0, addr(0, 64), key, FI_UINT64,
                                  FI_SUM))) << "inject";
    expect_errno(-FI_EINVAL, fiatomic_atomicv_nbx(ep, &iov, 1, &rma, 1,
                                                  FI_UINT64, FI_SUM, &m_param),
                 "vector with zero elements");
    expect_errno(-FI_EINVAL, fiatomic_fetch_atomicv_nbx(ep, &iov, 0, &res, 0,
                                                        &rma, 0, FI_UINT64,
                                                        FI_SUM, &m_param),
                 "vector with no entries");
    expect_unchanged(m_conn, m_snap, "count 0");
}

TEST_P(bad_input, count_above_limit)
{
    struct fi_atomic_attr attr;
    fiatomic_ep_h ep = m_conn->ep();
    uint64_t key     = m_conn->key(0);
    size_t limit;

    ASSERT_EQ(0, fiatomic_query_atomic(m_conn->fia(), FI_UINT8, FI_SUM, &attr,
                                       FI_FETCH_ATOMIC));
    limit = attr.count;
    ASSERT_GE(limit, 1u);
    /* the range itself is fine: only the count is too large */
    ASSERT_LE(limit + 1, m_conn->length(0));

    abuf buf(limit + 1), res(limit + 1), cmp(limit + 1);
    std::vector<struct fi_ioc> iov = {{buf.data(), 1}, {buf.data() + 1, limit}};
    struct fi_rma_ioc rma = {addr(0, 0), limit + 1, key};

    expect_errno(-FI_EMSGSIZE, fiatomic_atomic_nbx(ep, buf.data(), limit + 1,
                                                   addr(0, 0), key, FI_UINT8,
                                                   FI_SUM, &m_param), "base");
    expect_errno(-FI_EMSGSIZE,
                 fiatomic_fetch_atomic_nbx(ep, buf.data(), limit + 1,
                                           res.data(), addr(0, 0), key,
                                           FI_UINT8, FI_SUM, &m_param),
                 "fetch");
    expect_errno(-FI_EMSGSIZE,
                 fiatomic_compare_atomic_nbx(ep, buf.data(), limit + 1,
                                             cmp.data(), res.data(),
                                             addr(0, 0), key, FI_UINT8,
                                             FI_CSWAP, &m_param), "compare");
    EXPECT_EQ(-FI_EMSGSIZE, fiatomic_status_to_fi_errno(fiatomic_inject_atomic(
                                    ep, buf.data(), limit + 1, addr(0, 0),
                                    key, FI_UINT8, FI_SUM))) << "inject";
    expect_errno(-FI_EMSGSIZE, fiatomic_atomicv_nbx(ep, iov.data(), 2, &rma, 1,
                                                    FI_UINT8, FI_SUM,
                                                    &m_param), "vector");
    expect_unchanged(m_conn, m_snap, "count above the limit");
}

/* A context created with max_count reports and enforces it; a value above
 * FIATOMIC_MAX_COUNT_LIMIT is capped. */
TEST_P(bad_input, max_count_param)
{
    const config &cfg = GetParam();
    fiatomic_params_t params;
    std::string skip, error;
    struct fi_atomic_attr attr;
    size_t count;

    memset(&params, 0, sizeof(params));
    params.field_mask = FIATOMIC_PARAM_FIELD_MAX_COUNT;
    params.max_count  = 7;
    auto conn = connection::create(cfg, {}, &params, &skip, &error);
    ASSERT_TRUE(conn != NULL) << error;

    ASSERT_EQ(0, fiatomic_query_atomic(conn->fia(), FI_UINT32, FI_SUM, &attr,
                                       0));
    EXPECT_EQ(7u, attr.count);
    EXPECT_EQ(4u, attr.size);
    ASSERT_EQ(0, fiatomic_compare_atomicvalid(conn->fia(), FI_UINT16,
                                              FI_CSWAP_GT, &count));
    EXPECT_EQ(7u, count);

    alignas(64) uint32_t buf[8] = {1, 2, 3, 4, 5, 6, 7, 8}, res[8];
    uint32_t target[8], expected[8];
    target_snapshot snap;
    for (int i = 0; i < 8; ++i) {
        target[i] = expected[i] = 1000u * i;
    }
    ASSERT_TRUE(conn->tgt().write(0, 256, target, sizeof(target), &error))
            << error;
    ASSERT_TRUE(take_snapshot(conn.get(), &snap, &error)) << error;
    fiatomic_request_param_t param;
    memset(&param, 0, sizeof(param));
    EXPECT_EQ(-FI_EMSGSIZE,
              immediate_errno(fiatomic_fetch_atomic_nbx(
                      conn->ep(), buf, 8, res, conn->base(0) + 256,
                      conn->key(0), FI_UINT32, FI_SUM, &param)));
    expect_unchanged(conn.get(), snap, "count 8 over max_count 7");

    ASSERT_EQ(UCS_OK, conn->wait(fiatomic_fetch_atomic_nbx(
                      conn->ep(), buf, 7, res, conn->base(0) + 256,
                      conn->key(0), FI_UINT32, FI_SUM, &param)));
    ASSERT_EQ(UCS_OK, conn->flush());
    ASSERT_TRUE(conn->tgt().read(0, 256, target, sizeof(target), &error))
            << error;
    for (int i = 0; i < 7; ++i) {
        EXPECT_EQ(expected[i], res[i]) << i;
        EXPECT_EQ(expected[i] + buf[i], target[i]) << i;
    }
    EXPECT_EQ(expected[7], target[7]);
    conn.reset();

    /* the limit itself works; above it the header says "capped": either
     * clamped to the limit or refused as an invalid parameter */
    params.max_count = FIATOMIC_MAX_COUNT_LIMIT;
    conn = connection::create(cfg, {}, &params, &skip, &error);
    ASSERT_TRUE(conn != NULL) << error;
    ASSERT_EQ(0, fiatomic_query_atomic(conn->fia(), FI_UINT32, FI_SUM, &attr,
                                       0));
    EXPECT_EQ((size_t)FIATOMIC_MAX_COUNT_LIMIT, attr.count);
    conn.reset();

    params.max_count = (size_t)FIATOMIC_MAX_COUNT_LIMIT * 4;
    conn = connection::create(cfg, {}, &params, &skip, &error);
    if (conn != NULL) {
        ASSERT_EQ(0, fiatomic_query_atomic(conn->fia(), FI_UINT32, FI_SUM,
                                           &attr, 0));
        EXPECT_EQ((size_t)FIATOMIC_MAX_COUNT_LIMIT, attr.count);
    } else {
        EXPECT_NE(std::string::npos, error.find("fiatomic_create"))
                << error;
    }
}

TEST_P(bad_input, null_buffers)
{
    fiatomic_ep_h ep = m_conn->ep();
    uint64_t key     = m_conn->key(0);
    uint64_t a       = addr(0, 128);

    expect_errno(-FI_EINVAL, fiatomic_atomic_nbx(ep, NULL, 1, a, key,
                                                 FI_UINT64, FI_SUM, &m_param),
                 "base buf");
    EXPECT_EQ(-FI_EINVAL, fiatomic_status_to_fi_errno(fiatomic_inject_atomic(
                                  ep, NULL, 1, a, key, FI_UINT32, FI_MIN)))
            << "inject buf";
    expect_errno(-FI_EINVAL, fiatomic_fetch_atomic_nbx(ep, NULL, 1, m_res, a,
                                                       key, FI_UINT64, FI_SUM,
                                                       &m_param),
                 "fetch buf");
    expect_errno(-FI_EINVAL, fiatomic_fetch_atomic_nbx(ep, m_buf, 1, NULL, a,
                                                       key, FI_INT16, FI_MAX,
                                                       &m_param),
                 "fetch result");
    expect_errno(-FI_EINVAL, fiatomic_fetch_atomic_nbx(ep, NULL, 1, NULL, a,
                                                       key, FI_UINT64,
                                                       FI_ATOMIC_READ,
                                                       &m_param),
                 "atomic read result");
    expect_errno(-FI_EINVAL, fiatomic_compare_atomic_nbx(ep, NULL, 1, m_cmp,
                                                         m_res, a, key,
                                                         FI_UINT32, FI_CSWAP,
                                                         &m_param),
                 "compare buf");
    expect_errno(-FI_EINVAL, fiatomic_compare_atomic_nbx(ep, m_buf, 1, NULL,
                                                         m_res, a, key,
                                                         FI_UINT32, FI_CSWAP,
                                                         &m_param),
                 "compare compare");
    expect_errno(-FI_EINVAL, fiatomic_compare_atomic_nbx(ep, m_buf, 1, m_cmp,
                                                         NULL, a, key,
                                                         FI_UINT8, FI_MSWAP,
                                                         &m_param),
                 "compare result");
    {
        struct fi_ioc iov[2]  = {{m_buf, 1}, {NULL, 1}};
        struct fi_rma_ioc rma = {a, 2, key};
        expect_errno(-FI_EINVAL, fiatomic_atomicv_nbx(ep, iov, 2, &rma, 1,
                                                      FI_UINT64, FI_SUM,
                                                      &m_param),
                     "vector entry with a NULL address");
        expect_errno(-FI_EINVAL, fiatomic_atomicv_nbx(ep, NULL, 2, &rma, 1,
                                                      FI_UINT64, FI_SUM,
                                                      &m_param),
                     "NULL iov");
        expect_errno(-FI_EINVAL, fiatomic_atomicv_nbx(ep, iov, 1, NULL, 1,
                                                      FI_UINT64, FI_SUM,
                                                      &m_param),
                     "NULL rma_iov");
        expect_errno(-FI_EINVAL, fiatomic_atomicmsg_nbx(ep, NULL, 0, &m_param),
                     "NULL msg");
    }
    expect_unchanged(m_conn, m_snap, "NULL buffers");

    /* ATOMIC_READ's buf may be NULL: it works */
    uint64_t value = 0x0123456789abcdefull, result = 0;
    std::string error;
    ASSERT_TRUE(m_conn->tgt().write(0, 128, &value, 8, &error)) << error;
    ASSERT_EQ(UCS_OK, m_conn->wait(fiatomic_fetch_atomic_nbx(
                              ep, NULL, 1, &result, a, key, FI_UINT64,
                              FI_ATOMIC_READ, &m_param)));
    EXPECT_EQ(value, result);
}

TEST_P(bad_input, misaligned_local)
{
    fiatomic_ep_h ep = m_conn->ep();
    uint64_t key     = m_conn->key(0);
    uint64_t a       = addr(0, 256);

    for (int dt : {FI_INT16, FI_UINT32, FI_INT64, FI_FLOAT, FI_DOUBLE,
                   FI_FLOAT_COMPLEX}) {
        SCOPED_TRACE(fiatomic_ref_datatype_name(dt));
        enum fi_datatype d = (enum fi_datatype)dt;
        expect_errno(-FI_EINVAL, fiatomic_atomic_nbx(ep, m_buf + 1, 1, a, key,
                                                     d, FI_SUM, &m_param),
                     "base buf");
        expect_errno(-FI_EINVAL, fiatomic_fetch_atomic_nbx(ep, m_buf + 1, 2,
                                                           m_res, a, key, d,
                                                           FI_ATOMIC_WRITE,
                                                           &m_param),
                     "fetch buf");
        expect_errno(-FI_EINVAL, fiatomic_fetch_atomic_nbx(ep, m_buf, 2,
                                                           m_res + 1, a, key,
                                                           d, FI_SUM,
                                                           &m_param),
                     "fetch result");
        expect_errno(-FI_EINVAL, fiatomic_compare_atomic_nbx(ep, m_buf, 1,
                                                             m_cmp + 1, m_res,
                                                             a, key, d,
                                                             FI_CSWAP,
                                                             &m_param),
                     "compare compare");
        struct fi_ioc iov[2]  = {{m_buf, 1}, {m_buf + 9, 1}};
        struct fi_rma_ioc rma = {a, 2, key};
        expect_errno(-FI_EINVAL, fiatomic_atomicv_nbx(ep, iov, 2, &rma, 1, d,
                                                      FI_SUM, &m_param),
                     "second vector entry");
    }
    expect_unchanged(m_conn, m_snap, "misaligned local buffers");
}

TEST_P(bad_input, misaligned_remote)
{
    fiatomic_ep_h ep = m_conn->ep();
    uint64_t key     = m_conn->key(0);

    for (int dt : {FI_UINT16, FI_INT32, FI_UINT64, FI_FLOAT, FI_DOUBLE,
                   FI_FLOAT_COMPLEX}) {
        size_t size = dt_size(dt);
        enum fi_datatype d = (enum fi_datatype)dt;
        SCOPED_TRACE(fiatomic_ref_datatype_name(dt));
        /* every offset that is not a multiple of the element size; for
         * float complex (8 bytes, two 4-byte parts) that includes 4: an
         * 8-byte atomic needs 8-byte alignment */
        for (size_t off = 1; off < size; ++off) {
            uint64_t a = addr(0, 512 + off);
            expect_errno(-FI_EINVAL, fiatomic_atomic_nbx(ep, m_buf, 1, a, key,
                                                         d, FI_ATOMIC_WRITE,
                                                         &m_param),
                         "base, offset " + std::to_string(off));
            expect_errno(-FI_EINVAL, fiatomic_fetch_atomic_nbx(
                                 ep, NULL, 1, m_res, a, key, d,
                                 FI_ATOMIC_READ, &m_param),
                         "fetch, offset " + std::to_string(off));
            expect_errno(-FI_EINVAL, fiatomic_compare_atomic_nbx(
                                 ep, m_buf, 1, m_cmp, m_res, a, key, d,
                                 FI_CSWAP, &m_param),
                         "compare, offset " + std::to_string(off));
        }
        /* the first entry is fine, the second is not: nothing is done */
        struct fi_ioc iov     = {m_buf, 2};
        struct fi_rma_ioc rma[2] = {{addr(0, 1024), 1, key},
                                    {addr(0, 1024 + 2 * size + 1), 1, key}};
        expect_errno(-FI_EINVAL, fiatomic_atomicv_nbx(ep, &iov, 1, rma, 2, d,
                                                      FI_ATOMIC_WRITE,
                                                      &m_param),
                     "second remote entry");
    }
    expect_unchanged(m_conn, m_snap, "misaligned remote elements");
}

TEST_P(bad_input, unknown_key)
{
    fiatomic_ep_h ep = m_conn->ep();
    uint64_t a       = addr(0, 64);
    uint64_t released;
    const std::vector<uint8_t> &packed = m_conn->tgt().info().key[0];
    std::vector<uint64_t> bad = {0, ~0ull};

    /* a key unpacked and released again */
    ASSERT_EQ(UCS_OK, fiatomic_rkey_unpack(ep, packed.data(), packed.size(),
                                           &released));
    ASSERT_EQ(UCS_OK, fiatomic_rkey_release(ep, released));
    bad.push_back(released);
    for (uint64_t k : {m_conn->key(0), m_conn->key(1)}) {
        bad.push_back(k + 1);
        bad.push_back(k ^ (1ull << 40));
    }

    for (uint64_t k : bad) {
        if ((k == m_conn->key(0)) || (k == m_conn->key(1))) {
            continue; /* (a valid key by coincidence) */
        }
        SCOPED_TRACE("key " + std::to_string(k));
        expect_errno(-FI_EINVAL, fiatomic_atomic_nbx(ep, m_buf, 1, a, k,
                                                     FI_UINT64, FI_SUM,
                                                     &m_param), "base");
        expect_errno(-FI_EINVAL, fiatomic_fetch_atomic_nbx(ep, m_buf, 1, m_res,
                                                           a, k, FI_UINT8,
                                                           FI_PROD, &m_param),
                     "fetch");
        struct fi_ioc iov        = {m_buf, 2};
        struct fi_rma_ioc rma[2] = {{a, 1, m_conn->key(0)}, {a + 8, 1, k}};
        expect_errno(-FI_EINVAL, fiatomic_atomicv_nbx(ep, &iov, 1, rma, 2,
                                                      FI_UINT64, FI_SUM,
                                                      &m_param),
                     "second vector entry");
        fiatomic_cell_info_t info;
        EXPECT_EQ(-FI_EINVAL, fiatomic_query_cell(ep, k, FIATOMIC_FAMILY_FETCH,
                                                  FI_UINT64, FI_SUM, &info));
    }

    /* a key is valid only on the endpoint that unpacked it */
    ucp_ep_h ucp_ep2;
    fiatomic_ep_h ep2;
    std::string error;
    ASSERT_TRUE(m_conn->create_second_ep(&ucp_ep2, &ep2, &error)) << error;
    expect_errno(-FI_EINVAL, fiatomic_atomic_nbx(ep2, m_buf, 1, a,
                                                 m_conn->key(0), FI_UINT64,
                                                 FI_SUM, &m_param),
                 "another endpoint's key");
    fiatomic_request_param_t param;
    memset(&param, 0, sizeof(param));
    m_conn->wait(fiatomic_ep_flush_nbx(ep2, &param));
    m_conn->destroy_second_ep(ucp_ep2, ep2);

    expect_unchanged(m_conn, m_snap, "unknown keys");
}

/*
 * Keys of other endpoints. Every endpoint's first key used to be the same
 * handle (0x1): another endpoint's key with an address inside this
 * endpoint's own region passed every check and changed that region. A key
 * works only on the endpoint that unpacked it: from another endpoint of
 * the same context and target, from another context and target, or from a
 * destroyed endpoint, it is -FI_EINVAL and nothing changes; each key still
 * reads its own region on its own endpoint (the control).
 */
class foreign_keys : public bad_input {
protected:
    /* A read of the u64 at `a` through `key` on `ep`: its status, and the
     * value in *value */
    ucs_status_t read_u64(connection *conn, fiatomic_ep_h ep, uint64_t key,
                          uint64_t a, uint64_t *value)
    {
        return conn->wait(fiatomic_fetch_atomic_nbx(ep, NULL, 1, value, a, key,
                                                    FI_UINT64, FI_ATOMIC_READ,
                                                    &m_param), 30.0);
    }

    /* every kind of call with `key` on `ep` at `a` is refused at once */
    void expect_refused(fiatomic_ep_h ep, uint64_t key, uint64_t a,
                        const std::string &what)
    {
        uint64_t one = 1;

        SCOPED_TRACE(what);
        expect_errno(-FI_EINVAL, fiatomic_atomic_nbx(ep, &one, 1, a, key,
                                                     FI_UINT64, FI_SUM,
                                                     &m_param), "base");
        expect_errno(-FI_EINVAL, fiatomic_fetch_atomic_nbx(ep, &one, 1, m_res,
                                                           a, key, FI_UINT64,
                                                           FI_SUM, &m_param),
                     "fetch");
        expect_errno(-FI_EINVAL, fiatomic_compare_atomic_nbx(
                             ep, m_buf, 1, m_cmp, m_res, a, key, FI_UINT64,
                             FI_CSWAP, &m_param), "compare");
        EXPECT_EQ(-FI_EINVAL, fiatomic_status_to_fi_errno(
                          fiatomic_inject_atomic(ep, &one, 1, a, key,
                                                 FI_UINT64, FI_SUM)))
                << "inject";
    }

    /* the u64 at offset 64 of region 1 as the snapshot has it */
    uint64_t region1_word() const
    {
        uint64_t v;

        memcpy(&v, m_snap.bytes[1].data() + 64, sizeof(v));
        return v;
    }
};

TEST_P(foreign_keys, other_endpoint_same_target)
{
    const std::vector<uint8_t> &packed1 = m_conn->tgt().info().key[1];
    uint64_t a1 = addr(1, 64), a0 = addr(0, 64), k2, value = 0;
    fiatomic_request_param_t param;
    ucp_ep_h ucp_ep2;
    fiatomic_ep_h ep2;
    std::string error;

    ASSERT_TRUE(m_conn->create_second_ep(&ucp_ep2, &ep2, &error)) << error;
    ASSERT_EQ(UCS_OK, fiatomic_rkey_unpack(ep2, packed1.data(),
                                           packed1.size(), &k2));
    /* the first endpoint's key of region 0, with an address of region 1
     * that the second endpoint's own key reaches */
    expect_refused(ep2, m_conn->key(0), a1, "endpoint 1's key on endpoint 2");
    /* the second endpoint's key on the first, at an address of region 0
     * (its first key's) */
    expect_refused(m_conn->ep(), k2, a0, "endpoint 2's key on endpoint 1");
    expect_refused(m_conn->ep(), k2, a1, "endpoint 2's key on endpoint 1, "
                                         "its own region");
    EXPECT_EQ(UCS_OK, read_u64(m_conn, ep2, k2, a1, &value));
    EXPECT_EQ(region1_word(), value) << "the key on its own endpoint";

    memset(&param, 0, sizeof(param));
    EXPECT_EQ(UCS_OK, m_conn->wait(fiatomic_ep_flush_nbx(ep2, &param)));
    m_conn->destroy_second_ep(ucp_ep2, ep2);
    expect_unchanged(m_conn, m_snap, "keys of another endpoint");
}

TEST_P(foreign_keys, destroyed_endpoint)
{
    const std::vector<uint8_t> &packed1 = m_conn->tgt().info().key[1];
    uint64_t a1 = addr(1, 64), k2, k3, value = 0;
    fiatomic_request_param_t param;
    ucp_ep_h ucp_ep2, ucp_ep3;
    fiatomic_ep_h ep2, ep3;
    std::string error;

    memset(&param, 0, sizeof(param));
    ASSERT_TRUE(m_conn->create_second_ep(&ucp_ep2, &ep2, &error)) << error;
    ASSERT_EQ(UCS_OK, fiatomic_rkey_unpack(ep2, packed1.data(),
                                           packed1.size(), &k2));
    EXPECT_EQ(UCS_OK, m_conn->wait(fiatomic_ep_flush_nbx(ep2, &param)));
    m_conn->destroy_second_ep(ucp_ep2, ep2);

    /* a new endpoint (its memory may be the destroyed one's) unpacks the
     * same region's key: the destroyed endpoint's key names nothing */
    ASSERT_TRUE(m_conn->create_second_ep(&ucp_ep3, &ep3, &error)) << error;
    ASSERT_EQ(UCS_OK, fiatomic_rkey_unpack(ep3, packed1.data(),
                                           packed1.size(), &k3));
    EXPECT_NE(k2, k3);
    expect_refused(ep3, k2, a1, "a destroyed endpoint's key");
    EXPECT_EQ(UCS_OK, read_u64(m_conn, ep3, k3, a1, &value));
    EXPECT_EQ(region1_word(), value) << "the new endpoint's own key";
    EXPECT_EQ(UCS_OK, m_conn->wait(fiatomic_ep_flush_nbx(ep3, &param)));
    m_conn->destroy_second_ep(ucp_ep3, ep3);
    expect_unchanged(m_conn, m_snap, "a destroyed endpoint's key");
}

TEST_P(foreign_keys, other_context_other_target)
{
    std::unique_ptr<connection> other;
    target_snapshot other_snap;
    std::string skip, error;
    uint64_t value = 0;

    other = connection::create(GetParam(), {}, NULL, &skip, &error);
    ASSERT_TRUE(other != NULL) << skip << error;
    ASSERT_TRUE(take_snapshot(other.get(), &other_snap, &error)) << error;

    /* each connection's key of region 0 with an address of the other's
     * region 0, both ways */
    expect_refused(other->ep(), m_conn->key(0), other->base(0) + 64,
                   "a key of another context on its endpoint");
    expect_refused(m_conn->ep(), other->key(0), addr(0, 64),
                   "the other context's key on this endpoint");
    EXPECT_EQ(UCS_OK, read_u64(other.get(), other->ep(), other->key(0),
                               other->base(0) + 64, &value));
    EXPECT_EQ(0, memcmp(&value, other_snap.bytes[0].data() + 64,
                        sizeof(value))) << "the key on its own endpoint";
    expect_unchanged(other.get(), other_snap, "another context's key");
    expect_unchanged(m_conn, m_snap, "another context's key");
}

#define FOREIGN_KEYS_INSTANTIATE(_tl, _mem, _strategy) \
    FIATOMIC_TEST_INSTANTIATE(foreign_keys, _tl, _mem, _strategy)
FOREIGN_KEYS_INSTANTIATE(self, alloc, auto)
FOREIGN_KEYS_INSTANTIATE(posix, alloc, auto)
FOREIGN_KEYS_INSTANTIATE(tcp, user, auto)
FOREIGN_KEYS_INSTANTIATE(tcp, user, target)

TEST_P(bad_input, address_out_of_range)
{
    fiatomic_ep_h ep = m_conn->ep();
    uint64_t key     = m_conn->key(1); /* region 1: small */
    uint64_t base    = m_conn->base(1);
    uint64_t len     = m_conn->length(1);
    struct {
        uint64_t    addr;
        size_t      count;
        const char *what;
    } cases[] = {
        {base - 8, 1, "just below"},
        {base + len, 1, "just above"},
        {base + len - 8, 2, "second element above"},
        {base - 8, 2, "first element below"},
        {base + len + 4096, 1, "far above"},
        {0, 1, "address 0"},
        {base + len - 8, (size_t)1 << 40, "huge count"}
    };

    for (const auto &c : cases) {
        SCOPED_TRACE(c.what);
        int ret = immediate_errno(fiatomic_atomic_nbx(ep, m_buf, c.count,
                                                      c.addr, key, FI_UINT64,
                                                      FI_SUM, &m_param));
        if (c.count > 2) {
            /* the count is checked against the limit first or second */
            EXPECT_TRUE((ret == -FI_EINVAL) || (ret == -FI_EMSGSIZE)) << ret;
            continue;
        }
        EXPECT_EQ(-FI_EINVAL, ret) << "base";
        expect_errno(-FI_EINVAL, fiatomic_fetch_atomic_nbx(ep, NULL, c.count,
                                                           m_res, c.addr, key,
                                                           FI_UINT64,
                                                           FI_ATOMIC_READ,
                                                           &m_param),
                     "fetch");
        expect_errno(-FI_EINVAL, fiatomic_compare_atomic_nbx(
                             ep, m_buf, c.count, m_cmp, m_res, c.addr, key,
                             FI_UINT64, FI_CSWAP_NE, &m_param), "compare");
    }
    /* region 0's key with an address in region 1 */
    expect_errno(-FI_EINVAL, fiatomic_atomic_nbx(ep, m_buf, 1, base + 64,
                                                 m_conn->key(0), FI_UINT64,
                                                 FI_SUM, &m_param),
                 "other region's key");
    /* the first entry is in range, the second is not: nothing is done */
    struct fi_ioc iov        = {m_buf, 3};
    struct fi_rma_ioc rma[2] = {{base + 64, 1, key}, {base + len - 8, 2, key}};
    expect_errno(-FI_EINVAL, fiatomic_atomicv_nbx(ep, &iov, 1, rma, 2,
                                                  FI_UINT64, FI_SUM,
                                                  &m_param),
                 "second vector entry");
    expect_unchanged(m_conn, m_snap, "out of range");
}

TEST_P(bad_input, tagged)
{
    fiatomic_ep_h ep = m_conn->ep();
    struct fi_ioc iov     = {m_buf, 1}, res = {m_res, 1}, cmp = {m_cmp, 1};
    struct fi_rma_ioc rma = {addr(0, 64), 1, m_conn->key(0)};
    struct fi_msg_atomic msg = atomic_msg(&iov, 1, &rma, 1, FI_UINT64,
                                          FI_SUM);
    fiatomic_request_param_t param = m_param;

    expect_errno(-FI_EOPNOTSUPP, fiatomic_atomicmsg_nbx(ep, &msg, FI_TAGGED,
                                                        &m_param), "msg");
    expect_errno(-FI_EOPNOTSUPP,
                 fiatomic_fetch_atomicmsg_nbx(ep, &msg, &res, 1, FI_TAGGED,
                                              &m_param), "fetch msg");
    msg.op = FI_CSWAP;
    expect_errno(-FI_EOPNOTSUPP,
                 fiatomic_compare_atomicmsg_nbx(ep, &msg, &cmp, 1, &res, 1,
                                                FI_TAGGED, &m_param),
                 "compare msg");
    param.op_attr_mask = FIATOMIC_OP_ATTR_FIELD_FLAGS;
    param.flags        = FI_TAGGED;
    expect_errno(-FI_EOPNOTSUPP, fiatomic_atomic_nbx(ep, m_buf, 1,
                                                     addr(0, 64),
                                                     m_conn->key(0), FI_UINT64,
                                                     FI_SUM, &param),
                 "param flags");
    expect_unchanged(m_conn, m_snap, "FI_TAGGED");
}

TEST_P(bad_input, vector_totals_differ)
{
    fiatomic_ep_h ep = m_conn->ep();
    uint64_t key     = m_conn->key(0);
    struct fi_ioc iov[2]  = {{m_buf, 2}, {m_buf + 32, 1}};  /* 3 */
    struct fi_ioc res[2]  = {{m_res, 1}, {m_res + 32, 2}};  /* 3 */
    struct fi_ioc res4    = {m_res, 4};
    struct fi_ioc cmp[1]  = {{m_cmp, 3}};
    struct fi_ioc cmp2    = {m_cmp, 2};
    struct fi_rma_ioc rma3[2] = {{addr(0, 64), 1, key}, {addr(0, 128), 2, key}};
    struct fi_rma_ioc rma4[2] = {{addr(0, 64), 2, key}, {addr(0, 128), 2, key}};

    expect_errno(-FI_EINVAL, fiatomic_atomicv_nbx(ep, iov, 2, rma4, 2,
                                                  FI_UINT64, FI_SUM, &m_param),
                 "iov 3, rma 4");
    expect_errno(-FI_EINVAL, fiatomic_fetch_atomicv_nbx(ep, iov, 2, &res4, 1,
                                                        rma3, 2, FI_UINT64,
                                                        FI_SUM, &m_param),
                 "result 4, iov and rma 3");
    expect_errno(-FI_EINVAL, fiatomic_fetch_atomicv_nbx(ep, iov, 2, res, 2,
                                                        rma4, 2, FI_UINT64,
                                                        FI_SUM, &m_param),
                 "iov and result 3, rma 4");
    expect_errno(-FI_EINVAL, fiatomic_compare_atomicv_nbx(
                         ep, iov, 2, &cmp2, 1, res, 2, rma3, 2, FI_UINT64,
                         FI_CSWAP, &m_param), "compare 2, others 3");
    expect_errno(-FI_EINVAL, fiatomic_compare_atomicv_nbx(
                         ep, iov, 2, cmp, 1, res, 2, rma4, 2, FI_UINT64,
                         FI_CSWAP, &m_param), "rma 4, others 3");
    expect_unchanged(m_conn, m_snap, "vector totals");
}

#define BAD_INPUT_INSTANTIATE(_tl, _mem, _strategy) \
    FIATOMIC_TEST_INSTANTIATE(bad_input, _tl, _mem, _strategy)
FIATOMIC_TEST_FOR_AUTO_CONFIGS(BAD_INPUT_INSTANTIATE)

} // namespace
