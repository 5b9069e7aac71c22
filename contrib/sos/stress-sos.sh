#!/bin/bash
# Run some of Sandia OpenSHMEM's unit tests over the fiatomic provider again
# and again, with more processes than cores and busy loops beside them, to
# catch a wait that does not end under oversubscription. A run that passes
# its bound has the stacks of its processes taken (gdb) before it is ended.
#
# Usage: contrib/sos/stress-sos.sh <basic|scalable> <np> <seconds> [tests]
#   tests   test names, space- or comma-separated (default: lfinc)
# Environment: UCX_TLS and UCX_*/FI_FIATOMIC_* pass through;
#   SOS_TEST_TIMEOUT seconds per run (default 60); SOS_STRESS_LOAD busy
#   loops beside the runs (default: one per core; 0 for none);
#   SOS_STRESS_LOGS a directory for the logs of runs that failed or hung
#   (default: a temporary one, printed); ATOMICX_FI_PROVIDER_PATH or
#   ATOMICX_BUILD_DIR as for contrib/sos/run-sos.sh.
# Exit status: 0 when every run passed, 1 when one failed or hung, 2 on a
# usage or set-up error.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
die() { echo "stress-sos: error: $*" >&2; exit 2; }

[ $# -ge 3 ] || die "usage: $0 <basic|scalable> <np> <seconds> [tests]"
config=$1
np=$2
seconds=$3
tests=${4:-lfinc}
[[ $np =~ ^[1-9][0-9]*$ ]] || die "np must be a positive number, not '$np'"
[[ $seconds =~ ^[1-9][0-9]*$ ]] || die "seconds must be a positive number"
timeout_s=${SOS_TEST_TIMEOUT:-60}
[[ $timeout_s =~ ^[1-9][0-9]*$ ]] || die "SOS_TEST_TIMEOUT must be seconds"
load=${SOS_STRESS_LOAD:-$(nproc)}
[[ $load =~ ^[0-9]+$ ]] || die "SOS_STRESS_LOAD must be a number"
command -v mpiexec.hydra > /dev/null || die "mpiexec.hydra is missing"
command -v gdb > /dev/null ||
    echo "stress-sos: no gdb: a run that hangs is ended without its stacks" >&2

prefix=$("$top/contrib/sos/build-sos.sh" "$config" | tail -1) && [ -d "$prefix" ] ||
    die "no SOS build for '$config'"
for t in ${tests//,/ }; do
    [ -x "$prefix/tests/$t" ] || die "no unit test '$t' in $prefix"
done
provpath=${ATOMICX_FI_PROVIDER_PATH:-${ATOMICX_BUILD_DIR:-$top/build-release}/src/prov/fiatomic/.libs}
[ -f "$provpath/libfiatomic-fi.so" ] || die "no libfiatomic-fi.so in $provpath"
export FI_PROVIDER_PATH=$(cd "$provpath" && pwd)
export FI_PROVIDER=fiatomic SHMEM_OFI_PROVIDER=fiatomic

logs=${SOS_STRESS_LOGS:-$(mktemp -d "${TMPDIR:-/tmp}/stress-sos.XXXXXX")}
mkdir -p "$logs" || die "cannot make $logs"
work=$(mktemp -d "${TMPDIR:-/tmp}/stress-sos-run.XXXXXX") || die "mktemp failed"
loaders=()
cleanup() {
    [ ${#loaders[@]} -eq 0 ] || kill "${loaders[@]}" 2> /dev/null
    rm -rf "$work"
}
trap cleanup EXIT
for ((i = 0; i < load; ++i)); do
    (while :; do :; done) &
    loaders+=($!)
done

# a process and its descendants (hydra's proxy starts the tests in
# sessions of their own, so a session or group would miss them)
tree() { # tree <pid>
    local child
    echo "$1"
    for child in $(pgrep -P "$1"); do
        tree "$child"
    done
}

# the stacks of every process of the run, then the run ended
take_stacks() { # take_stacks <pid> <log>
    local pid pids
    pids=$(tree "$1")
    for pid in $pids; do
        echo "=== stacks of $(tr '\0' ' ' < "/proc/$pid/cmdline" 2> /dev/null) (pid $pid) ==="
        command -v gdb > /dev/null || continue
        timeout 60 gdb -q -batch -p "$pid" -ex "thread apply all bt" 2>&1 |
            grep -E '^(Thread|#)'
    done >> "$2"
    # shellcheck disable=SC2086 # one pid a word
    kill -KILL $pids 2> /dev/null
}

echo "stress-sos: ${tests//,/ } ($config) over fiatomic, $np processes," \
     "UCX_TLS=${UCX_TLS:-(unset)}, $load busy loops, for $seconds s," \
     "${timeout_s} s a run; logs of bad runs in $logs"
end=$(( $(date +%s) + seconds ))
runs=0 bad=0 slowest=0
while [ "$(date +%s)" -lt "$end" ]; do
    for t in ${tests//,/ }; do
        runs=$((runs + 1))
        log=$work/$t.log
        t0=$(date +%s)
        (cd "$work" && exec mpiexec.hydra -np "$np" "$prefix/tests/$t") > "$log" 2>&1 &
        pid=$!
        rc=
        while [ -z "$rc" ]; do
            if ! kill -0 "$pid" 2> /dev/null; then
                wait "$pid"; rc=$?
            elif [ $(( $(date +%s) - t0 )) -ge "$timeout_s" ]; then
                take_stacks "$pid" "$log"
                wait "$pid"; rc=timeout
            else
                sleep 0.2
            fi
        done
        took=$(( $(date +%s) - t0 ))
        [ "$took" -le "$slowest" ] || slowest=$took
        if [ "$rc" != 0 ]; then
            bad=$((bad + 1))
            cp "$log" "$logs/$t-run$runs.log"
            echo "stress-sos: run $runs of $t: ${rc/#[0-9]*/exit $rc} after $took s ($logs/$t-run$runs.log)"
        fi
    done
done
echo "stress-sos: $runs runs, $bad failed or hung, slowest $slowest s"
[ "$bad" -eq 0 ]
