#!/bin/bash
# Build a UCX release from a source tarball into a prefix that atomicx can be
# configured against (configure --with-ucx=PREFIX --with-ucx-src=PREFIX/src).
#
# Usage: contrib/build-ucx.sh [tarball [sha256]]
#   tarball defaults to ../shared/vendor/ucx-1.22.0.tar.xz (relative to the
#   repository), checked against the SHA256SUMS next to it; a tarball given
#   with an explicit sha256 is checked against that instead.
# Prints the prefix on its last line of stdout. Cached: the prefix is
#   ${ATOMICX_UCX_CACHE:-/var/cache/atomicx-ucx}/ucx-<version>-<sha256 prefix>
# and a finished build (its .atomicx-built stamp) is reused as is. The source
# tree is kept under PREFIX/src: atomicx is built against UCX's internal
# headers, which UCX does not install.
#
# Only what atomicx and its tests use: verbs (rc, ud), tcp, shared memory;
# no rdmacm, no mlx5/DC/DevX, CUDA, ROCm, Gaudi, ZE, Java, Go, docs, examples or
# gtest. A release build (no assertions, no debug data) with module loading as
# UCX ships it.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "build-ucx: error: $*" >&2; exit 1; }

# shellcheck source=contrib/vendor-cache.sh
. "$top/contrib/vendor-cache.sh"
vendor_check "${1:-$top/../shared/vendor/ucx-1.22.0.tar.xz}" "${2:-}"
tarball=$vendor_tarball sum=$vendor_sum

name=$(basename "$tarball")
version=${name#ucx-}
version=${version%%.tar*}
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]] || die "cannot read a version from $name"
cache=${ATOMICX_UCX_CACHE:-/var/cache/atomicx-ucx}
prefix=$cache/ucx-$version-${sum:0:12}
configure_args=(
    --disable-static --disable-debug --disable-assertions --disable-params-check
    --enable-optimizations --enable-mt
    --disable-examples --disable-gtest --disable-doxygen-doc
    --without-cuda --without-rocm --without-gdrcopy --without-ze --without-gaudi
    --without-java --without-go --without-fuse3 --without-ugni
    --without-mlx5 --without-devx --without-dc --without-dm --without-ib-hw-tm
    --without-efa --without-gga --without-mad --without-knem --without-xpmem
    --without-valgrind --without-bfd --without-mpi
    --with-verbs --with-rc --with-ud --without-rdmacm
)
# The stamp names what was built: another tarball or other options rebuild
want_stamp="$version $sum ${configure_args[*]}"

vendor_begin "$cache" "$prefix" "$want_stamp" "build-ucx: ucx $version"
log=$prefix/build.log
echo "build-ucx: building ucx $version into $prefix (log: $log)" >&2
tar -xJf "$tarball" -C "$prefix"
mv "$prefix/ucx-$version" "$prefix/src"
jobs=${ATOMICX_UCX_JOBS:-$(nproc)}
# (No set -e in a subshell that is the left side of ||: each step chained.)
(
    cd "$prefix/src" &&
    ./autogen.sh &&
    mkdir -p build && cd build &&
    ../configure --prefix="$prefix" "${configure_args[@]}" &&
    make -j"$jobs" &&
    make install
) > "$log" 2>&1 || { tail -40 "$log" >&2; die "the UCX build failed (see $log)"; }
# The object files are not needed any more; the headers and configure's
# config.h stay for atomicx.
find "$prefix/src/build" -name '*.o' -o -name '*.lo' | xargs rm -f
vendor_finish "$prefix" "$want_stamp" "build-ucx: ucx $version"
echo "$prefix"
