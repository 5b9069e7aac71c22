#!/bin/bash
# The main job: install what is needed, build (reusing a configured build
# directory), then run every supported cell of the fiatomic matrix between
# two processes over UCX on localhost, verify each against the independent
# reference model (src/ref/fiatomic_ref), and time it.
#
# Output: one table per transport (family, op, datatype, strategy, check,
# latency median/average/p99 in us), then a SUMMARY line. Exits non-zero
# when any cell fails verification or a transport cannot run.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
builddir=${BUILD_DIR:-$top/build-release}
logdir="$top/build-logs"
transports=posix,tcp
iters=200   # modest: the whole matrix runs in well under a minute
warmup=20
strategy=
deps=1
build_only=0
extra=()

usage() {
    cat <<EOF
Usage: contrib/run-matrix.sh [options]
  --transports LIST  UCX transports to run, comma separated
                     (default posix,tcp; any of posix, sysv, tcp)
  --sysv             add sysv to the transports
  --all              posix,sysv,tcp
  --iters N          timed calls per cell (default $iters)
  --warmup N         untimed calls per cell first (default $warmup)
  --strategy S       force FIATOMIC_STRATEGY=auto|native|cas|direct|target
                     (cells the strategy cannot execute are then skipped)
  --baseline ucp     add raw UCP latency and the ratio for native cells
  --csv              CSV instead of tables (progress and SUMMARY on stderr)
  --build-dir DIR    build directory (default \$BUILD_DIR or build-release)
  --no-deps          skip contrib/install-deps.sh
  --build-only       install, build, and stop (used by contrib/perf-report.sh)
EOF
}

while [ $# -gt 0 ]; do
    case "$1" in
    --transports) transports=$2; shift ;;
    --sysv)       transports="$transports,sysv" ;;
    --all)        transports=posix,sysv,tcp ;;
    --iters)      iters=$2; shift ;;
    --warmup)     warmup=$2; shift ;;
    --strategy)   strategy=$2; shift ;;
    --baseline)   extra+=(--baseline "$2"); shift ;;
    --csv)        extra+=(--csv) ;;
    --build-dir)  builddir=$2; shift ;;
    --no-deps)    deps=0 ;;
    --build-only) build_only=1 ;;
    -h|--help)    usage; exit 0 ;;
    *)            usage >&2; exit 2 ;;
    esac
    shift
done

step() { echo "=== $* ===" >&2; }
mkdir -p "$logdir"

if [ "$deps" -eq 1 ]; then
    step "dependencies"
    "$top/contrib/install-deps.sh" >&2
fi

# Regenerate the build system only when it is missing or older than its
# sources, so a configured build directory is reused as it is.
cd "$top"
if [ ! -x configure ] || [ -n "$(find configure.ac Makefile.am src test \
        \( -name '*.am' -o -name '*.m4' -o -name configure.ac \) \
        -newer configure 2>/dev/null | head -1)" ]; then
    step "autogen"
    ./autogen.sh > "$logdir/run-matrix-autogen.log" 2>&1 ||
        { cat "$logdir/run-matrix-autogen.log" >&2; exit 1; }
fi

mkdir -p "$builddir"
cd "$builddir"
if [ ! -f config.status ]; then
    step "configure ($builddir)"
    "$top/configure" --enable-werror > "$logdir/run-matrix-configure.log" 2>&1 ||
        { tail -40 "$logdir/run-matrix-configure.log" >&2; exit 1; }
fi
step "build ($builddir)"
make -j"$(nproc)" > "$logdir/run-matrix-make.log" 2>&1 ||
    { grep -E "error|Error" "$logdir/run-matrix-make.log" | head -40 >&2; exit 1; }

[ "$build_only" -eq 0 ] || exit 0

# Two cores or more: initiator and target on different CPUs, so that the
# two spinning processes never share one (each call would then wait for a
# scheduler time slice).
pin=()
if [ "$(nproc)" -ge 2 ]; then
    pin=(--pin 0,1)
fi
if [ -n "$strategy" ]; then
    extra+=(--strategy "$strategy")
fi

step "matrix: transports $transports, $iters iterations per cell"
# Both streams are kept as they are and copied for the UCX log check: a UCX
# ERROR/WARN line not listed in contrib/ucx-log-expected.txt fails the run.
out_log=$(mktemp) err_log=$(mktemp)
trap 'rm -f "$out_log" "$err_log"' EXIT
rc=0
"$builddir/src/tools/fiatomic_perftest" --matrix --transports "$transports" \
    -n "$iters" -w "$warmup" --progress "${pin[@]}" "${extra[@]}" \
    > >(tee "$out_log") 2> >(tee "$err_log" >&2) || rc=$?
wait
"$top/contrib/ucx-log-check.sh" --label run-matrix "$out_log" "$err_log" >&2 ||
    rc=$((rc ? rc : 1))
exit $rc
