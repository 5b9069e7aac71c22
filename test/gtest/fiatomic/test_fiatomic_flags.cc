/*
 * Operation flags and completion semantics: FI_INJECT (and
 * fiatomic_inject_atomic), FI_FENCE, FI_COMPLETION with selective
 * completion, FI_MORE, FI_DELIVERY_COMPLETE, callbacks and user data,
 * flush, freeing a request early.
 */
#include "fiatomic_test_env.h"
#include "fiatomic_test_values.h"

using namespace fiatomic_test;

namespace {

struct cb_record {
    int          calls = 0;
    ucs_status_t status = UCS_OK;
    void         *user_data = NULL;
};

void record_cb(void *request, ucs_status_t status, void *user_data)
{
    /* user_data is the msg context or param user_data: a cb_record */
    cb_record *r = static_cast<cb_record*>(user_data);
    r->calls++;
    r->status    = status;
    r->user_data = user_data;
}

class flags : public connection_test {
protected:
    void set_up() override
    {
        memset(&m_param, 0, sizeof(m_param));
    }

    void write(uint64_t off, const void *data, size_t len)
    {
        std::string error;
        ASSERT_TRUE(m_conn->tgt().write(0, off, data, len, &error)) << error;
    }

    std::vector<uint8_t> read(uint64_t off, size_t len)
    {
        std::string error;
        std::vector<uint8_t> v(len);
        EXPECT_TRUE(m_conn->tgt().read(0, off, v.data(), len, &error))
                << error;
        return v;
    }

    uint64_t addr(uint64_t off) { return m_conn->base(0) + off; }

    fiatomic_request_param_t m_param;
};

/* fiatomic_inject_atomic: the buffer is reusable on return */
TEST_P(flags, inject_buffer_reusable)
{
    for (int dt : {FI_UINT8, FI_INT16, FI_UINT32, FI_UINT64, FI_DOUBLE}) {
        const size_t n = 16, size = dt_size(dt);
        std::vector<value_t> pool = edge_values(dt);
        abuf buf(n * size);
        std::vector<uint8_t> target(n * size), expected;

        SCOPED_TRACE(fiatomic_ref_datatype_name(dt));
        for (size_t i = 0; i < n; ++i) {
            memcpy(&target[i * size], pool[i % pool.size()].data(), size);
            memcpy(buf.data() + i * size, pool[(i * 5 + 3) % pool.size()].data(),
                   size);
        }
        expected = target;
        for (size_t i = 0; i < n; ++i) {
            fiatomic_ref_apply(FIATOMIC_REF_FAMILY_BASE, FI_SUM, dt,
                               &expected[i * size], buf.data() + i * size,
                               NULL, NULL);
        }
        write(4096, target.data(), target.size());
        ASSERT_EQ(UCS_OK, fiatomic_inject_atomic(m_conn->ep(), buf.data(), n,
                                                 addr(4096), m_conn->key(0),
                                                 (enum fi_datatype)dt, FI_SUM));
        memset(buf.data(), 0x5a, n * size); /* ours again at once */
        ASSERT_EQ(UCS_OK, m_conn->flush());
        std::vector<uint8_t> now = read(4096, target.size());
        for (size_t i = 0; i < n; ++i) {
            EXPECT_TRUE(fiatomic_ref_result_equal(FI_SUM, dt,
                                                  &expected[i * size],
                                                  &now[i * size]))
                    << "element " << i << ": " << fmt(dt, &now[i * size])
                    << ", expected " << fmt(dt, &expected[i * size]);
        }
    }
}

/* FI_INJECT on fetch and compare calls: buf and compare are reusable on
 * return, the result is valid at completion */
TEST_P(flags, inject_flag_fetch_and_compare)
{
    const size_t n = 8;
    alignas(64) uint32_t buf[n], cmp[n], res[n], target[n], exp_t[n],
            exp_f[n];
    fiatomic_request_param_t param = m_param;

    param.op_attr_mask = FIATOMIC_OP_ATTR_FIELD_FLAGS;
    param.flags        = FI_INJECT;

    for (int family : {FIATOMIC_FAMILY_FETCH, FIATOMIC_FAMILY_COMPARE}) {
        int op = (family == FIATOMIC_FAMILY_FETCH) ? FI_PROD : FI_CSWAP_LT;
        SCOPED_TRACE(fiatomic_ref_op_name(op));
        for (size_t i = 0; i < n; ++i) {
            target[i] = exp_t[i] = 1000 + 37 * i;
            buf[i]    = 3 + i;
            cmp[i]    = 1000 + 40 * i - 100;
            res[i]    = 0xdeadbeef;
            fiatomic_ref_apply(family, op, FI_UINT32, &exp_t[i], &buf[i],
                               &cmp[i], &exp_f[i]);
        }
        write(8192, target, sizeof(target));
        ucs_status_ptr_t p = (family == FIATOMIC_FAMILY_FETCH) ?
                fiatomic_fetch_atomic_nbx(m_conn->ep(), buf, n, res,
                                          addr(8192), m_conn->key(0),
                                          FI_UINT32, (enum fi_op)op, &param) :
                fiatomic_compare_atomic_nbx(m_conn->ep(), buf, n, cmp, res,
                                            addr(8192), m_conn->key(0),
                                            FI_UINT32, (enum fi_op)op,
                                            &param);
        memset(buf, 0xff, sizeof(buf)); /* constant buffers: ours again */
        memset(cmp, 0x00, sizeof(cmp));
        ASSERT_EQ(UCS_OK, m_conn->wait(p));
        ASSERT_EQ(UCS_OK, m_conn->flush());
        std::vector<uint8_t> now = read(8192, sizeof(target));
        for (size_t i = 0; i < n; ++i) {
            uint32_t t;
            memcpy(&t, &now[i * 4], 4);
            EXPECT_EQ(exp_t[i], t) << "target " << i;
            EXPECT_EQ(exp_f[i], res[i]) << "result " << i;
        }
    }
}

/* Operations posted after a fenced one see the results of all earlier ones;
 * the fenced one itself too ("deferred until all previous operations have
 * completed"). */
TEST_P(flags, fence)
{
    const int K = 24;
    struct {
        int dt;
        int op;
    } cases[] = {{FI_UINT64, FI_SUM}, {FI_UINT16, FI_PROD}, {FI_DOUBLE, FI_SUM},
                 {FI_INT8, FI_SUM}};

    for (const auto &c : cases) {
        size_t size = dt_size(c.dt);
        value_t init = int_value(c.dt, 5), operand, expected, fetched(size);
        std::vector<ucs_status_ptr_t> reqs;
        abuf ops(K * size), res(size);
        fiatomic_request_param_t fenced = m_param;

        SCOPED_TRACE(std::string(fiatomic_ref_datatype_name(c.dt)) + " " +
                     fiatomic_ref_op_name(c.op));
        if (c.dt == FI_DOUBLE) {
            double d = 5.0, o = 1.25;
            memcpy(init.data(), &d, 8);
            operand.assign((uint8_t*)&o, (uint8_t*)&o + 8);
        } else {
            operand = int_value(c.dt, 3);
        }
        expected = init;
        for (int k = 0; k < K; ++k) {
            memcpy(ops.data() + k * size, operand.data(), size);
            fiatomic_ref_apply(FIATOMIC_REF_FAMILY_BASE, c.op, c.dt,
                               expected.data(), operand.data(), NULL, NULL);
        }
        write(12288, init.data(), size);
        for (int k = 0; k < K; ++k) {
            reqs.push_back(fiatomic_atomic_nbx(m_conn->ep(),
                                               ops.data() + k * size, 1,
                                               addr(12288), m_conn->key(0),
                                               (enum fi_datatype)c.dt,
                                               (enum fi_op)c.op, &m_param));
        }
        fenced.op_attr_mask = FIATOMIC_OP_ATTR_FIELD_FLAGS;
        fenced.flags        = FI_FENCE;
        reqs.push_back(fiatomic_fetch_atomic_nbx(m_conn->ep(), NULL, 1,
                                                 res.data(), addr(12288),
                                                 m_conn->key(0),
                                                 (enum fi_datatype)c.dt,
                                                 FI_ATOMIC_READ, &fenced));
        for (ucs_status_ptr_t p : reqs) {
            EXPECT_EQ(UCS_OK, m_conn->wait(p));
        }
        EXPECT_TRUE(fiatomic_ref_result_equal(c.op, c.dt, expected.data(),
                                              res.data()))
                << "the fenced read saw " << fmt(c.dt, res.data())
                << ", expected " << fmt(c.dt, expected.data());
        ASSERT_EQ(UCS_OK, m_conn->flush());
    }
}

/* With FIATOMIC_EP_FLAG_SELECTIVE_COMPLETION, the msg calls report
 * completion only with FI_COMPLETION; without it they complete silently
 * and flush waits for them. */
TEST_P(flags, selective_completion)
{
    ucp_ep_h ucp_ep;
    fiatomic_ep_h ep;
    fiatomic_ep_params_t ep_params;
    uint64_t key;
    std::string error;
    const std::vector<uint8_t> &packed = m_conn->tgt().info().key[0];

    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = FIATOMIC_EP_PARAM_FIELD_FLAGS;
    ep_params.flags      = FIATOMIC_EP_FLAG_SELECTIVE_COMPLETION;
    ASSERT_TRUE(m_conn->create_second_ep(&ucp_ep, &ep, &error, &ep_params))
            << error;
    ASSERT_EQ(UCS_OK, fiatomic_rkey_unpack(ep, packed.data(), packed.size(),
                                           &key));

    for (uint64_t flags : {(uint64_t)0, (uint64_t)FI_COMPLETION}) {
        alignas(64) uint64_t buf[3] = {1, 2, 3}, res[3] = {0, 0, 0};
        uint64_t target[3] = {100, 200, 300};
        struct fi_ioc iov = {buf, 3}, resv = {res, 3};
        struct fi_rma_ioc rma = {addr(16384), 3, key};
        cb_record rec;
        struct fi_msg_atomic msg = atomic_msg(&iov, 1, &rma, 1, FI_UINT64,
                                              FI_SUM, &rec);
        fiatomic_request_param_t param;
        ucs_status_ptr_t p;

        SCOPED_TRACE(flags ? "FI_COMPLETION" : "no FI_COMPLETION");
        write(16384, target, sizeof(target));
        memset(&param, 0, sizeof(param));
        param.op_attr_mask = FIATOMIC_OP_ATTR_FIELD_CALLBACK;
        param.cb           = record_cb;
        p = fiatomic_fetch_atomicmsg_nbx(ep, &msg, &resv, 1, flags, &param);
        ASSERT_FALSE(UCS_PTR_IS_ERR(p))
                << ucs_status_string(UCS_PTR_STATUS(p));
        if (!flags) {
            EXPECT_TRUE(p == NULL) << "a silent operation returned a request";
        } else if (p != NULL) {
            double deadline = now_sec() + 30;
            while ((fiatomic_request_check_status(p) == UCS_INPROGRESS) &&
                   (now_sec() < deadline)) {
                ucp_worker_progress(m_conn->worker());
            }
            EXPECT_EQ(UCS_OK, fiatomic_request_check_status(p));
            fiatomic_request_free(p);
            EXPECT_EQ(1, rec.calls) << "completion callback";
            EXPECT_EQ(&rec, rec.user_data) << "msg->context as user_data";
            EXPECT_EQ(UCS_OK, rec.status);
        }
        if (UCS_PTR_IS_PTR(p) && !flags) {
            m_conn->wait(p);
        }
        fiatomic_request_param_t fp;
        memset(&fp, 0, sizeof(fp));
        ASSERT_EQ(UCS_OK, m_conn->wait(fiatomic_ep_flush_nbx(ep, &fp)));
        if (!flags) {
            EXPECT_EQ(0, rec.calls) << "a silent operation called back";
        }
        std::vector<uint8_t> now = read(16384, sizeof(target));
        for (int i = 0; i < 3; ++i) {
            uint64_t t;
            memcpy(&t, &now[i * 8], 8);
            EXPECT_EQ(target[i] + buf[i], t) << i;
            EXPECT_EQ(target[i], res[i]) << i;
        }
    }

    fiatomic_rkey_release(ep, key);
    m_conn->destroy_second_ep(ucp_ep, ep);
}

/* Without selective completion, msg calls report completion whatever the
 * flags; a callback is called once with the user data when a request was
 * returned, never when the call completed at once. */
TEST_P(flags, callback_and_user_data)
{
    for (bool msg_form : {false, true}) {
        alignas(64) uint32_t buf[4] = {1, 2, 3, 4}, res[4];
        uint32_t target[4] = {10, 20, 30, 40};
        cb_record rec;
        fiatomic_request_param_t param;
        ucs_status_ptr_t p;

        SCOPED_TRACE(msg_form ? "msg" : "plain");
        write(20480, target, sizeof(target));
        memset(&param, 0, sizeof(param));
        param.op_attr_mask = FIATOMIC_OP_ATTR_FIELD_CALLBACK |
                             (msg_form ? 0 : FIATOMIC_OP_ATTR_FIELD_USER_DATA);
        param.cb           = record_cb;
        param.user_data    = &rec;
        if (msg_form) {
            struct fi_ioc iov = {buf, 4}, resv = {res, 4};
            struct fi_rma_ioc rma = {addr(20480), 4, m_conn->key(0)};
            struct fi_msg_atomic msg = atomic_msg(&iov, 1, &rma, 1,
                                                  FI_UINT32, FI_MAX, &rec);
            p = fiatomic_fetch_atomicmsg_nbx(m_conn->ep(), &msg, &resv, 1, 0,
                                             &param);
        } else {
            p = fiatomic_fetch_atomic_nbx(m_conn->ep(), buf, 4, res,
                                          addr(20480), m_conn->key(0),
                                          FI_UINT32, FI_MAX, &param);
        }
        ASSERT_FALSE(UCS_PTR_IS_ERR(p));
        if (p == NULL) {
            EXPECT_EQ(0, rec.calls) << "completed at once, yet called back";
        } else {
            double deadline = now_sec() + 30;
            while ((fiatomic_request_check_status(p) == UCS_INPROGRESS) &&
                   (now_sec() < deadline)) {
                ucp_worker_progress(m_conn->worker());
            }
            EXPECT_EQ(UCS_OK, fiatomic_request_check_status(p));
            EXPECT_EQ(1, rec.calls);
            EXPECT_EQ(&rec, rec.user_data);
            fiatomic_request_free(p);
        }
        for (int i = 0; i < 4; ++i) {
            EXPECT_EQ(target[i], res[i]) << i;
        }
        ASSERT_EQ(UCS_OK, m_conn->flush());
        EXPECT_EQ((p == NULL) ? 0 : 1, rec.calls) << "called back again";
    }
}

/* FI_MORE is accepted; the batch completes and is applied */
TEST_P(flags, more)
{
    const int K = 10;
    alignas(64) int16_t buf[K], res[K];
    int16_t target[K], expected[K], fetched[K];
    std::vector<ucs_status_ptr_t> reqs;
    fiatomic_request_param_t more = m_param;

    more.op_attr_mask = FIATOMIC_OP_ATTR_FIELD_FLAGS;
    more.flags        = FI_MORE;
    for (int i = 0; i < K; ++i) {
        target[i] = expected[i] = (int16_t)(i * 1000 - 3000);
        buf[i]    = (int16_t)(7 - i * 3);
        fiatomic_ref_apply(FIATOMIC_REF_FAMILY_FETCH, FI_MIN, FI_INT16,
                           &expected[i], &buf[i], NULL, &fetched[i]);
    }
    write(24576, target, sizeof(target));
    for (int i = 0; i < K; ++i) {
        reqs.push_back(fiatomic_fetch_atomic_nbx(
                m_conn->ep(), &buf[i], 1, &res[i], addr(24576 + 2 * i),
                m_conn->key(0), FI_INT16, FI_MIN,
                (i < K - 1) ? &more : &m_param));
    }
    for (ucs_status_ptr_t p : reqs) {
        EXPECT_EQ(UCS_OK, m_conn->wait(p));
    }
    ASSERT_EQ(UCS_OK, m_conn->flush());
    std::vector<uint8_t> now = read(24576, sizeof(target));
    for (int i = 0; i < K; ++i) {
        int16_t t;
        memcpy(&t, &now[2 * i], 2);
        EXPECT_EQ(expected[i], t) << i;
        EXPECT_EQ(fetched[i], res[i]) << i;
    }
}

/* FI_DELIVERY_COMPLETE: a base operation's completion means the update is
 * visible at the target, without a flush */
TEST_P(flags, delivery_complete)
{
    fiatomic_request_param_t param = m_param;

    param.op_attr_mask = FIATOMIC_OP_ATTR_FIELD_FLAGS;
    param.flags        = FI_DELIVERY_COMPLETE;
    for (int dt : {FI_UINT64, FI_UINT8, FI_FLOAT}) {
        size_t size = dt_size(dt);
        std::vector<value_t> pool = edge_values(dt);
        value_t target = pool[3], operand = pool[5], expected = target;

        SCOPED_TRACE(fiatomic_ref_datatype_name(dt));
        fiatomic_ref_apply(FIATOMIC_REF_FAMILY_BASE, FI_ATOMIC_WRITE, dt,
                           expected.data(), operand.data(), NULL, NULL);
        write(28672, target.data(), size);
        ASSERT_EQ(UCS_OK, m_conn->wait(fiatomic_atomic_nbx(
                                  m_conn->ep(), operand.data(), 1,
                                  addr(28672), m_conn->key(0),
                                  (enum fi_datatype)dt, FI_ATOMIC_WRITE,
                                  &param)));
        std::vector<uint8_t> now = read(28672, size);
        EXPECT_TRUE(fiatomic_ref_bits_equal(dt, expected.data(), now.data()))
                << "not visible at completion: " << fmt(dt, now.data());
    }
}

/* After a flush nothing of earlier operations is still in flight: a value
 * written at the target afterwards stays */
TEST_P(flags, flush_waits_for_everything)
{
    const size_t n = 512;
    abuf buf(n * 2);
    std::vector<uint8_t> target(n * 2, 0x11), fresh(n * 2, 0x77);
    std::vector<ucs_status_ptr_t> reqs;

    for (size_t i = 0; i < n * 2; ++i) {
        buf.data()[i] = (uint8_t)(i | 1);
    }
    write(32768, target.data(), target.size());
    /* 1- and 2-byte elements take the CAS loop (or direct) */
    reqs.push_back(fiatomic_atomic_nbx(m_conn->ep(), buf.data(), n,
                                       addr(32768), m_conn->key(0), FI_UINT8,
                                       FI_PROD, &m_param));
    reqs.push_back(fiatomic_atomic_nbx(m_conn->ep(), buf.data(), n / 2,
                                       addr(32768 + n), m_conn->key(0),
                                       FI_UINT16, FI_SUM, &m_param));
    for (ucs_status_ptr_t p : reqs) {
        EXPECT_EQ(UCS_OK, m_conn->wait(p));
    }
    ASSERT_EQ(UCS_OK, m_conn->flush());
    write(32768, fresh.data(), fresh.size());
    double end = now_sec() + 0.2;
    while (now_sec() < end) {
        ucp_worker_progress(m_conn->worker());
    }
    ASSERT_EQ(UCS_OK, m_conn->flush());
    EXPECT_TRUE(read(32768, fresh.size()) == fresh)
            << "an operation landed after the flush completed";
}

/* A request freed before completion still completes in the background */
TEST_P(flags, request_freed_early)
{
    alignas(64) uint64_t buf[4] = {1, 2, 3, 4}, res[4];
    uint64_t target[4] = {7, 7, 7, 7};

    write(36864, target, sizeof(target));
    ucs_status_ptr_t p = fiatomic_fetch_atomic_nbx(m_conn->ep(), buf, 4, res,
                                                   addr(36864),
                                                   m_conn->key(0), FI_UINT64,
                                                   FI_BXOR, &m_param);
    ASSERT_FALSE(UCS_PTR_IS_ERR(p));
    if (p != NULL) {
        fiatomic_request_free(p);
    }
    ASSERT_EQ(UCS_OK, m_conn->flush());
    std::vector<uint8_t> now = read(36864, sizeof(target));
    for (int i = 0; i < 4; ++i) {
        uint64_t t;
        memcpy(&t, &now[i * 8], 8);
        EXPECT_EQ(target[i] ^ buf[i], t) << i;
    }
}

#define FLAGS_INSTANTIATE(_tl, _mem, _strategy) \
    FIATOMIC_TEST_INSTANTIATE(flags, _tl, _mem, _strategy)
FIATOMIC_TEST_FOR_AUTO_CONFIGS(FLAGS_INSTANTIATE)
FLAGS_INSTANTIATE(posix, user, cas)
FLAGS_INSTANTIATE(tcp, user, cas)

} // namespace
