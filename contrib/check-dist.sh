#!/bin/bash
# The packaging checks of the test command, cheap enough for every run
# (a few seconds; `make distcheck` rebuilds and retests everything instead):
#  1. make dist; the tarball carries docs/, the manual pages and the tests'
#     scripts (README links docs/; make check needs the rest), and no test
#     results of the build directory (its make check would skip those tests);
#  2. make install into a scratch DESTDIR, then make installcheck there: a
#     consumer of fiatomic.h built with pkg-config's flags only, the tools,
#     the manual pages (test/tools/installcheck.sh);
#  3. make uninstall leaves no file behind.
#
#   contrib/check-dist.sh BUILD-DIR
set -uo pipefail
build=${1:?usage: check-dist.sh BUILD-DIR}
cd "$build" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

version=$(sed -n "s/^PACKAGE_VERSION = //p" Makefile)
tarball=atomicx-$version.tar.gz
rm -f "$tarball"
make dist > "$tmp/dist.log" 2>&1 || { tail -20 "$tmp/dist.log"; echo "FAIL: make dist"; exit 1; }
tar tzf "$tarball" > "$tmp/contents" || bad "cannot list $tarball"
for f in README.md NEWS docs/atomicx.md docs/performance.md man/fiatomic.3 \
         man/fiatomic_atomic.3 man/fiatomic_info.1 man/fiatomic_perftest.1 \
         man/atomicx.7 man/check-man.sh test/tools/test-tools.sh \
         test/tools/installcheck.sh src/fiatomic/fiatomic.h; do
    grep -qx "atomicx-$version/$f" "$tmp/contents" || bad "$tarball lacks $f"
done
stale=$(grep -E '\.(log|trs)$' "$tmp/contents" | head -3)
[ -z "$stale" ] || bad "$tarball carries test results: $stale"
echo "make dist: $tarball, $(wc -l < "$tmp/contents") entries"
rm -f "$tarball"

make install DESTDIR="$tmp/inst" > "$tmp/install.log" 2>&1 ||
    { tail -20 "$tmp/install.log"; bad "make install"; }
make installcheck DESTDIR="$tmp/inst" > "$tmp/installcheck.log" 2>&1 ||
    bad "make installcheck"
grep -E '^(FAIL|PASS|pkg-config)' "$tmp/installcheck.log"
make uninstall DESTDIR="$tmp/inst" > "$tmp/uninstall.log" 2>&1 || bad "make uninstall"
left=$(find "$tmp/inst" -type f | head -5)
[ -z "$left" ] || bad "make uninstall left: $left"

[ $fail -eq 0 ] && echo "PASS: packaging" || echo "FAIL: packaging"
exit $fail
