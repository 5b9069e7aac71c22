#!/bin/bash
# make check (and so make distcheck, from the unpacked tarball): every
# relative link of README.md names a file that is there, so the tarball
# carries docs/ and whatever else README points to.
set -uo pipefail
top=${top_srcdir:-$(dirname "$0")/../..}
fail=0
n=0
for link in $(grep -oE '\]\([^)#]+\)' "$top/README.md" | sed -E 's/^\]\((.*)\)$/\1/' |
              grep -vE '^[a-z]+:' | sort -u); do
    n=$((n + 1))
    [ -e "$top/$link" ] || { echo "FAIL: README.md links $link, which is not in $top"; fail=1; }
done
[ $n -gt 0 ] || { echo "FAIL: no relative link found in $top/README.md"; exit 1; }
echo "$n relative links of README.md checked in $top"
exit $fail
