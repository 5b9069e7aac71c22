/**
 * The operation calls: every form (plain, vector, msg, inject) of every
 * family is validated in full (fiatomic_call_check) before anything is
 * sent, and its elements are laid out in a request handed to the endpoint
 * (fiatomic_post). The plain calls take shorter ways for one element with
 * nothing to wait for: a direct one is executed in place before the call
 * returns, with no request (fiatomic_one_direct, inline in the public call,
 * which makes the same checks), and any other skips the layout loop
 * (fiatomic_post_plain_locked).
 */
#include "cell/fiatomic_cpu.h"
#include "core/fiatomic_strategy.h"

#include <string.h>

/* Flags an operation accepts. FI_TRANSMIT_COMPLETE and FI_INJECT_COMPLETE
 * are what completion means anyway; FI_MORE is a hint. */
#define FIATOMIC_OP_FLAGS (FI_INJECT | FI_FENCE | FI_COMPLETION | FI_MORE | \
                           FI_TRANSMIT_COMPLETE | FI_INJECT_COMPLETE | \
                           FI_DELIVERY_COMPLETE)

/* What a call carries, whatever its form. */
typedef struct fiatomic_call {
    fiatomic_family_t        family;
    int                      op;
    int                      datatype;
    const fiatomic_cell_t    *cell;    /* set by fiatomic_call_check() */
    fiatomic_rkey_t          *key;     /* the first segment's, likewise */
    const struct fi_ioc      *iov;
    size_t                   iov_count;
    const struct fi_ioc      *comparev;
    size_t                   compare_count;
    const struct fi_ioc      *resultv;
    size_t                   result_count;
    const struct fi_rma_ioc  *rma_iov;
    size_t                   rma_iov_count;
    uint64_t                 flags;
    const fiatomic_request_param_t *param;
    bool                     is_msg;   /* FI_COMPLETION is meaningful */
    bool                     is_inject; /* fi_inject_atomic: no completion */
    void                     *context; /* msg->context */
} fiatomic_call_t;

/* Sum the element counts of an ioc array; every entry with elements must
 * have a buffer unless `may_be_null`, naturally aligned. */
static UCS_F_ALWAYS_INLINE ucs_status_t
fiatomic_ioc_total(const struct fi_ioc *iov, size_t count,
                   const fiatomic_cell_t *cell, bool may_be_null,
                   size_t *total_p)
{
    size_t total = 0, i;

    if ((count > 0) && (iov == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }

    for (i = 0; i < count; ++i) {
        if (iov[i].count == 0) {
            continue;
        }
        if (!may_be_null &&
            ((iov[i].addr == NULL) ||
             ((uintptr_t)iov[i].addr & (cell->align - 1)))) {
            return UCS_ERR_INVALID_PARAM;
        }
        if (total + iov[i].count < total) {
            return UCS_ERR_INVALID_PARAM;
        }
        total += iov[i].count;
    }

    *total_p = total;
    return UCS_OK;
}

/* Every remote segment: a known key, inside the exposed range, aligned,
 * with the accesses the operation needs. */
static UCS_F_ALWAYS_INLINE ucs_status_t
fiatomic_rma_check(fiatomic_ep_h ep, fiatomic_call_t *call, size_t *total_p)
{
    const fiatomic_cell_t *cell = call->cell;
    uint32_t needed = fiatomic_access_needed(call->family, call->op);
    const struct fi_rma_ioc *rma;
    fiatomic_rkey_t *key;
    size_t total = 0, i;
    uint64_t offset;

    if ((call->rma_iov_count > 0) && (call->rma_iov == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }

    for (i = 0; i < call->rma_iov_count; ++i) {
        rma = &call->rma_iov[i];
        if (rma->count == 0) {
            continue;
        }
        key = fiatomic_ep_key_lookup(ep, rma->key);
        if ((key == NULL) || (rma->addr & (cell->align - 1)) ||
            (rma->addr < key->address)) {
            return UCS_ERR_INVALID_PARAM;
        }
        offset = rma->addr - key->address;
        if ((offset > key->length) ||
            (rma->count > (key->length - offset) / cell->size)) {
            return UCS_ERR_INVALID_PARAM; /* beyond the exposed range */
        }
        if (key->denied & needed) {
            return UCS_ERR_REJECTED; /* memory exposed without the access */
        }
        if (total + rma->count < total) {
            return UCS_ERR_INVALID_PARAM;
        }
        if (total == 0) {
            call->key = key;
        }
        total += rma->count;
    }

    *total_p = total;
    return UCS_OK;
}

/*
 * The one validation of every call, whatever its form or path: everything
 * is checked before anything is sent, and the cell is resolved once.
 */
static UCS_F_ALWAYS_INLINE ucs_status_t
fiatomic_call_check(fiatomic_ep_h ep, fiatomic_call_t *call, size_t *count_p)
{
    bool needs_operand = (call->op != FI_ATOMIC_READ);
    size_t count, rma_count, other;
    ucs_status_t status;

    if (ucs_unlikely((ep == NULL) || ep->closed)) {
        /* a failed endpoint: what failed it (its operations were told) */
        return ((ep != NULL) && (ep->failed != UCS_OK)) ?
               ep->failed : UCS_ERR_INVALID_PARAM;
    }

    if (ucs_unlikely(call->flags & ~FIATOMIC_OP_FLAGS)) {
        return (call->flags & (FI_TAGGED | FI_REMOTE_CQ_DATA)) ?
               UCS_ERR_UNSUPPORTED : UCS_ERR_INVALID_PARAM;
    }

    call->cell = fiatomic_cell_get(call->family, call->op, call->datatype);
    if (ucs_unlikely(call->cell == NULL)) {
        return UCS_ERR_UNSUPPORTED;
    }

    status = fiatomic_ioc_total(call->iov, call->iov_count, call->cell,
                                !needs_operand, &count);
    if (status != UCS_OK) {
        return status;
    }
    if (!needs_operand) {
        /* ATOMIC_READ ignores buf; the remote side gives the count. */
        count = 0;
    }

    status = fiatomic_rma_check(ep, call, &rma_count);
    if (status != UCS_OK) {
        return status;
    }

    if (needs_operand && (count != rma_count)) {
        return UCS_ERR_INVALID_PARAM;
    }
    count = rma_count;
    if (count == 0) {
        return UCS_ERR_INVALID_PARAM;
    } else if (count > ep->fia->max_count) {
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    if (call->family == FIATOMIC_FAMILY_COMPARE) {
        status = fiatomic_ioc_total(call->comparev, call->compare_count,
                                    call->cell, false, &other);
        if ((status != UCS_OK) || (other != count)) {
            return UCS_ERR_INVALID_PARAM;
        }
    }

    if (call->family != FIATOMIC_FAMILY_BASE) {
        status = fiatomic_ioc_total(call->resultv, call->result_count,
                                    call->cell, false, &other);
        if ((status != UCS_OK) || (other != count)) {
            return UCS_ERR_INVALID_PARAM;
        }
    }

    *count_p = count;
    return UCS_OK;
}

/* Walks an ioc array element by element. */
typedef struct {
    const struct fi_ioc *iov;
    size_t              entry;
    size_t              index;
} fiatomic_ioc_iter_t;

static void *fiatomic_ioc_next(fiatomic_ioc_iter_t *it, size_t elem_size)
{
    void *ptr;

    if (it->iov == NULL) {
        return NULL;
    }

    while (it->index >= it->iov[it->entry].count) {
        ++it->entry;
        it->index = 0;
    }

    ptr = (uint8_t*)it->iov[it->entry].addr + it->index * elem_size;
    ++it->index;
    return ptr;
}

/* One element; with FI_INJECT, its operand and compare value are copied
 * (at *copy_p) so the caller's buffers are free on return. */
static UCS_F_ALWAYS_INLINE void
fiatomic_elem_init(fiatomic_elem_t *elem, fiatomic_req_t *req,
                   fiatomic_rkey_t *key, uint64_t raddr, const void *operand,
                   const void *compare, void *result,
                   fiatomic_strategy_t strategy, bool inject,
                   uint8_t **copy_p)
{
    size_t size = req->cell->size;

    elem->req      = req;
    elem->key      = key;
    elem->raddr    = raddr;
    elem->operand  = operand;
    elem->compare  = compare;
    elem->result   = result;
    elem->strategy = strategy;
    if (inject && (operand != NULL)) {
        memcpy(*copy_p, operand, size);
        elem->operand = *copy_p;
        *copy_p      += size;
    }
    if (inject && (compare != NULL)) {
        memcpy(*copy_p, compare, size);
        elem->compare = *copy_p;
        *copy_p      += size;
    }
}

/* Lay out the elements, each remote segment with its key's strategy. */
static ucs_status_t fiatomic_call_layout(fiatomic_ep_h ep,
                                         const fiatomic_call_t *call,
                                         fiatomic_req_t *req)
{
    size_t size        = req->cell->size;
    bool inject        = (call->flags & FI_INJECT);
    bool has_operand   = (call->op != FI_ATOMIC_READ);
    bool has_compare   = (call->family == FIATOMIC_FAMILY_COMPARE);
    fiatomic_ioc_iter_t opi = {has_operand ? call->iov : NULL, 0, 0};
    fiatomic_ioc_iter_t cmi = {has_compare ? call->comparev : NULL, 0, 0};
    fiatomic_ioc_iter_t rsi = {(call->family != FIATOMIC_FAMILY_BASE) ?
                               call->resultv : NULL, 0, 0};
    uint8_t *copy      = req->copy;
    fiatomic_strategy_t strategy;
    const struct fi_rma_ioc *rma;
    fiatomic_rkey_t *key;
    size_t e = 0, i, j;
    const void *operand, *compare;
    void *result;

    for (i = 0; i < call->rma_iov_count; ++i) {
        rma = &call->rma_iov[i];
        if (rma->count == 0) {
            continue;
        }
        key      = fiatomic_ep_key_lookup(ep, rma->key);
        strategy = fiatomic_select_call(ep, key, req->cell, req->count);
        fiatomic_trace_call(ep, key, req->cell, rma->count, strategy);
        if (strategy == FIATOMIC_STRATEGY_NONE) {
            return UCS_ERR_UNSUPPORTED;
        }
        for (j = 0; j < rma->count; ++j, ++e) {
            operand = fiatomic_ioc_next(&opi, size);
            compare = fiatomic_ioc_next(&cmi, size);
            result  = fiatomic_ioc_next(&rsi, size);
            fiatomic_elem_init(&req->elems[e], req, key, rma->addr + j * size,
                               operand, compare, result, strategy, inject,
                               &copy);
        }
    }

    return UCS_OK;
}

/* A request for `count` elements of the call, everything but the elements;
 * UCS_ERR_NO_RESOURCE when the endpoint has its limit of operations in
 * flight (nothing is sent then). */
static ucs_status_t fiatomic_call_req(fiatomic_ep_h ep,
                                      const fiatomic_call_t *call,
                                      size_t count, fiatomic_req_t **req_p)
{
    const fiatomic_request_param_t *param = call->param;
    size_t size = call->cell->size;
    fiatomic_req_t *req;

    if (ucs_unlikely(ep->ops_inflight >= ep->fia->max_inflight)) {
        return UCS_ERR_NO_RESOURCE;
    }

    req = fiatomic_req_get(ep, count,
                           (call->flags & FI_INJECT) ? count * size * 2 : 0);
    if (req == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    req->cell      = call->cell;
    req->flags     = FIATOMIC_REQ_F_POSTING | FIATOMIC_REQ_F_COUNTED;
    ++ep->ops_inflight;
    if (call->flags & FI_FENCE) {
        req->flags |= FIATOMIC_REQ_F_FENCE;
    }
    /* an ordered endpoint starts a later operation when the earlier one
     * completed at the target */
    if ((call->flags & FI_DELIVERY_COMPLETE) || (ep->msg_order != 0)) {
        req->flags |= FIATOMIC_REQ_F_DELIVERY;
    }
    /* fi_inject_atomic, or a msg call without FI_COMPLETION on an endpoint
     * with selective completion: no completion is reported. */
    if (call->is_inject ||
        (call->is_msg && (ep->flags & FIATOMIC_EP_FLAG_SELECTIVE_COMPLETION) &&
         !(call->flags & FI_COMPLETION))) {
        req->flags |= FIATOMIC_REQ_F_SILENT;
    }

    req->user_data = call->context;
    if (param != NULL) {
        if (param->op_attr_mask & FIATOMIC_OP_ATTR_FIELD_CALLBACK) {
            req->cb = param->cb;
        }
        if (param->op_attr_mask & FIATOMIC_OP_ATTR_FIELD_USER_DATA) {
            req->user_data = param->user_data;
        }
    }
    *req_p = req;
    return UCS_OK;
}

/* Hand a laid-out request to the endpoint; what the call returns. */
static ucs_status_ptr_t fiatomic_req_post(fiatomic_ep_h ep,
                                          fiatomic_req_t *req)
{
    ucs_status_t status;

    fiatomic_ep_submit(ep, req);
    req->flags &= ~FIATOMIC_REQ_F_POSTING;

    if (req->flags & FIATOMIC_REQ_F_COMPLETED) {
        status = req->status;
        if ((req->flags & FIATOMIC_REQ_F_SILENT) && (status != UCS_OK) &&
            (ep->silent_error == status)) {
            ep->silent_error = UCS_OK; /* reported right here instead */
        }
        if (status == UCS_OK) {
            fiatomic_cntr_count(ep, UCS_OK); /* an error return is not */
        }
        fiatomic_req_put(req);
        return UCS_STATUS_PTR(status);
    }

    if (req->flags & FIATOMIC_REQ_F_SILENT) {
        return NULL; /* finishes in the background; flush waits for it */
    }

    req->flags |= FIATOMIC_REQ_F_USER;
    return req;
}

/* The general path of a checked call. */
static ucs_status_ptr_t fiatomic_post_checked(fiatomic_ep_h ep,
                                              const fiatomic_call_t *call,
                                              size_t count)
{
    fiatomic_req_t *req;
    ucs_status_t status;

    status = fiatomic_call_req(ep, call, count, &req);
    if (status != UCS_OK) {
        return UCS_STATUS_PTR(status);
    }

    status = fiatomic_call_layout(ep, call, req);
    if (status != UCS_OK) {
        fiatomic_req_put(req);
        return UCS_STATUS_PTR(status);
    }

    return fiatomic_req_post(ep, req);
}

static ucs_status_ptr_t fiatomic_post(fiatomic_ep_h ep, fiatomic_call_t *call)
{
    ucs_status_ptr_t sptr;
    ucs_status_t status;
    size_t count;
    bool locked;

    if (ucs_unlikely(ep == NULL)) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }

    locked = fiatomic_enter(ep->fia);
    status = fiatomic_call_check(ep, call, &count);
    if (status != UCS_OK) {
        sptr = UCS_STATUS_PTR(status);
    } else {
        sptr = fiatomic_post_checked(ep, call, count);
    }
    fiatomic_leave(ep->fia, locked);
    return sptr;
}

/* A 32-byte element executed direct at once (fiatomic_wide_lock.c), out of
 * the fast path's line. */
static UCS_F_NOINLINE ucs_status_t
fiatomic_post_wide(fiatomic_ep_h ep, const fiatomic_call_t *call,
                   fiatomic_rkey_t *key, void *old)
{
    uint64_t offset = call->rma_iov[0].addr - key->address;

    return fiatomic_wide_apply(ep->fia->wide_locks, ep->fia->op_timeout_ns,
                               call->cell, key->wide_locks, offset,
                               key->local_base + offset,
                               (call->op != FI_ATOMIC_READ) ?
                               call->iov[0].addr : NULL,
                               (call->family == FIATOMIC_FAMILY_COMPARE) ?
                               call->comparev[0].addr : NULL, old);
}

/*
 * The plain calls: the same validation as every call, then, for one
 * element with nothing to wait for (no FI_FENCE, nothing deferred), one
 * strategy lookup and a direct element executed at once without a request.
 */
static UCS_F_ALWAYS_INLINE ucs_status_ptr_t
fiatomic_post_plain_locked(fiatomic_ep_h ep, fiatomic_call_t *call)
{
    uint8_t old[FIATOMIC_MAX_ELEM_SIZE];
    const fiatomic_cell_t *cell;
    fiatomic_strategy_t strategy;
    fiatomic_req_t *req;
    fiatomic_rkey_t *key;
    ucs_status_t status;
    uint8_t *copy;
    size_t count;

    status = fiatomic_call_check(ep, call, &count);
    if (ucs_unlikely(status != UCS_OK)) {
        return UCS_STATUS_PTR(status);
    }

    if ((count != 1) || (call->flags & FI_FENCE) ||
        !ucs_list_is_empty(&ep->deferred)) {
        return fiatomic_post_checked(ep, call, count);
    }

    cell     = call->cell;
    key      = call->key;
    strategy = fiatomic_select_cached(ep, key, cell);
    fiatomic_trace_call(ep, key, cell, 1, strategy);
    if (ucs_unlikely(strategy == FIATOMIC_STRATEGY_NONE)) {
        return UCS_STATUS_PTR(UCS_ERR_UNSUPPORTED);
    } else if ((strategy != FIATOMIC_STRATEGY_TARGET) &&
               !fiatomic_key_live(ep, key)) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    } else if ((strategy == FIATOMIC_STRATEGY_DIRECT) &&
               ((ep->msg_order == 0) || (ep->ops_inflight == 0))) {
        if (ucs_unlikely(cell->size == 32)) {
            status = fiatomic_post_wide(ep, call, key, old);
            if (status != UCS_OK) {
                return UCS_STATUS_PTR(status);
            }
        } else {
            fiatomic_cpu_apply(cell,
                               key->local_base +
                               (call->rma_iov[0].addr - key->address),
                               (call->op != FI_ATOMIC_READ) ?
                               call->iov[0].addr : NULL,
                               (call->family == FIATOMIC_FAMILY_COMPARE) ?
                               call->comparev[0].addr : NULL, old);
        }
        if (call->family != FIATOMIC_FAMILY_BASE) {
            memcpy(call->resultv[0].addr, old, cell->size);
        }
        fiatomic_cntr_count(ep, UCS_OK);
        return NULL; /* done, in place: no request, no callback */
    }

    status = fiatomic_call_req(ep, call, 1, &req);
    if (ucs_unlikely(status != UCS_OK)) {
        return UCS_STATUS_PTR(status);
    }

    copy = req->copy;
    fiatomic_elem_init(&req->elems[0], req, key, call->rma_iov[0].addr,
                       (call->op != FI_ATOMIC_READ) ? call->iov[0].addr :
                                                      NULL,
                       (call->family == FIATOMIC_FAMILY_COMPARE) ?
                       call->comparev[0].addr : NULL,
                       (call->family != FIATOMIC_FAMILY_BASE) ?
                       call->resultv[0].addr : NULL,
                       strategy, call->flags & FI_INJECT, &copy);
    return fiatomic_req_post(ep, req);
}

/* With a multi-threaded worker, under the context's lock. */
static UCS_F_ALWAYS_INLINE ucs_status_ptr_t
fiatomic_post_plain(fiatomic_ep_h ep, fiatomic_call_t *call)
{
    ucs_status_ptr_t sptr;
    bool locked;

    if (ucs_unlikely(ep == NULL)) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }

    locked = fiatomic_enter(ep->fia);
    sptr   = fiatomic_post_plain_locked(ep, call);
    fiatomic_leave(ep->fia, locked);
    return sptr;
}

static uint64_t fiatomic_param_flags(const fiatomic_request_param_t *param)
{
    return ((param != NULL) &&
            (param->op_attr_mask & FIATOMIC_OP_ATTR_FIELD_FLAGS)) ?
           param->flags : 0;
}

/* What every form fills: the cell, the operands, the remote segments. */
static void fiatomic_call_init(fiatomic_call_t *call, fiatomic_family_t family,
                               int op, int datatype, const struct fi_ioc *iov,
                               size_t iov_count,
                               const struct fi_rma_ioc *rma_iov,
                               size_t rma_iov_count, uint64_t flags,
                               const fiatomic_request_param_t *param)
{
    memset(call, 0, sizeof(*call));
    call->family        = family;
    call->op            = op;
    call->datatype      = datatype;
    call->iov           = iov;
    call->iov_count     = iov_count;
    call->rma_iov       = rma_iov;
    call->rma_iov_count = rma_iov_count;
    call->flags         = flags | fiatomic_param_flags(param);
    call->param         = param;
}

/* A plain call of one segment (fi_atomic, fi_fetch_atomic,
 * fi_compare_atomic forms) the fast path did not take. Out of line: the
 * fast path's callers keep a small frame. */
static UCS_F_NOINLINE ucs_status_ptr_t
fiatomic_post_one(fiatomic_ep_h ep, fiatomic_family_t family, int op,
                  int datatype, const void *buf, size_t count,
                  const void *compare, void *result, uint64_t addr,
                  uint64_t key, const fiatomic_request_param_t *param)
{
    struct fi_ioc iov     = {(void*)buf, count};
    struct fi_ioc cmp     = {(void*)compare, count};
    struct fi_ioc res     = {result, count};
    struct fi_rma_ioc rma = {addr, count, key};
    fiatomic_call_t call;

    fiatomic_call_init(&call, family, op, datatype, &iov, 1, &rma, 1, 0,
                       param);
    if (family == FIATOMIC_FAMILY_COMPARE) {
        call.comparev      = &cmp;
        call.compare_count = 1;
    }
    if (family != FIATOMIC_FAMILY_BASE) {
        call.resultv      = &res;
        call.result_count = 1;
    }
    return fiatomic_post_plain(ep, &call);
}

/* Flags the single-element direct path takes: what a call done in place,
 * before it returns, meets anyway. Anything else (FI_FENCE, bits that are
 * no flag of an operation) goes the general way, which judges it. */
#define FIATOMIC_ONE_DIRECT_FLAGS (FI_INJECT | FI_COMPLETION | FI_MORE | \
                                   FI_TRANSMIT_COMPLETE | \
                                   FI_INJECT_COMPLETE | \
                                   FI_DELIVERY_COMPLETE)

/* What fiatomic_one_direct() returns for a call it did not execute, besides
 * an error status. Internal: never returned to the user. */
#define FIATOMIC_ONE_GENERAL ((ucs_status_ptr_t)(uintptr_t)1) /* the general
                                                                 path's */
#define FIATOMIC_ONE_SLOW    ((ucs_status_ptr_t)(uintptr_t)2) /* the slow
                                                                 instance's */

/*
 * The plain calls' single-element direct path (fi_atomic, fi_fetch_atomic,
 * fi_compare_atomic forms): one element of `cell` (a cell of the matrix) on
 * a key whose strategy for the cell is direct, on a single-threaded context
 * with nothing deferred. It makes every check of fiatomic_call_check() and
 * fiatomic_post_plain_locked() for such a call (nothing else reaches
 * memory), on the call's own arguments without building a fiatomic_call_t,
 * then executes the element in place, its old value straight into the
 * caller's result: NULL. Any other call: FIATOMIC_ONE_GENERAL, and the
 * caller hands it, unchanged, to fiatomic_post_one(), which checks it again
 * and reports what is wrong, or runs it another way.
 *
 * Two instances per form. The fast one (`slow` false, inline in the public
 * call) takes the cells with a CPU executor (1 to 16 bytes) and calls
 * nothing but that executor, so that the arguments stay where they came
 * and its fallbacks are tail calls with the public call's own arguments.
 * What needs a call on the way goes to the slow instance (out of line,
 * every check): a 32-byte cell (its public call sends it there before
 * anything else), executed under its lock, and a key of memory that this
 * very context exposed (FIATOMIC_ONE_SLOW), whose liveness is in the
 * context's region table. A strategy not yet known for the key, or request
 * tracing on: the general path, which decides and traces.
 */
static UCS_F_ALWAYS_INLINE ucs_status_ptr_t
fiatomic_one_direct(fiatomic_ep_h ep, const fiatomic_cell_t *cell,
                    fiatomic_family_t family, int op, const void *buf,
                    size_t count, const void *compare, void *result,
                    uint64_t addr, uint64_t key_id,
                    const fiatomic_request_param_t *param, bool slow)
{
    uint64_t scratch[2]; /* the old value of a base-family call */
    uint8_t old[FIATOMIC_MAX_ELEM_SIZE];
    uintptr_t misaligned = (uintptr_t)cell->align - 1;
    const void *operand, *cmp;
    fiatomic_rkey_t *key;
    ucs_status_t status;
    uint64_t offset;

    if (ucs_unlikely((ep == NULL) || ep->fia->mt || ep->closed ||
                     (count != 1) ||
                     (fiatomic_param_flags(param) &
                      ~FIATOMIC_ONE_DIRECT_FLAGS) ||
                     !ucs_list_is_empty(&ep->deferred))) {
        return FIATOMIC_ONE_GENERAL;
    }

    /* the key: known; the region table of this context's own memory is out
     * of the fast instance's reach */
    key = fiatomic_ep_key_lookup(ep, key_id);
    if (ucs_unlikely((key == NULL) ||
                     (key->denied & fiatomic_access_needed(family, op)))) {
        return FIATOMIC_ONE_GENERAL; /* which refuses what is denied */
    } else if (!slow && ucs_unlikely(key->same_context)) {
        return FIATOMIC_ONE_SLOW;
    }

    /* operands and result: present and naturally aligned */
    if (ucs_unlikely(((op != FI_ATOMIC_READ) &&
                      ((buf == NULL) || ((uintptr_t)buf & misaligned))) ||
                     ((family == FIATOMIC_FAMILY_COMPARE) &&
                      ((compare == NULL) ||
                       ((uintptr_t)compare & misaligned))) ||
                     ((family != FIATOMIC_FAMILY_BASE) &&
                      ((result == NULL) ||
                       ((uintptr_t)result & misaligned))))) {
        return FIATOMIC_ONE_GENERAL;
    }

    /* the element: aligned, inside the exposed range (a context's
     * max_count is 1 at least) */
    if (ucs_unlikely((addr & misaligned) || (addr < key->address))) {
        return FIATOMIC_ONE_GENERAL;
    }
    offset = addr - key->address;
    if (ucs_unlikely((offset > key->length) ||
                     (key->length - offset < cell->size))) {
        return FIATOMIC_ONE_GENERAL;
    }

    /* direct (already known for the key), nothing earlier to wait for, no
     * request tracing, the memory still exposed */
    if (ucs_unlikely((((const uint8_t*)key->strategy)[cell->index] !=
                      FIATOMIC_STRATEGY_DIRECT) ||
                     ((ep->msg_order != 0) && (ep->ops_inflight != 0)) ||
                     ucs_log_is_enabled(UCS_LOG_LEVEL_TRACE_REQ) ||
                     !fiatomic_key_live(ep, key))) {
        return FIATOMIC_ONE_GENERAL;
    }

    operand = (op != FI_ATOMIC_READ) ? buf : NULL;
    cmp     = (family == FIATOMIC_FAMILY_COMPARE) ? compare : NULL;
    if (slow && (cell->cpu == NULL)) {
        /* 32 bytes, under its lock (fiatomic_wide_lock.c); the old value
         * through a buffer of its own: the result may be the operand */
        status = fiatomic_wide_apply(ep->fia->wide_locks,
                                     ep->fia->op_timeout_ns, cell,
                                     key->wide_locks, offset,
                                     key->local_base + offset, operand, cmp,
                                     old);
        if (ucs_unlikely(status != UCS_OK)) {
            return UCS_STATUS_PTR(status);
        }
        if (family != FIATOMIC_FAMILY_BASE) {
            memcpy(result, old, 32); /* a constant size: a few moves */
        }
    } else {
        cell->cpu(key->local_base + offset, operand, cmp,
                  (family != FIATOMIC_FAMILY_BASE) ? result : (void*)scratch);
    }
    fiatomic_cntr_count(ep, UCS_OK);
    return NULL; /* done, in place: no request, no callback */
}

/* The cell of a plain call when it has a CPU executor (1 to 16 bytes), or
 * NULL: out of range, a hole of the matrix, or a 32-byte cell. */
static UCS_F_ALWAYS_INLINE const fiatomic_cell_t *
fiatomic_one_cpu_cell(fiatomic_family_t family, int op, int datatype)
{
    const fiatomic_cell_t *cell = fiatomic_cell_entry(family, op, datatype);

    if (ucs_unlikely(cell == NULL)) {
        return NULL;
    }
    /* a pointer from here on: without this, the compiler computes the
     * address from op and datatype again at each use of a field */
    __asm__("" : "+r"(cell));
    return ucs_likely(cell->cpu != NULL) ? cell : NULL;
}

/*
 * Each plain call: its general path and its slow direct instance, out of
 * line with the public call's own arguments, so that the fast instance
 * inline in the public call leaves for them with a jump.
 */
#define FIATOMIC_ONE_ENTRIES(_name, _family, _params, _args, _compare, \
                             _result) \
    static UCS_F_NOINLINE ucs_status_ptr_t _name##_general _params \
    { \
        return fiatomic_post_one(ep, _family, op, datatype, buf, count, \
                                 _compare, _result, addr, key, param); \
    } \
    \
    static UCS_F_NOINLINE ucs_status_ptr_t _name##_slow _params \
    { \
        const fiatomic_cell_t *cell = fiatomic_cell_get(_family, op, \
                                                        datatype); \
        ucs_status_ptr_t sptr; \
        \
        __asm__("" : "+r"(cell)); /* as in fiatomic_one_cpu_cell() */ \
        if (cell == NULL) { \
            return _name##_general _args; \
        } \
        sptr = fiatomic_one_direct(ep, cell, _family, op, buf, count, \
                                   _compare, _result, addr, key, param, \
                                   true); \
        if (sptr != FIATOMIC_ONE_GENERAL) { \
            return sptr; \
        } \
        return _name##_general _args; \
    } \
    \
    FIATOMIC_API ucs_status_ptr_t _name _params \
    { \
        const fiatomic_cell_t *cell = fiatomic_one_cpu_cell(_family, op, \
                                                            datatype); \
        ucs_status_ptr_t sptr; \
        \
        if (ucs_unlikely(cell == NULL)) { \
            return _name##_slow _args; \
        } \
        sptr = fiatomic_one_direct(ep, cell, _family, op, buf, count, \
                                   _compare, _result, addr, key, param, \
                                   false); \
        if (ucs_likely(sptr == NULL)) { \
            return NULL; \
        } else if (sptr == FIATOMIC_ONE_SLOW) { \
            return _name##_slow _args; \
        } \
        return _name##_general _args; \
    }

/* The *msg forms: msg->context is the callback's default user_data. */
static ucs_status_ptr_t fiatomic_post_msg(fiatomic_ep_h ep,
                                          fiatomic_family_t family,
                                          const struct fi_msg_atomic *msg,
                                          const struct fi_ioc *comparev,
                                          size_t compare_count,
                                          const struct fi_ioc *resultv,
                                          size_t result_count, uint64_t flags,
                                          const fiatomic_request_param_t *param)
{
    fiatomic_call_t call;

    if (msg == NULL) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }

    fiatomic_call_init(&call, family, msg->op, msg->datatype, msg->msg_iov,
                       msg->iov_count, msg->rma_iov, msg->rma_iov_count, flags,
                       param);
    call.comparev      = comparev;
    call.compare_count = compare_count;
    call.resultv       = resultv;
    call.result_count  = result_count;
    call.is_msg        = true;
    call.context       = msg->context;
    return fiatomic_post(ep, &call);
}

/* ------------------------------------------------------------------------ */
/* Base family                                                               */

FIATOMIC_ONE_ENTRIES(fiatomic_atomic_nbx, FIATOMIC_FAMILY_BASE,
                     (fiatomic_ep_h ep, const void *buf, size_t count,
                      uint64_t addr, uint64_t key, enum fi_datatype datatype,
                      enum fi_op op, const fiatomic_request_param_t *param),
                     (ep, buf, count, addr, key, datatype, op, param),
                     NULL, NULL)

FIATOMIC_API ucs_status_ptr_t
fiatomic_atomicv_nbx(fiatomic_ep_h ep, const struct fi_ioc *iov,
                     size_t iov_count, const struct fi_rma_ioc *rma_iov,
                     size_t rma_iov_count, enum fi_datatype datatype,
                     enum fi_op op, const fiatomic_request_param_t *param)
{
    fiatomic_call_t call;

    fiatomic_call_init(&call, FIATOMIC_FAMILY_BASE, op, datatype, iov,
                       iov_count, rma_iov, rma_iov_count, 0, param);
    return fiatomic_post(ep, &call);
}

FIATOMIC_API ucs_status_ptr_t
fiatomic_atomicmsg_nbx(fiatomic_ep_h ep, const struct fi_msg_atomic *msg,
                       uint64_t flags, const fiatomic_request_param_t *param)
{
    return fiatomic_post_msg(ep, FIATOMIC_FAMILY_BASE, msg, NULL, 0, NULL, 0,
                             flags, param);
}

FIATOMIC_API ucs_status_t
fiatomic_inject_atomic(fiatomic_ep_h ep, const void *buf, size_t count,
                       uint64_t addr, uint64_t key, enum fi_datatype datatype,
                       enum fi_op op)
{
    struct fi_ioc iov     = {(void*)buf, count};
    struct fi_rma_ioc rma = {addr, count, key};
    fiatomic_call_t call;
    ucs_status_ptr_t sptr;

    fiatomic_call_init(&call, FIATOMIC_FAMILY_BASE, op, datatype, &iov, 1,
                       &rma, 1, FI_INJECT, NULL);
    call.is_inject = true;
    /* A silent request is never returned: a status or NULL (UCS_OK). Not
     * inside UCS_PTR_STATUS(), which evaluates its argument twice. */
    sptr = fiatomic_post(ep, &call);
    return UCS_PTR_STATUS(sptr);
}

/* ------------------------------------------------------------------------ */
/* Fetch family                                                              */

FIATOMIC_ONE_ENTRIES(fiatomic_fetch_atomic_nbx, FIATOMIC_FAMILY_FETCH,
                     (fiatomic_ep_h ep, const void *buf, size_t count,
                      void *result, uint64_t addr, uint64_t key,
                      enum fi_datatype datatype, enum fi_op op,
                      const fiatomic_request_param_t *param),
                     (ep, buf, count, result, addr, key, datatype, op, param),
                     NULL, result)

FIATOMIC_API ucs_status_ptr_t
fiatomic_fetch_atomicv_nbx(fiatomic_ep_h ep, const struct fi_ioc *iov,
                           size_t iov_count, struct fi_ioc *resultv,
                           size_t result_count,
                           const struct fi_rma_ioc *rma_iov,
                           size_t rma_iov_count, enum fi_datatype datatype,
                           enum fi_op op,
                           const fiatomic_request_param_t *param)
{
    fiatomic_call_t call;

    fiatomic_call_init(&call, FIATOMIC_FAMILY_FETCH, op, datatype, iov,
                       iov_count, rma_iov, rma_iov_count, 0, param);
    call.resultv      = resultv;
    call.result_count = result_count;
    return fiatomic_post(ep, &call);
}

FIATOMIC_API ucs_status_ptr_t
fiatomic_fetch_atomicmsg_nbx(fiatomic_ep_h ep, const struct fi_msg_atomic *msg,
                             struct fi_ioc *resultv, size_t result_count,
                             uint64_t flags,
                             const fiatomic_request_param_t *param)
{
    return fiatomic_post_msg(ep, FIATOMIC_FAMILY_FETCH, msg, NULL, 0, resultv,
                             result_count, flags, param);
}

/* ------------------------------------------------------------------------ */
/* Compare family                                                            */

FIATOMIC_ONE_ENTRIES(fiatomic_compare_atomic_nbx, FIATOMIC_FAMILY_COMPARE,
                     (fiatomic_ep_h ep, const void *buf, size_t count,
                      const void *compare, void *result, uint64_t addr,
                      uint64_t key, enum fi_datatype datatype, enum fi_op op,
                      const fiatomic_request_param_t *param),
                     (ep, buf, count, compare, result, addr, key, datatype,
                      op, param),
                     compare, result)

FIATOMIC_API ucs_status_ptr_t
fiatomic_compare_atomicv_nbx(fiatomic_ep_h ep, const struct fi_ioc *iov,
                             size_t iov_count, const struct fi_ioc *comparev,
                             size_t compare_count, struct fi_ioc *resultv,
                             size_t result_count,
                             const struct fi_rma_ioc *rma_iov,
                             size_t rma_iov_count, enum fi_datatype datatype,
                             enum fi_op op,
                             const fiatomic_request_param_t *param)
{
    fiatomic_call_t call;

    fiatomic_call_init(&call, FIATOMIC_FAMILY_COMPARE, op, datatype, iov,
                       iov_count, rma_iov, rma_iov_count, 0, param);
    call.comparev      = comparev;
    call.compare_count = compare_count;
    call.resultv       = resultv;
    call.result_count  = result_count;
    return fiatomic_post(ep, &call);
}

FIATOMIC_API ucs_status_ptr_t
fiatomic_compare_atomicmsg_nbx(fiatomic_ep_h ep,
                               const struct fi_msg_atomic *msg,
                               const struct fi_ioc *comparev,
                               size_t compare_count, struct fi_ioc *resultv,
                               size_t result_count, uint64_t flags,
                               const fiatomic_request_param_t *param)
{
    return fiatomic_post_msg(ep, FIATOMIC_FAMILY_COMPARE, msg, comparev,
                             compare_count, resultv, result_count, flags,
                             param);
}
