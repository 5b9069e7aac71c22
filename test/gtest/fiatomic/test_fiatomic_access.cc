/*
 * Access as exposed: memory exposed with FIATOMIC_MEM_FLAG_NO_REMOTE_READ
 * and/or NO_REMOTE_WRITE. An operation reads when it returns data (fetch
 * and compare families) and writes when it may update the target (every op
 * but FI_ATOMIC_READ). One needing an access the memory lacks is refused
 * with UCS_ERR_REJECTED and changes nothing:
 *  - by the initiator, from the packed key, before anything is sent;
 *  - by the target, for a raw request carrying the region's token, and for
 *    a key whose restriction a peer stripped;
 *  - by a context on memory it exposed itself (executed in place).
 * Every case has its positive control: the same operation on memory that
 * grants the access succeeds and changes the memory as a reference says.
 *
 * Target and initiator are two contexts of this process, on two workers
 * over the transport under test, both progressed by the test.
 */
#include "fiatomic_test_env.h"
#include "fiatomic_test_raw.h"

extern "C" {
#include "fiatomic_wire.h"
}

#include <string>
#include <vector>

using namespace fiatomic_test;

namespace {

const uint64_t INITIAL = 40;
const uint64_t OPERAND = 2;

/* the exposures under test, by what they deny */
struct exposure {
    const char *name;
    unsigned   flags;
};

const exposure EXPOSURES[] = {
    {"full", 0},
    {"read_only", FIATOMIC_MEM_FLAG_NO_REMOTE_WRITE},
    {"write_only", FIATOMIC_MEM_FLAG_NO_REMOTE_READ},
    {"no_access", FIATOMIC_MEM_FLAG_NO_REMOTE_READ |
                  FIATOMIC_MEM_FLAG_NO_REMOTE_WRITE}
};

/* one operation of each kind, on one u64 element */
struct operation {
    const char        *name;
    fiatomic_family_t family;
    enum fi_op        op;
    bool              reads;
    bool              writes;
    uint64_t          after;   /* the element after it, from INITIAL */
    uint64_t          result;  /* what it returns (reading ones) */
};

const operation OPERATIONS[] = {
    {"atomic_sum", FIATOMIC_FAMILY_BASE, FI_SUM, false, true,
     INITIAL + OPERAND, 0},
    {"fetch_sum", FIATOMIC_FAMILY_FETCH, FI_SUM, true, true,
     INITIAL + OPERAND, INITIAL},
    {"fetch_atomic_read", FIATOMIC_FAMILY_FETCH, FI_ATOMIC_READ, true, false,
     INITIAL, INITIAL},
    {"compare_cswap", FIATOMIC_FAMILY_COMPARE, FI_CSWAP, true, true,
     OPERAND, INITIAL}
};

bool allowed(const exposure &e, const operation &o)
{
    return !((o.reads && (e.flags & FIATOMIC_MEM_FLAG_NO_REMOTE_READ)) ||
             (o.writes && (e.flags & FIATOMIC_MEM_FLAG_NO_REMOTE_WRITE)));
}

std::string label(const exposure &e, const operation &o)
{
    return std::string(o.name) + " on " + e.name + " memory";
}

class mem_access : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override
    {
        std::string missing = transport_missing(GetParam()), error;
        ucp_address_t *address;
        size_t address_length;
        ucp_ep_params_t ep_params;
        ucs_status_t status;

        if (!missing.empty()) {
            GTEST_SKIP() << missing;
        }
        const std::string tls = GetParam() + ",self";
        ASSERT_EQ(UCS_OK, ucp_setup_create({{"TLS", tls}}, NULL, true,
                                           &m_tgt, &error)) << error;
        ASSERT_EQ(UCS_OK, ucp_setup_create({{"TLS", tls}}, NULL, true,
                                           &m_init, &error)) << error;
        ASSERT_EQ(UCS_OK, ucp_worker_get_address(m_tgt.worker, &address,
                                                 &address_length));
        m_tgt_address.assign((uint8_t*)address,
                             (uint8_t*)address + address_length);
        memset(&ep_params, 0, sizeof(ep_params));
        ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        ep_params.address    = address;
        status = ucp_ep_create(m_init.worker, &ep_params, &m_ucp_ep);
        if (status == UCS_OK) {
            /* the target's own endpoint to itself, for its own keys */
            status = ucp_ep_create(m_tgt.worker, &ep_params, &m_self_ucp_ep);
        }
        ucp_worker_release_address(m_tgt.worker, address);
        ASSERT_EQ(UCS_OK, status);
        ASSERT_EQ(UCS_OK, fiatomic_ep_create(m_init.fia, m_ucp_ep, NULL,
                                             &m_ep));
        ASSERT_EQ(UCS_OK, fiatomic_ep_create(m_tgt.fia, m_self_ucp_ep, NULL,
                                             &m_self_ep));
        for (size_t i = 0; i < ucs_static_array_size(EXPOSURES); ++i) {
            ASSERT_NO_FATAL_FAILURE(expose(i));
        }
    }

    void TearDown() override
    {
        if (m_ep != NULL) {
            wait(m_init.worker, fiatomic_ep_flush_nbx(m_ep, NULL));
            fiatomic_ep_destroy(m_ep);
        }
        if (m_self_ep != NULL) {
            wait(m_tgt.worker, fiatomic_ep_flush_nbx(m_self_ep, NULL));
            fiatomic_ep_destroy(m_self_ep);
        }
        for (fiatomic_mem_h mem : m_mems) {
            if (mem != NULL) {
                fiatomic_mem_unexpose(mem);
            }
        }
        close(m_init.worker, m_ucp_ep);
        close(m_tgt.worker, m_self_ucp_ep);
        ucp_setup_destroy(&m_init);
        ucp_setup_destroy(&m_tgt);
    }

    /* close an endpoint, flushed, progressing both workers (bounded) */
    void close(ucp_worker_h worker, ucp_ep_h ep)
    {
        ucp_request_param_t param;
        ucs_status_ptr_t sptr;
        double deadline = now_sec() + 10.0;

        if (ep == NULL) {
            return;
        }
        memset(&param, 0, sizeof(param));
        sptr = ucp_ep_close_nbx(ep, &param);
        if (!UCS_PTR_IS_PTR(sptr)) {
            return;
        }
        while (ucp_request_check_status(sptr) == UCS_INPROGRESS) {
            ucp_worker_progress(worker);
            ucp_worker_progress(m_tgt.worker);
            if (now_sec() > deadline) {
                ADD_FAILURE() << "endpoint close did not complete";
                break;
            }
        }
        ucp_request_free(sptr);
    }

    void expose(size_t i)
    {
        fiatomic_mem_params_t params;
        fiatomic_mem_h mem;
        void *key;
        size_t key_size;

        memset(&params, 0, sizeof(params));
        params.field_mask = FIATOMIC_MEM_PARAM_FIELD_ADDRESS |
                            FIATOMIC_MEM_PARAM_FIELD_LENGTH |
                            FIATOMIC_MEM_PARAM_FIELD_FLAGS;
        params.address    = &m_words[i];
        params.length     = sizeof(m_words[i]);
        params.flags      = EXPOSURES[i].flags;
        ASSERT_EQ(UCS_OK, fiatomic_mem_expose(m_tgt.fia, &params, &mem));
        m_mems.push_back(mem);
        ASSERT_EQ(UCS_OK, fiatomic_mem_pack_key(mem, &key, &key_size));
        m_packed[i].assign((uint8_t*)key, (uint8_t*)key + key_size);
        fiatomic_key_release(key);
        memcpy(&m_hdr[i], m_packed[i].data(), sizeof(m_hdr[i]));
    }

    /* progress both workers until the request completes */
    ucs_status_t wait(ucp_worker_h worker, ucs_status_ptr_t sptr)
    {
        double deadline = now_sec() + 20.0;
        ucs_status_t status;

        for (;;) {
            ucp_worker_progress(m_tgt.worker);
            status = poll_request(worker, sptr, now_sec());
            if (status != UCS_INPROGRESS) {
                return status;
            } else if (now_sec() > deadline) {
                fiatomic_request_free(sptr);
                return UCS_ERR_TIMED_OUT;
            }
        }
    }

    /* post `o` on element i through the API on `ep` with `key`; its
     * immediate status (an error pointer: refused before anything was
     * sent) and its final status */
    ucs_status_t post(fiatomic_ep_h ep, ucp_worker_h worker, uint64_t key,
                      size_t i, const operation &o, uint64_t *result,
                      bool *immediate)
    {
        uint64_t operand = OPERAND, compare = INITIAL;
        uint64_t addr    = (uintptr_t)&m_words[i];
        fiatomic_request_param_t param;
        ucs_status_ptr_t sptr;

        /* complete once done at the target: the test reads it then */
        memset(&param, 0, sizeof(param));
        param.op_attr_mask = FIATOMIC_OP_ATTR_FIELD_FLAGS;
        param.flags        = FI_DELIVERY_COMPLETE;

        switch (o.family) {
        case FIATOMIC_FAMILY_BASE:
            sptr = fiatomic_atomic_nbx(ep, &operand, 1, addr, key,
                                       FI_UINT64, o.op, &param);
            break;
        case FIATOMIC_FAMILY_FETCH:
            sptr = fiatomic_fetch_atomic_nbx(ep, &operand, 1, result, addr,
                                             key, FI_UINT64, o.op, &param);
            break;
        default:
            sptr = fiatomic_compare_atomic_nbx(ep, &operand, 1, &compare,
                                               result, addr, key, FI_UINT64,
                                               o.op, &param);
            break;
        }
        *immediate = UCS_PTR_IS_ERR(sptr);
        return wait(worker, sptr);
    }

    /* a raw target-side request for `o` on element i, with the region's
     * handle and token; the reply's status and fetched value */
    ucs_status_t raw(raw_client &client, size_t i, const operation &o,
                     uint64_t *result)
    {
        uint64_t operands[2] = {OPERAND, INITIAL};
        size_t length        = 0;
        fiatomic_wire_reply_t reply;
        fiatomic_wire_req_t req;
        ucs_status_ptr_t sptr;
        unsigned before = client.replies();
        double deadline = now_sec() + 20.0;

        req        = wire_fetch_sum(FI_UINT64, 1, m_hdr[i].region,
                                    m_hdr[i].token, m_hdr[i].address, 0x5a);
        req.family = o.family;
        req.op     = o.op;
        if (o.op != FI_ATOMIC_READ) {
            length += sizeof(uint64_t);
        }
        if (o.family == FIATOMIC_FAMILY_COMPARE) {
            length += sizeof(uint64_t);
        }
        std::vector<uint8_t> msg = wire_message(req, operands, length);

        sptr = client.send(msg.data(), msg.size(), UCP_AM_SEND_FLAG_REPLY);
        if (UCS_PTR_IS_ERR(sptr)) {
            return UCS_PTR_STATUS(sptr);
        }
        while ((client.replies() == before) ||
               (UCS_PTR_IS_PTR(sptr) &&
                (ucp_request_check_status(sptr) == UCS_INPROGRESS))) {
            client.progress();
            ucp_worker_progress(m_tgt.worker);
            if (now_sec() > deadline) {
                ADD_FAILURE() << "no reply to " << o.name;
                break;
            }
        }
        if (UCS_PTR_IS_PTR(sptr)) {
            ucp_request_free(sptr);
        }
        const std::vector<uint8_t> &last = client.last_reply();
        if (last.size() < sizeof(reply)) {
            return UCS_ERR_IO_ERROR;
        }
        memcpy(&reply, last.data(), sizeof(reply));
        if ((reply.status == UCS_OK) && (reply.count == 1) &&
            (last.size() == sizeof(reply) + sizeof(*result))) {
            memcpy(result, last.data() + sizeof(reply), sizeof(*result));
        }
        return (ucs_status_t)reply.status;
    }

    /* each operation on each exposure, as `run` executes it: refused with
     * UCS_ERR_REJECTED and nothing changed where the memory lacks the
     * access, else done as the reference says */
    template <typename F>
    void check_all(const char *how, F run)
    {
        for (size_t i = 0; i < ucs_static_array_size(EXPOSURES); ++i) {
            for (const operation &o : OPERATIONS) {
                uint64_t result = 0;

                m_words[i][0] = INITIAL;
                ucs_status_t status = run(i, o, &result);
                SCOPED_TRACE(label(EXPOSURES[i], o) + " " + how);
                if (allowed(EXPOSURES[i], o)) {
                    EXPECT_EQ(UCS_OK, status) << ucs_status_string(status);
                    EXPECT_EQ(o.after, m_words[i][0]);
                    if (o.reads) {
                        EXPECT_EQ(o.result, result);
                    }
                } else {
                    EXPECT_EQ(UCS_ERR_REJECTED, status)
                            << ucs_status_string(status);
                    EXPECT_EQ(INITIAL, m_words[i][0]) << "refused, yet changed";
                    EXPECT_EQ(0u, result) << "refused, yet returned data";
                }
            }
        }
    }

    uint64_t unpack(fiatomic_ep_h ep, const std::vector<uint8_t> &packed)
    {
        uint64_t key = 0;

        EXPECT_EQ(UCS_OK, fiatomic_rkey_unpack(ep, packed.data(),
                                               packed.size(), &key));
        return key;
    }

    static const size_t N = ucs_static_array_size(EXPOSURES);

    ucp_setup                    m_tgt  = {};
    ucp_setup                    m_init = {};
    ucp_ep_h                     m_ucp_ep      = NULL;
    ucp_ep_h                     m_self_ucp_ep = NULL;
    fiatomic_ep_h                m_ep          = NULL;
    fiatomic_ep_h                m_self_ep     = NULL;
    std::vector<uint8_t>         m_tgt_address;
    std::vector<fiatomic_mem_h>  m_mems;
    std::vector<uint8_t>         m_packed[N];
    fiatomic_key_hdr_t           m_hdr[N];
    alignas(64) uint64_t         m_words[N][8] = {};
};

/* The key of restricted memory says so and carries no UCP rkey (which would
 * let a peer write or read it with UCP's RMA and atomics); full access
 * keeps its rkey. */
TEST_P(mem_access, key_carries_access_and_no_rkey)
{
    for (size_t i = 0; i < N; ++i) {
        SCOPED_TRACE(EXPOSURES[i].name);
        const bool restricted = (EXPOSURES[i].flags != 0);

        EXPECT_EQ(restricted,
                  (m_hdr[i].flags & FIATOMIC_KEY_F_NO_RKEY) != 0);
        EXPECT_EQ(restricted, m_hdr[i].rkey_size == 0);
        EXPECT_EQ((EXPOSURES[i].flags & FIATOMIC_MEM_FLAG_NO_REMOTE_READ) != 0,
                  (m_hdr[i].flags & FIATOMIC_KEY_F_NO_READ) != 0);
        EXPECT_EQ((EXPOSURES[i].flags & FIATOMIC_MEM_FLAG_NO_REMOTE_WRITE) !=
                  0, (m_hdr[i].flags & FIATOMIC_KEY_F_NO_WRITE) != 0);
    }
}

/* The initiator refuses from the key, before anything is sent (an error
 * pointer at the call). */
TEST_P(mem_access, initiator_refuses)
{
    uint64_t keys[N];

    for (size_t i = 0; i < N; ++i) {
        keys[i] = unpack(m_ep, m_packed[i]);
    }
    check_all("through the API", [&](size_t i, const operation &o,
                                     uint64_t *result) {
        bool immediate;
        ucs_status_t status = post(m_ep, m_init.worker, keys[i], i, o,
                                   result, &immediate);
        EXPECT_EQ(status == UCS_ERR_REJECTED, immediate)
                << "refused after it was sent, or failed at the call";
        return status;
    });
}

/* A raw request with the region's handle and token, as a peer that skips
 * the initiator's check sends it: the target refuses. */
TEST_P(mem_access, target_refuses_raw_request)
{
    raw_client client;
    std::string error;

    ASSERT_TRUE(client.start(GetParam(), m_tgt_address, &error)) << error;
    check_all("as a raw request", [&](size_t i, const operation &o,
                                      uint64_t *result) {
        return raw(client, i, o, result);
    });
}

/* A key whose restriction flags a peer cleared: the initiator lets the
 * operation through, the target refuses it. */
TEST_P(mem_access, target_refuses_stripped_key)
{
    uint64_t keys[N];

    for (size_t i = 0; i < N; ++i) {
        std::vector<uint8_t> packed = m_packed[i];
        fiatomic_key_hdr_t hdr;

        memcpy(&hdr, packed.data(), sizeof(hdr));
        hdr.flags &= ~(uint32_t)FIATOMIC_KEY_F_DENY;
        memcpy(packed.data(), &hdr, sizeof(hdr));
        keys[i] = unpack(m_ep, packed);
    }
    check_all("with a stripped key", [&](size_t i, const operation &o,
                                         uint64_t *result) {
        bool immediate;
        ucs_status_t status = post(m_ep, m_init.worker, keys[i], i, o,
                                   result, &immediate);
        EXPECT_FALSE(immediate) << "the stripped key still refused at once";
        return status;
    });
}

/* The exposing context itself, on its own keys (executed in place): the
 * same refusals. */
TEST_P(mem_access, own_context_refuses)
{
    uint64_t keys[N];

    for (size_t i = 0; i < N; ++i) {
        keys[i] = unpack(m_self_ep, m_packed[i]);
    }
    check_all("on its own context", [&](size_t i, const operation &o,
                                        uint64_t *result) {
        bool immediate;
        return post(m_self_ep, m_tgt.worker, keys[i], i, o, result,
                    &immediate);
    });
}

/* A forged key: restriction flags with a UCP rkey is no key this library
 * packs. */
TEST_P(mem_access, restricted_key_with_rkey_refused)
{
    std::vector<uint8_t> packed = m_packed[0]; /* full access: an rkey */
    fiatomic_key_hdr_t hdr;
    uint64_t key;

    memcpy(&hdr, packed.data(), sizeof(hdr));
    ASSERT_NE(0u, hdr.rkey_size);
    hdr.flags |= FIATOMIC_KEY_F_NO_WRITE;
    memcpy(packed.data(), &hdr, sizeof(hdr));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              fiatomic_rkey_unpack(m_ep, packed.data(), packed.size(), &key));
}

INSTANTIATE_TEST_SUITE_P(tl, mem_access, ::testing::Values("tcp", "posix"),
                         [](const ::testing::TestParamInfo<std::string> &i) {
                             return i.param;
                         });

} // namespace
