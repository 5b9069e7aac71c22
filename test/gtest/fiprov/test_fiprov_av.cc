/**
 * Address vectors through libfabric's API (fi_av(3)), FI_AV_TABLE and
 * FI_AV_MAP: inserts and lookups of addresses built here from the layout
 * fi_fiatomic(7) documents (not from the provider's code), table indices in
 * insertion order, rejected addresses (FI_ADDR_NOTAVAIL, FI_SYNC_ERR
 * codes), removal (all or nothing, indices never reused), truncating
 * lookups and straddr, growth past the initial count, concurrent inserts,
 * attributes the provider refuses, and a domain that cannot close under an
 * open address vector.
 */
#include "fiprov_fixture.h"

#include <rdma/fi_eq.h>

#include <string.h>

#include <set>
#include <string>
#include <thread>

using namespace fiprov_test;

namespace {

static const size_t addr_len = 24;

typedef std::vector<uint8_t> addr_bytes;

/* the documented layout: version 1, family 4, port, IPv4, endpoint id,
 * reserved zero, nonce; every field big-endian */
static void put_be(addr_bytes *a, size_t off, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        (*a)[off + n - 1 - i] = (uint8_t)(v >> (8 * i));
    }
}

static addr_bytes make_addr(uint32_t ipv4, uint16_t port, uint32_t ep_id,
                            uint64_t nonce)
{
    addr_bytes a(addr_len, 0);

    a[0] = 1;
    a[1] = 4;
    put_be(&a, 2, port, 2);
    put_be(&a, 4, ipv4, 4);
    put_be(&a, 8, ep_id, 4);
    put_be(&a, 16, nonce, 8);
    return a;
}

static addr_bytes nth_addr(uint32_t n)
{
    return make_addr(0x0a000001 + n, (uint16_t)(1000 + n % 50000), n,
                     0x1234567800000000ull + n);
}

class av : public domain_test,
           public testing::WithParamInterface<enum fi_av_type> {
protected:
    void SetUp() override
    {
        test_base::SetUp();
        open_domain();
    }

    void TearDown() override
    {
        if (m_av != NULL) {
            EXPECT_EQ(0, fi_close(&m_av->fid));
        }
        domain_test::TearDown();
    }

    void open_av(size_t count = 0)
    {
        struct fi_av_attr attr = {};

        attr.type  = GetParam();
        attr.count = count;
        ASSERT_EQ(0, fi_av_open(m_domain, &attr, &m_av, this));
    }

    void expect_lookup(fi_addr_t fi_addr, const addr_bytes &want)
    {
        addr_bytes got(64, 0xee);
        size_t len = got.size();

        ASSERT_EQ(0, fi_av_lookup(m_av, fi_addr, got.data(), &len));
        EXPECT_EQ(addr_len, len);
        got.resize(addr_len);
        EXPECT_EQ(want, got);
    }

    struct fid_av               *m_av     = NULL;
};

TEST_P(av, insert_lookup_in_order)
{
    addr_bytes all;
    fi_addr_t fi_addr[3];

    open_av();
    EXPECT_EQ(this, m_av->fid.context);
    for (uint32_t i = 0; i < 3; ++i) {
        addr_bytes a = nth_addr(i);
        all.insert(all.end(), a.begin(), a.end());
    }
    ASSERT_EQ(3, fi_av_insert(m_av, all.data(), 3, fi_addr, 0, NULL));
    for (uint32_t i = 0; i < 3; ++i) {
        if (GetParam() == FI_AV_TABLE) {
            EXPECT_EQ((fi_addr_t)i, fi_addr[i]);
        }
        EXPECT_NE(FI_ADDR_NOTAVAIL, fi_addr[i]);
        expect_lookup(fi_addr[i], nth_addr(i));
    }
    EXPECT_EQ(3u, std::set<fi_addr_t>(fi_addr, fi_addr + 3).size());
}

TEST_P(av, invalid_addresses_rejected_one_by_one)
{
    std::vector<addr_bytes> list;
    addr_bytes all;
    fi_addr_t fi_addr[8];
    int errors[8];

    list.push_back(nth_addr(0));                        /* valid */
    list.push_back(nth_addr(1)); list.back()[0] = 2;    /* version */
    list.push_back(nth_addr(2)); list.back()[1] = 6;    /* family */
    list.push_back(make_addr(0x0a000001, 1, 0, 0));     /* zero nonce */
    list.push_back(make_addr(0x0a000001, 0, 0, 7));     /* zero port */
    list.push_back(make_addr(0, 1, 0, 7));              /* zero IPv4 */
    list.push_back(nth_addr(6)); list.back()[13] = 1;   /* reserved */
    list.push_back(nth_addr(7));                        /* valid */
    for (const addr_bytes &a : list) {
        all.insert(all.end(), a.begin(), a.end());
    }

    open_av();
    ASSERT_EQ(2, fi_av_insert(m_av, all.data(), 8, fi_addr, FI_SYNC_ERR,
                              errors));
    for (size_t i = 0; i < 8; ++i) {
        bool valid = (i == 0) || (i == 7);

        EXPECT_EQ(valid ? 0 : -FI_EINVAL, errors[i]) << i;
        if (valid) {
            expect_lookup(fi_addr[i], list[i]);
        } else {
            EXPECT_EQ(FI_ADDR_NOTAVAIL, fi_addr[i]) << i;
        }
    }
}

TEST_P(av, lookup_truncates_and_reports_length)
{
    addr_bytes a = nth_addr(3);
    uint8_t buf[10];
    size_t len   = sizeof(buf);
    fi_addr_t fi_addr;

    open_av();
    ASSERT_EQ(1, fi_av_insert(m_av, a.data(), 1, &fi_addr, 0, NULL));
    memset(buf, 0, sizeof(buf));
    ASSERT_EQ(0, fi_av_lookup(m_av, fi_addr, buf, &len));
    EXPECT_EQ(addr_len, len);
    EXPECT_EQ(0, memcmp(buf, a.data(), sizeof(buf)));
    len = 0;
    EXPECT_EQ(0, fi_av_lookup(m_av, fi_addr, NULL, &len));
    EXPECT_EQ(addr_len, len);
    EXPECT_EQ(-FI_EINVAL, fi_av_lookup(m_av, fi_addr, buf, NULL));
    len = sizeof(buf);
    EXPECT_EQ(-FI_EINVAL, fi_av_lookup(m_av, fi_addr + 1000, buf, &len));
}

TEST_P(av, remove_all_or_nothing_indices_not_reused)
{
    addr_bytes all;
    fi_addr_t fi_addr[3], again, bad[2], twice[2];
    size_t len = 0;

    open_av();
    for (uint32_t i = 0; i < 3; ++i) {
        addr_bytes a = nth_addr(i);
        all.insert(all.end(), a.begin(), a.end());
    }
    ASSERT_EQ(3, fi_av_insert(m_av, all.data(), 3, fi_addr, 0, NULL));

    ASSERT_EQ(0, fi_av_remove(m_av, &fi_addr[1], 1, 0));
    EXPECT_EQ(-FI_EINVAL, fi_av_lookup(m_av, fi_addr[1], NULL, &len));
    EXPECT_EQ(-FI_EINVAL, fi_av_remove(m_av, &fi_addr[1], 1, 0));

    /* one unknown address: nothing removed */
    bad[0] = fi_addr[0];
    bad[1] = fi_addr[1];
    EXPECT_EQ(-FI_EINVAL, fi_av_remove(m_av, bad, 2, 0));
    expect_lookup(fi_addr[0], nth_addr(0));
    twice[0] = twice[1] = fi_addr[2];
    EXPECT_EQ(-FI_EINVAL, fi_av_remove(m_av, twice, 2, 0));
    expect_lookup(fi_addr[2], nth_addr(2));
    EXPECT_EQ(-FI_EBADFLAGS, fi_av_remove(m_av, &fi_addr[0], 1, FI_MORE));

    /* the same peer again gets a fresh index, not the removed one's */
    ASSERT_EQ(1, fi_av_insert(m_av, nth_addr(1).data(), 1, &again, 0,
                              NULL));
    EXPECT_EQ(0u, std::set<fi_addr_t>({fi_addr[0], fi_addr[1], fi_addr[2]})
                  .count(again));
    if (GetParam() == FI_AV_TABLE) {
        EXPECT_EQ((fi_addr_t)3, again);
    }
    expect_lookup(again, nth_addr(1));
}

TEST_P(av, straddr)
{
    addr_bytes a = make_addr(0xc0a80102, 4660, 5, 0x0123456789abcdefull);
    const std::string want = "fiatomic://192.168.1.2:4660/5/0123456789abcdef";
    char buf[128];
    size_t len = sizeof(buf);

    open_av();
    EXPECT_EQ(buf, fi_av_straddr(m_av, a.data(), buf, &len));
    EXPECT_EQ(want, std::string(buf));
    EXPECT_EQ(want.size() + 1, len);

    /* truncated, still terminated, the needed length told */
    len = 12;
    EXPECT_EQ(buf, fi_av_straddr(m_av, a.data(), buf, &len));
    EXPECT_EQ(want.substr(0, 11), std::string(buf));
    EXPECT_EQ(want.size() + 1, len);

    a[0] = 9;
    len  = sizeof(buf);
    EXPECT_EQ(buf, fi_av_straddr(m_av, a.data(), buf, &len));
    EXPECT_EQ(std::string("fiatomic://invalid"), std::string(buf));
}

TEST_P(av, grows_past_its_count_under_concurrent_inserts)
{
    static const int threads = 4, per_thread = 500;
    std::vector<fi_addr_t> fi_addr(threads * per_thread);
    std::vector<std::thread> workers;

    open_av(1);
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t]() {
            for (int i = 0; i < per_thread; ++i) {
                int n = t * per_thread + i;

                EXPECT_EQ(1, fi_av_insert(m_av, nth_addr(n).data(), 1,
                                          &fi_addr[n], 0, NULL));
            }
        });
    }
    for (std::thread &w : workers) {
        w.join();
    }
    EXPECT_EQ(fi_addr.size(),
              std::set<fi_addr_t>(fi_addr.begin(), fi_addr.end()).size());
    for (int n = 0; n < threads * per_thread; ++n) {
        if (GetParam() == FI_AV_TABLE) {
            EXPECT_LT(fi_addr[n], (fi_addr_t)(threads * per_thread));
        }
        expect_lookup(fi_addr[n], nth_addr(n));
    }
}

TEST_P(av, bad_calls)
{
    addr_bytes a = nth_addr(0);
    fi_addr_t fi_addr;

    open_av();
    EXPECT_EQ(-FI_EBADFLAGS, fi_av_insert(m_av, a.data(), 1, &fi_addr,
                                          FI_MORE, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_av_insert(m_av, NULL, 1, &fi_addr, 0, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_av_insert(m_av, a.data(), 1, &fi_addr,
                                       FI_SYNC_ERR, NULL));
    EXPECT_EQ(0, fi_av_insert(m_av, a.data(), 0, NULL, 0, NULL));
    if (GetParam() == FI_AV_MAP) {
        /* a map's addresses exist only in fi_addr */
        EXPECT_EQ(-FI_EINVAL, fi_av_insert(m_av, a.data(), 1, NULL, 0,
                                           NULL));
    } else {
        size_t len = 0;

        EXPECT_EQ(1, fi_av_insert(m_av, a.data(), 1, NULL, 0, NULL));
        EXPECT_EQ(0, fi_av_lookup(m_av, 0, NULL, &len));
    }
    EXPECT_EQ(-FI_ENOSYS, fi_av_insertsvc(m_av, "localhost", "1", &fi_addr,
                                          0, NULL));
    /* an address vector binds an event queue only (test_fiprov_eq.cc) */
    EXPECT_EQ(-FI_EINVAL, fi_av_bind(m_av, &m_domain->fid, 0));
}

TEST_P(av, domain_busy_while_open)
{
    open_av();
    EXPECT_EQ(-FI_EBUSY, fi_close(&m_domain->fid));
    EXPECT_EQ(0, fi_close(&m_av->fid));
    m_av = NULL;
    EXPECT_EQ(0, fi_close(&m_domain->fid));
    m_domain = NULL;
}

INSTANTIATE_TEST_SUITE_P(type, av,
                         testing::Values(FI_AV_TABLE, FI_AV_MAP),
                         [](const testing::TestParamInfo<enum fi_av_type>
                                &info) {
                             return std::string(info.param == FI_AV_TABLE ?
                                                "table" : "map");
                         });

class av_attr : public av {};

TEST_F(av_attr, open_attributes)
{
    struct fi_av_attr attr = {};
    struct fid_av *av_fid;

    attr.type = FI_AV_UNSPEC;
    ASSERT_EQ(0, fi_av_open(m_domain, &attr, &av_fid, NULL));
    EXPECT_EQ(FI_AV_TABLE, attr.type);
    EXPECT_EQ(0, fi_close(&av_fid->fid));

    EXPECT_EQ(-FI_EINVAL, fi_av_open(m_domain, NULL, &av_fid, NULL));
    attr.type = (enum fi_av_type)77;
    EXPECT_EQ(-FI_EINVAL, fi_av_open(m_domain, &attr, &av_fid, NULL));
    attr.type        = FI_AV_TABLE;
    attr.rx_ctx_bits = 2;
    EXPECT_EQ(-FI_EINVAL, fi_av_open(m_domain, &attr, &av_fid, NULL));
    attr.rx_ctx_bits = 0;
    attr.name        = "shared";
    EXPECT_EQ(-FI_ENOSYS, fi_av_open(m_domain, &attr, &av_fid, NULL));
    attr.name  = NULL;
    attr.flags = FI_EVENT;
    EXPECT_EQ(-FI_ENOSYS, fi_av_open(m_domain, &attr, &av_fid, NULL));
    attr.flags = FI_SYMMETRIC;
    ASSERT_EQ(0, fi_av_open(m_domain, &attr, &av_fid, NULL));
    EXPECT_EQ(0, fi_close(&av_fid->fid));
}

} // namespace
