#!/bin/bash
# Build the libFuzzer target for the target-side request decoder with clang
# (ASan + UBSan + libFuzzer) and run it for a bounded time.
# Usage: test/fuzz/run.sh [seconds]   (default 60)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
seconds=${1:-60}
out=${FUZZ_OUT:-$(mktemp -d /tmp/fiatomic-fuzz.XXXXXX)}
mkdir -p "$out/corpus"

command -v clang >/dev/null || { echo "fuzz: clang not installed (contrib/install-deps.sh installs it)" >&2; exit 1; }

# The decoder and the library around it, compiled straight from the sources
# (all of them: a file added to the library cannot be forgotten here).
srcs=("$top"/src/fiatomic/*/*.c)
clang -g -O1 -mcx16 -fsanitize=fuzzer,address,undefined \
      -fno-sanitize-recover=undefined \
      $(pkg-config --cflags ucx) -I"$top/src/fiatomic" \
      -I"$top/src/fiatomic/base" -I"$top/src/fiatomic/core" \
      -I"$top/src/fiatomic/target" \
      "$here/fuzz_target_request.c" "${srcs[@]}" \
      $(pkg-config --libs ucx) -o "$out/fuzz_target_request"

echo "fuzz: running the request decoder for ${seconds}s (artifacts in $out)"
status=0
"$out/fuzz_target_request" -max_total_time="$seconds" -max_len=8192 \
    -artifact_prefix="$out/" -print_final_stats=1 "$out/corpus" \
    > "$out/fuzz.log" 2>&1 || status=$?
grep -E "stat::number_of_executed_units|ERROR|SUMMARY" "$out/fuzz.log" || true
if [ "$status" -ne 0 ]; then
    tail -40 "$out/fuzz.log" >&2
    echo "fuzz: FAILED (exit $status; crash input saved in $out)" >&2
    exit 1
fi
echo "fuzz: no crash"
