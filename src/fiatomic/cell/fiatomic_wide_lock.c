/**
 * 32-byte elements (long double complex): no CPU instruction covers them,
 * so every actor executes them under a lock word that all actors on that
 * memory take.
 *
 * Where the locks live:
 *  - Memory the library allocated on UCP's behalf (FIATOMIC_MEM_FLAG_ALLOCATE:
 *    on posix/sysv the only memory a peer can map) carries a lock table in
 *    the same mapping, after the range and its state word
 *    (FIATOMIC_WIDE_LOCKS_OFFSET, fiatomic_wide_locks_t). Initiators that
 *    map the segment (direct) and the exposing context (target-side
 *    execution for initiators that do not map it, e.g. over tcp, and direct
 *    from itself) take the same word for the same element.
 *  - Any other memory has no table a peer can see: a table of this process
 *    guards it, and only this process executes its 32-byte elements
 *    (target-side, or direct from the exposing context itself).
 *
 * A lock word is 0 when free, else its owner's pid (the high 32 bits are
 * 0; a word with any other bits, or pid 0, names no process). The
 * lock for an element is chosen by its offset in the exposed range (the same
 * in every process, unlike its address) hashed over a table of a
 * compile-time size: nothing a peer writes into the table header can make
 * an index leave the table. An element at an offset that is an odd multiple
 * of 16 spans two 32-byte blocks and takes both blocks' locks (in index
 * order), so that it is atomic against the overlapping elements too.
 *
 * A holder that dies: the lock is held only around a 32-byte combine
 * (nanoseconds), so a waiter spins, then yields, and every millisecond of
 * waiting checks that the owner's pid still exists (kill(pid, 0)); a word
 * whose owner is gone (or that names no valid pid) is taken over with a
 * compare-and-swap on exactly the word seen (a pid reused between that
 * check and the swap would take the whole pid space wrapping around in
 * microseconds), and the element keeps whatever the dead holder left in it (a
 * process killed in the middle of its 32-byte store may leave it torn, as
 * any store of that size would). Pids mean the same only within one pid
 * namespace: a peer maps the table for direct execution only when the table
 * header names its own pid namespace. A lock that stays held by a live
 * process (stopped, or a hostile peer writing its own pid) is waited for at
 * most the context's operation timeout: the operation then fails with
 * UCS_ERR_TIMED_OUT and the element is untouched.
 *
 * Ordering: taking the lock is an acquire, releasing it a release store, so
 * the element's bytes are read and written between them by one actor at a
 * time and every actor sees the previous holder's result.
 */
#include "cell/fiatomic_cpu.h"

#include "cell/fiatomic_combine_expr.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Spin this often on a held lock before yielding the CPU. */
#define FIATOMIC_WIDE_SPINS        256
/* Check the holder's pid after this much waiting, and again as often. */
#define FIATOMIC_WIDE_CHECK_NS     (1000ull * 1000)

/* A spin-wait hint to the CPU (another hardware thread may hold the lock). */
static inline void fiatomic_wide_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* The owner word of this process: its pid, cached (fork resets it). */
static pid_t fiatomic_wide_pid;

static void fiatomic_wide_atfork_child(void)
{
    __atomic_store_n(&fiatomic_wide_pid, 0, __ATOMIC_RELAXED);
}

static void fiatomic_wide_pid_init(void)
{
    pthread_atfork(NULL, NULL, fiatomic_wide_atfork_child);
}

static UCS_F_ALWAYS_INLINE uint64_t fiatomic_wide_owner(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pid_t pid                  = __atomic_load_n(&fiatomic_wide_pid,
                                                 __ATOMIC_RELAXED);

    if (ucs_unlikely(pid == 0)) {
        pthread_once(&once, fiatomic_wide_pid_init);
        pid = getpid();
        __atomic_store_n(&fiatomic_wide_pid, pid, __ATOMIC_RELAXED);
    }
    return (uint32_t)pid;
}

/* The pid namespace of this process (0: unknown). */
static uint64_t fiatomic_wide_pid_ns(void)
{
    static uint64_t ns;
    struct stat st;

    if ((__atomic_load_n(&ns, __ATOMIC_RELAXED) == 0) &&
        (stat("/proc/self/ns/pid", &st) == 0)) {
        __atomic_store_n(&ns, (uint64_t)st.st_ino ^
                              ((uint64_t)st.st_dev << 40), __ATOMIC_RELAXED);
    }
    return __atomic_load_n(&ns, __ATOMIC_RELAXED);
}

void fiatomic_wide_locks_init(fiatomic_wide_locks_t *table)
{
    memset(table, 0, sizeof(*table));
    table->pid_ns = fiatomic_wide_pid_ns();
    __atomic_store_n(&table->layout, FIATOMIC_WIDE_LOCKS_LAYOUT,
                     __ATOMIC_RELEASE);
}

fiatomic_wide_locks_t *fiatomic_wide_locks_map(void *ptr)
{
    fiatomic_wide_locks_t *table = ptr;
    uint64_t ns                  = fiatomic_wide_pid_ns();

    if (((uintptr_t)ptr % sizeof(uint64_t)) != 0) {
        ucs_diag("fiatomic: lock table at a misaligned address %p", ptr);
        return NULL;
    }
    if (__atomic_load_n(&table->layout, __ATOMIC_ACQUIRE) !=
        FIATOMIC_WIDE_LOCKS_LAYOUT) {
        ucs_diag("fiatomic: lock table of an unknown layout 0x%" PRIx64,
                 table->layout);
        return NULL;
    }
    if ((ns == 0) || (table->pid_ns != ns)) {
        ucs_diag("fiatomic: lock table of another pid namespace: 32-byte "
                 "elements are executed by the target");
        return NULL;
    }
    return table;
}

static uint64_t fiatomic_now_coarse_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Whether the owner named by a lock word can no longer release it. */
static bool fiatomic_wide_owner_gone(uint64_t word)
{
    uint32_t pid = (uint32_t)word;

    if ((pid == 0) || (pid > INT32_MAX) || ((word >> 32) != 0)) {
        return true; /* no process could have written it */
    }
    return (kill((pid_t)pid, 0) != 0) && (errno == ESRCH);
}

static ucs_status_t fiatomic_wide_lock_slow(uint64_t *lock, uint64_t me,
                                            uint64_t timeout_ns)
{
    uint64_t start = fiatomic_now_coarse_ns(), check = start, now, seen;
    uint64_t zero;
    unsigned spins = 0;

    for (;;) {
        seen = __atomic_load_n(lock, __ATOMIC_RELAXED);
        if (seen == 0) {
            zero = 0;
            if (__atomic_compare_exchange_n(lock, &zero, me, 0,
                                            __ATOMIC_ACQUIRE,
                                            __ATOMIC_RELAXED)) {
                return UCS_OK;
            }
            continue;
        }
        if (++spins < FIATOMIC_WIDE_SPINS) {
            fiatomic_wide_relax();
            continue;
        }
        spins = 0;
        sched_yield(); /* the holder may be waiting for this CPU */

        now = fiatomic_now_coarse_ns();
        if ((now - check) >= FIATOMIC_WIDE_CHECK_NS) {
            check = now;
            if (fiatomic_wide_owner_gone(seen) &&
                __atomic_compare_exchange_n(lock, &seen, me, 0,
                                            __ATOMIC_ACQUIRE,
                                            __ATOMIC_RELAXED)) {
                ucs_diag("fiatomic: took over the lock of a 32-byte element "
                         "from pid %u, which is gone", (unsigned)seen);
                return UCS_OK;
            }
        }
        if ((now - start) >= timeout_ns) {
            return UCS_ERR_TIMED_OUT;
        }
    }
}

static UCS_F_ALWAYS_INLINE ucs_status_t
fiatomic_wide_lock(uint64_t *lock, uint64_t me, uint64_t timeout_ns)
{
    uint64_t zero = 0;

    if (ucs_likely(__atomic_compare_exchange_n(lock, &zero, me, 0,
                                               __ATOMIC_ACQUIRE,
                                               __ATOMIC_RELAXED))) {
        return UCS_OK;
    }
    return fiatomic_wide_lock_slow(lock, me, timeout_ns);
}

static UCS_F_ALWAYS_INLINE void fiatomic_wide_unlock(uint64_t *lock)
{
    __atomic_store_n(lock, 0, __ATOMIC_RELEASE);
}

static UCS_F_ALWAYS_INLINE unsigned fiatomic_wide_index(uint64_t block)
{
    /* Fibonacci hashing: neighbouring blocks get unrelated locks */
    return (unsigned)((block * 0x9e3779b97f4a7c15ull) >>
                      (64 - FIATOMIC_WIDE_LOCKS_SHIFT));
}

/*
 * One executor per op of long double complex (the only 32-byte datatype),
 * run under the element's lock: the op is a constant in each, so the
 * arithmetic is inlined and only the bytes that change are written.
 *  - The element is two x87 values, 10 value bytes each in 16 of storage:
 *    only value bytes are written, the padding never (as in the 16-byte
 *    CAS loops, which carry it over).
 *  - LOR/LAND/LXOR: truths and result from the bits, no x87 instruction
 *    (fiatomic_combine_expr.h).
 *  - READ writes nothing; CSWAP/CSWAP_NE write only when they swap.
 *  - The operands are read before the old value is written: the caller's
 *    old buffer may be its operand.
 * The same expressions as fiatomic_combine.c's functions (and the reference
 * model's): complex truth is "either part != 0", equality is by value of
 * both parts.
 */
typedef void (*fiatomic_wide_fn_t)(void *ptr, const void *operand,
                                   const void *compare, void *old);

#define FIATOMIC_WIDE_PART (sizeof(long double complex) / 2)
/* The bytes of a part that hold its value (x87: 10 of 16). */
#define FIATOMIC_WIDE_VALUE_BYTES \
    (FIATOMIC_X87_BITS ? FIATOMIC_X87_VALUE_BYTES : FIATOMIC_WIDE_PART)

static UCS_F_ALWAYS_INLINE bool fiatomic_wide_truth(const void *p)
{
#if FIATOMIC_X87_BITS
    return fiatomic_x87_truth_at(p) ||
           fiatomic_x87_truth_at((const uint8_t*)p + FIATOMIC_WIDE_PART);
#else
    long double complex z;

    memcpy(&z, p, sizeof(z));
    return (__real__ z != 0) || (__imag__ z != 0);
#endif
}

static UCS_F_ALWAYS_INLINE void
fiatomic_wide_exec(int op, void *ptr, const void *operand,
                   const void *compare, void *old)
{
    long double complex a, b, c, r;
    long double re, im;
    uint8_t result[sizeof(r)]; /* value bytes of each part to store */
    bool store = true;

    switch (op) {
    case FI_ATOMIC_READ:
        store = false;
        break;
    case FI_ATOMIC_WRITE:
        memcpy(result, operand, sizeof(result));
        break;
    case FI_LOR:
    case FI_LAND:
    case FI_LXOR:
#if FIATOMIC_X87_BITS
        fiatomic_x87_store_truth(result,
                                 fiatomic_logical(op, fiatomic_wide_truth(ptr),
                                                  fiatomic_wide_truth(operand)));
        fiatomic_x87_store_truth(result + FIATOMIC_WIDE_PART, false);
#else
        r = fiatomic_logical(op, fiatomic_wide_truth(ptr),
                             fiatomic_wide_truth(operand));
        memcpy(result, &r, sizeof(r));
#endif
        break;
    case FI_CSWAP:
    case FI_CSWAP_NE:
        memcpy(&a, ptr, sizeof(a));
        memcpy(&c, compare, sizeof(c));
        store = (op == FI_CSWAP) ? (c == a) : (c != a);
        if (store) {
            memcpy(result, operand, sizeof(result));
        }
        break;
    default: /* FI_SUM, FI_PROD: each part stored from its x87 register */
        memcpy(&a, ptr, sizeof(a));
        memcpy(&b, operand, sizeof(b));
        r = (op == FI_SUM) ? FIATOMIC_EXPR_sum_COMPLEX(a, b, c, , ) :
                             FIATOMIC_EXPR_prod_COMPLEX(a, b, c, , );
        re = __real__ r;
        im = __imag__ r;
        memcpy(old, ptr, sizeof(r));
        memcpy(ptr, &re, FIATOMIC_WIDE_VALUE_BYTES);
        memcpy((uint8_t*)ptr + FIATOMIC_WIDE_PART, &im,
               FIATOMIC_WIDE_VALUE_BYTES);
        return;
    }

    memcpy(old, ptr, sizeof(r));
    if (store) {
        memcpy(ptr, result, FIATOMIC_WIDE_VALUE_BYTES);
        memcpy((uint8_t*)ptr + FIATOMIC_WIDE_PART, result + FIATOMIC_WIDE_PART,
               FIATOMIC_WIDE_VALUE_BYTES);
    }
}

#define FIATOMIC_WIDE_CELL_FN(_op_enum, _op, _ocls, _fam) \
    FIATOMIC_IF_##_ocls##_COMPLEX( \
        static void fiatomic_wide_##_op(void *ptr, const void *operand, \
                                        const void *compare, void *old) \
        { \
            fiatomic_wide_exec(_op_enum, ptr, operand, compare, old); \
        })
FIATOMIC_FOREACH_OP(FIATOMIC_WIDE_CELL_FN)

#define FIATOMIC_WIDE_CELL_ENTRY(_op_enum, _op, _ocls, _fam) \
    FIATOMIC_IF_##_ocls##_COMPLEX([_op_enum] = fiatomic_wide_##_op,)
static const fiatomic_wide_fn_t fiatomic_wide_fns[FIATOMIC_OP_COUNT] = {
    FIATOMIC_FOREACH_OP(FIATOMIC_WIDE_CELL_ENTRY)
};

ucs_status_t fiatomic_wide_apply(uint64_t *own_locks, uint64_t timeout_ns,
                                 const fiatomic_cell_t *cell,
                                 fiatomic_wide_locks_t *table,
                                 uint64_t offset, void *ptr,
                                 const void *operand, const void *compare,
                                 void *old)
{
    fiatomic_wide_fn_t exec = fiatomic_wide_fns[cell->op];
    uint64_t *words         = (table != NULL) ? table->word : own_locks;
    uint64_t key            = (table != NULL) ? offset : (uintptr_t)ptr;
    unsigned first          = fiatomic_wide_index(key >> 5);
    unsigned second         = fiatomic_wide_index((key + 31) >> 5);
    uint64_t me             = fiatomic_wide_owner();
    ucs_status_t status;
    unsigned tmp;

    fiatomic_assertv(cell->datatype == FI_LONG_DOUBLE_COMPLEX,
                     "32-byte datatype %d", cell->datatype);
    if (first > second) {
        tmp    = first;
        first  = second;
        second = tmp;
    }
    status = fiatomic_wide_lock(&words[first], me, timeout_ns);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    if (ucs_unlikely(second != first)) {
        status = fiatomic_wide_lock(&words[second], me, timeout_ns);
        if (status != UCS_OK) {
            fiatomic_wide_unlock(&words[first]);
            return status;
        }
    }

    exec(ptr, operand, compare, old);

    if (ucs_unlikely(second != first)) {
        fiatomic_wide_unlock(&words[second]);
    }
    fiatomic_wide_unlock(&words[first]);
    return UCS_OK;
}
