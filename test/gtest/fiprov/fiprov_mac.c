/* The provider's SipHash-2-4 (src/prov/fiatomic/fip_mac.c), built into the
 * test binary for its unit test and for the raw peer's greetings. */
#include "../../../src/prov/fiatomic/fip_mac.c"
