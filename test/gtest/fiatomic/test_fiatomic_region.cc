/**
 * The region table of the target side (fiatomic_target.h): a region is
 * named by its handle (slot index and generation, checked by the shared
 * handle table) and its token (64 random bits). A handle of memory since
 * unexposed names nothing even once its slot holds new memory, whatever
 * token comes with it; a forged generation names nothing; a token of
 * another region (or of the slot's earlier region) opens nothing. The wire
 * tests (hostile_wire.stale_handle_after_reexpose) check the same through
 * a target process.
 */
#include <gtest/gtest.h>

extern "C" {
#include "fiatomic_target.h"
}

#include <set>

namespace {

class region_table : public ::testing::Test {
protected:
    void SetUp() override
    {
        fiatomic_regions_init(&m_regions, m_own_locks, 1000000000ull);
        m_a = region_of(m_mem_a, sizeof(m_mem_a), &m_owner_a);
        m_b = region_of(m_mem_b, sizeof(m_mem_b), &m_owner_b);
    }

    void TearDown() override { fiatomic_regions_cleanup(&m_regions); }

    /* an owner is only compared, never read: any distinct address */
    static fiatomic_region_t region_of(uint8_t *buf, size_t length,
                                       int *owner)
    {
        fiatomic_region_t region = {};

        region.address = buf;
        region.length  = length;
        region.mem     = reinterpret_cast<fiatomic_mem_h>(owner);
        return region;
    }

    const fiatomic_region_t *lookup(uint64_t handle, uint64_t token) const
    {
        return fiatomic_region_lookup(&m_regions, handle, token);
    }

    static uint32_t index_of(uint64_t handle) { return (uint32_t)handle; }

    fiatomic_regions_t m_regions;
    uint64_t           m_own_locks[FIATOMIC_WIDE_LOCKS] = {};
    alignas(64) uint8_t m_mem_a[256] = {};
    alignas(64) uint8_t m_mem_b[256] = {};
    int                m_owner_a = 0, m_owner_b = 0;
    fiatomic_region_t  m_a, m_b;
};

TEST_F(region_table, live_region_by_handle_and_token)
{
    ASSERT_EQ(UCS_OK, fiatomic_region_add(&m_regions, &m_a));
    ASSERT_EQ(UCS_OK, fiatomic_region_add(&m_regions, &m_b));
    EXPECT_NE(0u, m_a.handle);
    EXPECT_NE(0u, m_a.token);
    EXPECT_NE(index_of(m_a.handle), index_of(m_b.handle));
    EXPECT_NE(m_a.token, m_b.token);

    EXPECT_EQ(&m_a, lookup(m_a.handle, m_a.token));
    EXPECT_EQ(&m_b, lookup(m_b.handle, m_b.token));
    EXPECT_EQ(nullptr, lookup(m_a.handle, m_b.token)) << "another's token";
    EXPECT_EQ(nullptr, lookup(m_b.handle, m_a.token)) << "another's token";
    EXPECT_EQ(nullptr, lookup(m_a.handle, m_a.token ^ 1)) << "near miss";
    EXPECT_EQ(nullptr, lookup(m_a.handle, 0)) << "no token";
    EXPECT_EQ(nullptr, lookup(0, m_a.token)) << "handle 0";
    EXPECT_EQ(nullptr, lookup(m_b.handle + 1000, m_b.token))
            << "an index beyond the table";
    EXPECT_EQ(nullptr, lookup(m_a.handle & ~0xffffffffull, m_a.token))
            << "index part 0";

    /* a key is this context's own only with exactly its range */
    EXPECT_EQ(m_a.mem, fiatomic_region_find(&m_regions, m_a.handle, m_a.token,
                                            (uintptr_t)m_mem_a,
                                            sizeof(m_mem_a)));
    EXPECT_EQ(nullptr, fiatomic_region_find(&m_regions, m_a.handle,
                                            m_a.token, (uintptr_t)m_mem_a + 8,
                                            sizeof(m_mem_a) - 8));
    EXPECT_EQ(nullptr, fiatomic_region_find(&m_regions, m_a.handle,
                                            m_a.token, (uintptr_t)m_mem_a,
                                            sizeof(m_mem_a) + 8));
    EXPECT_EQ(nullptr, fiatomic_region_find(&m_regions, m_a.handle,
                                            m_b.token, (uintptr_t)m_mem_a,
                                            sizeof(m_mem_a)));
    fiatomic_region_remove(&m_regions, &m_a);
    fiatomic_region_remove(&m_regions, &m_b);
}

TEST_F(region_table, stale_handle_after_remove)
{
    ASSERT_EQ(UCS_OK, fiatomic_region_add(&m_regions, &m_a));
    uint64_t handle = m_a.handle, token = m_a.token;

    fiatomic_region_remove(&m_regions, &m_a);
    EXPECT_EQ(0u, m_a.handle);
    EXPECT_EQ(nullptr, lookup(handle, token));
    EXPECT_EQ(nullptr, fiatomic_region_find(&m_regions, handle, token,
                                            (uintptr_t)m_mem_a,
                                            sizeof(m_mem_a)));
}

/* New memory in the slot of unexposed memory (at the same address, as an
 * allocator gives it back): only the new handle with the new token opens
 * it. The old handle with the new token is what the generation alone
 * refuses. */
TEST_F(region_table, reused_slot_refuses_the_old_handle)
{
    ASSERT_EQ(UCS_OK, fiatomic_region_add(&m_regions, &m_a));
    uint64_t old_handle = m_a.handle, old_token = m_a.token;
    fiatomic_region_remove(&m_regions, &m_a);

    fiatomic_region_t again = region_of(m_mem_a, sizeof(m_mem_a), &m_owner_b);
    ASSERT_EQ(UCS_OK, fiatomic_region_add(&m_regions, &again));
    ASSERT_EQ(index_of(old_handle), index_of(again.handle))
            << "the slot is expected to be reused";
    EXPECT_NE(old_handle, again.handle);
    EXPECT_NE(old_token, again.token);

    EXPECT_EQ(nullptr, lookup(old_handle, old_token)) << "the stale key";
    EXPECT_EQ(nullptr, lookup(old_handle, again.token))
            << "the stale handle with the live token";
    EXPECT_EQ(nullptr, lookup(again.handle, old_token))
            << "the live handle with the stale token";
    EXPECT_EQ(nullptr, fiatomic_region_find(&m_regions, old_handle,
                                            again.token, (uintptr_t)m_mem_a,
                                            sizeof(m_mem_a)));
    EXPECT_EQ(&again, lookup(again.handle, again.token));
    EXPECT_EQ(again.mem, fiatomic_region_find(&m_regions, again.handle,
                                              again.token, (uintptr_t)m_mem_a,
                                              sizeof(m_mem_a)));
    fiatomic_region_remove(&m_regions, &again);
}

/* The live region's index and token with any other generation: refused,
 * before and after the slot was reused many times. */
TEST_F(region_table, forged_generation)
{
    const uint64_t deltas[] = {1, 2, 0x7fffffff, 0x80000000, 0xffffffff};

    for (int round = 0; round < 20; ++round) {
        ASSERT_EQ(UCS_OK, fiatomic_region_add(&m_regions, &m_a));
        ASSERT_EQ(&m_a, lookup(m_a.handle, m_a.token));
        for (uint64_t delta : deltas) {
            uint64_t forged = m_a.handle + (delta << 32); /* wraps mod 2^64 */
            ASSERT_EQ(index_of(m_a.handle), index_of(forged));
            EXPECT_EQ(nullptr, lookup(forged, m_a.token))
                    << "round " << round << ", generation + " << delta;
        }
        fiatomic_region_remove(&m_regions, &m_a);
    }
}

/* Every exposure draws its own token, never 0. */
TEST_F(region_table, token_per_exposure)
{
    std::set<uint64_t> tokens;
    std::set<uint64_t> handles;

    for (int i = 0; i < 100; ++i) {
        ASSERT_EQ(UCS_OK, fiatomic_region_add(&m_regions, &m_a));
        EXPECT_NE(0u, m_a.token);
        tokens.insert(m_a.token);
        handles.insert(m_a.handle);
        fiatomic_region_remove(&m_regions, &m_a);
    }
    EXPECT_EQ(100u, tokens.size()) << "a token repeated";
    EXPECT_EQ(100u, handles.size()) << "a handle repeated";
}

} // namespace
