/*
 * The test binary's UCP calls that pause (fiprov_ucp_pause.h): each finds
 * UCP's own with dlsym(RTLD_NEXT).
 */
#include "fiprov_ucp_pause.h"

#include <ucp/api/ucp.h>

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>

namespace fiprov_test {

namespace {

thread_local unsigned pause_us = 0;
std::atomic<unsigned> paused_count(0);

ucs_status_ptr_t after(ucs_status_ptr_t sptr)
{
    if ((pause_us > 0) && UCS_PTR_IS_PTR(sptr)) {
        paused_count.fetch_add(1);
        usleep(pause_us);
    }
    return sptr;
}

template <typename F> F real(const char *name)
{
    return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

} // namespace

ucp_pause::ucp_pause(unsigned us)
{
    pause_us = us;
    paused_count.store(0);
}

ucp_pause::~ucp_pause()
{
    pause_us = 0;
}

unsigned ucp_pause::paused()
{
    return paused_count.load();
}

} // namespace fiprov_test

using fiprov_test::after;
using fiprov_test::real;

extern "C" ucs_status_ptr_t
ucp_put_nbx(ucp_ep_h ep, const void *buffer, size_t count,
            uint64_t remote_addr, ucp_rkey_h rkey,
            const ucp_request_param_t *param)
{
    static auto f = real<decltype(&ucp_put_nbx)>("ucp_put_nbx");
    return after(f(ep, buffer, count, remote_addr, rkey, param));
}

extern "C" ucs_status_ptr_t
ucp_get_nbx(ucp_ep_h ep, void *buffer, size_t count, uint64_t remote_addr,
            ucp_rkey_h rkey, const ucp_request_param_t *param)
{
    static auto f = real<decltype(&ucp_get_nbx)>("ucp_get_nbx");
    return after(f(ep, buffer, count, remote_addr, rkey, param));
}

extern "C" ucs_status_ptr_t
ucp_am_send_nbx(ucp_ep_h ep, unsigned id, const void *header,
                size_t header_length, const void *buffer, size_t count,
                const ucp_request_param_t *param)
{
    static auto f = real<decltype(&ucp_am_send_nbx)>("ucp_am_send_nbx");
    return after(f(ep, id, header, header_length, buffer, count, param));
}

extern "C" ucs_status_ptr_t
ucp_ep_flush_nbx(ucp_ep_h ep, const ucp_request_param_t *param)
{
    static auto f = real<decltype(&ucp_ep_flush_nbx)>("ucp_ep_flush_nbx");
    return after(f(ep, param));
}
