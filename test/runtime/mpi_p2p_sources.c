/**
 * MPI point-to-point with specific sources and MPI_ANY_SOURCE, for a
 * libfabric provider under Open MPI's pml cm + mtl ofi (directed receives,
 * sources, ordering). Every rank sends `MSGS` messages of each size to
 * every other rank; each rank receives them, first from each source in turn
 * (specific sources, posted in reverse rank order, so that a provider that
 * ignores the source hands a receive another rank's message), then from
 * MPI_ANY_SOURCE, with MPI_Status's source and count checked, and every
 * byte checked against what the sender computes. Sizes: below and above
 * the eager limits (the provider's rendezvous). Prints
 * "mpi_p2p_sources: N checks, F failed" on rank 0, exits 1 on a failure.
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MSGS     6
#define MAX_SIZE 300000

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

int main(int argc, char **argv)
{
    long checks = 0, failed = 0, all_checks, all_failed;
    int rank, nranks, s, i, peer, count, tag;
    unsigned char *sbuf, *rbuf;
    MPI_Request *reqs;
    MPI_Status st;
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

        /* two rounds per size: tag 0 received from specific sources, tag 1
         * from any source */
        for (tag = 0; tag < 2; ++tag) {
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
            if (tag == 0) {
                for (peer = nranks - 1; peer >= 0; --peer) {
                    if (peer == rank) {
                        continue;
                    }
                    for (i = 0; i < MSGS; ++i) {
                        MPI_Recv(rbuf, size, MPI_BYTE, peer, 0,
                                 MPI_COMM_WORLD, &st);
                        MPI_Get_count(&st, MPI_BYTE, &count);
                        ++checks;
                        if ((st.MPI_SOURCE != peer) || (count != size) ||
                            !same(rbuf, peer, rank, size, i)) {
                            ++failed;
                            fprintf(stderr, "rank %d: size %d message %d "
                                    "from %d: source %d, %d bytes%s\n",
                                    rank, size, i, peer, st.MPI_SOURCE,
                                    count, (count == size) ?
                                    ", wrong bytes" : "");
                        }
                    }
                }
            } else {
                memset(next, 0, sizeof(*next) * (size_t)nranks);
                for (i = 0; i < MSGS * (nranks - 1); ++i) {
                    MPI_Recv(rbuf, size, MPI_BYTE, MPI_ANY_SOURCE, 1,
                             MPI_COMM_WORLD, &st);
                    MPI_Get_count(&st, MPI_BYTE, &count);
                    peer = st.MPI_SOURCE;
                    ++checks;
                    /* each source's messages in their order */
                    if ((peer < 0) || (peer >= nranks) || (peer == rank) ||
                        (count != size) ||
                        !same(rbuf, peer, rank, size, MSGS + next[peer])) {
                        ++failed;
                        fprintf(stderr, "rank %d: size %d any source: "
                                "source %d, %d bytes\n", rank, size, peer,
                                count);
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
