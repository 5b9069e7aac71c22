# atomicx UCT transport: configure fragment (filled in by the transport work).
atomicx_happy=no
AM_CONDITIONAL([HAVE_ATOMICX], [test "x$atomicx_happy" = "xyes"])
