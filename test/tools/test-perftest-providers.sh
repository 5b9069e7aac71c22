#!/bin/bash
# fiatomic_perftest --providers: several libfabric providers, named, timed
# side by side with libfiatomic in one run, each on memory the target
# process allocated and registered itself.
#  - single cell: a "Final (<provider>):" line with figures and a ratio line
#    for each provider named, in the order named; a cell a provider lacks
#    (long double complex: libfabric's util atomics stop before it) is
#    reported as such, not timed;
#  - CSV: a pair of columns per provider, named after it, and the row as
#    wide as the header, with figures of each provider;
#  - a provider name libfabric does not know fails the run (exit 1, named),
#    and a malformed list is refused (exit 2);
#  - this project's provider, loaded through FI_PROVIDER_PATH from the build
#    tree, is timed too once it advertises FI_ATOMIC (else the reason is
#    printed and that part is not run), and its goals (prov-*) are each
#    measured and reported in the goals' format (tiny counts: the format
#    and the cells, never the timing).
# Needs libfabric's shm and tcp;ofi_rxm providers (Debian's libfabric1).
set -u
# shellcheck source-path=SCRIPTDIR source=perftest-test-common.sh
. "$(dirname "$0")/perftest-test-common.sh"
tmp=$perftest_tmp
fail=0
checks=0
ok()  { checks=$((checks + 1)); }
bad() { checks=$((checks + 1)); echo "FAIL: $*"; fail=1; }

if ! "$perftest" --providers shm --help > /dev/null 2>&1; then
    echo "SKIP: fiatomic_perftest built without libfabric"
    exit 77
fi
# FI_PROVIDER would hide every provider but the one it names
unset FI_PROVIDER
for p in shm "tcp;ofi_rxm"; do
    if ! fi_info -p "$p" -c FI_ATOMIC -t FI_EP_RDM > /dev/null 2>&1; then
        echo "SKIP: libfabric has no '$p' provider with FI_ATOMIC here"
        exit 77
    fi
done

# run <file> <args...>: exit status in $rc, stdout+stderr in <file>
run() {
    local out=$1
    shift
    timeout 120 "$perftest" --report-interval 0 "$@" > "$out" 2>&1
    rc=$?
    if perftest_ucx_trouble "$out"; then
        bad "$*: UCX trouble"; grep -E 'UCX|Segm|Assert|lost' "$out" | head -5
    fi
}

# a "Final (<p>):" line whose typical latency is a positive number
has_final() {
    awk -v stage="Final ($2):" 'index($0, stage) == 1 {
            sub(/^Final \([^)]*\): */, ""); if ($2 + 0 > 0) found = 1 }
        END {exit !found}' "$1"
}

echo "=== single cell, shm then tcp;ofi_rxm, UCX_TLS=posix ==="
UCX_TLS=posix run "$tmp/single" -f fetch -o sum -d u64 -n 200 -w 20 \
    --providers "shm,tcp;ofi_rxm"
if [ "$rc" -ne 0 ]; then
    bad "--providers shm,tcp;ofi_rxm: exit $rc"; head -20 "$tmp/single"
else
    for p in shm "tcp;ofi_rxm"; do
        has_final "$tmp/single" "$p" && ok ||
            bad "no 'Final ($p):' line with figures"
        grep -qE "^  fiatomic / $p +typical latency x[0-9.]+" "$tmp/single" &&
            ok || bad "no 'fiatomic / $p' ratio line"
    done
    # in the order named
    [ "$(grep -oE '^Final \((shm|tcp;ofi_rxm)\)' "$tmp/single" | tr '\n' ' ')" = \
      "Final (shm) Final (tcp;ofi_rxm) " ] && ok ||
        bad "the providers' lines are not in the order named"
    grep -q "^Final (ofi):" "$tmp/single" &&
        bad "named providers reported as the transport's (ofi)" || ok
fi

echo "=== a cell the providers lack: long double complex ==="
UCX_TLS=posix run "$tmp/cld" -f base -o sum -d cld -n 100 -w 10 \
    --providers "shm,tcp;ofi_rxm"
if [ "$rc" -ne 0 ]; then
    bad "base SUM cld: exit $rc"; head -20 "$tmp/cld"
else
    grep -q "^Final:" "$tmp/cld" && ok || bad "base SUM cld: no Final: line"
    for p in shm "tcp;ofi_rxm"; do
        grep -qF "  (no libfabric $p equivalent for this cell)" "$tmp/cld" &&
            ok || bad "base SUM cld: $p not reported as lacking the cell"
        has_final "$tmp/cld" "$p" && bad "base SUM cld: $p timed" || ok
    done
fi

echo "=== CSV: a pair of columns per provider ==="
# (one cell: a matrix would take minutes, tcp;ofi_rxm's target and the
# initiator both spin on a loaded machine)
UCX_TLS=posix run "$tmp/csv" -f fetch -o sum -d u64 -n 200 -w 20 --csv \
    --providers "shm,tcp;ofi_rxm"
if [ "$rc" -ne 0 ]; then
    bad "--csv: exit $rc"; head -20 "$tmp/csv"
else
    head=$(grep -m1 '^transport,' "$tmp/csv")
    case $head in
        *,ucp_typical_us,x_ucp,shm_typical_us,x_shm,"tcp;ofi_rxm_typical_us",x_tcp\;ofi_rxm)
            ok ;;
        *) bad "CSV header: $head" ;;
    esac
    # the row as wide as the header, with figures of both providers
    awk -F, -v n="$(echo "$head" | awk -F, '{print NF}')" \
        '$1 == "posix" {rows++; if (NF != n) bad = 1}
         END {exit bad || rows != 1}' "$tmp/csv" && ok ||
        bad "CSV: not one row as wide as the header"
    awk -F, '$1 == "posix" && $2 == "fetch" && $3 == "FI_SUM" &&
             $4 == "FI_UINT64" && $19 + 0 > 0 && $20 + 0 > 0 &&
             $21 + 0 > 0 && $22 + 0 > 0 {found = 1}
             END {exit !found}' "$tmp/csv" && ok ||
        bad "CSV: fetch SUM UINT64 has no shm and tcp;ofi_rxm figures"
fi

echo "=== a provider libfabric does not know, a malformed list ==="
UCX_TLS=posix run "$tmp/nosuch" -n 100 -w 10 --providers "shm,nosuchprovider"
[ "$rc" -eq 1 ] && grep -q "libfabric provider 'nosuchprovider' cannot be opened" \
    "$tmp/nosuch" && ok || { bad "unknown provider: exit $rc"; head -5 "$tmp/nosuch"; }
for list in "shm,,tcp" ",shm" "a,b,c,d,e"; do
    timeout 20 "$perftest" --providers "$list" > "$tmp/err" 2>&1
    rc=$?
    [ "$rc" -eq 2 ] && grep -qF "invalid provider list '$list'" "$tmp/err" && ok ||
        bad "--providers '$list': exit $rc, $(head -1 "$tmp/err")"
done

echo "=== this project's provider through FI_PROVIDER_PATH ==="
provdir=$(cd "$(dirname "$perftest")/../prov/fiatomic/.libs" 2>/dev/null && pwd)
if [ -z "$provdir" ] || [ ! -f "$provdir/libfiatomic-fi.so" ]; then
    echo "  (not run: libfiatomic-fi.so is not built next to $perftest)"
else
    # fi_info is not instrumented: in a sanitizer build the provider needs
    # the ASan runtime loaded first (an instrumented library dlopen'ed into
    # an uninstrumented process hangs in the runtime's start-up)
    asan=$(ldd "$provdir/libfiatomic-fi.so" | awk '/libasan\.so/ {print $3}')
    env FI_PROVIDER_PATH="$provdir" \
        ${asan:+LD_PRELOAD=$asan ASAN_OPTIONS=detect_leaks=0} \
        timeout 30 fi_info -p fiatomic -c FI_ATOMIC -t FI_EP_RDM \
        > /dev/null 2>&1 && ok ||
        bad "fi_info -p fiatomic: no FI_ATOMIC on an FI_EP_RDM endpoint"
    # over posix alone the provider connects by its domains' published
    # worker addresses (fi_fiatomic(7))
    FI_PROVIDER_PATH=$provdir UCX_TLS=posix run "$tmp/fip" -f fetch -o sum \
        -d u64 -n 200 -w 20 --providers "fiatomic,shm"
    [ "$rc" -eq 0 ] && has_final "$tmp/fip" fiatomic && has_final "$tmp/fip" shm &&
        ok || { bad "--providers fiatomic,shm: exit $rc"; head -20 "$tmp/fip"; }

    echo "=== the provider's goals, tiny counts (the output, not the timing) ==="
    # -n 50: 10 calls a measurement; what is judged here is that each goal
    # is measured and reported, never whether it is met
    goals=prov-speedup-vs-ofi-shm,prov-speedup-vs-ofi-tcp,prov-only-cells-vs-prov-fadd
    FI_PROVIDER_PATH=$provdir run "$tmp/pgoals" --goal "$goals" \
        --transports posix,tcp -n 50
    [ "$rc" -eq 0 ] && ok || { bad "--goal $goals: exit $rc"; tail -20 "$tmp/pgoals"; }
    # "GOAL <name> <tl> <what> x<value> (<op> <limit>) MET|NOT MET <detail>"
    for pair in prov-speedup-vs-ofi-shm:posix:">=":2 \
                prov-only-cells-vs-prov-fadd:posix:"<=":2 \
                prov-speedup-vs-ofi-tcp:tcp:">=":1 \
                prov-only-cells-vs-prov-fadd:tcp:"<=":2; do
        IFS=: read -r name tl op limit <<< "$pair"
        awk -v name="$name" -v tl="$tl" -v lim="($op $limit)" '
            $1 == "GOAL" && $2 == name && $3 == tl &&
            match($0, / x[0-9.e+-]+ +\(/) && index($0, lim) &&
            match($0, /\) (MET|NOT MET) +worst [a-z]+ [A-Z_0-9]+ [A-Z_0-9]+; mean x[0-9.]+; [0-9]+\/[1-9][0-9]* cells miss$/) {
                found = 1 }
            END {exit !found}' "$tmp/pgoals" && ok ||
            bad "no '$name' goal line over $tl with a value, $op $limit, a verdict and its cells"
    done
    # the cells only the provider has are those libfabric's util atomics
    # lack: long double, long double complex, 128-bit integers among them
    grep -E '^GOAL prov-only-cells-vs-prov-fadd +posix ' "$tmp/pgoals" |
        grep -qE '/(5[0-9]|[6-9][0-9]|1[0-9][0-9]) cells miss$' && ok ||
        bad "prov-only-cells-vs-prov-fadd: not the ~100 cells libfabric lacks"
    # the summary table has each of them, and the count line
    for name in prov-speedup-vs-ofi-shm prov-speedup-vs-ofi-tcp; do
        grep -qE "^$name +(posix|tcp) " "$tmp/pgoals" && ok ||
            bad "summary: no $name row"
    done
    grep -qE '^GOALS: [0-9]+ of 4 MET$' "$tmp/pgoals" && ok ||
        bad "summary: no 'GOALS: n of 4 MET' line"
fi

[ $fail -eq 0 ] && echo "PASS: $checks checks"
exit $fail
