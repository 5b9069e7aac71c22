/**
 * Memory registration through libfabric's API (fi_mr(3)), in both modes the
 * provider offers: provider keys (random, distinct, the requested key
 * ignored) and program keys (the requested key, unique in the domain,
 * reusable once closed); bad input; a domain that cannot close under an
 * open region.
 */
#include "fiprov_fixture.h"

#include <set>
#include <thread>
#include <vector>

using namespace fiprov_test;

namespace {

static const uint64_t remote_rw = FI_REMOTE_READ | FI_REMOTE_WRITE;

class mr : public domain_test {
protected:
    void SetUp() override
    {
        test_base::SetUp();
        open_fabric();
        ASSERT_FALSE(HasFatalFailure());
        /* offers: provider keys, then program keys */
        ASSERT_EQ(2u, m_infos.size());
        ASSERT_EQ(FI_MR_PROV_KEY, m_infos[0]->domain_attr->mr_mode &
                                  FI_MR_PROV_KEY);
        ASSERT_EQ(0, m_infos[1]->domain_attr->mr_mode);
    }

    void TearDown() override
    {
        for (struct fid_domain *d : m_domains) {
            EXPECT_EQ(0, fi_close(&d->fid));
        }
        domain_test::TearDown();
    }

    struct fid_domain *open_domain(bool prov_keys)
    {
        struct fid_domain *d = NULL;

        EXPECT_EQ(0, fi_domain(m_fabric, m_infos[prov_keys ? 0 : 1], &d,
                               NULL));
        if (d != NULL) {
            m_domains.push_back(d);
        }
        return d;
    }

    std::vector<struct fid_domain*> m_domains;
    char                            m_buf[4][4096];
};

TEST_F(mr, provider_keys_are_distinct_random_and_ignore_the_request)
{
    struct fid_domain *d1 = open_domain(true), *d2 = open_domain(true);
    std::vector<struct fid_mr*> regions;
    std::set<uint64_t> keys;

    ASSERT_NE(nullptr, d1);
    ASSERT_NE(nullptr, d2);
    for (int i = 0; i < 4; ++i) {
        for (struct fid_domain *d : {d1, d2}) {
            struct fid_mr *m;

            /* every region asks key 7: provider keys ignore it */
            ASSERT_EQ(0, fi_mr_reg(d, m_buf[i], sizeof(m_buf[i]), remote_rw,
                                   0, 7, 0, &m, this));
            EXPECT_EQ(this, m->fid.context);
            EXPECT_NE(nullptr, fi_mr_desc(m));
            EXPECT_NE(0u, fi_mr_key(m));
            keys.insert(fi_mr_key(m));
            regions.push_back(m);
        }
    }
    /* two domains draw their keys independently: 8 keys, none 7, all
     * distinct (a collision of 64-bit random keys is 2^-58 here) */
    EXPECT_EQ(8u, keys.size());
    EXPECT_EQ(0u, keys.count(7));
    for (struct fid_mr *m : regions) {
        EXPECT_EQ(0, fi_close(&m->fid));
    }
}

TEST_F(mr, program_keys_are_the_requested_ones_and_unique)
{
    struct fid_domain *d = open_domain(false), *other = open_domain(false);
    struct fid_mr *m0, *m1, *dup = NULL, *again, *elsewhere;

    ASSERT_NE(nullptr, d);
    ASSERT_EQ(0, fi_mr_reg(d, m_buf[0], sizeof(m_buf[0]), remote_rw, 0, 0, 0,
                           &m0, NULL));
    ASSERT_EQ(0, fi_mr_reg(d, m_buf[1], sizeof(m_buf[1]), remote_rw, 0, 1, 0,
                           &m1, NULL));
    EXPECT_EQ(0u, fi_mr_key(m0));
    EXPECT_EQ(1u, fi_mr_key(m1));
    EXPECT_EQ(-FI_ENOKEY, fi_mr_reg(d, m_buf[2], sizeof(m_buf[2]), remote_rw,
                                    0, 1, 0, &dup, NULL));
    EXPECT_EQ(nullptr, dup);
    /* keys are per domain */
    ASSERT_EQ(0, fi_mr_reg(other, m_buf[2], sizeof(m_buf[2]), remote_rw, 0,
                           1, 0, &elsewhere, NULL));
    EXPECT_EQ(0, fi_close(&elsewhere->fid));
    /* a closed region's key is free again */
    EXPECT_EQ(0, fi_close(&m1->fid));
    ASSERT_EQ(0, fi_mr_reg(d, m_buf[3], sizeof(m_buf[3]), remote_rw, 0, 1, 0,
                           &again, NULL));
    EXPECT_EQ(1u, fi_mr_key(again));
    EXPECT_EQ(0, fi_close(&again->fid));
    EXPECT_EQ(0, fi_close(&m0->fid));
}

TEST_F(mr, many_regions)
{
    static const size_t count = 2000;
    struct fid_domain *d = open_domain(false);
    std::vector<struct fid_mr*> regions;
    std::vector<char> buf(count * 64);

    ASSERT_NE(nullptr, d);
    for (size_t i = 0; i < count; ++i) {
        struct fid_mr *m;

        /* local access only: nothing exposed, the key table still used */
        ASSERT_EQ(0, fi_mr_reg(d, &buf[i * 64], 64, FI_READ | FI_WRITE, 0,
                               count - i, 0, &m, NULL));
        regions.push_back(m);
    }
    for (size_t i = 0; i < count; ++i) {
        EXPECT_EQ(count - i, fi_mr_key(regions[i]));
    }
    for (size_t i = 0; i < count; i += 2) {
        EXPECT_EQ(0, fi_close(&regions[i]->fid));
    }
    for (size_t i = 1; i < count; i += 2) {
        struct fid_mr *dup = NULL;

        EXPECT_EQ(-FI_ENOKEY, fi_mr_reg(d, &buf[0], 64, FI_READ, 0,
                                        count - i, 0, &dup, NULL));
        EXPECT_EQ(0, fi_close(&regions[i]->fid));
    }
}

TEST_F(mr, concurrent_registration)
{
    static const int threads = 4, rounds = 300;
    struct fid_domain *d = open_domain(true);
    std::vector<std::set<uint64_t>> keys(threads);
    std::vector<std::thread> workers;
    std::set<uint64_t> all;
    size_t total = 0;

    /* FI_THREAD_SAFE (the offer's): threads register and close at once;
     * the keys a thread holds at the same time are distinct */
    ASSERT_NE(nullptr, d);
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([this, d, t, &keys]() {
            std::vector<struct fid_mr*> held;

            for (int i = 0; i < rounds; ++i) {
                struct fid_mr *m;

                if (fi_mr_reg(d, m_buf[t], sizeof(m_buf[t]), remote_rw, 0,
                              0, 0, &m, NULL) != 0) {
                    return;
                }
                keys[t].insert(fi_mr_key(m));
                held.push_back(m);
                if (held.size() > 8) {
                    fi_close(&held.front()->fid);
                    held.erase(held.begin());
                }
            }
            for (struct fid_mr *m : held) {
                fi_close(&m->fid);
            }
        });
    }
    for (auto &w : workers) {
        w.join();
    }
    for (auto &k : keys) {
        EXPECT_EQ((size_t)rounds, k.size());
        total += k.size();
        all.insert(k.begin(), k.end());
    }
    EXPECT_EQ(total, all.size());
}

TEST_F(mr, regv_and_regattr)
{
    struct fid_domain *d = open_domain(false);
    struct iovec iov[2] = {{m_buf[0], 64}, {m_buf[1], 64}};
    struct fi_mr_attr attr = {};
    struct fid_mr *m = NULL;

    ASSERT_NE(nullptr, d);
    EXPECT_EQ(-FI_EINVAL, fi_mr_regv(d, iov, 2, remote_rw, 0, 3, 0, &m,
                                     NULL));
    ASSERT_EQ(0, fi_mr_regv(d, iov, 1, remote_rw, 0, 3, 0, &m, NULL));
    EXPECT_EQ(3u, fi_mr_key(m));
    EXPECT_EQ(0, fi_close(&m->fid));

    attr.mr_iov        = iov;
    attr.iov_count     = 1;
    attr.access        = remote_rw;
    attr.requested_key = 4;
    attr.context       = this;
    ASSERT_EQ(0, fi_mr_regattr(d, &attr, 0, &m));
    EXPECT_EQ(4u, fi_mr_key(m));
    EXPECT_EQ(this, m->fid.context);
    EXPECT_EQ(0, fi_close(&m->fid));
}

TEST_F(mr, bad_input)
{
    struct fid_domain *d = open_domain(true);
    struct fid_mr *m = NULL;

    ASSERT_NE(nullptr, d);
    EXPECT_EQ(-FI_EINVAL, fi_mr_reg(d, NULL, 64, remote_rw, 0, 0, 0, &m,
                                    NULL));
    EXPECT_EQ(-FI_EINVAL, fi_mr_reg(d, m_buf[0], 0, remote_rw, 0, 0, 0, &m,
                                    NULL));
    EXPECT_EQ(-FI_EINVAL, fi_mr_reg(d, m_buf[0], 64, FI_ATOMIC, 0, 0, 0, &m,
                                    NULL));
    EXPECT_EQ(-FI_EINVAL, fi_mr_reg(d, m_buf[0], 64, remote_rw, 0, 0,
                                    FI_RMA_EVENT, &m, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_mr_reg(d, m_buf[0], 64, remote_rw, 0, 0, 0,
                                    NULL, NULL));
    EXPECT_EQ(nullptr, m);
}

TEST_F(mr, domain_busy_while_a_region_is_open)
{
    struct fid_domain *d;
    struct fid_mr *m;

    ASSERT_EQ(0, fi_domain(m_fabric, m_infos[0], &d, NULL));
    ASSERT_EQ(0, fi_mr_reg(d, m_buf[0], 64, remote_rw, 0, 0, 0, &m, NULL));
    EXPECT_EQ(-FI_EBUSY, fi_close(&d->fid));
    EXPECT_EQ(0, fi_close(&m->fid));
    EXPECT_EQ(0, fi_close(&d->fid));
}

} // namespace
