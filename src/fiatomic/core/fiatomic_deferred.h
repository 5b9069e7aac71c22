/**
 * A callback queued while the context's lock was busy: what
 * fiatomic_lock_defer.c puts on the lock's queue and fiatomic_lock.c runs
 * before it lets the lock go.
 */
#ifndef FIATOMIC_DEFERRED_H_
#define FIATOMIC_DEFERRED_H_

#include "core/fiatomic_context.h"

typedef enum {
    FIATOMIC_DEFERRED_SEND, /* ucp_send_nbx_callback_t */
    FIATOMIC_DEFERRED_RECV, /* ucp_am_recv_data_nbx_callback_t */
    FIATOMIC_DEFERRED_AM    /* ucp_am_recv_callback_t */
} fiatomic_deferred_kind_t;

struct fiatomic_deferred {
    fiatomic_deferred_t      *next;
    fiatomic_deferred_kind_t kind;
    union {
        ucp_send_nbx_callback_t         send;
        ucp_am_recv_data_nbx_callback_t recv;
        ucp_am_recv_callback_t          am;
    }                        fn;
    void                     *request;   /* SEND, RECV */
    ucs_status_t             status;     /* SEND, RECV */
    size_t                   length;     /* RECV, AM */
    void                     *arg;       /* user_data (SEND, RECV), the
                                            handler's argument (AM) */
    void                     *data;      /* AM: UCP's kept data, or copy */
    ucp_am_recv_param_t      param;      /* AM */
    bool                     kept;       /* AM: UCP's data, returned
                                            UCS_INPROGRESS for */
    size_t                   cost;       /* bytes counted against the cap */
    uint8_t                  copy[];
};

#endif
