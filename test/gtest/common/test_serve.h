/**
 * The relay side of the suites' peers on another machine (the two-guest
 * runs): a process listens on a TCP port and serves each connection in a
 * forked child. Shared by fiatomic_test_peer and atomicx_uct_peer, whose
 * protocols differ only in what one connection does.
 */
#ifndef TEST_SERVE_H_
#define TEST_SERVE_H_

namespace test_common {

/**
 * Accepts connections on TCP port `port_str` (all addresses) until killed;
 * the child forked for each one exits with serve_one(fd). Children are
 * reaped as they end. Messages start with `name`. Returns only on error:
 * 2 for a bad port, 1 when the socket cannot listen.
 */
int serve_forever(const char *name, const char *port_str,
                  int (*serve_one)(int fd));

} // namespace test_common

#endif
