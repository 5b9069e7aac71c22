#!/bin/bash
# Build Sandia OpenSHMEM (SOS) 1.5.3 and its unit tests against the system's
# libfabric, in one of the two configurations the libfabric provider is tested
# with, into a per-machine cache that contrib/sos/run-sos.sh runs from.
#
# Usage: contrib/sos/build-sos.sh <basic|scalable> [tarball [sha256]]
#   basic     --enable-ofi-mr=basic: provider keys (FI_MR_PROV_KEY |
#             FI_MR_VIRT_ADDR | FI_MR_ALLOCATED), each fi_mr_key() value sent
#             to every peer and used there as is
#   scalable  SOS's default memory registration: program-chosen keys
#             (0 = data segment, 1 = heap), offset addressing
#   Both: --with-ofi=/usr --enable-pmi-simple (PMI-1, launched with MPICH's
#   mpiexec.hydra), --enable-hard-polling (no target counters, FI_RMA_EVENT,
#   which no one-sided transport has) and --enable-manual-progress (SOS's
#   waits drive fi_cq_read; the provider still progresses on its own).
#   tarball defaults to ../shared/vendor/sos-1.5.3.tar.xz (relative to the
#   repository), checked against the SHA256SUMS next to it.
# Prints the prefix on its last line of stdout. Cached: the prefix is
#   ${ATOMICX_SOS_CACHE:-/var/cache/atomicx-sos}/<config>-<hash of the inputs>
# (tarball, configure options, libfabric and compiler versions) and a finished
# build (its .atomicx-built stamp) is reused as is. The prefix holds
#   tests/      the unit test programs, statically linked against SOS (so a
#               run writes nothing next to them and runs can share them)
#   tests.txt   their names, in the order SOS's "make check" runs them
#   build.log, config.log, .build-times
# SOS's build tree is removed once the tests are copied out.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
die() { echo "build-sos: error: $*" >&2; exit 1; }

config=${1:-}
case $config in
    basic)    config_args=(--enable-ofi-mr=basic) ;;
    scalable) config_args=() ;;
    *) die "usage: $0 <basic|scalable> [tarball [sha256]]" ;;
esac
configure_args=(
    --with-ofi=/usr --enable-pmi-simple
    --enable-hard-polling --enable-manual-progress
    "${config_args[@]}"
    # static: the test programs are plain executables, not libtool wrappers
    # that write into the build tree when first run
    --disable-shared --enable-static
)

# shellcheck source=contrib/vendor-cache.sh
. "$top/contrib/vendor-cache.sh"
vendor_check "${2:-$top/../shared/vendor/sos-1.5.3.tar.xz}" "${3:-}"
tarball=$vendor_tarball sum=$vendor_sum

name=$(basename "$tarball")
version=${name#sos-}
version=${version%%.tar*}
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "cannot read a version from $name"
ofi_version=$(pkg-config --modversion libfabric 2>/dev/null) ||
    die "libfabric's pkg-config file is missing (install libfabric-dev)"
command -v mpiexec.hydra > /dev/null ||
    die "mpiexec.hydra is missing (contrib/install-deps.sh installs mpich)"

# The stamp names what was built: another tarball, other options, another
# libfabric or compiler rebuild (into another directory: the hash differs)
want_stamp="sos $version $sum ${configure_args[*]} libfabric $ofi_version $(gcc -dumpfullversion)"
hash=$(echo "$want_stamp" | sha256sum | cut -c1-12)
cache=${ATOMICX_SOS_CACHE:-/var/cache/atomicx-sos}
prefix=$cache/$config-$hash

vendor_begin "$cache" "$prefix" "$want_stamp" "build-sos: sos $version ($config)"
log=$prefix/build.log
echo "build-sos: building sos $version ($config) into $prefix (log: $log)" >&2
tar -xJf "$tarball" -C "$prefix"
mv "$prefix/sos-$version" "$prefix/src"
jobs=${ATOMICX_SOS_JOBS:-$(nproc)}
unit=modules/tests-sos/test/unit
# "make check TESTS=" in the unit tests' directory builds them and runs
# none (SOS's own CI builds its tests so, in every test directory; the
# others, shmemx, apps, performance, are not run here). No set -e in a
# subshell that is the left side of ||: each step chained.
(
    cd "$prefix/src" &&
    ./autogen.sh &&
    mkdir -p build && cd build &&
    ../configure --prefix="$prefix/install" "${configure_args[@]}" &&
    make -j"$jobs" &&
    make -j"$jobs" -C "$unit" check TESTS= &&
    make -s -C "$unit" --no-print-directory \
        --eval='atomicx-print-tests: ; @echo $(TESTS)' atomicx-print-tests \
        > "$prefix/tests.list"
) > "$log" 2>&1 || { tail -40 "$log" >&2; die "the SOS build failed (see $log)"; }
mkdir -p "$prefix/tests"
: > "$prefix/tests.txt"
for t in $(cat "$prefix/tests.list"); do
    f=$prefix/src/build/$unit/$t
    # a libtool wrapper script instead of a program: a shared build
    file -b "$f" | grep -q ELF || die "$f is not a program"
    cp "$f" "$prefix/tests/" && echo "$t" >> "$prefix/tests.txt"
done
rm -f "$prefix/tests.list"
cp "$prefix/src/build/config.log" "$prefix/"
rm -rf "$prefix/src"
vendor_finish "$prefix" "$want_stamp" \
    "build-sos: sos $version ($config, $(wc -l < "$prefix/tests.txt") unit tests)"
echo "$prefix"
