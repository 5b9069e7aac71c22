# shellcheck shell=bash
# Sourced by the tests of test/tools that run a built program:
#
#   test_start PROGRAM   the test skips (exit 77, the reason printed) unless
#                        PROGRAM is built; then $test_tmp is a directory for
#                        the test's files, removed when the test exits

test_start() {
    if [ ! -x "$1" ]; then
        echo "SKIP: $1 not built"
        exit 77
    fi
    test_tmp=$(mktemp -d) || exit 1
    trap 'rm -rf "$test_tmp"' EXIT
}
