#!/bin/bash
# Build the libFuzzer target that reaches a live target through UCP
# (fuzz_ucp_peer.c) with clang (ASan + UBSan + libFuzzer) and run it for a
# bounded time: half over tcp, half over posix, each from the seed corpus
# kept in corpus-ucp-peer/ (new inputs go to a scratch corpus, not the tree).
# Usage: test/fuzz/run-ucp.sh [seconds]   (default 60, both transports)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
seconds=${1:-60}
out=${FUZZ_OUT:-$(mktemp -d /tmp/fiatomic-fuzz-ucp.XXXXXX)}

command -v clang >/dev/null || { echo "fuzz-ucp: clang not installed (contrib/install-deps.sh installs it)" >&2; exit 1; }

srcs=("$top"/src/fiatomic/*/*.c)
clang -g -O1 -mcx16 -fsanitize=fuzzer,address,undefined \
      -fno-sanitize-recover=undefined \
      $(pkg-config --cflags ucx) -I"$top/src/fiatomic" \
      -I"$top/src/fiatomic/base" -I"$top/src/fiatomic/core" \
      -I"$top/src/fiatomic/target" \
      "$here/fuzz_ucp_peer.c" "${srcs[@]}" \
      $(pkg-config --libs ucx) -o "$out/fuzz_ucp_peer"

status=0
for tl in tcp posix; do
    mkdir -p "$out/corpus-$tl"
    echo "fuzz-ucp: a live target through UCP over $tl for $((seconds / 2))s (artifacts in $out)"
    # -timeout: a hang is a finding (the harness aborts first, at 10 s);
    # -rss_limit_mb: two UCP workers and ASan's shadow, not a leak
    FIATOMIC_FUZZ_TLS=$tl "$out/fuzz_ucp_peer" \
        -max_total_time=$((seconds / 2)) -max_len=4096 -timeout=30 \
        -rss_limit_mb=4096 -artifact_prefix="$out/$tl-" -print_final_stats=1 \
        "$out/corpus-$tl" "$here/corpus-ucp-peer" \
        > "$out/fuzz-$tl.log" 2>&1 || status=$?
    grep -E "stat::number_of_executed_units|ERROR|SUMMARY|fuzz_ucp_peer:" \
        "$out/fuzz-$tl.log" || true
    # UCX's own errors and warnings are findings too (either side)
    if grep -E "UCX +(ERROR|WARN|FATAL)" "$out/fuzz-$tl.log" >&2; then
        [ "$status" -ne 0 ] || status=2
    fi
    if [ "$status" -ne 0 ]; then
        tail -40 "$out/fuzz-$tl.log" >&2
        echo "fuzz-ucp: FAILED over $tl (exit $status; crash input saved in $out)" >&2
        exit 1
    fi
done
echo "fuzz-ucp: no crash"
