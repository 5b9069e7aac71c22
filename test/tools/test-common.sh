# shellcheck shell=bash
# Sourced by the tests of test/tools: their shared preamble.
#
#   test_start [PROGRAM]  the test skips (exit 77, the reason printed) unless
#                         PROGRAM (when given) is built; then $test_tmp is a
#                         directory for the test's files, removed when the
#                         test exits
#   require_tools HINT TOOL...
#                         the test skips (exit 77) unless every TOOL is on
#                         PATH; the reason names the first one missing and
#                         HINT (the packages that bring it)
#   require_provider      the test skips unless the provider is built in this
#                         build tree; then $provdir is its directory, and
#                         libfabric (FI_PROVIDER_PATH) loads it and its
#                         libfiatomic from the build tree; $asan is the ASan
#                         runtime it links (a sanitizer build), else empty:
#                         an uninstrumented program that loads it needs
#                         that runtime preloaded
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

require_tools() {
    local hint=$1 tool
    shift
    for tool in "$@"; do
        if ! command -v "$tool" > /dev/null 2>&1; then
            echo "SKIP: $tool is not installed ($hint)"
            exit 77
        fi
    done
}

require_provider() {
    provdir=$(cd ./src/prov/fiatomic/.libs 2>/dev/null && pwd)
    if [ -z "$provdir" ] || [ ! -f "$provdir/libfiatomic-fi.so" ]; then
        echo "SKIP: the provider (libfiatomic-fi.so) is not built here"
        exit 77
    fi
    # FI_PROVIDER would hide the provider the test names if it named another
    unset FI_PROVIDER
    export FI_PROVIDER_PATH=$provdir
    LD_LIBRARY_PATH=$PWD/src/fiatomic/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export LD_LIBRARY_PATH
    # shellcheck disable=SC2034 # read by the tests that source this
    asan=$(ldd "$provdir/libfiatomic-fi.so" | awk '/libasan\.so/ {print $3}')
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
