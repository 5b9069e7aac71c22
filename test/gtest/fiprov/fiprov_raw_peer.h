/**
 * A peer that skips the provider's protocol: a plain UCP context and
 * worker (active messages, RMA and both atomic sizes, as an attacker would
 * ask) that connects to a provider domain by its fi_getname address (the
 * IPv4 listener it names, or over UCX_TLS=posix the worker address the
 * domain publishes, fip_publish.c) or to any UCP worker address, and sends
 * whatever it is told: active messages of any id, header and data, and
 * puts, gets and atomics at any address with any rkey (one it packs for
 * its own memory, or a forged byte string). Every wait is bounded; an
 * operation that does not complete in time is reported as
 * UCS_ERR_TIMED_OUT and finished (with an error) when the peer closes.
 */
#ifndef FIPROV_RAW_PEER_H_
#define FIPROV_RAW_PEER_H_

#include <stddef.h>
#include <stdint.h>

#include <ucp/api/ucp.h>

#include <map>
#include <string>
#include <vector>

namespace fiprov_test {

class raw_peer {
public:
    raw_peer() = default;
    raw_peer(const raw_peer&) = delete;
    raw_peer &operator=(const raw_peer&) = delete;
    ~raw_peer() { close(); }

    /** The context (UCP_FEATURE_AM | RMA | AMO32 | AMO64; UCX_TLS from the
     *  environment) and its worker, and a buffer of `len` bytes of its own
     *  memory mapped for RMA (own_rkey packs it). */
    ucs_status_t open(size_t len = 1 << 20);
    /** Connect to a provider's fi_getname address (FIP_ADDR_LEN bytes). */
    ucs_status_t connect_fi_addr(const std::vector<uint8_t> &addr);
    /** Connect to a UCP worker address. */
    ucs_status_t connect_worker_addr(const std::vector<uint8_t> &addr);
    /** Close the endpoint (forced: what is outstanding fails). */
    void disconnect();
    /** disconnect, then the worker and context. */
    void close();

    /** Send active message `id` (header and data as given; with
     *  UCP_AM_SEND_FLAG_REPLY when `reply`); waits for its local
     *  completion. */
    ucs_status_t am_send(unsigned id, const std::vector<uint8_t> &header,
                         const std::vector<uint8_t> &data, bool reply,
                         int timeout_ms = 5000);

    /** An rkey packed for the peer's own buffer. */
    std::vector<uint8_t> own_rkey();
    /** The peer's own buffer (open's `len` bytes). */
    uint8_t *buffer() { return (uint8_t*)m_buf; }
    size_t buffer_len() const { return m_len; }

    /** ucp_put_nbx of `len` bytes of the own buffer to remote `addr` with
     *  `rkey` (unpacked on the endpoint), then a flush of the endpoint. */
    ucs_status_t put(uint64_t addr, const std::vector<uint8_t> &rkey,
                     size_t len, int timeout_ms = 5000);
    /** ucp_get_nbx of `len` bytes into the own buffer. */
    ucs_status_t get(uint64_t addr, const std::vector<uint8_t> &rkey,
                     size_t len, int timeout_ms = 5000);
    /** ucp_atomic_op_nbx (`size` 4 or 8 bytes) with `value`; the old value
     *  into *result when `result` is not NULL (a fetching op). */
    ucs_status_t atomic(ucp_atomic_op_t op, uint64_t addr,
                        const std::vector<uint8_t> &rkey, unsigned size,
                        uint64_t value, uint64_t *result,
                        int timeout_ms = 5000);

    /** Progress the worker for `ms` milliseconds. */
    void progress_for(int ms);
    /** Whether the endpoint has seen an error (its peer gone, refused). */
    bool ep_failed() const { return m_ep_status != UCS_OK; }

    ucp_context_h context() const { return m_context; }
    ucp_worker_h  worker() const { return m_worker; }

private:
    ucs_status_t connect(const ucp_ep_params_t &params);
    ucs_status_t wait(ucs_status_ptr_t req, int timeout_ms);
    ucs_status_t flush(int timeout_ms);
    /* the endpoint's rkey for these bytes, unpacked once and kept until
     * disconnect (operations still in flight use it) */
    ucs_status_t rkey(const std::vector<uint8_t> &bytes, ucp_rkey_h *rk);
    static void ep_error(void *arg, ucp_ep_h ep, ucs_status_t status);

    ucp_context_h m_context = NULL;
    ucp_worker_h  m_worker  = NULL;
    ucp_ep_h      m_ep      = NULL;
    ucp_mem_h     m_memh    = NULL;
    void          *m_buf    = NULL;
    size_t        m_len     = 0;
    ucs_status_t  m_ep_status = UCS_OK;
    std::map<std::vector<uint8_t>, ucp_rkey_h> m_rkeys;
    /* requests that timed out, freed once finished */
    std::vector<void*> m_inflight;
    uint64_t      m_amo_reply64 = 0;
    uint32_t      m_amo_reply32 = 0;
};

/** Read the worker address a UCX_TLS=posix domain of this host published
 *  for its fi_getname address `addr` (fip_publish.c's file). */
bool raw_peer_published_address(const std::vector<uint8_t> &addr,
                                 std::vector<uint8_t> *worker_addr);

/** ucp_init of a raw peer's context with `features`. On UCX 1.22 and
 *  later tcp's zero-copy PUT is off in it (unless UCX_TCP_PUT_ENABLE is
 *  set): its RMA and atomics go by UCP's software protocol, which the
 *  provider's context takes none of. Left on, UCP would put by UCT's tcp
 *  PUT, which writes at any address of a peer that offers it: UCX's trust
 *  model, which the provider leaves as UCX has it (fi_fiatomic(7)). */
ucs_status_t raw_peer_ucp_init(uint64_t features, ucp_context_h *context);

} // namespace fiprov_test

#endif
