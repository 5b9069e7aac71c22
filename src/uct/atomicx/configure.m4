#
# atomicx UCT transport: an out-of-tree UCX component built against the
# installed UCX, with internal headers from the matching UCX source tree.
#
# Sets atomicx_happy, the HAVE_ATOMICX conditional, ATOMICX_UCX_SRC (the source
# tree), UCX_INFO (generates the build-config header, see Makefile.am),
# IBVERBS_LIBS, ATOMICX_UCT_COMPAT_CPPFLAGS (which internal UCT API the tree
# has, see atomicx_compat.h), and where the library is installed: UCX's module
# directory when that UCX loads transports from it (UCX >= 1.22), else libdir.
#

# ATOMICX_UCT_CHECK(NAME, WHAT, BODY): defines ATOMICX_UCT_NAME=1 for atomicx's
# sources when BODY compiles against UCX's internal headers
AC_DEFUN([ATOMICX_UCT_CHECK], [
    AC_MSG_CHECKING([whether UCX's internal UCT API $2])
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[
#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <uct/base/uct_component.h>
]], [[$3]])],
        [AC_MSG_RESULT([yes])
         ATOMICX_UCT_COMPAT_CPPFLAGS="$ATOMICX_UCT_COMPAT_CPPFLAGS -DATOMICX_UCT_$1=1"],
        [AC_MSG_RESULT([no])])
])

# ATOMICX_UCT_SAME_TYPE(NAME, WHAT, TYPE1, TYPE2)
AC_DEFUN([ATOMICX_UCT_SAME_TYPE], [
    ATOMICX_UCT_CHECK([$1], [$2],
        [_Static_assert(__builtin_types_compatible_p($3, $4), "differs");])
])

# ATOMICX_UCT_MEMBER(NAME, TYPE, MEMBER)
AC_DEFUN([ATOMICX_UCT_MEMBER], [
    ATOMICX_UCT_CHECK([$1], [has $2::$3],
        [$2 probe; (void)sizeof(probe.$3);])
])
AC_ARG_WITH([ucx-src],
    [AS_HELP_STRING([--with-ucx-src=DIR],
        [source tree of exactly the installed UCX version, for the atomicx
         transport (default: PREFIX/src of --with-ucx=PREFIX when it has one,
         as contrib/build-ucx.sh leaves it, else build-deps/ucx-VERSION as
         contrib/get-ucx-src.sh fetches it; "no" disables atomicx)])],
    [], [with_ucx_src=default])

atomicx_happy=no
AS_IF([test "x$with_ucx_src" != "xno"], [
    # A missing default tree disables atomicx with a warning; a tree given
    # explicitly must be usable.
    AS_IF([test "x$with_ucx_src" = "xdefault" || test "x$with_ucx_src" = "xyes"],
          [atomicx_src_explicit=no
           AS_IF([test -n "$UCX_PREFIX" && test -f "$UCX_PREFIX/src/src/uct/base/uct_iface.h"],
                 [atomicx_ucx_src=$UCX_PREFIX/src],
                 [atomicx_ucx_src=`cd "$srcdir" && pwd`/build-deps/ucx-$UCX_VERSION])],
          [atomicx_src_explicit=yes
           atomicx_ucx_src=`cd "$with_ucx_src" 2>/dev/null && pwd`
           AS_IF([test -z "$atomicx_ucx_src"],
                 [AC_MSG_ERROR([--with-ucx-src: $with_ucx_src is not a directory])])])
    atomicx_fail() {
        AS_IF([test "x$atomicx_src_explicit" = "xyes"],
              [AC_MSG_ERROR([atomicx: $[]1])],
              [AC_MSG_WARN([atomicx transport disabled: $[]1])])
    }

    # ucx_info of the UCX built against: the --with-ucx prefix's, else PATH's
    AS_IF([test -n "$UCX_PREFIX"],
          [AC_PATH_PROG([UCX_INFO], [ucx_info], [no], [$UCX_PREFIX/bin])],
          [AC_PATH_PROG([UCX_INFO], [ucx_info], [no])])
    AC_MSG_CHECKING([for the UCX source tree used by atomicx])
    AS_IF([test -f "$atomicx_ucx_src/src/uct/base/uct_iface.h"],
          [AC_MSG_RESULT([$atomicx_ucx_src])
           atomicx_src_ok=yes],
          [AC_MSG_RESULT([no])
           atomicx_src_ok=no
           atomicx_fail "$atomicx_ucx_src has no src/uct/base/uct_iface.h; run contrib/get-ucx-src.sh (fetches the source of the installed UCX) or pass --with-ucx-src=DIR"])

    AS_IF([test "x$atomicx_src_ok" = "xyes"], [
        # The source's version (UCX's configure.ac) must be the installed one:
        # both the headers (pkg-config) and the runtime (ucx_info -v).
        atomicx_ver_get() {
            sed -n "s/^@<:@a-z@:>@*(.ucx_ver_$1., *\(@<:@0-9@:>@*\)).*/\1/p" \
                "$atomicx_ucx_src/configure.ac" | head -1
        }
        atomicx_src_ver="`atomicx_ver_get major`.`atomicx_ver_get minor`.`atomicx_ver_get patch`"
        AS_IF([test "x$UCX_INFO" != "xno"],
              [atomicx_rt_ver=`$UCX_INFO -v | sed -n -e 's/^# Version //p' -e 's/^# Library version: //p'`],
              [atomicx_rt_ver=unknown])
        AC_MSG_CHECKING([that the UCX source ($atomicx_src_ver) matches the installed UCX ($UCX_VERSION, runtime $atomicx_rt_ver)])
        AS_IF([test "x$atomicx_src_ver" = "x$UCX_VERSION" &&
               test "x$atomicx_rt_ver" = "x$UCX_VERSION"],
              [AC_MSG_RESULT([yes])
               atomicx_ver_ok=yes],
              [AC_MSG_RESULT([no])
               atomicx_ver_ok=no
               atomicx_fail "UCX version mismatch: source tree $atomicx_ucx_src is $atomicx_src_ver, installed UCX is $UCX_VERSION (ucx_info: $atomicx_rt_ver). The component must be built against exactly the installed version; rerun contrib/get-ucx-src.sh or pass the matching --with-ucx-src"])
    ])

    AS_IF([test "x$atomicx_ver_ok" = "xyes"], [
        # The layout of uct_base_iface_t depends on UCX's build configuration:
        # the header is generated from "ucx_info -b" (see Makefile.am).
        AC_MSG_CHECKING([that ucx_info -b prints UCX's build configuration])
        AS_IF([test "x$UCX_INFO" != "xno" &&
               $UCX_INFO -b 2>/dev/null | grep -q '^#define UCX_CONFIG_H'],
              [AC_MSG_RESULT([yes])
               atomicx_info_ok=yes],
              [AC_MSG_RESULT([no])
               atomicx_fail "ucx_info -b does not work; install ucx-utils"])
    ])

    AS_IF([test "x$atomicx_info_ok" = "xyes"], [
        atomicx_verbs_ok=yes
        AC_CHECK_HEADER([infiniband/verbs.h], [], [atomicx_verbs_ok=no])
        AC_CHECK_LIB([ibverbs], [ibv_open_device], [IBVERBS_LIBS=-libverbs],
                     [atomicx_verbs_ok=no])
        AC_CHECK_DECLS([ibv_query_gid_ex, IBV_ATOMIC_HCA], [],
                       [atomicx_verbs_ok=no],
                       [[#include <infiniband/verbs.h>]])
        AS_IF([test "x$atomicx_verbs_ok" = "xyes"],
              [atomicx_compat_ok=yes],
              [atomicx_fail "libibverbs (rdma-core >= 32) not found; install libibverbs-dev"])
    ])

    AS_IF([test "x$atomicx_compat_ok" = "xyes"], [
        # The internal UCT API differs between UCX releases: each difference
        # atomicx meets is probed in the tree itself (atomicx_compat.h).
        save_CPPFLAGS=$CPPFLAGS
        atomicx_ucx_build_h=`pwd`/atomicx-ucx-build.h
        { echo "#define _GNU_SOURCE 1"; $UCX_INFO -b; } > "$atomicx_ucx_build_h"
        CPPFLAGS="$CPPFLAGS -include $atomicx_ucx_build_h -isystem $atomicx_ucx_src/src $UCX_CFLAGS"
        ATOMICX_UCT_COMPAT_CPPFLAGS=
        ATOMICX_UCT_CHECK([HEADERS], [headers compile], [uct_base_iface_t iface; (void)iface;])
        AS_IF([echo "$ATOMICX_UCT_COMPAT_CPPFLAGS" | grep -q HEADERS], [
            ATOMICX_UCT_SAME_TYPE([MD_QUERY_V2], [md query fills uct_md_attr_v2_t],
                [uct_md_query_func_t], [ucs_status_t (*)(uct_md_h, uct_md_attr_v2_t*)])
            ATOMICX_UCT_SAME_TYPE([MEM_REG_PARAMS], [mem_reg takes uct_md_mem_reg_params_t],
                [uct_md_mem_reg_func_t],
                [ucs_status_t (*)(uct_md_h, void*, size_t, const uct_md_mem_reg_params_t*, uct_mem_h*)])
            ATOMICX_UCT_SAME_TYPE([MKEY_PACK_ADDRESS], [mkey_pack takes the address and length],
                [uct_md_mkey_pack_func_t],
                [ucs_status_t (*)(uct_md_h, uct_mem_h, void*, size_t, const uct_md_mkey_pack_params_t*, void*)])
            ATOMICX_UCT_SAME_TYPE([RKEY_UNPACK_PARAMS], [rkey_unpack takes uct_rkey_unpack_params_t],
                [uct_component_rkey_unpack_func_t],
                [ucs_status_t (*)(uct_component_t*, const void*, const uct_rkey_unpack_params_t*, uct_rkey_t*, void**)])
            ATOMICX_UCT_MEMBER([MD_OPS_IS_SOCKADDR_ACCESSIBLE], [uct_md_ops_t], [is_sockaddr_accessible])
            ATOMICX_UCT_MEMBER([MD_OPS_MEM_ATTACH], [uct_md_ops_t], [mem_attach])
            ATOMICX_UCT_MEMBER([MD_OPS_MEM_ELEM_PACK], [uct_md_ops_t], [mem_elem_pack])
            ATOMICX_UCT_MEMBER([COMPONENT_RKEY_COMPARE], [uct_component_t], [rkey_compare])
            ATOMICX_UCT_CHECK([BASE_IFACE_INTERNAL_OPS], [has uct_base_iface_internal_ops],
                [(void)&uct_base_iface_internal_ops;])
            ATOMICX_UCT_MEMBER([IFACE_QUERY_V2], [uct_iface_internal_ops_t], [iface_query_v2])
            ATOMICX_UCT_MEMBER([EP_CONNECT_TO_EP_V2], [uct_iface_internal_ops_t], [ep_connect_to_ep_v2])
            ATOMICX_UCT_MEMBER([IFACE_IS_REACHABLE_V2], [uct_iface_internal_ops_t], [iface_is_reachable_v2])
            ATOMICX_UCT_MEMBER([EP_IS_CONNECTED], [uct_iface_internal_ops_t], [ep_is_connected])
            ATOMICX_UCT_MEMBER([EP_GET_DEVICE_EP], [uct_iface_internal_ops_t], [ep_get_device_ep])
            ATOMICX_UCT_MEMBER([EP_PUT_SGL_ZCOPY], [uct_iface_internal_ops_t], [ep_put_sgl_zcopy])
            atomicx_happy=yes
        ], [atomicx_fail "UCX's internal headers in $atomicx_ucx_src do not compile (see config.log)"])
        CPPFLAGS=$save_CPPFLAGS
        rm -f "$atomicx_ucx_build_h"
    ])
])

# Where UCX loads transport modules from: UCX >= 1.22 scans its module
# directory (<libucs dir>/ucx) and UCX_PLUGIN_PATH for lib<framework>_<name>
# files; older releases load only the modules named at their build time, and
# atomicx is linked or preloaded there.
AC_ARG_WITH([ucx-module-dir],
    [AS_HELP_STRING([--with-ucx-module-dir=DIR],
        [where "make install" puts libuct_atomicx on a UCX that loads
         transport modules from directories (>= 1.22; default: that UCX's
         module directory, LIBDIR/ucx of its pkg-config file); "no": libdir,
         for UCX_PLUGIN_PATH=LIBDIR])],
    [], [with_ucx_module_dir=default])
atomicx_ver_num=`echo "$UCX_VERSION" | awk -F. '{ printf "%d", $[]1 * 1000 + $[]2 }'`
AS_IF([test "$atomicx_ver_num" -ge 1022], [UCX_LOADS_PLUGINS=yes], [UCX_LOADS_PLUGINS=no])
AS_IF([test "x$UCX_LOADS_PLUGINS" = "xyes" && test "x$with_ucx_module_dir" != "xno"],
      [AS_IF([test "x$with_ucx_module_dir" = "xdefault" || test "x$with_ucx_module_dir" = "xyes"],
             [atomicxlibdir="`$PKG_CONFIG --variable=libdir ucx`/ucx"],
             [atomicxlibdir=$with_ucx_module_dir])
       atomicx_load_how="(a UCX module, installed in $atomicxlibdir)"],
      [atomicxlibdir='${libdir}'
       AS_IF([test "x$UCX_LOADS_PLUGINS" = "xyes"],
             [atomicx_load_how="(a UCX module: UCX_PLUGIN_PATH=libdir)"],
             [atomicx_load_how="(UCX $UCX_VERSION loads no out-of-tree module: link or LD_PRELOAD)"])])
AC_SUBST([atomicxlibdir])
AC_SUBST([UCX_LOADS_PLUGINS])
AC_SUBST([ATOMICX_UCT_COMPAT_CPPFLAGS])

# libuct and libucs only (UCX_LIBS also names libucp and libucm)
UCX_LIBS_UCT="`$PKG_CONFIG --libs-only-L ucx` -luct -lucs $UCX_RPATH"
ATOMICX_UCX_SRC=$atomicx_ucx_src
AC_SUBST([ATOMICX_UCX_SRC])
AC_SUBST([UCX_LIBS_UCT])
AC_SUBST([IBVERBS_LIBS])
AM_CONDITIONAL([HAVE_ATOMICX], [test "x$atomicx_happy" = "xyes"])
AC_CONFIG_FILES([src/uct/atomicx/Makefile])
