#!/bin/bash
# The UCX an atomicx build directory was configured with, as shell
# assignments for the guest scripts to eval:
#   ucx_version  its version
#   ucx_prefix   its prefix (--with-ucx), empty for the system's UCX;
#                PATH gets its bin directory first (ucx_info, ucx_perftest)
#   load_env     how a UCX program finds the atomicx transport of the build:
#                UCX_PLUGIN_PATH=<its .libs> on a UCX that loads transport
#                modules from directories (>= 1.22), else LD_PRELOAD=<library>
# Usage: eval "$(contrib/softroce/ucx-of-build.sh <build-dir>)"
set -euo pipefail
build=$(cd "${1:?usage: ucx-of-build.sh <build-dir>}" && pwd)
mk=$build/Makefile
[ -f "$mk" ] || { echo "ucx-of-build: $build is not a configured build directory" >&2; exit 1; }
var() { sed -n "s/^$1 = //p" "$mk" | head -1; }
version=$(var UCX_VERSION)
prefix=$(var UCX_PREFIX)
plugins=$(var UCX_LOADS_PLUGINS)
libs=$build/src/uct/atomicx/.libs
printf 'ucx_version=%q\n' "$version"
printf 'ucx_prefix=%q\n' "$prefix"
[ -z "$prefix" ] || printf 'PATH=%q:"$PATH"; export PATH\n' "$prefix/bin"
if [ "$plugins" = yes ]; then
    printf 'load_env=(%q)\n' "UCX_PLUGIN_PATH=$libs"
else
    printf 'load_env=(%q)\n' "LD_PRELOAD=$libs/libuct_atomicx.so.0"
fi
