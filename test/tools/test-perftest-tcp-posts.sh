#!/bin/bash
# fiatomic_perftest's rate run of base-family posts over tcp, on a fresh
# target each time: several posts in flight, then a flush, right after the
# endpoint was created. UCX 1.13.1's tcp transport crashed the target when
# software-atomic posts and a flush reached it over a second tcp lane still
# being wired up (a race: about 3 runs in 4); the library now flushes a fresh
# endpoint once before its first software atomic. Each run must finish, pass,
# and print no UCX ERROR or WARN line.
set -u
# shellcheck source-path=SCRIPTDIR source=perftest-test-common.sh
. "$(dirname "$0")/perftest-test-common.sh"
runs=${PERFTEST_TCP_POSTS_RUNS:-6}
log=$perftest_tmp/log

fail=0
for i in $(seq 1 "$runs"); do
    for window in 2 16; do
        UCX_TLS=tcp timeout 60 "$perftest" -f base -o sum -d u64 \
            -W "$window" -n 1000 -w 100 --strategy native > "$log" 2>&1
        rc=$?
        if [ $rc -ne 0 ] || perftest_ucx_trouble "$log"; then
            echo "FAIL: run $i, window $window: exit $rc"
            grep -vE '^\+|^\|' "$log" | head -20
            fail=1
        elif ! grep -q '^Final:' "$log"; then
            echo "FAIL: run $i, window $window: no result line"
            fail=1
        fi
    done
done
[ $fail -eq 0 ] && echo "PASS: $runs x 2 rate runs of tcp posts on fresh targets"
exit $fail
