/**
 * Registrations placed in shared memory (FI_FIATOMIC_MR_SHARE=1, over
 * UCX_TLS=posix), over the libfabric API, with what the kernel says of the
 * pages (/proc/self/maps) as the independent witness:
 *  - in one process: while registered, the registration's pages (rounded
 *    out to whole pages) are a shared mapping, the program's bytes the same
 *    before, during and after; after fi_close they are private again and
 *    no mapping of the segment's file is left (the program's writes reach
 *    nothing but its own pages); a stack buffer and a range overlapping
 *    another shared registration are registered as usual (pages private)
 *    and still work; without the variable nothing is moved;
 *  - between two processes: a fetch-add on the peer's shared registration
 *    completes while the peer does not progress at all (manual progress,
 *    the peer asleep): executed with a CPU atomic in the shared pages, not
 *    by the target; both processes fetch-adding one element lose nothing;
 *    a key used before and closed since fails without touching the peer's
 *    new region.
 * Every cell in every form on shared registrations, and both processes on
 * one element, are the atomic and RMA suites' "share" instantiations.
 */
#include "fiprov_peer.h"
#include "fiprov_wait.h"

#include <rdma/fi_atomic.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <set>
#include <string>

using namespace fiprov_test;

namespace {

const size_t page_size = 4096;

/* one fetch-add of a uint64 through ep to (dest, addr, key), waited for on
 * its counter (bounded): the value fetched; 0 in *err, or the call's error,
 * -FI_ETIMEDOUT, or -FI_EIO for an error completion (fi_cntr_wait counts
 * successes only: an error must end the wait too) */
uint64_t fetch_add_cntr(struct fid_ep *ep, struct fid_cntr *cntr,
                        fi_addr_t dest, uint64_t addr, uint64_t key,
                        uint64_t add, int *err)
{
    uint64_t res = 0, errs = fi_cntr_readerr(cntr);
    uint64_t done = fi_cntr_read(cntr) + errs;
    ssize_t ret;

    do {
        ret = fi_fetch_atomic(ep, &add, 1, NULL, &res, NULL, dest, addr, key,
                              FI_UINT64, FI_SUM, NULL);
    } while (ret == -FI_EAGAIN);
    *err = (int)ret;
    if (ret != 0) {
        return res;
    }
    int64_t end = fiprov_test::now_ms() + peer_wait_ms;
    while ((fi_cntr_read(cntr) + fi_cntr_readerr(cntr) < done + 1) &&
           (fiprov_test::now_ms() < end)) {
    }
    *err = (fi_cntr_read(cntr) + fi_cntr_readerr(cntr) < done + 1) ?
           -FI_ETIMEDOUT : (fi_cntr_readerr(cntr) != errs) ? -FI_EIO : 0;
    return res;
}

/* the mapping holding addr: its permissions ("rw-p", "rw-s") and file's
 * inode; "" when nothing maps it */
struct mapping {
    std::string   perms;
    unsigned long ino = 0;
};

mapping mapping_of(const void *addr)
{
    unsigned long lo, hi, off, ino;
    char line[1024], perms[8];
    unsigned dmaj, dmin;
    mapping m;
    FILE *f = fopen("/proc/self/maps", "r");

    if (f == NULL) {
        return m;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if ((sscanf(line, "%lx-%lx %7s %lx %x:%x %lu", &lo, &hi, perms, &off,
                    &dmaj, &dmin, &ino) == 7) &&
            (lo <= (uintptr_t)addr) && ((uintptr_t)addr < hi)) {
            m.perms = perms;
            m.ino   = ino;
            break;
        }
    }
    fclose(f);
    return m;
}

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

/* whether this system moves a shared mapping over a private one and keeps
 * the source mapped (mremap with MREMAP_DONTUNMAP on a shared mapping:
 * Linux 5.13 or later; valgrind refuses the flag), the step sharing a
 * registration takes; where it does not, the provider registers as usual
 * and these suites have nothing to see. A system call, as the provider
 * makes it (UCX 1.13's memory hook drops mremap's fifth argument). */
bool shared_mremap_works()
{
    static int works = -1;

    if (works < 0) {
        void *seg = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        void *to  = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        works = (seg != MAP_FAILED) && (to != MAP_FAILED) &&
                ((void*)syscall(SYS_mremap, seg, page_size, page_size,
                                MREMAP_MAYMOVE | MREMAP_FIXED |
                                MREMAP_DONTUNMAP, to) == to);
        if (seg != MAP_FAILED) {
            munmap(seg, page_size);
        }
        if (to != MAP_FAILED) {
            munmap(to, page_size);
        }
    }
    return works == 1;
}

const char no_shared_mremap[] =
    "this system refuses mremap(MREMAP_DONTUNMAP) of a shared mapping "
    "(Linux before 5.13, or valgrind): registrations are not shared here";

uint8_t pattern(size_t i)
{
    return (uint8_t)(i * 13 + 5);
}

/* one process, its endpoint addressing itself; param: provider keys */
class share1p : public test_base,
                public testing::WithParamInterface<int> {
protected:
    void SetUp() override
    {
        open_params p;
        const char *tls = getenv("UCX_TLS"), *share = getenv(share_env);

        test_base::SetUp();
        m_had_tls   = (tls != NULL);
        m_tls       = m_had_tls ? tls : "";
        m_had_share = (share != NULL);
        m_share     = m_had_share ? share : "";
        setenv("UCX_TLS", "posix", 1);
        if (sharing()) {
            setenv(share_env, "1", 1);
        } else {
            unsetenv(share_env);
        }
        p.progress  = FI_PROGRESS_AUTO;
        p.prov_keys = GetParam();
        p.caps      = FI_ATOMIC | FI_RMA;
        ASSERT_EQ(0, m_o.open_domain(p));
        ASSERT_EQ(0, m_o.open_ep());
        ASSERT_EQ(0, fi_getname(&m_o.ep->fid, m_addr, &m_addrlen));
        ASSERT_EQ(1, fi_av_insert(m_o.av, m_addr, 1, &m_self, 0, NULL));
        m_mem = (uint8_t*)mmap(NULL, 8 * page_size, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ASSERT_NE(MAP_FAILED, (void*)m_mem);
        for (size_t i = 0; i < 8 * page_size; ++i) {
            m_mem[i] = pattern(i);
        }
        if (sharing() && !shared_mremap_works()) {
            GTEST_SKIP() << no_shared_mremap;
        }
    }

    void TearDown() override
    {
        m_o.close();
        if ((m_mem != NULL) && (m_mem != MAP_FAILED)) {
            munmap(m_mem, 8 * page_size);
        }
        restore("UCX_TLS", m_had_tls, m_tls);
        restore(share_env, m_had_share, m_share);
        test_base::TearDown();
    }

    virtual bool sharing() const { return true; }

    static void restore(const char *name, bool had, const std::string &v)
    {
        if (had) {
            setenv(name, v.c_str(), 1);
        } else {
            unsetenv(name);
        }
    }

    struct fid_mr *reg(void *buf, size_t len, uint64_t key,
                       uint64_t access = FI_REMOTE_READ | FI_REMOTE_WRITE)
    {
        struct fid_mr *mr = NULL;

        EXPECT_EQ(0, fi_mr_reg(m_o.domain, buf, len, access, 0, key, 0, &mr,
                               NULL));
        return mr;
    }

    /* fetch-add through the endpoint to this process's own region at byte
     * offset `off` of buffer `buf` (registered by mr): the value fetched */
    uint64_t fetch_add(struct fid_mr *mr, void *buf, size_t off,
                       uint64_t add)
    {
        int err;
        uint64_t res = fetch_add_key(fi_mr_key(mr), buf, off, add, &err);

        EXPECT_EQ(0, err);
        return res;
    }

    /* the same with a key: 0 in *err, or the call's or completion's error
     * (-FI_EIO: an error completion) */
    uint64_t fetch_add_key(uint64_t key, void *buf, size_t off, uint64_t add,
                           int *err)
    {
        uint64_t addr = GetParam() ? (uint64_t)(uintptr_t)buf + off : off;

        return fetch_add_cntr(m_o.ep, m_o.rcntr, m_self, addr, key, add, err);
    }

    uint64_t at(const void *p)
    {
        uint64_t v;

        memcpy(&v, p, 8);
        return v;
    }

    objects     m_o;
    fi_addr_t   m_self = FI_ADDR_UNSPEC;
    uint8_t     m_addr[128];
    size_t      m_addrlen = sizeof(m_addr);
    uint8_t     *m_mem = NULL;
    bool        m_had_tls = false, m_had_share = false;
    std::string m_tls, m_share;
};

TEST_P(share1p, pages_shared_while_registered_private_after_close)
{
    /* bytes 96 .. 96 + 2 pages: pages 0, 1, 2 move */
    uint8_t *buf = m_mem + 96;
    struct fid_mr *mr = reg(buf, 2 * page_size, 1);
    ASSERT_NE(nullptr, mr);

    mapping m = mapping_of(m_mem);
    EXPECT_EQ("rw-s", m.perms);
    ASSERT_NE(0u, m.ino);
    for (size_t p = 1; p < 3; ++p) {
        EXPECT_EQ("rw-s", mapping_of(m_mem + p * page_size).perms) << p;
        EXPECT_EQ(m.ino, mapping_of(m_mem + p * page_size).ino) << p;
    }
    EXPECT_EQ("rw-p", mapping_of(m_mem + 3 * page_size).perms);
    /* the program's bytes, inside the registration and around it */
    for (size_t i = 0; i < 8 * page_size; ++i) {
        ASSERT_EQ(pattern(i), m_mem[i]) << "byte " << i;
    }

    /* an atomic through the key reaches the program's own pointer */
    uint64_t before = at(buf + 4000);
    EXPECT_EQ(before, fetch_add(mr, buf, 4000, 11));
    EXPECT_EQ(before + 11, at(buf + 4000));
    uint64_t key = fi_mr_key(mr);
    /* the program's write is what the key reaches */
    memset(buf + 8, 0, 8);
    EXPECT_EQ(0u, fetch_add(mr, buf, 8, 3));
    EXPECT_EQ(3u, at(buf + 8));

    ASSERT_EQ(0, fi_close(&mr->fid));
    for (size_t p = 0; p < 3; ++p) {
        EXPECT_EQ("rw-p", mapping_of(m_mem + p * page_size).perms) << p;
    }
    EXPECT_NE(m.ino, mapping_of(m_mem).ino);
    for (size_t i = 0; i < 8 * page_size; ++i) {
        uint8_t want = pattern(i);
        if ((i >= 104) && (i < 112)) {
            want = (uint8_t)((i == 104) ? 3 : 0);
        } else if ((i >= 4096) && (i < 4104)) {
            want = (uint8_t)((before + 11) >> (8 * (i - 4096)));
        }
        ASSERT_EQ(want, m_mem[i]) << "byte " << i;
    }
    /* the closed key (cached here since its first use, the segment still
     * mapped for it) fails, and the program's own pages are untouched */
    int err;
    (void)fetch_add_key(key, buf, 8, 1000, &err);
    EXPECT_NE(0, err) << "a closed region's key reached memory";
    EXPECT_EQ(3u, at(buf + 8));
}

/* a large region mostly never touched (as a heap is): the pages the program
 * wrote, and the page an atomic wrote through the key, come back after
 * close; the others read zero */
TEST_P(share1p, sparse_region_keeps_its_bytes)
{
    const size_t pages = 64;
    uint8_t *mem = (uint8_t*)mmap(NULL, pages * page_size,
                                  PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, (void*)mem);
    for (size_t i = 0; i < page_size; ++i) {
        mem[3 * page_size + i]  = pattern(i);
        mem[40 * page_size + i] = pattern(i + 1);
    }
    struct fid_mr *mr = reg(mem, pages * page_size, 20);
    ASSERT_NE(nullptr, mr);
    EXPECT_EQ("rw-s", mapping_of(mem + 50 * page_size).perms);
    EXPECT_EQ(pattern(7), mem[3 * page_size + 7]);
    EXPECT_EQ(0u, fetch_add(mr, mem, 50 * page_size + 8, 0x1234));
    ASSERT_EQ(0, fi_close(&mr->fid));
    EXPECT_EQ("rw-p", mapping_of(mem + 50 * page_size).perms);
    for (size_t p = 0; p < pages; ++p) {
        for (size_t i = 0; i < page_size; ++i) {
            uint8_t want = (p == 3) ? pattern(i) :
                           (p == 40) ? pattern(i + 1) :
                           ((p == 50) && (i == 8)) ? 0x34 :
                           ((p == 50) && (i == 9)) ? 0x12 : 0;
            ASSERT_EQ(want, mem[p * page_size + i])
                << "page " << p << " byte " << i;
        }
    }
    munmap(mem, pages * page_size);
}

TEST_P(share1p, stack_buffer_is_registered_as_usual)
{
    uint64_t words[64];

    for (int i = 0; i < 64; ++i) {
        words[i] = 1000 + i;
    }
    struct fid_mr *mr = reg(words, sizeof(words), 2);
    ASSERT_NE(nullptr, mr);
    EXPECT_EQ("rw-p", mapping_of(words).perms);
    EXPECT_EQ(1005u, fetch_add(mr, words, 5 * 8, 2));
    EXPECT_EQ(1007u, __atomic_load_n(&words[5], __ATOMIC_SEQ_CST));
    for (int i = 0; i < 64; ++i) {
        EXPECT_EQ((i == 5) ? 1007u : 1000u + i, words[i]);
    }
    EXPECT_EQ(0, fi_close(&mr->fid));
}

/* peers map a shared registration read-write: a region registered with
 * remote read or remote write alone stays in the program's private pages,
 * and its atomics are refused what it does not grant */
TEST_P(share1p, region_without_remote_read_and_write_is_registered_as_usual)
{
    uint8_t *buf = m_mem + 96;
    int err;

    for (uint64_t access : {(uint64_t)FI_REMOTE_READ,
                            (uint64_t)FI_REMOTE_WRITE}) {
        struct fid_mr *mr = reg(buf, 2 * page_size, 3, access);
        ASSERT_NE(nullptr, mr);
        for (size_t p = 0; p < 3; ++p) {
            EXPECT_EQ("rw-p", mapping_of(m_mem + p * page_size).perms)
                    << p << " access " << access;
        }
        uint64_t before = at(buf + 8);
        (void)fetch_add_key(fi_mr_key(mr), buf, 8, 5, &err);
        EXPECT_EQ(-FI_EACCES, err) << "access " << access;
        EXPECT_EQ(before, at(buf + 8));
        ASSERT_EQ(0, fi_close(&mr->fid));
    }
    /* the positive control: both, shared */
    struct fid_mr *mr = reg(buf, 2 * page_size, 3);
    ASSERT_NE(nullptr, mr);
    EXPECT_EQ("rw-s", mapping_of(m_mem).perms);
    ASSERT_EQ(0, fi_close(&mr->fid));
}

TEST_P(share1p, overlapping_a_shared_registration_is_registered_as_usual)
{
    /* a: pages 0 and 1; b: pages 1 to 3 (page 1 is a's) */
    struct fid_mr *a = reg(m_mem, 2 * page_size, 3);
    ASSERT_NE(nullptr, a);
    struct fid_mr *b = reg(m_mem + page_size + 64, 2 * page_size, 4);
    ASSERT_NE(nullptr, b);

    EXPECT_EQ("rw-s", mapping_of(m_mem).perms);
    EXPECT_EQ("rw-s", mapping_of(m_mem + page_size).perms);
    EXPECT_EQ("rw-p", mapping_of(m_mem + 2 * page_size).perms);
    EXPECT_EQ("rw-p", mapping_of(m_mem + 3 * page_size).perms);

    /* both keys reach the same bytes */
    uint8_t *elem = m_mem + page_size + 64;
    uint64_t v = at(elem);
    EXPECT_EQ(v, fetch_add(a, m_mem, page_size + 64, 1));
    EXPECT_EQ(v + 1, fetch_add(b, m_mem + page_size + 64, 0, 1));
    EXPECT_EQ(v + 2, at(elem));
    uint64_t w = at(m_mem + 3 * page_size);
    EXPECT_EQ(w, fetch_add(b, m_mem + page_size + 64,
                           2 * page_size - 64, 5));
    EXPECT_EQ(w + 5, at(m_mem + 3 * page_size));

    /* a closed: its pages private again, b still works on them */
    ASSERT_EQ(0, fi_close(&a->fid));
    EXPECT_EQ("rw-p", mapping_of(m_mem + page_size).perms);
    EXPECT_EQ(v + 2, fetch_add(b, m_mem + page_size + 64, 0, 1));
    EXPECT_EQ(v + 3, at(elem));
    EXPECT_EQ(0, fi_close(&b->fid));
}

TEST_P(share1p, a_second_region_after_close_is_shared_again)
{
    for (int round = 0; round < 3; ++round) {
        struct fid_mr *mr = reg(m_mem, page_size, 10 + round);
        ASSERT_NE(nullptr, mr);
        EXPECT_EQ("rw-s", mapping_of(m_mem).perms) << round;
        uint64_t v = at(m_mem + 16);
        EXPECT_EQ(v, fetch_add(mr, m_mem, 16, 1)) << round;
        ASSERT_EQ(0, fi_close(&mr->fid));
        EXPECT_EQ("rw-p", mapping_of(m_mem).perms) << round;
        EXPECT_EQ(v + 1, at(m_mem + 16)) << round;
    }
}

/* the variable unset: nothing moves */
class share1p_off : public share1p {
protected:
    bool sharing() const override { return false; }
};

TEST_P(share1p_off, pages_stay_private)
{
    struct fid_mr *mr = reg(m_mem, 2 * page_size, 1);
    ASSERT_NE(nullptr, mr);
    EXPECT_EQ("rw-p", mapping_of(m_mem).perms);
    uint64_t v = at(m_mem + 64);
    EXPECT_EQ(v, fetch_add(mr, m_mem, 64, 1));
    EXPECT_EQ(v + 1, at(m_mem + 64));
    EXPECT_EQ(0, fi_close(&mr->fid));
}

std::string keys_name(const testing::TestParamInfo<int> &info)
{
    return info.param ? "provkeys" : "programkeys";
}

INSTANTIATE_TEST_SUITE_P(posix, share1p, testing::Values(0, 1), keys_name);
INSTANTIATE_TEST_SUITE_P(posix, share1p_off, testing::Values(0, 1),
                         keys_name);

class share2p : public peer_test {
protected:
    void SetUp() override
    {
        peer_test::SetUp();
        if (!HasFatalFailure() && !shared_mremap_works()) {
            GTEST_SKIP() << no_shared_mremap;
        }
    }

    uint64_t fetch_add(uint64_t key, size_t off, uint64_t add, int *err)
    {
        return fetch_add_cntr(m_o.ep, m_o.rcntr, m_dest, m_peer.base + off,
                              key, add, err);
    }
};

/* the peer asleep (manual progress: nothing of it runs) while a fetch-add
 * on its shared registration completes: the CPU atomic in the shared
 * pages; a target-executed one would wait for the peer to wake */
TEST_P(share2p, fetch_add_completes_while_the_target_sleeps)
{
    const uint64_t pause_ms = 4000;
    std::vector<uint8_t> v(8);
    uint64_t start = 77;
    int err;

    memcpy(v.data(), &start, 8);
    m_peer.set(256, v);
    /* the key resolved and the connection made while the peer serves */
    EXPECT_EQ(77u, fetch_add(m_peer.key, 256, 1, &err));
    ASSERT_EQ(0, err);

    m_peer.pause_start(pause_ms);
    ASSERT_FALSE(HasFatalFailure());
    usleep(200 * 1000); /* the peer took the command and sleeps */
    int64_t t0 = fiprov_test::now_ms();
    for (uint64_t i = 0; i < 100; ++i) {
        EXPECT_EQ(78u + i, fetch_add(m_peer.key, 256, 1, &err)) << i;
        ASSERT_EQ(0, err) << i;
    }
    int64_t took = fiprov_test::now_ms() - t0;
    EXPECT_LT(took, (int64_t)pause_ms - 1000)
        << "the fetch-adds waited for the target";
    ASSERT_TRUE(m_peer.pause_wait());
    std::vector<uint8_t> after = m_peer.get(256, 8);
    uint64_t got;
    memcpy(&got, after.data(), 8);
    EXPECT_EQ(178u, got);
}

/* both processes fetch-add one element, the peer's stream started before
 * this one (through its own endpoint on its own memory) and this one with
 * CPU atomics in the peer's shared pages: every value fetched once, none
 * lost (the streams overlapped in most of a run with automatic progress
 * here; with manual progress the peer's often ended first) */
TEST_P(share2p, both_processes_at_once_lose_nothing)
{
    const uint64_t n = 3000;
    std::vector<uint8_t> zero(8, 0);
    std::vector<uint64_t> mine(n);
    int err;

    m_peer.set(512, zero);
    EXPECT_EQ(0u, fetch_add(m_peer.key, 512, 1, &err)); /* key resolved */
    ASSERT_EQ(0, err);
    m_peer.fetch_add_start(512, n);
    ASSERT_FALSE(HasFatalFailure());
    for (uint64_t i = 0; i < n; ++i) {
        mine[i] = fetch_add(m_peer.key, 512, 1, &err);
        ASSERT_EQ(0, err) << i;
    }
    std::vector<uint64_t> theirs = m_peer.fetch_add_wait();
    ASSERT_EQ(n, theirs.size()) << "the peer's fetch-adds failed";

    std::set<uint64_t> seen(mine.begin(), mine.end());
    seen.insert(theirs.begin(), theirs.end());
    EXPECT_EQ(2 * n, seen.size());
    EXPECT_EQ(1u, *seen.begin());
    EXPECT_EQ(2 * n, *seen.rbegin());
    std::vector<uint8_t> after = m_peer.get(512, 8);
    uint64_t total;
    memcpy(&total, after.data(), 8);
    EXPECT_EQ(2 * n + 1, total);
}

/* a key this process used (resolved, cached, mapped) and the peer closed
 * since: the call fails, the peer's region (registered again, same pages)
 * untouched */
TEST_P(share2p, used_key_closed_since_fails)
{
    std::vector<uint8_t> zero(64, 0);
    int err;

    m_peer.set(0, zero);
    EXPECT_EQ(0u, fetch_add(m_peer.key, 0, 1, &err));
    ASSERT_EQ(0, err);
    uint64_t old_key = m_peer.key;
    uint64_t new_key = m_peer.replace_region();
    ASSERT_NE(old_key, new_key);

    (void)fetch_add(old_key, 0, 100, &err);
    EXPECT_NE(0, err) << "a closed region's key reached memory";
    std::vector<uint8_t> after = m_peer.get(0, 8);
    uint64_t got;
    memcpy(&got, after.data(), 8);
    EXPECT_EQ(1u, got);
    /* the new key reaches the same bytes */
    EXPECT_EQ(1u, fetch_add(new_key, 0, 1, &err));
    EXPECT_EQ(0, err);
}

INSTANTIATE_TEST_SUITE_P(tls, share2p, testing::ValuesIn(peer_params_share),
                         peer_param_name);

} // namespace
