#!/bin/bash
# Run Sandia OpenSHMEM's unit tests (built by contrib/sos/build-sos.sh) over
# one libfabric provider, with MPICH's mpiexec.hydra, and judge the run
# against the reference list of the configuration.
#
# Usage: contrib/sos/run-sos.sh <basic|scalable> <provider> [np] [tests]
#   provider  a libfabric provider name: "tcp;ofi_rxm", "sockets", ... or
#             "fiatomic", this project's, loaded from FI_PROVIDER_PATH:
#             $ATOMICX_FI_PROVIDER_PATH if set, else $ATOMICX_PREFIX/lib/libfabric
#             if ATOMICX_PREFIX is set (an install), else
#             ${ATOMICX_BUILD_DIR:-build-release}/src/prov/fiatomic/.libs
#   np        processes per test (default 2)
#   tests     a subset: test names, or one of the groups "atomic", "lock",
#             "wait" (see group_tests below), space- or comma-separated;
#             default: every unit test, in SOS's order
# Environment: UCX_TLS (and any UCX_* or FIATOMIC_* variable) is passed to
#   the processes as is; SOS_TEST_TIMEOUT seconds per test (default 120);
#   SOS_REFERENCE a reference list to judge against instead of
#   contrib/sos/reference-<config>.txt ("none": no judgement);
#   SOS_RESULTS a file to append "<np> <test> PASS|FAIL|SKIP|TIMEOUT" lines
#   to (how contrib/sos/reference-*.txt are made); SOS_LOGS a directory to
#   keep each test's output in, as <test>.log (else it is removed);
#   SOS_AMO_LANE a UCP transport/device ("posix/memory",
#   "atomicx/rxe0:1"): every process that connects must print an endpoint
#   configuration with its AMO lane there (UCX_LOG_LEVEL=info is set);
#   the provider's UCP context has AMO lanes only with
#   FI_FIATOMIC_UCP_ONESIDED=1. "none": no process may print an AMO lane
#   (the provider's default: no UCP atomics a peer could aim anywhere).
# Each test's output is checked for UCX ERROR/WARN lines
# (contrib/ucx-log-check.sh). Each run works in its own temporary directory (the test programs and the
# build are only read), so runs may go side by side. Exit status: 0 when
# every test the reference passes with this np passed, 1 otherwise, 2 on a
# usage or set-up error.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
die() { echo "run-sos: error: $*" >&2; exit 2; }

[ $# -ge 2 ] || die "usage: $0 <basic|scalable> <provider> [np] [tests]"
config=$1
provider=$2
np=${3:-2}
subset=${4:-}
case $config in
    basic|scalable) ;;
    *) die "configuration '$config': expected basic or scalable" ;;
esac
[[ $np =~ ^[1-9][0-9]*$ ]] || die "np must be a positive number, not '$np'"
timeout_s=${SOS_TEST_TIMEOUT:-120}
[[ $timeout_s =~ ^[1-9][0-9]*$ ]] || die "SOS_TEST_TIMEOUT must be seconds"
command -v mpiexec.hydra > /dev/null ||
    die "mpiexec.hydra is missing (contrib/install-deps.sh installs mpich)"

prefix=$("$top/contrib/sos/build-sos.sh" "$config" | tail -1) && [ -d "$prefix" ] ||
    die "no SOS build for '$config'"

# The tests of a group: SOS's atomic, lock and wait/test-family tests.
group_tests() {
    case $1 in
        atomic) grep -E 'atomic|swap|cswap|inc|fadd|set_fetch|lfinc' ;;
        lock)   grep -E 'lock' ;;
        wait)   grep -E 'wait|shmem_test' ;;
        *)      grep -Fx "$1" ;;
    esac
}
all=$(cat "$prefix/tests.txt")
if [ -n "$subset" ]; then
    tests=
    for s in ${subset//,/ }; do
        found=$(echo "$all" | group_tests "$s")
        [ -n "$found" ] || die "no unit test or group named '$s'"
        tests+="$found"$'\n'
    done
    # once each, in SOS's order
    # (no process substitution: the soft-RoCE guest has no /dev/fd)
    tests=$(echo "$all" | grep -Fx -e "$(echo "$tests" | grep .)")
else
    tests=$all
fi

if [ "$provider" = fiatomic ]; then
    if [ -n "${ATOMICX_FI_PROVIDER_PATH:-}" ]; then
        provpath=$ATOMICX_FI_PROVIDER_PATH
    elif [ -n "${ATOMICX_PREFIX:-}" ]; then
        provpath=$ATOMICX_PREFIX/lib/libfabric
    else
        provpath=${ATOMICX_BUILD_DIR:-$top/build-release}/src/prov/fiatomic/.libs
    fi
    [ -f "$provpath/libfiatomic-fi.so" ] || die "no libfiatomic-fi.so in $provpath"
    # the tests run in a directory of their own: a relative path would
    # leave libfabric without the provider
    provpath=$(cd "$provpath" && pwd)
    export FI_PROVIDER_PATH=$provpath
fi
export FI_PROVIDER=$provider SHMEM_OFI_PROVIDER=$provider
[ -z "${SOS_AMO_LANE:-}" ] || export UCX_LOG_LEVEL=info

reference=${SOS_REFERENCE:-$top/contrib/sos/reference-$config.txt}
if [ "$reference" != none ] && [ ! -f "$reference" ]; then
    die "no reference list $reference (SOS_REFERENCE=none runs without one)"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/run-sos.XXXXXX") || die "mktemp failed"
trap 'rm -rf "$work"' EXIT
: > "$work/results"

echo "run-sos: $(echo "$tests" | wc -l) unit tests of SOS ($config, $prefix)" \
     "over $provider, $np processes, UCX_TLS=${UCX_TLS:-(unset)}," \
     "${timeout_s} s each"
start=$(date +%s)
for t in $tests; do
    t0=$(date +%s)
    # timeout signals its whole process group: hydra and the processes
    # (the header names the test for contrib/ucx-log-check.sh)
    echo "=== sos: $t ===" > "$work/$t.log"
    (cd "$work" && timeout -k 10 "$timeout_s" \
         mpiexec.hydra -np "$np" "$prefix/tests/$t") >> "$work/$t.log" 2>&1
    rc=$?
    case $rc in
        0)   result=PASS ;;
        77)  result=SKIP ;;
        124|137) result=TIMEOUT ;;
        *)   result=FAIL ;;
    esac
    echo "$t $result" >> "$work/results"
    printf '%-8s %-40s %4d s\n' "$result:" "$t" $(( $(date +%s) - t0 ))
    if [ "$result" = FAIL ] || [ "$result" = TIMEOUT ]; then
        # the last lines that are not backtrace frames ("prog(fn+0x1a)[0x..]")
        grep -vE '\(([A-Za-z_0-9.]*\+0x[0-9a-f]+)?\) *\[0x[0-9a-f]+\]$' "$work/$t.log" |
            tail -5 | sed 's/^/    | /'
    fi
done
elapsed=$(( $(date +%s) - start ))
[ -z "${SOS_RESULTS:-}" ] || sed "s/^/$np /" "$work/results" >> "$SOS_RESULTS"
if [ -n "${SOS_LOGS:-}" ]; then
    mkdir -p "$SOS_LOGS" && for t in $tests; do cp "$work/$t.log" "$SOS_LOGS/"; done
fi

count() { grep -c " $1\$" "$work/results"; }
echo "run-sos: $(count PASS) passed, $(count FAIL) failed, $(count TIMEOUT)" \
     "timed out, $(count SKIP) skipped of $(echo "$tests" | wc -l) in $elapsed s" \
     "($config, $provider, np $np)"

# A UCX ERROR or WARN line that contrib/ucx-log-expected.txt does not list
# fails the run, as everywhere in this project
logcheck=0
for t in $tests; do echo "$work/$t.log"; done | xargs -r \
    "$top/contrib/ucx-log-check.sh" --label "sos-$config-$provider-np$np" ||
    logcheck=1

# SOS_AMO_LANE=<transport/device>: each process of every test that ran and
# printed UCP endpoint configurations (ep_cfg, UCX_LOG_LEVEL=info, which
# this sets) printed one with its AMO lane there; a test whose processes
# printed none made no connection (shmem_global_exit) and is not judged. A
# provider endpoint that connects by socket address (tcp in UCX_TLS) has
# first a configuration with only the tcp device behind the address
# (atomics emulated over tcp); UCX then wires up every transport and prints
# the final one. Over UCX_TLS=posix it connects by worker address.
pids_of() { grep -oE '^\[[0-9.]+\] \[[^:]+:[0-9]+' | sed 's/.*://' | sort -u; }
if [ -n "${SOS_AMO_LANE:-}" ]; then
    lanes_bad=0 judged_lanes=0 unconnected=0
    for t in $tests; do
        [ "$(awk -v t="$t" '$1 == t {print $2}' "$work/results")" != SKIP ] || continue
        cfg=$(grep -E 'UCX  INFO +ep_cfg\[[0-9]+\]:' "$work/$t.log")
        if [ -z "$cfg" ]; then
            unconnected=$((unconnected + 1))
            continue
        fi
        judged_lanes=$((judged_lanes + 1))
        all=$(pids_of <<< "$cfg" | grep -c .)
        if [ "$SOS_AMO_LANE" = none ]; then
            # every process without one: "on" counts those
            on=$((all - $(grep -E ' amo\(' <<< "$cfg" | pids_of | grep -c .)))
        else
            on=$(grep -E " amo\(${SOS_AMO_LANE//./\\.}\)" <<< "$cfg" | pids_of | grep -c .)
        fi
        if [ "$on" -lt "$all" ]; then
            echo "run-sos: $t: $on of the $all processes that connected printed an AMO lane on $SOS_AMO_LANE (none: printed none):"
            sed 's/^.*ep_cfg/    | ep_cfg/' <<< "$cfg" | sort | uniq -c | head -5
            lanes_bad=$((lanes_bad + 1))
        fi
    done
    if [ $judged_lanes -eq 0 ]; then
        echo "run-sos: no test printed an endpoint configuration"
        logcheck=1
    elif [ $lanes_bad -eq 0 ] && [ "$SOS_AMO_LANE" = none ]; then
        echo "run-sos: no AMO lane in any process of all $judged_lanes" \
             "tests that connected ($unconnected did not)"
    elif [ $lanes_bad -eq 0 ]; then
        echo "run-sos: AMO lanes on $SOS_AMO_LANE in every process of all $judged_lanes" \
             "tests that connected ($unconnected did not)"
    else
        echo "run-sos: $lanes_bad of $judged_lanes tests had processes without an AMO lane on $SOS_AMO_LANE"
        logcheck=1
    fi
fi

[ "$reference" != none ] || exit $logcheck
# The reference lists "<np> <test> <result>": every test it passed with
# this np must pass here (tests outside this run's subset are not judged)
# (the last line the counts; no /dev/fd nor /dev/stderr in the guest)
verdict=$(awk -v np="$np" -v prov="$provider" '
    NR == FNR {got[$1] = $2; next}
    /^#/ || $1 != np || $3 != "PASS" || !($2 in got) {next}
    {judged++}
    got[$2] != "PASS" {
        printf "run-sos: %s passes over the reference but %s over %s\n",
               $2, got[$2], prov
        bad = 1
    }
    END {print judged + 0, bad + 0}' "$work/results" "$reference")
echo "$verdict" | sed '$d'
read -r judged bad <<< "$(echo "$verdict" | tail -1)"
if [ "$judged" -eq 0 ]; then
    echo "run-sos: the reference $reference has no passing test of this" \
         "subset with $np processes: nothing judged"
    exit 1
fi
echo "run-sos: $judged tests pass over the reference with $np processes:" \
     "$([ "$bad" -eq 0 ] && echo "all pass over $provider" || echo "NOT all pass over $provider")"
[ $logcheck -eq 0 ] || bad=1
exit $bad
