/*
 * A raw client of the target-side wire format: its own UCP context, worker
 * and endpoint to a target's worker, no libfiatomic. It sends any bytes on
 * fiatomic's request id and collects what comes back on the reply id, as a
 * hostile or broken peer would.
 */
#ifndef FIATOMIC_TEST_RAW_H_
#define FIATOMIC_TEST_RAW_H_

#include "fiatomic_test_common.h"

extern "C" {
#include "fiatomic_wire.h"
}

#include <string>
#include <vector>

namespace fiatomic_test {

/** A well-formed request header: fetching FI_SUM on `count` elements of
 *  `datatype` from `raddr` in the region with this handle and token. */
inline fiatomic_wire_req_t wire_fetch_sum(int datatype, uint32_t count,
                                          uint64_t region, uint64_t token,
                                          uint64_t raddr, uint64_t id)
{
    fiatomic_wire_req_t req;

    memset(&req, 0, sizeof(req));
    req.magic    = FIATOMIC_WIRE_REQ_MAGIC;
    req.version  = FIATOMIC_WIRE_VERSION;
    req.family   = FIATOMIC_FAMILY_FETCH;
    req.op       = FI_SUM;
    req.datatype = datatype;
    req.count    = count;
    req.region   = region;
    req.token    = token;
    req.raddr    = raddr;
    req.id       = id;
    return req;
}

/** A request message: the header, then `length` bytes of operands. */
inline std::vector<uint8_t> wire_message(const fiatomic_wire_req_t &req,
                                         const void *operands, size_t length)
{
    std::vector<uint8_t> msg(sizeof(req) + length);

    memcpy(msg.data(), &req, sizeof(req));
    memcpy(msg.data() + sizeof(req), operands, length);
    return msg;
}

class raw_client {
public:
    ~raw_client();

    /** Connect to the worker at `address` over `tl`; `features` of the
     *  client's UCP context (AM for the wire format). */
    bool start(const std::string &tl, const std::vector<uint8_t> &address,
               std::string *error,
               uint64_t features = UCP_FEATURE_AM | UCP_FEATURE_RMA);

    /** Send one request (any bytes) and wait for the reply. */
    bool call(const std::vector<uint8_t> &msg, fiatomic_wire_reply_t *reply,
              std::vector<uint8_t> *values, std::string *error,
              double timeout_sec = 20.0);

    /** Same, the whole reply message as received. */
    bool call_raw(const std::vector<uint8_t> &msg, std::vector<uint8_t> *raw,
                  std::string *error, double timeout_sec = 20.0);

    /** Send without waiting or progressing (the request is released):
     *  UCS_OK sent, UCS_INPROGRESS queued in UCP (msg must then stay valid
     *  until the worker is progressed or destroyed), or an error. */
    ucs_status_t post(const void *msg, size_t length);

    /** Send `length` bytes on fiatomic's id + `am_offset` with UCP's AM
     *  send `flags` (UCP_AM_SEND_FLAG_*: protocol, reply); UCP's request
     *  pointer, status or error as ucp_am_send_nbx gives it (the caller
     *  frees a request; msg stays valid until it completes). */
    ucs_status_ptr_t send(const void *msg, size_t length, uint32_t flags,
                          unsigned am_offset = FIATOMIC_WIRE_AM_REQUEST);

    unsigned progress() { return ucp_worker_progress(m_worker); }
    unsigned replies() const { return m_replies; }
    /** Replies with a valid header, by status; the others (too short or
     *  without the reply magic) */
    unsigned ok_replies() const { return m_ok_replies; }
    unsigned error_replies() const { return m_error_replies; }
    unsigned bad_replies() const { return m_bad_replies; }
    /** The last reply received, as received */
    const std::vector<uint8_t> &last_reply() const { return m_last; }
    ucp_worker_h worker() const { return m_worker; }
    ucp_context_h context() const { return m_context; }
    ucp_ep_h ep() const { return m_ep; }

private:
    static ucs_status_t reply_cb(void *arg, const void *header,
                                 size_t header_length, void *data,
                                 size_t length,
                                 const ucp_am_recv_param_t *param);

    ucp_context_h        m_context = NULL;
    ucp_worker_h         m_worker  = NULL;
    ucp_ep_h             m_ep      = NULL;
    unsigned             m_replies = 0;
    unsigned             m_ok_replies    = 0;
    unsigned             m_error_replies = 0;
    unsigned             m_bad_replies   = 0;
    std::vector<uint8_t> m_last;
};

} // namespace fiatomic_test

#endif
