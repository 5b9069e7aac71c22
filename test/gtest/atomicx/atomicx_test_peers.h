/**
 * atomicx guest tests: the peer processes of the UCT suite's multi-process
 * cases, forked by the test or started on another machine.
 *
 * With $ATOMICX_TEST_REMOTE=HOST:PORT a test's peers run on the machine
 * where `atomicx_uct_peer serve PORT` listens (two soft-RoCE guests,
 * contrib/softroce/two-guests.sh): the control channel is the TCP connection
 * and the launcher reports the peer's exit status on it when the peer ends.
 */

#ifndef ATOMICX_TEST_PEERS_H_
#define ATOMICX_TEST_PEERS_H_

#include <string>
#include <stdint.h>
#include <sys/types.h>

namespace atomicx_test {

/* Target memory layout of the hammer test (three 8-byte words) */
enum {
    HAMMER_COUNTER = 0, /* lo: fadd64(+1) and fadd32(+1); hi: or64 bits */
    HAMMER_SWAP    = 1, /* lo: swap32 chain; hi: cswap32 counter */
    HAMMER_GUARD   = 2  /* untouched */
};

const unsigned hammer_iters = 150;

enum peer_role : uint32_t {
    PEER_HAMMER        = 1, /* hammer_child(id) */
    PEER_DOOMED_TARGET = 2  /* doomed_target() */
};

/* One hammering process: connects to the target and runs mixed ops */
int hammer_child(unsigned id, int to_parent, int from_parent);

/* A target that exposes memory, then dies without cleaning up */
int doomed_target(int to_parent, int from_parent);

/* A running peer: its channel (to == from for a remote one) */
struct peer_proc {
    pid_t pid    = -1;
    int   to     = -1;
    int   from   = -1;
    bool  remote = false;
};

/* Starts a peer of the role: a child process here, or on the other machine
 * when $ATOMICX_TEST_REMOTE is set. false with *why on failure. */
bool peer_start(peer_role role, unsigned id, peer_proc *p, std::string *why);

/* Waits (bounded) for the peer's end: its exit code, -1 if it was killed or
 * its end could not be learnt. Closes the channel. */
int peer_wait(peer_proc *p);

/* The launcher of `atomicx_uct_peer serve PORT`; runs until killed */
int peer_serve(const char *port);

} // namespace atomicx_test

#endif
