/*
 * Test environment, connections: an initiator's UCP and fiatomic contexts
 * and endpoint to a target (in this process for self, else a peer), the
 * cached connection the parameterised suites share, and the helpers that
 * compare a target's memory before and after (fiatomic_test_env.h).
 */
#include "fiatomic_test_env.h"

#include <errno.h>
#include <unistd.h>

#include <map>
#include <sstream>

namespace fiatomic_test {

/* Same-process target (self): plain memory accesses. */
class local_target : public target {
public:
    local_target() : m_user{NULL, NULL} {}
    ~local_target()
    {
        for (void *p : m_user) {
            free(p);
        }
    }

    bool write(int region, uint64_t offset, const void *data, size_t length,
               std::string *error) override
    {
        if (!check(region, offset, length, error)) {
            return false;
        }
        memcpy(reinterpret_cast<void*>(m_info.base[region] + offset), data,
               length);
        return true;
    }

    bool read(int region, uint64_t offset, void *data, size_t length,
              std::string *error) override
    {
        if (!check(region, offset, length, error)) {
            return false;
        }
        memcpy(data, reinterpret_cast<void*>(m_info.base[region] + offset),
               length);
        return true;
    }

    bool pause(std::string *error) override { return true; }
    bool resume(std::string *error) override { return true; }
    bool remote() const override { return false; }

    target_info &info_w() { return m_info; }
    void        *m_user[FIATOMIC_TEST_REGIONS];

private:
    bool check(int region, uint64_t offset, size_t length, std::string *error)
    {
        if ((region < 0) || (region >= FIATOMIC_TEST_REGIONS) ||
            (offset > m_info.length[region]) ||
            (length > m_info.length[region] - offset)) {
            *error = "local target: out of range";
            return false;
        }
        return true;
    }
};

/* ------------------------------------------------------------------------ */
/* Connections */

static std::unique_ptr<connection> cached_connection;
/* a configuration that failed to connect fails its other tests at once */
static std::map<std::string, std::string> failed_configs;

void connection::ep_error_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    static_cast<connection*>(arg)->m_ep_status = status;
}

bool connection::connect_ep(ucp_ep_h *ucp_ep, std::string *error)
{
    ucp_ep_params_t ep_params;
    ucs_status_t status;

    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep_params.address    = reinterpret_cast<const ucp_address_t*>(
                                   m_tgt->info().worker_address.data());
    if (m_cfg.two_process()) {
        ep_params.field_mask     |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                                    UCP_EP_PARAM_FIELD_ERR_HANDLER;
        ep_params.err_mode        = UCP_ERR_HANDLING_MODE_PEER;
        ep_params.err_handler.cb  = ep_error_cb;
        ep_params.err_handler.arg = this;
    }
    status = ucp_ep_create(m_setup.worker, &ep_params, ucp_ep);
    if (status != UCS_OK) {
        *error = std::string("ucp_ep_create: ") + ucs_status_string(status);
        return false;
    }
    return true;
}

std::unique_ptr<connection> connection::create(const config &cfg,
                                               const kv_list &ucx,
                                               const fiatomic_params_t *params,
                                               std::string *skip,
                                               std::string *error,
                                               bool multi_thread)
{
    std::unique_ptr<connection> conn(new connection());
    const char *old = getenv("FIATOMIC_STRATEGY");
    ucs_status_t status;

    conn->m_cfg = cfg;
    *skip       = transport_missing(cfg.tl);
    if (!skip->empty()) {
        return NULL;
    }

    /* before the peer starts (it inherits the environment); kept for the
     * context's life like FIATOMIC_STRATEGY */
    conn->m_proto.reset(new proto_env(cfg));

    if (cfg.two_process()) {
        conn->m_remote = new remote_target();
        conn->m_tgt.reset(conn->m_remote);
        if (!conn->m_remote->start(cfg.tl, cfg.alloc, error, cfg.am,
                                   REGION0_LENGTH, REGION1_LENGTH,
                                   cfg.safe)) {
            *error = cfg.name() + ": " + *error;
            return NULL;
        }
    } else {
        conn->m_tgt.reset(new local_target());
    }

    conn->m_had_strategy = (old != NULL);
    if (old != NULL) {
        conn->m_saved_strategy = old;
    }
    /* FIATOMIC_STRATEGY stays set for the whole life of the context */
    setenv("FIATOMIC_STRATEGY", cfg.strategy.c_str(), 1);
    conn->m_strategy_set = true;

    kv_list ucx_cfg = {{"TLS", ucx_tls(cfg.tl)}};
    /* a transport setting ucp_config_modify() does not reach: posix/sysv
     * endpoints support UCP_ERR_HANDLING_MODE_PEER only with it (set for
     * this transport only, so that UCX does not warn about unused ones) */
    if ((cfg.tl == "posix") || (cfg.tl == "sysv")) {
        std::string var = "UCX_" + std::string(cfg.tl == "posix" ? "POSIX" :
                                               "SYSV") + "_ERROR_HANDLING";
        setenv(var.c_str(), "y", 1);
    }
    ucx_cfg.insert(ucx_cfg.end(), ucx.begin(), ucx.end());
    status = ucp_setup_create(ucx_cfg, params, cfg.am, &conn->m_setup,
                              error, multi_thread);
    if (status != UCS_OK) {
        *error = cfg.name() + ": " + *error;
        return NULL;
    }

    if (!cfg.two_process()) {
        local_target *lt = static_cast<local_target*>(conn->m_tgt.get());
        size_t lengths[FIATOMIC_TEST_REGIONS] = {REGION0_LENGTH,
                                                 REGION1_LENGTH};
        ucp_address_t *address;
        size_t address_length;

        for (int i = 0; i < FIATOMIC_TEST_REGIONS; ++i) {
            fiatomic_mem_params_t mp;
            void *addr, *key;
            size_t length, key_size;

            memset(&mp, 0, sizeof(mp));
            mp.field_mask = FIATOMIC_MEM_PARAM_FIELD_LENGTH;
            mp.length     = lengths[i];
            if (cfg.safe) {
                mp.field_mask |= FIATOMIC_MEM_PARAM_FIELD_FLAGS;
                mp.flags       = FIATOMIC_MEM_FLAG_TARGET_ONLY;
            }
            if (cfg.alloc) {
                mp.field_mask |= FIATOMIC_MEM_PARAM_FIELD_FLAGS;
                mp.flags       = FIATOMIC_MEM_FLAG_ALLOCATE;
            } else {
                if (posix_memalign(&lt->m_user[i], 4096, lengths[i]) != 0) {
                    *error = "posix_memalign failed";
                    return NULL;
                }
                memset(lt->m_user[i], 0, lengths[i]);
                mp.field_mask |= FIATOMIC_MEM_PARAM_FIELD_ADDRESS;
                mp.address     = lt->m_user[i];
            }
            status = fiatomic_mem_expose(conn->m_setup.fia, &mp,
                                         &conn->m_local_mem[i]);
            if (status != UCS_OK) {
                *error = std::string("fiatomic_mem_expose: ") +
                         ucs_status_string(status);
                return NULL;
            }
            status = fiatomic_mem_query(conn->m_local_mem[i], &addr, &length);
            if ((status != UCS_OK) || (length < lengths[i]) ||
                (!cfg.alloc && (addr != lt->m_user[i]))) {
                *error = "fiatomic_mem_query: wrong answer";
                return NULL;
            }
            status = fiatomic_mem_pack_key(conn->m_local_mem[i], &key,
                                           &key_size);
            if (status != UCS_OK) {
                *error = std::string("fiatomic_mem_pack_key: ") +
                         ucs_status_string(status);
                return NULL;
            }
            lt->info_w().key[i].assign(static_cast<uint8_t*>(key),
                                       static_cast<uint8_t*>(key) + key_size);
            fiatomic_key_release(key);
            lt->info_w().base[i]   = (uintptr_t)addr;
            lt->info_w().length[i] = lengths[i];
        }
        status = ucp_worker_get_address(conn->m_setup.worker, &address,
                                        &address_length);
        if (status != UCS_OK) {
            *error = std::string("ucp_worker_get_address: ") +
                     ucs_status_string(status);
            return NULL;
        }
        lt->info_w().pid = getpid();
        lt->info_w().worker_address.assign(
                reinterpret_cast<uint8_t*>(address),
                reinterpret_cast<uint8_t*>(address) + address_length);
        ucp_worker_release_address(conn->m_setup.worker, address);
    }

    if (!conn->connect_ep(&conn->m_ucp_ep, error)) {
        return NULL;
    }
    status = fiatomic_ep_create(conn->m_setup.fia, conn->m_ucp_ep, NULL,
                                &conn->m_ep);
    if (status != UCS_OK) {
        *error = std::string("fiatomic_ep_create: ") +
                 ucs_status_string(status);
        return NULL;
    }
    for (int i = 0; i < FIATOMIC_TEST_REGIONS; ++i) {
        const std::vector<uint8_t> &k = conn->m_tgt->info().key[i];
        status = fiatomic_rkey_unpack(conn->m_ep, k.data(), k.size(),
                                      &conn->m_key[i]);
        if (status != UCS_OK) {
            *error = std::string("fiatomic_rkey_unpack: ") +
                     ucs_status_string(status);
            return NULL;
        }
        conn->m_have_key[i] = true;
    }
    return conn;
}

connection::~connection()
{
    std::string error;

    if (m_ep != NULL) {
        if (!m_peer_gone && (m_ep_status == UCS_OK)) {
            flush(30.0);
        }
        for (int i = 0; i < FIATOMIC_TEST_REGIONS; ++i) {
            if (m_have_key[i]) {
                fiatomic_rkey_release(m_ep, m_key[i]);
            }
        }
        fiatomic_ep_destroy(m_ep);
    }
    if (m_ucp_ep != NULL) {
        ucp_ep_close_blocking(m_setup.worker, m_ucp_ep,
                              m_peer_gone || (m_ep_status != UCS_OK));
    }
    for (int i = 0; i < FIATOMIC_TEST_REGIONS; ++i) {
        if (m_local_mem[i] != NULL) {
            fiatomic_mem_unexpose(m_local_mem[i]);
        }
    }
    ucp_setup_destroy(&m_setup);
    if (m_strategy_set && m_had_strategy) {
        setenv("FIATOMIC_STRATEGY", m_saved_strategy.c_str(), 1);
    } else if (m_strategy_set) {
        unsetenv("FIATOMIC_STRATEGY");
    }
    if ((m_remote != NULL) && !m_peer_gone) {
        if (!m_remote->stop(&error)) {
            ADD_FAILURE() << m_cfg.name() << ": target peer: " << error;
        }
    }
}

connection *connection::get(const config &cfg, std::string *skip,
                            std::string *error)
{
    if (cached_connection && (cached_connection->cfg().name() ==
                              cfg.name()) &&
        (cached_connection->ep_status() == UCS_OK)) {
        return cached_connection.get();
    }
    auto it = failed_configs.find(cfg.name());
    if (it != failed_configs.end()) {
        *error = "connecting failed before: " + it->second;
        return NULL;
    }
    cached_connection.reset();
    cached_connection = create(cfg, {}, NULL, skip, error);
    if (!cached_connection && skip->empty()) {
        failed_configs[cfg.name()] = *error;
    }
    return cached_connection.get();
}

void connection::drop_cached()
{
    cached_connection.reset();
}

ucs_status_t connection::flush(double timeout_sec)
{
    fiatomic_request_param_t param;

    memset(&param, 0, sizeof(param));
    return wait(fiatomic_ep_flush_nbx(m_ep, &param), timeout_sec);
}

bool connection::create_second_ep(ucp_ep_h *ucp_ep, fiatomic_ep_h *ep,
                                  std::string *error,
                                  const fiatomic_ep_params_t *params)
{
    ucs_status_t status;

    if (!connect_ep(ucp_ep, error)) {
        return false;
    }
    status = fiatomic_ep_create(m_setup.fia, *ucp_ep, params, ep);
    if (status != UCS_OK) {
        *error = std::string("fiatomic_ep_create: ") +
                 ucs_status_string(status);
        /* the peer is alive: a flushed close, never a forced one while
         * wireup may still be under way */
        ucp_ep_close_blocking(m_setup.worker, *ucp_ep, false);
        return false;
    }
    return true;
}

void connection::destroy_second_ep(ucp_ep_h ucp_ep, fiatomic_ep_h ep)
{
    fiatomic_ep_destroy(ep);
    ucp_ep_close_blocking(m_setup.worker, ucp_ep, false);
}

bool start_initiator(peer_process *proc, const target &tgt,
                     const kv_list &env, std::string *error)
{
    std::vector<uint8_t> hello = tgt.info().pack();

    return proc->spawn({"initiator"}, env, error) &&
           proc->request(MSG_CONNECT, hello.data(), hello.size(), NULL, error);
}

bool take_snapshot(connection *conn, target_snapshot *snap, std::string *error)
{
    for (int r = 0; r < FIATOMIC_TEST_REGIONS; ++r) {
        size_t len = std::min<size_t>(conn->length(r), 40 * 1024);
        snap->bytes[r].resize(len);
        if (!conn->tgt().read(r, 0, snap->bytes[r].data(), len, error)) {
            return false;
        }
    }
    return true;
}

void expect_unchanged(connection *conn, const target_snapshot &snap,
                      const std::string &what)
{
    target_snapshot now;
    std::string error;
    ucs_status_t status = conn->flush();
    int reported = 0;

    EXPECT_EQ(UCS_OK, status) << what << ": flush";
    ASSERT_TRUE(take_snapshot(conn, &now, &error)) << error;
    for (int r = 0; r < FIATOMIC_TEST_REGIONS; ++r) {
        for (size_t i = 0; i < snap.bytes[r].size(); ++i) {
            if ((snap.bytes[r][i] != now.bytes[r][i]) && (reported++ < 4)) {
                ADD_FAILURE() << what << ": something was sent: target "
                              << "region " << r << " byte " << i
                              << " changed from 0x" << std::hex
                              << (int)snap.bytes[r][i] << " to 0x"
                              << (int)now.bytes[r][i] << std::dec;
            }
        }
    }
}

int immediate_errno(ucs_status_ptr_t p)
{
    if (p == NULL) {
        return 0;
    } else if (UCS_PTR_IS_ERR(p)) {
        return fiatomic_status_to_fi_errno(UCS_PTR_STATUS(p));
    }
    return 1;
}

std::string fmt(int datatype, const void *value)
{
    char buf[256];

    fiatomic_ref_format(datatype, value, buf, sizeof(buf));
    return buf;
}

/* Tear the cached connection (and its peer) down before exit. */
class fiatomic_global_env : public ::testing::Environment {
public:

    void TearDown() override { connection::drop_cached(); }
};

static ::testing::Environment *const fiatomic_global_env_instance =
        ::testing::AddGlobalTestEnvironment(new fiatomic_global_env());

} // namespace fiatomic_test
