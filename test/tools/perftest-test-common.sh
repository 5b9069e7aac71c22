# shellcheck shell=bash
# Sourced by the fiatomic_perftest tests (test-perftest-*.sh): the binary
# under test in $perftest (the test skips when it is not built), a directory
# for temporary files removed at exit ($perftest_tmp), and the check that a
# run printed no UCX error.

perftest=${FIATOMIC_PERFTEST:-./src/tools/fiatomic_perftest}
if [ ! -x "$perftest" ]; then
    echo "SKIP: $perftest not built"
    exit 77
fi

perftest_tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$perftest_tmp"' EXIT

# perftest_ucx_trouble FILE...: true when the output in FILEs has a UCX
# ERROR, WARN or FATAL line, a crash, or the tool lost its target
perftest_ucx_trouble() {
    grep -qE 'UCX +(ERROR|WARN|FATAL)|Segmentation|Assertion|lost the target' "$@"
}
