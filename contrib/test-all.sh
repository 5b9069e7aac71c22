#!/bin/bash
# Install what is needed, build with -Werror, and run every test suite:
#  1. the regular build's gtest suites (make check: also the manual pages,
#     the tools' options and messages), then its packaging
#     (contrib/check-dist.sh: make distcheck, the tarball built, tested,
#     installed and installcheck'ed as a user would; a staged DESTDIR install
#     with installcheck: a pkg-config consumer),
#  2. the same suites built with AddressSanitizer + UndefinedBehaviorSanitizer
#     (every strategy in one configuration, strategy auto in the others),
#     and the threads suite built with ThreadSanitizer,
#  3. the libFuzzer targets: the target-side request decoder, 60 s, and a
#     live target through UCP, 60 s,
#  4. the atomicx guest suites on soft-RoCE (contrib/softroce),
#     libfiatomic's matrix over atomicx there, UCX's own gtest suites
#     (UCT atomics, fence, flush, pending, ...; UCP atomics) over atomicx,
#     and Open MPI's OpenSHMEM and MPI windows over atomicx (and tcp); the
#     guest examples of README and the manual pages run as written there
#     (test-guest.sh's docs suite, openmpi-guest.sh).
#  5. Sandia OpenSHMEM's unit tests (contrib/sos: built once per machine,
#     cached) over the fiatomic libfabric provider, in both of SOS's memory
#     registration configurations, judged against libfabric's tcp;ofi_rxm,
#     and its lfinc again and again with more processes than cores,
#  6. against UCX 1.22.0 too (contrib/build-ucx.sh builds it once per machine,
#     cached): a -Werror build, libfiatomic's and atomicx's host gtest suites
#     (configurations as under ASan),
#     "make install" into UCX's module directory, and in one more guest boot
#     ucx_info and ucx_perftest finding atomicx as a UCX module
#     (UCX_PLUGIN_PATH, no LD_PRELOAD), the UCT and UCP suites and
#     libfiatomic over atomicx.
# The UCX 1.22.0 and SOS builds run in the background from the start, at the
# lowest CPU priority (bg_start).
# Ends with one summary line "N passed, N failed, N skipped" (gtest tests and
# SOS unit test runs).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
jobs=$(nproc)
logdir="$top/build-logs"
mkdir -p "$logdir"
fail=0

t_start=$(date +%s)
# each step says when it began, so that a run's log shows where its time went
step() {
    local t=$(( $(date +%s) - t_start ))
    cur_step="$*"
    echo; echo "=== $* ==="; printf 'test-all: at %dm%02ds\n' $((t / 60)) $((t % 60))
}
# a step that fails is named again in the run's last lines, with the tests
# that failed in it: a log seen only by its end still says what went wrong
failed_steps=()
step_failed() { fail=1; failed_steps+=("$cur_step"); }

step "dependencies"
"$top/contrib/install-deps.sh" || exit 1

step "autogen"
./autogen.sh > "$logdir/autogen.log" 2>&1 || { cat "$logdir/autogen.log"; exit 1; }

# The builds that later steps run from (UCX 1.22.0, SOS's two
# configurations) go in the background from here, at the lowest CPU
# priority: on a fresh machine they cost about 30 CPU minutes, which they
# take from the CPU the suites leave idle (the one-at-a-time tests waiting
# on their peers, the guests' idle processors) instead of adding them to
# the wall time; a machine that has them cached returns at once. The steps
# that need a build wait for it (bg_wait).
step "background builds: UCX 1.22.0, Sandia OpenSHMEM (basic, scalable)"
bg_start() { # bg_start <name> <command...>: its stdout's last line is its result
    local name=$1; shift
    ( nice -n 19 "$@" > "$logdir/bg-$name.out" 2> "$logdir/bg-$name.log"
      echo $? > "$logdir/bg-$name.rc" ) &
    eval "bg_pid_${name//-/_}=\$!"
    echo "$name: started (log $logdir/bg-$name.log)"
}
bg_wait() { # bg_wait <name>: wait for it (in this shell: not in a $(...)),
    # its result in bg_result; fails if it did
    local name=$1 pid_var="bg_pid_${1//-/_}" t0
    t0=$(date +%s)
    wait "${!pid_var}"
    echo "$name: ready ($(( $(date +%s) - t0 )) s waited)"
    bg_result=$(tail -1 "$logdir/bg-$name.out" 2>/dev/null)
    [ "$(cat "$logdir/bg-$name.rc" 2>/dev/null)" = 0 ] ||
        { tail -20 "$logdir/bg-$name.log"; return 1; }
}
rm -f "$logdir"/bg-*
# a run that stops early stops its background builds too (an unfinished
# build leaves no stamp: the next run builds it again)
kill_tree() { local c; for c in $(pgrep -P "$1"); do kill_tree "$c"; done; kill "$1" 2>/dev/null; }
trap 'for c in $(pgrep -P $$); do kill_tree "$c"; done' EXIT
bg_start ucx122 env ATOMICX_UCX_JOBS="$jobs" "$top/contrib/build-ucx.sh"
bg_start sos-basic "$top/contrib/sos/build-sos.sh" basic
bg_start sos-scalable "$top/contrib/sos/build-sos.sh" scalable

build() { # build <dir> <configure args...>
    local dir=$1; shift
    mkdir -p "$dir" && cd "$dir" || return 1
    "$top/configure" --enable-werror "$@" > "$logdir/$(basename "$dir")-configure.log" 2>&1 ||
        { tail -40 "$logdir/$(basename "$dir")-configure.log"; cd "$top"; return 1; }
    make -j"$jobs" > "$logdir/$(basename "$dir")-make.log" 2>&1 ||
        { grep -E "error|Error" "$logdir/$(basename "$dir")-make.log" | head -40; cd "$top"; return 1; }
    cd "$top"
}

check() { # check <dir>: make check, print the test logs, judge UCX's log lines
    local dir=$1
    # the test programs built on every core first (TESTS= runs none), then
    # the tests one at a time: they time themselves and share ports
    (cd "$dir" && make -j"$jobs" check TESTS= > "$logdir/$(basename "$dir")-check.log" 2>&1 &&
        make -j1 check >> "$logdir/$(basename "$dir")-check.log" 2>&1)
    local rc=$?
    find "$dir/test" -name '*.log' ! -name 'test-suite.log' -exec cat {} + | tee -a "$logdir/all-tests.log" |
        grep -E '^\[ *(PASSED|FAILED|SKIPPED|  OK|  SKIPPED) *\]|^\[==========\]|SKIP|^(PASS|FAIL|ERROR|SKIP):' | grep -v '^\[       OK \]' || true
    # A UCX ERROR/WARN line that contrib/ucx-log-expected.txt does not list
    # fails the run
    find "$dir/test" -name '*.log' ! -name 'test-suite.log' -print0 | sort -z |
        xargs -0 -r "$top/contrib/ucx-log-check.sh" --label "$(basename "$dir")" || rc=1
    return $rc
}

: > "$logdir/all-tests.log"

step "build (-Werror)"
build "$top/build-release" || exit 1
step "tests"
check "$top/build-release" || step_failed
step "packaging (make distcheck; make install DESTDIR + installcheck, uninstall)"
ATOMICX_JOBS=$jobs "$top/contrib/check-dist.sh" "$top/build-release" 2>&1 |
    tee -a "$logdir/all-tests.log" || step_failed
cp "$top/build-release/distcheck.log" "$logdir/" 2>/dev/null

# The test drivers (all of the project's C++ is test code) are compiled at
# -O0 here: instrumented at -O2 they take 3.5 times as long to build (2 min
# for the matrix file alone on 2 cores), and the libraries, tools and
# transport under test keep -O2 (CFLAGS), as users run them.
# FIATOMIC_TEST_ITERATIONS=1000: the shared-memory concurrency tests make
# 10000 operations per process in the release build so that direct CPU
# atomics (50 ns each) overlap across time slices; that interleaving depth is
# the release and ThreadSanitizer runs' job. Here the same paths run for
# memory errors, and an instrumented operation is several times slower, so
# 1000 still overlap (saves about 4 of the suite's 8 minutes).
#
# The parametrized suites of the release build run in every configuration
# (transport x memory x strategy). The ASan+UBSan build and the build
# against UCX 1.22.0 run every strategy in one of them, posix with
# UCP-allocated memory (the one where each strategy applies: native, CAS
# loop, direct CPU atomics, target side, mixed, 32-byte, no active
# messages), and strategy auto in every other transport and memory: the
# code paths the strategies take do not depend on the transport under them,
# and in every configuration libfiatomic's suite took 5 (ASan) and 7 (UCX
# 1.22.0) minutes of the test command's hour; so it runs 6992 of its 22514
# tests.
secondary_skip=
for config in self_user self_alloc self_safe posix_user posix_safe \
              sysv_user sysv_alloc tcp_user tcp_alloc tcp_safe; do
    for strategy in native cas direct target mixed wide auto_noam; do
        secondary_skip+=":${config}_${strategy}/*"
    done
done
secondary_filter="*-${secondary_skip#:}"

step "build (-Werror, ASan+UBSan)"
build "$top/build-asan" --enable-sanitizers CXXFLAGS="-g -O0" || exit 1
step "tests under ASan+UBSan"
echo "GTEST_FILTER=$secondary_filter"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
FIATOMIC_TEST_ITERATIONS=1000 GTEST_FILTER=$secondary_filter check "$top/build-asan" || step_failed

# The threads suite under ThreadSanitizer: libfiatomic and its suites only.
# UCX_MEM_EVENTS=no: UCX's memory hooks (madvise in thread start) crash
# TSan's interceptors; FIATOMIC_TEST_THREAD_OPS: fewer operations per thread
# (every strategy and both endpoint layouts still run).
step "build (-Werror, ThreadSanitizer): libfiatomic and its suites"
tsan_dir="$top/build-tsan"
mkdir -p "$tsan_dir" && (cd "$tsan_dir" &&
    "$top/configure" --enable-werror --enable-tsan > "$logdir/build-tsan-configure.log" 2>&1 &&
    make -j"$jobs" -C src/fiatomic > "$logdir/build-tsan-make.log" 2>&1 &&
    make -j"$jobs" -C src/ref >> "$logdir/build-tsan-make.log" 2>&1 &&
    make -j"$jobs" -C test/gtest test_fiatomic fiatomic_test_peer >> "$logdir/build-tsan-make.log" 2>&1) ||
    { tail -40 "$logdir/build-tsan-make.log" "$logdir/build-tsan-configure.log"; exit 1; }
step "threads suite under ThreadSanitizer"
(cd "$tsan_dir/test/gtest" &&
    UCX_MEM_EVENTS=no FIATOMIC_TEST_THREAD_OPS=40 \
    TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1" \
    ./test_fiatomic --gtest_filter='*/threads.*' > "$logdir/tsan-threads.log" 2>&1)
tsan_rc=$?
tee -a "$logdir/all-tests.log" < "$logdir/tsan-threads.log" |
    grep -E '^\[ *(PASSED|FAILED|SKIPPED) *\]|^\[==========\]|ThreadSanitizer' || true
[ $tsan_rc -eq 0 ] || step_failed
"$top/contrib/ucx-log-check.sh" --label build-tsan "$logdir/tsan-threads.log" || step_failed

step "fuzzing the target-side request decoder (libFuzzer, 60 s)"
"$top/test/fuzz/run.sh" 60 2>&1 | tee -a "$logdir/all-tests.log" || step_failed

step "fuzzing a live target through UCP (libFuzzer, 30 s tcp + 30 s posix)"
"$top/test/fuzz/run-ucp.sh" 60 2>&1 | tee -a "$logdir/all-tests.log" || step_failed

step "fuzzing the fiatomic provider's message handlers through UCP (libFuzzer, 30 s tcp + 30 s posix)"
"$top/test/fuzz/run-prov.sh" 60 2>&1 | tee -a "$logdir/all-tests.log" || step_failed

if [ -x "$top/contrib/softroce/test-guest.sh" ]; then
    # libfiatomic over atomicx (fiatomic-guest.sh) in the same boot
    step "atomicx on soft-RoCE, libfiatomic over it (qemu guest)"
    "$top/contrib/softroce/test-guest.sh" "$top/build-release" \
        uct ucp perftest compare bench docs fiatomic 2>&1 |
        tee -a "$logdir/all-tests.log" || step_failed
    step "UCX's own gtest suites over atomicx on soft-RoCE (qemu guest)"
    "$top/contrib/softroce/ucx-gtest-guest.sh" "$top/build-release" 2>&1 | tee -a "$logdir/all-tests.log" || step_failed
    step "Open MPI's OpenSHMEM and MPI windows over atomicx on soft-RoCE (qemu guest)"
    "$top/contrib/softroce/openmpi-guest.sh" "$top/build-release" 2>&1 | tee -a "$logdir/all-tests.log" || step_failed
fi

# Sandia OpenSHMEM's unit tests over this project's libfabric provider
# (contrib/sos), each run judged against the tcp;ofi_rxm reference list of
# its configuration (contrib/sos/reference-*.txt): every test that passes
# there with the same number of processes must pass. Both SOS builds come
# from the background builds above (cached per machine). Over UCX_TLS=posix
# alone the provider connects by the worker addresses its domains publish
# (fi_fiatomic(7), Connections); over tcp by socket address. ATOMICX_SOS=on
# (default): the whole suite with 2 processes over posix with provider keys
# (basic) and over tcp with program keys (scalable), and the atomic, lock
# and wait tests with 4 in each of the four pairs of transport and key mode
# (about 8 minutes; the 2-process suite in every pair took 4 more, and its
# tests' paths do not depend on the pair beyond what the 4-process runs
# take); all: every pair both ways; off: none. Over posix the 4-process
# basic run is written posix+share: it runs with FI_FIATOMIC_MR_SHARE=1,
# SOS's heap and data placed in shared memory, its atomics CPU atomics of
# every process in the same pages (that run is the proof of atomicity of
# that path).
step "Sandia OpenSHMEM's unit tests over the fiatomic libfabric provider"
sos_prov=$top/build-release/src/prov/fiatomic/.libs
sos_runs=()
case ${ATOMICX_SOS:-on} in
    on|all)
        for c in basic scalable; do
            for tl in posix tcp; do
                sos_share_tl=$tl
                [ "$tl/$c" != posix/basic ] || sos_share_tl=posix+share
                if [ "${ATOMICX_SOS:-on}" = all ] || [ "$tl/$c" = posix/basic ] ||
                   [ "$tl/$c" = tcp/scalable ]; then
                    sos_runs+=("$tl $c 2")
                fi
                sos_runs+=("$sos_share_tl $c 4 atomic,lock,wait")
            done
        done ;;
    off) ;;
    *) echo "ATOMICX_SOS=${ATOMICX_SOS}: on, all or off"; step_failed ;;
esac
sos_built=1
for c in basic scalable; do
    bg_wait "sos-$c" || { echo "FAIL: building SOS ($c)"; sos_built=0; step_failed; }
done
if [ ${#sos_runs[@]} -eq 0 ]; then
    echo "SOS over fiatomic: not run (ATOMICX_SOS=${ATOMICX_SOS})"
elif [ $sos_built -eq 1 ]; then
    t0=$(date +%s)
    for sos_run in "${sos_runs[@]}"; do
        read -r sos_tls sos_config sos_np sos_tests <<< "$sos_run"
        sos_log=$logdir/sos-$sos_tls-$sos_config-np$sos_np.log
        sos_share=0
        [ "${sos_tls%+share}" = "$sos_tls" ] || sos_share=1
        sos_tls=${sos_tls%+share}
        # shellcheck disable=SC2086 # sos_tests: empty or one word
        # the provider's default: no process has a UCP atomic lane (its
        # atomics go target-side, or in shared memory with MR_SHARE)
        sos_lane=none
        UCX_TLS=$sos_tls ATOMICX_FI_PROVIDER_PATH=$sos_prov SOS_AMO_LANE=$sos_lane \
            FI_FIATOMIC_MR_SHARE=$sos_share \
            "$top/contrib/sos/run-sos.sh" "$sos_config" fiatomic "$sos_np" \
            $sos_tests > "$sos_log" 2>&1 || step_failed
        tee -a "$logdir/all-tests.log" < "$sos_log" | grep -vE '^PASS: ' || true
    done
    echo "SOS over fiatomic: $(( $(date +%s) - t0 )) s"
    # A wait that must end under oversubscription: lfinc (lock-free
    # increments) with 4 processes over tcp with program keys, 2 busy loops
    # beside them, again and again for 2 minutes; a run past 240 s (one
    # took 73 s so here, a hung one stays until killed) has its processes'
    # stacks taken into the log (contrib/sos/stress-sos.sh)
    step "Sandia OpenSHMEM's lfinc under oversubscription (contrib/sos/stress-sos.sh, 120 s)"
    UCX_TLS=tcp ATOMICX_FI_PROVIDER_PATH=$sos_prov SOS_TEST_TIMEOUT=240 \
        SOS_STRESS_LOGS=$logdir/sos-stress SOS_STRESS_LOAD=2 \
        "$top/contrib/sos/stress-sos.sh" scalable 4 120 lfinc 2>&1 |
        tee -a "$logdir/all-tests.log" || step_failed
fi
# In the guest: SOS's atomics executed by the NIC (UCX_TLS=atomicx,tcp), the
# AMO lane of every process on atomicx: SOS's whole atomic group (a launch
# costs several seconds under TCG, about 3.5 minutes in all).
if [ $sos_built -eq 1 ] && [ ${#sos_runs[@]} -gt 0 ] &&
        [ -x "$top/contrib/softroce/sos-guest.sh" ]; then
    step "Sandia OpenSHMEM's atomic tests over atomicx on soft-RoCE (qemu guest)"
    "$top/contrib/softroce/sos-guest.sh" "$top/build-release" basic 2 atomic \
        > "$logdir/sos-guest.log" 2>&1 || step_failed
    tee -a "$logdir/all-tests.log" < "$logdir/sos-guest.log" | grep -vE '^PASS: ' || true
fi

step "UCX 1.22.0 (contrib/build-ucx.sh: built once per machine, cached)"
if bg_wait ucx122 && ucx122=$bg_result && [ -d "$ucx122" ]; then
    echo "UCX 1.22.0 in $ucx122"
    step "build against UCX 1.22.0 (-Werror)"
    # test drivers at -O0 as in the sanitizer build (the release build
    # compiles them at -O2 with -Werror)
    if build "$top/build-ucx122" --with-ucx="$ucx122" CXXFLAGS="-g -O0"; then
        # the gtest suites of the host (libfiatomic's and atomicx's host
        # suite); the tools' and packaging checks run on the regular build
        # The provider's two-process suites in automatic progress (its
        # progress thread meets UCX's own threads there), and the same-host
        # suite in manual progress too: how a peer's exit reaches a domain
        # that waits by progressing the worker alone depends on the UCX
        # version (with 1.22 libfiatomic executes fetch-add at the target
        # over posix); the other manual-progress runs exercise the
        # provider's code, not UCX's, and run in the release and
        # ASan+UBSan builds. FIATOMIC_TEST_ITERATIONS=1000 as under
        # ASan+UBSan: the concurrency tests' interleaving depth is the release
        # and ThreadSanitizer runs' job.
        step "libfiatomic and atomicx host tests against UCX 1.22.0"
        rm -f "$top"/build-ucx122/test/gtest/*.log
        ucx122_filter=$secondary_filter
        for suite in tls/atomic2p tls/claim2p tls/directed3p tls/msg2p \
                     tls/rma2p tls/tagged2p sockaddr/msg2p sockaddr/rma2p; do
            ucx122_filter+=":$suite.*_manual_*"
        done
        echo "GTEST_FILTER=$ucx122_filter"
        (cd "$top/build-ucx122/test/gtest" &&
            make -j"$jobs" check TESTS= > "$logdir/build-ucx122-check.log" 2>&1 &&
            FIATOMIC_TEST_ITERATIONS=1000 GTEST_FILTER=$ucx122_filter \
                make -j1 check >> "$logdir/build-ucx122-check.log" 2>&1) || step_failed
        if ls "$top"/build-ucx122/test/gtest/test_*.log > /dev/null 2>&1; then
            cat "$top"/build-ucx122/test/gtest/test_*.log | tee -a "$logdir/all-tests.log" |
                grep -E '^\[ *(PASSED|FAILED|SKIPPED|  SKIPPED) *\]|^\[==========\]|^(PASS|FAIL|ERROR|SKIP):' || true
            "$top/contrib/ucx-log-check.sh" --label build-ucx122 \
                "$top"/build-ucx122/test/gtest/test_*.log || step_failed
        else
            tail -20 "$logdir/build-ucx122-check.log"; step_failed
        fi
        step "make install puts atomicx into UCX 1.22.0's module directory"
        "$top/contrib/check-ucx-install.sh" "$top/build-ucx122" 2>&1 |
            tee -a "$logdir/all-tests.log" || step_failed
        if [ -x "$top/contrib/softroce/test-guest.sh" ]; then
            step "atomicx as a UCX 1.22.0 module on soft-RoCE (qemu guest, no LD_PRELOAD), libfiatomic over it"
            "$top/contrib/softroce/test-guest.sh" "$top/build-ucx122" info uct ucp perftest fiatomic 2>&1 |
                tee -a "$logdir/all-tests.log" || step_failed
        fi
    else
        step_failed
    fi
else
    echo "building UCX 1.22.0 failed"; step_failed
fi

# One summary over every gtest binary and SOS run (run-sos.sh's
# "run-sos: P passed, F failed, T timed out, S skipped" lines) that ran.
passed=$(grep -hoE '^\[  PASSED  \] [0-9]+' "$logdir/all-tests.log" | awk '{s+=$4} END {print s+0}')
failed=$(grep -hoE '^\[  FAILED  \] [0-9]+ test' "$logdir/all-tests.log" | awk '{s+=$4} END {print s+0}')
skipped=$(grep -hoE '^\[  SKIPPED \] [0-9]+ test' "$logdir/all-tests.log" | awk '{s+=$4} END {print s+0}')
read -r sos_p sos_f sos_s <<< "$(grep -hoE '^run-sos: [0-9]+ passed, [0-9]+ failed, [0-9]+ timed out, [0-9]+ skipped' \
    "$logdir/all-tests.log" | awk '{p+=$2; f+=$4+$6; s+=$9} END {print p+0, f+0, s+0}')"
passed=$((passed + sos_p)) failed=$((failed + sos_f)) skipped=$((skipped + sos_s))
[ "$fail" -eq 0 ] || [ "$failed" -gt 0 ] || failed=1
echo
if [ "$fail" -ne 0 ]; then
    printf 'test-all: failed in: %s\n' "${failed_steps[@]}" | sort -u
    # gtest's per-test FAILED lines (each also repeated in its binary's
    # summary, hence sort -u), automake's and run-sos's per-test verdicts
    grep -hE '^\[  FAILED  \] [^0-9 ]|^(FAIL|ERROR|TIMEOUT): *[^ ]' "$logdir/all-tests.log" |
        sed 's/ ([0-9]* ms)$//' | sort -u | head -n 40 | sed 's/^/test-all: /'
fi
t=$(( $(date +%s) - t_start ))
printf 'test-all: %dm%02ds in all\n' $((t / 60)) $((t % 60))
echo "$passed passed, $failed failed, $skipped skipped"
exit $fail
