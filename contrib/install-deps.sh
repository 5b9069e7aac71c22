#!/bin/bash
# Install every build and test dependency of atomicx on Debian 12.
# Idempotent: installs only what is missing, and runs apt-get update only then.
set -euo pipefail

# Build: autotools, compilers, UCX (libs, headers, ucx_info/ucx_perftest),
# libfabric's public headers (and its tools/providers for benchmarks), gtest.
packages=(
    build-essential autoconf automake libtool pkg-config
    libucx-dev ucx-utils
    libfabric-dev libfabric-bin
    googletest libgtest-dev
    clang libclang-rt-14-dev
    valgrind
    # make check lints the manual pages (man/check-man.sh)
    mandoc groff-base
    # test-stopped-peer-orphaned-group.sh watches process states (pgrep)
    procps
    # atomicx transport: verbs headers/providers, and dpkg-dev for apt-get source
    libibverbs-dev ibverbs-providers ibverbs-utils dpkg-dev
    # Sandia OpenSHMEM's unit tests over libfabric (contrib/sos): MPICH's
    # mpiexec.hydra is the PMI-1 launcher SOS's --enable-pmi-simple speaks
    mpich
)
# The soft-RoCE guest harness (contrib/softroce/) adds its own list.
if [ -f "$(dirname "$0")/softroce/packages.txt" ]; then
    mapfile -t extra < <(grep -v '^#' "$(dirname "$0")/softroce/packages.txt" | grep .)
    packages+=("${extra[@]}")
fi

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

# Open MPI stays the default MPI (the guest suites run mpirun and mpicc):
# Debian's alternatives rank it above MPICH, MPICH is called as mpiexec.hydra.
check_mpi_defaults() {
    local t
    for t in mpirun mpicc; do
        case $(readlink -f "$(command -v $t)") in
            *openmpi*|*orterun*|*opal_wrapper*) ;;
            *) echo "install-deps: error: $t is not Open MPI's" \
                    "($(readlink -f "$(command -v $t)")); run" \
                    "update-alternatives --auto ${t/mpicc/mpi}" >&2
               return 1 ;;
        esac
    done
}

if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#packages[@]} packages present"
    check_mpi_defaults
    exec "$(dirname "$0")/get-ucx-src.sh" # atomicx: UCX source of the installed version
fi

echo "install-deps: installing ${missing[*]}"
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
check_mpi_defaults
exec "$(dirname "$0")/get-ucx-src.sh" # atomicx: UCX source of the installed version
