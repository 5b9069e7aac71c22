#!/bin/bash
# fiatomic_perftest --scale: a short sweep with 2 initiators on one target.
# Checks that the output is consistent (aggregate rate = calls / span =
# N x the per-initiator mean, min <= mean <= max, 1/N <= Jain's index <= 1;
# no CAS hand-off with FIATOMIC_CAS_HANDOFF=no), that the target's final
# values equal the reference (no lost update), that the check can fail
# (FIATOMIC_PERFTEST_SCALE_MISCOUNT counts one call more than was made),
# and that bad values are named. Every run must print no UCX ERROR or WARN.
set -u
# shellcheck source-path=SCRIPTDIR source=perftest-test-common.sh
. "$(dirname "$0")/perftest-test-common.sh"
log=$perftest_tmp/log
err=$perftest_tmp/err

fail=0
failed() {
    echo "FAIL: $*"
    sed 's/^/    /' "$log" "$err" | head -30
    fail=1
}

# run NAME EXPECTED_RC ARGS...: stdout in $log, stderr in $err
run() {
    local name=$1 want=$2 rc
    shift 2
    timeout 300 "$@" > "$log" 2> "$err"
    rc=$?
    if [ $rc -ne "$want" ]; then
        failed "$name: exit $rc, expected $want"
        return 1
    fi
    if perftest_ucx_trouble "$log" "$err"; then
        failed "$name: a UCX error or warning"
        return 1
    fi
    return 0
}

# check_csv NAME N ROWS: the CSV rows of a sweep with N initiators
check_csv() {
    local name=$1 n=$2 rows=$3 got
    got=$(grep -c "^[^,]*,\(same\|disjoint\),$n," "$log")
    if [ "$got" -ne "$rows" ]; then
        failed "$name: $got rows with $n initiators, expected $rows"
        return
    fi
    if ! awk -F, -v n="$n" -v name="$name" '
        /^transport,/ { next }
        {
            secs = $12; calls = $13; agg = $14; mean = $15; min = $16
            max = $17; jain = $18; retry = $19; handoff = $20
            bad = ""
            if ($3 != n) bad = bad " initiators " $3
            if ($21 != "ok") bad = bad " final " $21
            if (calls <= 0 || secs <= 0) bad = bad " no calls"
            if (calls > 0 && (agg - calls / secs) ^ 2 > (0.01 * agg + 1) ^ 2)
                bad = bad " aggregate " agg " != calls/s " calls / secs
            if ((agg - n * mean) ^ 2 > (0.01 * agg + 1) ^ 2)
                bad = bad " aggregate " agg " != " n " x mean " mean
            if (min > mean + 1 || mean > max + 1) bad = bad " min/mean/max"
            if (jain > 1.0001 || jain < 1 / n - 0.0001) bad = bad " jain " jain
            if (retry < 0 || handoff < 0) bad = bad " negative counts"
            if (bad != "") { print name ": " $2 ":" bad; exit 1 }
        }' "$log"; then
        failed "$name: inconsistent row"
    fi
}

# Shared memory (direct strategy): same and disjoint elements.
if run "posix" 0 env UCX_TLS=posix "$perftest" --scale --initiators 2 \
        --seconds 0.3 -w 100 --csv; then
    check_csv posix 2 2
fi

# tcp, CAS loop on one word with a window of 4: contention, and the
# hand-off of contended elements to the target.
if run "tcp cas" 0 env UCX_TLS=tcp "$perftest" --scale --initiators 2 \
        --elements same --seconds 0.3 -w 100 -W 4 --strategy cas --csv; then
    check_csv "tcp cas" 2 1
fi
if run "tcp cas, no hand-off" 0 env UCX_TLS=tcp FIATOMIC_CAS_HANDOFF=no \
        "$perftest" --scale --initiators 2 --elements same --seconds 0.3 \
        -w 100 --strategy cas --csv; then
    check_csv "tcp cas, no hand-off" 2 1
    if ! awk -F, '!/^transport,/ && $20 != 0 { exit 1 }' "$log"; then
        failed "hand-offs with FIATOMIC_CAS_HANDOFF=no"
    fi
fi

# Mixed strategies on tcp, the text report.
if run "tcp mixed" 0 env UCX_TLS=tcp "$perftest" --scale --initiators 2 \
        --elements same --seconds 0.3 -w 100 --strategy cas,native; then
    if ! grep -qE '^same +2\*? .* (casx1\+nativex1|nativex1\+casx1) +ok$' \
            "$log"; then
        failed "tcp mixed: no 'same 2 ... nativex1+casx1 ok' row"
    fi
    if [ "$(nproc)" -lt 3 ] && ! grep -q 'more initiators + 1 target than' "$log"; then
        failed "tcp mixed: oversubscription not stated on $(nproc) CPUs"
    fi
fi

# The final check can fail: one call more counted than made.
if run "miscount" 1 env UCX_TLS=posix FIATOMIC_PERFTEST_SCALE_MISCOUNT=1 \
        "$perftest" --scale --initiators 2 --elements same --seconds 0.1 \
        -w 10; then
    if ! grep -qE '^same .* FAIL$' "$log" ||
       ! grep -q 'FAIL: fetch SUM UINT64, same elements, slot 0 element 0 after' "$log"; then
        failed "miscount: no FAIL row naming the element"
    fi
fi

# Bad values are named.
for args in "--initiators 0|invalid initiator count '0'" \
            "--initiators 2,x|invalid initiator count 'x'" \
            "--initiators 65|invalid initiator count '65'" \
            "--elements some|invalid element layout 'some'" \
            "--seconds 0|invalid timed span '0'" \
            "--strategy cas,fast|invalid strategy 'fast'" \
            "-W 65|invalid window '65' for --scale"; do
    opt=${args%%|*}
    msg=${args#*|}
    # shellcheck disable=SC2086
    if run "$opt" 2 "$perftest" --scale $opt; then
        grep -qF "$msg" "$err" || failed "$opt: no \"$msg\""
    fi
done
if run "list without --scale" 2 "$perftest" --strategy cas,target; then
    grep -q 'a list of strategies is for --scale' "$err" ||
        failed "list without --scale: not explained"
fi

[ $fail -eq 0 ] && echo "PASS: fiatomic_perftest --scale (posix, tcp cas with and without hand-off, mixed, a failing check, bad values)"
exit $fail
