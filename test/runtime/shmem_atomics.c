/*
 * OpenSHMEM 1.4 atomics, checked against a local model.
 *
 *   oshrun -np <2|4> shmem_atomics [--iters N]     functional, contention,
 *                                                  bursts
 *     ... --then-cswap32     and then the 4-byte compare-swaps (see below)
 *   oshrun -np 2     shmem_atomics --cswap32       4-byte compare-swaps only
 *   oshrun -np 2     shmem_atomics --bench N       latency, PE 0 -> PE 1
 *
 * Functional part: every PE runs, on every type, the full sequence of
 * atomics (set, fetch, swap, inc, fetch_inc, add, fetch_add, compare_swap
 * failing and succeeding, and the bitwise and/or/xor with and without
 * fetch), both in the OpenSHMEM 1.4 names and in the deprecated ones, on its
 * own slot of its right neighbour and of itself. Every fetched value is
 * compared with a model computed locally; non-fetching operations are
 * separated from the next one by shmem_quiet, shmem_fence or
 * shmem_barrier_all in turn. At the end the owner of each slot compares its
 * memory with the final model value the origin put there.
 *
 * Bursts: 300 non-fetching atomics per PE in flight (more than a send
 * queue holds), a shmem_fence in the middle, then shmem_quiet, after which
 * the PE's own additions must all be visible; totals checked by all PEs.
 *
 * Contention part: all PEs hammer words on PE 0 (which hammers its own):
 * fetch_inc tickets must be unique (checked with fetch_or on a bitmap) and
 * increasing per PE, counters must add up exactly, compare-swap increment
 * loops must lose nothing, swaps must conserve the sum of the tokens, each
 * PE's bits must survive concurrent and/or/xor of the other PEs' bits, and
 * a counter updated with non-atomic get/put under shmem_set_lock /
 * shmem_test_lock must count every update.
 *
 * The 4-byte compare-swaps (shmem_int_cswap, shmem_{int,uint}_atomic_-
 * compare_swap, shmemx_int32_cswap) are only run with --cswap32 or, after
 * everything else has been checked and summed up, --then-cswap32: Open MPI 4.1.4's atomic ucx
 * component stores the 8-byte operand into the caller's 4-byte result
 * (atomic_ucx_cswap.c, "*prev = value" with a uint64_t *prev), which
 * overwrites the stack of the calling function and is caught by the stack
 * protector ("stack smashing detected"), whatever the transport.
 *
 * Prints one line per failed check and "shmem_atomics: <what>, <n> PEs: N
 * checks, M failed" on PE 0; exits non-zero if any check failed on any PE.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <shmem.h>
#include <shmemx.h>

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_PES      64
#define MAX_TICKETS  (64 * 1024)

static int me, npes;
static long checks, failures;
static int sync_step;

static void check_eq(const char *what, const char *type, const char *op,
                     unsigned long long expect, unsigned long long got)
{
    ++checks;
    if (expect != got) {
        ++failures;
        printf("shmem_atomics: PE %d: %s %s %s: expected 0x%llx, got 0x%llx\n",
               me, what, type, op, expect, got);
        fflush(stdout);
    }
}

/* Between a non-fetching atomic and the next operation on the same word:
 * quiet, fence and barrier in turn (all PEs run the same sequence, so the
 * barriers match). */
static void order_after_nonfetch(void)
{
    switch (sync_step++ % 3) {
    case 0: shmem_quiet(); break;
    case 1: shmem_fence(); break;
    default: shmem_barrier_all(); break;
    }
}

/* Symmetric slots: slot[i] on PE p is written by origin i only. The final
 * model value is put into expect[i] on the same PE. */
#define SLOTS(TN, T)                                 \
    static T slot_##TN[MAX_PES], self_##TN[MAX_PES], \
             expect_##TN[MAX_PES], expect_self_##TN[MAX_PES];

/* Start values with the high bit and bits in both halves set, so that sign,
 * width and carries are visible. */
#define START(T) ((T)(sizeof(T) == 8 ? 0x8123456789abcdefULL + (unsigned)me : \
                                       0x89abcdefULL + (unsigned)me))
#define OTHER(T) ((T)(sizeof(T) == 8 ? 0x0fedcba987654321ULL ^ (unsigned)me : \
                                       0x07654321ULL ^ (unsigned)me))
/* Crosses the 32-bit (or 16-bit) boundary on add. */
#define ADDEND(T) ((T)(sizeof(T) == 8 ? 0xffffffffULL : 0xffffULL))

/* Standard atomics, OpenSHMEM 1.4 names, on word *w of PE pe. The model is
 * kept in the unsigned type UT (no signed overflow in the model). */
#define STD_SEQ(TN, T, UT, w, pe, what, with_cswap)                            \
    do {                                                                       \
        UT m = (UT)START(T);                                                   \
        T r;                                                                   \
        shmem_##TN##_atomic_set(w, (T)m, pe);                                  \
        order_after_nonfetch();                                                \
        r = shmem_##TN##_atomic_fetch(w, pe);                                  \
        check_eq(what, #TN, "atomic_set+atomic_fetch", m, (UT)r);              \
        r = shmem_##TN##_atomic_swap(w, (T)OTHER(T), pe);                      \
        check_eq(what, #TN, "atomic_swap", m, (UT)r);                          \
        m = (UT)OTHER(T);                                                      \
        shmem_##TN##_atomic_inc(w, pe);                                        \
        m += 1;                                                                \
        order_after_nonfetch();                                                \
        r = shmem_##TN##_atomic_fetch_inc(w, pe);                              \
        check_eq(what, #TN, "atomic_inc+atomic_fetch_inc", m, (UT)r);          \
        m += 1;                                                                \
        shmem_##TN##_atomic_add(w, ADDEND(T), pe);                             \
        m += (UT)ADDEND(T);                                                    \
        order_after_nonfetch();                                                \
        r = shmem_##TN##_atomic_fetch_add(w, (T)-3, pe);                       \
        check_eq(what, #TN, "atomic_add+atomic_fetch_add", m, (UT)r);          \
        m -= 3;                                                                \
        if (with_cswap) {                                                      \
            r = shmem_##TN##_atomic_compare_swap(w, (T)(m + 1), (T)START(T),   \
                                                 pe);                          \
            check_eq(what, #TN, "atomic_compare_swap (no match)", m, (UT)r);   \
            r = shmem_##TN##_atomic_compare_swap(w, (T)m, (T)START(T), pe);    \
            check_eq(what, #TN, "atomic_compare_swap (match)", m, (UT)r);      \
            m = (UT)START(T);                                                  \
        }                                                                      \
        r = shmem_##TN##_atomic_fetch(w, pe);                                  \
        check_eq(what, #TN, "atomic_fetch", m, (UT)r);                         \
        final = (T)m;                                                          \
    } while (0)

/* The same with the names OpenSHMEM 1.4 deprecates. */
#define OLD_SEQ(TN, T, UT, w, pe, what, with_cswap)                            \
    do {                                                                       \
        UT m = (UT)OTHER(T);                                                   \
        T r;                                                                   \
        shmem_##TN##_set(w, (T)m, pe);                                         \
        order_after_nonfetch();                                                \
        r = shmem_##TN##_fetch(w, pe);                                         \
        check_eq(what, #TN, "set+fetch", m, (UT)r);                            \
        r = shmem_##TN##_swap(w, (T)START(T), pe);                             \
        check_eq(what, #TN, "swap", m, (UT)r);                                 \
        m = (UT)START(T);                                                      \
        shmem_##TN##_inc(w, pe);                                               \
        m += 1;                                                                \
        order_after_nonfetch();                                                \
        r = shmem_##TN##_finc(w, pe);                                          \
        check_eq(what, #TN, "inc+finc", m, (UT)r);                             \
        m += 1;                                                                \
        shmem_##TN##_add(w, ADDEND(T), pe);                                    \
        m += (UT)ADDEND(T);                                                    \
        order_after_nonfetch();                                                \
        r = shmem_##TN##_fadd(w, (T)-5, pe);                                   \
        check_eq(what, #TN, "add+fadd", m, (UT)r);                             \
        m -= 5;                                                                \
        if (with_cswap) {                                                      \
            r = shmem_##TN##_cswap(w, (T)(m - 1), (T)OTHER(T), pe);            \
            check_eq(what, #TN, "cswap (no match)", m, (UT)r);                 \
            r = shmem_##TN##_cswap(w, (T)m, (T)OTHER(T), pe);                  \
            check_eq(what, #TN, "cswap (match)", m, (UT)r);                    \
            m = (UT)OTHER(T);                                                  \
        }                                                                      \
        r = shmem_##TN##_fetch(w, pe);                                         \
        check_eq(what, #TN, "fetch", m, (UT)r);                                \
        final = (T)m;                                                          \
    } while (0)

/* Bitwise atomics (OpenSHMEM 1.4: unsigned and fixed-width types). */
#define BIT_SEQ(TN, T, UT, w, pe, what)                                        \
    do {                                                                       \
        UT m = (UT)START(T);                                                   \
        UT a = (UT)0xf0f0f0f0f0f0f0f0ULL, o = (UT)0x0102030405060708ULL;       \
        T r;                                                                   \
        shmem_##TN##_atomic_set(w, (T)m, pe);                                  \
        order_after_nonfetch();                                                \
        shmem_##TN##_atomic_and(w, (T)a, pe);                                  \
        m &= a;                                                                \
        order_after_nonfetch();                                                \
        r = shmem_##TN##_atomic_fetch_and(w, (T)~(UT)0x10, pe);                \
        check_eq(what, #TN, "atomic_and+atomic_fetch_and", m, (UT)r);          \
        m &= (UT)~(UT)0x10;                                                    \
        shmem_##TN##_atomic_or(w, (T)o, pe);                                   \
        m |= o;                                                                \
        order_after_nonfetch();                                                \
        r = shmem_##TN##_atomic_fetch_or(w, (T)0x0f, pe);                      \
        check_eq(what, #TN, "atomic_or+atomic_fetch_or", m, (UT)r);            \
        m |= 0x0f;                                                             \
        shmem_##TN##_atomic_xor(w, (T)OTHER(T), pe);                           \
        m ^= (UT)OTHER(T);                                                     \
        order_after_nonfetch();                                                \
        r = shmem_##TN##_atomic_fetch_xor(w, (T)(UT)-1, pe);                   \
        check_eq(what, #TN, "atomic_xor+atomic_fetch_xor", m, (UT)r);          \
        m ^= (UT)-1;                                                           \
        r = shmem_##TN##_atomic_fetch(w, pe);                                  \
        check_eq(what, #TN, "atomic_fetch", m, (UT)r);                         \
        final = (T)m;                                                          \
    } while (0)

/* fetch on the fixed-width types is not in Open MPI 4.1.4's shmem.h:
 * the bitwise sequence on them ends with a get instead. */
#define BIT_SEQ_FIXED(TN, T, UT, GET, w, pe, what)                             \
    do {                                                                       \
        UT m = (UT)START(T);                                                   \
        T r;                                                                   \
        shmem_##TN##_atomic_fetch_and(w, (T)0, pe); /* clears the word */     \
        order_after_nonfetch();                                                \
        shmem_##TN##_atomic_or(w, (T)m, pe);                                   \
        order_after_nonfetch();                                                \
        r = shmem_##TN##_atomic_fetch_and(w, (T)0xf0f0f0f0f0f0f0f0ULL, pe);    \
        check_eq(what, #TN, "atomic_or+atomic_fetch_and", m, (UT)r);           \
        m &= (UT)0xf0f0f0f0f0f0f0f0ULL;                                        \
        shmem_##TN##_atomic_and(w, (T)~(UT)0x100, pe);                         \
        m &= (UT)~(UT)0x100;                                                   \
        order_after_nonfetch();                                                \
        r = shmem_##TN##_atomic_fetch_or(w, (T)0x0f, pe);                      \
        check_eq(what, #TN, "atomic_and+atomic_fetch_or", m, (UT)r);           \
        m |= 0x0f;                                                             \
        shmem_##TN##_atomic_xor(w, (T)OTHER(T), pe);                           \
        m ^= (UT)OTHER(T);                                                     \
        order_after_nonfetch();                                                \
        r = shmem_##TN##_atomic_fetch_xor(w, (T)(UT)-1, pe);                   \
        check_eq(what, #TN, "atomic_xor+atomic_fetch_xor", m, (UT)r);          \
        m ^= (UT)-1;                                                           \
        shmem_quiet();                                                         \
        r = GET(w, pe);                                                        \
        check_eq(what, #TN, "get after atomic_fetch_xor", m, (UT)r);           \
        final = (T)m;                                                          \
    } while (0)

/* One test function per (sequence, type): the sequence on the right
 * neighbour's slot and on its own, then the final values are put next to
 * the slots for their owners to check. */
#define DEFINE_TEST(NAME, TN, T, SEQ)                                          \
    SLOTS(NAME, T)                                                             \
    static void test_##NAME(void)                                              \
    {                                                                          \
        int right = (me + 1) % npes;                                           \
        T final;                                                               \
        SEQ(&slot_##NAME[me], right, "neighbour");                             \
        shmem_##TN##_p(&expect_##NAME[me], final, right);                      \
        SEQ(&self_##NAME[me], me, "self");                                     \
        shmem_##TN##_p(&expect_self_##NAME[me], final, me);                    \
    }                                                                          \
    static void verify_##NAME(void)                                            \
    {                                                                          \
        int left = (me + npes - 1) % npes;                                     \
        check_eq("owner memory", #NAME, "neighbour's final value",             \
                 (unsigned long long)expect_##NAME[left],                      \
                 (unsigned long long)slot_##NAME[left]);                       \
        check_eq("owner memory", #NAME, "own final value",                     \
                 (unsigned long long)expect_self_##NAME[me],                   \
                 (unsigned long long)self_##NAME[me]);                         \
    }

/* Glue: the sequence macros take (w, pe, what) and assign `final`. */
#define S_std_int(w, pe, what)        STD_SEQ(int, int, unsigned, w, pe, what, 0)
#define S_std_long(w, pe, what)       STD_SEQ(long, long, unsigned long, w, pe, what, 1)
#define S_std_longlong(w, pe, what)   STD_SEQ(longlong, long long, unsigned long long, w, pe, what, 1)
#define S_std_uint(w, pe, what)       STD_SEQ(uint, unsigned, unsigned, w, pe, what, 0)
#define S_std_ulong(w, pe, what)      STD_SEQ(ulong, unsigned long, unsigned long, w, pe, what, 1)
#define S_std_ulonglong(w, pe, what)  STD_SEQ(ulonglong, unsigned long long, unsigned long long, w, pe, what, 1)
#define S_old_int(w, pe, what)        OLD_SEQ(int, int, unsigned, w, pe, what, 0)
#define S_old_long(w, pe, what)       OLD_SEQ(long, long, unsigned long, w, pe, what, 1)
#define S_old_longlong(w, pe, what)   OLD_SEQ(longlong, long long, unsigned long long, w, pe, what, 1)
#define S_bit_uint(w, pe, what)       BIT_SEQ(uint, unsigned, unsigned, w, pe, what)
#define S_bit_ulong(w, pe, what)      BIT_SEQ(ulong, unsigned long, unsigned long, w, pe, what)
#define S_bit_ulonglong(w, pe, what)  BIT_SEQ(ulonglong, unsigned long long, unsigned long long, w, pe, what)
#define S_bit_int32(w, pe, what)      BIT_SEQ_FIXED(int32, int32_t, uint32_t, shmem_int32_g, w, pe, what)
#define S_bit_int64(w, pe, what)      BIT_SEQ_FIXED(int64, int64_t, uint64_t, shmem_int64_g, w, pe, what)
#define S_bit_uint32(w, pe, what)     BIT_SEQ_FIXED(uint32, uint32_t, uint32_t, shmem_uint32_g, w, pe, what)
#define S_bit_uint64(w, pe, what)     BIT_SEQ_FIXED(uint64, uint64_t, uint64_t, shmem_uint64_g, w, pe, what)

DEFINE_TEST(std_int, int, int, S_std_int)
DEFINE_TEST(std_long, long, long, S_std_long)
DEFINE_TEST(std_longlong, longlong, long long, S_std_longlong)
DEFINE_TEST(std_uint, uint, unsigned, S_std_uint)
DEFINE_TEST(std_ulong, ulong, unsigned long, S_std_ulong)
DEFINE_TEST(std_ulonglong, ulonglong, unsigned long long, S_std_ulonglong)
DEFINE_TEST(old_int, int, int, S_old_int)
DEFINE_TEST(old_long, long, long, S_old_long)
DEFINE_TEST(old_longlong, longlong, long long, S_old_longlong)
DEFINE_TEST(bit_uint, uint, unsigned, S_bit_uint)
DEFINE_TEST(bit_ulong, ulong, unsigned long, S_bit_ulong)
DEFINE_TEST(bit_ulonglong, ulonglong, unsigned long long, S_bit_ulonglong)
DEFINE_TEST(bit_int32, int32, int32_t, S_bit_int32)
DEFINE_TEST(bit_int64, int64, int64_t, S_bit_int64)
DEFINE_TEST(bit_uint32, uint32, uint32_t, S_bit_uint32)
DEFINE_TEST(bit_uint64, uint64, uint64_t, S_bit_uint64)

static void functional(void)
{
#define RUN(NAME) test_##NAME();
    RUN(std_int) RUN(std_long) RUN(std_longlong)
    RUN(std_uint) RUN(std_ulong) RUN(std_ulonglong)
    RUN(old_int) RUN(old_long) RUN(old_longlong)
    RUN(bit_uint) RUN(bit_ulong) RUN(bit_ulonglong)
    RUN(bit_int32) RUN(bit_int64) RUN(bit_uint32) RUN(bit_uint64)
    shmem_barrier_all(); /* completes the puts of the final values */
#undef RUN
#define RUN(NAME) verify_##NAME();
    RUN(std_int) RUN(std_long) RUN(std_longlong)
    RUN(std_uint) RUN(std_ulong) RUN(std_ulonglong)
    RUN(old_int) RUN(old_long) RUN(old_longlong)
    RUN(bit_uint) RUN(bit_ulong) RUN(bit_ulonglong)
    RUN(bit_int32) RUN(bit_int64) RUN(bit_uint32) RUN(bit_uint64)
#undef RUN
    shmem_barrier_all();
}

/* ---- Contention: every PE on the same words of PE 0 -------------------- */

static long long counter_ll;          /* fetch_inc/inc/fetch_add/add */
static int counter_i;
static unsigned long long counter_ull;
static long ticket;                   /* fetch_inc only: unique tickets */
static unsigned long long ticket_map[MAX_TICKETS / 64];
static long cas_counter_l;            /* compare-swap increment loops */
static unsigned long long cas_counter_ull;
static unsigned long long swap_word;  /* tokens passed around by swap */
static unsigned long long swap_sum;   /* what the swaps returned, summed */
static unsigned long long bits64;     /* per-PE bits, and/or/xor */
static unsigned int bits32;
static long lock_word;                /* shmem_set_lock / shmem_test_lock */
static long locked_counter;           /* non-atomic get/put under the lock */


/* A spin on a remote word gives up after this long instead of hanging. */
#define SPIN_LIMIT_S 120

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void give_up(const char *what)
{
    printf("shmem_atomics: PE %d: %s did not finish within %d s\n", me, what,
           SPIN_LIMIT_S);
    fflush(stdout);
    shmem_global_exit(1);
}

/* Increment by compare-swap, as a lock-free runtime does. */
#define CAS_INCREMENT(TN, T, w)                                                \
    do {                                                                       \
        T seen = shmem_##TN##_atomic_fetch(w, 0), r;                           \
        double t0 = now_s();                                                   \
        while ((r = shmem_##TN##_atomic_compare_swap(w, seen, seen + 1, 0)) != \
               seen) {                                                         \
            seen = r;                                                          \
            if (now_s() - t0 > SPIN_LIMIT_S) {                                 \
                give_up("compare-swap increment on " #TN);                     \
            }                                                                  \
        }                                                                      \
    } while (0)

static void locked_increment(int use_test_lock)
{
    if (use_test_lock) {
        double t0 = now_s();
        while (shmem_test_lock(&lock_word) != 0) {
            if (now_s() - t0 > SPIN_LIMIT_S) {
                give_up("shmem_test_lock");
            }
        }
    } else {
        shmem_set_lock(&lock_word);
    }
    /* Not atomic on purpose: only the lock keeps updates from being lost. */
    long v = shmem_long_g(&locked_counter, 0);
    shmem_long_p(&locked_counter, v + 1, 0);
    shmem_quiet();
    shmem_clear_lock(&lock_word);
}

static unsigned long long swap_token(int pe, int i)
{
    return ((unsigned long long)(pe + 1) << 40) + (unsigned)i + 1;
}

static void contention(int iters)
{
    unsigned long long bit64 = 1ULL << me, bit32 = 1U << (me % 32);
    unsigned long long my_swap_sum = 0, old;
    long prev_ticket = -1;

    for (int i = 0; i < iters; ++i) {
        long t = shmem_long_atomic_fetch_inc(&ticket, 0);
        if (t <= prev_ticket || t < 0 || t >= MAX_TICKETS) {
            check_eq("contention", "long", "fetch_inc ticket increasing, in range",
                     (unsigned long long)(prev_ticket + 1), (unsigned long long)t);
        } else {
            unsigned long long bit = 1ULL << (t % 64);
            old = shmem_ulonglong_atomic_fetch_or(&ticket_map[t / 64], bit, 0);
            check_eq("contention", "ulonglong", "fetch_or: ticket not seen before",
                     0, old & bit);
        }
        prev_ticket = t;

        shmem_longlong_atomic_inc(&counter_ll, 0);
        (void)shmem_longlong_atomic_fetch_add(&counter_ll, 3, 0);
        shmem_longlong_atomic_add(&counter_ll, 5, 0);
        (void)shmem_int_atomic_fetch_inc(&counter_i, 0);
        shmem_int_atomic_add(&counter_i, -2, 0);
        shmem_ulonglong_atomic_add(&counter_ull, 0x100000001ULL, 0);

        CAS_INCREMENT(long, long, &cas_counter_l);
        CAS_INCREMENT(ulonglong, unsigned long long, &cas_counter_ull);

        my_swap_sum += shmem_ulonglong_atomic_swap(&swap_word, swap_token(me, i), 0);

        /* My bit, in words that the other PEs update at the same time. */
        old = shmem_ulonglong_atomic_fetch_or(&bits64, bit64, 0);
        check_eq("contention", "ulonglong", "fetch_or: own bit was clear", 0, old & bit64);
        old = shmem_ulonglong_atomic_fetch_and(&bits64, ~bit64, 0);
        check_eq("contention", "ulonglong", "fetch_and: own bit was set", bit64, old & bit64);
        shmem_ulonglong_atomic_xor(&bits64, bit64, 0);
        shmem_fence(); /* orders the xor before the next xor */
        old = shmem_ulonglong_atomic_fetch_xor(&bits64, bit64, 0);
        check_eq("contention", "ulonglong", "xor+fetch_xor: own bit was set", bit64, old & bit64);
        if (me < 32) {
            unsigned o32 = shmem_uint_atomic_fetch_or(&bits32, (unsigned)bit32, 0);
            check_eq("contention", "uint", "fetch_or: own bit was clear", 0, o32 & bit32);
            o32 = shmem_uint_atomic_fetch_xor(&bits32, (unsigned)bit32, 0);
            check_eq("contention", "uint", "fetch_xor: own bit was set", bit32, o32 & bit32);
        }

        locked_increment(i % 2);
    }
    shmem_ulonglong_atomic_add(&swap_sum, my_swap_sum, 0);
    shmem_ulonglong_atomic_or(&bits64, bit64, 0);
    shmem_quiet();
    shmem_barrier_all();

    /* Every PE reads the results remotely, PE 0 also locally. */
    unsigned long long n = (unsigned long long)npes * (unsigned)iters;
    check_eq("contention total", "long", "fetch_inc tickets", n,
             (unsigned long long)shmem_long_atomic_fetch(&ticket, 0));
    check_eq("contention total", "longlong", "inc+fetch_add(3)+add(5)", 9 * n,
             (unsigned long long)shmem_longlong_atomic_fetch(&counter_ll, 0));
    check_eq("contention total", "int", "fetch_inc+add(-2)", (unsigned)-(int)n,
             (unsigned)shmem_int_atomic_fetch(&counter_i, 0));
    check_eq("contention total", "ulonglong", "add(0x100000001)", n * 0x100000001ULL,
             shmem_ulonglong_atomic_fetch(&counter_ull, 0));
    check_eq("contention total", "long", "compare_swap increments", n,
             (unsigned long long)shmem_long_atomic_fetch(&cas_counter_l, 0));
    check_eq("contention total", "ulonglong", "compare_swap increments", n,
             shmem_ulonglong_atomic_fetch(&cas_counter_ull, 0));
    check_eq("contention total", "long", "get/put under shmem_set_lock/shmem_test_lock",
             n, (unsigned long long)shmem_long_g(&locked_counter, 0));
    unsigned long long all_bits = npes >= 64 ? ~0ULL : (1ULL << npes) - 1;
    check_eq("contention total", "ulonglong", "every PE's bit after or/and/xor", all_bits,
             shmem_ulonglong_atomic_fetch(&bits64, 0));
    check_eq("contention total", "uint", "fetch_or+fetch_xor leave 0", 0,
             shmem_uint_atomic_fetch(&bits32, 0));
    if (me == 0) {
        unsigned long long tokens = 0;
        for (int p = 0; p < npes; ++p) {
            for (int i = 0; i < iters; ++i) {
                tokens += swap_token(p, i);
            }
        }
        /* What was swapped in = what the swaps returned + what is left. */
        check_eq("contention total", "ulonglong", "swap conserves the tokens",
                 tokens, swap_sum + swap_word);
        for (unsigned long long t = 0; t < MAX_TICKETS; ++t) {
            unsigned long long set = (ticket_map[t / 64] >> (t % 64)) & 1;
            if (set != (t < n)) {
                check_eq("contention total", "ulonglong", "ticket map", t < n, set);
                break;
            }
        }
        check_eq("contention total", "longlong", "PE 0's own memory", 9 * n,
                 (unsigned long long)counter_ll);
    }
    shmem_barrier_all();
}

/* ---- Bursts: many non-fetching atomics in flight, then fence / quiet ---- */

#define BURST 300 /* more than a transport's send queue (atomicx: 128) */

static unsigned long long burst_add64, burst_xor64;
static unsigned int burst_xor32;
static unsigned long long burst_own[MAX_PES];

static unsigned long long burst_token(int pe, int k)
{
    return 0xd1b54a32d192ed03ULL * (unsigned long long)(pe * 4099 + k + 1);
}

static void bursts(int rounds)
{
    int right = (me + 1) % npes;
    unsigned long long expect_own = 0;

    for (int r = 0; r < rounds; ++r) {
        for (int k = 0; k < BURST; ++k) {
            shmem_ulonglong_atomic_add(&burst_add64, 1, 0);
            shmem_ulonglong_atomic_xor(&burst_xor64, burst_token(me, k), 0);
            shmem_uint_atomic_xor(&burst_xor32, (unsigned)burst_token(me, k), 0);
            shmem_ulonglong_atomic_add(&burst_own[me], 3, right);
            if (k == BURST / 2) {
                shmem_fence(); /* with all of the above in flight */
            }
        }
        expect_own += 3 * BURST;
        shmem_quiet(); /* completes every one of them */
        /* After quiet, this PE's own slot shows every add it made. */
        check_eq("burst", "ulonglong", "atomic_add x300 then shmem_quiet, then fetch",
                 expect_own, shmem_ulonglong_atomic_fetch(&burst_own[me], right));
    }
    shmem_barrier_all();

    unsigned long long x64 = 0;
    unsigned x32 = 0;
    for (int p = 0; p < npes; ++p) {
        for (int k = 0; k < BURST; ++k) {
            if (rounds % 2) {
                x64 ^= burst_token(p, k);
                x32 ^= (unsigned)burst_token(p, k);
            }
        }
    }
    check_eq("burst total", "ulonglong", "atomic_add from every PE",
             (unsigned long long)npes * BURST * rounds,
             shmem_ulonglong_atomic_fetch(&burst_add64, 0));
    check_eq("burst total", "ulonglong", "atomic_xor from every PE", x64,
             shmem_ulonglong_atomic_fetch(&burst_xor64, 0));
    check_eq("burst total", "uint", "atomic_xor from every PE", x32,
             shmem_uint_atomic_fetch(&burst_xor32, 0));
    shmem_barrier_all();
}

/* ---- 4-byte compare-swap (Open MPI 4.1.4 defect, see the top) ---------- */

static int cs_int;
static unsigned cs_uint;
static int32_t cs_int32;

static void cswap32(void)
{
    int right = (me + 1) % npes;
    shmem_int_atomic_set(&cs_int, 7, right);
    shmem_quiet();
    check_eq("cswap32", "int", "cswap (no match)", 7,
             (unsigned)shmem_int_cswap(&cs_int, 6, 9, right));
    check_eq("cswap32", "int", "cswap (match)", 7,
             (unsigned)shmem_int_cswap(&cs_int, 7, 9, right));
    check_eq("cswap32", "int", "atomic_compare_swap (match)", 9,
             (unsigned)shmem_int_atomic_compare_swap(&cs_int, 9, -1, right));
    check_eq("cswap32", "uint", "atomic_compare_swap (match)", 0,
             shmem_uint_atomic_compare_swap(&cs_uint, 0, 0x80000001u, right));
    check_eq("cswap32", "int32", "shmemx_int32_cswap (match)", 0,
             (unsigned)shmemx_int32_cswap(&cs_int32, 0, 5, right));
    shmem_barrier_all();
}

/* ---- Latency: PE 0 -> PE 1 while PE 1 waits in a barrier --------------- */

static long bench_long;
static int bench_int;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void report(const char *name, double *t, int n)
{
    double sum = 0;
    for (int i = 0; i < n; ++i) {
        sum += t[i];
    }
    qsort(t, n, sizeof(*t), cmp_double);
    printf("bench: %s: median %.1f us, mean %.1f us, %d ops\n", name,
           t[n / 2] * 1e6, sum / n * 1e6, n);
}

static void bench(int n)
{
    if (me == 0) {
        double *t = calloc(n, sizeof(*t));
        long expect = 0;
        int warm = n / 10 + 1;
        if (t == NULL) {
            shmem_global_exit(1);
        }
        for (int i = 0; i < warm; ++i) {
            check_eq("bench", "long", "atomic_fetch_add (warm-up)", expect,
                     shmem_long_atomic_fetch_add(&bench_long, 1, 1));
            ++expect;
        }
        for (int i = 0; i < n; ++i) {
            double t0 = now_s();
            long r = shmem_long_atomic_fetch_add(&bench_long, 1, 1);
            t[i] = now_s() - t0;
            check_eq("bench", "long", "atomic_fetch_add", expect, r);
            ++expect;
        }
        report("shmem_long_atomic_fetch_add", t, n);
        for (int i = 0; i < n; ++i) {
            double t0 = now_s();
            long r = shmem_long_atomic_compare_swap(&bench_long, expect, expect + 1, 1);
            t[i] = now_s() - t0;
            check_eq("bench", "long", "atomic_compare_swap", expect, r);
            ++expect;
        }
        report("shmem_long_atomic_compare_swap", t, n);
        for (int i = 0; i < n; ++i) {
            double t0 = now_s();
            int r = shmem_int_atomic_fetch_add(&bench_int, 1, 1);
            t[i] = now_s() - t0;
            check_eq("bench", "int", "atomic_fetch_add", i, r);
        }
        report("shmem_int_atomic_fetch_add", t, n);
        free(t);
    }
    shmem_barrier_all();
}

/* Sums every PE's checks and failures on PE 0, prints the summary line;
 * returns non-zero on every PE if any check failed. */
static int summarize(const char *mode)
{
    static long total_failures, total_checks;
    shmem_barrier_all();
    total_failures = total_checks = 0;
    shmem_barrier_all();
    shmem_long_atomic_add(&total_failures, failures, 0);
    shmem_long_atomic_add(&total_checks, checks, 0);
    shmem_quiet();
    shmem_barrier_all();
    int rc = shmem_long_atomic_fetch(&total_failures, 0) != 0;
    if (me == 0) {
        printf("shmem_atomics: %s, %d PEs: %ld checks, %ld failed\n", mode,
               npes, total_checks, total_failures);
        fflush(stdout);
    }
    shmem_barrier_all();
    checks = failures = 0;
    return rc;
}

int main(int argc, char **argv)
{
    int iters = 50, bench_n = 0, only_cswap32 = 0, then_cswap32 = 0, rc;

    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
            iters = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--bench") && i + 1 < argc) {
            bench_n = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--cswap32")) {
            only_cswap32 = 1;
        } else if (!strcmp(argv[i], "--then-cswap32")) {
            then_cswap32 = 1;
        } else {
            fprintf(stderr, "usage: %s [--iters N [--then-cswap32] | --bench N | --cswap32]\n",
                    argv[0]);
            return 2;
        }
    }

    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    if (npes < 2 || npes > MAX_PES || iters < 1 ||
        (long)npes * iters > MAX_TICKETS || bench_n < 0) {
        if (me == 0) {
            fprintf(stderr, "shmem_atomics: needs 2..%d PEs, 1 <= PEs * iters <= %d\n",
                    MAX_PES, MAX_TICKETS);
        }
        shmem_finalize();
        return 2;
    }

    if (only_cswap32) {
        cswap32();
        rc = summarize("4-byte compare-swap");
    } else if (bench_n > 0) {
        bench(bench_n);
        rc = summarize("latency");
    } else {
        functional();
        contention(iters);
        bursts(3);
        rc = summarize("functional + contention + bursts");
        if (then_cswap32) {
            /* Last, as it aborts with Open MPI 4.1.4 (see the top). */
            if (me == 0) {
                printf("shmem_atomics: 4-byte compare-swaps next\n");
                fflush(stdout);
            }
            shmem_barrier_all();
            rc |= (cswap32(), summarize("4-byte compare-swap"));
        }
    }

    /* Marks where this process's finalize starts: the harness accepts some
     * UCX lines only after it (see contrib/softroce/openmpi-guest.sh). */
    printf("%s: pid %d: finalizing\n", "shmem_atomics", (int)getpid());
    fflush(stdout);
    shmem_finalize();
    return rc;
}
