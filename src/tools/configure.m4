#
# fiatomic_perftest's libfabric baseline (--baseline libfabric): an optional
# feature, on when pkg-config finds libfabric. The library itself only uses
# libfabric's headers and never links it; only the benchmark does.
#
# Sets perftest_libfabric_happy, the HAVE_LIBFABRIC conditional and define,
# LIBFABRIC_CFLAGS and LIBFABRIC_LIBS.
#
AC_ARG_WITH([libfabric],
    [AS_HELP_STRING([--with-libfabric],
        [build fiatomic_perftest's libfabric baseline (default: if
         pkg-config finds libfabric; "yes" makes it required)])],
    [], [with_libfabric=check])

perftest_libfabric_happy=no
AS_IF([test "x$with_libfabric" != "xno"],
      [PKG_CHECK_MODULES([LIBFABRIC], [libfabric],
           [perftest_libfabric_happy=yes],
           [AS_IF([test "x$with_libfabric" = "xyes"],
                  [AC_MSG_ERROR([--with-libfabric: libfabric not found by pkg-config ($LIBFABRIC_PKG_ERRORS). On Debian 12: apt-get install libfabric-dev])],
                  [AC_MSG_WARN([libfabric not found: fiatomic_perftest is built without --baseline libfabric])])])])

AS_IF([test "x$perftest_libfabric_happy" = "xyes"],
      [AC_DEFINE([HAVE_LIBFABRIC], [1],
                 [Define to 1 to build fiatomic_perftest's libfabric baseline])])
AM_CONDITIONAL([HAVE_LIBFABRIC], [test "x$perftest_libfabric_happy" = "xyes"])
