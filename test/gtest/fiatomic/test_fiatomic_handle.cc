/**
 * The shared small containers of libfiatomic (fiatomic_handle.h): the
 * generation-checked handle table that names keys, target-side messages and
 * regions, the capped free list of the context's caches and the capped
 * least-recently-used list of the target's idle peers, against plain
 * models.
 */
#include <gtest/gtest.h>

extern "C" {
#include "fiatomic_handle.h"
}

#include <list>
#include <map>
#include <random>
#include <vector>

namespace {

struct handle_table : public ::testing::Test {
    fiatomic_handle_table_t table;
    int objs[64];

    void SetUp() override { fiatomic_handle_table_init(&table, 64); }
    void TearDown() override { fiatomic_handle_table_cleanup(&table); }

    uint64_t add(void *obj) {
        uint64_t handle = 0;
        EXPECT_EQ(UCS_OK, fiatomic_handle_add(&table, obj, &handle, NULL));
        return handle;
    }
};

TEST_F(handle_table, zero_and_out_of_range_name_nothing) {
    uint64_t handle = add(&objs[0]);

    EXPECT_EQ(&objs[0], fiatomic_handle_get(&table, handle));
    EXPECT_EQ(nullptr, fiatomic_handle_get(&table, 0));
    EXPECT_EQ(nullptr, fiatomic_handle_get(&table, handle & ~0xffffffffull));
    EXPECT_EQ(nullptr, fiatomic_handle_get(&table, handle + 1000));
    EXPECT_EQ(nullptr, fiatomic_handle_get(&table, 0xffffffffull));
    EXPECT_EQ(nullptr, fiatomic_handle_get(&table, handle ^ (1ull << 32)));
    EXPECT_EQ(nullptr, fiatomic_handle_remove(&table, 0));
}

TEST_F(handle_table, removed_handle_is_refused_after_reuse) {
    uint64_t first = add(&objs[0]), second;

    EXPECT_EQ(&objs[0], fiatomic_handle_remove(&table, first));
    EXPECT_EQ(nullptr, fiatomic_handle_get(&table, first));
    EXPECT_EQ(nullptr, fiatomic_handle_remove(&table, first)); /* twice */

    second = add(&objs[1]); /* the same slot, the next generation */
    EXPECT_EQ(first & 0xffffffffull, second & 0xffffffffull);
    EXPECT_NE(first, second);
    EXPECT_EQ(nullptr, fiatomic_handle_get(&table, first));
    EXPECT_EQ(nullptr, fiatomic_handle_remove(&table, first));
    EXPECT_EQ(&objs[1], fiatomic_handle_get(&table, second));
}

/* Unique tables (endpoints' keys): no handle of one names an object of
 * another, even at the same index, nor once its own table was freed and a
 * new one took its place; a removed handle stays refused. */
TEST_F(handle_table, unique_tables_refuse_each_others_handles) {
    fiatomic_handle_table_t a, b, c;
    uint64_t ha[4], hb[4], hc, first;
    int i, j;

    fiatomic_handle_table_init_unique(&a, 16);
    fiatomic_handle_table_init_unique(&b, 16);
    for (i = 0; i < 4; ++i) {
        ASSERT_EQ(UCS_OK, fiatomic_handle_add(&a, &objs[i], &ha[i], NULL));
        ASSERT_EQ(UCS_OK, fiatomic_handle_add(&b, &objs[8 + i], &hb[i],
                                              NULL));
        /* the same slot in both: only the generation tells them apart */
        EXPECT_EQ(ha[i] & 0xffffffffull, hb[i] & 0xffffffffull);
    }
    for (i = 0; i < 4; ++i) {
        EXPECT_EQ(&objs[i], fiatomic_handle_get(&a, ha[i]));
        EXPECT_EQ(&objs[8 + i], fiatomic_handle_get(&b, hb[i]));
        for (j = 0; j < 4; ++j) {
            EXPECT_EQ(nullptr, fiatomic_handle_get(&a, hb[j])) << i << j;
            EXPECT_EQ(nullptr, fiatomic_handle_get(&b, ha[j])) << i << j;
        }
    }

    /* a's first handle removed, its slot reused: refused */
    first = ha[0];
    EXPECT_EQ(&objs[0], fiatomic_handle_remove(&a, first));
    ASSERT_EQ(UCS_OK, fiatomic_handle_add(&a, &objs[4], &ha[0], NULL));
    EXPECT_EQ(first & 0xffffffffull, ha[0] & 0xffffffffull);
    EXPECT_EQ(nullptr, fiatomic_handle_get(&a, first));

    /* a freed, a new table in its place: none of a's handles names its
     * object */
    fiatomic_handle_table_cleanup(&a);
    fiatomic_handle_table_init_unique(&c, 16);
    ASSERT_EQ(UCS_OK, fiatomic_handle_add(&c, &objs[5], &hc, NULL));
    for (j = 0; j < 4; ++j) {
        EXPECT_EQ(nullptr, fiatomic_handle_get(&c, ha[j]));
        EXPECT_NE(ha[j], hc);
    }
    EXPECT_EQ(&objs[5], fiatomic_handle_get(&c, hc));
    fiatomic_handle_table_cleanup(&b);
    fiatomic_handle_table_cleanup(&c);
}

/* A plain table counts generations per slot, as before: its first handle
 * is slot 1 of generation 0 whatever the unique tables did. */
TEST_F(handle_table, plain_tables_count_per_slot) {
    EXPECT_EQ(1ull, add(&objs[0]));
}

TEST_F(handle_table, cap_is_kept) {
    fiatomic_handle_table_t small;
    uint64_t handles[3], handle;
    uint32_t index;
    int i;

    fiatomic_handle_table_init(&small, 3);
    for (i = 0; i < 3; ++i) {
        ASSERT_EQ(UCS_OK, fiatomic_handle_add(&small, &objs[i], &handles[i],
                                              &index));
        EXPECT_EQ((uint32_t)i, index);
        EXPECT_EQ(handles[i], fiatomic_handle_of(&small, index));
    }
    EXPECT_EQ(UCS_ERR_EXCEEDS_LIMIT,
              fiatomic_handle_add(&small, &objs[3], &handle, NULL));
    EXPECT_LE(small.size, 3u);

    EXPECT_EQ(&objs[1], fiatomic_handle_remove(&small, handles[1]));
    ASSERT_EQ(UCS_OK, fiatomic_handle_add(&small, &objs[3], &handle, &index));
    EXPECT_EQ(1u, index);
    EXPECT_EQ(&objs[3], fiatomic_handle_at(&small, 1));
    EXPECT_EQ(nullptr, fiatomic_handle_at(&small, 3));
    fiatomic_handle_table_cleanup(&small);
}

/* Random adds and removes against a map of live handles: every live handle
 * names its object, every dead one nothing. */
TEST_F(handle_table, random_against_model) {
    std::mt19937_64 rng(7);
    std::map<uint64_t, void*> live;
    std::vector<uint64_t> dead;
    uint64_t handle;
    void *obj;
    int op;

    for (op = 0; op < 20000; ++op) {
        if ((live.size() < 64) && (live.empty() || (rng() % 2))) {
            obj = &objs[rng() % 64];
            ASSERT_EQ(UCS_OK, fiatomic_handle_add(&table, obj, &handle,
                                                  NULL));
            ASSERT_EQ(0u, live.count(handle));
            live[handle] = obj;
        } else {
            auto it = live.begin();
            std::advance(it, rng() % live.size());
            ASSERT_EQ(it->second, fiatomic_handle_remove(&table, it->first));
            dead.push_back(it->first);
            live.erase(it);
        }
    }
    EXPECT_EQ(live.size(), table.used);
    for (auto &entry : live) {
        EXPECT_EQ(entry.second, fiatomic_handle_get(&table, entry.first));
    }
    for (uint64_t h : dead) {
        EXPECT_EQ(nullptr, fiatomic_handle_get(&table, h));
    }
}

struct item {
    ucs_list_link_t list;
    int             id;
};

int released;

void release_item(ucs_list_link_t *link)
{
    ++released;
    delete ucs_container_of(link, item, list);
}

TEST(freelist, keeps_at_most_its_cap_and_reuses_the_latest) {
    fiatomic_freelist_t list;
    std::vector<item*> items;
    ucs_list_link_t *link;
    int i;

    fiatomic_freelist_init(&list, 4);
    EXPECT_EQ(nullptr, fiatomic_freelist_get(&list));
    for (i = 0; i < 6; ++i) {
        items.push_back(new item{{}, i});
    }
    for (i = 0; i < 4; ++i) {
        EXPECT_TRUE(fiatomic_freelist_put(&list, &items[i]->list));
    }
    EXPECT_FALSE(fiatomic_freelist_put(&list, &items[4]->list)); /* full */
    EXPECT_EQ(4u, list.count);

    link = fiatomic_freelist_get(&list); /* the latest put: cache-warm */
    ASSERT_NE(nullptr, link);
    EXPECT_EQ(3, ucs_container_of(link, item, list)->id);
    EXPECT_EQ(3u, list.count);
    EXPECT_TRUE(fiatomic_freelist_put(&list, &items[5]->list));

    released = 0;
    fiatomic_freelist_purge(&list, release_item);
    EXPECT_EQ(4, released);
    EXPECT_EQ(0u, list.count);
    EXPECT_EQ(nullptr, fiatomic_freelist_get(&list));
    delete items[3];
    delete items[4];
}

int id_of(ucs_list_link_t *link)
{
    return (link != NULL) ? ucs_container_of(link, item, list)->id : -1;
}

TEST(lru, pushes_out_the_least_recently_used) {
    fiatomic_lru_t lru;
    item items[6];
    int i;

    fiatomic_lru_init(&lru, 4);
    EXPECT_EQ(nullptr, fiatomic_lru_pop(&lru));
    for (i = 0; i < 6; ++i) {
        items[i].id = i;
    }
    for (i = 0; i < 4; ++i) {
        EXPECT_EQ(nullptr, fiatomic_lru_add(&lru, &items[i].list));
    }
    EXPECT_EQ(4u, lru.count);

    /* 1 used again and put back: 0 is now the least recently used, then 2 */
    fiatomic_lru_remove(&lru, &items[1].list);
    EXPECT_EQ(3u, lru.count);
    EXPECT_EQ(nullptr, fiatomic_lru_add(&lru, &items[1].list));
    EXPECT_EQ(0, id_of(fiatomic_lru_add(&lru, &items[4].list)));
    EXPECT_EQ(2, id_of(fiatomic_lru_add(&lru, &items[5].list)));
    EXPECT_EQ(4u, lru.count);

    /* what is left, least recent first */
    EXPECT_EQ(3, id_of(fiatomic_lru_pop(&lru)));
    EXPECT_EQ(1, id_of(fiatomic_lru_pop(&lru)));
    EXPECT_EQ(4, id_of(fiatomic_lru_pop(&lru)));
    EXPECT_EQ(5, id_of(fiatomic_lru_pop(&lru)));
    EXPECT_EQ(nullptr, fiatomic_lru_pop(&lru));
    EXPECT_EQ(0u, lru.count);
}

/* Random use against a model (a std::list, least recent first): what the
 * list pushes out and keeps is the model's. */
TEST(lru, random_against_model) {
    const unsigned cap = 16;
    std::mt19937_64 rng(11);
    std::vector<item> items(64);
    std::vector<bool> on(items.size(), false);
    std::list<int> model;
    fiatomic_lru_t lru;
    int i;

    fiatomic_lru_init(&lru, cap);
    for (i = 0; i < (int)items.size(); ++i) {
        items[i].id = i;
    }
    for (int op = 0; op < 20000; ++op) {
        i = (int)(rng() % items.size());
        if (on[i]) { /* used again */
            fiatomic_lru_remove(&lru, &items[i].list);
            model.remove(i);
            on[i] = false;
        } else { /* unused: kept */
            int out = id_of(fiatomic_lru_add(&lru, &items[i].list));
            model.push_back(i);
            on[i] = true;
            if (model.size() > cap) {
                ASSERT_EQ(model.front(), out) << "op " << op;
                on[model.front()] = false;
                model.pop_front();
            } else {
                ASSERT_EQ(-1, out) << "op " << op;
            }
        }
        ASSERT_EQ(model.size(), lru.count);
    }
    for (int expected : model) {
        EXPECT_EQ(expected, id_of(fiatomic_lru_pop(&lru)));
    }
    EXPECT_EQ(nullptr, fiatomic_lru_pop(&lru));
}

} // namespace
