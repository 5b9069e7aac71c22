/*
 * A context created with FIATOMIC_PARAM_FLAG_NO_ONESIDED on a UCP context
 * with UCP_FEATURE_AM alone (UCP's software RMA and atomics, which the RMA
 * and AMO features register on every active-message lane, reach any
 * address): every cell is served target-side, and its keys steer an
 * initiator whose context has UCP's atomics away from them too (they would
 * never complete there). Three contexts of this process over posix: A (no
 * one-sided), B and C (UCP's RMA and atomics); B is the initiator.
 */
#include <fiatomic.h>

#include <gtest/gtest.h>

#include <stdlib.h>
#include <string.h>

#include <string>

namespace {

struct side {
    ucp_context_h ctx    = NULL;
    ucp_worker_h  worker = NULL;
    fiatomic_h    fia    = NULL;

    /* "" when made, else why not */
    std::string open(bool onesided, const char *tls)
    {
        ucp_params_t params      = {};
        ucp_worker_params_t wp   = {};
        fiatomic_params_t fparams = {};
        ucp_config_t *config;

        if (ucp_config_read(NULL, NULL, &config) != UCS_OK) {
            return "ucp_config_read";
        }
        (void)ucp_config_modify(config, "TLS", tls);
        params.field_mask = UCP_PARAM_FIELD_FEATURES;
        params.features   = UCP_FEATURE_AM;
        if (onesided) {
            params.features |= UCP_FEATURE_RMA | UCP_FEATURE_AMO32 |
                               UCP_FEATURE_AMO64;
        } else {
            fparams.field_mask = FIATOMIC_PARAM_FIELD_FLAGS;
            fparams.flags      = FIATOMIC_PARAM_FLAG_NO_ONESIDED;
        }
        ucs_status_t status = ucp_init(&params, config, &ctx);
        ucp_config_release(config);
        if (status != UCS_OK) {
            return "ucp_init";
        }
        wp.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
        wp.thread_mode = UCS_THREAD_MODE_SINGLE;
        if (ucp_worker_create(ctx, &wp, &worker) != UCS_OK) {
            return "ucp_worker_create";
        }
        if (fiatomic_create(ctx, worker, &fparams, &fia) != UCS_OK) {
            return "fiatomic_create";
        }
        return "";
    }

    void close()
    {
        if (fia != NULL) {
            fiatomic_destroy(fia);
        }
        if (worker != NULL) {
            ucp_worker_destroy(worker);
        }
        if (ctx != NULL) {
            ucp_cleanup(ctx);
        }
    }
};

class no_onesided : public ::testing::TestWithParam<const char*> {
protected:
    void SetUp() override
    {
        /* the automatic choice is what is tested: a strategy another
         * suite's live context forces stays out of these contexts */
        const char *forced = getenv("FIATOMIC_STRATEGY");

        m_forced = (forced != NULL);
        if (m_forced) {
            m_saved_strategy = forced;
            unsetenv("FIATOMIC_STRATEGY");
        }
        std::string why = m_a.open(false, GetParam());
        ASSERT_EQ("", why);
        why = m_b.open(true, GetParam());
        ASSERT_EQ("", why);
        why = m_c.open(true, GetParam());
        ASSERT_EQ("", why);
    }

    void TearDown() override
    {
        for (ucp_ep_h ep : {m_ba, m_bc}) {
            if (ep != NULL) {
                ucs_status_ptr_t r = ucp_ep_close_nb(ep,
                                                     UCP_EP_CLOSE_MODE_FORCE);
                while (UCS_PTR_IS_PTR(r) &&
                       (ucp_request_check_status(r) == UCS_INPROGRESS)) {
                    progress();
                }
                if (UCS_PTR_IS_PTR(r)) {
                    ucp_request_free(r);
                }
            }
        }
        m_c.close();
        m_b.close();
        m_a.close();
        if (m_forced) {
            setenv("FIATOMIC_STRATEGY", m_saved_strategy.c_str(), 1);
        }
    }

    void progress()
    {
        ucp_worker_progress(m_a.worker);
        ucp_worker_progress(m_b.worker);
        ucp_worker_progress(m_c.worker);
    }

    /* an endpoint of B's worker to `to`'s */
    ucp_ep_h connect(side &to)
    {
        ucp_ep_params_t ep_params = {};
        ucp_address_t *addr;
        size_t len;
        ucp_ep_h ep = NULL;

        if (ucp_worker_get_address(to.worker, &addr, &len) != UCS_OK) {
            return NULL;
        }
        ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        ep_params.address    = addr;
        if (ucp_ep_create(m_b.worker, &ep_params, &ep) != UCS_OK) {
            ep = NULL;
        }
        ucp_worker_release_address(to.worker, addr);
        return ep;
    }

    /* the strategy B's endpoint to `to` takes for fetch-add u64 on a
     * region `to` exposes (flags: FIATOMIC_MEM_FLAG_*); runs one fetch-add
     * there and checks its result */
    fiatomic_strategy_t fetch_add_strategy(side &to, ucp_ep_h ucp_ep,
                                           unsigned flags)
    {
        fiatomic_mem_params_t mp = {};
        fiatomic_cell_info_t info = {};
        fiatomic_mem_h mem;
        fiatomic_ep_h ep;
        uint64_t key = 0, one = 1, old = 0, *word;
        size_t key_len;
        void *packed, *region;
        size_t region_len;
        alignas(64) static uint64_t user[8];

        user[0]       = 41;
        mp.field_mask = FIATOMIC_MEM_PARAM_FIELD_LENGTH |
                        FIATOMIC_MEM_PARAM_FIELD_FLAGS;
        mp.length     = sizeof(user);
        mp.flags      = flags;
        if (!(flags & FIATOMIC_MEM_FLAG_ALLOCATE)) {
            mp.field_mask |= FIATOMIC_MEM_PARAM_FIELD_ADDRESS;
            mp.address     = user;
        }
        EXPECT_EQ(UCS_OK, fiatomic_mem_expose(to.fia, &mp, &mem));
        EXPECT_EQ(UCS_OK, fiatomic_mem_query(mem, &region, &region_len));
        word  = (uint64_t*)region;
        *word = 41;
        EXPECT_EQ(UCS_OK, fiatomic_mem_pack_key(mem, &packed, &key_len));
        EXPECT_EQ(UCS_OK, fiatomic_ep_create(m_b.fia, ucp_ep, NULL, &ep));
        EXPECT_EQ(UCS_OK, fiatomic_rkey_unpack(ep, packed, key_len, &key));
        EXPECT_EQ(0, fiatomic_query_cell(ep, key, FIATOMIC_FAMILY_FETCH,
                                         FI_UINT64, FI_SUM, &info));

        ucs_status_ptr_t req = fiatomic_fetch_atomic_nbx(
                ep, &one, 1, &old, (uint64_t)(uintptr_t)region, key,
                FI_UINT64, FI_SUM, NULL);
        EXPECT_FALSE(UCS_PTR_IS_ERR(req));
        for (int i = 0; UCS_PTR_IS_PTR(req) && (i < 10000000); ++i) {
            progress();
            if (fiatomic_request_check_status(req) != UCS_INPROGRESS) {
                break;
            }
        }
        if (UCS_PTR_IS_PTR(req)) {
            EXPECT_EQ(UCS_OK, fiatomic_request_check_status(req));
            fiatomic_request_free(req);
        }
        EXPECT_EQ(41u, old);
        EXPECT_EQ(42u, *word);

        fiatomic_rkey_release(ep, key);
        fiatomic_ep_destroy(ep);
        fiatomic_key_release(packed);
        fiatomic_mem_unexpose(mem);
        return info.strategy;
    }

    bool        m_forced = false;
    std::string m_saved_strategy;
    side     m_a, m_b, m_c;
    ucp_ep_h m_ba = NULL, m_bc = NULL;
};

/* The steering: the same cell, the same transport and kind of memory; only
 * the exposing context's features differ. */
TEST_P(no_onesided, keys_steer_initiators_to_the_target)
{
    const bool posix = !strcmp(GetParam(), "posix");

    m_ba = connect(m_a);
    m_bc = connect(m_c);
    ASSERT_TRUE((m_ba != NULL) && (m_bc != NULL));

    /* the positive control: C's memory is reached with UCP's atomics
     * (in place where the transport maps UCP-allocated memory) */
    EXPECT_EQ(FIATOMIC_STRATEGY_NATIVE, fetch_add_strategy(m_c, m_bc, 0));
    EXPECT_EQ(posix ? FIATOMIC_STRATEGY_DIRECT : FIATOMIC_STRATEGY_NATIVE,
              fetch_add_strategy(m_c, m_bc, FIATOMIC_MEM_FLAG_ALLOCATE));
    /* A's is served by A's checked target side */
    EXPECT_EQ(FIATOMIC_STRATEGY_TARGET, fetch_add_strategy(m_a, m_ba, 0));
    /* A's shared memory: CPU atomics through the mapping (no UCP
     * feature needed); where nothing maps it, its key says: target */
    EXPECT_EQ(posix ? FIATOMIC_STRATEGY_DIRECT : FIATOMIC_STRATEGY_TARGET,
              fetch_add_strategy(m_a, m_ba, FIATOMIC_MEM_FLAG_ALLOCATE));
}

/* The context query of a context without one-sided features reports the
 * cells the target side serves: all of them, 32-byte ones included. */
TEST_P(no_onesided, every_cell_is_supported)
{
    size_t count = 0;

    EXPECT_EQ(0, fiatomic_fetch_atomicvalid(m_a.fia, FI_UINT64, FI_SUM,
                                            &count));
    EXPECT_EQ(0, fiatomic_compare_atomicvalid(m_a.fia, FI_UINT64, FI_CSWAP,
                                              &count));
    EXPECT_EQ(0, fiatomic_compare_atomicvalid(m_a.fia,
                                              FI_LONG_DOUBLE_COMPLEX,
                                              FI_CSWAP, &count));
}

TEST_P(no_onesided, unknown_flags_are_refused)
{
    fiatomic_params_t p = {};
    fiatomic_h fia      = NULL;

    p.field_mask = FIATOMIC_PARAM_FIELD_FLAGS;
    p.flags      = 2;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              fiatomic_create(m_a.ctx, m_a.worker, &p, &fia));
}

} // namespace

INSTANTIATE_TEST_SUITE_P(tl, no_onesided, ::testing::Values("posix", "tcp"));
