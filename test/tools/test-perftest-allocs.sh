#!/bin/bash
# No allocation per call in steady state, in either process: the
# mallocs-per-call goal of fiatomic_perftest (its malloc family counts every
# call of the process, UCX's included) over tcp with 64 calls in flight
# (target-side execution: the target's request handler and replies) and over
# shared memory (-n 2000: 4e4 calls over tcp, 2e6 on shared memory). The
# count is deterministic, not a timing: at most 0.001 allocations per call
# (a run makes ~13 of its own: measurement buffers, UCX).
# Skipped where the tool cannot count (a sanitizer build owns malloc).
set -u
# shellcheck source-path=SCRIPTDIR source=perftest-test-common.sh
. "$(dirname "$0")/perftest-test-common.sh"
log=$perftest_tmp/log

timeout 300 "$perftest" --goal mallocs-per-call,rss-growth-mib -n 2000 \
    --transports tcp,posix --report-interval 0 > "$log" 2>&1
rc=$?
if grep -q 'mallocs not counted' "$log"; then
    echo "SKIP: this build cannot count allocations (sanitizer)"
    exit 77
fi
fail=0
if [ $rc -ne 0 ] || perftest_ucx_trouble "$log" || grep -q 'cannot' "$log"; then
    echo "FAIL: fiatomic_perftest exit $rc"
    fail=1
fi
for tl in tcp posix; do
    line=$(grep -E "^GOAL mallocs-per-call +$tl " "$log")
    if [ -z "$line" ]; then
        echo "FAIL: no mallocs-per-call result over $tl"
        fail=1
    elif ! grep -q ' MET ' <<< "$line" || grep -q 'NOT MET' <<< "$line"; then
        echo "FAIL: allocations per call over $tl: $line"
        fail=1
    fi
done
if [ $fail -ne 0 ]; then
    grep -vE '^\+|^\|' "$log" | head -30
    exit 1
fi
grep -E '^GOAL mallocs-per-call' "$log"
echo "PASS: no allocation per call over tcp (64 in flight) and posix"
exit 0
