/**
 * Requests and their elements (fiatomic_request.c): what a post call laid
 * out, the element state the strategies keep, and the cache requests
 * return to.
 */
#ifndef FIATOMIC_REQUEST_H_
#define FIATOMIC_REQUEST_H_

#include "base/fiatomic_int.h"

typedef enum {
    FIATOMIC_REQ_OP,
    FIATOMIC_REQ_FLUSH,     /* of one endpoint */
    FIATOMIC_REQ_CTX_FLUSH  /* of every endpoint: ep NULL, one FLUSH child
                               per endpoint */
} fiatomic_req_kind_t;

/* Request flags */
enum {
    FIATOMIC_REQ_F_USER      = UCS_BIT(0), /* handed to the user */
    FIATOMIC_REQ_F_FREED     = UCS_BIT(1), /* user called request_free */
    FIATOMIC_REQ_F_COMPLETED = UCS_BIT(2),
    FIATOMIC_REQ_F_FENCE     = UCS_BIT(3), /* FI_FENCE */
    FIATOMIC_REQ_F_DELIVERY  = UCS_BIT(4), /* complete at target */
    FIATOMIC_REQ_F_SILENT    = UCS_BIT(5), /* inject / no FI_COMPLETION */
    FIATOMIC_REQ_F_STARTED   = UCS_BIT(6),
    FIATOMIC_REQ_F_POSTING   = UCS_BIT(7), /* the post call has not returned */
    FIATOMIC_REQ_F_LISTED    = UCS_BIT(8), /* in ep->outstanding_list */
    FIATOMIC_REQ_F_COUNTED   = UCS_BIT(9), /* in ep->ops_inflight */
    FIATOMIC_REQ_F_CHILD     = UCS_BIT(10), /* an endpoint flush of a
                                               context flush (parent) */
    FIATOMIC_REQ_F_UCP       = UCS_BIT(11), /* an element had a UCP atomic
                                               in flight (native, CAS) */
    FIATOMIC_REQ_F_ABANDONED = UCS_BIT(12), /* reported timed out while UCP
                                               still held elements of it
                                               (fiatomic_ep_timeout.c) */
    FIATOMIC_REQ_F_ORPHAN    = UCS_BIT(13)  /* abandoned and let go by its
                                               owner: recycled when UCP
                                               hands back its last element */
};

struct fiatomic_elem {
    fiatomic_req_t      *req;
    fiatomic_rkey_t     *key;
    uint64_t            raddr;      /* element's remote address */
    const void          *operand;   /* NULL for ATOMIC_READ */
    const void          *compare;   /* compare family only */
    void                *result;    /* fetch/compare families only */
    fiatomic_strategy_t strategy;
    /* CAS-loop state (fiatomic_exec_cas.c): the enclosing word and the
     * element inside it */
    uint64_t            word_addr;
    unsigned            word_size;  /* 4 or 8 */
    unsigned            shift;      /* bit offset of the element in the word */
    uint64_t            expected;   /* value the CAS compares against */
    uint64_t            reply;      /* UCP reply buffer */
    bool                observed;   /* expected was read from the target */
    uint8_t             failures;   /* CASes of this element that failed */
};

struct fiatomic_req {
    ucs_list_link_t          list;      /* ep outstanding/deferred, or cache */
    fiatomic_h               fia;       /* owns the cache it returns to */
    fiatomic_ep_h            ep;        /* NULL for a context flush */
    fiatomic_req_t           *parent;   /* F_CHILD: the context flush */
    fiatomic_req_kind_t      kind;
    unsigned                 flags;     /* FIATOMIC_REQ_F_* */
    const fiatomic_cell_t    *cell;     /* NULL for a flush */
    size_t                   count;
    /* same-address ordering (fiatomic_order.c), on ordered endpoints */
    uint64_t                 order_lo;  /* extent at the target */
    uint64_t                 order_hi;
    bool                     order_native; /* every element native */
    uint8_t                  order_kind;   /* reads / writes */
    size_t                   remaining; /* elements not yet done */
    ucs_status_t             status;
    uint64_t                 submit_ns; /* when the call submitted it
                                           (fiatomic_ep_timeout.c) */
    fiatomic_send_callback_t cb;
    void                     *user_data;
    fiatomic_elem_t          *elems;
    size_t                   elems_capacity;
    uint8_t                  *copy;     /* FI_INJECT copies of operands */
    size_t                   copy_capacity;
};

/* fiatomic_request.c */
fiatomic_req_t *fiatomic_req_get(fiatomic_ep_h ep, size_t count,
                                 size_t copy_bytes);
/** A request of the context itself (no endpoint, no elements). */
fiatomic_req_t *fiatomic_req_get_fia(fiatomic_h fia);
void fiatomic_req_put(fiatomic_req_t *req);
/** The request no longer counts against its endpoint's operations in
 *  flight (completed, or never started). */
void fiatomic_req_uncount(fiatomic_req_t *req);
void fiatomic_req_cache_purge(fiatomic_h fia);
/* fiatomic_ep.c */
/** An element finished (status UCS_OK or an error). */
void fiatomic_elem_done(fiatomic_elem_t *elem, ucs_status_t status);

#endif
