/**
 * Target-side execution, the target's half: the table of exposed regions,
 * the request decoder and executor, and the active message handler that
 * replies.
 *
 * A request is executed only if every byte it touches lies inside a region
 * this context exposed, named by index and token from its packed key, with
 * naturally aligned elements of a defined cell, and the message is exactly
 * as long as its header says. Anything else gets an error reply and touches
 * nothing.
 */
#include "fiatomic_int.h"
#include "fiatomic_wire.h"

#include <stdlib.h>
#include <string.h>

/* A reply buffer, kept in a free list: no allocation per request. */
typedef struct fiatomic_reply_buf {
    ucs_list_link_t list;
    fiatomic_h      fia;
    uint8_t         data[FIATOMIC_WIRE_REPLY_MAX];
} fiatomic_reply_buf_t;

#define FIATOMIC_REPLY_CACHE_MAX 256

/* ------------------------------------------------------------------------ */
/* Regions                                                                   */

ucs_status_t fiatomic_region_add(fiatomic_h fia, fiatomic_mem_h mem)
{
    fiatomic_region_t *regions;
    unsigned index;

    for (index = 0; index < fia->num_regions; ++index) {
        if (fia->regions[index].mem == NULL) {
            break;
        }
    }

    if (index == fia->num_regions) {
        regions = realloc(fia->regions,
                          (fia->num_regions * 2 + 4) * sizeof(*regions));
        if (regions == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
        memset(regions + fia->num_regions, 0,
               (fia->num_regions + 4) * sizeof(*regions));
        fia->regions      = regions;
        fia->num_regions  = fia->num_regions * 2 + 4;
    }

    fia->regions[index].mem   = mem;
    fia->regions[index].token = fiatomic_random64(fia);
    mem->region               = index;
    return UCS_OK;
}

void fiatomic_region_remove(fiatomic_h fia, fiatomic_mem_h mem)
{
    fia->regions[mem->region].mem   = NULL;
    fia->regions[mem->region].token = 0;
}

/* ------------------------------------------------------------------------ */
/* Decoder and executor                                                      */

static size_t fiatomic_target_reply(void *reply, uint64_t id,
                                    ucs_status_t status, uint32_t count)
{
    fiatomic_wire_reply_t hdr = {
        .magic    = FIATOMIC_WIRE_REPLY_MAGIC,
        .status   = status,
        .id       = id,
        .count    = (status == UCS_OK) ? count : 0,
        .reserved = 0
    };

    memcpy(reply, &hdr, sizeof(hdr));
    return sizeof(hdr); /* fetched values, if any, follow */
}

/* Check a request; on success *ptr_p is the first element in memory. */
static ucs_status_t fiatomic_target_check(fiatomic_h fia,
                                          const fiatomic_wire_req_t *req,
                                          size_t length, void **ptr_p)
{
    size_t size, data_len, expected;
    const fiatomic_region_t *region;
    const fiatomic_cell_t *cell;
    uint64_t base, offset;

    if ((req->magic != FIATOMIC_WIRE_REQ_MAGIC) ||
        (req->version != FIATOMIC_WIRE_VERSION)) {
        return UCS_ERR_INVALID_PARAM;
    }

    cell = fiatomic_cell_get(req->family, req->op, req->datatype);
    if ((cell == NULL) || !fiatomic_target_ops.supports(cell)) {
        return UCS_ERR_UNSUPPORTED;
    }

    size = fiatomic_datatype_size(req->datatype);
    if ((req->count == 0) || (req->count > FIATOMIC_WIRE_MAX_PAYLOAD / size)) {
        return UCS_ERR_INVALID_PARAM;
    }

    data_len = (size_t)req->count * size;
    expected = sizeof(*req) +
               ((req->op != FI_ATOMIC_READ) ? data_len : 0) +
               ((req->family == FIATOMIC_FAMILY_COMPARE) ? data_len : 0);
    if (length != expected) {
        return UCS_ERR_INVALID_PARAM; /* truncated or trailing bytes */
    }

    if ((req->region >= fia->num_regions) ||
        (fia->regions[req->region].mem == NULL) ||
        (fia->regions[req->region].token != req->token)) {
        return UCS_ERR_INVALID_PARAM; /* not a key this target gave out */
    }

    region = &fia->regions[req->region];
    base   = (uintptr_t)region->mem->address;
    if ((req->raddr % fiatomic_datatype_alignment(req->datatype)) ||
        (req->raddr < base)) {
        return UCS_ERR_INVALID_PARAM;
    }

    offset = req->raddr - base;
    if ((offset > region->mem->length) ||
        (data_len > region->mem->length - offset)) {
        return UCS_ERR_INVALID_PARAM; /* overflow-safe range check */
    }

    *ptr_p = (uint8_t*)region->mem->address + offset;
    return UCS_OK;
}

size_t fiatomic_target_execute(fiatomic_h fia, const void *msg,
                               size_t length, void *reply)
{
    uint8_t *values = (uint8_t*)reply + sizeof(fiatomic_wire_reply_t);
    const uint8_t *operands, *compares;
    const fiatomic_cell_t *cell;
    fiatomic_wire_req_t req;
    ucs_status_t status;
    uint8_t old[FIATOMIC_MAX_ELEM_SIZE];
    bool fetch;
    size_t size, i;
    uint8_t *ptr;

    if (length < sizeof(req)) {
        return fiatomic_target_reply(reply, 0, UCS_ERR_INVALID_PARAM, 0);
    }

    memcpy(&req, msg, sizeof(req)); /* the message may be unaligned */
    status = fiatomic_target_check(fia, &req, length, (void**)&ptr);
    if (status != UCS_OK) {
        return fiatomic_target_reply(reply, req.id, status, 0);
    }

    size     = fiatomic_datatype_size(req.datatype);
    cell     = fiatomic_cell_get(req.family, req.op, req.datatype);
    fetch    = (req.family != FIATOMIC_FAMILY_BASE);
    operands = (const uint8_t*)msg + sizeof(req);
    compares = operands + ((req.op != FI_ATOMIC_READ) ? req.count * size : 0);
    for (i = 0; i < req.count; ++i) {
        fiatomic_cpu_apply(fia, cell, ptr + i * size,
                           (req.op != FI_ATOMIC_READ) ? operands + i * size :
                                                        NULL,
                           (req.family == FIATOMIC_FAMILY_COMPARE) ?
                           compares + i * size : NULL, old);
        if (fetch) {
            memcpy(values + i * size, old, size);
        }
    }

    fiatomic_target_reply(reply, req.id, UCS_OK, fetch ? req.count : 0);
    return sizeof(fiatomic_wire_reply_t) + (fetch ? req.count * size : 0);
}

/* ------------------------------------------------------------------------ */
/* Active messages                                                           */

static fiatomic_reply_buf_t *fiatomic_reply_buf_get(fiatomic_h fia)
{
    fiatomic_reply_buf_t *buf;

    if (!ucs_list_is_empty(&fia->free_replies)) {
        return ucs_list_extract_head(&fia->free_replies, fiatomic_reply_buf_t,
                                     list);
    }

    buf = malloc(sizeof(*buf));
    if (buf != NULL) {
        buf->fia = fia;
    }
    return buf;
}

static void fiatomic_reply_buf_put(fiatomic_reply_buf_t *buf)
{
    if (buf->fia->destroyed) {
        free(buf);
    } else {
        ucs_list_add_head(&buf->fia->free_replies, &buf->list);
    }
}

static void fiatomic_reply_sent_cb(void *request, ucs_status_t status,
                                   void *user_data)
{
    fiatomic_reply_buf_t *buf = user_data;
    fiatomic_h fia            = buf->fia;

    /* A reply that could not be sent is the initiator's failure to see;
     * it learns of it through its own endpoint. */
    ucp_request_free(request);
    fiatomic_reply_buf_put(buf);
    --fia->replies_inflight;
    fiatomic_context_release(fia); /* after fiatomic_destroy: the last one */
}

static void fiatomic_target_serve(fiatomic_h fia, ucp_ep_h reply_ep,
                                  const void *msg, size_t length)
{
    ucp_request_param_t param;
    fiatomic_reply_buf_t *buf;
    ucs_status_ptr_t sptr;
    size_t reply_len;

    buf = fiatomic_reply_buf_get(fia);
    if (buf == NULL) {
        ucs_error("fiatomic: no memory for a target-side reply");
        return;
    }

    reply_len          = fiatomic_target_execute(fia, msg, length, buf->data);
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send      = fiatomic_reply_sent_cb;
    param.user_data    = buf;
    sptr = ucp_am_send_nbx(reply_ep, fia->am_id + 1, NULL, 0, buf->data,
                           reply_len, &param);
    if (UCS_PTR_IS_PTR(sptr)) {
        ++fia->replies_inflight;
    } else {
        fiatomic_reply_buf_put(buf);
    }
}

/* A request that came by rendezvous (larger than our initiators send, so
 * from someone else): received into a buffer, then served like any other. */
typedef struct fiatomic_rndv_recv {
    fiatomic_h fia;
    ucp_ep_h   reply_ep;
    size_t     length;
    uint8_t    data[];
} fiatomic_rndv_recv_t;

#define FIATOMIC_RNDV_MAX (64 * 1024)

static void fiatomic_rndv_recv_cb(void *request, ucs_status_t status,
                                  size_t length, void *user_data)
{
    fiatomic_rndv_recv_t *rndv = user_data;

    ucp_request_free(request);
    /* Serving it answers even a failed receive: the decoder sees garbage
     * or a short message and replies with an error. */
    fiatomic_target_serve(rndv->fia, rndv->reply_ep, rndv->data,
                          (status == UCS_OK) ? length : 0);
    free(rndv);
}

static void fiatomic_target_recv_rndv(fiatomic_h fia, ucp_ep_h reply_ep,
                                      void *desc, size_t length)
{
    ucp_request_param_t param;
    fiatomic_rndv_recv_t *rndv;
    ucs_status_ptr_t sptr;
    size_t received;

    rndv = (length <= FIATOMIC_RNDV_MAX) ? malloc(sizeof(*rndv) + length) :
                                           NULL;
    if (rndv == NULL) {
        ucp_am_data_release(fia->worker, desc);
        fiatomic_target_serve(fia, reply_ep, NULL, 0); /* refused */
        return;
    }

    rndv->fia           = fia;
    rndv->reply_ep      = reply_ep;
    rndv->length        = length;
    param.op_attr_mask  = UCP_OP_ATTR_FIELD_CALLBACK |
                          UCP_OP_ATTR_FIELD_USER_DATA |
                          UCP_OP_ATTR_FIELD_RECV_INFO;
    param.cb.recv_am    = fiatomic_rndv_recv_cb;
    param.user_data     = rndv;
    param.recv_info.length = &received;
    sptr = ucp_am_recv_data_nbx(fia->worker, desc, rndv->data, length,
                                &param);
    if (!UCS_PTR_IS_PTR(sptr)) {
        fiatomic_target_serve(fia, reply_ep, rndv->data,
                              UCS_PTR_IS_ERR(sptr) ? 0 : length);
        free(rndv);
    }
}

static ucs_status_t fiatomic_target_request_handler(
        void *arg, const void *header, size_t header_length, void *data,
        size_t length, const ucp_am_recv_param_t *param)
{
    fiatomic_h fia = arg;

    if (!(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
        /* Nobody could learn the outcome: never execute blindly. */
        ucs_debug("fiatomic: dropping a target-side request without reply ep");
        return UCS_OK;
    }

    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        fiatomic_target_recv_rndv(fia, param->reply_ep, data, length);
        return UCS_OK;
    }

    fiatomic_target_serve(fia, param->reply_ep, data, length);
    return UCS_OK;
}

static ucs_status_t fiatomic_target_set_handler(fiatomic_h fia, unsigned id,
                                                ucp_am_recv_callback_t cb)
{
    ucp_am_handler_param_t param;

    param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                       UCP_AM_HANDLER_PARAM_FIELD_CB |
                       UCP_AM_HANDLER_PARAM_FIELD_ARG |
                       UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
    param.id         = id;
    param.cb         = cb;
    param.arg        = fia;
    param.flags      = UCP_AM_FLAG_WHOLE_MSG;
    return ucp_worker_set_am_recv_handler(fia->worker, &param);
}

/* Whether the UCP context has UCP_FEATURE_AM: UCP gives no AM header room
 * without it (asking UCP to set a handler then logs an error). */
static bool fiatomic_target_am_available(fiatomic_h fia)
{
    ucp_worker_attr_t attr;

    attr.field_mask = UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER;
    return (ucp_worker_query(fia->worker, &attr) == UCS_OK) &&
           (attr.max_am_header > 0);
}

ucs_status_t fiatomic_target_init(fiatomic_h fia)
{
    /* Without UCP_FEATURE_AM target-side execution is simply not offered
     * (keys say so, the selector never chooses it), everything else
     * works. */
    if (!fiatomic_target_am_available(fia) ||
        (fiatomic_target_set_handler(fia, fia->am_id,
                                     fiatomic_target_request_handler) !=
         UCS_OK) ||
        (fiatomic_target_set_handler(fia, fia->am_id + 1,
                                     fiatomic_target_reply_handler) !=
         UCS_OK)) {
        fia->am_enabled = false;
        return UCS_OK;
    }

    fia->am_enabled = true;
    return UCS_OK;
}

void fiatomic_target_cleanup(fiatomic_h fia)
{
    fiatomic_reply_buf_t *buf;

    if (fia->am_enabled) {
        fiatomic_target_set_handler(fia, fia->am_id, NULL);
        fiatomic_target_set_handler(fia, fia->am_id + 1, NULL);
        fia->am_enabled = false;
    }

    while (!ucs_list_is_empty(&fia->free_replies)) {
        buf = ucs_list_extract_head(&fia->free_replies, fiatomic_reply_buf_t,
                                    list);
        free(buf);
    }
    free(fia->regions);
    fia->regions     = NULL;
    fia->num_regions = 0;
}
