#!/bin/bash
# The atomicx guest suites on soft-RoCE.
#
#   contrib/softroce/test-guest.sh <build-dir> [suite...]
#
# On the host: builds the guest test programs in <build-dir>, then boots the
# soft-RoCE guest (run-in-guest.sh) and runs this same script inside it.
# In the guest (ATOMICX_GUEST=1): runs the suites against rxe0 and exits
# non-zero if any fails. The UCX is the one <build-dir> was configured with
# (--with-ucx); a UCX that loads transport modules from directories (>= 1.22)
# finds atomicx through UCX_PLUGIN_PATH, an older one gets it by LD_PRELOAD.
# Suites (default: uct ucp perftest compare bench docs):
#   info      ucx_info -d lists atomicx on the device (no LD_PRELOAD on >= 1.22)
#   uct       UCT-level gtest suite (test_atomicx_uct)
#   ucp       UCP-level gtest suite with UCX_TLS=atomicx,tcp (test_atomicx_ucp)
#   perftest  ucx_perftest UCT and UCP atomic tests over atomicx
#   compare   the UCP ones over rc_verbs, reported for comparison (not judged)
#   bench     latency of atomicx fadd / ucp_fadd against ib_atomic_lat
#   fiatomic  libfiatomic over atomicx (fiatomic-guest.sh), in the same boot
#   docs      the guest examples of README and the manual pages as written
#             (test/tools/doc-examples.txt's "test-guest.sh docs" lines,
#             /usr/local/lib/libuct_atomicx.so.0 being this build's, ./my_app
#             played by fiatomic_info), their output against the text;
#             atomicx(7)'s UCX_ATOMICX_* values that the parser accepts but
#             atomicx refuses; fiatomic_perftest --baseline libfabric saying
#             why there is none over atomicx
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

[ $# -ge 1 ] || { echo "usage: $0 <build-dir> [info|uct|ucp|perftest|compare|bench|fiatomic|docs]..." >&2; exit 2; }
build=$(cd "$1" && pwd) || exit 2
shift
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(uct ucp perftest compare bench docs)

if [ "${ATOMICX_GUEST:-}" != 1 ]; then
    # Host side: the guest sees the host's files read-only, so build first.
    echo "test-guest: building the atomicx guest programs in $build"
    make -C "$build/src/uct/atomicx" -j"$(nproc)" >/dev/null &&
        if [[ " ${suites[*]} " == *" fiatomic "* || " ${suites[*]} " == *" docs "* ]]; then
            make -C "$build/src/fiatomic" -j"$(nproc)" >/dev/null &&
            make -C "$build/src/tools" -j"$(nproc)" >/dev/null
        fi &&
        if [[ " ${suites[*]} " == *" fiatomic "* ]]; then
            make -C "$build/test/gtest" -j"$(nproc)" test_fiatomic fiatomic_test_peer >/dev/null
        fi &&
        make -C "$build/test/gtest" -j"$(nproc)" test_atomicx_uct \
            test_atomicx_ucp >/dev/null ||
        { echo "test-guest: build failed" >&2; exit 1; }
    exec "$here/run-in-guest.sh" "$here/test-guest.sh" "$build" "${suites[@]}"
fi

# ---- In the guest --------------------------------------------------------
# shellcheck source=wait-listening.sh
. "$here/wait-listening.sh"
# shellcheck source=rdma-gid.sh
. "$here/rdma-gid.sh"
lib=$build/src/uct/atomicx/.libs/libuct_atomicx.so.0
# How the UCX of this build finds atomicx, and its tools (ucx_perftest)
eval "$("$here/ucx-of-build.sh" "$build")" || exit 1
echo "test-guest: UCX $ucx_version${ucx_prefix:+ from $ucx_prefix}; atomicx loaded by: ${load_env[*]}"
dev=${ATOMICX_TEST_DEV:-rxe0:1}
out=${ATOMICX_GUEST_OUT:-/tmp}
failed=()

run() { # run <name> <command...>: runs, records a failure
    local name=$1; shift
    echo
    echo "=== test-guest: $name ==="
    if "$@"; then
        echo "=== test-guest: $name: ok"
    else
        echo "=== test-guest: $name: FAILED (exit $?)"
        failed+=("$name")
    fi
}

gtest() { # gtest <binary>: output on stdout, result as exit code
    "$build/test/gtest/$1" --gtest_color=no
}

# ucx_perftest server/client pair on one port; output of both printed.
# perf <name> <env...> -- <perftest args...>
port=20000
perf_timeout=300
perf_pair() {
    local envs=() args=() slog clog spid rc
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    args=("$@")
    port=$((port + 1))
    slog=$(mktemp) clog=$(mktemp)
    env "${envs[@]}" timeout "$perf_timeout" taskset -c 0 ucx_perftest \
        "${args[@]}" -p "$port" >"$slog" 2>&1 &
    spid=$!
    wait_listening "$port" "$spid" 30
    env "${envs[@]}" timeout "$perf_timeout" taskset -c 1 ucx_perftest \
        "${args[@]}" -p "$port" localhost >"$clog" 2>&1
    rc=$?
    wait "$spid" || rc=$((rc ? rc : 1))
    cat "$clog"
    if [ $rc -ne 0 ]; then
        echo "--- server output:"; cat "$slog"
    else
        # the server's UCX ERROR/WARN lines count as well
        grep -E 'UCX +(ERROR|WARN|FATAL) ' "$slog" | sed 's/^/server: /'
    fi
    [ $rc -ne 0 ] || grep -q '^Final:' "$clog" || rc=1
    rm -f "$slog" "$clog"
    return $rc
}

perftest_suite() {
    local n=${ATOMICX_PERFTEST_ITERS:-2000} t
    for t in fadd swap cswap add_lat add_mr; do
        run "ucx_perftest uct $t atomicx" perf_pair "${load_env[@]}" -- \
            -x atomicx -d "$dev" -t "$t" -n "$n"
    done
    # One-sided (-o): the responder does not progress at all. UCP 1.22's
    # default worker fence is strong (a remote flush of every lane), and the
    # tcp lane's flush waits for the peer to acknowledge when the endpoint
    # sent an active message since its last flush (wireup's last message
    # after ucx_perftest's set-up flush, we infer): the initiator's fence
    # before its last operation then waits (gdb) for a peer that never
    # progresses, until that peer exits and the failed endpoint aborts the
    # next atomic. The
    # endpoint-based fence only fences the lanes that carried RMA or atomics
    # (atomicx's own fence, no peer needed). UCX 1.13.1's default fence is
    # the weak one.
    local fence=()
    if ucx_at_least 1 22; then
        fence=(UCX_FENCE_MODE=ep_based)
    fi
    for t in ucp_add ucp_fadd ucp_swap ucp_cswap; do
        run "ucx_perftest $t atomicx,tcp" perf_pair "${load_env[@]}" \
            UCX_TLS=atomicx,tcp -- -t "$t" -n "$n"
        run "ucx_perftest $t atomicx,tcp -o" perf_pair "${load_env[@]}" \
            UCX_TLS=atomicx,tcp "${fence[@]}" -- -t "$t" -n "$n" -o
    done
}

perftest_compare() {
    local n=${ATOMICX_PERFTEST_ITERS:-2000} t o tls rc
    # For comparison: rc_verbs has only 64-bit ADD/FADD/CSWAP, so UCP uses
    # software atomics over active messages, which need the responder's CPU.
    # Reported, not judged: with UCX_TLS=rc_verbs,tcp UCX 1.13.1 finds no
    # auxiliary wireup transport (it fails at once); with rc_verbs,ud_verbs,tcp
    # the UD endpoint times out under TCG (UCX aborts after its 30 s
    # UCX_UD_TIMEOUT), the same for every operation, so that set is tried
    # with fetch-add alone. With -o the responder does not progress.
    for tls in rc_verbs,tcp rc_verbs,ud_verbs,tcp; do
        ops="ucp_add ucp_fadd ucp_swap ucp_cswap"
        [ "$tls" = rc_verbs,tcp ] || ops=ucp_fadd
        for t in $ops; do
            for o in "" -o; do
                echo
                echo "=== test-guest: ucx_perftest $t $tls $o (comparison) ==="
                perf_timeout=60 perf_pair UCX_TLS=$tls -- -t "$t" -n "$n" $o
                rc=$?
                case $rc in
                0)   rc="completed" ;;
                124) rc="did not complete in 60 s (software atomics wait for the responder to progress)" ;;
                *)   rc="failed (exit $rc)" ;;
                esac
                echo "comparison: UCX_TLS=$tls ucx_perftest -t $t $o: $rc" |
                    tee -a "$out/atomicx-rc-verbs-comparison.txt"
            done
        done
    done
}

# Latency of one fetch-and-add round trip, in the same guest run:
# raw verbs (ib_atomic_lat), atomicx UCT fadd and UCP ucp_fadd, as ratios.
bench_suite() {
    local n=${ATOMICX_BENCH_ITERS:-5000} gidx slog clog spid
    local ib_typ ib_avg uct_med uct_avg ucp_med ucp_avg
    gidx=$(ipv4_gid_index "$dev") || { echo "bench: no IPv4 RoCE v2 GID"; return 1; }

    port=$((port + 1))
    slog=$(mktemp) clog=$(mktemp)
    timeout 300 taskset -c 0 ib_atomic_lat -d "${dev%%:*}" -i "${dev##*:}"         -x "$gidx" -F -p "$port" -n "$n" -A FETCH_AND_ADD >"$slog" 2>&1 &
    spid=$!
    wait_listening "$port" "$spid" 30
    timeout 300 taskset -c 1 ib_atomic_lat -d "${dev%%:*}" -i "${dev##*:}"         -x "$gidx" -F -p "$port" -n "$n" -A FETCH_AND_ADD localhost         >"$clog" 2>&1 || { cat "$clog" "$slog"; return 1; }
    wait "$spid"
    cat "$clog"
    # " #bytes #iterations t_min t_max t_typical t_avg ..."
    # (no process substitution: the guest has no /dev/fd)
    read -r ib_typ ib_avg <<<"$(awk '$1 == 8 && NF >= 6 { print $5, $6 }' "$clog")"

    perf_pair "${load_env[@]}" -- -x atomicx -d "$dev" -t fadd -n "$n"         >"$clog" || { cat "$clog"; return 1; }
    cat "$clog"
    read -r uct_med uct_avg <<<"$(awk '$1 == "Final:" { print $3, $4 }' "$clog")"

    perf_pair "${load_env[@]}" UCX_TLS=atomicx,tcp -- -t ucp_fadd -n "$n"         >"$clog" || { cat "$clog"; return 1; }
    cat "$clog"
    read -r ucp_med ucp_avg <<<"$(awk '$1 == "Final:" { print $3, $4 }' "$clog")"
    rm -f "$slog" "$clog"

    [ -n "$ib_avg" ] && [ -n "$uct_avg" ] && [ -n "$ucp_avg" ] ||
        { echo "bench: could not parse the results"; return 1; }
    awk -v ib_typ="$ib_typ" -v ib_avg="$ib_avg" -v uct_med="$uct_med" \
        -v uct_avg="$uct_avg" -v ucp_med="$ucp_med" -v ucp_avg="$ucp_avg" '
    BEGIN {
        printf "bench: fetch-and-add latency, usec (median / average)\n"
        printf "bench:   ib_atomic_lat (raw verbs)  %8.2f / %8.2f\n", ib_typ, ib_avg
        printf "bench:   atomicx UCT fadd           %8.2f / %8.2f\n", uct_med, uct_avg
        printf "bench:   atomicx UCP ucp_fadd       %8.2f / %8.2f\n", ucp_med, ucp_avg
        printf "bench: ratio UCT fadd / raw verbs     %.2f (median) %.2f (average), target <= 1.30: %s\n",
               uct_med / ib_typ, uct_avg / ib_avg,
               (uct_avg / ib_avg <= 1.3) ? "met" : "NOT met"
        printf "bench: ratio UCP ucp_fadd / raw verbs %.2f (median) %.2f (average)\n",
               ucp_med / ib_typ, ucp_avg / ib_avg
    }' | tee -a "$out/atomicx-bench.txt"
}

# The build's UCX is major.minor or newer
ucx_at_least() {
    local maj=${ucx_version%%.*} rest=${ucx_version#*.}
    local min=${rest%%.*}
    [ "$maj" -gt "$1" ] || { [ "$maj" -eq "$1" ] && [ "$min" -ge "$2" ]; }
}

# ucx_info -d lists atomicx on the device, loaded as the build says
info_suite() {
    local out
    out=$(env "${load_env[@]}" ucx_info -d 2>&1) || { echo "$out"; return 1; }
    echo "$out" | grep -E '^# *(Memory domain|Component|Transport|Device):' |
        grep -B3 -A1 atomicx
    echo "$out" | awk -v dev="$dev" '
        /^# *Transport: / { tl = $3 }
        /^# *Device: /    { if (tl == "atomicx" && $3 == dev) found = 1 }
        END { exit !found }' ||
        { echo "info: ucx_info -d does not list atomicx on $dev"; return 1; }
    echo "info: ucx_info -d lists atomicx on $dev (${load_env[*]})"
}

# docs_examples: README's and the manual pages' guest examples, run as
# written from a scratch directory; the library path they name is where
# make install puts it, here this build's, and ./my_app (the reader's
# program) is fiatomic_info
docs_examples() {
    local dir line cmd rc fail=0 n=0 tools=$build/src/tools
    dir=$(mktemp -d /tmp/docs.XXXXXX)
    printf '#!/bin/sh\nexec %q "$@"\n' "$tools/fiatomic_info" > "$dir/my_app"
    chmod +x "$dir/my_app"
    while IFS= read -r line; do
        n=$((n + 1))
        cmd=${line//\/usr\/local\/lib\/libuct_atomicx.so.0/$lib}
        echo "docs: $line"
        (cd "$dir" && PATH=$tools:$PATH \
            LD_LIBRARY_PATH=$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
            timeout 300 bash -c "$cmd") > "$dir/out" 2>&1
        rc=$?
        { head -n 8; echo ...; tail -n 2; } < "$dir/out" | sed 's/^/  /'
        case $line in
        *"ucx_info -d | grep atomicx")
            # atomicx(7): ucx_info -d lists the device as transport atomicx
            grep -qE '^# +Transport: atomicx$' "$dir/out" ;;
        *" fiatomic_info"|*" ./my_app")
            # every cell of the matrix over atomicx,tcp (fiatomic-guest.sh
            # checks the strategies)
            [ $rc -eq 0 ] && grep -qE '^414 supported cells \([0-9]+ with elements of at most 8 bytes\) of 414$' "$dir/out" ;;
        *) echo "docs: no check for this line"; false ;;
        esac || { echo "docs: FAILED (exit $rc): $line"; fail=1; }
    done <<<"$(sed -nE 's/^guest: [^|]*test-guest\.sh docs[^|]* \| (.*)$/\1/p' "$here/../../test/tools/doc-examples.txt")"
    rm -rf "$dir"
    [ "$n" -ge 4 ] || { echo "docs: only $n examples found"; fail=1; }
    return $fail
}

# docs_atomicx_env: atomicx(7)'s UCX_ATOMICX_* variables; the parser refuses
# a malformed value on the host (test/tools/test-doc-examples.sh), atomicx
# refuses these well-formed ones when it opens an interface
docs_atomicx_env() {
    local kv out fail=0 gidx
    gidx=$(ipv4_gid_index "$dev") || { echo "docs: no IPv4 RoCE v2 GID"; return 1; }
    for kv in TX_QUEUE_LEN=64 MAX_OPS=256 "GID_INDEX=$gidx" TIMEOUT=500ms \
              RETRY_COUNT=3 SL=2 SELFTEST_TIMEOUT=10s; do
        out=$(env "${load_env[@]}" "UCX_ATOMICX_$kv" ucx_info -d 2>&1)
        if grep -qE '^# +Transport: atomicx$' <<<"$out" &&
           ! grep -q 'failed to open interface' <<<"$out"; then
            echo "docs: UCX_ATOMICX_$kv: atomicx opens"
        else
            echo "docs: FAILED: UCX_ATOMICX_$kv: atomicx did not open"; fail=1
        fi
    done
    for kv in TX_QUEUE_LEN=0 MAX_OPS=0 RETRY_COUNT=8 SL=16; do
        out=$(env "${load_env[@]}" "UCX_ATOMICX_$kv" ucx_info -d 2>&1)
        if grep -qE "atomicx: invalid configuration \(.*${kv%%=*} ${kv#*=}( |\))" <<<"$out" &&
           grep -q 'failed to open interface' <<<"$out"; then
            echo "docs: UCX_ATOMICX_$kv: refused, named"
        else
            echo "docs: FAILED: UCX_ATOMICX_$kv: not refused by name"
            grep -E 'atomicx|failed' <<<"$out" | head -n 5; fail=1
        fi
    done
    return $fail
}

# docs_no_ofi: fiatomic_perftest(1): on a transport with no libfabric
# provider, a line says there is no libfabric baseline and which transport
# UCP uses
docs_no_ofi() {
    local out rc
    out=$(env "${load_env[@]}" UCX_TLS=atomicx,tcp timeout 300 \
          "$build/src/tools/fiatomic_perftest" -f fetch -o sum -d u64 \
          --baseline libfabric -n 200 -w 20 2>&1)
    rc=$?
    echo "$out" | grep -vE '^fiatomic_perftest: .*calls, overall'
    if "$build/src/tools/fiatomic_perftest" --baseline libfabric --help >/dev/null 2>&1; then
        [ $rc -eq 0 ] && grep -q '^Final: ' <<<"$out" &&
            ! grep -q '^Final (ofi)' <<<"$out" &&
            grep -qxF '  (no libfabric baseline: UCP uses atomicx here, and the tool has a libfabric provider for shared memory (shm) and tcp (tcp;ofi_rxm) only)' <<<"$out"
    else
        echo "docs: fiatomic_perftest built without libfabric: no baseline to miss"
    fi
}

run_suites() {
local s
for s in "$@"; do
    case $s in
    info) run "ucx_info -d lists atomicx" info_suite ;;
    fiatomic) run "libfiatomic over atomicx" "$here/fiatomic-guest.sh" --in-guest "$build" ;;
    uct) run "gtest test_atomicx_uct" gtest test_atomicx_uct ;;
    ucp) run "gtest test_atomicx_ucp" env UCX_TLS=atomicx,tcp \
             "$build/test/gtest/test_atomicx_ucp" --gtest_color=no ;;
    perftest) perftest_suite ;;
    bench) run "benchmark: atomicx vs ib_atomic_lat" bench_suite ;;
    compare) perftest_compare ;;
    docs) run "docs: guest examples as written" docs_examples
          run "docs: UCX_ATOMICX values" docs_atomicx_env
          run "docs: no libfabric baseline over atomicx" docs_no_ofi ;;
    *) echo "test-guest: unknown suite $s" >&2; failed+=("$s") ;;
    esac
done

echo
if [ ${#failed[@]} -gt 0 ]; then
    echo "test-guest: FAILED: ${failed[*]}"
    return 1
fi
echo "test-guest: all suites passed (${suites[*]})"
}

# Every UCX ERROR/WARN line of the run must be listed as expected, with its
# reason, in contrib/ucx-log-expected.txt (the guest has no /dev/fd: a pipe)
log=$(mktemp /tmp/test-guest.XXXXXX)
run_suites "${suites[@]}" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
"$here/../ucx-log-check.sh" --label test-guest "$log" || rc=1
rm -f "$log"
exit $rc
