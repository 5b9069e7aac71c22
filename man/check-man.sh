#!/bin/bash
# make check: the manual pages render without a warning and stay in step with
# what they document.
#  1. every page passes `mandoc -T lint -W warning` and `groff -man -ww -z`
#     with no output;
#  2. every function the public header declares is named in the NAME section
#     of a section-3 page, and every name there is declared in the header;
#  3. every page's .TH carries the package version;
#  4. every variable of atomicx's interface configuration table appears in
#     atomicx(7) as UCX_ATOMICX_<NAME>;
#  5. every page a SEE ALSO names among this package's pages exists.
# Environment (set by man/Makefile.am): srcdir, top_srcdir, PACKAGE_VERSION,
# CPP and HEADER_CPPFLAGS (to preprocess the public header).
set -uo pipefail
srcdir=${srcdir:-$(dirname "$0")}
top_srcdir=${top_srcdir:-$srcdir/..}
header=$top_srcdir/src/fiatomic/fiatomic.h
config_table=$top_srcdir/src/uct/atomicx/atomicx_iface.c
pages=("$srcdir"/*.[137])
fail=0

bad() { echo "FAIL: $*"; fail=1; }

for tool in mandoc groff; do
    command -v $tool > /dev/null ||
        { echo "FAIL: $tool not found (contrib/install-deps.sh installs it)"; exit 1; }
done

# 1. lint
for page in "${pages[@]}"; do
    out=$(mandoc -T lint -W warning "$page" 2>&1) || [ -n "$out" ] ||
        out="mandoc exit status $?"
    [ -z "$out" ] || bad "mandoc: $out"
    out=$(groff -man -ww -z "$page" 2>&1)
    [ -z "$out" ] || bad "groff $(basename "$page"): $out"
done
echo "lint: ${#pages[@]} pages"

# 2. functions of the header <-> NAME sections
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo '#include "fiatomic.h"' |
    ${CPP:-cpp} -P ${HEADER_CPPFLAGS:-} -I"$(dirname "$header")" - > "$tmp/pp" ||
    { echo "FAIL: cannot preprocess $header"; exit 1; }
tr '\n' ' ' < "$tmp/pp" | grep -oE '\bfiatomic_[a-z0-9_]+[[:space:]]*\(' |
    sed 's/[[:space:](]//g' | sort -u > "$tmp/declared"
sh "$srcdir/man-aliases.sh" "$srcdir"/*.3 > "$tmp/aliases"
cut -d' ' -f1 "$tmp/aliases" | sort > "$tmp/named"
[ -s "$tmp/declared" ] || { echo "FAIL: no function found in $header"; exit 1; }
dups=$(uniq -d "$tmp/named")
[ -z "$dups" ] || bad "named on more than one page: $dups"
sort -u -o "$tmp/named" "$tmp/named"
for f in $(comm -23 "$tmp/declared" "$tmp/named"); do
    bad "$f is declared in fiatomic.h but no page names it"
done
for f in $(comm -13 "$tmp/declared" "$tmp/named"); do
    bad "$f is named in a page but not declared in fiatomic.h"
done
echo "functions: $(wc -l < "$tmp/declared") declared, $(wc -l < "$tmp/named") named"

# 3. version
for page in "${pages[@]}"; do
    grep -q "^\.TH .* \"atomicx ${PACKAGE_VERSION:?}\"" "$page" ||
        bad "$(basename "$page"): .TH does not say \"atomicx $PACKAGE_VERSION\""
done

# 4. atomicx's variables
if [ -r "$config_table" ]; then
    n=0
    for var in $(sed -n '/iface_config_table\[\] = {/,/^};/p' "$config_table" |
                 grep -oE '^ *\{"[A-Z0-9_]+"' | grep -oE '[A-Z0-9_]+'); do
        n=$((n + 1))
        grep -q "UCX_ATOMICX_$var\b" "$srcdir/atomicx.7" ||
            bad "atomicx.7 does not document UCX_ATOMICX_$var"
    done
    [ $n -gt 0 ] || bad "no variable found in $config_table"
    echo "atomicx variables: $n"
fi

# 5. cross references
for page in "${pages[@]}"; do
    for ref in $(grep -oE '^\.BR (fiatomic[a-z_]*|atomicx) \([137]\)' "$page" |
                 sed -E 's/^\.BR ([a-z_]+) \(([137])\)/\1.\2/'); do
        [ -e "$srcdir/$ref" ] || grep -qx "${ref%.3} [a-z_]*" "$tmp/aliases" ||
            bad "$(basename "$page") refers to $ref, which is no page"
    done
done

[ $fail -eq 0 ] && echo "PASS: manual pages" || echo "FAIL: manual pages"
exit $fail
