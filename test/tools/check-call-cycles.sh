#!/bin/sh
#
# No call loop between the files of libfiatomic (docs/fiatomic.md,
# Architecture): check-layers.sh keeps each folder from calling a later
# one; this keeps the files of a folder from calling each other in a ring,
# so that every file calls only files below it in one order.
#
# The graph comes from the built objects (nm): a file's undefined symbols
# (functions and data: a table of function pointers named by its symbol is
# a reference too) resolved to the library file that defines them. A
# strongly connected set of more than one file is a loop: it is printed as
# one ring through it and every reference inside it, and the check fails.
# When none is found, each folder's files are printed bottom up, by level
# (a file calls only files of its folder at lower levels).
# Usage: check-call-cycles.sh [BUILDDIR]  (the build tree of src/fiatomic;
# under make check: ./src/fiatomic).
set -u

layers="base cell core target strategy api"
builddir=${1:-./src/fiatomic}

command -v nm >/dev/null || {
    echo "check-call-cycles: nm not found" >&2; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# A libtool build keeps the PIC objects in .libs/, a static one beside.
nobj=0
for l in $layers; do
    objs=$(ls "$builddir/$l"/.libs/*.o 2>/dev/null ||
           ls "$builddir/$l"/*.o 2>/dev/null)
    for o in $objs; do
        nobj=$((nobj + 1))
        src=${o##*/}
        src=${src#libfiatomic_la-}
        nm -P "$o" | awk -v f="$l/${src%.o}.c" '
            $2 ~ /^[TDBRVWCG]$/ { print "D", $1, f }
            $2 == "U"           { print "U", $1, f }'
    done
done > "$tmp/syms"
[ $nobj -gt 0 ] || {
    echo "check-call-cycles: no objects under $builddir (build" \
         "libfiatomic first)" >&2
    exit 1
}

awk -v layers="$layers" '
    $1 == "D" { def[$2] = $3; node[$3] = 1; next }
    $1 == "U" { use[++nu] = $2 " " $3; node[$3] = 1 }
    END {
        n = 0
        for (f in node) {
            name[++n] = f
        }
        # sorted, so that the output does not depend on awk
        for (i = 2; i <= n; i++) {
            for (j = i; j > 1 && name[j - 1] > name[j]; j--) {
                t = name[j]; name[j] = name[j - 1]; name[j - 1] = t
            }
        }
        for (i = 1; i <= n; i++) {
            id[name[i]] = i
        }
        for (k = 1; k <= nu; k++) {
            split(use[k], u, " ")
            if (!(u[1] in def) || (def[u[1]] == u[2])) {
                continue
            }
            a = id[u[2]]
            b = id[def[u[1]]]
            # (mawk makes why[a, b] before it tests the condition)
            seen_ab = ((a, b) in edge)
            edge[a, b] = 1
            why[a, b] = seen_ab ? why[a, b] " " u[1] : u[1]
        }
        # reachability (Warshall): a few dozen files
        for (i = 1; i <= n; i++) {
            for (j = 1; j <= n; j++) {
                reach[i, j] = ((i, j) in edge)
            }
        }
        for (k = 1; k <= n; k++) {
            for (i = 1; i <= n; i++) {
                if (!reach[i, k]) {
                    continue
                }
                for (j = 1; j <= n; j++) {
                    if (reach[k, j]) {
                        reach[i, j] = 1
                    }
                }
            }
        }
        loops = 0
        for (i = 1; i <= n; i++) {
            if (done[i] || !reach[i, i]) {
                continue
            }
            ++loops
            members = ""
            for (j = 1; j <= n; j++) {
                if (reach[i, j] && reach[j, i]) {
                    done[j] = 1
                    in_loop[j] = loops
                    members = members " " name[j]
                }
            }
            printf "check-call-cycles: loop %d:%s\n", loops, members
            # one shortest ring through its first file (breadth first)
            delete prev
            delete seen
            q[1] = i
            qh = 1
            qt = 1
            found = 0
            while ((qh <= qt) && !found) {
                a = q[qh++]
                for (b = 1; b <= n; b++) {
                    if (!((a, b) in edge) || (in_loop[b] != loops)) {
                        continue
                    }
                    if (b == i) {
                        prev[i] = a
                        found = 1
                        break
                    }
                    if (!(b in seen)) {
                        seen[b] = 1
                        prev[b] = a
                        q[++qt] = b
                    }
                }
            }
            ring = name[i]
            b = prev[i]
            while (b != i) {
                ring = name[b] " -> " ring
                b = prev[b]
            }
            printf "  ring: %s -> %s\n", name[i], ring
            for (a = 1; a <= n; a++) {
                for (b = 1; b <= n; b++) {
                    if (((a, b) in edge) && (in_loop[a] == loops) &&
                        (in_loop[b] == loops)) {
                        printf "  %s -> %s: %s\n", name[a], name[b],
                               why[a, b]
                    }
                }
            }
        }
        if (loops > 0) {
            printf "check-call-cycles: %d loop(s) between %d files: FAILED\n",
                   loops, n
            exit 1
        }
        # no loop: each file one level above the highest file of its
        # folder it calls (check-layers.sh orders the folders)
        for (a = 1; a <= n; a++) {
            folder[a] = substr(name[a], 1, index(name[a], "/"))
        }
        for (pass = 0; pass < n; pass++) {
            changed = 0
            for (a = 1; a <= n; a++) {
                for (b = 1; b <= n; b++) {
                    if (((a, b) in edge) && (folder[a] == folder[b]) &&
                        (level[a] < level[b] + 1)) {
                        level[a] = level[b] + 1
                        changed = 1
                    }
                }
            }
            if (!changed) {
                break
            }
        }
        nl = split(layers, layer, " ")
        for (l = 1; l <= nl; l++) {
            line = ""
            for (lv = 0; lv < n; lv++) {
                group = ""
                for (a = 1; a <= n; a++) {
                    dir = substr(name[a], 1, length(layer[l]) + 1)
                    if ((dir == layer[l] "/") && (level[a] == lv)) {
                        f = substr(name[a], length(layer[l]) + 2)
                        group = (group == "") ? f : group " " f
                    }
                }
                if (group != "") {
                    line = line sprintf("\n    %d: %s", lv, group)
                }
            }
            printf "check-call-cycles: %s, bottom up:%s\n", layer[l], line
        }
        printf "check-call-cycles: no loop between %d files: passed\n", n
    }' "$tmp/syms"
