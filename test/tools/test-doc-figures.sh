#!/bin/bash
# make check: the figures README and the manual pages state are those of
# docs/performance.md, the report contrib/perf-report.sh generates.
#  - README's performance summary is exactly what contrib/perf-summary.sh
#    writes from the report in the tree (figures copied, never typed);
#  - outside that block README and the manual pages state no latency, ratio
#    or goal count that the report does not contain (a figure that is not a
#    measurement, such as a time syntax example, is listed with its reason
#    in test/tools/doc-figures-allowed.txt);
#  - README's count of the cells libfabric's providers have is the largest
#    the report's speedup-vs-ofi goals compared;
#  - fiatomic_perftest(1) documents every goal of the report's goal table,
#    each with the report's limit, and no other.
# Needs no build: it reads the source tree.
set -uo pipefail
src=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
report=$src/docs/performance.md
allowed=$src/test/tools/doc-figures-allowed.txt
# shellcheck source-path=SCRIPTDIR source=test-common.sh
. "$(dirname "$0")/test-common.sh"
test_start
tmp=$test_tmp

echo "=== README's performance summary is generated from the report ==="
"$src/contrib/perf-summary.sh" "$report" > "$tmp/want" || bad "perf-summary.sh failed"
sed -n '/^<!-- perf-summary:begin/,/^<!-- perf-summary:end -->/p' "$src/README.md" > "$tmp/have"
if diff "$tmp/want" "$tmp/have" > "$tmp/diff"; then
    ok
else
    bad "README's summary differs from contrib/perf-summary.sh's (run contrib/perf-summary.sh --update README.md):"
    sed 's/^/  /' "$tmp/diff" | head -20
fi

echo "=== no figure outside the report ==="
# latencies (us, ns, ms), ratios (2x, x1.5, 2-2.7x) and goal counts
figure_re='[~]?[0-9][0-9.]*( to [0-9.]+)? ?(us|ns|ms)\b|\b[0-9][0-9.]*(-[0-9.]+)?x\b|\bx[0-9][0-9.]*|\b[0-9]+ of (the )?[0-9]+ goal'
for f in "$src/README.md" "$src"/man/*.[137]; do
    name=${f#"$src/"}
    # README's generated block is checked above
    sed '/^<!-- perf-summary:begin/,/^<!-- perf-summary:end -->/d' "$f" |
        grep -noE "$figure_re" | while IFS=: read -r line fig; do
        if grep -qF -- "$fig" "$report"; then
            continue
        fi
        # an allowed figure: "file | text | reason"
        if awk -F' [|] ' -v f="$name" -v t="$fig" \
               '$1 == f && $2 == t && $3 != "" {found = 1} END {exit !found}' \
               "$allowed"; then
            continue
        fi
        echo "$name:$line: '$fig'"
    done
done > "$tmp/stray"
if [ -s "$tmp/stray" ]; then
    bad "figures that docs/performance.md does not state:"
    sed 's/^/  /' "$tmp/stray"
else
    ok
fi
# a goal count anywhere must be the report's
# (the main run's, the first: the libfabric provider's section has a run
# of its own goals)
count=$(sed -nE 's/^GOALS: ([0-9]+ of [0-9]+) MET.*/\1/p' "$report" | head -1)
grep -hoE '\b[0-9]+ of (the )?[0-9]+ goal' "$src/README.md" "$src"/man/*.[137] |
    sed -E 's/ the / /; s/ goal$//' | sort -u > "$tmp/counts"
if [ -n "$count" ] && { [ ! -s "$tmp/counts" ] || [ "$(cat "$tmp/counts")" = "$count" ]; }; then
    ok
else
    bad "goal counts $(tr '\n' ' ' < "$tmp/counts")differ from the report's '$count'"
fi

echo "=== README's count of libfabric's cells is the report's ==="
# the speedup-vs-ofi goals compare every cell the provider has: "0/N cells"
ofi=$(sed -nE 's/^GOAL speedup-vs-ofi-[a-z]+ .* [0-9]+\/([0-9]+) cells miss$/\1/p' "$report" |
      sort -n | tail -1)
said=$(tr '\n' ' ' < "$src/README.md" |
       sed -nE "s/.*libfabric's own providers here have at most ([0-9]+).*/\1/p")
if [ -n "$ofi" ] && [ "$said" = "$ofi" ]; then
    ok
else
    bad "README says libfabric's providers here have at most '$said' cells, the report's speedup-vs-ofi goals compare at most '$ofi'"
fi

echo "=== fiatomic_perftest(1)'s goals are the report's, with its limits ==="
# the report's goal table: "name tl what... value <=|>= limit verdict"
awk '/^goal +tl +measured/ {t = 1; next} t && NF == 0 {t = 0}
     t {for (i = NF; i > 0; --i) if ($i == "<=" || $i == ">=") {
            print $1, ($i == "<=" ? "most" : "least"), $(i + 1); break}}' \
    "$report" | sort -u > "$tmp/report-goals"
# the page's GOALS section: ".B name" then text with "(at most|least N"
sed -n '/^\.SH GOALS/,/^\.SH [^G]/p' "$src/man/fiatomic_perftest.1" |
    awk '/^\.B [a-z0-9\\-]+$/ {g = $2; gsub(/\\/, "", g); next}
         g != "" && match($0, /at (most|least)$/) {pending = substr($0, RSTART + 3, RLENGTH - 3); next}
         g != "" && pending != "" && match($0, /^[0-9.]+/) {
             print g, pending, substr($0, RSTART, RLENGTH); g = ""; pending = ""; next}
         g != "" && match($0, /at (most|least) [0-9.]+/) {
             split(substr($0, RSTART, RLENGTH), a, " "); print g, a[2], a[3]; g = ""}' |
    sort -u > "$tmp/man-goals"
[ "$(wc -l < "$tmp/report-goals")" -ge 15 ] || bad "the report's goal table has $(wc -l < "$tmp/report-goals") goals"
if diff "$tmp/report-goals" "$tmp/man-goals" > "$tmp/diff"; then
    ok
else
    bad "docs/performance.md's goals (<) and fiatomic_perftest(1)'s (>) differ:"
    sed 's/^/  /' "$tmp/diff"
fi

test_end
