#!/bin/bash
# make check: what README and the manual pages show a user runs.
#  - every command line of README's sh blocks and of the manual pages'
#    EXAMPLES is in test/tools/doc-examples.txt, run here ("host", with a
#    smaller iteration count where the text's claim does not depend on it,
#    its output checked against what the text says it prints) or marked
#    guest-only / not run with the reason; a stale entry fails too; a
#    guest entry names the contrib/softroce script that runs it (the
#    "test-guest.sh docs" and "openmpi-guest.sh" ones as written);
#  - a tool's manual page and its --help list the same options, and
#    fiatomic_perftest(1) the same goals as --help;
#  - every option of fiatomic_info(1) and fiatomic_perftest(1) runs with a
#    good value and is refused with a bad one, and so is every environment
#    variable of fiatomic(3) and fiatomic_info(1).
# Run from the top build directory (automake's test driver does).
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=test-common.sh
. "$(dirname "$0")/test-common.sh"
info=${FIATOMIC_INFO:-src/tools/fiatomic_info}
perf=${FIATOMIC_PERFTEST:-src/tools/fiatomic_perftest}
test_start "$perf"
src=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$test_tmp
registry=$src/test/tools/doc-examples.txt
t0=$(date +%s)

# has FILE REGEX WHAT: FILE has a line matching REGEX
has() { grep -qE -- "$2" "$1" && ok || { bad "$3: no line /$2/"; head -5 "$1" | sed 's/^/  /'; }; }

# a control port nobody else uses now
port() { echo $(( 20000 + ($$ + RANDOM) % 20000 )); }

echo "=== every example of README and the manual pages is run or marked ==="
# README: the lines of ```sh blocks; man pages: .EX/.EE of EXAMPLES
{
    awk '/^ *```sh$/ {b = 1; next} /^ *```$/ {b = 0} b' "$src/README.md"
    # the command lines: section 3's examples are C, built by make check
    # (examples/fiatomic_example.c)
    for page in "$src"/man/*.[17]; do
        sed -n '/^\.SH EXAMPLES/,/^\.SH [^E]/p' "$page" |
            awk '/^\.EX/ {b = 1; next} /^\.EE/ {b = 0} b' |
            sed -e 's/\\-/-/g' -e 's/\\e/\\/g'
    done
} | sed -E 's/^ +//' |
    awk '/\\$/ {sub(/\\$/, ""); line = line $0; next} {print line $0; line = ""}' |
    sed -E 's/ +/ /g; s/ #.*$//; s/ +$//' | grep -vE '^(#|$)' | sort -u > "$tmp/documented"
sed -nE 's/^[^#][^|]*\| (.*)$/\1/p' "$registry" | sed -E 's/ +/ /g' | sort -u > "$tmp/listed"
comm -23 "$tmp/documented" "$tmp/listed" > "$tmp/unlisted"
comm -13 "$tmp/documented" "$tmp/listed" > "$tmp/stale"
[ "$(wc -l < "$tmp/documented")" -ge 20 ] && ok ||
    bad "only $(wc -l < "$tmp/documented") example lines found"
[ -s "$tmp/unlisted" ] && { bad "examples neither run nor marked in doc-examples.txt:"; sed 's/^/  /' "$tmp/unlisted"; } || ok
[ -s "$tmp/stale" ] && { bad "doc-examples.txt lists lines no document has:"; sed 's/^/  /' "$tmp/stale"; } || ok
awk -F' [|] ' '!/^#/ && NF >= 2 && $1 != "host" && $1 !~ /^(guest|not run): ./ {print}' "$registry" > "$tmp/unmarked"
[ -s "$tmp/unmarked" ] && { bad "entries without a disposition and reason:"; sed 's/^/  /' "$tmp/unmarked"; } || ok
# a guest entry names the script that runs it, and that script reads the
# entries it runs from this file ("test-guest.sh docs", "openmpi-guest.sh")
while IFS= read -r reason; do
    script=$(grep -oE 'contrib/softroce/[a-z-]+\.sh' <<< "$reason" | head -1)
    if [ -z "$script" ] || [ ! -f "$src/$script" ]; then
        bad "guest entry names no script of contrib/softroce: $reason"
    elif [[ $reason == *"test-guest.sh docs"* || $reason == *openmpi-guest.sh* ]] &&
         ! grep -q 'test/tools/doc-examples.txt' "$src/$script"; then
        bad "$script does not read doc-examples.txt: $reason"
    else
        ok
    fi
done < <(sed -nE 's/^guest: ([^|]*) \| .*$/\1/p' "$registry")

echo "=== the host examples, their output against the text ==="
# run_example LINE: the example, with fewer iterations where its claim does
# not depend on them; 1 when this script has no run for LINE
run_example() {
    local p
    case "$1" in
    "build-release/src/tools/fiatomic_perftest -f fetch -o sum -d u64 --baseline ucp --baseline libfabric")
        # README: raw UCP and libfabric's shm (UCX_TLS unset: shared memory)
        # measured in the same run
        expect 0 "^Final: +2000 " "" -- env -u UCX_TLS "$perf" -f fetch -o sum -d u64 \
            --baseline ucp --baseline libfabric -n 2000 -w 200
        has "$tmp/out" "^\+ fiatomic_perftest: fetch SUM UINT64, count 1, window 1" "README perftest"
        has "$tmp/out" "^Final \(ucp\): +2000 " "README perftest --baseline ucp"
        has "$tmp/out" "^Final \(ofi\): +2000 " "README perftest --baseline libfabric"
        has "$tmp/out" "^  fiatomic / libfabric typical latency x" "README perftest ratio"
        ;;
    "build-release/src/tools/fiatomic_perftest --server &  build-release/src/tools/fiatomic_perftest localhost -o min -W 64"|\
    "fiatomic_perftest --server &"|\
    "fiatomic_perftest localhost -o min -d f64 -W 64")
        # a target in the background, an initiator of it on localhost
        p=$(port)
        "$perf" --server -p "$p" > "$tmp/server" 2>&1 &
        local spid=$!
        for _ in $(seq 100); do
            grep -q "^Waiting for connection on port $p" "$tmp/server" && break
            sleep 0.05
        done
        has "$tmp/server" "^Waiting for connection on port $p\.\.\.$" "--server"
        case "$1" in
        *"-d f64"*) expect 0 "^Final: +2000 " "" -- "$perf" localhost -p "$p" -o min -d f64 -W 64 -n 2000 -w 100
                    has "$tmp/out" "^\+ fiatomic_perftest: fetch MIN DOUBLE, count 1, window 64" "localhost -o min -d f64";;
        *)          expect 0 "^Final: +2000 " "" -- "$perf" localhost -p "$p" -o min -W 64 -n 2000 -w 100
                    has "$tmp/out" "^\+ fiatomic_perftest: fetch MIN UINT64, count 1, window 64" "localhost -o min";;
        esac
        # the server serves one initiator, then exits
        for _ in $(seq 100); do kill -0 $spid 2> /dev/null || break; sleep 0.05; done
        if kill -0 $spid 2> /dev/null; then
            bad "--server did not exit after its initiator"; kill $spid
        else
            wait $spid && ok || bad "--server exited with $?"
        fi
        ;;
    "UCX_TLS=tcp build-release/src/tools/fiatomic_perftest --scale --initiators 1,2,14 --strategy cas"|\
    "UCX_TLS=tcp fiatomic_perftest --scale --initiators 1,2,14 --strategy cas")
        # 1 and 2 initiators for 0.05 s (14 processes on this machine's
        # cores take 10 s): rates, fairness, CAS retries, final values
        expect 0 "^same +2\*? " "" -- env UCX_TLS=tcp "$perf" --scale --initiators 1,2 \
            --strategy cas --elements same --seconds 0.05 -w 10
        has "$tmp/out" "aggregate/s +mean/s +min/s +max/s +jain retry/call +handoff/c strategy +final" "--scale header"
        has "$tmp/out" "^same +1 .* cas +ok$" "--scale 1 initiator"
        has "$tmp/out" "^same +2\*? .* cas +ok$" "--scale 2 initiators"
        ;;
    "fiatomic_info -c")
        expect 0 "^FIATOMIC_STRATEGY=" "" -- "$info" -c
        has "$tmp/out" "^# syntax: " "fiatomic_info -c syntax"
        has "$tmp/out" "^# default: " "fiatomic_info -c default"
        ;;
    "UCX_TLS=posix fiatomic_info")
        expect 0 "^[0-9]+ supported cells \([0-9]+ with elements of at most 8 bytes\) of 414$" "" -- \
            env UCX_TLS=posix "$info"
        # a block per family, a row per datatype, a column per op
        has "$tmp/out" "^fetch family$" "fiatomic_info table"
        has "$tmp/out" "^ +MIN MAX SUM PROD LOR LAND BOR BAND LXOR BXOR ATOMIC_READ ATOMIC_WRITE$" "fetch family's op columns"
        has "$tmp/out" "^DOUBLE_COMPLEX +" "a row per datatype"
        ;;
    "UCX_TLS=tcp fiatomic_info --csv | grep ,FI_DOUBLE_COMPLEX,")
        env UCX_TLS=tcp "$info" --csv 2> "$tmp/err" | grep ,FI_DOUBLE_COMPLEX, > "$tmp/out"
        [ -s "$tmp/out" ] && ! grep -vqE '^(base|fetch|compare),FI_[A-Z_]+,FI_DOUBLE_COMPLEX,[01],[a-z]+,[01]$' "$tmp/out" &&
            ok || bad "UCX_TLS=tcp fiatomic_info --csv | grep: not CSV lines of FI_DOUBLE_COMPLEX"
        ;;
    "fiatomic_perftest -f fetch -o sum -d u64 --baseline ucp")
        expect 0 "^Final \(ucp\): +2000 " "" -- "$perf" -f fetch -o sum -d u64 --baseline ucp -n 2000 -w 200
        has "$tmp/out" "^  fiatomic / ucp +typical latency x" "--baseline ucp ratio"
        ;;
    "UCX_TLS=tcp fiatomic_perftest --matrix --transports tcp")
        # every cell over tcp, verified, one timed call each
        expect 0 "^SUMMARY: tcp 414/414 ok -- 414 cells verified ok, 0 FAIL" "" -- \
            env UCX_TLS=tcp "$perf" --matrix --transports tcp -n 1 -w 0 --verify-count 1
        has "$tmp/out" "^--- tcp: 414 cells run, 414 verified ok" "--matrix: the transport's table"
        ;;
    "fiatomic_perftest --goals --baseline libfabric")
        # one goal of the run, its GOAL line and the summary (every goal
        # takes about 10 minutes: contrib/perf-report.sh)
        expect 0 "^GOALS: [0-9]+ of [0-9]+ MET" "" -- "$perf" --goals --goal mallocs-per-call \
            --transports posix --baseline libfabric -n 10
        has "$tmp/out" "^GOAL mallocs-per-call +posix .*\(<= 0.001\) (MET|NOT MET)" "--goals GOAL line"
        ;;
    *) return 1 ;;
    esac
    return 0
}
while IFS= read -r line; do
    run_example "$line" || bad "doc-examples.txt says host, but there is no run for: $line"
done < <(sed -nE 's/^host \| (.*)$/\1/p' "$registry" | sort -u)

echo "  ($(( $(date +%s) - t0 )) s so far)"
echo "=== manual page and --help: the same options and goals ==="
# options_man PAGE: the long and short options of the OPTIONS section
options_man() {
    sed -n '/^\.SH OPTIONS/,/^\.SH [^O]/p' "$1" | awk '/^\.TP/ {getline; print}' |
        sed 's/\\-/-/g' | grep -oE '(^|[ "])--?[a-zA-Z][a-z-]*' | tr -d ' "' | sort -u
}
# options_help TOOL: those of --help's option column
options_help() {
    "$1" --help | grep -E '^  -' | sed -E 's/^  (([^ ]| [^ ])*).*/\1/' |
        grep -oE '(^|[ ,/])--?[a-zA-Z][a-z-]*' | tr -d ' ,/' | sort -u
}
for pair in "fiatomic_info.1:$info" "fiatomic_perftest.1:$perf"; do
    page=${pair%%:*}; tool=${pair#*:}
    options_man "$src/man/$page" > "$tmp/man-opts"
    options_help "$tool" > "$tmp/help-opts"
    [ "$(wc -l < "$tmp/man-opts")" -ge 5 ] && diff "$tmp/man-opts" "$tmp/help-opts" > "$tmp/diff" && ok ||
        { bad "$page (<) and $(basename "$tool") --help (>) list different options:"; sed 's/^/  /' "$tmp/diff"; }
done
sed -n '/^\.SH GOALS/,/^\.SH [^G]/p' "$src/man/fiatomic_perftest.1" |
    sed -nE 's/^\.B ([a-z][a-z0-9\\-]+)$/\1/p' | sed 's/\\//g' | sort > "$tmp/man-goals"
"$perf" --help | sed -n '/^Goals/,/^See/p' | sed -nE 's/^  ([a-z0-9-]+)$/\1/p' | sort > "$tmp/help-goals"
[ "$(wc -l < "$tmp/man-goals")" -ge 15 ] && diff "$tmp/man-goals" "$tmp/help-goals" > "$tmp/diff" && ok ||
    { bad "fiatomic_perftest(1)'s goals (<) and --help's (>) differ:"; sed 's/^/  /' "$tmp/diff"; }

echo "=== every documented option: a good value runs, a bad one is refused ==="
p=$(port)
# a CPU of this process's affinity mask, for --pin
cpu=$(sed -nE 's/^Cpus_allowed_list:[[:space:]]*([0-9]+).*/\1/p' /proc/self/status)
# runs that pass good values, each option of the pages in at least one
good_runs=(
    "$info|--csv"
    "$info|--csv --all"
    "$info|-c"
    "$info|--config"
    "$info|-h"
    "$info|--help"
    "$info|-V"
    "$info|--version"
    "$perf|-f compare -o cswap_le -d u32 -c 2 -W 4 -n 200 -w 10 --strategy auto --baseline ucp --ordered --verify --verify-count 4 --csv --pin $cpu,$cpu --report-interval 0"
    "$perf|--family base --op bor --datatype u16 --count 3 --window 2 --iters 100 --warmup 0 --no-verify --progress --baseline libfabric"
    "$perf|--matrix --transports posix -n 5 -w 1 --strategy direct"
    "$perf|--goals --goal rss-growth-mib --transports posix -n 5"
    "$perf|-f fetch -o sum -d u64 -n 50 -w 5 --providers shm"
    "$perf|--scale --initiators 1 --elements disjoint --seconds 0.02 -w 2"
    "$perf|-h"
    "$perf|--help"
    "$perf|-V"
    "$perf|--version"
)
# server and port: a target on a port, an initiator of it
good_runs+=("$perf|--server -p $p &")
# bad values and misuse: "tool|args|stderr regex"
bad_runs=(
    "$info|--csv=yes|doesn't allow an argument"
    "$info|--all|--all needs --csv"
    "$info|-c --csv|--config takes no other option"
    "$info|--config=x|doesn't allow an argument"
    "$info|-h extra|unexpected argument 'extra'"
    "$info|--help=x|doesn't allow an argument"
    "$info|-V extra|unexpected argument 'extra'"
    "$info|--version=x|doesn't allow an argument"
    "$perf|--server=x|doesn't allow an argument"
    "$perf|-p 0|invalid port '0'"
    "$perf|--port x|invalid port 'x'"
    "$perf|-f fetchy|invalid family 'fetchy'"
    "$perf|--family x|invalid family 'x'"
    "$perf|-o bogus|invalid op 'bogus'"
    "$perf|--op x|invalid op 'x'"
    "$perf|-d s16|invalid datatype 's16'"
    "$perf|--datatype x|invalid datatype 'x'"
    "$perf|-c 0|invalid count '0'"
    "$perf|--count x|invalid count 'x'"
    "$perf|-W 0|invalid window '0'"
    "$perf|--window x|invalid window 'x'"
    "$perf|-n 0|invalid iteration count '0'"
    "$perf|--iters x|invalid iteration count 'x'"
    "$perf|-w -1|invalid warm-up count '-1'"
    "$perf|--warmup x|invalid warm-up count 'x'"
    "$perf|--strategy Native|invalid strategy 'Native'"
    "$perf|--baseline mpi|invalid baseline 'mpi'"
    "$perf|--providers shm,,tcp|invalid provider list 'shm,,tcp'"
    "$perf|--ordered=x|doesn't allow an argument"
    "$perf|--verify=x|doesn't allow an argument"
    "$perf|--no-verify=x|doesn't allow an argument"
    "$perf|--verify-count 0|invalid verification count '0'"
    "$perf|--matrix=x|doesn't allow an argument"
    "$perf|--transports posix,|invalid transport list 'posix,'"
    "$perf|--goals=x|doesn't allow an argument"
    "$perf|--goal bogus|invalid goal 'bogus'"
    "$perf|--scale=x|doesn't allow an argument"
    "$perf|--scale --initiators 0|invalid initiator count '0'"
    "$perf|--scale --elements some|invalid element layout 'some'"
    "$perf|--scale --seconds 0|invalid timed span '0'"
    "$perf|--csv=x|doesn't allow an argument"
    "$perf|--progress=x|doesn't allow an argument"
    "$perf|--report-interval x|invalid report interval 'x'"
    "$perf|--pin $cpu,4096|CPU 4096 is not one this process may run on"
    "$perf|-h extra|unexpected argument"
    "$perf|--help=x|doesn't allow an argument"
    "$perf|-V extra|unexpected argument"
    "$perf|--version=x|doesn't allow an argument"
)
ofi=1
"$perf" --baseline libfabric --help > /dev/null 2>&1 || ofi=0
for run in "${good_runs[@]}"; do
    tool=${run%%|*}; args=${run#*|}
    [ $ofi -eq 1 ] || [[ $args != *libfabric* && $args != *--providers* ]] || { echo "  (built without libfabric: skipped $args)"; continue; }
    if [[ $args == *"&" ]]; then
        # shellcheck disable=SC2086
        "$tool" ${args%&} > "$tmp/server" 2>&1 &
        spid=$!
        for _ in $(seq 100); do grep -q "^Waiting" "$tmp/server" && break; sleep 0.05; done
        expect 0 "^Final:" "" -- "$perf" localhost --port "$p" -n 100 -w 10
        wait $spid && ok || bad "$tool $args: exit $?"
        continue
    fi
    # -h/-V with an extra argument: --help wins, so those are good runs too
    # shellcheck disable=SC2086
    expect 0 "" "" -- "$tool" $args
done
for run in "${bad_runs[@]}"; do
    IFS='|' read -r tool args err <<< "$run"
    [ "$tool" = "$info" ] && [[ $args == -[hV]\ extra ]] && { expect 2 "" "$err" -- "$tool" extra; continue; }
    [[ $args == -[hV]\ extra ]] && { expect 2 "" "$err" -- "$tool" a extra; continue; }
    # shellcheck disable=SC2086
    expect 2 "" "$err" -- "$tool" $args
done
# coverage: every option of the pages in a good run and a bad run
for pair in "fiatomic_info.1:$info" "fiatomic_perftest.1:$perf"; do
    page=${pair%%:*}; tool=${pair#*:}
    for opt in $(options_man "$src/man/$page"); do
        g=0; b=0
        for run in "${good_runs[@]}"; do
            args=${run#*|}
            # a background target runs with an initiator: localhost --port
            [[ $args == *"&" ]] && args="$args localhost --port"
            [ "${run%%|*}" = "$tool" ] && [[ " $args " == *" $opt "* ]] && g=1
        done
        for run in "${bad_runs[@]}"; do
            IFS='|' read -r t args _ <<< "$run"
            [ "$t" = "$tool" ] && [[ " $args " == *" $opt"[\ =]* ]] && b=1
        done
        [ $g -eq 1 ] && [ $b -eq 1 ] && ok ||
            bad "$page: $opt lacks a good ($g) or a bad ($b) run"
    done
done

echo "  ($(( $(date +%s) - t0 )) s so far)"
echo "=== every documented environment variable: a good value, a bad one ==="
# variable|good value|bad value|stderr regex of the bad one
env_runs=(
    "FIATOMIC_STRATEGY|cas|NATIVE|invalid FIATOMIC_STRATEGY 'NATIVE'"
    "FIATOMIC_CAS_HANDOFF|no|YES|invalid FIATOMIC_CAS_HANDOFF 'YES'"
    "FIATOMIC_OP_TIMEOUT|500ms|soon|invalid FIATOMIC_OP_TIMEOUT 'soon'"
    "UCX_TLS|posix|nosuch|no usable transports"
)
for run in "${env_runs[@]}"; do
    IFS='|' read -r var good badv err <<< "$run"
    expect 0 "^fetch,FI_SUM,FI_UINT64,1," "" -- env UCX_TLS=posix "$var=$good" "$info" --csv
    expect 1 "" "$err" -- env UCX_TLS=posix "$var=$badv" "$info" --csv
done
for page in fiatomic.3 fiatomic_info.1 fiatomic_perftest.1; do
    sed -n '/^\.SH ENVIRONMENT/,/^\.SH [^E]/p' "$src/man/$page" |
        awk '/^\.TP/ {getline; print}' | grep -oE '\b(FIATOMIC|UCX)_[A-Z_]+\b'
done | sort -u > "$tmp/env-documented"
for var in $(cat "$tmp/env-documented"); do
    printf '%s\n' "${env_runs[@]}" | grep -q "^$var|" && ok ||
        bad "environment variable $var is documented but not run with a good and a bad value"
done

echo "=== atomicx(7)'s UCX_ATOMICX_* variables: defaults, a good value, a bad one ==="
# UCX's configuration parser reads them with the atomicx module loaded, as
# ucx_info -c shows: the documented default, a good value shown as set, a
# bad one refused by name (UCX's "Invalid value" error, the atomicx table
# then left out). The values the parser accepts but atomicx refuses when it
# opens an interface (RETRY_COUNT above 7, an absent GID index) need its
# verbs device: contrib/softroce/test-guest.sh's docs suite tries those.
lib=${ATOMICX_LIB:-src/uct/atomicx/.libs/libuct_atomicx.so.0}
if [ ! -e "$lib" ]; then
    echo "  (atomicx was not built: UCX_ATOMICX_* not tried)"
else
    # the UCX of this build (its ucx_info) and how it loads atomicx
    load_env=()
    eval "$("$src/contrib/softroce/ucx-of-build.sh" .)" || bad "ucx-of-build.sh ."
    # a sanitizer build: its runtime first in the preload list, and no leak
    # report of ucx_info's own at exit
    asan=$(ldd "$lib" | awk '/libasan\.so/ {print $3}')
    if [ -n "$asan" ] && [[ ${load_env[0]} == LD_PRELOAD=* ]]; then
        load_env=("LD_PRELOAD=$asan:${load_env[0]#LD_PRELOAD=}"
                  "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0")
    fi
    # variable|documented default as ucx_info -c prints it|good value|as printed|bad value
    ax_runs=(
        "TX_QUEUE_LEN|128|64|64|abc"
        "MAX_OPS|1024|256|256|many"
        "GID_INDEX|auto|3|3|x"
        "TIMEOUT|1000000.00us|500ms|500000.00us|soon"
        "RETRY_COUNT|7|3|3|x"
        "SL|0|2|2|high"
        "SELFTEST_TIMEOUT|30000000.00us|10s|10000000.00us|never"
        "MAX_NUM_EPS|inf|16|16|x"
        "ALLOC|huge,thp,md,mmap,heap|md,heap|md,heap|nowhere"
        "FAILURE|DIAG|WARN|WARN|loud"
    )
    # the documented defaults, the times in ucx_info's microseconds
    sed -n '/^\.SH ENVIRONMENT/,/^\.SH [^E]/p' "$src/man/atomicx.7" |
        sed -nE 's/^\.B UCX_ATOMICX_([A-Z_]+)=(.*)$/\1 \2/p' |
        awk '$2 ~ /^[0-9.]+s$/ {sub(/s$/, "", $2); $2 = sprintf("%.2fus", $2 * 1e6)} {print}' \
        > "$tmp/ax-documented"
    env "${load_env[@]}" ucx_info -c > "$tmp/ax-default" 2>&1
    while read -r var def; do
        grep -qx "UCX_ATOMICX_$var=$def" "$tmp/ax-default" && ok ||
            bad "atomicx(7) says UCX_ATOMICX_$var=$def, ucx_info -c: $(grep "^UCX_ATOMICX_$var=" "$tmp/ax-default")"
    done < "$tmp/ax-documented"
    [ "$(wc -l < "$tmp/ax-documented")" -ge 7 ] && ok ||
        bad "atomicx(7) ENVIRONMENT: $(wc -l < "$tmp/ax-documented") variables with defaults found"
    for run in "${ax_runs[@]}"; do
        IFS='|' read -r var def good shown badv <<< "$run"
        grep -qx "UCX_ATOMICX_$var=$def" "$tmp/ax-default" && ok ||
            bad "UCX_ATOMICX_$var's default is not $def"
        expect 0 "^UCX_ATOMICX_$var=$shown\$" "" -- \
            env "${load_env[@]}" "UCX_ATOMICX_$var=$good" ucx_info -c
        # UCX logs to stdout: the error there, and no atomicx table
        env "${load_env[@]}" "UCX_ATOMICX_$var=$badv" ucx_info -c > "$tmp/out" 2>&1
        grep -qE "Invalid value for $var: '$badv'" "$tmp/out" &&
            ! grep -q "^UCX_ATOMICX_" "$tmp/out" && ok ||
            bad "UCX_ATOMICX_$var=$badv: not refused by name: $(grep -E "ATOMICX_$var|Invalid" "$tmp/out" | head -2)"
    done
    # every UCX_ATOMICX_* variable the page names is tried
    sed -n '/^\.SH ENVIRONMENT/,/^\.SH [^E]/p' "$src/man/atomicx.7" |
        grep -oE '\bUCX_ATOMICX_[A-Z_]+\b' | sort -u > "$tmp/ax-named"
    for var in $(sed 's/^UCX_ATOMICX_//' "$tmp/ax-named"); do
        printf '%s\n' "${ax_runs[@]}" | grep -q "^$var|" && ok ||
            bad "atomicx(7) documents UCX_ATOMICX_$var, not tried with a good and a bad value"
    done
fi

echo "  ($(( $(date +%s) - t0 )) s in all)"
test_end
