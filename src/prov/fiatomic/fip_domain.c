/**
 * The domain object: one UCP context, one UCP worker and one libfiatomic
 * context, in the threading mode the info asks for (a multi-threaded
 * worker under automatic progress, whose thread it starts, fip_progress.c),
 * the key service's handlers (fip_key.c) and the connections to peers
 * (fip_peer.c), closed with it. It answers
 * fi_query_atomic from libfiatomic's own query on that context, so the
 * answer follows the transports UCX_TLS selects. It counts the objects
 * opened on it: closing it under them fails with -FI_EBUSY.
 */
#include "fip.h"

#include <stdlib.h>
#include <string.h>

static int fip_ucs_errno(ucs_status_t status)
{
    int ret = fiatomic_status_to_fi_errno(status);

    /* an unknown UCX failure still fails the call */
    return (ret != 0) ? ret : -FI_EOTHER;
}

static void fip_domain_release(fip_domain_t *domain)
{
    fip_progress_stop(domain);
    fip_peer_accept_drain(domain);
    /* no new connections while the others close */
    fip_listen_stop(domain);
    fip_publish_stop(domain);
    fip_admit_close_all(domain);
    fip_peer_close_all(domain);
    if (domain->ucp_worker != NULL) {
        fip_msg_cleanup(domain);
    }
    if (domain->fia != NULL) {
        fiatomic_destroy(domain->fia);
    }
    if (domain->ucp_worker != NULL) {
        ucp_worker_destroy(domain->ucp_worker);
    }
    fip_rma_wire_cleanup(domain);
    if (domain->ucp_context != NULL) {
        ucp_cleanup(domain->ucp_context);
    }
    free(domain->accepted);
    free(domain->accepted_gone);
    free(domain->callers);
    fip_reply_cleanup(domain);
    free(domain->verifies);
    free(domain->verify_gone);
    fip_admit_cleanup(domain);
    pthread_mutex_destroy(&domain->key_lock);
    pthread_mutex_destroy(&domain->msg_lock);
    pthread_mutex_destroy(&domain->stream_lock);
    pthread_mutex_destroy(&domain->ucp_lock);
    pthread_mutex_destroy(&domain->conn_lock);
    pthread_mutex_destroy(&domain->peer_lock);
    pthread_mutex_destroy(&domain->mr_lock);
    pthread_mutex_destroy(&domain->lock);
    free(domain);
}

void fip_domain_child_add(fip_domain_t *domain)
{
    pthread_mutex_lock(&domain->lock);
    ++domain->children;
    pthread_mutex_unlock(&domain->lock);
}

void fip_domain_child_remove(fip_domain_t *domain)
{
    pthread_mutex_lock(&domain->lock);
    --domain->children;
    pthread_mutex_unlock(&domain->lock);
}

/* Called where the program reads or waits for completions (fi_cq_read,
 * fi_cntr_read, the waits), under both progress models. Under AUTO the
 * thread alone would do: but a program that spins on a counter takes the
 * core the thread needs (two processes with a spinning thread and a
 * progress thread each on two cores: 800 us per blocking fetch-add, the
 * thread running once per time slice), so the spinning call progresses
 * itself. The worker is thread-safe under AUTO (fip_domain_ucp_open). */
void fip_domain_progress(fip_domain_t *domain)
{
    fip_domain_worker_progress(domain);
    fip_domain_check_overdue(domain);
}

/* Progressing the worker alone never ends an operation whose target-side
 * reply does not come: libfiatomic probes the target, and applies the
 * operation timeout, only when it is called (fiatomic(3)). With UCX 1.22
 * a fetch-add over posix takes the target side (UCP's software atomics
 * fail on an endpoint with the peer error mode); one posted to a peer
 * that had exited was copied into the dead peer's queue, complete for UCP;
 * UCP's keepalive then failed the endpoint (fip_peer_err ran) but held
 * nothing of the operation to fail, and its reply never came, not even
 * after the operation timeout (manual progress; UCX 1.13.1 took UCP's
 * software atomic, which UCP itself failed). */
void fip_domain_check_overdue(fip_domain_t *domain)
{
    int64_t now  = fip_now_ns();
    int64_t next = __atomic_load_n(&domain->overdue_next_ns,
                                   __ATOMIC_RELAXED);

    if ((now < next) ||
        !__atomic_compare_exchange_n(&domain->overdue_next_ns, &next,
                                     now + FIP_OVERDUE_CHECK_MS * 1000000ll,
                                     0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        return; /* not yet, or another thread does it */
    }
    fiatomic_check_overdue(domain->fia);
    fip_rma_wire_check_overdue(domain);
    fip_caller_check_overdue(domain);
    fip_admit_sweep(domain);
}

unsigned fip_domain_worker_progress(fip_domain_t *domain)
{
    unsigned count;

    pthread_mutex_lock(&domain->ucp_lock);
    count = ucp_worker_progress(domain->ucp_worker);
    pthread_mutex_unlock(&domain->ucp_lock);
    return count;
}

static int fip_domain_close(struct fid *fid)
{
    fip_domain_t *domain = fip_container_of(fid, fip_domain_t,
                                            domain_fid.fid);
    fip_fabric_t *fabric = domain->fabric;
    int children;

    pthread_mutex_lock(&domain->lock);
    children = domain->children;
    pthread_mutex_unlock(&domain->lock);
    if (children != 0) {
        return -FI_EBUSY;
    }

    fip_domain_release(domain);
    pthread_mutex_lock(&fabric->lock);
    --fabric->domains;
    pthread_mutex_unlock(&fabric->lock);
    return 0;
}

static int fip_domain_query_atomic(struct fid_domain *domain_fid,
                                   enum fi_datatype datatype, enum fi_op op,
                                   struct fi_atomic_attr *attr,
                                   uint64_t flags)
{
    fip_domain_t *domain = fip_container_of(domain_fid, fip_domain_t,
                                            domain_fid);

    if (attr == NULL) {
        return -FI_EINVAL;
    }
    return fiatomic_query_atomic(domain->fia, datatype, op, attr, flags);
}

static int fip_domain_nosys_ep(struct fid_domain *domain,
                               struct fi_info *info, struct fid_ep **ep,
                               void *context)
{
    return -FI_ENOSYS;
}

static int fip_domain_nosys_poll(struct fid_domain *domain,
                                 struct fi_poll_attr *attr,
                                 struct fid_poll **pollset)
{
    return -FI_ENOSYS;
}

static int fip_domain_nosys_stx(struct fid_domain *domain,
                                struct fi_tx_attr *attr, struct fid_stx **stx,
                                void *context)
{
    return -FI_ENOSYS;
}

static int fip_domain_nosys_srx(struct fid_domain *domain,
                                struct fi_rx_attr *attr, struct fid_ep **rx,
                                void *context)
{
    return -FI_ENOSYS;
}

static int fip_domain_nosys_coll(struct fid_domain *domain,
                                 enum fi_collective_op coll,
                                 struct fi_collective_attr *attr,
                                 uint64_t flags)
{
    return -FI_ENOSYS;
}

static int fip_domain_nosys_ep2(struct fid_domain *domain,
                                struct fi_info *info, struct fid_ep **ep,
                                uint64_t flags, void *context)
{
    return -FI_ENOSYS;
}

static struct fi_ops fip_domain_fi_ops = {
    .size     = sizeof(struct fi_ops),
    .close    = fip_domain_close,
    .bind     = fip_nosys_bind,
    .control  = fip_nosys_control,
    .ops_open = fip_nosys_ops_open,
    .tostr    = fip_nosys_tostr,
    .ops_set  = fip_nosys_ops_set
};

static struct fi_ops_domain fip_domain_ops = {
    .size             = sizeof(struct fi_ops_domain),
    .av_open          = fip_av_open,
    .cq_open          = fip_cq_open,
    .endpoint         = fip_ep_open,
    .scalable_ep      = fip_domain_nosys_ep,
    .cntr_open        = fip_cntr_open,
    .poll_open        = fip_domain_nosys_poll,
    .stx_ctx          = fip_domain_nosys_stx,
    .srx_ctx          = fip_domain_nosys_srx,
    .query_atomic     = fip_domain_query_atomic,
    .query_collective = fip_domain_nosys_coll,
    .endpoint2        = fip_domain_nosys_ep2
};

/* the mode of an offer the info matched (fip_getinfo_check_open): provider
 * keys when it has all their bits or says FI_MR_BASIC (before API 1.5) */
static uint64_t fip_domain_mr_mode(int mr_mode)
{
    if ((mr_mode == FI_MR_BASIC) ||
        (((uint64_t)mr_mode & FIP_MR_MODE_PROV) == FIP_MR_MODE_PROV)) {
        return FIP_MR_MODE_PROV;
    }
    return FIP_MR_MODE_PROGRAM;
}

int fip_domain_am_handler_set(fip_domain_t *domain, unsigned id,
                              ucp_am_recv_callback_t cb)
{
    ucp_am_handler_param_t param = {0};

    param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                       UCP_AM_HANDLER_PARAM_FIELD_CB |
                       UCP_AM_HANDLER_PARAM_FIELD_ARG;
    param.id         = id;
    param.cb         = cb;
    param.arg        = domain;
    return (ucp_worker_set_am_recv_handler(domain->ucp_worker, &param) ==
            UCS_OK) ? 0 : -FI_EOTHER;
}

/* FI_FIATOMIC_UCP_ONESIDED (default no) */
static int fip_domain_onesided_wanted(void)
{
    int value = 0;

    if (fi_param_get_bool(&fip_provider, FIP_UCP_ONESIDED_PARAM,
                          &value) != 0) {
        return 0;
    }
    return value != 0;
}

static int fip_domain_ucp_open(fip_domain_t *domain)
{
    ucp_params_t ucp_params           = {0};
    ucp_worker_params_t worker_params = {0};
    fiatomic_params_t fia_params      = {0};
    ucp_config_t *config;
    fip_ucx_env_t env;
    ucs_status_t status;
    int ret;

    /* Active messages only: with RMA or atomics UCP registers its software
     * RMA and atomic handlers on every active-message lane, and they write,
     * read and update whatever address a peer's message names. libfiatomic
     * then executes every cell target-side (or direct in shared memory),
     * and RMA goes over the provider's validated messages (fip_rma_wire.c).
     * A site whose peers are all trusted may let them in (NIC atomics). */
    ucp_params.field_mask = UCP_PARAM_FIELD_FEATURES |
                            UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    ucp_params.features   = UCP_FEATURE_AM;
    if (fip_domain_onesided_wanted()) {
        ucp_params.features |= UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64 |
                               UCP_FEATURE_RMA;
    } else {
        fia_params.field_mask = FIATOMIC_PARAM_FIELD_FLAGS;
        fia_params.flags      = FIATOMIC_PARAM_FLAG_NO_ONESIDED;
    }
    ucp_params.mt_workers_shared = (domain->threading == FI_THREAD_SAFE);
    fip_ucx_env_begin(&env);
    ret = fip_ucx_config_read(domain->local, &config);
    if (ret != 0) {
        fip_ucx_env_end(&env);
        return ret;
    }
    status = ucp_init(&ucp_params, config, &domain->ucp_context);
    ucp_config_release(config);
    if (status != UCS_OK) {
        fip_ucx_env_end(&env);
        return fip_ucs_errno(status);
    }

    worker_params.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    /* the progress thread shares the worker with the program's threads */
    worker_params.thread_mode = ((domain->threading == FI_THREAD_SAFE) ||
                                 (domain->data_progress ==
                                  FI_PROGRESS_AUTO)) ?
                                UCS_THREAD_MODE_MULTI :
                                UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(domain->ucp_context, &worker_params,
                               &domain->ucp_worker);
    fip_ucx_env_end(&env);
    if (status != UCS_OK) {
        return fip_ucs_errno(status);
    }
    /* before anyone's handlers: filling sets every id's */
    ret = fip_am_table_fill(domain->ucp_worker);
    if (ret != 0) {
        return ret;
    }

    status = fiatomic_create(domain->ucp_context, domain->ucp_worker,
                             &fia_params, &domain->fia);
    if (status != UCS_OK) {
        return fip_ucs_errno(status);
    }
    ret = fip_key_service_init(domain);
    if (ret != 0) {
        return ret;
    }
    ret = fip_bye_init(domain);
    if (ret != 0) {
        return ret;
    }
    ret = fip_admit_handler_init(domain);
    if (ret != 0) {
        return ret;
    }
    ret = fip_caller_init(domain);
    if (ret != 0) {
        return ret;
    }
    ret = fip_msg_init(domain);
    if (ret != 0) {
        return ret;
    }
    ret = fip_rma_wire_init(domain);
    if (ret != 0) {
        return ret;
    }
    if (domain->data_progress == FI_PROGRESS_AUTO) {
        return fip_progress_start(domain);
    }
    return 0;
}

int fip_domain_open(struct fid_fabric *fabric_fid, struct fi_info *info,
                    struct fid_domain **domain_p, void *context)
{
    fip_fabric_t *fabric;
    fip_domain_t *domain;
    int ret;

    if ((fabric_fid == NULL) || (info == NULL) || (domain_p == NULL)) {
        return -FI_EINVAL;
    }
    /* the info must be one of the provider's offers (or accepted by it) */
    ret = fip_getinfo_check_open(fabric_fid->api_version, info);
    if (ret != 0) {
        return ret;
    }
    fabric = fip_container_of(fabric_fid, fip_fabric_t, fabric_fid);

    domain = calloc(1, sizeof(*domain));
    if (domain == NULL) {
        return -FI_ENOMEM;
    }
    pthread_mutex_init(&domain->lock, NULL);
    pthread_mutex_init(&domain->mr_lock, NULL);
    pthread_mutex_init(&domain->peer_lock, NULL);
    pthread_mutex_init(&domain->conn_lock, NULL);
    pthread_mutex_init(&domain->key_lock, NULL);
    pthread_mutex_init(&domain->msg_lock, NULL);
    pthread_mutex_init(&domain->stream_lock, NULL);
    pthread_mutex_init(&domain->ucp_lock, NULL);
    domain->accepted = calloc(FIP_ACCEPT_MAX, sizeof(*domain->accepted));
    domain->accepted_gone = calloc(FIP_ACCEPT_MAX,
                                   sizeof(*domain->accepted_gone));
    domain->callers  = calloc(FIP_ACCEPT_MAX, sizeof(*domain->callers));
    domain->verifies    = calloc(FIP_VERIFY_MAX, sizeof(*domain->verifies));
    domain->verify_gone = calloc(FIP_VERIFY_MAX,
                                 sizeof(*domain->verify_gone));
    if ((domain->accepted == NULL) || (domain->accepted_gone == NULL) ||
        (domain->callers == NULL) || (domain->verifies == NULL) ||
        (domain->verify_gone == NULL)) {
        fip_domain_release(domain);
        return -FI_ENOMEM;
    }
    domain->fabric        = fabric;
    domain->threading     = FI_THREAD_SAFE;
    domain->data_progress = FI_PROGRESS_AUTO;
    domain->mr_mode       = FIP_MR_MODE_PROGRAM;
    domain->mr_share      = fip_share_wanted();
    if (info->domain_attr != NULL) {
        if (info->domain_attr->threading != FI_THREAD_UNSPEC) {
            domain->threading = info->domain_attr->threading;
        }
        if (info->domain_attr->data_progress != FI_PROGRESS_UNSPEC) {
            domain->data_progress = info->domain_attr->data_progress;
        }
        domain->mr_mode = fip_domain_mr_mode(info->domain_attr->mr_mode);
    }

    /* transports that reach no other host bring no connection manager:
     * addresses name the published worker address then (fip_publish.c) */
    domain->local = fip_ucx_tls_local_only();
    ret           = fip_ep_nonce(&domain->nonce);
    if (ret != 0) {
        fip_domain_release(domain);
        return ret;
    }

    ret = fip_admit_init(domain, info);
    if (ret != 0) {
        fip_domain_release(domain);
        return ret;
    }

    ret = fip_domain_ucp_open(domain);
    if (ret != 0) {
        fip_domain_release(domain);
        return ret;
    }

    domain->domain_fid.fid.fclass  = FI_CLASS_DOMAIN;
    domain->domain_fid.fid.context = context;
    domain->domain_fid.fid.ops     = &fip_domain_fi_ops;
    domain->domain_fid.ops         = &fip_domain_ops;
    domain->domain_fid.mr          = &fip_mr_ops;

    pthread_mutex_lock(&fabric->lock);
    ++fabric->domains;
    pthread_mutex_unlock(&fabric->lock);
    *domain_p = &domain->domain_fid;
    return 0;
}
