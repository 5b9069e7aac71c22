/**
 * MPI point-to-point with specific sources and MPI_ANY_SOURCE, for a
 * libfabric provider under Open MPI's pml cm + mtl ofi (directed receives,
 * sources, ordering, and the matched probes MPI_Mprobe and MPI_Improbe,
 * which mtl ofi builds on FI_PEEK | FI_CLAIM and FI_CLAIM). Every rank
 * sends `MSGS` messages of each size to every other rank, in one round per
 * way of receiving them; each rank receives them from each source in turn
 * (specific sources, taken in reverse rank order, so that a provider that
 * ignores the source hands a receive another rank's message) or from
 * MPI_ANY_SOURCE, by MPI_Recv, by MPI_Mprobe then MPI_Mrecv, or by
 * MPI_Improbe (polled, bounded) then MPI_Imrecv; the probe's and the
 * receive's MPI_Status (source, count) are checked, and every byte against
 * what the sender computes. Sizes: below and above the eager limits (the
 * provider's rendezvous). Prints "mpi_p2p_sources: N checks, F failed" on
 * rank 0, exits 1 on a failure.
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MSGS     6
#define MAX_SIZE 300000
#define ROUNDS   6        /* ways of receiving: see recv_one */
#define PROBE_S  60.0     /* the longest an MPI_Improbe loop polls */

static const int sizes[] = {1, 100, 4096, 70000, MAX_SIZE};

static unsigned char pattern(int src, int dst, int size, int i, size_t k)
{
    return (unsigned char)(src * 131 + dst * 71 + size * 13 + i * 31 +
                           (int)k * 7 + 1);
}

static void fill(unsigned char *buf, int src, int dst, int size, int i)
{
    size_t k;

    for (k = 0; k < (size_t)size; ++k) {
        buf[k] = pattern(src, dst, size, i, k);
    }
}

static int same(const unsigned char *buf, int src, int dst, int size, int i)
{
    size_t k;

    for (k = 0; k < (size_t)size; ++k) {
        if (buf[k] != pattern(src, dst, size, i, k)) {
            return 0;
        }
    }
    return 1;
}

/* receive one message of `size` bytes and tag `round` from `src` (or
 * MPI_ANY_SOURCE) into buf, the way the round says: 0 and 1 MPI_Recv, 2
 * and 3 MPI_Mprobe + MPI_Mrecv, 4 and 5 MPI_Improbe + MPI_Imrecv (even
 * rounds a specific source, odd ones any). Its source in *from, its bytes
 * in *count; 0, or -1 if a check of the probe's status failed (reported) */
static int recv_one(int round, int src, unsigned char *buf, int size,
                    int rank, int *from, int *count)
{
    MPI_Message msg;
    MPI_Request req;
    MPI_Status st, pst;
    int flag = 0, pcount = -1;
    double start;

    if (round < 2) {
        MPI_Recv(buf, size, MPI_BYTE, src, round, MPI_COMM_WORLD, &st);
    } else {
        if (round < 4) {
            MPI_Mprobe(src, round, MPI_COMM_WORLD, &msg, &pst);
        } else {
            start = MPI_Wtime();
            while (!flag) {
                MPI_Improbe(src, round, MPI_COMM_WORLD, &flag, &msg, &pst);
                if (!flag && (MPI_Wtime() - start > PROBE_S)) {
                    fprintf(stderr, "rank %d: round %d: no message from %d "
                            "in %.0f s\n", rank, round, src, PROBE_S);
                    MPI_Abort(MPI_COMM_WORLD, 3);
                }
            }
        }
        MPI_Get_count(&pst, MPI_BYTE, &pcount);
        if (round < 4) {
            MPI_Mrecv(buf, size, MPI_BYTE, &msg, &st);
        } else {
            MPI_Imrecv(buf, size, MPI_BYTE, &msg, &req);
            MPI_Wait(&req, &st);
        }
        if ((msg != MPI_MESSAGE_NULL) || (pcount != size) ||
            (pst.MPI_SOURCE != st.MPI_SOURCE) ||
            ((src != MPI_ANY_SOURCE) && (pst.MPI_SOURCE != src))) {
            fprintf(stderr, "rank %d: round %d: probe of %d: source %d, "
                    "%d bytes; received from %d\n", rank, round, src,
                    pst.MPI_SOURCE, pcount, st.MPI_SOURCE);
            return -1;
        }
    }
    *from = st.MPI_SOURCE;
    MPI_Get_count(&st, MPI_BYTE, count);
    return 0;
}

int main(int argc, char **argv)
{
    long checks = 0, failed = 0, all_checks, all_failed;
    int rank, nranks, s, i, peer, count, tag, from;
    unsigned char *sbuf, *rbuf;
    MPI_Request *reqs;
    int *next;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    sbuf = malloc((size_t)nranks * MSGS * MAX_SIZE);
    rbuf = malloc(MAX_SIZE);
    reqs = malloc(sizeof(*reqs) * (size_t)nranks * MSGS);
    next = calloc((size_t)nranks, sizeof(*next));
    if ((sbuf == NULL) || (rbuf == NULL) || (reqs == NULL) || (next == NULL)) {
        fprintf(stderr, "out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    for (s = 0; s < (int)(sizeof(sizes) / sizeof(sizes[0])); ++s) {
        int size = sizes[s];
        int n    = 0;

        /* per size, a round for each way of receiving; the round is the
         * tag, and even rounds receive from specific sources, odd ones
         * from any source */
        for (tag = 0; tag < ROUNDS; ++tag) {
            n = 0;
            for (peer = 0; peer < nranks; ++peer) {
                if (peer == rank) {
                    continue;
                }
                for (i = 0; i < MSGS; ++i) {
                    unsigned char *b = sbuf +
                                       ((size_t)n * (size_t)size);
                    fill(b, rank, peer, size, i + tag * MSGS);
                    MPI_Isend(b, size, MPI_BYTE, peer, tag, MPI_COMM_WORLD,
                              &reqs[n++]);
                }
            }
            if ((tag % 2) == 0) {
                for (peer = nranks - 1; peer >= 0; --peer) {
                    if (peer == rank) {
                        continue;
                    }
                    for (i = 0; i < MSGS; ++i) {
                        int bad = recv_one(tag, peer, rbuf, size, rank, &from,
                                           &count);
                        ++checks;
                        if ((bad != 0) || (from != peer) || (count != size) ||
                            !same(rbuf, peer, rank, size, i + tag * MSGS)) {
                            ++failed;
                            fprintf(stderr, "rank %d: round %d size %d "
                                    "message %d from %d: source %d, %d "
                                    "bytes%s\n", rank, tag, size, i, peer,
                                    from, count, (count == size) ?
                                    ", wrong bytes" : "");
                        }
                    }
                }
            } else {
                memset(next, 0, sizeof(*next) * (size_t)nranks);
                for (i = 0; i < MSGS * (nranks - 1); ++i) {
                    int bad = recv_one(tag, MPI_ANY_SOURCE, rbuf, size, rank,
                                       &from, &count);
                    peer = from;
                    ++checks;
                    /* each source's messages in their order */
                    if ((bad != 0) || (peer < 0) || (peer >= nranks) ||
                        (peer == rank) || (count != size) ||
                        !same(rbuf, peer, rank, size,
                              tag * MSGS + next[peer])) {
                        ++failed;
                        fprintf(stderr, "rank %d: round %d size %d any "
                                "source: source %d, %d bytes\n", rank, tag,
                                size, peer, count);
                    } else {
                        ++next[peer];
                    }
                }
            }
            MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
        }
    }

    MPI_Reduce(&checks, &all_checks, 1, MPI_LONG, MPI_SUM, 0,
               MPI_COMM_WORLD);
    MPI_Reduce(&failed, &all_failed, 1, MPI_LONG, MPI_SUM, 0,
               MPI_COMM_WORLD);
    if (rank == 0) {
        printf("mpi_p2p_sources: %ld checks, %ld failed\n", all_checks,
               all_failed);
    }
    MPI_Bcast(&all_failed, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    free(next);
    free(reqs);
    free(rbuf);
    free(sbuf);
    MPI_Finalize();
    return (all_failed == 0) ? 0 : 1;
}
