#!/bin/bash
# atomicx between two machines: two soft-RoCE qemu guests on one virtual
# network, each with its own rxe0 on its own NIC (eth0), remote atomics
# crossing from one to the other.
#
#   contrib/softroce/two-guests.sh <build-dir> [part...]
#
# On the host: builds the programs the guests run, connects two guests with
# qemu's dgram netdev (UDP on 127.0.0.1 only: nothing leaves this machine),
# boots guest a (192.0.2.1) and guest b (192.0.2.2) at once with
# run-in-guest.sh and a shared results directory, and exits non-zero if
# either guest's parts fail. Then prints the latency figures.
# In the guests (ATOMICX_GUEST=1, ATOMICX_GUEST_ID=a|b): both walk the same
# list of steps; a step's server runs in guest a, its client in guest b.
# They synchronise through files in the shared directory (the server is
# listening before the client starts), every wait bounded. A step fails on
# a UCX ERROR or WARN line of either side that contrib/ucx-log-expected.txt
# does not list (contrib/ucx-log-check.sh; test "two-guests: <step>").
#
# Parts (default: all, in this order):
#   perftest     ucx_perftest UCT atomics over atomicx (fadd swap cswap
#                add_lat add_mr) and UCP atomics over atomicx,tcp (ucp_add
#                ucp_fadd ucp_swap ucp_cswap, with and without -o), server in
#                guest a, client in guest b
#   bench        fetch-and-add latency of raw verbs (ib_atomic_lat), UCT fadd
#                and UCP ucp_fadd: across the machines and within guest a
#                (loopback), in the same run
#   uct          the UCT suite's cases with peer processes (test_atomicx_uct
#                hammer_two_processes, peer_destroyed_mid_stream) with the
#                peers in guest a (atomicx_uct_peer) and the test in guest b
#   matrix       fiatomic_perftest --matrix over atomicx+tcp, every cell
#                verified: target in guest a, initiator in guest b
#   concurrency  libfiatomic's 4-process concurrency suite over atomicx,tcp
#                (native and auto; as in fiatomic-guest.sh, not mixed, whose
#                target-side process atomicx's device domain refuses):
#                the target process in guest a (fiatomic_test_peer serve),
#                the test and its 4 initiators in guest b
#
# Environment:
#   ATOMICX_TWO_GUESTS_OUT   results directory shared by both guests
#                            (default: a fresh temporary directory); logs
#                            under logs/, figures in two-guests-figures.txt
#   ATOMICX_TWO_GUESTS_SMP   virtual CPUs per guest (default 2)
#   ATOMICX_STEP_TIMEOUT     seconds one step may take (default 600)
#   ATOMICX_SOFTROCE_TIMEOUT seconds before a guest is killed (default 2400)
#   ATOMICX_PERFTEST_ITERS   ucx_perftest iterations (default 200)
#   ATOMICX_BENCH_ITERS      latency iterations (default 1000)
#   ATOMICX_MATRIX_ITERS     timed calls per matrix cell (default 4)
#   ATOMICX_CONCURRENCY_ITERS operations per process and element in the
#                            concurrency suite (default 100; 1000 in one guest)
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
me=two-guests
all_parts=(perftest bench uct matrix concurrency)
addr_a=192.0.2.1
addr_b=192.0.2.2

usage() { echo "usage: $0 <build-dir> [${all_parts[*]}]..." >&2; exit 2; }
[ $# -ge 1 ] || usage
case $1 in -h | --help) usage ;; esac
build=$(cd "$1" && pwd) || exit 2
shift
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=("${all_parts[@]}")
for p in "${parts[@]}"; do
    [[ " ${all_parts[*]} " == *" $p "* ]] || { echo "$me: unknown part $p" >&2; usage; }
done

# Fetch-and-add latency (median / average, usec) from the logs of one run;
# the host prints them, the guests write the logs.
figures() { # figures <logs-dir>
    local logs=$1
    final() { # final <log>: "median average" of ucx_perftest's Final: line
        # (its 50%ile and its overall average over all iterations)
        [ -f "$1" ] && awk '$1 == "Final:" { m = $3; a = $5 } END { if (a != "") print m, a }' "$1"
    }
    ib() { # ib <log>: "typical average" of ib_atomic_lat's 8-byte line
        [ -f "$1" ] && awk '$1 == 8 && NF >= 6 { t = $5; a = $6 } END { if (a != "") print t, a }' "$1"
    }
    local ib_x ib_l uct_x uct_l ucp_x ucp_l
    ib_x=$(ib "$logs/bench-ib_atomic_lat-cross.client.log")
    ib_l=$(ib "$logs/bench-ib_atomic_lat-loopback.log")
    uct_x=$(final "$logs/bench-uct-fadd-cross.client.log")
    uct_l=$(final "$logs/bench-uct-fadd-loopback.log")
    ucp_x=$(final "$logs/bench-ucp_fadd-cross.client.log")
    ucp_l=$(final "$logs/bench-ucp_fadd-loopback.log")
    [ -n "$ib_x" ] && [ -n "$ib_l" ] && [ -n "$uct_x" ] && [ -n "$uct_l" ] &&
        [ -n "$ucp_x" ] && [ -n "$ucp_l" ] || return 1
    # shellcheck disable=SC2086  # (pairs of numbers)
    awk -v ib_x="$ib_x" -v ib_l="$ib_l" -v uct_x="$uct_x" -v uct_l="$uct_l" \
        -v ucp_x="$ucp_x" -v ucp_l="$ucp_l" '
    function row(name, x, l,   xs, ls) {
        split(x, xs, " "); split(l, ls, " ")
        printf "two-guests:   %-14s %9.2f / %9.2f   %9.2f / %9.2f   %7.2f / %7.2f\n",
               name, xs[1], xs[2], ls[1], ls[2], xs[1] / ls[1], xs[2] / ls[2]
    }
    BEGIN {
        printf "two-guests: fetch-and-add latency, usec (median / average)\n"
        printf "two-guests:   %-14s %-21s   %-21s   %s\n", "", "across the guests",
               "within guest a", "ratio across/within"
        row("raw verbs", ib_x, ib_l)
        row("UCT fadd", uct_x, uct_l)
        row("UCP ucp_fadd", ucp_x, ucp_l)
        split(ib_x, i, " "); split(uct_x, u, " "); split(ucp_x, p, " ")
        printf "two-guests: across the guests, UCT fadd / raw verbs %.2f (median) %.2f (average), UCP ucp_fadd / raw verbs %.2f / %.2f\n",
               u[1] / i[1], u[2] / i[2], p[1] / i[1], p[2] / i[2]
    }'
}

if [ "${ATOMICX_GUEST:-}" != 1 ]; then
    # ---- Host side ---------------------------------------------------------
    echo "$me: building the guest programs in $build"
    nice make -C "$build/src/uct/atomicx" -j"$(nproc)" >/dev/null &&
        nice make -C "$build/src/tools" -j"$(nproc)" >/dev/null &&
        nice make -C "$build/test/gtest" -j"$(nproc)" test_atomicx_uct \
            atomicx_uct_peer test_fiatomic fiatomic_test_peer >/dev/null ||
        { echo "$me: build failed" >&2; exit 1; }

    if [ -n "${ATOMICX_TWO_GUESTS_OUT:-}" ]; then
        mkdir -p "$ATOMICX_TWO_GUESTS_OUT" || exit 1
        out=$(realpath -e "$ATOMICX_TWO_GUESTS_OUT")
        rm -rf "$out/sync" "$out/logs"
    else
        out=$(mktemp -d "${TMPDIR:-/tmp}/atomicx-two-guests.XXXXXX")
    fi
    mkdir -p "$out/sync" "$out/logs"
    echo "$me: results in $out"

    # Two free UDP ports on 127.0.0.1, one per guest's end of the wire.
    free_udp_port() {
        local p i
        for i in $(seq 100); do
            p=$((20000 + RANDOM % 30000))
            [ -n "$(ss -Hlun "sport = :$p")" ] || { echo "$p"; return 0; }
        done
        return 1
    }
    port_a=$(free_udp_port) && port_b=$(free_udp_port) && [ "$port_a" != "$port_b" ] ||
        { echo "$me: no free UDP ports" >&2; exit 1; }
    netdev() { # netdev <local-port> <remote-port>
        echo "dgram,local.type=inet,local.host=127.0.0.1,local.port=$1,remote.type=inet,remote.host=127.0.0.1,remote.port=$2"
    }

    pids=()
    # shellcheck disable=SC2317  # (trap)
    stop_guests() {
        local p
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
        for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    }
    trap stop_guests EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM

    export ATOMICX_SOFTROCE_TIMEOUT=${ATOMICX_SOFTROCE_TIMEOUT:-2400}
    export ATOMICX_GUEST_SMP=${ATOMICX_TWO_GUESTS_SMP:-2}
    export ATOMICX_GUEST_OUT=$out
    start=$(date +%s)
    for g in a b; do
        if [ $g = a ]; then
            nd=$(netdev "$port_a" "$port_b") ip=$addr_a
        else
            nd=$(netdev "$port_b" "$port_a") ip=$addr_b
        fi
        ATOMICX_GUEST_ID=$g ATOMICX_GUEST_NETDEV=$nd ATOMICX_GUEST_ADDR=$ip/24 \
            "$here/run-in-guest.sh" "$here/two-guests.sh" "$build" "${parts[@]}" \
            > >(sed -u "s/^/[$g] /") 2>&1 &
        pids+=($!)
    done
    rc=0
    for p in "${pids[@]}"; do wait "$p" || rc=1; done
    pids=()
    echo "$me: both guests done in $(($(date +%s) - start)) s"
    if [[ " ${parts[*]} " == *" bench "* ]]; then
        if figures "$out/logs" >"$out/two-guests-figures.txt"; then
            cat "$out/two-guests-figures.txt"
        else
            echo "$me: no latency figures (a bench step failed)"; rc=1
        fi
    fi
    echo "$me: $([ $rc -eq 0 ] && echo "all parts passed" || echo FAILED) (${parts[*]})"
    exit $rc
fi

# ---- In a guest ------------------------------------------------------------
id=${ATOMICX_GUEST_ID:?}
out=${ATOMICX_GUEST_OUT:?}
sync=$out/sync
logs=$out/logs
lib=$build/src/uct/atomicx/.libs/libuct_atomicx.so.0
dev=rxe0:1
step_timeout=${ATOMICX_STEP_TIMEOUT:-600}
failed=()
step=0
port=21000

say() { echo "${me}[$id]: $*"; }

# Waits for a file of the other guest; gives up after <seconds> or when the
# other guest aborted.
wait_file() { # wait_file <path> <seconds>
    local deadline=$(($(date +%s) + $2))
    until [ -e "$1" ]; do
        if [ -e "$sync/abort" ]; then
            say "the other guest aborted: $(cat "$sync/abort")"
            return 1
        fi
        if [ "$(date +%s)" -ge "$deadline" ]; then
            say "gave up waiting for $(basename "$1") after $2 s"
            echo "guest $id: no $(basename "$1") within $2 s" >"$sync/abort"
            return 1
        fi
        sleep 0.2
    done
}
abort() { # the run cannot go on: tell the other guest, stop
    echo "guest $id: $*" >>"$sync/abort"
    say "ABORT: $*"
    finish
}
finish() {
    echo
    if [ ${#failed[@]} -gt 0 ] || [ -e "$sync/abort" ]; then
        say "FAILED: ${failed[*]}"
        exit 1
    fi
    say "all steps passed"
    exit 0
}

# Every UCX ERROR/WARN line of a step's log must be listed as expected,
# with its reason, in contrib/ucx-log-expected.txt: its test is the gtest
# test running then, else the section "two-guests: <step>" (the guest has no
# /dev/fd: a pipe).
clean_log() { # clean_log <step> <log>
    { echo "=== $me: $1 ==="; cat "$2"; } |
        "$here/../ucx-log-check.sh" --label "$me $1 $(basename "$2")"
}

# shellcheck source=wait-listening.sh
. "$here/wait-listening.sh"
# shellcheck source=rdma-gid.sh
. "$here/rdma-gid.sh"

# pair <name> <oneshot|daemon> <check> -- <server command> -- <client command>
# Guest a runs the server and waits until it listens on $port; guest b then
# runs the client. A oneshot server must exit 0 by itself after its client;
# a daemon is stopped once the client is done. <check> is "final" (the
# client printed ucx_perftest's Final: line) or "-".
pair() {
    local name=$1 kind=$2 check=$3 srv=() cli=() rc spid log
    shift 3
    [ "$1" = -- ] && shift
    while [ "$1" != -- ]; do srv+=("$1"); shift; done
    shift
    cli=("$@")
    step=$((step + 1))
    echo
    echo "=== $me: $name (server in guest a, client in guest b) ==="
    if [ "$id" = a ]; then
        log=$logs/$name.server.log
        timeout "$step_timeout" "${srv[@]}" >"$log" 2>&1 &
        spid=$!
        if wait_listening "$port" "$spid" 120; then
            echo ok >"$sync/$step.ready"
        else
            echo "not listening" >"$sync/$step.ready"
        fi
        wait_file "$sync/$step.client" $((step_timeout + 60)) || { kill "$spid" 2>/dev/null; wait "$spid"; cat "$log"; abort "$name: no client result"; }
        if [ "$kind" = daemon ] && kill -0 "$spid" 2>/dev/null; then
            kill "$spid" 2>/dev/null
            wait "$spid"
            rc=0
        else
            wait "$spid"
            rc=$?
        fi
        echo "$rc" >"$sync/$step.server"
        cat "$log"
        clean_log "$name" "$log" || rc=1
        [ "$(cat "$sync/$step.client")" = 0 ] || rc=1
    else
        log=$logs/$name.client.log
        wait_file "$sync/$step.ready" $((step_timeout + 60)) || abort "$name: server never ready"
        if [ "$(cat "$sync/$step.ready")" = ok ]; then
            timeout "$step_timeout" "${cli[@]}" >"$log" 2>&1
            rc=$?
            [ "$check" != final ] || [ $rc -ne 0 ] || grep -q '^Final:' "$log" || rc=1
        else
            echo "server not ready: $(cat "$sync/$step.ready")" >"$log"
            rc=1
        fi
        echo "$rc" >"$sync/$step.client"
        wait_file "$sync/$step.server" 120 || abort "$name: no server result"
        cat "$log"
        clean_log "$name" "$log" || rc=1
        [ "$(cat "$sync/$step.server")" = 0 ] || rc=1
    fi
    port=$((port + 1))
    if [ "$rc" -eq 0 ]; then
        echo "=== $me: $name: ok"
    else
        echo "=== $me: $name: FAILED"
        failed+=("$name")
    fi
}

# solo <name> -- <command>: guest a runs it alone, guest b waits.
solo() {
    local name=$1 rc log
    shift 2
    step=$((step + 1))
    echo
    echo "=== $me: $name (within guest a) ==="
    if [ "$id" = a ]; then
        log=$logs/$name.log
        timeout "$step_timeout" "$@" >"$log" 2>&1
        rc=$?
        cat "$log"
        clean_log "$name" "$log" || rc=1
        echo "$rc" >"$sync/$step.done"
    else
        wait_file "$sync/$step.done" $((step_timeout + 60)) || abort "$name: no result"
        rc=$(cat "$sync/$step.done")
    fi
    if [ "$rc" -eq 0 ]; then
        echo "=== $me: $name: ok"
    else
        echo "=== $me: $name: FAILED"
        failed+=("$name")
    fi
}

# ucx_perftest server and client in guest a: the same-machine reference.
loopback_perf() { # loopback_perf <perftest args...>
    local slog rc
    slog=$(mktemp)
    ucx_perftest "$@" -p "$port" >"$slog" 2>&1 &
    local spid=$!
    wait_listening "$port" "$spid" 120
    ucx_perftest "$@" -p "$port" localhost
    rc=$?
    wait "$spid" || rc=$((rc ? rc : 1))
    echo "--- server:"
    cat "$slog"
    rm -f "$slog"
    port=$((port + 1))
    return $rc
}

# ib_atomic_lat server and client in guest a.
loopback_ib() { # loopback_ib <ib_atomic_lat args...>
    local slog rc
    slog=$(mktemp)
    "$@" -p "$port" >"$slog" 2>&1 &
    local spid=$!
    wait_listening "$port" "$spid" 120
    "$@" -p "$port" localhost
    rc=$?
    wait "$spid" || rc=$((rc ? rc : 1))
    [ $rc -eq 0 ] || { echo "--- server:"; cat "$slog"; }
    rm -f "$slog"
    return $rc
}

# ---- The steps ---------------------------------------------------------------
echo "guest $id up" >"$sync/up-$id"
other=$([ "$id" = a ] && echo b || echo a)
peer=$([ "$id" = a ] && echo $addr_b || echo $addr_a)
wait_file "$sync/up-$other" 900 || abort "guest $other never came up"
say "rxe0 on eth0 $(ip -4 -o addr show dev eth0 | awk '{ print $4 }'), peer $peer"
# The wire works both ways before anything runs over it (busybox ping: the
# host has no iputils).
if ! busybox ping -c 3 -W 5 "$peer"; then
    abort "no ping reply from $peer"
fi
echo ok >"$sync/ping-$id"
wait_file "$sync/ping-$other" 120 || abort "guest $other cannot reach us"

# Fewer than in one guest: a round trip between two TCG guests costs
# milliseconds on a loaded host.
perf_iters=${ATOMICX_PERFTEST_ITERS:-200}
bench_iters=${ATOMICX_BENCH_ITERS:-1000}
matrix_iters=${ATOMICX_MATRIX_ITERS:-4}
conc_iters=${ATOMICX_CONCURRENCY_ITERS:-100}
uct_env=(env LD_PRELOAD="$lib")
ucp_env=(env LD_PRELOAD="$lib" UCX_TLS=atomicx,tcp)

for part in "${parts[@]}"; do
    case $part in
    perftest)
        for t in fadd swap cswap add_lat add_mr; do
            pair "perftest-uct-$t" oneshot final \
                -- "${uct_env[@]}" ucx_perftest -x atomicx -d "$dev" -t "$t" -n "$perf_iters" -p "$port" \
                -- "${uct_env[@]}" ucx_perftest -x atomicx -d "$dev" -t "$t" -n "$perf_iters" -p "$port" "$addr_a"
        done
        for t in ucp_add ucp_fadd ucp_swap ucp_cswap; do
            for o in "" -o; do
                pair "perftest-$t${o:+-o}" oneshot final \
                    -- "${ucp_env[@]}" ucx_perftest -t "$t" -n "$perf_iters" $o -p "$port" \
                    -- "${ucp_env[@]}" ucx_perftest -t "$t" -n "$perf_iters" $o -p "$port" "$addr_a"
            done
        done
        ;;
    bench)
        gidx=$(ipv4_gid_index "$dev") || abort "rxe0 has no IPv4 RoCE v2 GID"
        ib_lat=(ib_atomic_lat -d "${dev%%:*}" -i "${dev##*:}" -x "$gidx" -F -n "$bench_iters" -A FETCH_AND_ADD)
        pair "bench-ib_atomic_lat-cross" oneshot - \
            -- "${ib_lat[@]}" -p "$port" \
            -- "${ib_lat[@]}" -p "$port" "$addr_a"
        solo "bench-ib_atomic_lat-loopback" -- bash -c "$(declare -f wait_listening loopback_ib); port=$port; loopback_ib ${ib_lat[*]}"
        port=$((port + 1))
        pair "bench-uct-fadd-cross" oneshot final \
            -- "${uct_env[@]}" ucx_perftest -x atomicx -d "$dev" -t fadd -n "$bench_iters" -p "$port" \
            -- "${uct_env[@]}" ucx_perftest -x atomicx -d "$dev" -t fadd -n "$bench_iters" -p "$port" "$addr_a"
        solo "bench-uct-fadd-loopback" -- "${uct_env[@]}" bash -c "$(declare -f wait_listening loopback_perf); port=$port; loopback_perf -x atomicx -d $dev -t fadd -n $bench_iters"
        port=$((port + 1))
        pair "bench-ucp_fadd-cross" oneshot final \
            -- "${ucp_env[@]}" ucx_perftest -t ucp_fadd -n "$bench_iters" -p "$port" \
            -- "${ucp_env[@]}" ucx_perftest -t ucp_fadd -n "$bench_iters" -p "$port" "$addr_a"
        solo "bench-ucp_fadd-loopback" -- "${ucp_env[@]}" bash -c "$(declare -f wait_listening loopback_perf); port=$port; loopback_perf -t ucp_fadd -n $bench_iters"
        port=$((port + 1))
        ;;
    uct)
        pair "uct-remote-peers" daemon - \
            -- "${uct_env[@]}" "$build/test/gtest/atomicx_uct_peer" serve "$port" \
            -- env ATOMICX_TEST_REMOTE="$addr_a:$port" "$build/test/gtest/test_atomicx_uct" --gtest_color=no \
            --gtest_filter='atomicx_uct.hammer_two_processes:atomicx_uct.peer_destroyed_mid_stream'
        ;;
    matrix)
        pair "fiatomic-matrix" oneshot - \
            -- "${ucp_env[@]}" "$build/src/tools/fiatomic_perftest" --server -p "$port" \
            -- "${ucp_env[@]}" "$build/src/tools/fiatomic_perftest" "$addr_a" -p "$port" --matrix \
            --transports atomicx+tcp --iters "$matrix_iters" --warmup 1 --progress
        ;;
    concurrency)
        pair "fiatomic-concurrency" daemon - \
            -- "${ucp_env[@]}" "$build/test/gtest/fiatomic_test_peer" serve "$port" \
            -- "${ucp_env[@]}" FIATOMIC_TEST_REMOTE="$addr_a:$port" FIATOMIC_TEST_TLS_MAP=tcp=atomicx,tcp \
            FIATOMIC_TEST_ITERATIONS="$conc_iters" \
            "$build/test/gtest/test_fiatomic" --gtest_color=no \
            --gtest_filter='tcp_user_native/concurrency.*:tcp_user_auto/concurrency.*'
        ;;
    esac
done
finish
