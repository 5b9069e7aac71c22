#!/bin/bash
# libfabric's own program fi_pingpong (Debian's libfabric-bin), unmodified,
# between two processes over this project's provider loaded from the build
# tree through FI_PROVIDER_PATH: FI_EP_RDM endpoints, the server's address
# sent over fi_pingpong's control socket and given to the client's
# fi_getinfo as its destination, messages with their content checked (-c),
# on UCX_TLS=posix (same-host addresses: the published worker address),
# posix,self,tcp (socket addresses, data over posix) and tcp; a size below
# the inject size (fi_inject) and sizes above it (fi_send), and tagged
# messages (-m tagged: fi_tsend, fi_trecv) on posix and tcp. Each run must end with exit 0 on
# both sides, each side's result line counting every message sent and
# acknowledged, and no UCX ERROR/WARN line. Skips (reason printed) only when
# fi_pingpong is not installed or the provider is not built.
set -u
# shellcheck source-path=SCRIPTDIR source=test-common.sh
. "$(dirname "$0")/test-common.sh"

require_tools "Debian's libfabric-bin" fi_pingpong
require_provider
test_start
# fi_pingpong is not instrumented: in a sanitizer build the provider needs
# the ASan runtime loaded first (see test-perftest-providers.sh)
if [ -n "$asan" ]; then
    export LD_PRELOAD=$asan ASAN_OPTIONS=detect_leaks=0
fi
iters=100

# whether something listens on TCP port $1 (the server's control socket),
# from /proc so that no connection takes the server's only accept
listening() {
    local hex
    hex=$(printf '%04X' "$1")
    awk -v p=":$hex" '$2 ~ p"$" && $4 == "0A" {f = 1} END {exit !f}' \
        /proc/net/tcp
}

# a side's result line: "<size> <iters> =<iters> ..." (every message sent
# was acknowledged)
has_result() {
    awk -v n="$iters" '$2 == n && $3 == "=" n {f = 1} END {exit !f}' "$1"
}

# pingpong TLS SIZE MODE: one server and one client on 127.0.0.1, with
# messages (msg) or tagged messages (tagged)
pingpong() {
    local tls=$1 size=$2 mode=$3 port srv srv_rc cli_rc
    local args=(-p fiatomic -e rdm -m "$mode" -I "$iters" -S "$size" -c)
    local what="UCX_TLS=$tls -m $mode -S $size"

    # below the kernel's ephemeral ports (32768 up), and free
    port=$((20000 + RANDOM % 12000))
    while listening "$port"; do
        port=$((20000 + RANDOM % 12000))
    done
    UCX_TLS=$tls timeout 60 fi_pingpong "${args[@]}" -B "$port" \
        > "$test_tmp/srv" 2>&1 &
    srv=$!
    for _ in $(seq 100); do
        listening "$port" && break
        kill -0 "$srv" 2> /dev/null || break
        sleep 0.1
    done
    UCX_TLS=$tls timeout 60 fi_pingpong "${args[@]}" -P "$port" 127.0.0.1 \
        > "$test_tmp/cli" 2>&1
    cli_rc=$?
    wait "$srv"
    srv_rc=$?
    if [ "$srv_rc" -ne 0 ] || [ "$cli_rc" -ne 0 ]; then
        bad "$what: server exit $srv_rc, client exit $cli_rc"
        sed 's/^/  server: /' "$test_tmp/srv" | tail -5
        sed 's/^/  client: /' "$test_tmp/cli" | tail -5
    elif ! has_result "$test_tmp/srv" || ! has_result "$test_tmp/cli"; then
        bad "$what: no result line with $iters messages"
        cat "$test_tmp/srv" "$test_tmp/cli" | sed 's/^/  /' | tail -6
    elif grep -qE 'UCX +(ERROR|WARN|FATAL)' "$test_tmp/srv" "$test_tmp/cli"
    then
        bad "$what: UCX trouble"
        grep -hE 'UCX' "$test_tmp/srv" "$test_tmp/cli" | head -5
    else
        ok
        echo "  $what: $(awk -v n="$iters" \
            '$2 == n {print $7 " usec/xfer"}' "$test_tmp/cli")"
    fi
}

# shared memory: fi_inject's size and 1 KiB (and 1 KiB connected by socket
# address); tcp: 1 KiB and 64 KiB; tagged messages of 1 KiB on each
for run in posix:16:msg posix:1024:msg posix:1024:tagged \
           posix,self,tcp:1024:msg tcp:1024:msg tcp:65536:msg \
           tcp:1024:tagged; do
    tls=${run%%:*}
    mode=${run##*:}
    size=${run#*:}
    size=${size%:*}
    [ "$tls" = "${last:-}" ] ||
        echo "=== fi_pingpong over fiatomic, UCX_TLS=$tls ==="
    last=$tls
    pingpong "$tls" "$size" "$mode"
done
test_end
