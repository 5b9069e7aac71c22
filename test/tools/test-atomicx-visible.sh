#!/bin/bash
# make check: when UCX_TLS names atomicx and atomicx has no resource, the user
# sees one line saying which case it is (at UCX's default log level):
#  - not loaded: libfiatomic says atomicx is not loaded and how to load it;
#  - loaded, no verbs device with atomics: atomicx says so, naming what it
#    found;
# and neither line appears when UCX_TLS does not name atomicx. Driven through
# fiatomic_info --csv (two processes: each says it once), whose CSV must stay
# whole. The UCX lines stay in this test's log for the UCX log gate
# (contrib/ucx-log-expected.txt lists them for these sections).
# Run from the top build directory.
set -uo pipefail
info=${FIATOMIC_INFO:-src/tools/fiatomic_info}
lib=${ATOMICX_LIB:-src/uct/atomicx/.libs/libuct_atomicx.so.0}
not_loaded="UCX_TLS names atomicx, but the atomicx transport is not loaded"
no_device="atomicx is loaded but has no device: "
# shellcheck source-path=SCRIPTDIR source=test-common.sh
. "$(dirname "$0")/test-common.sh"

if [ ! -e "$lib" ]; then
    echo "SKIP: atomicx was not built (configure found no matching UCX source tree)"
    exit 77
fi
# (ibv_devinfo's output read whole: `| grep -q` under pipefail fails when
# grep leaves first and ibv_devinfo dies of SIGPIPE)
if command -v ibv_devinfo > /dev/null &&
   grep -qE 'atomic_cap:[[:space:]]*ATOMIC_(HCA|GLOB)' \
        <<< "$(ibv_devinfo -v 2>/dev/null)"; then
    echo "SKIP: this host has a verbs device with atomics: atomicx has resources here"
    exit 77
fi
test_start
tmp=$test_tmp
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
# a sanitizer build: its runtime must come first in the preload list
asan=$(ldd "$lib" | awk '/libasan\.so/ {print $3}')
preload=${asan:+$asan:}$lib

# run <section> <expect-not-loaded> <expect-no-device> <env...>
run() {
    local section=$1 want_nl=$2 want_nd=$3 nl nd rows
    shift 3
    echo "=== atomicx visible: $section ==="
    env "$@" "$info" --csv > "$tmp/out" 2> "$tmp/err"
    local rc=$?
    cat "$tmp/out" "$tmp/err" | grep -E 'UCX +(WARN|ERROR)'
    # UCX logs to stdout; fiatomic_info's target process logs to stderr
    nl=$(cat "$tmp/out" "$tmp/err" | grep -c "$not_loaded")
    nd=$(cat "$tmp/out" "$tmp/err" | grep -c "$no_device")
    rows=$(grep -cE '^(base|fetch|compare),FI_[A-Z_]+,FI_[A-Z0-9_]+,[01],[a-z]+,[01]$' "$tmp/out")
    echo "  exit $rc; 'not loaded' lines: $nl, 'no device' lines: $nd; CSV rows: $rows"
    if [ $rc -ne 0 ] || [ "$nl" -ne "$want_nl" ] || [ "$nd" -ne "$want_nd" ] ||
       [ "$rows" -ne 414 ]; then
        bad "$section: expected exit 0, $want_nl and $want_nd lines, 414 rows"
    else
        ok
    fi
}

# fiatomic_info is two processes (initiator, target): one line each
run "not loaded" 2 0 UCX_TLS=atomicx,tcp
run "not loaded, named second" 2 0 UCX_TLS=tcp,atomicx
run "loaded, no device" 0 2 LD_PRELOAD="$preload" UCX_TLS=atomicx,tcp
run "loaded, not named" 0 0 LD_PRELOAD="$preload" UCX_TLS=tcp
run "not loaded, excluded" 0 0 UCX_TLS=^atomicx,sysv

test_end
