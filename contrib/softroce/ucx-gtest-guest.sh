#!/bin/bash
# UCX's own gtest suites, the ones UCX accepts a transport with, run over
# atomicx on soft-RoCE rxe0 inside the qemu guest.
#
#   contrib/softroce/ucx-gtest-guest.sh <build-dir> [uct|ucp]...
#
# On the host: builds libuct_atomicx in <build-dir>, and UCX's gtest sources
# that apply to atomicx from the source package of the installed UCX
# (build-deps/ucx-VERSION, contrib/get-ucx-src.sh) into
# <build-dir>/ucx-gtest-VERSION (contrib/ucx-gtest/ucx-gtest.mk: incremental, so
# a second run only links or does nothing); then boots the guest and runs
# this script there. In the guest (ATOMICX_GUEST=1), with atomicx loaded
# (LD_PRELOAD) so that UCX's resource enumeration finds atomicx/rxe0:1:
#   uct  UCX's UCT tests (test_amo*, test_fence, test_flush, test_pending,
#        test_uct_ep, test_peer_failure, test_progress, test_uct_query), every
#        case instantiated on atomicx (contrib/ucx-gtest/atomicx_uct_tls.h)
#   ucp  test_ucp_atomic (32/64-bit, post/fetch/misaligned_post, atomic modes
#        cpu/device/guess, with and without UCX's new protocols) on
#        UCX_TLS=atomicx,tcp (contrib/ucx-gtest/atomicx_ucp_tls.h), and a
#        check that UCP's AMO lane is atomicx/rxe0:1 in the device mode
# UCX's gtest reports a skipped test as passed: here the totals are rewritten
# so that skipped tests are counted as skipped, each listed with the reason
# UCX's code gives. The cases atomicx is known not to pass yet are left out
# and listed with their reason (contrib/ucx-gtest/known-failures.txt). A UCX
# ERROR or WARN line fails the run unless contrib/ucx-log-expected.txt lists
# it (none is listed for these suites).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
me=ucx-gtest-guest

[ $# -ge 1 ] || { echo "usage: $0 <build-dir> [uct|ucp]..." >&2; exit 2; }
build=$(cd "$1" && pwd) || exit 2
shift
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(uct ucp)

ucx_ver=$(ucx_info -v 2>/dev/null | sed -n 's/^# Version //p')
[ -n "$ucx_ver" ] || { echo "$me: ucx_info -v failed (install ucx-utils)" >&2; exit 1; }
gt=$build/ucx-gtest-$ucx_ver

if [ "${ATOMICX_GUEST:-}" != 1 ]; then
    # ---- Host side: build, then boot the guest -------------------------
    src=${ATOMICX_UCX_SRC:-$top/build-deps/ucx-$ucx_ver}
    [ -f "$src/test/gtest/uct/uct_test.cc" ] ||
        { echo "$me: no UCX $ucx_ver source tree with its gtest in $src (run contrib/get-ucx-src.sh)" >&2; exit 1; }
    echo "$me: building libuct_atomicx and UCX $ucx_ver's gtest in $gt"
    mkdir -p "$gt"
    t0=$(date +%s)
    make -C "$build/src/uct/atomicx" -j"$(nproc)" >/dev/null ||
        { echo "$me: building libuct_atomicx failed" >&2; exit 1; }
    if ! make -f "$top/contrib/ucx-gtest/ucx-gtest.mk" -j"$(nproc)" UCX_SRC="$src" \
            O="$gt" >"$gt/build.log" 2>&1; then
        grep -E 'error|undefined' "$gt/build.log" | head -40
        echo "$me: building UCX's gtest failed (log: $gt/build.log)" >&2
        exit 1
    fi
    echo "$me: build took $(($(date +%s) - t0)) s"
    exec "$here/run-in-guest.sh" "$here/ucx-gtest-guest.sh" "$build" "${suites[@]}"
fi

# ---- In the guest --------------------------------------------------------
lib=$build/src/uct/atomicx/.libs/libuct_atomicx.so.0
bin=$gt/ucx-gtest
out=${ATOMICX_GUEST_OUT:-/tmp}
dev=rxe0:1
failed=()

# As UCX's "make -C test/gtest test" runs them, but a failure prints a
# backtrace and exits instead of freezing. UCX_TLS is set per test by UCX's
# UCP test itself; one from the caller would only confuse the UCT part.
export UCX_LOG_LEVEL=warn UCX_HANDLE_ERRORS=bt
unset UCX_TLS UCX_NET_DEVICES
# Each test is bounded by UCX's watchdog (seconds, per test).
watchdog=${ATOMICX_UCX_GTEST_WATCHDOG:-300}
# Left out: the cases atomicx is known not to pass yet
# (contrib/ucx-gtest/known-failures.txt: reported as skipped, with the
# reason; ATOMICX_UCX_GTEST_KNOWN=run runs them too), and any on request
# (ATOMICX_UCX_GTEST_EXCLUDE, gtest patterns separated by ':').
known=()
known_reason=()
if [ "${ATOMICX_UCX_GTEST_KNOWN:-}" != run ]; then
    while IFS='|' read -r pat reason; do
        pat=$(echo "$pat" | tr -d '[:space:]')
        [ -n "$pat" ] && [ "${pat#\#}" = "$pat" ] || continue
        known+=("$pat")
        known_reason+=("$(echo "$reason" | sed 's/^ *//')")
    done <"$top/contrib/ucx-gtest/known-failures.txt"
fi
excluded=$(IFS=:; echo "${known[*]}")
[ -z "${ATOMICX_UCX_GTEST_EXCLUDE:-}" ] || excluded=${excluded:+$excluded:}$ATOMICX_UCX_GTEST_EXCLUDE
exclude=${excluded:+-$excluded}

# list_atomicx_tests <filter>: the full names of UCX's tests on atomicx that
# the filter selects, one per line
list_atomicx_tests() {
    LD_PRELOAD="$lib" "$bin" --gtest_list_tests --gtest_filter="$1" 2>/dev/null |
        awk '/^[^ ]/ { suite = $1; next }
             /GetParam\(\) = .*atomicx/ { print suite $1 }'
}

# print_known <list file>: the known failures among the listed tests, as
# skipped tests with their reason; sets nknown
print_known() {
    local i n name
    nknown=0
    for i in "${!known[@]}"; do
        n=0
        while read -r name; do
            # shellcheck disable=SC2053  # (gtest patterns are globs)
            [[ $name == ${known[$i]} ]] && n=$((n + 1))
        done <"$1"
        [ "$n" -gt 0 ] || continue
        nknown=$((nknown + n))
        echo "[  SKIPPED ] ${known[$i]} ($n) not run: ${known_reason[$i]}"
    done
}


# run_gtest <name> <gtest filter>: runs UCX's gtest binary on the filter
# less the excluded cases, prints its output with the totals corrected for
# skipped tests (and the excluded known failures), checks the log.
run_gtest() {
    local name=$1 positive=$2 filter=$2$exclude log rc n
    log=$out/ucx-gtest-$name.log
    echo
    echo "=== $me: UCX gtest $name ($filter) ==="
    list_atomicx_tests "$positive" >"$log.all"
    n=$(list_atomicx_tests "$filter" | wc -l)
    if [ "$n" -eq 0 ]; then
        echo "$me: $name: UCX's gtest enumerated no test on atomicx (no atomicx/$dev resource?)"
        LD_PRELOAD="$lib" ucx_info -d | grep -E 'Transport|Device' | sort -u
        failed+=("$name")
        return
    fi
    echo "$me: $name: $(wc -l <"$log.all") tests on atomicx, $n to run"
    print_known "$log.all" >"$log.known"
    LD_PRELOAD="$lib" "$bin" --gtest_color=no --gtest_filter="$filter" \
        -t "$watchdog" >"$log" 2>&1
    rc=$?
    # UCX prints "[     SKIP ] (reason)" inside a test that it then reports
    # as OK and counts in "[  PASSED  ]": count those as skipped instead.
    awk -v known="$log.known" -v nknown="$nknown" '
        /^\[ RUN      \] / { cur = $4 }
        /^\[     SKIP \] / {
            r = $0; sub(/^\[     SKIP \] */, "", r)
            if (!(cur in skip)) { order[++nskip] = cur }
            skip[cur] = r
        }
        /^\[  PASSED  \] [0-9]+ test/ {
            printf "[  PASSED  ] %d tests (UCX gtest reported %d: it counts its skipped tests as passed).\n", $4 - nskip, $4
            printf "[  SKIPPED ] %d tests, listed below:\n", nskip + nknown
            for (i = 1; i <= nskip; i++) {
                printf "[  SKIPPED ] %s %s\n", order[i], skip[order[i]]
            }
            while ((getline line < known) > 0) { print line }
            next
        }
        { print }
    ' "$log"
    if [ $rc -ne 0 ]; then
        echo "$me: $name: UCX's gtest failed (exit $rc)"
        failed+=("$name")
    fi
    # UCX's tests hide the lines they provoke (hide_errors_logger): every
    # printed one must be listed in contrib/ucx-log-expected.txt (none is)
    if ! "$here/../ucx-log-check.sh" --label "$me $name" "$log"; then
        failed+=("$name: ERROR/WARN lines")
    fi
}

# UCP's AMO lane must be atomicx in the device atomic mode, not software
# atomics over the AM lane ("amo_am"): UCP prints its lanes at info level.
check_ucp_amo_lane() { # tls-instance
    local log=$out/ucx-gtest-ucp-lanes-$1.log
    echo
    echo "=== $me: UCP's AMO lane on $1 (device atomic mode) ==="
    LD_PRELOAD="$lib" UCX_LOG_LEVEL=info "$bin" --gtest_color=no \
        --gtest_filter="$1/test_ucp_atomic64.post/1" -t "$watchdog" >"$log" 2>&1
    # e.g. "ep_cfg[0]: amo(atomicx/rxe0:1)" ("amo_am(...)" for software ones)
    if grep -E 'ep_cfg\[[0-9]+\]:' "$log" | grep -q "[ ;]amo([^)]*atomicx/$dev"; then
        grep -E 'ep_cfg\[[0-9]+\]:' "$log" | sed 's/^.*\(ep_cfg\)/\1/' | sort -u
        echo "$me: AMO lane on $1: atomicx/$dev"
    else
        grep -E 'ep_cfg|UCX' "$log" | head -20
        echo "$me: $1: UCP's AMO lane is not atomicx/$dev"
        failed+=("ucp amo lane $1")
    fi
}

for s in "${suites[@]}"; do
    case $s in
    uct) run_gtest uct 'atomicx/*' ;;
    ucp)
        run_gtest ucp 'atomicx_tcp/*'
        check_ucp_amo_lane atomicx_tcp
        ;;
    *) echo "$me: unknown suite $s" >&2; failed+=("$s") ;;
    esac
done

echo
if [ ${#failed[@]} -gt 0 ]; then
    echo "$me: FAILED: ${failed[*]}"
    exit 1
fi
echo "$me: all passed (${suites[*]})"
