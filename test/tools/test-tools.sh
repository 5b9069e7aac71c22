#!/bin/bash
# make check: the installed tools as a user meets them.
#  - fiatomic_info and fiatomic_perftest answer --version and --help (exit 0)
#    and refuse unknown options (exit 2);
#  - fiatomic_perftest names the bad value in its error (exit 2) for every
#    option that takes one, and runs a count above libfiatomic's default
#    max_count;
#  - fiatomic_info's table names datatypes in full and agrees with its CSV;
#  - fiatomic_info -c lists every FIATOMIC_* setting (fiatomic(3)'s
#    ENVIRONMENT) with its meaning, default and value in effect;
#  - fiatomic_perftest prints a progress line every report interval of a
#    long run (none with interval 0), and its rate column is the overall one
#    (1e6 / overall latency).
#  - fiatomic_perftest refuses a --pin CPU outside its affinity mask and an
#    empty element in a list option; FIATOMIC_STRATEGY/FIATOMIC_CAS_HANDOFF
#    take only fiatomic(3)'s spellings (fiatomic_create fails otherwise);
#  - fiatomic_info --csv's stdout is the CSV alone while UCX warns;
#  - --baseline libfabric follows the transport UCP chose (UCX_TLS unset),
#    and says why there is no libfabric row for a cell the provider lacks
#    (on a transport with no provider: contrib/softroce/test-guest.sh docs).
# Run from the top build directory (automake's test driver does).
set -uo pipefail
info=${FIATOMIC_INFO:-src/tools/fiatomic_info}
perf=${FIATOMIC_PERFTEST:-src/tools/fiatomic_perftest}
version=${PACKAGE_VERSION:?}
# shellcheck source-path=SCRIPTDIR source=test-common.sh
. "$(dirname "$0")/test-common.sh"
test_start "$perf"
tmp=$test_tmp

echo "=== tools: --version, --help, unknown options ==="
for tool in "$info" "$perf"; do
    name=$(basename "$tool")
    expect 0 "^$name \(atomicx\) $version\$" "" -- "$tool" --version
    expect 0 "^UCX [0-9]+\.[0-9]+" "" -- "$tool" -V
    expect 0 "^Usage: $name" "" -- "$tool" --help
    expect 2 "" "unrecognized option" -- "$tool" --no-such-option
done
expect 2 "" "unexpected argument 'extra'" -- "$info" extra
expect 2 "" "--all needs --csv" -- "$info" --all

echo "=== fiatomic_perftest: bad values named ==="
while IFS='|' read -r what args; do
    # shellcheck disable=SC2086
    expect 2 "" "$what" -- "$perf" $args
done <<'EOF_CASES'
invalid datatype 's16': expected i8, u8|-d s16
invalid op 'bogus': expected min, max|-o bogus
invalid family 'fetchy'|-f fetchy
invalid count '0'|-c 0
invalid count '2000000': expected a number from 1 to 1048576|-c 2000000
invalid count '12x'|-c 12x
invalid window '0'|-W 0
invalid iteration count '-5'|-n -5
invalid warm-up count 'many'|-w many
invalid port '70000'|-p 70000
invalid baseline 'mpi': expected ucp or libfabric|--baseline mpi
invalid strategy 'fast'|--strategy fast
invalid CPU pair '3'|--pin 3
invalid initiator list '1,,2'|--scale --initiators 1,,2
invalid initiator list '1,2,'|--scale --initiators 1,2,
invalid transport list 'posix,,tcp'|--transports posix,,tcp
invalid transport list 'atomicx\+\+tcp'|--transports atomicx++tcp
invalid goal list ',mallocs-per-call'|--goal ,mallocs-per-call
invalid strategy list 'cas,,target'|--scale --strategy cas,,target
invalid strategy 'NATIVE'|--strategy NATIVE
invalid verification count '0'|--verify-count 0
invalid transport list ','|--transports ,
unexpected argument 'b'|a b
window 1024 x count 4096 of FI_LONG_DOUBLE_COMPLEX|-W 1024 -c 4096 -d cld
EOF_CASES

# --pin: a CPU that does not exist (99 where fewer CPUs are installed, else
# 4096, past any affinity mask) is refused, for the initiator and the target
cpu=$(sed -nE 's/^Cpus_allowed_list:[[:space:]]*([0-9]+).*/\1/p' /proc/self/status)
out_cpu=99
[ "$(nproc --all)" -lt 100 ] || out_cpu=4096
expect 2 "" "invalid CPU pair '$cpu,$out_cpu': CPU $out_cpu is not one this process may run on" -- \
    "$perf" --pin "$cpu,$out_cpu"
expect 2 "" "invalid CPU pair '$out_cpu,$cpu': CPU $out_cpu is not one this process may run on" -- \
    "$perf" --pin "$out_cpu,$cpu"

echo "=== fiatomic_perftest: count 5000 (above the default max_count) ==="
expect 0 "^Final: +20 " "" -- env UCX_TLS=posix "$perf" -c 5000 -n 20 -w 2 --verify
grep -q "verified against fiatomic_ref: ok" "$tmp/out" && ok ||
    bad "-c 5000 --verify: no 'verified ... ok' line"

echo "=== fiatomic_info: full datatype names, table and CSV agree ==="
expect 0 "^LONG_DOUBLE_COMPLEX " "" -- env UCX_TLS=posix "$info"
cp "$tmp/out" "$tmp/table"
for dt in DOUBLE DOUBLE_COMPLEX LONG_DOUBLE FLOAT_COMPLEX INT128 UINT128; do
    [ "$(grep -cE "^$dt +" "$tmp/table")" -eq 3 ] && ok ||
        bad "table: not one $dt row per family"
done
table_cells=$(grep -E '^[A-Z0-9_]+ +[NCDTx.]' "$tmp/table" |
              awk '{for (i = 2; i <= NF; ++i) if ($i != ".") ++n} END {print n + 0}')
expect 0 "^family,op,datatype," "" -- env UCX_TLS=posix "$info" --csv
csv_cells=$(tail -n +2 "$tmp/out" | wc -l)
csv_supported=$(tail -n +2 "$tmp/out" | awk -F, '$4 == 1' | wc -l)
summary=$(sed -n 's/^\([0-9]*\) supported cells.*/\1/p' "$tmp/table")
[ "$table_cells" -eq "$csv_cells" ] && [ "$csv_cells" -eq 414 ] && ok ||
    bad "table shows $table_cells cells, CSV $csv_cells, fi_atomic(3) has 414"
[ "$summary" = "$csv_supported" ] && ok ||
    bad "table says $summary supported, CSV $csv_supported"
# fiatomic_atomic(3): FI_ATOMIC_READ is a cell of the fetch family only
awk -F, '$2 == "FI_ATOMIC_READ" {print $1}' "$tmp/out" | sort -u | tr '\n' ' ' |
    grep -qx 'fetch ' && ok ||
    bad "FI_ATOMIC_READ is listed in families: $(awk -F, '$2 == "FI_ATOMIC_READ" {print $1}' "$tmp/out" | sort -u | tr '\n' ' ')"

echo "=== FIATOMIC_* values: exactly the spellings fiatomic(3) lists ==="
# fiatomic_create() refuses any other value (another case, 1/0 included)
# with a message naming the variable and the value; fiatomic_info then fails
for bad_value in NATIVE Auto 1 0 "cas "; do
    expect 1 "" "invalid FIATOMIC_STRATEGY '$bad_value'" -- \
        env UCX_TLS=posix FIATOMIC_STRATEGY="$bad_value" "$info" --csv
done
for bad_value in YES No 1 0; do
    expect 1 "" "invalid FIATOMIC_CAS_HANDOFF '$bad_value'" -- \
        env UCX_TLS=posix FIATOMIC_CAS_HANDOFF="$bad_value" "$info" --csv
done
expect 0 "^fetch,FI_SUM,FI_UINT64,1,cas,0$" "" -- \
    env UCX_TLS=posix FIATOMIC_STRATEGY=cas "$info" --csv
expect 0 "^fetch,FI_SUM,FI_UINT64,1,direct,0$" "" -- \
    env UCX_TLS=posix FIATOMIC_CAS_HANDOFF=no "$info" --csv

echo "=== fiatomic_info --csv: stdout is the CSV alone, whatever UCX logs ==="
# UCX logs to stdout by default; with UCX_TLS=atomicx,tcp where atomicx is
# not loaded or has no device, UCX and libfiatomic warn while the tool runs:
# the warnings go to stderr, the CSV alone to stdout
expect 0 "" "UCX +WARN" -- env UCX_TLS=atomicx,tcp "$info" --csv
awk 'NR == 1 {ok = ($0 == "family,op,datatype,supported,strategy,needs_target_progress"); next}
     !/^(base|fetch|compare),FI_[A-Z_]+,FI_[A-Z0-9_]+,[01],[a-z]+,[01]$/ {ok = 0}
     END {exit !(ok && NR > 1)}' "$tmp/out" && ok ||
    bad "UCX_TLS=atomicx,tcp fiatomic_info --csv: stdout is not the CSV alone: $(grep -vE '^(base|fetch|compare),' "$tmp/out" | head -3)"

echo "=== fiatomic_perftest --baseline libfabric: from the transport UCP uses ==="
# UCX_TLS unset: UCP picks shared memory between two local processes, and
# the baseline is libfabric's shm (README's first example)
if "$perf" --baseline libfabric -n 1 -w 0 --help > /dev/null 2>&1; then
    expect 0 "^Final \(ofi\):" "" -- env -u UCX_TLS "$perf" -f fetch -o sum \
        -d u64 -n 2000 -w 200 --baseline ucp --baseline libfabric
    grep -qE "^  fiatomic / libfabric +typical latency x" "$tmp/out" && ok ||
        bad "UCX_TLS unset: no fiatomic / libfabric ratio line"
    # UCX_TLS=sm names no transport: the provider follows the lane UCP chose
    expect 0 "^Final \(ofi\):" "" -- env UCX_TLS=sm "$perf" -f fetch -o sum \
        -d u64 -n 2000 -w 200 --baseline libfabric
    expect 0 "^Final \(ofi\):" "" -- env UCX_TLS=tcp "$perf" -f fetch -o sum \
        -d u64 -n 200 -w 20 --baseline libfabric
    # a cell the provider has no atomic for (libfabric has no 128-bit
    # integers): a line names the provider and says why, and no ofi row
    for tl in posix:shm tcp:"tcp;ofi_rxm"; do
        expect 0 "^  \(no libfabric ${tl#*:} equivalent for this cell\)$" "" -- \
            env UCX_TLS="${tl%%:*}" "$perf" -f fetch -o sum -d i128 -n 10 -w 0 \
            --baseline libfabric
        ! grep -q "^Final (ofi)" "$test_tmp/out" && ok ||
            bad "UCX_TLS=${tl%%:*} -d i128 --baseline libfabric: an ofi row"
    done
else
    echo "  (built without libfabric: --baseline libfabric not available)"
fi

echo "=== fiatomic_perftest: progress lines, rate = 1e6 / overall ==="
# posix, direct: 0.02-1 us a call, so 2000000 calls take 0.04 s or more:
# progress lines every 0.01 s (the default interval is a second)
interval=0.01
expect 0 "^Final:" "fiatomic fetch SUM UINT64: [0-9]+/2000000 calls, overall" -- \
    env UCX_TLS=posix "$perf" -n 2000000 --report-interval $interval
lines=$(grep -c "calls, overall" "$tmp/err")
read -r iters overall rate <<< "$(awk '/^Final:/ {print $2, $5, $9}' "$tmp/out")"
echo "  $lines progress lines; $iters calls, overall $overall us, $rate calls/s"
# overall is printed to 0.001 us: at a 0.03 us call that rounding alone is
# 1.7 %, so the rate must lie between 1e6 / (overall +- 0.0005), within 1 %
awk -v o="$overall" -v r="$rate" 'BEGIN {lo = 1e6 / (o + 0.0005);
                                   hi = (o > 0.0005) ? 1e6 / (o - 0.0005) : 1e30;
                                   exit !(r >= 0.99 * lo - 1 && r <= 1.01 * hi + 1)}' && ok ||
    bad "rate $rate calls/s is not 1e6 / overall latency $overall us"
max=$(awk -v i="$iters" -v o="$overall" -v t=$interval \
      'BEGIN {printf "%d", i * o / 1e6 / t + 1}')
[ "$lines" -ge 1 ] && [ "$lines" -le "$max" ] && ok ||
    bad "$lines progress lines, expected 1 to $max"
expect 0 "^Final:" "" -- env UCX_TLS=posix "$perf" -n 200000 --report-interval 0
[ ! -s "$tmp/err" ] && ok || bad "--report-interval 0 still printed: $(head -2 "$tmp/err")"
expect 2 "" "invalid report interval '-1'" -- "$perf" --report-interval -1

echo "=== fiatomic_info -c: every FIATOMIC_* setting, default, value ==="
# the variables fiatomic(3) documents are those listed, each with a meaning,
# syntax and default; the defaults are the documented ones and the values
# follow the environment (an invalid one shown as it is); libfiatomic reads
# no FIATOMIC_* variable outside the table the list comes from.
src=${top_srcdir:?}
value()   { grep -E "^$1=" "$2" | cut -d= -f2-; }
default() { awk -v v="$1" '/^# default: /{d = $3} $0 ~ "^" v "=" {print d}' "$2"; }
expect 0 "^FIATOMIC_STRATEGY=auto$" "" -- env -u FIATOMIC_STRATEGY \
    -u FIATOMIC_OP_TIMEOUT "$info" -c
cp "$tmp/out" "$tmp/config"
[ -s "$tmp/err" ] && bad "fiatomic_info -c wrote to stderr: $(head -2 "$tmp/err")"
expect 0 "^FIATOMIC_STRATEGY=" "" -- env -u FIATOMIC_STRATEGY \
    -u FIATOMIC_OP_TIMEOUT "$info" --config
cmp -s "$tmp/out" "$tmp/config" && ok || bad "--config differs from -c"
sed -n '/^\.SH ENVIRONMENT/,/^\.SH [^E]/p' "$src/man/fiatomic.3" |
    grep -oE '^\.B FIATOMIC_[A-Z_]+' | sed 's/^\.B //' | sort -u > "$tmp/documented"
grep -oE '^FIATOMIC_[A-Z_]+=' "$tmp/config" | tr -d = | sort > "$tmp/listed"
[ -s "$tmp/documented" ] && diff "$tmp/documented" "$tmp/listed" > "$tmp/diff" &&
    [ "$(sort -u "$tmp/listed" | wc -l)" -eq "$(wc -l < "$tmp/listed")" ] && ok ||
    bad "fiatomic(3) ENVIRONMENT (<) and fiatomic_info -c (>) differ: $(tr '\n' ' ' < "$tmp/diff")"
awk '/^# syntax: / {syn = 1; next} /^# default: / {def = 1; next}
     /^# ./ {doc++; next}
     /^FIATOMIC_[A-Z_]+=/ {if (!syn || !def || !doc) {print; bad = 1}
                           syn = def = doc = 0; n++}
     END {exit (bad || n == 0)}' "$tmp/config" && ok ||
    bad "an entry lacks its meaning, syntax or default"
hdr_default=$(sed -nE 's/^#define FIATOMIC_OP_TIMEOUT_DEFAULT +([0-9.]+).*/\1/p' \
              "$src/src/fiatomic/fiatomic.h")
[ -n "$hdr_default" ] && [ "$(default FIATOMIC_OP_TIMEOUT "$tmp/config")" = "$hdr_default" ] &&
    [ "$(value FIATOMIC_OP_TIMEOUT "$tmp/config")" = "$hdr_default" ] && ok ||
    bad "FIATOMIC_OP_TIMEOUT's default is not FIATOMIC_OP_TIMEOUT_DEFAULT ($hdr_default)"
expect 0 "^FIATOMIC_STRATEGY=cas$" "" -- env FIATOMIC_STRATEGY=cas \
    FIATOMIC_OP_TIMEOUT=500ms "$info" -c
[ "$(value FIATOMIC_OP_TIMEOUT "$tmp/out")" = 500ms ] &&
    [ "$(default FIATOMIC_STRATEGY "$tmp/out")" = auto ] && ok ||
    bad "FIATOMIC_OP_TIMEOUT=500ms not shown, or the default changed with the value"
expect 0 "^FIATOMIC_STRATEGY=bogus$" "" -- env FIATOMIC_STRATEGY=bogus "$info" -c
expect 0 "^FIATOMIC_STRATEGY=auto$" "" -- env FIATOMIC_STRATEGY= "$info" -c
expect 2 "" "--config takes no other option" -- "$info" -c --csv
others=$(grep -lE 'getenv|"FIATOMIC_[A-Z_]+"' "$src"/src/fiatomic/*/*.c |
         grep -vE '/fiatomic_config\.c$' |
         xargs -r grep -nE 'getenv\("FIATOMIC_|getenv\([a-z_]+\)|"FIATOMIC_[A-Z_]+"')
[ -z "$others" ] && ok || bad "FIATOMIC_* read outside fiatomic_config.c: $others"

test_end
