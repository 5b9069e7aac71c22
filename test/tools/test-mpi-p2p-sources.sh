#!/bin/bash
# Open MPI's two-sided path (pml cm + mtl ofi) over this project's provider,
# loaded from the build tree through FI_PROVIDER_PATH: test/runtime's
# mpi_p2p_sources, built here with mpicc, on 3 ranks (messages from
# specific sources and from MPI_ANY_SOURCE, received by MPI_Recv, by
# MPI_Mprobe + MPI_Mrecv and by MPI_Improbe + MPI_Imrecv, sizes 1 B to
# 300 kB, every byte and every status checked), on UCX_TLS=posix (same-host
# addresses) and on tcp (socket addresses). Each run must exit 0 within its
# timeout with the program's summary line reporting no failure, and print
# no UCX ERROR/WARN line. Skips (reason printed) only when mpirun or mpicc
# is missing or the provider is not built.
set -u
# shellcheck source-path=SCRIPTDIR source=test-common.sh
. "$(dirname "$0")/test-common.sh"

src=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/test/runtime
require_tools "openmpi-bin, libopenmpi-dev" mpirun mpicc
require_provider
test_start
# the MPI program is not instrumented: in a sanitizer build the provider
# needs the ASan runtime loaded first, in the ranks only (mpirun and its
# daemons preloaded take 10 s more)
preload=()
if [ -n "$asan" ]; then
    preload=(-x "LD_PRELOAD=$asan" -x ASAN_OPTIONS=detect_leaks=0)
fi

prog=$test_tmp/mpi_p2p_sources
if ! mpicc -O2 -Wall -Werror -o "$prog" "$src/mpi_p2p_sources.c" \
        > "$test_tmp/cc" 2>&1; then
    bad "mpicc failed"
    sed 's/^/  /' "$test_tmp/cc" | tail -5
    test_end
fi

for tls in posix tcp; do
    echo "=== mpi_p2p_sources, 3 ranks, pml cm + mtl ofi over fiatomic," \
         "UCX_TLS=$tls ==="
    UCX_TLS=$tls timeout 120 mpirun --allow-run-as-root --oversubscribe \
        -np 3 --mca pml cm --mca mtl ofi \
        --mca mtl_ofi_provider_include fiatomic \
        -x FI_PROVIDER_PATH -x LD_LIBRARY_PATH -x UCX_TLS \
        ${preload[@]+"${preload[@]}"} \
        "$prog" > "$test_tmp/out" 2>&1
    rc=$?
    if [ "$rc" -ne 0 ]; then
        bad "UCX_TLS=$tls: mpirun exit $rc"
        sed 's/^/  /' "$test_tmp/out" | tail -8
    elif ! grep -qE '^mpi_p2p_sources: [0-9]+ checks, 0 failed$' \
            "$test_tmp/out"; then
        bad "UCX_TLS=$tls: no summary line without failures"
        sed 's/^/  /' "$test_tmp/out" | tail -8
    elif grep -qE 'UCX +(ERROR|WARN|FATAL)' "$test_tmp/out"; then
        bad "UCX_TLS=$tls: UCX trouble"
        grep -E 'UCX' "$test_tmp/out" | head -5
    else
        ok
        echo "  $(grep -E '^mpi_p2p_sources:' "$test_tmp/out")"
    fi
done
test_end
