/*
 * The raw wire-format client of the target-side security tests.
 */
#include "fiatomic_test_raw.h"

namespace fiatomic_test {

raw_client::~raw_client()
{
    if (m_ep != NULL) {
        ucp_ep_close_blocking(m_worker, m_ep, true);
    }
    if (m_worker != NULL) {
        ucp_worker_destroy(m_worker);
    }
    if (m_context != NULL) {
        ucp_cleanup(m_context);
    }
}

bool raw_client::start(const std::string &tl,
                       const std::vector<uint8_t> &address,
                       std::string *error, uint64_t features)
{
    ucp_params_t params;
    ucp_worker_params_t wparams;
    ucp_am_handler_param_t hparams;
    ucp_ep_params_t eparams;
    ucp_config_t *config;

    if (ucp_config_read(NULL, NULL, &config) != UCS_OK) {
        *error = "ucp_config_read";
        return false;
    }
    ucp_config_modify(config, "TLS", tl.c_str());
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = features;
    ucs_status_t status = ucp_init(&params, config, &m_context);
    ucp_config_release(config);
    if (status != UCS_OK) {
        *error = std::string("ucp_init: ") + ucs_status_string(status);
        return false;
    }

    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    if (ucp_worker_create(m_context, &wparams, &m_worker) != UCS_OK) {
        *error = "ucp_worker_create";
        return false;
    }

    hparams.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                         UCP_AM_HANDLER_PARAM_FIELD_CB |
                         UCP_AM_HANDLER_PARAM_FIELD_ARG;
    hparams.id         = FIATOMIC_AM_ID_DEFAULT + FIATOMIC_WIRE_AM_REPLY;
    hparams.cb         = reply_cb;
    hparams.arg        = this;
    if (ucp_worker_set_am_recv_handler(m_worker, &hparams) != UCS_OK) {
        *error = "ucp_worker_set_am_recv_handler";
        return false;
    }

    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address    = (const ucp_address_t*)address.data();
    if (ucp_ep_create(m_worker, &eparams, &m_ep) != UCS_OK) {
        *error = "ucp_ep_create";
        return false;
    }
    return true;
}

bool raw_client::call_raw(const std::vector<uint8_t> &msg,
                          std::vector<uint8_t> *raw, std::string *error,
                          double timeout_sec)
{
    ucp_request_param_t param;
    ucs_status_ptr_t sptr;
    double deadline = now_sec() + timeout_sec;

    m_replies          = 0;
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_AM_SEND_FLAG_REPLY;
    sptr = ucp_am_send_nbx(m_ep, FIATOMIC_AM_ID_DEFAULT +
                           FIATOMIC_WIRE_AM_REQUEST, NULL, 0, msg.data(),
                           msg.size(), &param);
    if (UCS_PTR_IS_ERR(sptr)) {
        *error = ucs_status_string(UCS_PTR_STATUS(sptr));
        return false;
    }
    while ((UCS_PTR_IS_PTR(sptr) &&
            (ucp_request_check_status(sptr) == UCS_INPROGRESS)) ||
           (m_replies == 0)) {
        ucp_worker_progress(m_worker);
        if (now_sec() > deadline) {
            if (UCS_PTR_IS_PTR(sptr)) {
                ucp_request_free(sptr);
            }
            *error = "no reply within " + std::to_string(timeout_sec) + " s";
            return false;
        }
    }
    if (UCS_PTR_IS_PTR(sptr)) {
        ucp_request_free(sptr);
    }
    if (m_replies != 1) {
        *error = "not exactly one reply";
        return false;
    }
    *raw = m_last;
    return true;
}

bool raw_client::call(const std::vector<uint8_t> &msg,
                      fiatomic_wire_reply_t *reply,
                      std::vector<uint8_t> *values, std::string *error,
                      double timeout_sec)
{
    std::vector<uint8_t> raw;

    if (!call_raw(msg, &raw, error, timeout_sec)) {
        return false;
    }
    if (raw.size() < sizeof(*reply)) {
        *error = "reply shorter than its header";
        return false;
    }
    memcpy(reply, raw.data(), sizeof(*reply));
    values->assign(raw.begin() + sizeof(*reply), raw.end());
    return true;
}

ucs_status_t raw_client::post(const void *msg, size_t length)
{
    ucp_request_param_t param;
    ucs_status_ptr_t sptr;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_AM_SEND_FLAG_REPLY;
    sptr = ucp_am_send_nbx(m_ep, FIATOMIC_AM_ID_DEFAULT +
                           FIATOMIC_WIRE_AM_REQUEST, NULL, 0, msg, length,
                           &param);
    if (UCS_PTR_IS_PTR(sptr)) {
        ucp_request_free(sptr); /* UCP sends it in the background */
        return UCS_INPROGRESS;
    }
    return UCS_PTR_STATUS(sptr);
}

ucs_status_ptr_t raw_client::send(const void *msg, size_t length,
                                  uint32_t flags, unsigned am_offset)
{
    ucp_request_param_t param;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = flags;
    return ucp_am_send_nbx(m_ep, FIATOMIC_AM_ID_DEFAULT + am_offset, NULL, 0,
                           msg, length, &param);
}

ucs_status_t raw_client::reply_cb(void *arg, const void *header,
                                  size_t header_length, void *data,
                                  size_t length,
                                  const ucp_am_recv_param_t *param)
{
    raw_client *self = (raw_client*)arg;

    fiatomic_wire_reply_t reply;

    ++self->m_replies;
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        ++self->m_bad_replies; /* declined by returning UCS_OK */
        return UCS_OK;
    }
    self->m_last.assign((uint8_t*)data, (uint8_t*)data + length);
    if (length < sizeof(reply)) {
        ++self->m_bad_replies;
        return UCS_OK;
    }
    memcpy(&reply, data, sizeof(reply));
    if (reply.magic != FIATOMIC_WIRE_REPLY_MAGIC) {
        ++self->m_bad_replies;
    } else if (reply.status == UCS_OK) {
        ++self->m_ok_replies;
    } else {
        ++self->m_error_replies;
    }
    return UCS_OK;
}

} // namespace fiatomic_test
