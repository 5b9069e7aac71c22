/*
 * Clock and latency summary shared by the runtime test programs: a
 * monotonic clock for spin limits and per-operation timings, the wall
 * clock for the timeline lines (main entered, initialized, checks done),
 * and the
 * "bench: <name>: median X us, mean Y us, N ops" line that
 * contrib/softroce/openmpi-guest.sh turns into the latency table.
 * Needs _POSIX_C_SOURCE >= 199309L before the first system header.
 */
#ifndef RUNTIME_TIMING_H
#define RUNTIME_TIMING_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Wall-clock seconds since the epoch, comparable with date(1) in the
 * harness: the timeline lines say where a run spends its time. */
static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* "<prog>: timeline: <what> <epoch seconds>" (printed by one process). */
static void timeline(const char *prog, const char *what, double t)
{
    printf("%s: timeline: %s %.2f\n", prog, what, t);
    fflush(stdout);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Prints the median and mean of the n timings t (seconds); sorts t. */
static void report_latency(const char *name, double *t, int n)
{
    double sum = 0;
    for (int i = 0; i < n; ++i) {
        sum += t[i];
    }
    qsort(t, n, sizeof(*t), cmp_double);
    printf("bench: %s: median %.1f us, mean %.1f us, %d ops\n", name,
           t[n / 2] * 1e6, sum / n * 1e6, n);
    fflush(stdout);
}

#endif
