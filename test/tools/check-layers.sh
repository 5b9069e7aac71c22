#!/bin/sh
#
# libfiatomic's layers (docs/fiatomic.md, Architecture): each folder of
# src/fiatomic may use only the folders before it in
#
#     base -> cell -> core -> target -> strategy -> api
#
# and its own. Two checks, both must pass:
#   includes  every #include "..." of a library file names its folder
#             ("core/fiatomic_ep.h"; the public "fiatomic.h" is the one
#             bare name) and that folder is its own or one before it;
#   calls     (needs the built objects) no object of a folder refers to a
#             symbol that an object of a later folder defines (nm): a core
#             file reaches the target side or a strategy only through the
#             tables they hand it, never by name.
# Usage: check-layers.sh [SRCDIR [BUILDDIR]]  (the source and build trees
# of src/fiatomic; under make check: $top_srcdir/src/fiatomic and
# ./src/fiatomic). CHECK_LAYERS_SKIP_CALLS=1 checks the includes only.
set -u

layers="base cell core target strategy api"
srcdir=${1:-${top_srcdir:-.}/src/fiatomic}
builddir=${2:-./src/fiatomic}
fail=0

rank() {
    r=0
    for l in $layers; do
        [ "$l" = "$1" ] && { echo $r; return; }
        r=$((r + 1))
    done
    echo -1
}

[ -f "$srcdir/fiatomic.h" ] || {
    echo "check-layers: no libfiatomic sources in $srcdir" >&2; exit 1; }

# Every library source lies in a layer folder.
for f in "$srcdir"/*.c "$srcdir"/*.h "$srcdir"/*/*.c "$srcdir"/*/*.h; do
    [ -e "$f" ] || continue
    rel=${f#"$srcdir"/}
    case $rel in
    fiatomic.h) continue ;;
    */*) dir=${rel%%/*} ;;
    *) dir= ;;
    esac
    if [ -z "$dir" ] || [ "$(rank "$dir")" -lt 0 ]; then
        echo "check-layers: $rel is in no layer folder ($layers)"
        fail=1
    fi
done

# Includes.
nfiles=0
for l in $layers; do
    for f in "$srcdir/$l"/*.c "$srcdir/$l"/*.h; do
        [ -e "$f" ] || continue
        nfiles=$((nfiles + 1))
        out=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' \
                  "$f" |
              while read -r inc; do
                  case $inc in
                  fiatomic.h) ;;
                  */*)
                      d=${inc%%/*}
                      r=$(rank "$d")
                      if [ "$r" -lt 0 ] || [ ! -f "$srcdir/$inc" ]; then
                          echo "$l/${f##*/}: includes \"$inc\": no such" \
                               "library header"
                      elif [ "$r" -gt "$(rank "$l")" ]; then
                          echo "$l/${f##*/}: includes \"$inc\": $d is" \
                               "above $l"
                      fi
                      ;;
                  *)
                      echo "$l/${f##*/}: includes \"$inc\" without its" \
                           "folder"
                      ;;
                  esac
              done)
        if [ -n "$out" ]; then
            echo "check-layers: $out"
            fail=1
        fi
    done
done
[ $nfiles -gt 0 ] || { echo "check-layers: no files in $srcdir/*/"; exit 1; }
echo "check-layers: includes of $nfiles files checked"

[ "${CHECK_LAYERS_SKIP_CALLS:-0}" = 1 ] && exit $fail

# Calls: the defined and undefined symbols of each folder's objects (a
# libtool build keeps the PIC objects in .libs/, a static one beside).
command -v nm >/dev/null || { echo "check-layers: nm not found" >&2; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
nobj=0
for l in $layers; do
    objs=$(ls "$builddir/$l"/.libs/*.o 2>/dev/null ||
           ls "$builddir/$l"/*.o 2>/dev/null)
    for o in $objs; do
        nobj=$((nobj + 1))
        src=${o##*/}
        src=${src#libfiatomic_la-}
        nm -P "$o" | awk -v l="$l" -v r="$(rank "$l")" -v s="$src" '
            $2 ~ /^[TDBRVWCG]$/ { print "D", $1, l, r, s }
            $2 == "U"           { print "U", $1, l, r, s }'
    done
done > "$tmp/syms"
[ $nobj -gt 0 ] || {
    echo "check-layers: no objects under $builddir (build libfiatomic" \
         "first)" >&2
    exit 1
}
out=$(awk '
    $1 == "D" { def[$2] = $3; rank[$2] = $4; file[$2] = $5; next }
    $1 == "U" { use[++n] = $0 }
    END {
        for (i = 1; i <= n; i++) {
            split(use[i], u, " ")
            if ((u[2] in def) && (rank[u[2]] > u[4])) {
                key = u[3] "/" u[5] " -> " def[u[2]] "/" file[u[2]] \
                      ": " u[2]
                if (!(key in seen)) {
                    seen[key] = 1
                    print key
                }
            }
        }
    }' "$tmp/syms" | sort)
if [ -n "$out" ]; then
    echo "check-layers: calls into a later layer:"
    echo "$out"
    fail=1
fi
echo "check-layers: symbols of $nobj objects checked"
[ $fail -eq 0 ] && echo "check-layers: passed" || echo "check-layers: FAILED"
exit $fail
