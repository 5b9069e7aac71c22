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
# its extended regular expression matches the UCX message.
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
    -h|--help)  sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
    if (n != 3) {
        printf "ucx-log-check: %s:%d: want \"test glob | regex | reason\"\n",
               FILENAME, FNR > "/dev/stderr"
        bad_file = 1
        next
    }
    gsub(/^[[:space:]]+|[[:space:]]+$/, "", f[1])
    gsub(/^[[:space:]]+|[[:space:]]+$/, "", f[2])
    ++nexp
    exp_test[nexp]  = glob_to_ere(f[1])
    exp_re[nexp]    = f[2]
    next
}
FNR == 1 { test = ""; section = "" }
/^\[ RUN      \] / {
    test = $0; sub(/^\[ RUN      \] /, "", test); sub(/[[:space:]].*$/, "", test)
    next
}
/^\[ +(OK|FAILED|SKIPPED) +\] / { test = ""; next }
/^=== .* ===$/ {
    section = $0; sub(/^=== /, "", section); sub(/ ===$/, "", section)
    test = ""
    next
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
        if ((ctx ~ exp_test[i]) && ((where " " msg) ~ exp_re[i])) {
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
