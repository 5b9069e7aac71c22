#
# atomicx UCT transport: an out-of-tree UCX component built against the
# installed UCX, with internal headers from the matching UCX source tree.
#
# Sets atomicx_happy, the HAVE_ATOMICX conditional, ATOMICX_UCX_SRC (the source
# tree), UCX_INFO (generates the build-config header, see Makefile.am) and
# IBVERBS_LIBS.
#
AC_ARG_WITH([ucx-src],
    [AS_HELP_STRING([--with-ucx-src=DIR],
        [source tree of exactly the installed UCX version, for the atomicx
         transport (default: build-deps/ucx-VERSION as fetched by
         contrib/get-ucx-src.sh; "no" disables atomicx)])],
    [], [with_ucx_src=default])

atomicx_happy=no
AS_IF([test "x$with_ucx_src" != "xno"], [
    # A missing default tree disables atomicx with a warning; a tree given
    # explicitly must be usable.
    AS_IF([test "x$with_ucx_src" = "xdefault" || test "x$with_ucx_src" = "xyes"],
          [atomicx_src_explicit=no
           atomicx_ucx_src=`cd "$srcdir" && pwd`/build-deps/ucx-$UCX_VERSION],
          [atomicx_src_explicit=yes
           atomicx_ucx_src=`cd "$with_ucx_src" 2>/dev/null && pwd`
           AS_IF([test -z "$atomicx_ucx_src"],
                 [AC_MSG_ERROR([--with-ucx-src: $with_ucx_src is not a directory])])])
    atomicx_fail() {
        AS_IF([test "x$atomicx_src_explicit" = "xyes"],
              [AC_MSG_ERROR([atomicx: $[]1])],
              [AC_MSG_WARN([atomicx transport disabled: $[]1])])
    }

    AC_PATH_PROG([UCX_INFO], [ucx_info], [no])
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
              [atomicx_rt_ver=`$UCX_INFO -v | sed -n 's/^# Version //p'`],
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
              [atomicx_happy=yes],
              [atomicx_fail "libibverbs (rdma-core >= 32) not found; install libibverbs-dev"])
    ])
])

# libuct and libucs only (UCX_LIBS also names libucp and libucm)
UCX_LIBS_UCT="`$PKG_CONFIG --libs-only-L ucx` -luct -lucs"
ATOMICX_UCX_SRC=$atomicx_ucx_src
AC_SUBST([ATOMICX_UCX_SRC])
AC_SUBST([UCX_LIBS_UCT])
AC_SUBST([IBVERBS_LIBS])
AM_CONDITIONAL([HAVE_ATOMICX], [test "x$atomicx_happy" = "xyes"])
AC_CONFIG_FILES([src/uct/atomicx/Makefile])
