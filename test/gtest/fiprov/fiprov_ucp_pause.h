/**
 * A pause after the provider's UCP calls, as a loaded machine gives them:
 * the test binary defines ucp_put_nbx, ucp_get_nbx, ucp_am_send_nbx and
 * ucp_ep_flush_nbx itself (exported, so the provider, which libfabric
 * loads, binds to them before libucp's); each calls UCP's own and, on the
 * thread that holds a ucp_pause, waits before returning a request it
 * started. Meanwhile the provider's progress thread may complete the
 * request and run its callback: the call's caller must already be ready
 * for that.
 */
#ifndef FIPROV_UCP_PAUSE_H_
#define FIPROV_UCP_PAUSE_H_

namespace fiprov_test {

/** While alive, this thread's UCP calls above pause `us` microseconds
 *  before returning a request; how many did. */
class ucp_pause {
public:
    explicit ucp_pause(unsigned us);
    ~ucp_pause();
    static unsigned paused();
};

} // namespace fiprov_test

#endif
