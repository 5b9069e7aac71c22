/*
 * Peers of the fiatomic tests on another machine (two soft-RoCE guests,
 * contrib/softroce/two-guests.sh).
 *
 * On the machine that holds the peers, `fiatomic_test_peer serve PORT`
 * listens; for every connection it starts one peer process whose control
 * channel (fd 3) is that TCP connection, and when the peer exits it sends
 * its wait status (MSG_PEER_EXIT) on the connection.
 *
 * On the test's machine, with $FIATOMIC_TEST_REMOTE=HOST:PORT, the tests
 * start `fiatomic_test_peer remote HOST:PORT <role> <args...>` in place of
 * a peer of a role listed in $FIATOMIC_TEST_REMOTE_ROLES (default "target"):
 * it asks the launcher for the peer (with its UCX_* and FIATOMIC_*
 * environment), relays the control channel both ways and exits with the
 * peer's exit status, so that the tests see an ordinary local process.
 */
#ifndef FIATOMIC_TEST_REMOTE_H_
#define FIATOMIC_TEST_REMOTE_H_

namespace fiatomic_test {

/* The launcher; runs until killed. */
int remote_serve(const char *port);

/* The relay; argv: role and its arguments. */
int remote_relay(const char *host_port, int argc, char **argv);

} // namespace fiatomic_test

#endif
