#!/bin/bash
# The packaging checks of the test command, on a configured and built tree:
#  1. make distcheck: the `make dist` tarball unpacked with its sources
#     read-only, configured as BUILD-DIR is (configure.ac: the same UCX and
#     UCX source tree, -Werror; its C++ test drivers at -O0), built in a
#     directory of its own, make check,
#     make install, make installcheck (test/tools/installcheck.sh: a
#     consumer of fiatomic.h built with pkg-config's flags only, the tools,
#     the manual pages), make uninstall leaving no file, a DESTDIR install,
#     a tarball made again from that build, distclean leaving no file; and
#     the tarball carries no test results (distcheck-hook). A file the build,
#     the tests or the installed package need and the tarball lacks fails
#     it. Its make check is the quick one (CHECK_QUICK=1, test/gtest/
#     Makefile.am: the gtest suites in three configurations, every other
#     test in full); BUILD-DIR's own make check runs the whole suites, and
#     its logs are the ones contrib/ucx-log-check.sh judges.
#  2. what distcheck does not: the tarball configured without the UCX
#     source tree (the atomicx transport off) makes its own tarball again;
#     a packager's staged install from BUILD-DIR (make install
#     DESTDIR=...), make installcheck in that DESTDIR (pkg-config through
#     PKG_CONFIG_SYSROOT_DIR), and make uninstall leaving no file there.
#
#   contrib/check-dist.sh BUILD-DIR
# ATOMICX_JOBS: make's -j for the distcheck build (default: nproc). The
# distcheck output goes to BUILD-DIR/distcheck.log.
set -uo pipefail
build=${1:?usage: check-dist.sh BUILD-DIR}
cd "$build" || exit 1
build=$(pwd)
jobs=${ATOMICX_JOBS:-$(nproc)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

version=$(sed -n "s/^PACKAGE_VERSION = //p" Makefile)
tarball=atomicx-$version.tar.gz
log=$build/distcheck.log
t0=$(date +%s)
# The tarball's test drivers (all of the project's C++ is test code) are
# compiled at -O0, as in the sanitizer and UCX 1.22.0 builds: at -O2 they
# took most of distcheck's build time, and BUILD-DIR already compiled them
# at -O2 with -Werror; the libraries, tools and transport keep -O2.
if make -j"$jobs" distcheck CHECK_QUICK=1 DISTCHECK_CONFIGURE_FLAGS=CXXFLAGS=-O0 \
        > "$log" 2>&1; then
    echo "PASS: make distcheck ($tarball: $(( $(date +%s) - t0 )) s)"
else
    grep -E "error|Error|ERROR|^FAIL:" "$log" | head -40
    tail -20 "$log"
    bad "make distcheck ($(( $(date +%s) - t0 )) s, output in $log)"
fi
# What the tarball's make check and installcheck ran
grep -E '^(PASS|FAIL|ERROR|SKIP|XFAIL|XPASS):' "$log" | sort | uniq -c |
    sed 's/^ */  distcheck: /'
filter=$(sed -n 's/^CHECK_QUICK: GTEST_FILTER=//p' "$log" | head -1)
for suite in test_fiatomic test_atomicx_host; do
    bin=$build/test/gtest/$suite
    [ -n "$filter" ] && [ -x "$bin" ] || continue
    all=$("$bin" --gtest_list_tests 2>/dev/null | grep -c '^  ')
    quick=$(GTEST_FILTER=$filter "$bin" --gtest_list_tests 2>/dev/null |
            grep -c '^  ')
    echo "  distcheck: $suite ran $quick of its $all tests (CHECK_QUICK)"
done
# The tarball configured without a UCX source tree (the atomicx transport
# off, no ucx_info looked for): a packager building libfiatomic alone must
# still be able to make the tarball again
if [ -f "$tarball" ] && mkdir -p "$tmp/nosrc/build" &&
        tar -xzf "$tarball" -C "$tmp/nosrc"; then
    t0=$(date +%s)
    if (cd "$tmp/nosrc/build" &&
            "../atomicx-$version/configure" --with-ucx-src=no > configure.log 2>&1 &&
            make dist > dist.log 2>&1 && [ -f "$tarball" ]); then
        echo "PASS: make dist without the UCX source ($(( $(date +%s) - t0 )) s)"
    else
        tail -20 "$tmp/nosrc/build/configure.log" "$tmp/nosrc/build/dist.log" 2>/dev/null
        bad "make dist in a tree configured without the UCX source"
    fi
else
    bad "no $tarball to unpack after make distcheck"
fi
rm -rf "$tmp/nosrc"
rm -f "$tarball"

make install DESTDIR="$tmp/inst" > "$tmp/install.log" 2>&1 ||
    { tail -20 "$tmp/install.log"; bad "make install DESTDIR"; }
make installcheck DESTDIR="$tmp/inst" > "$tmp/installcheck.log" 2>&1 ||
    bad "make installcheck DESTDIR"
grep -E '^(FAIL|PASS|pkg-config)' "$tmp/installcheck.log"
make uninstall DESTDIR="$tmp/inst" > "$tmp/uninstall.log" 2>&1 ||
    bad "make uninstall DESTDIR"
left=$(find "$tmp/inst" -type f | head -5)
[ -z "$left" ] || bad "make uninstall DESTDIR left: $left"

[ $fail -eq 0 ] && echo "PASS: packaging" || echo "FAIL: packaging"
exit $fail
