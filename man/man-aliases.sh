#!/bin/sh
# Prints "name page" for every function a section-3 page documents in its
# NAME section, other than the page's own name: `make install` writes
# man3/name.3 as a ".so" link to that page, as libfabric's pages do.
#
#   man-aliases.sh PAGE.3...
for page in "$@"; do
    base=$(basename "$page" .3)
    # the NAME section: the names before "\-"
    awk '/^\.SH NAME/ { on = 1; next } /^\.SH/ { on = 0 } on' "$page" |
        tr '\n' ' ' | sed 's/\\-.*//' | tr ', ' '\n\n' | grep . |
        while read -r name; do
            [ "$name" = "$base" ] || echo "$name $base"
        done
done
