/**
 * atomicx: endpoints and the atomic data path.
 *
 * Every op holds one descriptor and exactly one send WR at a time. Native ops
 * (64-bit ADD, fetching or not, and 64-bit CSWAP) are one device atomic.
 * Everything else is a CAS loop on the enclosing 8-byte word: the first CAS
 * guesses the current word (the last value this endpoint saw there, or 0),
 * and a failed CAS returns the actual word, from which the next attempt is
 * computed. A CAS that fails is also an atomic read, so an op whose result
 * would not change the word completes without another round trip.
 *
 * An accepted op waits in the endpoint's hold queue (FIFO, in issue order)
 * while it cannot go: the send queue is full, an earlier CAS loop of the
 * endpoint on the same word is still on the wire (a loop posted now would
 * guess the same value and lose, one success per round trip with many in
 * flight; after the earlier loop the endpoint knows the word), or it was
 * issued after a fence and CAS loops from before the fence are not done. So
 * a fence never makes an op fail with UCS_ERR_NO_RESOURCE, as with UCX's RC
 * transports; only a full hold queue or no free descriptor does.
 *
 * The completion queue belongs to the interface (atomicx_iface.c): its
 * progress reads the work completions and comes back here to finish an op
 * (uct_atomicx_op_complete), post the next attempt of a CAS loop
 * (uct_atomicx_op_post) and release the held ops and pending requests.
 */

#include "atomicx.h"
#include "atomicx_amo.h"

#include <ucs/debug/log.h>
#include <ucs/time/time.h>
#include <string.h>


/* Ops started and completed in this process: let tests prove that atomicx
 * executed them, and wait for them without a UCP flush */
static uint64_t uct_atomicx_num_started   = 0;
static uint64_t uct_atomicx_num_completed = 0;


uint64_t uct_atomicx_ops_started(void)
{
    return __atomic_load_n(&uct_atomicx_num_started, __ATOMIC_RELAXED);
}


uint64_t uct_atomicx_ops_completed(void)
{
    return __atomic_load_n(&uct_atomicx_num_completed, __ATOMIC_RELAXED);
}


/* How long ep destroy waits for the flushed WRs of an errored QP */
#define UCT_ATOMICX_DESTROY_TIMEOUT 10.0


static UCS_F_ALWAYS_INLINE int
uct_atomicx_ep_has_resources(uct_atomicx_ep_t *ep, int dispatching)
{
    uct_atomicx_iface_t *iface = uct_atomicx_ep_iface(ep);

    return ep->connected && (ep->held < iface->config.tx_queue_len) &&
           (iface->num_free > 0) &&
           (dispatching || ucs_queue_is_empty(&ep->pending_q));
}


static void uct_atomicx_ep_flush_done(uct_atomicx_ep_t *ep)
{
    ucs_status_t status = ep->status;
    uct_atomicx_flush_req_t *req;

    while (!ucs_queue_is_empty(&ep->flush_q)) {
        req = ucs_queue_pull_elem_non_empty(&ep->flush_q,
                                            uct_atomicx_flush_req_t, queue);
        uct_invoke_completion(req->comp, status);
        ucs_free(req);
    }
}


/* Finish an op: deliver the result, release the descriptor, then notify */
void uct_atomicx_op_complete(uct_atomicx_iface_t *iface, uct_atomicx_op_t *op,
                             ucs_status_t status, uint64_t word)
{
    uct_atomicx_ep_t *ep   = op->ep;
    uct_completion_t *comp = op->comp;
    uint64_t value;

    if ((status == UCS_OK) && (op->result != NULL)) {
        value = uct_atomicx_word_extract(word, op->size, op->shift);
        if (op->size == sizeof(uint64_t)) {
            *(uint64_t*)op->result = value;
        } else {
            *(uint32_t*)op->result = (uint32_t)value;
        }
    }

    ucs_trace_data("op %zu done: %s word 0x%" PRIx64, op - iface->ops,
                   ucs_status_string(status), word);

    --ep->outstanding;
    if (!op->native) {
        --ep->emulated;
        if (!op->held) {
            ucs_list_del(&op->loop_elem);
            --ep->loops_posted;
        }
    }
    uct_atomicx_op_release(iface, op);
    __atomic_fetch_add(&uct_atomicx_num_completed, 1, __ATOMIC_RELAXED);

    if (comp != NULL) {
        uct_invoke_completion(comp, status);
    }

    if (ep->outstanding == 0) {
        uct_atomicx_ep_flush_done(ep);
    }
}


ucs_status_t uct_atomicx_op_post(uct_atomicx_iface_t *iface,
                                 uct_atomicx_op_t *op)
{
    uct_atomicx_ep_t *ep = op->ep;
    uint32_t slot        = op - iface->ops;
    ucs_status_t status;

    /* A native ADD is the device's fetch-and-add; a native CSWAP and every
     * attempt of a CAS loop are its compare-and-swap */
    if (op->native && (op->opcode == UCT_ATOMIC_OP_ADD)) {
        status = uct_atomicx_post_wr(iface, ep->qp,
                                     IBV_WR_ATOMIC_FETCH_AND_ADD, slot,
                                     op->word_addr, op->rkey, op->value, 0);
    } else {
        status = uct_atomicx_post_wr(iface, ep->qp, IBV_WR_ATOMIC_CMP_AND_SWP,
                                     slot, op->word_addr, op->rkey,
                                     op->expected, op->desired);
    }

    if (status == UCS_OK) {
        --ep->sq_avail;
    }
    return status;
}


/* Whether a held op may be posted now (see the top of the file) */
static int uct_atomicx_op_can_go(uct_atomicx_ep_t *ep, uct_atomicx_op_t *op)
{
    uct_atomicx_op_t *loop;

    if (ep->sq_avail == 0) {
        return 0;
    }

    if (op->fenced && (ep->loops_posted > 0)) {
        /* Every op issued before the fence is posted (the hold queue is in
         * issue order): only CAS loops can still be overtaken */
        return 0;
    }

    if (!op->native) {
        ucs_list_for_each(loop, &ep->loop_list, loop_elem) {
            if (loop->word_addr == op->word_addr) {
                return 0;
            }
        }
    }

    return 1;
}


/* Post the first attempt of an op; a CAS loop guesses the word now, from
 * what the endpoint saw last */
static ucs_status_t uct_atomicx_op_start(uct_atomicx_iface_t *iface,
                                         uct_atomicx_op_t *op)
{
    uct_atomicx_ep_t *ep = op->ep;
    ucs_status_t status;
    uint64_t guess;

    if (op->native) {
        op->expected = op->compare;
        op->desired  = op->value;
    } else {
        guess        = (ep->cache_addr == op->word_addr) ? ep->cache_value : 0;
        op->expected = guess;
        op->desired  = uct_atomicx_word_combine(op->opcode, op->size,
                                                op->shift, guess, op->value,
                                                op->compare);
    }

    status = uct_atomicx_op_post(iface, op);
    if (status != UCS_OK) {
        return status;
    }

    op->held = 0;
    if (!op->native) {
        ucs_list_add_tail(&ep->loop_list, &op->loop_elem);
        ++ep->loops_posted;
    }
    return UCS_OK;
}


static ucs_status_t
uct_atomicx_ep_atomic(uct_ep_h tl_ep, uct_atomic_op_t opcode, unsigned size,
                      uint64_t value, uint64_t compare, uint64_t remote_addr,
                      uct_rkey_t rkey, void *result, uct_completion_t *comp)
{
    uct_atomicx_ep_t *ep       = ucs_derived_of(tl_ep, uct_atomicx_ep_t);
    uct_atomicx_iface_t *iface = uct_atomicx_ep_iface(ep);
    uct_atomicx_op_t *op;
    ucs_status_t status;

    if (ucs_unlikely(ep->status != UCS_OK)) {
        return ep->status;
    }

    if (ucs_unlikely(remote_addr % size)) {
        ucs_error("atomicx: remote address 0x%" PRIx64 " is not aligned to "
                  "%u bytes", remote_addr, size);
        return UCS_ERR_INVALID_PARAM;
    }

    if (!uct_atomicx_ep_has_resources(ep, ep->dispatching)) {
        return UCS_ERR_NO_RESOURCE;
    }

    op               = &iface->ops[iface->free_head];
    iface->free_head = op->next_free;
    --iface->num_free;

    op->ep        = ep;
    op->comp      = comp;
    op->result    = result;
    op->word_addr = uct_atomicx_word_addr(remote_addr);
    op->value     = value;
    op->compare   = compare;
    op->rkey      = (uint32_t)rkey;
    op->opcode    = opcode;
    op->size      = size;
    op->shift     = (size == sizeof(uint32_t)) ?
                    uct_atomicx_half_shift(remote_addr) : 0;
    op->native    = (size == sizeof(uint64_t)) &&
                    ((opcode == UCT_ATOMIC_OP_ADD) ||
                     (opcode == UCT_ATOMIC_OP_CSWAP));
    op->in_use    = 1;
    op->held      = 1;
    op->fenced    = ep->fence_next;

    if ((ep->held == 0) && uct_atomicx_op_can_go(ep, op)) {
        status = uct_atomicx_op_start(iface, op);
        if (status != UCS_OK) {
            uct_atomicx_op_release(iface, op);
            return status;
        }
    } else {
        ucs_queue_push(&ep->hold_q, &op->hold_elem);
        ++ep->held;
        ++iface->num_held;
    }

    ep->fence_next = 0;
    ++ep->outstanding;
    if (!op->native) {
        ++ep->emulated;
    }
    __atomic_fetch_add(&uct_atomicx_num_started, 1, __ATOMIC_RELAXED);

    return (result != NULL) ? UCS_INPROGRESS : UCS_OK;
}


/* Post the held ops that may go now, in order; once the endpoint failed,
 * complete them with its error instead */
void uct_atomicx_ep_release_held(uct_atomicx_ep_t *ep)
{
    uct_atomicx_iface_t *iface = uct_atomicx_ep_iface(ep);
    uct_atomicx_op_t *op;
    ucs_status_t status;

    while (!ucs_queue_is_empty(&ep->hold_q)) {
        op = ucs_queue_head_elem_non_empty(&ep->hold_q, uct_atomicx_op_t,
                                           hold_elem);
        status = ep->status;
        if ((status == UCS_OK) && !uct_atomicx_op_can_go(ep, op)) {
            break;
        }

        ucs_queue_pull_non_empty(&ep->hold_q);
        --ep->held;
        --iface->num_held;
        if (status == UCS_OK) {
            status = uct_atomicx_op_start(iface, op);
            if (status == UCS_OK) {
                continue;
            }
            uct_atomicx_ep_set_error(ep, status);
        }
        uct_atomicx_op_complete(iface, op, status, 0);
    }
}


void uct_atomicx_ep_dispatch_pending(uct_atomicx_ep_t *ep)
{
    uct_atomicx_iface_t *iface = uct_atomicx_ep_iface(ep);
    uct_pending_req_t *req;
    ucs_status_t status;

    while (!ucs_queue_is_empty(&ep->pending_q) &&
           uct_atomicx_ep_has_resources(ep, 1)) {
        req = ucs_container_of(ucs_queue_pull_non_empty(&ep->pending_q),
                               uct_pending_req_t, priv);
        --iface->num_pending;
        ep->dispatching = 1;
        status          = req->func(req);
        ep->dispatching = 0;
        if (status == UCS_OK) {
            continue;
        }

        ucs_queue_push_head(&ep->pending_q,
                            &((uct_atomicx_pending_priv_t*)req->priv)->queue);
        ++iface->num_pending;
        if (status != UCS_INPROGRESS) {
            break;
        }
    }
}


ucs_status_t uct_atomicx_ep_atomic_cswap64(uct_ep_h tl_ep, uint64_t compare,
                                           uint64_t swap, uint64_t remote_addr,
                                           uct_rkey_t rkey, uint64_t *result,
                                           uct_completion_t *comp)
{
    return uct_atomicx_ep_atomic(tl_ep, UCT_ATOMIC_OP_CSWAP, sizeof(uint64_t),
                                 swap, compare, remote_addr, rkey, result,
                                 comp);
}


ucs_status_t uct_atomicx_ep_atomic_cswap32(uct_ep_h tl_ep, uint32_t compare,
                                           uint32_t swap, uint64_t remote_addr,
                                           uct_rkey_t rkey, uint32_t *result,
                                           uct_completion_t *comp)
{
    return uct_atomicx_ep_atomic(tl_ep, UCT_ATOMIC_OP_CSWAP, sizeof(uint32_t),
                                 swap, compare, remote_addr, rkey, result,
                                 comp);
}


/* UCT's post and fetch entry points accept these opcodes */
static UCS_F_ALWAYS_INLINE int
uct_atomicx_opcode_valid(unsigned opcode, int fetch)
{
    switch (opcode) {
    case UCT_ATOMIC_OP_ADD:
    case UCT_ATOMIC_OP_AND:
    case UCT_ATOMIC_OP_OR:
    case UCT_ATOMIC_OP_XOR:
        return 1;
    case UCT_ATOMIC_OP_SWAP:
        return fetch;
    default:
        return 0;
    }
}


#define UCT_ATOMICX_CHECK_OPCODE(_opcode, _fetch) \
    if (!uct_atomicx_opcode_valid(_opcode, _fetch)) { \
        ucs_assertv(0, "incorrect opcode: %u", _opcode); \
        return UCS_ERR_UNSUPPORTED; \
    }


ucs_status_t uct_atomicx_ep_atomic64_post(uct_ep_h tl_ep, unsigned opcode,
                                          uint64_t value, uint64_t remote_addr,
                                          uct_rkey_t rkey)
{
    UCT_ATOMICX_CHECK_OPCODE(opcode, 0);
    return uct_atomicx_ep_atomic(tl_ep, (uct_atomic_op_t)opcode,
                                 sizeof(uint64_t), value, 0, remote_addr,
                                 rkey, NULL, NULL);
}


ucs_status_t uct_atomicx_ep_atomic32_post(uct_ep_h tl_ep, unsigned opcode,
                                          uint32_t value, uint64_t remote_addr,
                                          uct_rkey_t rkey)
{
    UCT_ATOMICX_CHECK_OPCODE(opcode, 0);
    return uct_atomicx_ep_atomic(tl_ep, (uct_atomic_op_t)opcode,
                                 sizeof(uint32_t), value, 0, remote_addr,
                                 rkey, NULL, NULL);
}


ucs_status_t uct_atomicx_ep_atomic64_fetch(uct_ep_h tl_ep, unsigned opcode,
                                           uint64_t value, uint64_t *result,
                                           uint64_t remote_addr,
                                           uct_rkey_t rkey,
                                           uct_completion_t *comp)
{
    UCT_ATOMICX_CHECK_OPCODE(opcode, 1);
    return uct_atomicx_ep_atomic(tl_ep, (uct_atomic_op_t)opcode,
                                 sizeof(uint64_t), value, 0, remote_addr,
                                 rkey, result, comp);
}


ucs_status_t uct_atomicx_ep_atomic32_fetch(uct_ep_h tl_ep, unsigned opcode,
                                           uint32_t value, uint32_t *result,
                                           uint64_t remote_addr,
                                           uct_rkey_t rkey,
                                           uct_completion_t *comp)
{
    UCT_ATOMICX_CHECK_OPCODE(opcode, 1);
    return uct_atomicx_ep_atomic(tl_ep, (uct_atomic_op_t)opcode,
                                 sizeof(uint32_t), value, 0, remote_addr,
                                 rkey, result, comp);
}


ucs_status_t uct_atomicx_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                        unsigned flags)
{
    uct_atomicx_ep_t *ep = ucs_derived_of(tl_ep, uct_atomicx_ep_t);

    UCS_STATIC_ASSERT(sizeof(uct_atomicx_pending_priv_t) <=
                      UCT_PENDING_REQ_PRIV_LEN);

    if ((ep->status != UCS_OK) || uct_atomicx_ep_has_resources(ep, 0)) {
        /* Let the caller retry now: the op either goes or reports the
         * endpoint's error */
        return UCS_ERR_BUSY;
    }

    ucs_queue_push(&ep->pending_q,
                   &((uct_atomicx_pending_priv_t*)req->priv)->queue);
    ++uct_atomicx_ep_iface(ep)->num_pending;
    return UCS_OK;
}


void uct_atomicx_ep_pending_purge(uct_ep_h tl_ep,
                                  uct_pending_purge_callback_t cb, void *arg)
{
    uct_atomicx_ep_t *ep = ucs_derived_of(tl_ep, uct_atomicx_ep_t);
    uct_pending_req_t *req;

    while (!ucs_queue_is_empty(&ep->pending_q)) {
        req = ucs_container_of(ucs_queue_pull_non_empty(&ep->pending_q),
                               uct_pending_req_t, priv);
        --uct_atomicx_ep_iface(ep)->num_pending;
        if (cb != NULL) {
            cb(req, arg);
        }
    }
}


/* Move the QP to the error state: the device flushes every WR in flight */
static void uct_atomicx_ep_qp_to_error(uct_atomicx_ep_t *ep)
{
    struct ibv_qp_attr qp_attr;

    memset(&qp_attr, 0, sizeof(qp_attr));
    qp_attr.qp_state = IBV_QPS_ERR;
    if (ibv_modify_qp(ep->qp, &qp_attr, IBV_QP_STATE) != 0) {
        ucs_warn("failed to move qp 0x%x to the error state: %m",
                 ep->qp->qp_num);
    }
}


ucs_status_t uct_atomicx_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                  uct_completion_t *comp)
{
    uct_atomicx_ep_t *ep = ucs_derived_of(tl_ep, uct_atomicx_ep_t);
    uct_atomicx_flush_req_t *req;

    if (flags & UCT_FLUSH_FLAG_CANCEL) {
        /* The endpoint is going away: no error callback for it, the ops in
         * flight complete with UCS_ERR_CANCELED, and it takes no new op */
        ep->err_reported = 1;
        if (ep->status == UCS_OK) {
            ep->status = UCS_ERR_CANCELED;
            if (ep->outstanding > 0) {
                uct_atomicx_ep_qp_to_error(ep);
            }
        }
    } else if ((ep->status == UCS_OK) && !ep->dispatching &&
               !ucs_queue_is_empty(&ep->pending_q)) {
        /* Requests queued before this flush are not posted yet: the caller
         * queues the flush behind them (uct_ep_pending_add). A flush called
         * from the dispatch of the queue itself is not held back by the
         * requests queued after it. */
        return UCS_ERR_NO_RESOURCE;
    }

    if (ep->outstanding == 0) {
        return (flags & UCT_FLUSH_FLAG_CANCEL) ? UCS_OK : ep->status;
    }

    if (comp != NULL) {
        req = ucs_malloc(sizeof(*req), "atomicx flush");
        if (req == NULL) {
            return UCS_ERR_NO_MEMORY;
        }

        req->comp = comp;
        ucs_queue_push(&ep->flush_q, &req->queue);
    }

    return UCS_INPROGRESS;
}


ucs_status_t uct_atomicx_ep_fence(uct_ep_h tl_ep, unsigned flags)
{
    uct_atomicx_ep_t *ep = ucs_derived_of(tl_ep, uct_atomicx_ep_t);

    /* Native ops execute in QP order; only CAS loops could let a later op
     * overtake them, so the next op waits for the loops accepted before it
     * (it is held, not refused) */
    if (ep->emulated > 0) {
        ep->fence_next = 1;
    }
    return UCS_OK;
}


ucs_status_t uct_atomicx_ep_get_address(uct_ep_h tl_ep, uct_ep_addr_t *addr)
{
    uct_atomicx_ep_t *ep = ucs_derived_of(tl_ep, uct_atomicx_ep_t);
    uct_atomicx_ep_addr_t ep_addr;

    ep_addr.qp_num = ep->qp->qp_num;
    memcpy(addr, &ep_addr, sizeof(ep_addr));
    return UCS_OK;
}


ucs_status_t uct_atomicx_ep_connect_to_ep(uct_ep_h tl_ep,
                                          const uct_device_addr_t *dev_addr,
                                          const uct_ep_addr_t *ep_addr)
{
    uct_atomicx_ep_t *ep       = ucs_derived_of(tl_ep, uct_atomicx_ep_t);
    uct_atomicx_iface_t *iface = uct_atomicx_ep_iface(ep);
    uct_atomicx_dev_addr_t remote_dev;
    uct_atomicx_ep_addr_t remote_ep;
    ucs_status_t status;

    memcpy(&remote_dev, dev_addr, sizeof(remote_dev));
    memcpy(&remote_ep, ep_addr, sizeof(remote_ep));

    status = uct_atomicx_qp_connect(iface, ep->qp, &remote_dev,
                                    remote_ep.qp_num);
    if (status != UCS_OK) {
        return status;
    }

    ep->remote_dev    = remote_dev;
    ep->remote_qp_num = remote_ep.qp_num;
    ep->connected     = 1;
    uct_atomicx_ep_dispatch_pending(ep);
    return UCS_OK;
}


UCS_CLASS_INIT_FUNC(uct_atomicx_ep_t, const uct_ep_params_t *params)
{
    uct_atomicx_iface_t *iface = ucs_derived_of(params->iface,
                                                uct_atomicx_iface_t);
    ucs_status_t status;

    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);

    status = uct_atomicx_qp_create(iface, &self->qp);
    if (status != UCS_OK) {
        return status;
    }

    self->sq_avail     = iface->config.tx_queue_len;
    self->outstanding  = 0;
    self->emulated     = 0;
    self->held         = 0;
    self->loops_posted = 0;
    self->fence_next   = 0;
    self->connected    = 0;
    self->dispatching  = 0;
    self->status       = UCS_OK;
    self->err_reported = 0;
    self->cache_addr   = UINT64_MAX; /* never an aligned word address */
    self->cache_value  = 0;
    ucs_queue_head_init(&self->pending_q);
    ucs_queue_head_init(&self->flush_q);
    ucs_queue_head_init(&self->hold_q);
    ucs_list_head_init(&self->loop_list);
    ucs_list_add_tail(&iface->ep_list, &self->list);

    ucs_debug("created atomicx ep %p qp 0x%x", self, self->qp->qp_num);
    return UCS_OK;
}


UCS_CLASS_CLEANUP_FUNC(uct_atomicx_ep_t)
{
    uct_atomicx_iface_t *iface = uct_atomicx_ep_iface(self);
    ucs_time_t deadline;
    uct_atomicx_op_t *op;
    unsigned i;

    /* Never call the error handler for an endpoint being destroyed, and
     * post none of its held ops: they complete with UCS_ERR_CANCELED */
    self->err_reported = 1;
    if (self->status == UCS_OK) {
        self->status = UCS_ERR_CANCELED;
    }

    if (self->outstanding > 0) {
        /* Have the device flush the WRs in flight so that their results
         * land before the descriptors are reused */
        uct_atomicx_ep_qp_to_error(self);
        deadline = ucs_get_time() +
                   ucs_time_from_sec(UCT_ATOMICX_DESTROY_TIMEOUT);
        while ((self->outstanding > 0) && (ucs_get_time() < deadline)) {
            uct_atomicx_iface_progress(&iface->super.super);
        }
    }

    if (self->outstanding > 0) {
        ucs_warn("atomicx ep %p: %u ops still in flight at destroy", self,
                 self->outstanding);
        for (i = 0; i < iface->config.max_ops; ++i) {
            op = &iface->ops[i];
            if (op->in_use && (op->ep == self)) {
                /* Keep the descriptor (and its result slot) out of use:
                 * its completion may still arrive */
                op->ep = NULL;
            }
        }
    }

    if (!ucs_queue_is_empty(&self->pending_q)) {
        /* The caller must purge them first (uct_ep_pending_purge) */
        ucs_warn("atomicx ep %p destroyed with pending requests", self);
        uct_atomicx_ep_pending_purge(&self->super.super, NULL, NULL);
    }

    uct_atomicx_ep_flush_done(self);
    ucs_list_del(&self->list);
    if (ibv_destroy_qp(self->qp) != 0) {
        ucs_warn("ibv_destroy_qp(0x%x) failed: %m", self->qp->qp_num);
    }
}


UCS_CLASS_DEFINE(uct_atomicx_ep_t, uct_base_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_atomicx_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_atomicx_ep_t, uct_ep_t);
