#!/bin/bash
# Self-test of contrib/ucx-log-check.sh: which lines an expectation list
# accepts, with and without an "after ERE" condition ({pid} included), per
# test section; a malformed list is a usage error. Run by make check.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
check=$here/ucx-log-check.sh
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ucx-log-check-test.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0

cat >"$tmp/expected.txt" <<'LIST'
# plain and conditional expectations
demo: plain | ^a\.c:[0-9]+ always fine$ | listed without a condition
demo: * | ^flush\.c:[0-9]+ error during flush: Endpoint timeout$ | after ^[a-z_]+: pid {pid}: finalizing$ | only once the same process is finalizing
demo: * | ^x\.c:[0-9]+ boom$ | after ^prog: probe next$ | only after the probe started, in the same section
LIST

# expect <name> <status> <summary> <log>: runs the checker on <log>
expect() {
    local name=$1 want_rc=$2 want=$3 log=$4 got rc
    got=$("$check" --expected "$tmp/expected.txt" --label t "$log" 2>&1)
    rc=$?
    if [ $rc -ne "$want_rc" ] || ! grep -qxF "$want" <<<"$got"; then
        echo "FAIL: $name: status $rc (want $want_rc), output:"
        echo "$got"
        fail=1
    else
        echo "ok: $name"
    fi
}

ucx() { printf '[1700000000.000001] [guest:%s  :0]     %s   UCX  ERROR %s\n' "$1" "$2" "$3"; }

{
    echo "=== demo: plain ==="
    ucx 10 a.c:1 "always fine"
} >"$tmp/plain.log"
expect "plain expectation" 0 "ucx-log-check[t]: 1 UCX ERROR/WARN lines: 1 expected, 0 unexpected" "$tmp/plain.log"

{
    echo "=== demo: finalize ==="
    ucx 123 flush.c:26 "error during flush: Endpoint timeout"   # before: no
    echo "prog: pid 123: finalizing"
    ucx 123 flush.c:26 "error during flush: Endpoint timeout"   # after, same pid: yes
    ucx 1234 flush.c:26 "error during flush: Endpoint timeout"  # other pid: no
    ucx 12 flush.c:26 "error during flush: Endpoint timeout"    # pid prefix: no
} >"$tmp/pid.log"
expect "after {pid}" 1 "ucx-log-check[t]: 4 UCX ERROR/WARN lines: 1 expected, 3 unexpected" "$tmp/pid.log"

{
    echo "=== demo: probe ==="
    ucx 5 x.c:9 "boom"                                           # before: no
    echo "prog: probe next"
    ucx 6 x.c:9 "boom"                                           # after: yes
    echo "=== demo: next section ==="
    ucx 6 x.c:9 "boom"                                           # new section: no
} >"$tmp/after.log"
expect "after, per section" 1 "ucx-log-check[t]: 3 UCX ERROR/WARN lines: 1 expected, 2 unexpected" "$tmp/after.log"

# the project's own list: UCX 1.22.0's "no active messages transport" line
# of a same-host peer that exited, with posix first or after self (the
# posix,self configuration), is expected in the two tests whose scenario it
# is, and only there
real() { "$check" --label t "$1" 2>&1; }
am="no active messages transport to <no debug data>:"
{
    echo "[ RUN      ] tls/local2p.peer_leaving_fails_later_calls/shm_manual_programkeys"
    ucx 7 select.c:721 "$am posix/memory - no peer failure handler"
    echo "[ RUN      ] tls/local2p.peer_leaving_fails_later_calls/shmself_manual_programkeys"
    ucx 8 select.c:721 "$am self/memory - no peer failure handler, posix/memory - "
    echo "[ RUN      ] tls/local2p.peer_closes_while_caller_idle_in_bound/shmself_auto_provkeys"
    ucx 9 select.c:721 "$am self/memory - no peer failure handler, posix/memory - "
    echo "[ RUN      ] tls/local2p.closed_peer_refused/shmself_manual_programkeys"
    ucx 10 select.c:721 "$am self/memory - no peer failure handler, posix/memory - "
} >"$tmp/local2p.log"
got=$(real "$tmp/local2p.log")
if grep -qxF "ucx-log-check[t]: 4 UCX ERROR/WARN lines: 3 expected, 1 unexpected" <<<"$got"; then
    echo "ok: the project's list, an exited same-host peer's wire-up"
else
    echo "FAIL: the project's list, an exited same-host peer's wire-up:"; echo "$got"; fail=1
fi

printf 'demo: * | x | before y | z\n' >"$tmp/bad.txt"
if "$check" --expected "$tmp/bad.txt" "$tmp/plain.log" >/dev/null 2>&1; [ $? -ne 2 ]; then
    echo "FAIL: a 4-field line without 'after' is not a usage error"
    fail=1
else
    echo "ok: malformed condition refused"
fi
exit $fail
