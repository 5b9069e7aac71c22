#!/bin/bash
# make installcheck (and so make distcheck): what make install put in place
# works for a consumer.
#  - a program using fiatomic.h (examples/fiatomic_example.c) compiles and
#    links with nothing but `pkg-config --cflags --libs fiatomic` against the
#    installed prefix, and runs; fiatomic.pc names libfabric, whose include
#    flags fiatomic.h needs;
#  - the tools run from the installed bindir (--version);
#  - the manual pages and their per-function aliases are installed;
#  - the libfabric provider, where built, is installed in the provider
#    directory and fi_info finds it there.
# Environment (from Makefile.am): DESTDIR, bindir, libdir, mandir, CC,
# top_srcdir.
set -uo pipefail
# Outputs are matched from variables, never as `cmd | grep -q`: grep -q
# exits at its match, and a writer with more to write dies of SIGPIPE,
# which pipefail reports as a failed match (ldd did, one run in ten).
root=${DESTDIR:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

export PKG_CONFIG_PATH="$root$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
[ -z "$root" ] || export PKG_CONFIG_SYSROOT_DIR="$root"
export LD_LIBRARY_PATH="$root$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

flags=$(pkg-config --cflags --libs fiatomic) || { echo "FAIL: pkg-config fiatomic"; exit 1; }
echo "pkg-config --cflags --libs fiatomic: $flags"
# fiatomic.h includes libfabric's headers: their flags must come with
# --cflags even where they are in /usr/include (and so not visible here)
if pkg-config --exists libfabric; then
    requires=$(pkg-config --print-requires-private fiatomic)
    grep -q '^libfabric' <<< "$requires" ||
        bad "fiatomic.pc does not name libfabric (Requires.private)"
    for f in $(pkg-config --cflags-only-I libfabric); do
        [[ " $flags " == *" $f "* ]] || bad "--cflags lacks libfabric's $f"
    done
fi
# shellcheck disable=SC2086
if ${CC:-cc} -std=c99 -Wall -Werror -o "$tmp/consumer" \
       "$top_srcdir/examples/fiatomic_example.c" $flags; then
    out=$("$tmp/consumer" 2>&1) || bad "the consumer failed: $out"
    grep -q "^fetch MIN double x4 via " <<< "$out" ||
        bad "the consumer's output: $out"
    deps=$(ldd "$tmp/consumer")
    grep -q "$root$libdir/libfiatomic.so" <<< "$deps" ||
        bad "the consumer does not use the installed libfiatomic"
else
    bad "a consumer of fiatomic.h does not build with pkg-config's flags"
fi

for tool in fiatomic_info fiatomic_perftest; do
    version=$("$root$bindir/$tool" --version)
    grep -q "^$tool (atomicx) " <<< "$version" ||
        bad "$root$bindir/$tool --version"
done

for page in man3/fiatomic.3 man3/fiatomic_atomic.3 man1/fiatomic_info.1 \
            man1/fiatomic_perftest.1; do
    [ -s "$root$mandir/$page" ] || bad "$page is not installed"
done
grep -qx '.so man3/fiatomic_atomic.3' "$root$mandir/man3/fiatomic_fetch_atomic_nbx.3" ||
    bad "man3/fiatomic_fetch_atomic_nbx.3 is no alias of fiatomic_atomic.3"

prov_dir=$root$libdir/libfabric
if [ -e "$prov_dir/libfiatomic-fi.so" ]; then
    [ -s "$root$mandir/man7/fi_fiatomic.7" ] || bad "man7/fi_fiatomic.7 is not installed"
    if command -v fi_info > /dev/null; then
        out=$(FI_PROVIDER_PATH=$prov_dir FI_PROVIDER=fiatomic fi_info -p fiatomic 2>&1)
        echo "$out" | grep -q "^provider: fiatomic" ||
            bad "fi_info does not list the installed provider: $out"
    else
        echo "fi_info not installed (Debian: libfabric-bin): provider listing not checked"
    fi
fi

[ $fail -eq 0 ] && echo "PASS: installcheck" || echo "FAIL: installcheck"
exit $fail
