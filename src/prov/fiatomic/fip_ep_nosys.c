/**
 * The transfer calls of an endpoint (messages, RMA, tagged messages,
 * atomics, collectives) where it does not implement them: collectives
 * always, messages on an endpoint opened without FI_MSG, tagged messages
 * on one opened without FI_TAGGED.
 * Each answers -FI_ENOSYS instead of leaving the core's inline call a NULL
 * slot to jump through. Generated from libfabric 1.17's operation tables,
 * one stub per slot.
 */
#include "fip.h"

#include <rdma/fi_collective.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

static ssize_t fip_nosys_msg_recv(struct fid_ep *ep, void *buf, size_t len,
        void *desc, fi_addr_t src_addr, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_msg_recvv(struct fid_ep *ep, const struct iovec *iov,
        void **desc, size_t count, fi_addr_t src_addr, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_msg_recvmsg(struct fid_ep *ep,
        const struct fi_msg *msg, uint64_t flags)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_msg_send(struct fid_ep *ep, const void *buf,
        size_t len, void *desc, fi_addr_t dest_addr, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_msg_sendv(struct fid_ep *ep, const struct iovec *iov,
        void **desc, size_t count, fi_addr_t dest_addr, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_msg_sendmsg(struct fid_ep *ep,
        const struct fi_msg *msg, uint64_t flags)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_msg_inject(struct fid_ep *ep, const void *buf,
        size_t len, fi_addr_t dest_addr)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_msg_senddata(struct fid_ep *ep, const void *buf,
        size_t len, void *desc, uint64_t data, fi_addr_t dest_addr,
        void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_msg_injectdata(struct fid_ep *ep, const void *buf,
        size_t len, uint64_t data, fi_addr_t dest_addr)
{
    return -FI_ENOSYS;
}

struct fi_ops_msg fip_nosys_msg_ops = {
    .size = sizeof(struct fi_ops_msg),
    .recv = fip_nosys_msg_recv,
    .recvv = fip_nosys_msg_recvv,
    .recvmsg = fip_nosys_msg_recvmsg,
    .send = fip_nosys_msg_send,
    .sendv = fip_nosys_msg_sendv,
    .sendmsg = fip_nosys_msg_sendmsg,
    .inject = fip_nosys_msg_inject,
    .senddata = fip_nosys_msg_senddata,
    .injectdata = fip_nosys_msg_injectdata,
};

static ssize_t fip_nosys_rma_read(struct fid_ep *ep, void *buf, size_t len,
        void *desc, fi_addr_t src_addr, uint64_t addr, uint64_t key,
        void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_rma_readv(struct fid_ep *ep, const struct iovec *iov,
        void **desc, size_t count, fi_addr_t src_addr, uint64_t addr,
        uint64_t key, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_rma_readmsg(struct fid_ep *ep,
        const struct fi_msg_rma *msg, uint64_t flags)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_rma_write(struct fid_ep *ep, const void *buf,
        size_t len, void *desc, fi_addr_t dest_addr, uint64_t addr,
        uint64_t key, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_rma_writev(struct fid_ep *ep,
        const struct iovec *iov, void **desc, size_t count,
        fi_addr_t dest_addr, uint64_t addr, uint64_t key, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_rma_writemsg(struct fid_ep *ep,
        const struct fi_msg_rma *msg, uint64_t flags)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_rma_inject(struct fid_ep *ep, const void *buf,
        size_t len, fi_addr_t dest_addr, uint64_t addr, uint64_t key)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_rma_writedata(struct fid_ep *ep, const void *buf,
        size_t len, void *desc, uint64_t data, fi_addr_t dest_addr,
        uint64_t addr, uint64_t key, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_rma_injectdata(struct fid_ep *ep, const void *buf,
        size_t len, uint64_t data, fi_addr_t dest_addr, uint64_t addr,
        uint64_t key)
{
    return -FI_ENOSYS;
}

struct fi_ops_rma fip_nosys_rma_ops = {
    .size = sizeof(struct fi_ops_rma),
    .read = fip_nosys_rma_read,
    .readv = fip_nosys_rma_readv,
    .readmsg = fip_nosys_rma_readmsg,
    .write = fip_nosys_rma_write,
    .writev = fip_nosys_rma_writev,
    .writemsg = fip_nosys_rma_writemsg,
    .inject = fip_nosys_rma_inject,
    .writedata = fip_nosys_rma_writedata,
    .injectdata = fip_nosys_rma_injectdata,
};

static ssize_t fip_nosys_tagged_recv(struct fid_ep *ep, void *buf, size_t len,
        void *desc, fi_addr_t src_addr, uint64_t tag, uint64_t ignore,
        void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_tagged_recvv(struct fid_ep *ep,
        const struct iovec *iov, void **desc, size_t count,
        fi_addr_t src_addr, uint64_t tag, uint64_t ignore, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_tagged_recvmsg(struct fid_ep *ep,
        const struct fi_msg_tagged *msg, uint64_t flags)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_tagged_send(struct fid_ep *ep, const void *buf,
        size_t len, void *desc, fi_addr_t dest_addr, uint64_t tag,
        void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_tagged_sendv(struct fid_ep *ep,
        const struct iovec *iov, void **desc, size_t count,
        fi_addr_t dest_addr, uint64_t tag, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_tagged_sendmsg(struct fid_ep *ep,
        const struct fi_msg_tagged *msg, uint64_t flags)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_tagged_inject(struct fid_ep *ep, const void *buf,
        size_t len, fi_addr_t dest_addr, uint64_t tag)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_tagged_senddata(struct fid_ep *ep, const void *buf,
        size_t len, void *desc, uint64_t data, fi_addr_t dest_addr,
        uint64_t tag, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_tagged_injectdata(struct fid_ep *ep, const void *buf,
        size_t len, uint64_t data, fi_addr_t dest_addr, uint64_t tag)
{
    return -FI_ENOSYS;
}

struct fi_ops_tagged fip_nosys_tagged_ops = {
    .size = sizeof(struct fi_ops_tagged),
    .recv = fip_nosys_tagged_recv,
    .recvv = fip_nosys_tagged_recvv,
    .recvmsg = fip_nosys_tagged_recvmsg,
    .send = fip_nosys_tagged_send,
    .sendv = fip_nosys_tagged_sendv,
    .sendmsg = fip_nosys_tagged_sendmsg,
    .inject = fip_nosys_tagged_inject,
    .senddata = fip_nosys_tagged_senddata,
    .injectdata = fip_nosys_tagged_injectdata,
};

static ssize_t fip_nosys_atomic_write(struct fid_ep *ep, const void *buf,
        size_t count, void *desc, fi_addr_t dest_addr, uint64_t addr,
        uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_atomic_writev(struct fid_ep *ep,
        const struct fi_ioc *iov, void **desc, size_t count,
        fi_addr_t dest_addr, uint64_t addr, uint64_t key,
        enum fi_datatype datatype, enum fi_op op, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_atomic_writemsg(struct fid_ep *ep,
        const struct fi_msg_atomic *msg, uint64_t flags)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_atomic_inject(struct fid_ep *ep, const void *buf,
        size_t count, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
        enum fi_datatype datatype, enum fi_op op)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_atomic_readwrite(struct fid_ep *ep, const void *buf,
        size_t count, void *desc, void *result, void *result_desc,
        fi_addr_t dest_addr, uint64_t addr, uint64_t key,
        enum fi_datatype datatype, enum fi_op op, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_atomic_readwritev(struct fid_ep *ep,
        const struct fi_ioc *iov, void **desc, size_t count,
        struct fi_ioc *resultv, void **result_desc, size_t result_count,
        fi_addr_t dest_addr, uint64_t addr, uint64_t key,
        enum fi_datatype datatype, enum fi_op op, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_atomic_readwritemsg(struct fid_ep *ep,
        const struct fi_msg_atomic *msg, struct fi_ioc *resultv,
        void **result_desc, size_t result_count, uint64_t flags)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_atomic_compwrite(struct fid_ep *ep, const void *buf,
        size_t count, void *desc, const void *compare, void *compare_desc,
        void *result, void *result_desc, fi_addr_t dest_addr, uint64_t addr,
        uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_atomic_compwritev(struct fid_ep *ep,
        const struct fi_ioc *iov, void **desc, size_t count,
        const struct fi_ioc *comparev, void **compare_desc,
        size_t compare_count, struct fi_ioc *resultv, void **result_desc,
        size_t result_count, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
        enum fi_datatype datatype, enum fi_op op, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_atomic_compwritemsg(struct fid_ep *ep,
        const struct fi_msg_atomic *msg, const struct fi_ioc *comparev,
        void **compare_desc, size_t compare_count, struct fi_ioc *resultv,
        void **result_desc, size_t result_count, uint64_t flags)
{
    return -FI_ENOSYS;
}

static int fip_nosys_atomic_writevalid(struct fid_ep *ep,
        enum fi_datatype datatype, enum fi_op op, size_t *count)
{
    return -FI_ENOSYS;
}

static int fip_nosys_atomic_readwritevalid(struct fid_ep *ep,
        enum fi_datatype datatype, enum fi_op op, size_t *count)
{
    return -FI_ENOSYS;
}

static int fip_nosys_atomic_compwritevalid(struct fid_ep *ep,
        enum fi_datatype datatype, enum fi_op op, size_t *count)
{
    return -FI_ENOSYS;
}

struct fi_ops_atomic fip_nosys_atomic_ops = {
    .size = sizeof(struct fi_ops_atomic),
    .write = fip_nosys_atomic_write,
    .writev = fip_nosys_atomic_writev,
    .writemsg = fip_nosys_atomic_writemsg,
    .inject = fip_nosys_atomic_inject,
    .readwrite = fip_nosys_atomic_readwrite,
    .readwritev = fip_nosys_atomic_readwritev,
    .readwritemsg = fip_nosys_atomic_readwritemsg,
    .compwrite = fip_nosys_atomic_compwrite,
    .compwritev = fip_nosys_atomic_compwritev,
    .compwritemsg = fip_nosys_atomic_compwritemsg,
    .writevalid = fip_nosys_atomic_writevalid,
    .readwritevalid = fip_nosys_atomic_readwritevalid,
    .compwritevalid = fip_nosys_atomic_compwritevalid,
};

static ssize_t fip_nosys_collective_barrier(struct fid_ep *ep,
        fi_addr_t coll_addr, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_collective_broadcast(struct fid_ep *ep, void *buf,
        size_t count, void *desc, fi_addr_t coll_addr, fi_addr_t root_addr,
        enum fi_datatype datatype, uint64_t flags, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_collective_alltoall(struct fid_ep *ep,
        const void *buf, size_t count, void *desc, void *result,
        void *result_desc, fi_addr_t coll_addr, enum fi_datatype datatype,
        uint64_t flags, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_collective_allreduce(struct fid_ep *ep,
        const void *buf, size_t count, void *desc, void *result,
        void *result_desc, fi_addr_t coll_addr, enum fi_datatype datatype,
        enum fi_op op, uint64_t flags, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_collective_allgather(struct fid_ep *ep,
        const void *buf, size_t count, void *desc, void *result,
        void *result_desc, fi_addr_t coll_addr, enum fi_datatype datatype,
        uint64_t flags, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_collective_reduce_scatter(struct fid_ep *ep,
        const void *buf, size_t count, void *desc, void *result,
        void *result_desc, fi_addr_t coll_addr, enum fi_datatype datatype,
        enum fi_op op, uint64_t flags, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_collective_reduce(struct fid_ep *ep, const void *buf,
        size_t count, void *desc, void *result, void *result_desc,
        fi_addr_t coll_addr, fi_addr_t root_addr, enum fi_datatype datatype,
        enum fi_op op, uint64_t flags, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_collective_scatter(struct fid_ep *ep,
        const void *buf, size_t count, void *desc, void *result,
        void *result_desc, fi_addr_t coll_addr, fi_addr_t root_addr,
        enum fi_datatype datatype, uint64_t flags, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_collective_gather(struct fid_ep *ep, const void *buf,
        size_t count, void *desc, void *result, void *result_desc,
        fi_addr_t coll_addr, fi_addr_t root_addr, enum fi_datatype datatype,
        uint64_t flags, void *context)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_collective_msg(struct fid_ep *ep,
        const struct fi_msg_collective *msg, struct fi_ioc *resultv,
        void **result_desc, size_t result_count, uint64_t flags)
{
    return -FI_ENOSYS;
}

static ssize_t fip_nosys_collective_barrier2(struct fid_ep *ep,
        fi_addr_t coll_addr, uint64_t flags, void *context)
{
    return -FI_ENOSYS;
}

struct fi_ops_collective fip_nosys_collective_ops = {
    .size = sizeof(struct fi_ops_collective),
    .barrier = fip_nosys_collective_barrier,
    .broadcast = fip_nosys_collective_broadcast,
    .alltoall = fip_nosys_collective_alltoall,
    .allreduce = fip_nosys_collective_allreduce,
    .allgather = fip_nosys_collective_allgather,
    .reduce_scatter = fip_nosys_collective_reduce_scatter,
    .reduce = fip_nosys_collective_reduce,
    .scatter = fip_nosys_collective_scatter,
    .gather = fip_nosys_collective_gather,
    .msg = fip_nosys_collective_msg,
    .barrier2 = fip_nosys_collective_barrier2,
};
