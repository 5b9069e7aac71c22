# shellcheck shell=bash
# Sourced by the tests of test/tools: their shared preamble.
#
#   test_start [PROGRAM]  the test skips (exit 77, the reason printed) unless
#                         PROGRAM (when given) is built; then $test_tmp is a
#                         directory for the test's files, removed when the
#                         test exits
#   ok / bad MESSAGE      count a check that passed / failed (bad prints
#                         FAIL: MESSAGE and makes test_end exit 1)
#   expect RC OUT_RE ERR_RE -- COMMAND...
#                         runs COMMAND (stdout in $test_tmp/out, stderr in
#                         $test_tmp/err) and checks its exit status and that
#                         each stream has a line matching its extended
#                         regular expression (an empty one matches anything)
#   test_end              prints the count of checks and exits 0 when none
#                         failed

test_fail=0
test_checks=0

test_start() {
    if [ $# -ge 1 ] && [ ! -x "$1" ]; then
        echo "SKIP: $1 not built"
        exit 77
    fi
    test_tmp=$(mktemp -d) || exit 1
    trap 'rm -rf "$test_tmp"' EXIT
}

ok()  { test_checks=$((test_checks + 1)); }
bad() { test_checks=$((test_checks + 1)); echo "FAIL: $*"; test_fail=1; }

expect() {
    local want_rc=$1 out_re=$2 err_re=$3 rc
    shift 4
    "$@" > "$test_tmp/out" 2> "$test_tmp/err"
    rc=$?
    if [ $rc -ne "$want_rc" ]; then
        bad "$*: exit $rc, expected $want_rc"
        sed 's/^/  /' "$test_tmp/err" | head -5
    elif [ -n "$out_re" ] && ! grep -qE -- "$out_re" "$test_tmp/out"; then
        bad "$*: stdout lacks /$out_re/"
        head -5 "$test_tmp/out" | sed 's/^/  /'
    elif [ -n "$err_re" ] && ! grep -qE -- "$err_re" "$test_tmp/err"; then
        bad "$*: stderr lacks /$err_re/"
        head -5 "$test_tmp/err" | sed 's/^/  /'
    else
        ok
    fi
}

test_end() {
    echo "$test_checks checks, $([ $test_fail -eq 0 ] && echo "all passed" ||
                                  echo "some FAILED")"
    exit $test_fail
}
