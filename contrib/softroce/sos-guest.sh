#!/bin/bash
# Sandia OpenSHMEM's atomic unit tests over the fiatomic libfabric provider
# with UCX_TLS=atomicx,tcp, inside the qemu guest (soft-RoCE rxe0): an
# unmodified libfabric program whose atomics the NIC executes (atomicx's
# native fetch-add / compare-swap and its CAS loops), through libfiatomic.
#
#   contrib/softroce/sos-guest.sh <build-dir> [config] [np] [tests]
#
# config (default basic), np (default 2) and tests (default the "atomic"
# group) are contrib/sos/run-sos.sh's; the SOS build must be in its cache
# already (contrib/sos/build-sos.sh on the host: the guest sees the host's
# file system read-only). A run passes when run-sos.sh passes it against the
# tcp;ofi_rxm reference and, in every test, each process printed a UCP
# endpoint configuration with its AMO lane on atomicx/rxe0:1
# (run-sos.sh's SOS_AMO_LANE): the provider asks UCP for atomics only with
# FI_FIATOMIC_UCP_ONESIDED=1, which lets every peer reach the whole process
# memory (fi_fiatomic(7)); the guest's peers are this run's own processes.
# UCX ERROR / WARN lines are judged per test by run-sos.sh
# (contrib/ucx-log-check.sh).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
me=sos-guest

if [ "${1:-}" != "--in-guest" ]; then
    build=$(cd "${1:?usage: sos-guest.sh <build-dir> [config] [np] [tests]}" && pwd)
    shift
    for f in src/prov/fiatomic/.libs/libfiatomic-fi.so \
             src/uct/atomicx/.libs/libuct_atomicx.so.0; do
        [ -e "$build/$f" ] || { echo "$me: $build/$f missing (build first)" >&2; exit 1; }
    done
    # built (or found in the cache) here: the guest cannot write the cache
    "$here/../sos/build-sos.sh" "${1:-basic}" > /dev/null || exit 1
    exec "$here/run-in-guest.sh" "${BASH_SOURCE[0]}" --in-guest "$build" "$@"
fi

build=$2
config=${3:-basic}
np=${4:-2}
tests=${5:-atomic}
eval "$("$here/ucx-of-build.sh" "$build")" || exit 1
export "${load_env[@]}"
export UCX_TLS=atomicx,tcp
rc=0
ATOMICX_FI_PROVIDER_PATH=$build/src/prov/fiatomic/.libs SOS_AMO_LANE=atomicx/rxe0:1 \
    FI_FIATOMIC_UCP_ONESIDED=1 \
    "$here/../sos/run-sos.sh" "$config" fiatomic "$np" "$tests" || rc=1
echo "$me: $([ $rc -eq 0 ] && echo "all passed" || echo FAILED)"
exit $rc
