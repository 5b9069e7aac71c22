#
# The libfabric provider "fiatomic" (src/prov/fiatomic): needs libfabric's
# provider header (rdma/providers/fi_prov.h) and its library, which the
# provider calls back into (fi_allocinfo, fi_dupinfo, fi_freeinfo).
#
AC_ARG_ENABLE([fi-provider],
    [AS_HELP_STRING([--disable-fi-provider],
        [do not build the libfabric provider libfiatomic-fi.so])],
    [], [enable_fi_provider=yes])
fi_provider_happy=no
AS_IF([test "x$enable_fi_provider" != "xno"], [
    AC_CHECK_HEADER([rdma/providers/fi_prov.h],
        [AC_CHECK_LIB([fabric], [fi_dupinfo], [fi_provider_happy=yes])],
        [], [#include <rdma/fabric.h>])
    AS_IF([test "x$fi_provider_happy" != "xyes"],
          [AC_MSG_ERROR([the libfabric provider needs libfabric's provider header and library (rdma/providers/fi_prov.h, -lfabric). On Debian 12: apt-get install libfabric-dev, or configure with --disable-fi-provider])])
])
AM_CONDITIONAL([HAVE_FI_PROVIDER], [test "x$fi_provider_happy" = "xyes"])
AC_CONFIG_FILES([src/prov/fiatomic/Makefile])
