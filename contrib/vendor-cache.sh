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

# vendor_begin <cache> <prefix> <stamp> <what>: a build with that stamp
# in the prefix is reused (its prefix printed, the script ends); else,
# with the cache locked (one builder at a time, a second waits for the
# first one's result), the prefix is made anew and $vendor_start set
vendor_begin() {
    if vendor_built "$2" "$3"; then
        echo "$4 already built in $2" >&2
        echo "$2"
        exit 0
    fi
    mkdir -p "$1"
    exec 9> "$1/.lock"
    flock 9
    if vendor_built "$2" "$3"; then
        echo "$2"
        exit 0
    fi
    rm -rf "$2"
    mkdir -p "$2"
    vendor_start=$(date +%s)
}

# vendor_finish <prefix> <stamp> <what>: the stamp written,
# the build's CPU times kept in .build-times, and said. (times in this
# shell: in a command substitution it would see no children)
vendor_finish() {
    local took=$(( $(date +%s) - vendor_start ))
    echo "$2" > "$1/.atomicx-built"
    times > "$1/.build-times"
    echo "$3 built in $((took / 60)) min $((took % 60)) s (CPU of the build," \
         "user and system: $(tail -1 "$1/.build-times"))" >&2
}
