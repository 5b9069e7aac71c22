#!/bin/bash
# Fails a test run on any UCX ERROR, WARN or FATAL line that is not listed
# as expected, with its reason, in contrib/ucx-log-expected.txt.
#
#   contrib/ucx-log-check.sh [--expected FILE] [--label NAME] [LOG...]
#
# Reads the logs (or stdin) in order and keeps track of which test each line
# belongs to: the last gtest "[ RUN      ] suite.test" line, else the last
# harness section header ("=== name ===", "=== test-guest: name ===").
# An expectation applies to a line when its test glob matches that test and
# its extended regular expression matches the UCX message, and, when it has
# a condition "after ERE", when an earlier line of the same test matched
# ERE (a whole log line; "{pid}" in ERE stands for the process id in the
# UCX line's "[time] [host:pid:thread]" prefix, so that a line is accepted
# only after the same process has said something, e.g. that its checks are
# done and it is finalizing).
#
# Prints every unexpected line with its test, then one summary line:
#   ucx-log-check[NAME]: N UCX ERROR/WARN lines: E expected, U unexpected
# Exit status: 0 when U is 0, 1 otherwise, 2 for usage errors.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

expected=$here/ucx-log-expected.txt
label=
while [ $# -gt 0 ]; do
    case $1 in
    --expected) expected=${2:?}; shift 2 ;;
    --label)    label=${2:?}; shift 2 ;;
    -h|--help)  sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --)         shift; break ;;
    -*)         echo "ucx-log-check: unknown option $1" >&2; exit 2 ;;
    *)          break ;;
    esac
done
[ -r "$expected" ] || { echo "ucx-log-check: cannot read $expected" >&2; exit 2; }
for f in "$@"; do
    [ -r "$f" ] || { echo "ucx-log-check: cannot read $f" >&2; exit 2; }
done

# awk reads the expectations first (test glob | ERE | reason), then the logs.
awk -v label="$label" '
function glob_to_ere(g,    r, i, c) {
    r = "^"
    for (i = 1; i <= length(g); ++i) {
        c = substr(g, i, 1)
        if (c == "*")      r = r ".*"
        else if (c == "?") r = r "."
        else if (index("\\^$.[]|()+{}", c)) r = r "\\" c
        else               r = r c
    }
    return r "$"
}
FNR == NR {
    if ($0 ~ /^[[:space:]]*(#|$)/) next
    n = split($0, f, / \| /)
    for (i = 1; i <= n; ++i) gsub(/^[[:space:]]+|[[:space:]]+$/, "", f[i])
    if ((n != 3 && n != 4) || (n == 4 && f[3] !~ /^after /)) {
        printf "ucx-log-check: %s:%d: want \"test glob | regex | reason\"" \
               " or \"test glob | regex | after ERE | reason\"\n",
               FILENAME, FNR > "/dev/stderr"
        bad_file = 1
        next
    }
    ++nexp
    exp_test[nexp]  = glob_to_ere(f[1])
    exp_re[nexp]    = f[2]
    exp_after[nexp] = ""
    if (n == 4) {
        exp_after[nexp] = substr(f[3], 7)
        # Lines that may satisfy it, whatever the pid: kept per test.
        any = exp_after[nexp]
        gsub(/\{pid\}/, "[0-9]+", any)
        after_any[nexp] = any
    }
    next
}
bad_file { exit 2 }  # (END exits with 2) no verdict from a broken list
# A new test or section forgets the lines seen in the previous one.
function new_context() { delete seen; nseen = 0 }
FNR == 1 { test = ""; section = ""; new_context() }
/^\[ RUN      \] / {
    test = $0; sub(/^\[ RUN      \] /, "", test); sub(/[[:space:]].*$/, "", test)
    new_context()
    next
}
/^\[ +(OK|FAILED|SKIPPED) +\] / { test = ""; new_context(); next }
/^=== .* ===$/ {
    section = $0; sub(/^=== /, "", section); sub(/ ===$/, "", section)
    test = ""
    new_context()
    next
}
# seen_after(i, line): an earlier line of this test matched the condition of
# expectation i, with {pid} replaced by the process id of the UCX line.
function seen_after(i, line,    pid, re, k) {
    re = exp_after[i]
    if (re ~ /\{pid\}/) {
        pid = line
        if (!sub(/^\[[^]]*\] \[[^]:]*:/, "", pid) || !match(pid, /^[0-9]+/)) return 0
        pid = substr(pid, 1, RLENGTH)
        gsub(/\{pid\}/, pid, re)
    }
    for (k = 1; k <= nseen; ++k) if (seen[k] ~ re) return 1
    return 0
}
{
    for (i = 1; i <= nexp; ++i) {
        if (exp_after[i] != "" && $0 ~ after_any[i]) { seen[++nseen] = $0; break }
    }
}
/UCX +(ERROR|WARN|FATAL) / {
    ++total
    ctx = (test != "") ? test : section
    msg = $0
    sub(/^.*UCX +(ERROR|WARN|FATAL) +/, "", msg)
    where = $0
    sub(/ +UCX +(ERROR|WARN|FATAL) .*$/, "", where)
    sub(/^.* /, "", where)         # file.c:line
    ok = 0
    for (i = 1; i <= nexp; ++i) {
        if ((ctx ~ exp_test[i]) && ((where " " msg) ~ exp_re[i]) &&
            (exp_after[i] == "" || seen_after(i, $0))) {
            ok = 1
            ++used[i]
            break
        }
    }
    if (ok) {
        ++expected_count
    } else {
        ++unexpected
        if (unexpected <= 50) {
            printf "ucx-log-check: unexpected (%s): %s\n",
                   (ctx != "") ? ctx : "?", $0
        }
    }
}
END {
    if (bad_file) exit 2
    if (unexpected > 50) {
        printf "ucx-log-check: ... %d more unexpected lines\n", unexpected - 50
    }
    printf "ucx-log-check%s: %d UCX ERROR/WARN lines: %d expected, %d unexpected\n",
           (label != "") ? "[" label "]" : "", total, expected_count, unexpected
    exit (unexpected > 0) ? 1 : 0
}' "$expected" "${@:--}"
