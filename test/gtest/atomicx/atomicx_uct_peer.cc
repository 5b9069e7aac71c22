/**
 * atomicx_uct_peer: runs the peer processes of test_atomicx_uct for a test
 * on another machine (atomicx_test_peers.h).
 *
 *   atomicx_uct_peer serve PORT
 */

#include "atomicx_test_peers.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if ((argc == 3) && !strcmp(argv[1], "serve")) {
        return atomicx_test::peer_serve(argv[2]);
    }
    fprintf(stderr, "usage: %s serve <port>\n", argv[0]);
    return 2;
}
