#!/bin/bash
# Build the libFuzzer target that reaches the fiatomic provider's message
# handlers through a live UCP connection (fuzz_prov_peer.c) with clang
# (ASan + UBSan + libFuzzer), the provider and libfiatomic compiled into one
# instrumented libfiatomic-fi.so that libfabric loads from a scratch
# directory, and run it for a bounded time: half over tcp, half over posix,
# each from an empty scratch corpus (new inputs stay out of the tree).
# Usage: test/fuzz/run-prov.sh [seconds]   (default 60, both transports)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
seconds=${1:-60}
out=${FUZZ_OUT:-$(mktemp -d /tmp/fiatomic-fuzz-prov.XXXXXX)}

command -v clang >/dev/null || { echo "fuzz-prov: clang not installed (contrib/install-deps.sh installs it)" >&2; exit 1; }

flags=(-g -O1 -mcx16 -fno-sanitize-recover=undefined
       $(pkg-config --cflags ucx) -I"$top/src/fiatomic"
       -I"$top/src/fiatomic/base" -I"$top/src/fiatomic/core"
       -I"$top/src/fiatomic/target")
mkdir -p "$out/prov"
clang "${flags[@]}" -fPIC -shared -fsanitize=fuzzer-no-link,address,undefined \
      "$top"/src/prov/fiatomic/*.c "$top"/src/fiatomic/*/*.c \
      $(pkg-config --libs ucx) -lfabric -lm -o "$out/prov/libfiatomic-fi.so"
clang "${flags[@]}" -fsanitize=fuzzer,address,undefined \
      "$here/fuzz_prov_peer.c" $(pkg-config --libs ucx) -lfabric \
      -o "$out/fuzz_prov_peer"

status=0
for tl in tcp posix; do
    mkdir -p "$out/corpus-$tl"
    echo "fuzz-prov: the provider through UCP over $tl for $((seconds / 2))s (artifacts in $out)"
    # -rss_limit_mb: a provider domain, a UCP worker and ASan's shadow;
    # -detect_leaks=0 and ASan's: LeakSanitizer stops the world to scan,
    # and its tracer faulted among UCX's and the provider's threads (the
    # domain lives for the whole run, closed by nobody);
    # the provider's refusals are logged at libfabric's warning level;
    # -runs: over posix the domain keeps each same-host connection the raw
    # peer's reconnections made (their peer's end is not reported), and
    # about 120000 inputs' worth exhausted the mappings a process may have
    FIATOMIC_FUZZ_TLS=$tl FIATOMIC_FUZZ_PROV_DIR="$out/prov" \
    FI_LOG_LEVEL=${FI_LOG_LEVEL:-off} ASAN_OPTIONS=detect_leaks=0 \
        "$out/fuzz_prov_peer" \
        -max_total_time=$((seconds / 2)) -runs=40000 -max_len=4096 -timeout=60 -detect_leaks=0 \
        -rss_limit_mb=4096 -artifact_prefix="$out/$tl-" -print_final_stats=1 \
        "$out/corpus-$tl" > "$out/fuzz-$tl.log" 2>&1 || status=$?
    grep -E "stat::number_of_executed_units|ERROR|SUMMARY|fuzz_prov_peer:" \
        "$out/fuzz-$tl.log" || true
    # UCX's errors are findings; its warnings of the ids nobody registered
    # (the raw peer's messages and the provider's replies to it) are not
    if grep -E "UCX +(ERROR|WARN|FATAL)" "$out/fuzz-$tl.log" |
       grep -vE "ucp_am\.c:[0-9]+ +UCX +WARN +UCP Active Message was received with id : [0-9]+, but there is no registered callback for that id$" >&2; then
        [ "$status" -ne 0 ] || status=2
    fi
    if [ "$status" -ne 0 ]; then
        tail -40 "$out/fuzz-$tl.log" >&2
        echo "fuzz-prov: FAILED over $tl (exit $status; crash input saved in $out)" >&2
        exit 1
    fi
done
echo "fuzz-prov: no crash"
