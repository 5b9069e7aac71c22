# Functions the scripts that build vendored sources into a per-machine
# cache share (contrib/build-ucx.sh, contrib/sos/build-sos.sh,
# contrib/fabtests/build-fabtests.sh); sourced, with the caller's die().
#
# A build lives in a prefix of the cache whose .atomicx-built stamp names
# what was built (sources, options, toolchain): a prefix with the stamp
# wanted is reused as is, anything else is rebuilt there.

# vendor_check <tarball> [sha256]: the tarball's sha256 is the one given,
# or the one SHA256SUMS beside it lists. Sets vendor_tarball (its absolute
# path) and vendor_sum.
vendor_check() {
    local tarball=$1 want sums
    [ -f "$tarball" ] || die "no source tarball at $tarball"
    vendor_tarball=$(cd "$(dirname "$tarball")" && pwd)/$(basename "$tarball")
    vendor_sum=$(sha256sum "$vendor_tarball" | cut -d' ' -f1)
    if [ -n "${2:-}" ]; then
        want=$2
    else
        sums=$(dirname "$vendor_tarball")/SHA256SUMS
        [ -f "$sums" ] || die "no SHA256SUMS next to $vendor_tarball (give the sha256)"
        want=$(awk -v f="$(basename "$vendor_tarball")" \
                   '$2 == f || $2 == "*"f {print $1}' "$sums")
        [ -n "$want" ] || die "$sums has no entry for $(basename "$vendor_tarball")"
    fi
    [ "$vendor_sum" = "$want" ] ||
        die "$vendor_tarball: sha256 $vendor_sum, expected $want"
}

# vendor_built <prefix> <stamp>: whether the prefix holds that build
vendor_built() {
    [ -f "$1/.atomicx-built" ] && [ "$(cat "$1/.atomicx-built")" = "$2" ]
}

# vendor_lock <cache>: one builder at a time per cache; a second waits for
# the first one's result (then asks vendor_built again)
vendor_lock() {
    mkdir -p "$1"
    exec 9> "$1/.lock"
    flock 9
}

# vendor_finish <prefix> <stamp> <start seconds> <what>: the stamp written,
# the build's CPU times kept in .build-times, and said. (times in this
# shell: in a command substitution it would see no children)
vendor_finish() {
    local took=$(( $(date +%s) - $3 ))
    echo "$2" > "$1/.atomicx-built"
    times > "$1/.build-times"
    echo "$4 built in $((took / 60)) min $((took % 60)) s (CPU of the build," \
         "user and system: $(tail -1 "$1/.build-times"))" >&2
}
