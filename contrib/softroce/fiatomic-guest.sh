#!/bin/bash
# libfiatomic's matrix over the atomicx transport (device atomics) on
# soft-RoCE rxe0, inside the qemu guest:
#   1. fiatomic_info --csv with UCX_TLS=atomicx,tcp: all 414 cells supported,
#      with the device-domain strategies (native for UCP's 57 cells, CAS
#      loops through atomicx for the other 1..8-byte cells, target-side for
#      the 16/32-byte ones) and no target progress needed except target-side;
#   2. fiatomic_perftest --matrix over atomicx+tcp: every cell between two
#      processes, verified against the reference model;
#   3. the 4-process concurrency suite (test_fiatomic) with its tcp
#      configurations run over atomicx,tcp (FIATOMIC_TEST_TLS_MAP): CAS loops
#      and native ops executed by the NIC, final values and fetched values
#      checked exactly. (auto and mixed run the CAS loops; the all-CAS
#      configuration took 20 s to 6 min under qemu's TCG and is left out. In
#      mixed, the process that forces target-side execution takes part only
#      in the 16/32-byte elements: libfiatomic refuses it for 1..8-byte ones
#      once UCP's atomics are device atomics, as they are over atomicx, since
#      the CPU at the target would not be atomic with the NIC.)
#   4. same-address ordering (FI_ORDER_ATOMIC_RAR/RAW/WAR/WAW, test_fiatomic's
#      ordering suite) over atomicx,tcp: an operation posted after an
#      overlapping one (same extent or partly, the earlier one a single
#      element or 2048 of them, above the rendezvous threshold) executes
#      after it, for every pair of the device domain's strategies: tcp
#      auto has native, CAS loops through atomicx and target-side (all 9
#      pairs), auto without UCP_FEATURE_AM native and CAS loops (4 pairs).
#      The forced-strategy configurations add only pairs of one strategy
#      that auto covers (direct has no cell over tcp) and are left out.
# Usage: contrib/softroce/fiatomic-guest.sh <build-dir>
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [ "${1:-}" != "--in-guest" ]; then
    build=$(cd "${1:?usage: fiatomic-guest.sh <build-dir>}" && pwd)
    for f in src/tools/fiatomic_info src/tools/fiatomic_perftest \
             src/uct/atomicx/.libs/libuct_atomicx.so.0 \
             test/gtest/test_fiatomic test/gtest/fiatomic_test_peer; do
        [ -e "$build/$f" ] || { echo "fiatomic-guest: $build/$f missing (build first)" >&2; exit 1; }
    done
    exec "$here/run-in-guest.sh" "${BASH_SOURCE[0]}" --in-guest "$build"
fi

build=$2
# atomicx by UCX_PLUGIN_PATH on a UCX that loads modules (>= 1.22), else by
# LD_PRELOAD (see ucx-of-build.sh)
eval "$("$here/ucx-of-build.sh" "$build")" || exit 1
export "${load_env[@]}"
export UCX_TLS=atomicx,tcp
# test_fiatomic's two-process endpoints have the peer error mode; UCX 1.22's
# default protocols (v2) have no atomics for such endpoints, its v1 protocols
# have: the suites below exercise the NIC's atomics through UCP with them on
# UCX >= 1.22 (fiatomic_info and fiatomic_perftest keep UCX's default: their
# endpoints have no error mode)
gtest_env=()
if [ "$(printf '%s\n' 1.22 "$ucx_version" | sort -V | head -1)" = 1.22 ]; then
    gtest_env=(UCX_PROTO_ENABLE=n)
fi

run_all() {
fail=0

echo "=== fiatomic-guest: fiatomic_info --csv (UCX_TLS=$UCX_TLS) ==="
csv=$(mktemp)
if ! "$build/src/tools/fiatomic_info" --csv > "$csv"; then
    echo "fiatomic-guest: fiatomic_info failed"; fail=1
else
    # family,op,datatype,supported,strategy,needs_target_progress
    summary=$(awk -F, 'NR > 1 { n[$4 "," $5 "," $6]++ }
                       END { for (k in n) print k "=" n[k] }' "$csv" | sort | tr '\n' ' ')
    echo "fiatomic-guest: cells by supported,strategy,needs_target_progress: $summary"
    expect="1,cas,0=244 1,native,0=57 1,target,1=113 "
    if [ "$summary" = "$expect" ]; then
        echo "fiatomic-guest: device-domain strategies: ok"
    else
        echo "fiatomic-guest: expected $expect"; fail=1
    fi
fi
rm -f "$csv"

echo "=== fiatomic-guest: fiatomic_perftest --matrix over atomicx+tcp ==="
if ! "$build/src/tools/fiatomic_perftest" --matrix --transports atomicx+tcp \
        --iters 20 --warmup 2 --progress; then
    echo "fiatomic-guest: matrix over atomicx failed"; fail=1
fi

echo "=== fiatomic-guest: concurrency suite over atomicx,tcp ==="
if ! env "${gtest_env[@]}" FIATOMIC_TEST_TLS_MAP=tcp=atomicx,tcp "$build/test/gtest/test_fiatomic" \
        --gtest_color=no --gtest_filter='tcp_user_native/concurrency.*:tcp_user_auto/concurrency.*:tcp_user_mixed/concurrency.*'; then
    echo "fiatomic-guest: concurrency over atomicx failed"; fail=1
fi

echo "=== fiatomic-guest: ordering over atomicx,tcp ==="
if ! env "${gtest_env[@]}" FIATOMIC_TEST_TLS_MAP=tcp=atomicx,tcp "$build/test/gtest/test_fiatomic" \
        --gtest_color=no --gtest_filter='tcp_alloc_auto/ordering.*:tcp_user_auto_noam/ordering.*'; then
    echo "fiatomic-guest: ordering over atomicx failed"; fail=1
fi

echo "fiatomic-guest: $([ $fail -eq 0 ] && echo "all passed" || echo FAILED)"
return $fail
}

# Every UCX ERROR/WARN line of the run must be listed as expected, with its
# reason, in contrib/ucx-log-expected.txt (the guest has no /dev/fd: a pipe)
log=$(mktemp /tmp/fiatomic-guest.XXXXXX)
run_all 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
"$here/../ucx-log-check.sh" --label fiatomic-guest "$log" || rc=1
rm -f "$log"
exit $rc
