#!/bin/bash
# Obtain Debian's source package of exactly the installed UCX version, for the
# internal headers the atomicx UCT component is built against.
#
# Usage: contrib/get-ucx-src.sh [dest-parent]
#   dest-parent defaults to <top>/build-deps; the tree ends up in
#   <dest-parent>/ucx-<upstream version> (what configure looks for by default).
# Idempotent: an existing tree of the right version is kept. Refuses (exit 1)
# when the source package Debian offers is not the installed version.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dest_parent=${1:-$top/build-deps}

die() { echo "get-ucx-src: error: $*" >&2; exit 1; }

installed=$(dpkg-query -W -f='${Version}' libucx0 2>/dev/null) ||
    die "libucx0 is not installed (apt-get install libucx-dev ucx-utils)"
upstream=${installed%-*}   # 1.13.1-1 -> 1.13.1
upstream=${upstream#*:}    # drop an epoch, if any
dest="$dest_parent/ucx-$upstream"
stamp="$dest/.atomicx-debian-version"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$installed" ]; then
    echo "get-ucx-src: $dest already holds ucx $installed"
    exit 0
fi
[ ! -e "$dest" ] ||
    die "$dest exists but is not the source of the installed ucx $installed; remove it and rerun"

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive

# apt-get source needs deb-src entries: add a copy of the deb entries with
# Types: deb-src once (Debian 12 keeps them in deb822 .sources files).
srcs_list=/etc/apt/sources.list.d/atomicx-deb-src.sources
if ! grep -rqs -e '^Types:.*deb-src' -e '^deb-src' /etc/apt/sources.list \
        /etc/apt/sources.list.d/; then
    [ -f /etc/apt/sources.list.d/debian.sources ] ||
        die "no deb-src entries and no /etc/apt/sources.list.d/debian.sources to copy them from"
    sed 's/^Types: *deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources |
        $SUDO tee "$srcs_list" > /dev/null
    $SUDO apt-get update -qq
fi
command -v dpkg-source > /dev/null ||
    $SUDO apt-get install -y -qq --no-install-recommends dpkg-dev

offered=$(apt-cache showsrc ucx 2>/dev/null | awk '/^Version:/ {print $2}' | sort -u)
if ! grep -qxF "$installed" <<< "$offered"; then
    $SUDO apt-get update -qq
    offered=$(apt-cache showsrc ucx 2>/dev/null | awk '/^Version:/ {print $2}' | sort -u)
fi
grep -qxF "$installed" <<< "$offered" ||
    die "installed ucx is $installed but apt offers the source of: ${offered:-nothing}." \
        "atomicx must be built against the exact installed version; refusing."

mkdir -p "$dest_parent"
work=$(mktemp -d "$dest_parent/.tmp.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get source -qq "ucx=$installed" > apt-source.log 2>&1) ||
    { cat "$work/apt-source.log" >&2; die "apt-get source ucx=$installed failed"; }
tree=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name "ucx-*" | head -1)
[ -n "$tree" ] && [ -f "$tree/src/uct/base/uct_iface.h" ] ||
    die "the unpacked source has no src/uct/base/uct_iface.h"
echo "$installed" > "$tree/.atomicx-debian-version"
mv "$tree" "$dest"
echo "get-ucx-src: ucx $installed source in $dest"
