# Sourced by the guest harnesses (test-guest.sh, two-guests.sh): a server is
# started in the background and its client may start only once the server
# listens.
#
# wait_listening <port> <server-pid> <seconds>: waits until a TCP socket
# listens on <port>, the server exits, or <seconds> pass; 0 when listening.
wait_listening() {
    local port=$1 pid=$2 deadline=$(($(date +%s) + $3))
    until [ -n "$(ss -Hltn "sport = :$port")" ]; do
        kill -0 "$pid" 2>/dev/null || return 1
        [ "$(date +%s)" -lt "$deadline" ] || return 1
        sleep 0.1
    done
}
