/* The region table and the token source it draws from, compiled into the
 * test (the library keeps its internal symbols hidden; the handle table
 * comes from fiatomic_handle_unit.c): test_fiatomic_region.cc. */
#include "fiatomic_random.c"
#include "fiatomic_region.c"
