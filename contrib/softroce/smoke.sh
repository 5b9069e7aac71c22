#!/bin/bash
# Smoke test of the soft-RoCE guest; run it through the harness:
#   contrib/softroce/run-in-guest.sh contrib/softroce/smoke.sh
# Checks that rxe0 exists with device atomics, and that a loopback
# ib_atomic_lat (fetch-and-add and compare-and-swap) passes on it.
set -euo pipefail

dev=${ATOMICX_RXE_DEV:-rxe0}
port=18515
iters=${ATOMICX_SMOKE_ITERS:-1000}
logs=${ATOMICX_GUEST_OUT:-$(mktemp -d)}

fail() { echo "smoke: FAIL: $*" >&2; exit 1; }
[ -d "/sys/class/infiniband/$dev" ] ||
    fail "no $dev here: run this through contrib/softroce/run-in-guest.sh"

echo "smoke: ibv_devices"
ibv_devices
ibv_devices | grep -qw "$dev" || fail "ibv_devices does not list $dev"

info=$(ibv_devinfo -v -d "$dev") || fail "ibv_devinfo -d $dev failed"
grep -E 'hca_id|transport|state:|atomic_cap|GID\[' <<<"$info"
cap=$(awk '$1 == "atomic_cap:" { print $2 }' <<<"$info")
case $cap in
    ATOMIC_HCA | ATOMIC_GLOB) ;;
    *) fail "$dev atomic_cap is '$cap', want ATOMIC_HCA or ATOMIC_GLOB" ;;
esac
grep -q 'state:[[:space:]]*PORT_ACTIVE' <<<"$info" || fail "$dev port 1 is not PORT_ACTIVE"

# The RoCE v2 GID of dummy0's IPv4 address (the one UCX would pick too).
gidx=
sysport=/sys/class/infiniband/$dev/ports/1
for i in 0 1 2 3 4 5 6 7; do
    gid=$(cat "$sysport/gids/$i" 2>/dev/null) || continue
    type=$(cat "$sysport/gid_attrs/types/$i" 2>/dev/null) || continue
    if [[ $gid == 0000:0000:0000:0000:0000:ffff:* && $type == "RoCE v2" ]]; then
        gidx=$i
        break
    fi
done
[ -n "$gidx" ] || fail "$dev has no IPv4 RoCE v2 GID"
echo "smoke: using GID index $gidx ($gid, $type)"

server=
trap '[ -z "$server" ] || kill "$server" 2>/dev/null || true' EXIT

atomic_lat() { # FETCH_AND_ADD | CMP_AND_SWAP
    local op=$1 slog="$logs/ib_atomic_lat-$1-server.log" i
    local args=(-d "$dev" -i 1 -x "$gidx" -F -p "$port" -n "$iters" -A "$op")
    # Pinned, one core each: under TCG an unpinned pair is noisy.
    timeout 300 taskset -c 0 ib_atomic_lat "${args[@]}" >"$slog" 2>&1 &
    server=$!
    # Wait for the server's port rather than sleeping a guessed time.
    for i in $(seq 600); do
        [ -z "$(ss -Hltn "sport = :$port")" ] || break
        kill -0 "$server" 2>/dev/null || { cat "$slog"; fail "ib_atomic_lat server ($op) exited early"; }
        sleep 0.1
    done
    [ -n "$(ss -Hltn "sport = :$port")" ] || fail "ib_atomic_lat server ($op) never listened on port $port"
    echo "smoke: ib_atomic_lat -A $op"
    timeout 300 taskset -c 1 ib_atomic_lat "${args[@]}" localhost ||
        { cat "$slog"; fail "ib_atomic_lat client ($op) failed"; }
    wait "$server" || { cat "$slog"; fail "ib_atomic_lat server ($op) failed"; }
    server=
}
atomic_lat FETCH_AND_ADD
atomic_lat CMP_AND_SWAP

echo "smoke: PASS ($dev, atomic_cap $cap)"
