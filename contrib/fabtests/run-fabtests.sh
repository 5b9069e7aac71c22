#!/bin/bash
# Run libfabric's own test suite, fabtests (built by
# contrib/fabtests/build-fabtests.sh), over one provider on this host, and
# judge the run against a reference list. Unlike runfabtests.sh, whose
# cleanup kills every process on the machine whose name starts with "fi_",
# it ends only the processes it started.
#
# Usage: contrib/fabtests/run-fabtests.sh <provider> <set>[,<set>...]
#   provider  "tcp;ofi_rxm", "shm", ... or "fiatomic", this project's,
#             loaded from ATOMICX_FI_PROVIDER_PATH, else
#             ${ATOMICX_BUILD_DIR:-build-release}/src/prov/fiatomic/.libs
#   sets      unit, functional, short: runfabtests.sh's lists of those
#             names, read from the installed script (its negative unit
#             tests go with unit); atomic: fi_ubertest with
#             contrib/fabtests/atomic.test (every atomic function, op and
#             datatype of fi_atomic(3))
# Environment: UCX_TLS and UCX_*/FI_FIATOMIC_* pass through;
#   FABTESTS_TIMEOUT seconds per test (default 60); FABTESTS_REFERENCE a
#   results file to judge against ("none": no judgement; default
#   contrib/fabtests/reference-<tls>.txt for fiatomic, where <tls> is
#   UCX_TLS with "," as "+", else none); FABTESTS_RESULTS a file to append
#   "<set> <result> <test>" lines to (how a reference is made); FABTESTS_LOGS
#   a directory for every test's output.
# A test passes when the server and the client (or the one program) exit 0;
# it is NOTRUN when they exit with FI_ENODATA or FI_ENOSYS (the provider
# offers nothing it needs), TIMEOUT past its time. Each test's output is
# checked for UCX ERROR/WARN lines (contrib/ucx-log-check.sh). Exit status:
# 0 when every test the reference passes in these sets passed, 1 otherwise,
# 2 on a usage or set-up error.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
die() { echo "run-fabtests: error: $*" >&2; exit 2; }

[ $# -eq 2 ] || die "usage: $0 <provider> <set>[,<set>...]"
provider=$1
sets=${2//,/ }
timeout_s=${FABTESTS_TIMEOUT:-60}
[[ $timeout_s =~ ^[1-9][0-9]*$ ]] || die "FABTESTS_TIMEOUT must be seconds"
for s in $sets; do
    case $s in
        unit|functional|short|atomic) ;;
        *) die "no set '$s' (unit, functional, short, atomic)" ;;
    esac
done
prefix=$("$top/contrib/fabtests/build-fabtests.sh" | tail -1) && [ -d "$prefix/bin" ] ||
    die "no fabtests build"
runfabtests=$prefix/bin/runfabtests.sh
[ -f "$runfabtests" ] || die "no runfabtests.sh in $prefix/bin"

if [ "$provider" = fiatomic ]; then
    provpath=${ATOMICX_FI_PROVIDER_PATH:-${ATOMICX_BUILD_DIR:-$top/build-release}/src/prov/fiatomic/.libs}
    [ -f "$provpath/libfiatomic-fi.so" ] || die "no libfiatomic-fi.so in $provpath"
    export FI_PROVIDER_PATH=$(cd "$provpath" && pwd)
    default_reference=$top/contrib/fabtests/reference-${UCX_TLS:-all}.txt
    default_reference=${default_reference//,/+}
else
    default_reference=none
fi
reference=${FABTESTS_REFERENCE:-$default_reference}
[ "$reference" = none ] || [ -f "$reference" ] ||
    die "no reference list $reference (FABTESTS_REFERENCE=none runs without one)"

# a list of runfabtests.sh, one test (program and options) a line
list_of() { # list_of <name>
    sed -n "/^$1_tests=(/,/^)/p" "$runfabtests" | sed '1d;$d' |
        sed -e 's/^[[:space:]]*"//' -e 's/"[[:space:]]*$//'
}

work=$(mktemp -d "${TMPDIR:-/tmp}/run-fabtests.XXXXXX") || die "mktemp failed"
trap 'rm -rf "$work"' EXIT
: > "$work/results"
host=127.0.0.1

# one program under its bound, in the background; its pid in $! (timeout's,
# which passes a signal on to the program: only what this script started)
start_bounded() { # start_bounded <log> <program> [args...]
    local log=$1; shift
    (cd "$work" && exec timeout -k 5 "$timeout_s" "$prefix/bin/$@") >> "$log" 2>&1 &
}

# the result of exit statuses (one, or a server's and a client's)
result_of() {
    local rc any_timeout=0 all_skip=1 all_ok=1
    for rc in "$@"; do
        [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || any_timeout=1
        [ "$rc" -eq 61 ] || [ "$rc" -eq 38 ] || all_skip=0
        [ "$rc" -eq 0 ] || all_ok=0
    done
    if [ $all_ok -eq 1 ]; then echo PASS
    elif [ $any_timeout -eq 1 ]; then echo TIMEOUT
    elif [ $all_skip -eq 1 ]; then echo NOTRUN
    else echo FAIL
    fi
}

# a test of one program (the unit tests)
run_single() { # run_single <log> <test>
    local t=${2//GOOD_ADDR/$host}
    t=${t//SERVER_ADDR/$host}
    # shellcheck disable=SC2086 # the test's words
    start_bounded "$1" $t -p "$provider"
    wait $!
    local rc=$?
    # a negative test passes when the provider refuses the bad name
    case $2 in *g00n13s*) [ $rc -eq 61 ] && rc=0 || rc=1 ;; esac
    result_of $rc
}

# a server and a client; the server gone once the client ended
run_pair() { # run_pair <log> <server args> <client args>
    local log=$1 s_pid c_pid s_rc c_rc
    # shellcheck disable=SC2086 # the test's words
    start_bounded "$log" $2
    s_pid=$!
    sleep 1
    # shellcheck disable=SC2086
    start_bounded "$log" $3
    c_pid=$!
    wait $c_pid; c_rc=$?
    # a client that failed leaves its server waiting: 2 s, then it goes
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        kill -0 $s_pid 2> /dev/null || break
        sleep 0.2
    done
    kill -TERM $s_pid 2> /dev/null
    wait $s_pid; s_rc=$?
    result_of $s_rc $c_rc
}

run_cs() { # run_cs <log> <test>
    run_pair "$1" "$2 -p $provider -s $host" "$2 -p $provider -s $host $host"
}

run_uber() { # run_uber <log>
    local cfg=$work/atomic.test
    # (its comment lines are this project's: fi_ubertest reads JSON-like text)
    sed -e "/^#/d" -e "s/@PROVIDER@/$provider/" "$top/contrib/fabtests/atomic.test" > "$cfg"
    run_pair "$1" "fi_ubertest -x" "fi_ubertest -u $cfg $host"
    # the client counts the cells; an error in any fails the test
    if grep -qE '(ENOSYS|ERROR): *[1-9]' "$1"; then
        echo FAIL
    fi
}

echo "run-fabtests: fabtests ($prefix) over $provider, sets: $sets," \
     "UCX_TLS=${UCX_TLS:-(unset)}, ${timeout_s} s a test"
start=$(date +%s)
n=0
for s in $sets; do
    case $s in
        unit)   tests=$(list_of unit; list_of neg_unit) ;;
        atomic) tests=fi_ubertest ;;
        *)      tests=$(list_of "$s") ;;
    esac
    while IFS= read -r t; do
        [ -n "$t" ] || continue
        n=$((n + 1))
        log=$work/test$n.log
        echo "=== fabtests: $s $t ===" > "$log"
        t0=$(date +%s)
        case $s in
            unit)   result=$(run_single "$log" "$t") ;;
            atomic) result=$(run_uber "$log" | tail -1) ;;
            *)      result=$(run_cs "$log" "$t") ;;
        esac
        echo "$s $result $t" >> "$work/results"
        printf '%-8s %-10s %-50s %3d s\n' "$result:" "$s" "$t" $(( $(date +%s) - t0 ))
        if [ "$result" = FAIL ] || [ "$result" = TIMEOUT ]; then
            tail -5 "$log" | sed 's/^/    | /'
        fi
        "$top/contrib/ucx-log-check.sh" --label "fabtests $s $t" "$log" > "$work/ucx-check" 2>&1 || {
            cat "$work/ucx-check"
            echo "$s UCXLOG $t" >> "$work/results"
        }
    done <<< "$tests"
done
[ -z "${FABTESTS_RESULTS:-}" ] || grep -v ' UCXLOG ' "$work/results" >> "$FABTESTS_RESULTS"
if [ -n "${FABTESTS_LOGS:-}" ]; then
    mkdir -p "$FABTESTS_LOGS" && cp "$work"/test*.log "$FABTESTS_LOGS/"
fi

count() { grep -c "^[a-z]* $1 " "$work/results"; }
echo "run-fabtests: $(count PASS) passed, $(count FAIL) failed, $(count TIMEOUT)" \
     "timed out, $(count NOTRUN) not run of $n in $(( $(date +%s) - start )) s"
status=0
if [ "$(count UCXLOG)" -ne 0 ]; then
    echo "run-fabtests: $(count UCXLOG) tests printed UCX ERROR/WARN lines not expected"
    status=1
fi
if [ "$reference" != none ]; then
    # every test of these sets the reference passes must pass here
    missing=0
    while read -r rs rr rt; do
        [ "$rr" = PASS ] || continue
        case " $sets " in *" $rs "*) ;; *) continue ;; esac
        if ! grep -qxF "$rs PASS $rt" "$work/results"; then
            echo "run-fabtests: passes in the reference, not here: $rs $rt"
            missing=$((missing + 1))
        fi
    done < <(grep -v '^#' "$reference")
    echo "run-fabtests: judged against $reference: $missing of its passing tests did not pass"
    [ $missing -eq 0 ] || status=1
fi
exit $status
