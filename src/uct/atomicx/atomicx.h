/**
 * atomicx: a UCT transport that offers the full 32/64-bit atomic op set on
 * any verbs device with standard atomics (FETCH_AND_ADD, CMP_AND_SWP), over
 * RC QPs. Native 64-bit ADD/FADD/CSWAP; everything else is a device-side
 * compare-and-swap loop on the enclosing 8-byte word.
 */

#ifndef UCT_ATOMICX_H_
#define UCT_ATOMICX_H_

#include "atomicx_compat.h"
#include "atomicx_counters.h"

#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <ucs/datastruct/list.h>
#include <ucs/datastruct/queue.h>
#include <infiniband/verbs.h>

#define UCT_ATOMICX_NAME        "atomicx"
#define UCT_ATOMICX_CFG_PREFIX  "ATOMICX_"
#define UCT_ATOMICX_MD_PREFIX   "atomicx_" /* MD name = prefix + verbs device */


/* How the device returns a fetched 8-byte value */
typedef enum {
    UCT_ATOMICX_REPLY_HOST, /* host byte order (e.g. soft-RoCE) */
    UCT_ATOMICX_REPLY_BE    /* big-endian (e.g. mlx5 by default) */
} uct_atomicx_reply_order_t;


typedef struct uct_atomicx_md_config {
    uct_md_config_t         super;
} uct_atomicx_md_config_t;


typedef struct uct_atomicx_md {
    uct_md_t                super;
    struct ibv_context      *ctx;
    struct ibv_pd           *pd;
    struct ibv_device_attr  dev_attr;
    char                    dev_name[UCT_DEVICE_NAME_MAX];
} uct_atomicx_md_t;


typedef struct uct_atomicx_iface_config {
    uct_iface_config_t      super;
    unsigned                tx_queue_len;     /* Send WRs per endpoint */
    unsigned                max_ops;          /* Atomics in flight per iface */
    unsigned long           gid_index;        /* or UCS_ULUNITS_AUTO */
    double                  timeout;          /* Transport ack timeout, s */
    unsigned                retry_count;      /* Transport retries */
    unsigned                sl;               /* Service level */
    double                  selftest_timeout; /* Byte-order self-test, s */
} uct_atomicx_iface_config_t;


/* Address of the device port: enough to build an address vector */
typedef struct uct_atomicx_dev_addr {
    union ibv_gid           gid;
    uint16_t                lid;
    uint8_t                 is_global;        /* RoCE: GRH required */
    uint8_t                 reserved;         /* Zero */
} uct_atomicx_dev_addr_t;


typedef struct uct_atomicx_ep_addr {
    uint32_t                qp_num;
} UCS_S_PACKED uct_atomicx_ep_addr_t;


struct uct_atomicx_ep;


/* One atomic operation in flight; it owns one 8-byte result slot */
typedef struct uct_atomicx_op {
    struct uct_atomicx_ep   *ep;
    uct_completion_t        *comp;
    void                    *result;       /* User's result, NULL for post */
    uint64_t                word_addr;     /* Remote 8-byte word */
    uint64_t                value;         /* Operand (swap value for CSWAP) */
    uint64_t                compare;       /* CSWAP compare value */
    uint64_t                expected;      /* Compare of the CAS in flight */
    uint64_t                desired;       /* Swap of the CAS in flight */
    uint32_t                rkey;
    uint8_t                 opcode;        /* uct_atomic_op_t */
    uint8_t                 size;          /* 4 or 8 */
    uint8_t                 shift;         /* 32-bit operand position */
    uint8_t                 native;        /* One device op, no CAS loop */
    uint8_t                 in_use;
    uint8_t                 held;          /* Accepted, not posted yet */
    uint8_t                 fenced;        /* Issued after a fence */
    uint32_t                next_free;
    ucs_queue_elem_t        hold_elem;     /* In ep->hold_q while held */
    ucs_list_link_t         loop_elem;     /* In ep->loop_list while a
                                              posted CAS loop */
} uct_atomicx_op_t;


typedef struct uct_atomicx_iface {
    uct_base_iface_t        super;
    struct ibv_cq           *cq;
    uint8_t                 port_num;
    struct ibv_port_attr    port_attr;
    uct_atomicx_dev_addr_t  dev_addr;
    uint8_t                 gid_index;
    uct_atomicx_reply_order_t reply_order;
    uct_atomicx_op_t        *ops;          /* max_ops descriptors */
    uint64_t                *results;      /* max_ops result slots + scratch */
    struct ibv_mr           *results_mr;
    uint32_t                free_head;     /* Free list of ops, by index */
    unsigned                num_free;
    ucs_list_link_t         ep_list;       /* All endpoints */
    unsigned                num_pending;   /* Requests in pending queues */
    unsigned                num_held;      /* Ops in hold queues */
    struct {
        unsigned            tx_queue_len;
        unsigned            max_ops;
        uint8_t             timeout;       /* IB exponent */
        uint8_t             retry_count;
        uint8_t             sl;
        uint8_t             max_rd_atomic;
        enum ibv_mtu        path_mtu;
        double              latency;       /* Estimates for iface_query */
        double              bandwidth;
    } config;
} uct_atomicx_iface_t;


/* Pending request bookkeeping, kept in uct_pending_req_t::priv */
typedef struct uct_atomicx_pending_priv {
    ucs_queue_elem_t        queue;
} uct_atomicx_pending_priv_t;


/* A flush waiting for the ops in flight on an endpoint */
typedef struct uct_atomicx_flush_req {
    ucs_queue_elem_t        queue;
    uct_completion_t        *comp;
} uct_atomicx_flush_req_t;


typedef struct uct_atomicx_ep {
    uct_base_ep_t           super;
    struct ibv_qp           *qp;
    ucs_list_link_t         list;          /* In iface->ep_list */
    unsigned                sq_avail;      /* Free send WRs */
    unsigned                outstanding;   /* Ops accepted, not completed */
    unsigned                emulated;      /* ... of which CAS loops */
    unsigned                held;          /* ... of which not posted yet */
    unsigned                loops_posted;  /* CAS loops posted (on the wire) */
    int                     fence_next;    /* The next op is fenced */
    ucs_queue_head_t        hold_q;        /* Accepted ops waiting, FIFO */
    ucs_list_link_t         loop_list;     /* Posted CAS loops */
    int                     connected;
    uct_atomicx_dev_addr_t  remote_dev;    /* Peer, once connected */
    uint32_t                remote_qp_num;
    int                     dispatching;   /* In pending dispatch */
    ucs_status_t            status;        /* Error once the QP failed */
    int                     err_reported;
    ucs_queue_head_t        pending_q;
    ucs_queue_head_t        flush_q;
    uint64_t                cache_addr;    /* Last word seen, to guess the */
    uint64_t                cache_value;   /* first CAS compare value */
} uct_atomicx_ep_t;


extern uct_component_t uct_atomicx_component;
extern uct_tl_t        uct_atomicx_tl;
extern ucs_config_field_t uct_atomicx_md_config_table[];


/* Memory domain and component (atomicx_md.c) */
void uct_atomicx_md_close(uct_md_h tl_md);
ucs_status_t uct_atomicx_md_query(uct_md_h tl_md, uct_atomicx_md_attr_t *attr);
ucs_status_t uct_atomicx_mem_reg(uct_md_h tl_md, void *address, size_t length,
                                 UCT_ATOMICX_MEM_REG_ARGS, uct_mem_h *memh_p);
ucs_status_t uct_atomicx_mem_dereg(uct_md_h tl_md,
                                   const uct_md_mem_dereg_params_t *params);
ucs_status_t uct_atomicx_mkey_pack(uct_md_h tl_md, uct_mem_h memh,
                                   UCT_ATOMICX_MKEY_PACK_ARGS
                                   const uct_md_mkey_pack_params_t *params,
                                   void *rkey_buffer);
#if ATOMICX_UCT_COMPONENT_RKEY_COMPARE
ucs_status_t uct_atomicx_rkey_compare(uct_component_t *component,
                                      uct_rkey_t rkey1, uct_rkey_t rkey2,
                                      const uct_rkey_compare_params_t *params,
                                      int *result);
#endif

/* The device address reaches this interface's port (atomicx_iface.c) */
int uct_atomicx_iface_is_reachable(const uct_iface_h tl_iface,
                                   const uct_device_addr_t *dev_addr,
                                   const uct_iface_addr_t *iface_addr);

/* ABI guard: UCS_OK when libuct's class sizes are the compiled ones */
ucs_status_t uct_atomicx_abi_check(size_t iface_class_size,
                                   size_t ep_class_size);

/* Active ports of the MD's device, named like "rxe0:1" */
ucs_status_t
uct_atomicx_query_tl_devices(uct_md_h tl_md,
                             uct_tl_device_resource_t **tl_devices_p,
                             unsigned *num_tl_devices_p);

/* Verbs helpers (atomicx_qp.c) */
ucs_status_t uct_atomicx_qp_create(uct_atomicx_iface_t *iface,
                                   struct ibv_qp **qp_p);
ucs_status_t uct_atomicx_qp_connect(uct_atomicx_iface_t *iface,
                                    struct ibv_qp *qp,
                                    const uct_atomicx_dev_addr_t *dev_addr,
                                    uint32_t dest_qp_num);
/* One signaled atomic WR of @a opcode (IBV_WR_ATOMIC_FETCH_AND_ADD or
 * IBV_WR_ATOMIC_CMP_AND_SWP) on the word at @a word_addr, its reply into
 * result slot @a slot, which is also its wr_id */
ucs_status_t uct_atomicx_post_wr(uct_atomicx_iface_t *iface,
                                 struct ibv_qp *qp, enum ibv_wr_opcode opcode,
                                 uint32_t slot, uint64_t word_addr,
                                 uint32_t rkey, uint64_t compare_add,
                                 uint64_t swap);
ucs_status_t uct_atomicx_wc_status(enum ibv_wc_status wc_status);

/* Byte-order self-test (atomicx_selftest.c) */
ucs_status_t uct_atomicx_selftest(uct_atomicx_iface_t *iface, double timeout);

/* Progress, completions, interface flush and fence (atomicx_iface.c) */
unsigned uct_atomicx_iface_progress(uct_iface_h tl_iface);
ucs_status_t uct_atomicx_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                     uct_completion_t *comp);
ucs_status_t uct_atomicx_iface_fence(uct_iface_h tl_iface, unsigned flags);

/* Endpoints and the life of an op (atomicx_ep.c) */
ucs_status_t uct_atomicx_op_post(uct_atomicx_iface_t *iface,
                                 uct_atomicx_op_t *op);
void uct_atomicx_op_complete(uct_atomicx_iface_t *iface, uct_atomicx_op_t *op,
                             ucs_status_t status, uint64_t word);
void uct_atomicx_ep_release_held(uct_atomicx_ep_t *ep);
void uct_atomicx_ep_dispatch_pending(uct_atomicx_ep_t *ep);

ucs_status_t uct_atomicx_ep_atomic_cswap64(uct_ep_h tl_ep, uint64_t compare,
                                           uint64_t swap, uint64_t remote_addr,
                                           uct_rkey_t rkey, uint64_t *result,
                                           uct_completion_t *comp);
ucs_status_t uct_atomicx_ep_atomic_cswap32(uct_ep_h tl_ep, uint32_t compare,
                                           uint32_t swap, uint64_t remote_addr,
                                           uct_rkey_t rkey, uint32_t *result,
                                           uct_completion_t *comp);
ucs_status_t uct_atomicx_ep_atomic64_post(uct_ep_h tl_ep, unsigned opcode,
                                          uint64_t value, uint64_t remote_addr,
                                          uct_rkey_t rkey);
ucs_status_t uct_atomicx_ep_atomic32_post(uct_ep_h tl_ep, unsigned opcode,
                                          uint32_t value, uint64_t remote_addr,
                                          uct_rkey_t rkey);
ucs_status_t uct_atomicx_ep_atomic64_fetch(uct_ep_h tl_ep, unsigned opcode,
                                           uint64_t value, uint64_t *result,
                                           uint64_t remote_addr,
                                           uct_rkey_t rkey,
                                           uct_completion_t *comp);
ucs_status_t uct_atomicx_ep_atomic32_fetch(uct_ep_h tl_ep, unsigned opcode,
                                           uint32_t value, uint32_t *result,
                                           uint64_t remote_addr,
                                           uct_rkey_t rkey,
                                           uct_completion_t *comp);
ucs_status_t uct_atomicx_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                        unsigned flags);
void uct_atomicx_ep_pending_purge(uct_ep_h tl_ep,
                                  uct_pending_purge_callback_t cb, void *arg);
ucs_status_t uct_atomicx_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                  uct_completion_t *comp);
ucs_status_t uct_atomicx_ep_fence(uct_ep_h tl_ep, unsigned flags);
ucs_status_t uct_atomicx_ep_get_address(uct_ep_h tl_ep, uct_ep_addr_t *addr);
ucs_status_t uct_atomicx_ep_connect_to_ep(uct_ep_h tl_ep,
                                          const uct_device_addr_t *dev_addr,
                                          const uct_ep_addr_t *ep_addr);



static UCS_F_ALWAYS_INLINE uct_atomicx_iface_t *
uct_atomicx_ep_iface(uct_atomicx_ep_t *ep)
{
    return ucs_derived_of(ep->super.super.iface, uct_atomicx_iface_t);
}


/* Put an op's descriptor (and its result slot) back on the free list */
static UCS_F_ALWAYS_INLINE void
uct_atomicx_op_release(uct_atomicx_iface_t *iface, uct_atomicx_op_t *op)
{
    op->in_use       = 0;
    op->ep           = NULL;
    op->next_free    = iface->free_head;
    iface->free_head = op - iface->ops;
    ++iface->num_free;
}


/* The endpoint's first error stays; cancelling is not an error of its own */
static UCS_F_ALWAYS_INLINE void
uct_atomicx_ep_set_error(uct_atomicx_ep_t *ep, ucs_status_t status)
{
    if ((ep->status == UCS_OK) && (status != UCS_ERR_CANCELED)) {
        ep->status = status;
    }
}


UCS_CLASS_DECLARE(uct_atomicx_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_NEW_FUNC(uct_atomicx_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_atomicx_ep_t, uct_ep_t);

#endif
