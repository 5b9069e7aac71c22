#!/bin/sh
# README.md must show examples/fiatomic_example.c verbatim (between the
# "api-example" markers), so the documented example is the tested one.
top=$(cd "$(dirname "$0")/.." && pwd)
awk '/<!-- api-example:begin -->/ {on=1; getline; next} /<!-- api-example:end -->/ {on=0} on' \
    "$top/README.md" | sed '$d' > "${TMPDIR:-/tmp}/readme_example.$$.c"
if diff -u "$top/examples/fiatomic_example.c" "${TMPDIR:-/tmp}/readme_example.$$.c"; then
    rm -f "${TMPDIR:-/tmp}/readme_example.$$.c"
    echo "README example matches examples/fiatomic_example.c"
else
    rm -f "${TMPDIR:-/tmp}/readme_example.$$.c"
    echo "README example differs from examples/fiatomic_example.c" >&2
    exit 1
fi
