/* The library's shared containers, compiled into the test (the library
 * keeps its internal symbols hidden): test_fiatomic_handle.cc. */
#include "fiatomic_handle.c"
