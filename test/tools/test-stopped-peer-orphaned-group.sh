#!/bin/bash
# A test that stops a peer process (SIGSTOP) must not be undone by job
# control. When a process group becomes orphaned while one of its members
# is stopped (its last link to the session, e.g. a shell wrapper, exits),
# the kernel sends SIGHUP and SIGCONT to every member (POSIX): the stopped
# target resumes and answers, and UCX, which takes SIGHUP as its debug
# signal, switches every process to its most verbose log level. This runs
# the suite's stopped-target test in a group whose leader leaves exactly
# while the target is stopped; it passes only if the test's peers are not
# in the test's own process group.

# shellcheck source-path=SCRIPTDIR source=test-common.sh
. "$(dirname "$0")/test-common.sh"

gtest=${FIATOMIC_GTEST:-./test/gtest/test_fiatomic}
test_start "$gtest"
tmp=$test_tmp

# the subshell starts the test as a job of its own (set -m: a new process
# group, the subshell its only parent in this session), waits until a
# child of the test is stopped, then exits: the test's group is orphaned
(
    set -m
    "$gtest" --gtest_filter=hostile_peers.stopped_target_times_out \
        > "$tmp/out" 2>&1 &
    echo $! > "$tmp/pid"
    for _ in $(seq 600); do
        if pgrep -r T -P $! > /dev/null; then
            touch "$tmp/stopped"
            exit 0
        fi
        sleep 0.05
    done
    exit 0
)
pid=$(cat "$tmp/pid")
for _ in $(seq 1200); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
if kill -0 "$pid" 2>/dev/null; then
    echo "FAIL: the test still runs after 120 s"
    kill -CONT -- "-$pid" 2>/dev/null; kill -KILL -- "-$pid" 2>/dev/null
    exit 1
fi
cat "$tmp/out"
if grep -q "SKIPPED \]" "$tmp/out"; then
    echo "SKIP: the stopped-target test skipped (reason above)"
    exit 77
fi
if [ ! -e "$tmp/stopped" ]; then
    echo "FAIL: no stopped child of the test was seen in 30 s"
    exit 1
fi
if ! grep -q "^\[  PASSED  \] 1 test" "$tmp/out"; then
    echo "FAIL: the stopped-target test failed with its group orphaned"
    exit 1
fi
if grep -qE "UCX +(DEBUG|TRACE|ERROR|WARN)" "$tmp/out"; then
    echo "FAIL: UCX log lines (SIGHUP reached a process of the test)"
    exit 1
fi
echo "PASS: stopped target stayed stopped with the test's group orphaned"
