# Sourced by the guest harnesses (test-guest.sh, two-guests.sh).
#
# ipv4_gid_index <device:port>: prints the index of the port's RoCE v2 GID
# that carries an IPv4 address (what ib_atomic_lat -x wants); 1 when there
# is none.
ipv4_gid_index() {
    local sysport=/sys/class/infiniband/${1%%:*}/ports/${1##*:} i gid type
    for i in $(seq 0 15); do
        gid=$(cat "$sysport/gids/$i" 2>/dev/null) || continue
        type=$(cat "$sysport/gid_attrs/types/$i" 2>/dev/null) || continue
        if [[ $gid == 0000:0000:0000:0000:0000:ffff:* && $type == "RoCE v2" ]]; then
            echo "$i"
            return 0
        fi
    done
    return 1
}
