/*
 * MPI one-sided atomics in passive-target epochs, checked exactly.
 *
 *   mpirun -np <2|4> mpi_window_atomics [--iters N]   all sections
 *   mpirun -np 2     mpi_window_atomics --bench N     latency, rank 0 -> 1
 *
 * Sections (each rank runs them all, rank 0's memory is the shared target):
 *   allocated  MPI_Win_allocate, MPI_Win_lock_all: MPI_Fetch_and_op (SUM on
 *              MPI_INT / MPI_LONG_LONG / MPI_UNSIGNED_LONG / MPI_UINT32_T,
 *              BOR on a ticket bitmap, NO_OP), MPI_Compare_and_swap
 *              increment loops on 4- and 8-byte words, MPI_Accumulate (SUM,
 *              BXOR) and MPI_Get_accumulate (SUM, NO_OP, REPLACE), with
 *              MPI_Win_flush / MPI_Win_flush_all; every rank also updates its
 *              own window (a rank targeting itself); then an exclusive
 *              MPI_Win_lock epoch around non-atomic get/put;
 *   ordering   the default accumulate_ordering (rar,raw,war,waw) read back
 *              from MPI_Win_get_info, and relied on: an MPI_Accumulate
 *              followed by MPI_Get_accumulate / MPI_Fetch_and_op to the same
 *              location with no flush in between must see its value;
 *   dynamic    MPI_Win_create_dynamic with memory attached before (malloc)
 *              and after (MPI_Alloc_mem) the first epoch: the same atomics in MPI_Win_lock_all epochs,
 *              and the exclusive MPI_Win_lock epochs on the attached memory.
 *              (Open MPI 4.1.4's osc ucx answers MPI_ERR_RMA_SYNC to an
 *              MPI_Win_lock of a target the process has already locked, or
 *              inside MPI_Win_lock_all: one lock per target at a time.)
 * Totals are read back by every rank with MPI_Get_accumulate(NO_OP) and by
 * rank 0 from its own memory. Prints one line per failed check and
 * "mpi_window_atomics: N checks, M failed" on rank 0; exits non-zero if any
 * check failed on any rank.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <mpi.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "timing.h"

#define MAX_RANKS   64
#define MAX_TICKETS (64 * 1024)
#define SPIN_LIMIT_S 120

static int me, nranks;
static long checks, failures;

static void check_eq(const char *section, const char *what,
                     unsigned long long expect, unsigned long long got)
{
    ++checks;
    if (expect != got) {
        ++failures;
        printf("mpi_window_atomics: rank %d: %s: %s: expected 0x%llx, got 0x%llx\n",
               me, section, what, expect, got);
        fflush(stdout);
    }
}

/* Every MPI call returns its error (the windows use MPI_ERRORS_RETURN):
 * a failing call is a failed check, and the rank gives up. */
#define MPI_OK(call)                                                          \
    do {                                                                      \
        int rc_ = (call);                                                     \
        if (rc_ != MPI_SUCCESS) {                                             \
            char msg_[MPI_MAX_ERROR_STRING];                                  \
            int len_ = 0;                                                     \
            MPI_Error_string(rc_, msg_, &len_);                               \
            printf("mpi_window_atomics: rank %d: %s failed: %s\n", me, #call, \
                   msg_);                                                     \
            fflush(stdout);                                                   \
            MPI_Abort(MPI_COMM_WORLD, 1);                                     \
        }                                                                     \
    } while (0)


/* With MPI_WINDOW_ATOMICS_TRACE=1 every rank says where it is (to find
 * where a run hangs). */
static int tracing;
static void trace(const char *section, const char *step, int i)
{
    if (tracing) {
        printf("mpi_window_atomics: trace: rank %d: %s: %s %d\n", me, section,
               step, i);
        fflush(stdout);
    }
}

/* The words every rank updates in rank 0's memory (and its own). */
struct area {
    long long ticket;                 /* fetch_and_op SUM 1 */
    unsigned long ticket_map[MAX_TICKETS / 64];
    long long sum_ll;                 /* fetch_and_op / accumulate SUM */
    int sum_i;
    unsigned long sum_ul;
    uint32_t sum_u32;
    long long cas_ll;                 /* compare_and_swap increments */
    int cas_i;
    long long acc[4];                 /* accumulate SUM, 4 elements */
    unsigned long long xor_word;      /* accumulate BXOR */
    int getacc_i;                     /* get_accumulate SUM */
    long long replace_ll;             /* get_accumulate REPLACE (swap) */
    long long swapped_sum;            /* what the replaces returned */
    long long self_ll;                /* each rank's own window only */
    long long locked;                 /* get/put under MPI_LOCK_EXCLUSIVE */
    long long order[MAX_RANKS];       /* ordering: one slot per origin */
};

#define DISP(field) ((MPI_Aint)offsetof(struct area, field))

static unsigned long long xor_token(int rank, int i)
{
    return 0x9e3779b97f4a7c15ULL * (unsigned long long)(rank * 100003 + i + 1);
}

static long long replace_token(int rank, int i)
{
    return ((long long)(rank + 1) << 32) + i + 1;
}

/* Increments field of rank 0's area by a compare-and-swap loop, as a
 * lock-free runtime does: read, then compare-and-swap until no other rank
 * came in between; gives up (failed check, abort) after SPIN_LIMIT_S. */
#define CAS_INCREMENT(T, MPI_T, field)                                        \
    do {                                                                      \
        T seen_ = 0, next_, got_;                                             \
        MPI_OK(MPI_Fetch_and_op(NULL, &seen_, MPI_T, 0, base0 + DISP(field),  \
                                MPI_NO_OP, win));                             \
        MPI_OK(MPI_Win_flush(0, win));                                        \
        double t0_ = now_s();                                                 \
        for (;;) {                                                            \
            next_ = seen_ + 1;                                                \
            MPI_OK(MPI_Compare_and_swap(&next_, &seen_, &got_, MPI_T, 0,      \
                                        base0 + DISP(field), win));           \
            MPI_OK(MPI_Win_flush(0, win));                                    \
            if (got_ == seen_) {                                              \
                break;                                                        \
            }                                                                 \
            seen_ = got_;                                                     \
            if (now_s() - t0_ > SPIN_LIMIT_S) {                               \
                check_eq(section, "Compare_and_swap " #MPI_T " loop finished", \
                         1, 0);                                               \
                MPI_Abort(MPI_COMM_WORLD, 1);                                 \
            }                                                                 \
        }                                                                     \
    } while (0)

/* fetch_and_op / CAS / accumulate on `base` (the area's address in the
 * target for a dynamic window, 0 for an allocated one) of target rank 0. */
static void hammer(const char *section, MPI_Win win, MPI_Aint base0,
                   MPI_Aint base_self, int iters)
{
    long long one_ll = 1, prev_ticket = -1, r_ll, my_swapped = 0;
    int r_i;
    unsigned long r_ul;
    uint32_t r_u32;
    long long four[4] = {1, 2, 3, 4};
    unsigned long long my_xor;

    for (int i = 0; i < iters; ++i) {
        trace(section, "hammer iteration", i);
        MPI_OK(MPI_Fetch_and_op(&one_ll, &r_ll, MPI_LONG_LONG, 0,
                                base0 + DISP(ticket), MPI_SUM, win));
        MPI_OK(MPI_Win_flush(0, win));
        if (r_ll <= prev_ticket || r_ll < 0 || r_ll >= MAX_TICKETS) {
            check_eq(section, "Fetch_and_op SUM ticket increasing, in range",
                     prev_ticket + 1, r_ll);
        } else {
            unsigned long bit = 1UL << (r_ll % 64), old;
            MPI_OK(MPI_Fetch_and_op(&bit, &old, MPI_UNSIGNED_LONG, 0,
                                    base0 + DISP(ticket_map) +
                                        (MPI_Aint)(r_ll / 64 * sizeof(long)),
                                    MPI_BOR, win));
            MPI_OK(MPI_Win_flush(0, win));
            check_eq(section, "Fetch_and_op BOR: ticket not seen before", 0,
                     old & bit);
        }
        prev_ticket = r_ll;

        long long three = 3;
        int minus2 = -2;
        unsigned long big = 0x100000001UL;
        uint32_t u7 = 7;
        MPI_OK(MPI_Fetch_and_op(&three, &r_ll, MPI_LONG_LONG, 0,
                                base0 + DISP(sum_ll), MPI_SUM, win));
        MPI_OK(MPI_Fetch_and_op(&minus2, &r_i, MPI_INT, 0, base0 + DISP(sum_i),
                                MPI_SUM, win));
        MPI_OK(MPI_Fetch_and_op(&big, &r_ul, MPI_UNSIGNED_LONG, 0,
                                base0 + DISP(sum_ul), MPI_SUM, win));
        MPI_OK(MPI_Fetch_and_op(&u7, &r_u32, MPI_UINT32_T, 0,
                                base0 + DISP(sum_u32), MPI_SUM, win));
        MPI_OK(MPI_Win_flush_all(win));

        /* Compare-and-swap increments, 8 and 4 bytes. */
        CAS_INCREMENT(long long, MPI_LONG_LONG, cas_ll);
        CAS_INCREMENT(int, MPI_INT, cas_i);

        trace(section, "accumulates", i);
        /* Accumulates, completed by a flush_all every 4 iterations. */
        MPI_OK(MPI_Accumulate(four, 4, MPI_LONG_LONG, 0, base0 + DISP(acc), 4,
                              MPI_LONG_LONG, MPI_SUM, win));
        my_xor = xor_token(me, i);
        MPI_OK(MPI_Accumulate(&my_xor, 1, MPI_UNSIGNED_LONG_LONG, 0,
                              base0 + DISP(xor_word), 1, MPI_UNSIGNED_LONG_LONG,
                              MPI_BXOR, win));
        int one_i = 1;
        MPI_OK(MPI_Get_accumulate(&one_i, 1, MPI_INT, &r_i, 1, MPI_INT, 0,
                                  base0 + DISP(getacc_i), 1, MPI_INT, MPI_SUM,
                                  win));
        long long token = replace_token(me, i);
        MPI_OK(MPI_Get_accumulate(&token, 1, MPI_LONG_LONG, &r_ll, 1,
                                  MPI_LONG_LONG, 0, base0 + DISP(replace_ll), 1,
                                  MPI_LONG_LONG, MPI_REPLACE, win));
        MPI_OK(MPI_Win_flush(0, win));
        my_swapped += r_ll;
        if (i % 4 == 3) {
            MPI_OK(MPI_Win_flush_all(win));
        }

        /* A rank targeting itself: only this rank writes self_ll. */
        MPI_OK(MPI_Fetch_and_op(&one_ll, &r_ll, MPI_LONG_LONG, me,
                                base_self + DISP(self_ll), MPI_SUM, win));
        MPI_OK(MPI_Win_flush(me, win));
        check_eq(section, "Fetch_and_op SUM on its own window", i, r_ll);
    }
    MPI_OK(MPI_Accumulate(&my_swapped, 1, MPI_LONG_LONG, 0,
                          base0 + DISP(swapped_sum), 1, MPI_LONG_LONG, MPI_SUM,
                          win));
    MPI_OK(MPI_Win_flush_all(win));
}

/* Totals, read back with MPI_Get_accumulate(NO_OP) by every rank. */
static long long read_ll(MPI_Win win, int rank, MPI_Aint disp)
{
    long long v = 0, dummy = 0;
    MPI_OK(MPI_Get_accumulate(&dummy, 1, MPI_LONG_LONG, &v, 1, MPI_LONG_LONG,
                              rank, disp, 1, MPI_LONG_LONG, MPI_NO_OP, win));
    MPI_OK(MPI_Win_flush(rank, win));
    return v;
}

static void verify(const char *section, MPI_Win win, MPI_Aint base0,
                   const struct area *local0, int iters)
{
    unsigned long long n = (unsigned long long)nranks * (unsigned)iters;
    unsigned long long x = 0;
    for (int r = 0; r < nranks; ++r) {
        for (int i = 0; i < iters; ++i) {
            x ^= xor_token(r, i);
        }
    }
    long long tokens = 0;
    for (int r = 0; r < nranks; ++r) {
        for (int i = 0; i < iters; ++i) {
            tokens += replace_token(r, i);
        }
    }
    int r_i, dummy_i = 0;

    trace(section, "verify", 0);
    check_eq(section, "tickets", n, read_ll(win, 0, base0 + DISP(ticket)));
    check_eq(section, "Fetch_and_op SUM LONG_LONG", 3 * n,
             read_ll(win, 0, base0 + DISP(sum_ll)));
    MPI_OK(MPI_Get_accumulate(&dummy_i, 1, MPI_INT, &r_i, 1, MPI_INT, 0,
                              base0 + DISP(sum_i), 1, MPI_INT, MPI_NO_OP, win));
    MPI_OK(MPI_Win_flush(0, win));
    check_eq(section, "Fetch_and_op SUM INT", (unsigned)(-2 * (int)n), (unsigned)r_i);
    check_eq(section, "Fetch_and_op SUM UNSIGNED_LONG", n * 0x100000001ULL,
             (unsigned long long)read_ll(win, 0, base0 + DISP(sum_ul)));
    MPI_OK(MPI_Get_accumulate(&dummy_i, 1, MPI_INT, &r_i, 1, MPI_INT, 0,
                              base0 + DISP(sum_u32), 1, MPI_INT, MPI_NO_OP, win));
    MPI_OK(MPI_Win_flush(0, win));
    check_eq(section, "Fetch_and_op SUM UINT32_T", 7 * n, (uint32_t)r_i);
    check_eq(section, "Compare_and_swap LONG_LONG increments", n,
             read_ll(win, 0, base0 + DISP(cas_ll)));
    MPI_OK(MPI_Get_accumulate(&dummy_i, 1, MPI_INT, &r_i, 1, MPI_INT, 0,
                              base0 + DISP(cas_i), 1, MPI_INT, MPI_NO_OP, win));
    MPI_OK(MPI_Win_flush(0, win));
    check_eq(section, "Compare_and_swap INT increments", n, (unsigned)r_i);
    for (int k = 0; k < 4; ++k) {
        check_eq(section, "Accumulate SUM of 4 LONG_LONG", (k + 1) * n,
                 read_ll(win, 0, base0 + DISP(acc) + k * (MPI_Aint)sizeof(long long)));
    }
    check_eq(section, "Accumulate BXOR", x,
             (unsigned long long)read_ll(win, 0, base0 + DISP(xor_word)));
    MPI_OK(MPI_Get_accumulate(&dummy_i, 1, MPI_INT, &r_i, 1, MPI_INT, 0,
                              base0 + DISP(getacc_i), 1, MPI_INT, MPI_NO_OP, win));
    MPI_OK(MPI_Win_flush(0, win));
    check_eq(section, "Get_accumulate SUM", n, (unsigned)r_i);
    check_eq(section, "Get_accumulate REPLACE conserves the tokens",
             (unsigned long long)tokens,
             (unsigned long long)(read_ll(win, 0, base0 + DISP(swapped_sum)) +
                                  read_ll(win, 0, base0 + DISP(replace_ll))));
    if (me == 0) {
        /* Rank 0 reads its own memory: MPI_Win_sync makes it visible. */
        MPI_OK(MPI_Win_sync(win));
        check_eq(section, "rank 0's memory: tickets", n, local0->ticket);
        check_eq(section, "rank 0's memory: Compare_and_swap", n, local0->cas_ll);
        check_eq(section, "rank 0's memory: Accumulate", 4 * n, local0->acc[3]);
        unsigned long long t;
        for (t = 0; t < MAX_TICKETS; ++t) {
            unsigned long long set = (local0->ticket_map[t / 64] >> (t % 64)) & 1;
            if (set != (t < n)) {
                check_eq(section, "rank 0's memory: ticket map", t < n, set);
                break;
            }
        }
    }
}

/* The default accumulate_ordering, and what it promises. */
static void ordering(const char *section, MPI_Win win, MPI_Aint base_right,
                     int iters)
{
    MPI_Info info;
    char value[MPI_MAX_INFO_VAL + 1] = "";
    int flag = 0, right = (me + 1) % nranks;
    MPI_OK(MPI_Win_get_info(win, &info));
    MPI_OK(MPI_Info_get(info, "accumulate_ordering", MPI_MAX_INFO_VAL, value, &flag));
    MPI_Info_free(&info);
    /* The key may be absent: then the default applies. */
    if (flag) {
        check_eq(section, "accumulate_ordering is the default rar,raw,war,waw", 0,
                 strcmp(value, "rar,raw,war,waw") != 0);
    }

    MPI_Aint slot = base_right + DISP(order) + me * (MPI_Aint)sizeof(long long);
    for (int i = 0; i < iters; ++i) {
        long long v = 1000 * i + me, got = -1, add = 5, dummy = 0;
        trace(section, "ordering iteration", i);
        /* raw: the read after the write sees it, with no flush in between. */
        MPI_OK(MPI_Accumulate(&v, 1, MPI_LONG_LONG, right, slot, 1,
                              MPI_LONG_LONG, MPI_REPLACE, win));
        MPI_OK(MPI_Get_accumulate(&dummy, 1, MPI_LONG_LONG, &got, 1,
                                  MPI_LONG_LONG, right, slot, 1, MPI_LONG_LONG,
                                  MPI_NO_OP, win));
        MPI_OK(MPI_Win_flush(right, win));
        check_eq(section, "Accumulate REPLACE then Get_accumulate NO_OP (raw)", v, got);
        /* waw then rar: two sums, then a fetch of the total. */
        MPI_OK(MPI_Accumulate(&add, 1, MPI_LONG_LONG, right, slot, 1,
                              MPI_LONG_LONG, MPI_SUM, win));
        MPI_OK(MPI_Accumulate(&add, 1, MPI_LONG_LONG, right, slot, 1,
                              MPI_LONG_LONG, MPI_SUM, win));
        MPI_OK(MPI_Fetch_and_op(NULL, &got, MPI_LONG_LONG, right, slot,
                                MPI_NO_OP, win));
        MPI_OK(MPI_Win_flush(right, win));
        check_eq(section, "Accumulate SUM x2 then Fetch_and_op NO_OP (waw, raw)",
                 v + 10, got);
    }
}

static void locked_increments(const char *section, MPI_Win win, MPI_Aint base0,
                              int iters)
{
    for (int i = 0; i < iters; ++i) {
        long long v = -1;
        trace(section, "exclusive lock iteration", i);
        MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        MPI_OK(MPI_Get(&v, 1, MPI_LONG_LONG, 0, base0 + DISP(locked), 1,
                       MPI_LONG_LONG, win));
        MPI_OK(MPI_Win_flush(0, win));
        ++v;
        MPI_OK(MPI_Put(&v, 1, MPI_LONG_LONG, 0, base0 + DISP(locked), 1,
                       MPI_LONG_LONG, win));
        MPI_OK(MPI_Win_unlock(0, win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
    check_eq(section, "get/put under MPI_LOCK_EXCLUSIVE", (long long)nranks * iters,
             read_ll(win, 0, base0 + DISP(locked)));
    MPI_OK(MPI_Win_unlock(0, win));
}

static void allocated(int iters)
{
    struct area *a;
    MPI_Win win;
    MPI_OK(MPI_Win_allocate(sizeof(*a), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &a, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    memset(a, 0, sizeof(*a));
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_OK(MPI_Win_lock_all(0, win));
    hammer("allocated", win, 0, 0, iters);
    ordering("allocated ordering", win, 0, iters);
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_lock_all(0, win));
    verify("allocated", win, 0, a, iters);
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    locked_increments("allocated exclusive lock", win, 0, iters / 2 + 1);
    MPI_OK(MPI_Win_free(&win));
}

static void dynamic(int iters)
{
    MPI_Win win;
    MPI_Aint addr[MAX_RANKS], addr2[MAX_RANKS];
    struct area *first = calloc(1, sizeof(*first));
    struct area *second = NULL;
    if (first == NULL) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_OK(MPI_Win_attach(win, first, sizeof(*first)));
    MPI_Get_address(first, &addr[me]);
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, addr, 1, MPI_AINT, MPI_COMM_WORLD);

    MPI_OK(MPI_Win_lock_all(0, win));
    hammer("dynamic", win, addr[0], addr[me], iters);
    ordering("dynamic ordering", win, addr[(me + 1) % nranks], iters / 2 + 1);
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_lock_all(0, win));
    verify("dynamic", win, addr[0], first, iters);
    MPI_OK(MPI_Win_unlock_all(win));

    /* Memory from MPI_Alloc_mem, attached after the first epochs, when the
     * endpoints exist. */
    MPI_OK(MPI_Alloc_mem(sizeof(*second), MPI_INFO_NULL, &second));
    memset(second, 0, sizeof(*second));
    MPI_OK(MPI_Win_attach(win, second, sizeof(*second)));
    MPI_Get_address(second, &addr2[me]);
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, addr2, 1, MPI_AINT, MPI_COMM_WORLD);
    MPI_OK(MPI_Win_lock_all(0, win));
    hammer("dynamic, attached later", win, addr2[0], addr2[me], iters / 2 + 1);
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_lock_all(0, win));
    verify("dynamic, attached later", win, addr2[0], second, iters / 2 + 1);
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    locked_increments("dynamic exclusive lock", win, addr2[0], iters / 2 + 1);

    MPI_OK(MPI_Win_detach(win, second));
    MPI_OK(MPI_Win_detach(win, first));
    MPI_OK(MPI_Win_free(&win));
    MPI_Free_mem(second);
    free(first);
}

/* ---- Latency: rank 0 -> rank 1 while rank 1 waits in a barrier --------- */

static void bench(int n)
{
    long long *w;
    MPI_Win win;
    MPI_OK(MPI_Win_allocate(sizeof(long long), sizeof(long long), MPI_INFO_NULL,
                            MPI_COMM_WORLD, &w, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    *w = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        double *t = calloc(n, sizeof(*t));
        long long one = 1, r, expect = 0, next;
        if (t == NULL) {
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        MPI_OK(MPI_Win_lock_all(0, win));
        for (int i = -(n / 10 + 1); i < n; ++i) {
            double t0 = now_s();
            MPI_OK(MPI_Fetch_and_op(&one, &r, MPI_LONG_LONG, 1, 0, MPI_SUM, win));
            MPI_OK(MPI_Win_flush(1, win));
            if (i >= 0) {
                t[i] = now_s() - t0;
            }
            check_eq("bench", "Fetch_and_op SUM", expect++, r);
        }
        report_latency("MPI_Fetch_and_op", t, n);
        for (int i = 0; i < n; ++i) {
            double t0 = now_s();
            next = expect + 1;
            MPI_OK(MPI_Compare_and_swap(&next, &expect, &r, MPI_LONG_LONG, 1, 0, win));
            MPI_OK(MPI_Win_flush(1, win));
            t[i] = now_s() - t0;
            check_eq("bench", "Compare_and_swap", expect++, r);
        }
        report_latency("MPI_Compare_and_swap", t, n);
        MPI_OK(MPI_Win_unlock_all(win));
        free(t);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_free(&win));
}

int main(int argc, char **argv)
{
    int iters = 40, bench_n = 0;
    const char *sections = "allocated,dynamic";
    long totals[2], sums[2];

    const double t_main = wall_s();
    MPI_Init(&argc, &argv);
    tracing = getenv("MPI_WINDOW_ATOMICS_TRACE") != NULL;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (me == 0) {
        timeline("mpi_window_atomics", "main", t_main);
        timeline("mpi_window_atomics", "initialized", wall_s());
    }
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
            iters = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--bench") && i + 1 < argc) {
            bench_n = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--sections") && i + 1 < argc) {
            sections = argv[++i];
        } else {
            iters = -1;
        }
    }
    if (nranks < 2 || nranks > MAX_RANKS || iters < 1 ||
        (long)nranks * iters > MAX_TICKETS || bench_n < 0) {
        if (me == 0) {
            fprintf(stderr, "usage: mpirun -np 2..%d %s [--iters N] "
                    "[--sections allocated,dynamic] | --bench N\n",
                    MAX_RANKS, argv[0]);
        }
        MPI_Finalize();
        return 2;
    }

    const char *mode;
    if (bench_n > 0) {
        mode = "latency";
        bench(bench_n);
    } else {
        double t0 = now_s();
        mode = sections;
        if (strstr(sections, "allocated") != NULL) {
            allocated(iters);
            if (me == 0) {
                printf("mpi_window_atomics: allocated window: %.1f s\n", now_s() - t0);
                fflush(stdout);
            }
        }
        t0 = now_s();
        if (strstr(sections, "dynamic") != NULL) {
            dynamic(iters);
            if (me == 0) {
                printf("mpi_window_atomics: dynamic window: %.1f s\n", now_s() - t0);
                fflush(stdout);
            }
        }
    }

    totals[0] = checks;
    totals[1] = failures;
    MPI_Reduce(totals, sums, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Bcast(sums, 2, MPI_LONG, 0, MPI_COMM_WORLD);
    if (me == 0) {
        printf("mpi_window_atomics: %s, %d ranks: %ld checks, %ld failed\n", mode,
               nranks, sums[0], sums[1]);
        fflush(stdout);
    }
    if (me == 0) {
        timeline("mpi_window_atomics", "checks done", wall_s());
    }
    /* Marks where this process's finalize starts: the harness accepts some
     * UCX lines only after it (contrib/ucx-log-expected.txt). */
    printf("%s: pid %d: finalizing\n", "mpi_window_atomics", (int)getpid());
    fflush(stdout);
    MPI_Finalize();
    return sums[1] != 0;
}
