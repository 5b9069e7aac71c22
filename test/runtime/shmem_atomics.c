/*
 * OpenSHMEM 1.4 atomics, checked against a local model.
 *
 *   oshrun -np <2|4> shmem_atomics [--iters N] [--bursts N]
 *                                                  functional, contention,
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
 * Bursts (--bursts rounds, default 3): 300 non-fetching atomics per PE in
 * flight (more than a send queue holds), a shmem_fence in the middle, then
 * shmem_quiet, after which the PE's own additions must all be visible;
 * totals checked by all PEs.
 *
 * Contention part, first with PEs 0 and 1, then with all PEs (the others
 * wait): the PEs hammer words on PE 0 (which hammers its own):
 * fetch_inc tickets must be unique (checked with fetch_or on a bitmap) and
 * increasing per PE, counters must add up exactly, compare-swap increment
 * loops must lose nothing, swaps must conserve the sum of the tokens, each
 * PE's bits must survive concurrent and/or/xor of the other PEs' bits, and
 * a counter updated with non-atomic get/put under shmem_set_lock /
 * shmem_test_lock must count every update.
 *
 * The 4-byte compare-swaps (shmem_int_cswap, shmem_{int,uint}_atomic_-
 * compare_swap, shmemx_int32_cswap) are only run with --cswap32 or, after
 * everything else has been checked and summed up, --then-cswap32: Open MPI
 * 4.1.4's atomic ucx component stores the 8-byte operand into the caller's 4-byte result
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
#include <unistd.h>

#include "timing.h"

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

/* Start values with the high bit and bits in both halves set, so that sign,
 * width and carries are visible. */
#define START(T) ((T)(sizeof(T) == 8 ? 0x8123456789abcdefULL + (unsigned)me : \
                                       0x89abcdefULL + (unsigned)me))
#define OTHER(T) ((T)(sizeof(T) == 8 ? 0x0fedcba987654321ULL ^ (unsigned)me : \
                                       0x07654321ULL ^ (unsigned)me))
/* Crosses the 32-bit (or 16-bit) boundary on add. */
#define ADDEND(T) ((T)(sizeof(T) == 8 ? 0xffffffffULL : 0xffffULL))

#define STR_(x) #x
#define STR(x)  STR_(x)

/* The two name families of the arithmetic atomics: OpenSHMEM 1.4's and the
 * ones it deprecates. OP(F, TN, op) is the function, e.g. OP(std, int, finc)
 * = shmem_int_atomic_fetch_inc, OP(old, int, finc) = shmem_int_finc. */
#define OP(F, TN, op) F##_##op(TN)
#define std_set(TN)   shmem_##TN##_atomic_set
#define std_fetch(TN) shmem_##TN##_atomic_fetch
#define std_swap(TN)  shmem_##TN##_atomic_swap
#define std_inc(TN)   shmem_##TN##_atomic_inc
#define std_finc(TN)  shmem_##TN##_atomic_fetch_inc
#define std_add(TN)   shmem_##TN##_atomic_add
#define std_fadd(TN)  shmem_##TN##_atomic_fetch_add
#define std_cswap(TN) shmem_##TN##_atomic_compare_swap
#define old_set(TN)   shmem_##TN##_set
#define old_fetch(TN) shmem_##TN##_fetch
#define old_swap(TN)  shmem_##TN##_swap
#define old_inc(TN)   shmem_##TN##_inc
#define old_finc(TN)  shmem_##TN##_finc
#define old_add(TN)   shmem_##TN##_add
#define old_fadd(TN)  shmem_##TN##_fadd
#define old_cswap(TN) shmem_##TN##_cswap

/* Checks what `r` fetched against the model `m`, naming the operations. */
#define CHECK(UT, TN, ops) check_eq(what, #TN, ops, (unsigned long long)m, (UT)r)

/* Arithmetic atomics of family F on word *w of PE pe, each fetched value
 * against the model m, kept in the unsigned type UT (no signed overflow in
 * the model). CS: with the compare-swaps (not on 4-byte types, see the top).
 * Returns the final value. */
#define ARITH_SEQ(F, TN, T, UT, CS)                                            \
    UT m = (UT)START(T);                                                       \
    T r;                                                                       \
    OP(F, TN, set)(w, (T)m, pe);                                               \
    order_after_nonfetch();                                                    \
    r = OP(F, TN, fetch)(w, pe);                                               \
    CHECK(UT, TN, STR(OP(F, TN, set)) "+" STR(OP(F, TN, fetch)));               \
    r = OP(F, TN, swap)(w, (T)OTHER(T), pe);                                   \
    CHECK(UT, TN, STR(OP(F, TN, swap)));                                        \
    m = (UT)OTHER(T);                                                          \
    OP(F, TN, inc)(w, pe);                                                     \
    m += 1;                                                                    \
    order_after_nonfetch();                                                    \
    r = OP(F, TN, finc)(w, pe);                                                \
    CHECK(UT, TN, STR(OP(F, TN, inc)) "+" STR(OP(F, TN, finc)));                \
    m += 1;                                                                    \
    OP(F, TN, add)(w, ADDEND(T), pe);                                          \
    m += (UT)ADDEND(T);                                                        \
    order_after_nonfetch();                                                    \
    r = OP(F, TN, fadd)(w, (T)-3, pe);                                         \
    CHECK(UT, TN, STR(OP(F, TN, add)) "+" STR(OP(F, TN, fadd)));                \
    m -= 3;                                                                    \
    if (CS) {                                                                  \
        r = OP(F, TN, cswap)(w, (T)(m + 1), (T)START(T), pe);                  \
        CHECK(UT, TN, STR(OP(F, TN, cswap)) " (no match)");                     \
        r = OP(F, TN, cswap)(w, (T)m, (T)START(T), pe);                        \
        CHECK(UT, TN, STR(OP(F, TN, cswap)) " (match)");                        \
        m = (UT)START(T);                                                      \
    }                                                                          \
    r = OP(F, TN, fetch)(w, pe);                                               \
    CHECK(UT, TN, STR(OP(F, TN, fetch)));                                       \
    return (T)m;

/* How the bitwise sequence sets and reads its word: with atomic set/fetch,
 * or, on the fixed-width types whose set/fetch Open MPI 4.1.4's shmem.h
 * lacks, with fetch_and(0) + or and with quiet + get. */
#define bit_init_std(TN, v)                                                    \
    shmem_##TN##_atomic_set(w, v, pe)
#define bit_init_fixed(TN, v)                                                  \
    ((void)shmem_##TN##_atomic_fetch_and(w, 0, pe), order_after_nonfetch(),    \
     shmem_##TN##_atomic_or(w, v, pe))
#define bit_read_std(TN)   shmem_##TN##_atomic_fetch(w, pe)
#define bit_read_fixed(TN) (shmem_quiet(), shmem_##TN##_g(w, pe))

/* Bitwise atomics (OpenSHMEM 1.4: unsigned and fixed-width types), with and
 * without fetch, on word *w of PE pe. F: std or fixed, see above. */
#define BIT_SEQ(F, TN, T, UT)                                                  \
    UT m = (UT)START(T);                                                       \
    T r;                                                                       \
    bit_init_##F(TN, (T)m);                                                    \
    order_after_nonfetch();                                                    \
    shmem_##TN##_atomic_and(w, (T)0xf0f0f0f0f0f0f0f0ULL, pe);                  \
    m &= (UT)0xf0f0f0f0f0f0f0f0ULL;                                            \
    order_after_nonfetch();                                                    \
    r = shmem_##TN##_atomic_fetch_and(w, (T)~(UT)0x100, pe);                   \
    CHECK(UT, TN, "atomic_and+atomic_fetch_and");                               \
    m &= (UT)~(UT)0x100;                                                       \
    shmem_##TN##_atomic_or(w, (T)0x0102030405060708ULL, pe);                   \
    m |= (UT)0x0102030405060708ULL;                                            \
    order_after_nonfetch();                                                    \
    r = shmem_##TN##_atomic_fetch_or(w, (T)0x0f, pe);                          \
    CHECK(UT, TN, "atomic_or+atomic_fetch_or");                                 \
    m |= 0x0f;                                                                 \
    shmem_##TN##_atomic_xor(w, (T)OTHER(T), pe);                               \
    m ^= (UT)OTHER(T);                                                         \
    order_after_nonfetch();                                                    \
    r = shmem_##TN##_atomic_fetch_xor(w, (T)(UT)-1, pe);                       \
    CHECK(UT, TN, "atomic_xor+atomic_fetch_xor");                               \
    m ^= (UT)-1;                                                               \
    r = bit_read_##F(TN);                                                      \
    CHECK(UT, TN, "read back after atomic_fetch_xor");                          \
    return (T)m;

/* The types, one table per family:
 *   X(family, type name, C type, unsigned model type, with compare-swap) */
#define ARITH_TYPES(X)                                                         \
    X(std, int, int, unsigned, 0)                                              \
    X(std, long, long, unsigned long, 1)                                       \
    X(std, longlong, long long, unsigned long long, 1)                         \
    X(std, uint, unsigned, unsigned, 0)                                        \
    X(std, ulong, unsigned long, unsigned long, 1)                             \
    X(std, ulonglong, unsigned long long, unsigned long long, 1)               \
    X(old, int, int, unsigned, 0)                                              \
    X(old, long, long, unsigned long, 1)                                       \
    X(old, longlong, long long, unsigned long long, 1)
#define BIT_TYPES(X)                                                           \
    X(std, uint, unsigned, unsigned)                                           \
    X(std, ulong, unsigned long, unsigned long)                                \
    X(std, ulonglong, unsigned long long, unsigned long long)                  \
    X(fixed, int32, int32_t, uint32_t)                                         \
    X(fixed, int64, int64_t, uint64_t)                                         \
    X(fixed, uint32, uint32_t, uint32_t)                                       \
    X(fixed, uint64, uint64_t, uint64_t)

/* Per (sequence, type): symmetric slots (slot[i] on PE p is written by origin
 * i only, the final model value is put into expect[i] on the same PE), the
 * sequence as a function, the test (the sequence on the right neighbour's
 * slot and on its own, then the final values put next to the slots for
 * their owners) and the owner's check. */
#define DEFINE_TEST(NAME, TN, T)                                               \
    static T slot_##NAME[MAX_PES], self_##NAME[MAX_PES],                       \
             expect_##NAME[MAX_PES], expect_self_##NAME[MAX_PES];              \
    static void test_##NAME(void)                                              \
    {                                                                          \
        int right = (me + 1) % npes;                                           \
        shmem_##TN##_p(&expect_##NAME[me],                                     \
                       seq_##NAME(&slot_##NAME[me], right, "neighbour"),       \
                       right);                                                 \
        shmem_##TN##_p(&expect_self_##NAME[me],                                \
                       seq_##NAME(&self_##NAME[me], me, "self"), me);          \
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

#define DEFINE_ARITH(F, TN, T, UT, CS)                                         \
    static T seq_##F##_##TN(T *w, int pe, const char *what)                    \
    {                                                                          \
        ARITH_SEQ(F, TN, T, UT, CS)                                            \
    }                                                                          \
    DEFINE_TEST(F##_##TN, TN, T)
#define DEFINE_BIT(F, TN, T, UT)                                               \
    static T seq_bit_##TN(T *w, int pe, const char *what)                      \
    {                                                                          \
        BIT_SEQ(F, TN, T, UT)                                                  \
    }                                                                          \
    DEFINE_TEST(bit_##TN, TN, T)

ARITH_TYPES(DEFINE_ARITH)
BIT_TYPES(DEFINE_BIT)

static void functional(void)
{
#define RUN_ARITH(F, TN, T, UT, CS) test_##F##_##TN();
#define RUN_BIT(F, TN, T, UT)       test_bit_##TN();
    ARITH_TYPES(RUN_ARITH)
    BIT_TYPES(RUN_BIT)
    shmem_barrier_all(); /* completes the puts of the final values */
#define VERIFY_ARITH(F, TN, T, UT, CS) verify_##F##_##TN();
#define VERIFY_BIT(F, TN, T, UT)       verify_bit_##TN();
    ARITH_TYPES(VERIFY_ARITH)
    BIT_TYPES(VERIFY_BIT)
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

/* PE 0 clears the contention words between two rounds. */
static void reset_contention(void)
{
    shmem_barrier_all();
    if (me == 0) {
        counter_ll = 0;
        counter_i = 0;
        counter_ull = 0;
        ticket = 0;
        memset(ticket_map, 0, sizeof(ticket_map));
        cas_counter_l = 0;
        cas_counter_ull = 0;
        swap_word = swap_sum = 0;
        bits64 = 0;
        bits32 = 0;
        locked_counter = 0;
    }
    shmem_barrier_all();
}

/* PEs 0 .. k-1 hammer the words; the others only check the totals. */
static void contention(int iters, int k)
{
    unsigned long long bit64 = 1ULL << me, bit32 = 1U << (me % 32);
    unsigned long long my_swap_sum = 0, old;
    long prev_ticket = -1;
    const int hammering = me < k;

    reset_contention();
    for (int i = 0; hammering && i < iters; ++i) {
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
    if (hammering) {
        shmem_ulonglong_atomic_add(&swap_sum, my_swap_sum, 0);
        shmem_ulonglong_atomic_or(&bits64, bit64, 0);
    }
    shmem_quiet();
    shmem_barrier_all();

    /* Every PE reads the results remotely, PE 0 also locally. */
    unsigned long long n = (unsigned long long)k * (unsigned)iters;
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
    unsigned long long all_bits = k >= 64 ? ~0ULL : (1ULL << k) - 1;
    check_eq("contention total", "ulonglong", "every PE's bit after or/and/xor", all_bits,
             shmem_ulonglong_atomic_fetch(&bits64, 0));
    check_eq("contention total", "uint", "fetch_or+fetch_xor leave 0", 0,
             shmem_uint_atomic_fetch(&bits32, 0));
    if (me == 0) {
        unsigned long long tokens = 0;
        for (int p = 0; p < k; ++p) {
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
        report_latency("shmem_long_atomic_fetch_add", t, n);
        for (int i = 0; i < n; ++i) {
            double t0 = now_s();
            long r = shmem_long_atomic_compare_swap(&bench_long, expect, expect + 1, 1);
            t[i] = now_s() - t0;
            check_eq("bench", "long", "atomic_compare_swap", expect, r);
            ++expect;
        }
        report_latency("shmem_long_atomic_compare_swap", t, n);
        for (int i = 0; i < n; ++i) {
            double t0 = now_s();
            int r = shmem_int_atomic_fetch_add(&bench_int, 1, 1);
            t[i] = now_s() - t0;
            check_eq("bench", "int", "atomic_fetch_add", i, r);
        }
        report_latency("shmem_int_atomic_fetch_add", t, n);
        free(t);
    }
    shmem_barrier_all();
}

static void phase_time(const char *what, double *t0)
{
    if (me == 0) {
        printf("shmem_atomics: %s: %.1f s\n", what, now_s() - *t0);
        fflush(stdout);
    }
    *t0 = now_s();
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
    int iters = 50, bursts_n = 3, bench_n = 0, only_cswap32 = 0, then_cswap32 = 0, rc;

    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
            iters = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--bursts") && i + 1 < argc) {
            bursts_n = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--bench") && i + 1 < argc) {
            bench_n = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--cswap32")) {
            only_cswap32 = 1;
        } else if (!strcmp(argv[i], "--then-cswap32")) {
            then_cswap32 = 1;
        } else {
            fprintf(stderr, "usage: %s [--iters N] [--bursts N] [--then-cswap32] | --bench N | --cswap32\n",
                    argv[0]);
            return 2;
        }
    }

    const double t_main = wall_s();
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    if (me == 0) {
        timeline("shmem_atomics", "main", t_main);
        timeline("shmem_atomics", "initialized", wall_s());
    }
    if (npes < 2 || npes > MAX_PES || iters < 1 || bursts_n < 1 ||
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
        /* Each phase's time on PE 0, to see what a run spends it on. */
        double t0 = now_s();
        functional();
        phase_time("functional", &t0);
        contention(iters, 2);
        phase_time("contention of 2 PEs", &t0);
        if (npes > 2) {
            contention(iters, npes);
            phase_time("contention of all PEs", &t0);
        }
        bursts(bursts_n);
        phase_time("bursts", &t0);
        rc = summarize("functional + contention + bursts");
        if (me == 0) {
            timeline("shmem_atomics", "checks done", wall_s());
        }
        if (then_cswap32) {
            /* Last, as it aborts with Open MPI 4.1.4 (see the top). Each
             * PE says so: the harness accepts a PE's UCX lines about its
             * peers going away only after this line of its own. */
            printf("shmem_atomics: pid %d: 4-byte compare-swaps next\n", (int)getpid());
            fflush(stdout);
            shmem_barrier_all();
            rc |= (cswap32(), summarize("4-byte compare-swap"));
        }
    }

    /* Marks where this process's finalize starts: the harness accepts some
     * UCX lines only after it (contrib/ucx-log-expected.txt). */
    printf("%s: pid %d: finalizing\n", "shmem_atomics", (int)getpid());
    fflush(stdout);
    shmem_finalize();
    return rc;
}
