# shellcheck shell=bash
# Sourced by the fiatomic_perftest tests (test-perftest-*.sh): the binary
# under test in $perftest (the test skips when it is not built), a directory
# for temporary files removed at exit ($perftest_tmp), and the check that a
# run printed no UCX error.

# shellcheck source-path=SCRIPTDIR source=test-common.sh
. "$(dirname "${BASH_SOURCE[0]}")/test-common.sh"

perftest=${FIATOMIC_PERFTEST:-./src/tools/fiatomic_perftest}
test_start "$perftest"
# shellcheck disable=SC2034 # for the tests that source this file
perftest_tmp=$test_tmp

# perftest_ucx_trouble FILE...: true when the output in FILEs has a UCX
# ERROR, WARN or FATAL line, a crash, or the tool lost its target
perftest_ucx_trouble() {
    grep -qE 'UCX +(ERROR|WARN|FATAL)|Segmentation|Assertion|lost the target' "$@"
}
