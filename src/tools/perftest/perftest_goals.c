/**
 * The goals of issue 5, measured in one run and judged MET / NOT MET.
 */
#include "perftest.h"

int perf_goals_run(const perf_opts_t *o)
{
    fprintf(stderr, PERF_NAME ": --goals is not implemented yet\n");
    return -1;
}
