#!/bin/bash
# "make install" of a build configured against a UCX that loads transport
# modules from directories (>= 1.22) puts libuct_atomicx where that UCX looks:
# installs into a staging directory (DESTDIR) and checks the module's file
# name there (lib<framework>_<name> with libucs's own extension), then has
# that UCX's ucx_info load it from the staged copy (UCX_PLUGIN_PATH), with no
# verbs device needed.
# Usage: contrib/check-ucx-install.sh <build-dir>
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: check-ucx-install.sh <build-dir>}" && pwd)
eval "$("$here/softroce/ucx-of-build.sh" "$build")"
[ "${load_env[0]%%=*}" = UCX_PLUGIN_PATH ] ||
    { echo "check-ucx-install: UCX $ucx_version loads no module directory; nothing to check"; exit 0; }

moddir=$(sed -n 's/^atomicxlibdir = //p' "$build/Makefile" | head -1)
# UCX loads lib<framework>_<name> files with libucs's own extension, from
# the name libucs was loaded by: its soname (libucs.so.0 -> .so.0)
soname=$(readelf -d "$(dirname "$moddir")/libucs.so" 2>/dev/null |
         sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ -n "$soname" ] || { echo "check-ucx-install: no libucs soname next to $moddir" >&2; exit 1; }
ext=.${soname#libucs.}
stage=$(mktemp -d /tmp/check-ucx-install.XXXXXX)
trap 'rm -rf "$stage"' EXIT
make -C "$build/src/uct/atomicx" install DESTDIR="$stage" > "$stage.log" 2>&1 ||
    { cat "$stage.log"; rm -f "$stage.log"; exit 1; }
rm -f "$stage.log"
module=$stage$moddir/libuct_atomicx$ext
if [ ! -e "$module" ]; then
    echo "check-ucx-install: FAILED: $module missing; installed:"; find "$stage" -type f -o -type l
    exit 1
fi
echo "check-ucx-install: make install put $(basename "$module") into $moddir (UCX $ucx_version's module directory)"
# No verbs device here, so ucx_info -d would list no atomicx resource; but
# ucx_info -c loads UCT's modules and prints the configuration of every
# registered transport: UCX_ATOMICX_* there means the module was loaded.
out=$(UCX_PLUGIN_PATH=$(dirname "$module") ucx_info -c 2>&1)
if ! grep -q '^UCX_ATOMICX_TX_QUEUE_LEN=' <<<"$out"; then
    echo "check-ucx-install: FAILED: ucx_info -c of UCX $ucx_version does not load the installed module"
    exit 1
fi
if grep -q '^UCX_ATOMICX_' <<<"$(ucx_info -c 2>&1)"; then
    echo "check-ucx-install: FAILED: ucx_info -c shows atomicx without the staged module: the test proves nothing"
    exit 1
fi
echo "check-ucx-install: ucx_info -c (UCX_PLUGIN_PATH=<staged module dir>, no LD_PRELOAD) loads the installed atomicx module: ok"
