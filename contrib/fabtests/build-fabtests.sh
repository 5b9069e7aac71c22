#!/bin/bash
# Build libfabric's own test suite, fabtests, against the system's libfabric
# into a per-machine cache that contrib/fabtests/run-fabtests.sh runs from.
#
# Usage: contrib/fabtests/build-fabtests.sh [tarball [sha256]]
#   tarball defaults to ../shared/vendor/fabtests-1.17.0.tar.xz (relative to
#   the repository), checked against the SHA256SUMS next to it.
# Prints the prefix on its last line of stdout. Cached: the prefix is
#   ${ATOMICX_FABTESTS_CACHE:-/var/cache/atomicx-fabtests}/fabtests-<version>-<hash>
# (the hash covers the tarball, the libfabric and compiler versions) and a
# finished build (its .atomicx-built stamp) is reused as is. The prefix
# holds fabtests' install (bin/ its programs, share/fabtests/ the ubertest
# configurations and runfabtests.sh) and build.log; the build tree goes.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
die() { echo "build-fabtests: error: $*" >&2; exit 1; }

# shellcheck source=contrib/vendor-cache.sh
. "$top/contrib/vendor-cache.sh"
vendor_check "${1:-$top/../shared/vendor/fabtests-1.17.0.tar.xz}" "${2:-}"
tarball=$vendor_tarball sum=$vendor_sum

name=$(basename "$tarball")
version=${name#fabtests-}
version=${version%%.tar*}
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "cannot read a version from $name"
ofi_version=$(pkg-config --modversion libfabric 2> /dev/null) ||
    die "libfabric's pkg-config file is missing (install libfabric-dev)"

want_stamp="fabtests $version $sum --with-libfabric=/usr libfabric $ofi_version $(gcc -dumpfullversion)"
hash=$(echo "$want_stamp" | sha256sum | cut -c1-12)
cache=${ATOMICX_FABTESTS_CACHE:-/var/cache/atomicx-fabtests}
prefix=$cache/fabtests-$version-$hash

vendor_begin "$cache" "$prefix" "$want_stamp" "build-fabtests: fabtests $version"
log=$prefix/build.log
echo "build-fabtests: building fabtests $version into $prefix (log: $log)" >&2
tar -xJf "$tarball" -C "$prefix"
mv "$prefix/fabtests-$version" "$prefix/src"
jobs=${ATOMICX_FABTESTS_JOBS:-$(nproc)}
# (No set -e in a subshell that is the left side of ||: each step chained.)
(
    cd "$prefix/src" &&
    ./autogen.sh &&
    ./configure --prefix="$prefix" --with-libfabric=/usr &&
    make -j"$jobs" &&
    make install
) > "$log" 2>&1 || { tail -40 "$log" >&2; die "the fabtests build failed (see $log)"; }
rm -rf "$prefix/src"
vendor_finish "$prefix" "$want_stamp" "build-fabtests: fabtests $version"
echo "$prefix"
