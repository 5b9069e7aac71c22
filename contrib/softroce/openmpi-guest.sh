#!/bin/bash
# Open MPI's OpenSHMEM and MPI one-sided atomics over the atomicx transport
# on soft-RoCE rxe0, inside the qemu guest, with tcp as the reference.
#
#   contrib/softroce/openmpi-guest.sh <build-dir>            the checks
#   contrib/softroce/openmpi-guest.sh <build-dir> --bench [--write-doc FILE]
#                                       the latency table (and FILE's copy)
#
# On the host: compiles the project's own programs test/runtime/*.c with
# Debian's oshcc / mpicc (openmpi-bin, libopenmpi-dev: contrib/install-deps.sh
# installs them) into <build-dir>/test/runtime, then boots the guest
# (run-in-guest.sh) and runs this script in it.
#
# In the guest, with UCX_TLS=atomicx,tcp and then UCX_TLS=tcp, one launch
# per program (a launch costs tens of seconds under TCG):
#   shmem_atomics        4 PEs: every OpenSHMEM 1.4 atomic on every type,
#                        quiet/fence/barrier, contention of PEs 0-1 then of
#                        all 4, locks, bursts; then the 4-byte compare-swaps,
#                        which Open MPI 4.1.4 itself breaks (see the
#                        program): that crash is reported as not passed
#                        (the run counts for the rest, checked before it);
#   mpi_window_atomics   4 ranks: passive-target window atomics, ordering,
#                        exclusive locks, dynamic windows.
# Then README's and atomicx(7)'s Open MPI command lines as written
# (test/tools/doc-examples.txt's "openmpi-guest.sh" lines; the library path
# they name is this build's, ./shmem_app and ./mpi_app are these programs
# with the iterations above), what running as root on 2 CPUs needs given
# by the environment (OMPI_ALLOW_RUN_AS_ROOT, OMPI_MCA_*), never on the
# command line (ATOMICX_OPENMPI_TLS=" " runs only these).
# A run passes when its program reports 0 failed checks, every UCP endpoint
# configuration with atomics has its AMO lane where it must be (atomicx over
# atomicx,tcp; UCP's emulation over tcp), and contrib/ucx-log-check.sh finds
# no UCX ERROR or WARN line that contrib/ucx-log-expected.txt does not list.
#
# Environment: ATOMICX_OPENMPI_TLS (transports, "atomicx,tcp tcp"),
# ATOMICX_OPENMPI_TIMEOUT (seconds per run, 240), ATOMICX_OPENMPI_ITERS
# (contention iterations, 10), ATOMICX_OPENMPI_BURSTS (burst rounds, 2),
# ATOMICX_OPENMPI_MPI_ITERS (MPI iterations, 3), ATOMICX_OPENMPI_BENCH_ITERS
# (--bench operations per latency, 300).
#
# The Open MPI parameters (Debian's 4.1.4 uses its UCX components only on
# mlx* devices unless told otherwise) are in ompi_params below; README.md
# shows them as a user types them.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
me=openmpi-guest

usage() {
    echo "usage: $0 <build-dir> [--bench [--write-doc FILE]]" >&2
    exit 2
}

# latency_table <dir>: the markdown table from the --bench logs in <dir>
latency_table() {
    local dir=$1 n tls prog op med mean f
    declare -A lat=()
    n=$(cat "$dir/openmpi-bench-iters" 2>/dev/null) || { echo "$me: no bench results in $dir" >&2; return 1; }
    for tls in atomicx+tcp tcp; do
        for prog in shmem_atomics mpi_window_atomics; do
            f="$dir/openmpi-$prog-bench-np2-$tls.log"
            [ -f "$f" ] || continue
            while read -r op med mean; do
                [ -n "$op" ] && lat[$op,$tls]="$med / $mean"
            done <<<"$(sed -nE 's/^bench: ([^:]+): median ([0-9.]+) us, mean ([0-9.]+) us.*/\1 \2 \3/p' "$f")"
        done
    done
    echo "| operation (2 processes, one guest) | atomicx,tcp: median / mean µs | tcp: median / mean µs |"
    echo "|---|---:|---:|"
    for op in shmem_long_atomic_fetch_add shmem_int_atomic_fetch_add \
              shmem_long_atomic_compare_swap MPI_Fetch_and_op MPI_Compare_and_swap; do
        echo "| \`$op\` | ${lat[$op,atomicx+tcp]:-n/a} | ${lat[$op,tcp]:-n/a} |"
    done
    echo
    echo "Measured by \`contrib/softroce/openmpi-guest.sh <build> --bench\` on $(date -u +%Y-%m-%d)" \
         "($n operations each after a warm-up, the target process idle in a barrier; qemu TCG, 2 vCPUs," \
         "host load average $(cut -d' ' -f1 /proc/loadavg) on 2 cores)."
}

# ---- Host side ------------------------------------------------------------
if [ "${1:-}" != "--in-guest" ]; then
    [ $# -ge 1 ] || usage
    build=$(cd "$1" && pwd) || usage
    shift
    mode=check doc=
    while [ $# -gt 0 ]; do
        case $1 in
        --bench) mode=bench ;;
        --write-doc) [ $# -ge 2 ] || usage; doc=$(realpath "$2") || usage; shift ;;
        *) usage ;;
        esac
        shift
    done
    [ -z "$doc" ] || [ "$mode" = bench ] || usage
    for tool in oshcc mpicc oshrun mpirun; do
        command -v "$tool" >/dev/null ||
            { echo "$me: $tool missing (contrib/install-deps.sh installs openmpi-bin, libopenmpi-dev)" >&2; exit 1; }
    done
    # Debian's Open MPI runs on the system's UCX: an atomicx built against
    # another UCX (configure --with-ucx) cannot be loaded into its processes.
    ucx_prefix='' ucx_version=''
    eval "$("$here/ucx-of-build.sh" "$build")" || exit 1
    if [ -n "$ucx_prefix" ]; then
        echo "$me: SKIPPED: this build's atomicx is built against UCX $ucx_version" \
             "in $ucx_prefix; Debian's Open MPI uses the system's UCX"
        exit 0
    fi
    lib=$build/src/uct/atomicx/.libs/libuct_atomicx.so.0
    [ -e "$lib" ] || { echo "$me: $lib missing (build first)" >&2; exit 1; }
    mkdir -p "$build/test/runtime"
    flags=(-O2 -g -std=c11 -Wall -Wextra -Werror)
    if ! oshcc "${flags[@]}" -o "$build/test/runtime/shmem_atomics" "$top/test/runtime/shmem_atomics.c" ||
       ! mpicc "${flags[@]}" -o "$build/test/runtime/mpi_window_atomics" "$top/test/runtime/mpi_window_atomics.c"; then
        echo "$me: compiling test/runtime failed" >&2
        exit 1
    fi
    if [ "$mode" = check ]; then
        exec "$here/run-in-guest.sh" "${BASH_SOURCE[0]}" --in-guest "$build" check
    fi
    out=${ATOMICX_GUEST_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/$me.XXXXXX")}
    ATOMICX_GUEST_OUT=$out "$here/run-in-guest.sh" "${BASH_SOURCE[0]}" --in-guest "$build" bench || exit
    latency_table "$out" >"$out/openmpi-latency.md" || exit
    cat "$out/openmpi-latency.md"
    if [ -n "$doc" ]; then
        # Replace what lies between the two markers in FILE.
        begin='<!-- openmpi-latency:begin -->' end='<!-- openmpi-latency:end -->'
        if ! grep -qF "$begin" "$doc" || ! grep -qF "$end" "$doc"; then
            echo "$me: $doc has no $begin / $end markers" >&2
            exit 1
        fi
        awk -v b="$begin" -v e="$end" -v t="$out/openmpi-latency.md" '
            $0 == b { print; while ((getline l < t) > 0) print l; skip = 1; next }
            $0 == e { skip = 0 }
            !skip' "$doc" >"$doc.new" && mv "$doc.new" "$doc"
        echo "$me: table written into $doc"
    fi
    exit 0
fi

# ---- In the guest ---------------------------------------------------------
build=$2 mode=$3
lib=$build/src/uct/atomicx/.libs/libuct_atomicx.so.0
bin=$build/test/runtime
out=${ATOMICX_GUEST_OUT:-/tmp}
run_timeout=${ATOMICX_OPENMPI_TIMEOUT:-240}
read -r -a transports <<<"${ATOMICX_OPENMPI_TLS:-atomicx,tcp tcp}"

# What Open MPI 4.1.4 needs here (all documented in README.md):
#  - opal_common_ucx_tls/devices any: its UCX components (pml, osc, spml,
#    atomic) otherwise give up on any device that is not mlx*;
#  - pml/osc ucx for MPI, spml/atomic ucx for OpenSHMEM: the components that
#    call UCP's atomics;
#  - btl self: no BTL on rxe0 (openib would probe it and warn); pml ucx
#    carries the messages;
#  - as root in the guest --allow-run-as-root; 4 processes on 2 CPUs
#    --oversubscribe, and --bind-to none;
#  - mpi_yield_when_idle 1: a process waiting for a flush yields its CPU;
#    with 2 processes on 2 busy CPUs Open MPI would spin, and over tcp
#    (whose atomics need the target's CPU) one operation then waits for
#    the scheduler: 10x slower on the host;
#  - the run-time (ORTE/PMIx) talks over lo: the guest has lo and dummy0.
ompi_params=(
    --allow-run-as-root --oversubscribe --bind-to none
    --mca opal_common_ucx_tls any --mca opal_common_ucx_devices any
    --mca pml ucx --mca osc ucx --mca spml ucx --mca atomic ucx
    --mca btl self --mca mpi_yield_when_idle 1
    --mca oob_tcp_if_include lo
)

# UCX ERROR / WARN lines: judged by contrib/ucx-log-check.sh against
# contrib/ucx-log-expected.txt (the "openmpi-guest: ..." entries, with their
# reasons), each run's log as the section "openmpi-guest: <program> np<N>
# <UCX_TLS>".
failed=() passed=() known=()
# log_check <section> <log>: 0 when every UCX ERROR/WARN line is expected
log_check() {
    { echo "=== $1 ==="; cat "$2"; } |
        "$here/../ucx-log-check.sh" --label "$me" | sed 's/^/'"$me"': /'
}

# lane_check <tls> <log> <processes>: the AMO lanes UCP printed (ep_cfg
# lines of UCX_LOG_LEVEL=info) are atomicx / UCP's emulation over tcp.
lane_check() {
    local tls=$1 log=$2 np=$3 amo_lines bad
    amo_lines=$(grep -E 'UCX  INFO +ep_cfg\[[0-9]+\]:.*amo' "$log")
    if [ -z "$amo_lines" ]; then
        echo "$me: no ep_cfg line with an AMO lane"
        return 1
    fi
    case $tls in
    atomicx,tcp)
        bad=$(grep -vE 'amo\(atomicx/rxe0:1\)' <<<"$amo_lines")
        # Every process printed at least one AMO configuration on atomicx.
        local procs
        procs=$(grep -oE '\[[^] ]+:[0-9]+ *:[0-9]+\] +ucp_worker' <<<"$amo_lines" |
            sed -E 's/^\[[^:]+:([0-9]+).*/\1/' | sort -u | wc -l)
        if [ "$procs" -lt "$np" ]; then
            echo "$me: only $procs of $np processes printed an AMO lane on atomicx"
            return 1
        fi ;;
    tcp) bad=$(grep -vE 'amo_am\(tcp/' <<<"$amo_lines") ;;
    esac
    if [ -n "$bad" ]; then
        echo "$me: AMO lane not on the expected transport for UCX_TLS=$tls:"
        echo "$bad"
        return 1
    fi
    echo "$me: AMO lanes: $(grep -oE 'amo(_am)?\([^)]*\)' <<<"$amo_lines" | sort | uniq -c | tr -s ' \n' ' ')"
}

# time_split <log> <launch epoch> <end epoch>: where a run's time went, from
# the program's "timeline" lines (rank / PE 0, wall clock)
time_split() {
    awk -v t0="$2" -v t1="$3" '
        / timeline: main [0-9.]+$/        { m = $NF }
        / timeline: initialized [0-9.]+$/ { i = $NF }
        / timeline: checks done [0-9.]+$/ { d = $NF }
        END {
            if (m == "" || i == "" || d == "") exit
            printf "launch %.0f s, init %.0f s, checks %.0f s, then %.0f s to exit\n",
                   m - t0, i - m, d - i, t1 - d
        }' "$1"
}

# run <name> <tls> <np> <expect: pass|then-cswap32> <launcher> <program args...>
run() {
    local name=$1 tls=$2 np=$3 expect=$4 launcher=$5
    shift 5
    local log="$out/openmpi-$name-np$np-${tls/,/+}.log" rc t0 verdict="" summary ok=ok
    local env=(-x "UCX_TLS=$tls" -x UCX_LOG_LEVEL=info)
    # The programs' symmetric data are static: a small symmetric heap
    # (default 256 MB, allocated and registered in shmem_init) makes
    # OpenSHMEM's start-up shorter (by a third on the host).
    [ "$launcher" != oshrun ] || env+=(-x SHMEM_SYMMETRIC_SIZE=16M)
    [ "$tls" = tcp ] || env+=(-x "LD_PRELOAD=$lib")
    echo
    echo "=== $me: $name, $np processes, UCX_TLS=$tls ==="
    t0=$(date +%s) t0w=$(date +%s.%N)
    if [ "$launcher" = docs ]; then
        # the document's line in $docs_line, run from $docs_dir; ompi_params
        # and env above as the environment (local processes inherit it)
        (cd "$docs_dir" && env "${docs_env[@]}" UCX_LOG_LEVEL=info \
            SHMEM_SYMMETRIC_SIZE=16M bash -c "$docs_line") </dev/null >"$log" 2>&1 &
    else
        "$launcher" "${ompi_params[@]}" -np "$np" "${env[@]}" "$@" </dev/null >"$log" 2>&1 &
    fi
    local lpid=$! p
    while kill -0 "$lpid" 2>/dev/null; do
        if [ $(($(date +%s) - t0)) -ge "$run_timeout" ]; then
            # Open MPI's handler prints each stuck process's stack on SIGABRT.
            echo "$me: $name did not finish within ${run_timeout}s; stacks in the log"
            for p in $(pgrep -x "$(basename "$1")"); do kill -ABRT "$p"; done
            sleep 20
            kill "$lpid" 2>/dev/null
            sleep 5
            kill -KILL "$lpid" 2>/dev/null
            break
        fi
        sleep 1
    done
    wait "$lpid"
    rc=$?
    local split
    split=$(time_split "$log" "$t0w" "$(date +%s.%N)")
    [ $(($(date +%s) - t0)) -lt "$run_timeout" ] || rc=124
    grep -vE 'UCX  (INFO|DIAG)' "$log" | grep -vE '^\[[^]]+\] \*\*\*|^\[[^]]+\] \[ *[0-9]+\]' | tail -n 20
    summary=$(grep -E '^(shmem_atomics|mpi_window_atomics): .* checks, [0-9]+ failed$' "$log" | head -n 1)
    if [ $rc -eq 124 ]; then
        verdict="timed out after ${run_timeout}s"
    elif [[ $summary != *", 0 failed" ]]; then
        verdict="exit $rc, no clean summary line"
    elif [ "$expect" = then-cswap32 ]; then
        # Open MPI 4.1.4 smashes its own stack; a fixed Open MPI passes.
        if [ $rc -eq 0 ] && grep -qE '^shmem_atomics: 4-byte compare-swap, .*, 0 failed$' "$log"; then
            echo "$me: the 4-byte compare-swaps passed (this Open MPI has the fix)"
        elif grep -q 'stack smashing detected' "$log"; then
            echo "$me: 4-byte compare-swaps NOT passed: the known Open MPI 4.1.4 defect (stack smashing in its 4-byte compare-swap) reproduced"
            known+=("$tls")
            ok="ok but for the 4-byte compare-swaps (Open MPI 4.1.4 defect)"
        else
            verdict="exit $rc in the 4-byte compare-swaps, not the known Open MPI defect"
        fi
    elif [ $rc -ne 0 ]; then
        verdict="exit $rc"
    fi
    lane_check "$tls" "$log" "$np" || verdict="${verdict:+$verdict; }AMO lane"
    log_check "$me: $name np$np $tls" "$log" || verdict="${verdict:+$verdict; }unexpected UCX ERROR/WARN lines"
    echo "=== $me: $name, $np processes, UCX_TLS=$tls: ${verdict:-$ok} ($(($(date +%s) - t0)) s${split:+: $split}, log $log)"
    if [ -n "$verdict" ]; then failed+=("$name np$np $tls: $verdict"); else passed+=("$name np$np $tls"); fi
    [ -n "$verdict" ] || [ "$ok" = ok ] || echo "$me: counted as passed: $summary"
}

echo "$me: $(ompi_info --version 2>/dev/null | head -n 1); UCX $(ucx_info -v | sed -n 's/^# Version //p')"

if [ "$mode" = bench ]; then
    n=${ATOMICX_OPENMPI_BENCH_ITERS:-300}
    for tls in "${transports[@]}"; do
        for prog in shmem_atomics:oshrun mpi_window_atomics:mpirun; do
            run "${prog%%:*}-bench" "$tls" 2 pass "${prog#*:}" "$bin/${prog%%:*}" --bench "$n"
        done
    done
    echo "$n" >"$out/openmpi-bench-iters"
else
    # Iterations of the contention loops (shmem; 2 PEs, then all 4), burst
    # rounds, iterations of the MPI sections. One launch per program and
    # transport: a launch costs tens of seconds under TCG.
    i2=${ATOMICX_OPENMPI_ITERS:-10} ib=${ATOMICX_OPENMPI_BURSTS:-2}
    im=${ATOMICX_OPENMPI_MPI_ITERS:-3}
    for tls in "${transports[@]}"; do
        run shmem_atomics "$tls" 4 then-cswap32 oshrun "$bin/shmem_atomics" \
            --iters "$i2" --bursts "$ib" --then-cswap32
        run mpi_window_atomics "$tls" 4 pass mpirun "$bin/mpi_window_atomics" --iters "$im"
    done
    # The documents' lines as written: ompi_params' other settings as
    # environment variables
    docs_env=(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
              OMPI_MCA_rmaps_base_oversubscribe=1
              OMPI_MCA_hwloc_base_binding_policy=none
              OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_oob_tcp_if_include=lo)
    docs_dir=$(mktemp -d /tmp/openmpi-docs.XXXXXX)
    printf '#!/bin/sh\nexec %q --iters %q --bursts %q "$@"\n' \
        "$bin/shmem_atomics" "$i2" "$ib" > "$docs_dir/shmem_app"
    printf '#!/bin/sh\nexec %q --iters %q "$@"\n' \
        "$bin/mpi_window_atomics" "$im" > "$docs_dir/mpi_app"
    chmod +x "$docs_dir/shmem_app" "$docs_dir/mpi_app"
    docs_lines=$(sed -nE 's/^guest: [^|]*openmpi-guest\.sh[^|]* \| (.*)$/\1/p' \
                 "$top/test/tools/doc-examples.txt")
    docs_prelude=$(grep -E '^[A-Z_]+=' <<<"$docs_lines" |
                   sed "s|/usr/local/lib/libuct_atomicx.so.0|$lib|g")
    n=0
    # (the lines on descriptor 3: the launchers read their standard input)
    while IFS= read -r -u 3 docs_line; do
        [ -n "$docs_line" ] || continue
        n=$((n + 1))
        echo "$me: as written: $docs_line"
        docs_line="$docs_prelude
${docs_line//\/usr\/local\/lib\/libuct_atomicx.so.0/$lib}"
        case $docs_line in
        *"-np 4 "*"./shmem_app") run docs-$n atomicx,tcp 4 pass docs "$bin/shmem_atomics" ;;
        *"-np 4 "*"./mpi_app") run docs-$n atomicx,tcp 4 pass docs "$bin/mpi_window_atomics" ;;
        # no -np: a process per CPU, the guest's 2
        *"./mpi_app") run docs-$n atomicx,tcp 2 pass docs "$bin/mpi_window_atomics" ;;
        *) echo "$me: no run for this line"; failed+=("documented line $n: no run") ;;
        esac
    done 3<<<"$(grep -vE '^[A-Z_]+=' <<<"$docs_lines")"
    [ "$n" -ge 3 ] || failed+=("only $n documented Open MPI lines found")
    rm -rf "$docs_dir"
fi

echo
echo "$me: ${#passed[@]} runs passed, ${#failed[@]} failed"
if [ ${#known[@]} -gt 0 ]; then
    echo "$me: 4-byte OpenSHMEM compare-swaps: not passed over ${known[*]}:" \
         "Open MPI 4.1.4's own defect reproduced (not counted as passed)"
fi
for f in "${failed[@]}"; do echo "$me: FAILED: $f"; done
[ ${#failed[@]} -eq 0 ]
