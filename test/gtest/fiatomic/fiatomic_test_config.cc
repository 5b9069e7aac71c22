/*
 * Test environment, configurations and expectations: which (transport,
 * memory, strategy) combinations exist and run here, the cells of
 * fi_atomic(3), and what the library is expected to do with each cell in
 * each configuration (fiatomic_test_env.h).
 */
#include "fiatomic_test_env.h"

#include <algorithm>
#include <set>
#include <sstream>

namespace fiatomic_test {

/* ------------------------------------------------------------------------ */
/* Configurations */

std::string config::name() const
{
    return tl + (safe ? "_safe_" : alloc ? "_alloc_" : "_user_") + strategy +
           (am ? "" : "_noam");
}

config make_config(const char *tl, const char *mem, const char *strategy)
{
    std::string s(strategy);
    bool am = true;

    if ((s.size() > 5) && (s.substr(s.size() - 5) == "_noam")) {
        s  = s.substr(0, s.size() - 5);
        am = false;
    }
    config cfg{tl, std::string(mem) == "alloc", s, am};

    cfg.safe = (std::string(mem) == "safe");
    return cfg;
}

const std::vector<std::string> &all_transports()
{
    static const std::vector<std::string> tls = {"self", "posix", "sysv",
                                                 "tcp"};
    return tls;
}

const std::vector<std::string> &all_strategies()
{
    static const std::vector<std::string> s = {"auto", "native", "cas",
                                               "direct", "target"};
    return s;
}

std::vector<config> all_configs()
{
    std::vector<config> v;

    for (const std::string &tl : all_transports()) {
        for (bool alloc : {true, false}) {
            for (const std::string &s : all_strategies()) {
                v.push_back({tl, alloc, s, true});
            }
            v.push_back({tl, alloc, "auto", false});
        }
    }
    return v;
}

std::vector<config> auto_configs()
{
    std::vector<config> v;

    for (const std::string &tl : all_transports()) {
        for (bool alloc : {true, false}) {
            v.push_back({tl, alloc, "auto", true});
        }
    }
    return v;
}

std::string transport_missing(const std::string &tl)
{
    static std::map<std::string, std::string> cache;
    auto it = cache.find(tl);
    ucp_config_t *config;
    ucp_params_t params;
    ucp_context_h context;
    ucp_worker_params_t wparams;
    ucp_worker_h worker;
    ucs_status_t status;
    std::string reason;

    if (it != cache.end()) {
        return it->second;
    }

    status = ucp_config_read(NULL, NULL, &config);
    if (status != UCS_OK) {
        return cache[tl] = std::string("ucp_config_read: ") +
                           ucs_status_string(status);
    }
    ucp_config_modify(config, "TLS", ucx_tls(tl).c_str());
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 |
                        UCP_FEATURE_AMO64;
    status = ucp_init(&params, config, &context);
    ucp_config_release(config);
    if (status != UCS_OK) {
        return cache[tl] = "UCX transport " + tl + " is not available here "
                           "(ucp_init: " + ucs_status_string(status) + ")";
    }
    memset(&wparams, 0, sizeof(wparams));
    status = ucp_worker_create(context, &wparams, &worker);
    if (status != UCS_OK) {
        reason = "UCX transport " + tl + " is not available here "
                 "(ucp_worker_create: " + ucs_status_string(status) + ")";
    } else {
        ucp_worker_destroy(worker);
    }
    ucp_cleanup(context);
    return cache[tl] = reason;
}

/* ------------------------------------------------------------------------ */
/* Cells */

std::string cell::name() const
{
    return std::string(fiatomic_ref_family_name(family)) + "_" +
           fiatomic_ref_op_short_name(op) + "_" +
           fiatomic_ref_datatype_short_name(datatype);
}

std::vector<cell> defined_cells()
{
    std::vector<cell> v;

    for (int f = 0; f < FIATOMIC_REF_FAMILY_LAST; ++f) {
        for (int op = 0; op < FIATOMIC_REF_OP_COUNT; ++op) {
            for (int dt = 0; dt < FIATOMIC_REF_DATATYPE_COUNT; ++dt) {
                if (fiatomic_ref_cell_defined(f, op, dt)) {
                    v.push_back({f, op, dt});
                }
            }
        }
    }
    return v;
}

bool type_supported(int datatype)
{
    return dt_size(datatype) > 0; /* every element size, 1..32 bytes */
}

bool native_cell(const cell &c)
{
    size_t size  = dt_size(c.datatype);
    bool int3264 = (fiatomic_ref_datatype_class(c.datatype) ==
                    FIATOMIC_REF_CLASS_INT) && ((size == 4) || (size == 8));
    bool bf      = (c.family == FIATOMIC_FAMILY_BASE) ||
                   (c.family == FIATOMIC_FAMILY_FETCH);

    if (!fiatomic_ref_cell_defined(c.family, c.op, c.datatype)) {
        return false;
    }
    switch (c.op) {
    case FI_SUM:
    case FI_BOR:
    case FI_BAND:
    case FI_BXOR:
        return bf && int3264;
    case FI_ATOMIC_WRITE:
        return bf && ((size == 4) || (size == 8));
    case FI_ATOMIC_READ:
        return (c.family == FIATOMIC_FAMILY_FETCH) &&
               ((size == 4) || (size == 8));
    case FI_CSWAP:
        return (c.family == FIATOMIC_FAMILY_COMPARE) && int3264;
    default:
        return false;
    }
}

bool device_domain(const config &cfg)
{
    /* FIATOMIC_TEST_TLS_MAP may put a device-atomics transport (atomicx)
     * under a configuration's name: UCP's atomics are then the NIC's */
    return ucx_tls(cfg.tl).find("atomicx") != std::string::npos;
}

bool ucx_at_least_1_22()
{
    unsigned major, minor, release;

    ucp_get_version(&major, &minor, &release);
    return UCP_VERSION(major, minor) >= UCP_VERSION(1, 22);
}

bool wants_proto_v1(const config &cfg)
{
    return ucx_at_least_1_22() && !cfg.safe &&
           ((cfg.strategy == "native") || (cfg.strategy == "cas") ||
            ((cfg.strategy == "auto") && !cfg.am));
}

/* The environment's UCX_PROTO_ENABLE, as UCX and the library read it. */
static bool proto_v2_in_env()
{
    const char *proto = getenv("UCX_PROTO_ENABLE");

    return (proto == NULL) || !((proto[0] == 'n') || (proto[0] == 'N') ||
                                (proto[0] == '0'));
}

bool ucp_amo_on_peer_err_eps()
{
    /* measured: UCX 1.22.0 has no atomic protocol (offload or software) for
     * an endpoint with UCP_ERR_HANDLING_MODE_PEER ("cannot find remote
     * protocol"); its v1 protocols and UCX 1.13.1 have */
    return !ucx_at_least_1_22() || !proto_v2_in_env();
}

bool ucp_amo_available(const config &cfg)
{
    return !cfg.two_process() || ucp_amo_on_peer_err_eps();
}

proto_env::proto_env(const config &cfg)
{
    if (wants_proto_v1(cfg) && (getenv("UCX_PROTO_ENABLE") == NULL)) {
        m_set = (setenv("UCX_PROTO_ENABLE", "n", 1) == 0);
    }
}

proto_env::~proto_env()
{
    if (m_set) {
        unsetenv("UCX_PROTO_ENABLE");
    }
}

bool direct_valid(const config &cfg)
{
    /* the memory must be mapped here and UCP's atomics on it must be CPU
     * atomics: same process (self), or shared memory that the peer's MD
     * allocated (posix/sysv can map only that) */
    return !cfg.safe &&
           ((cfg.tl == "self") ||
            (cfg.alloc && ((cfg.tl == "posix") || (cfg.tl == "sysv"))));
}

expectation strategy_can(const config &cfg, const std::string &strategy,
                         const cell &c)
{
    size_t size = dt_size(c.datatype);
    bool big    = size > 8;

    if (!fiatomic_ref_cell_defined(c.family, c.op, c.datatype) ||
        !type_supported(c.datatype)) {
        return FORBIDDEN;
    }
    if (cfg.safe) {
        /* target-only memory: the target's execution is the only way */
        return (((strategy == "target") || (strategy == "auto")) && cfg.am) ?
               REQUIRED : FORBIDDEN;
    }
    if (((strategy == "native") || (strategy == "cas")) &&
        !ucp_amo_available(cfg)) {
        return FORBIDDEN;
    }
    if (strategy == "native") {
        if (!native_cell(c)) {
            return FORBIDDEN;
        }
        /* UCX 1.13.1 computes fetching AND/OR/XOR wrongly where its atomics
         * are CPU atomics (self, posix, sysv), and a base-family call with
         * FI_DELIVERY_COMPLETE takes the fetching form: the library may
         * leave them out there; UCX 1.22 computes them right */
        if (((c.op == FI_BOR) || (c.op == FI_BAND) || (c.op == FI_BXOR)) &&
            (cfg.tl != "tcp") && !ucx_at_least_1_22()) {
            return OPTIONAL;
        }
        return REQUIRED;
    } else if (strategy == "cas") {
        /* UCP has no compare-and-swap wider than 8 bytes */
        return big ? FORBIDDEN : REQUIRED;
    } else if (strategy == "direct") {
        if (!direct_valid(cfg)) {
            return FORBIDDEN;
        }
        /* 32-byte elements are guarded by locks every actor takes: a
         * table in memory the library allocated (every peer that maps it
         * takes them), else a table of the exposing context (direct only
         * from that context) */
        return ((size > 16) && !cfg.alloc) ? OPTIONAL : REQUIRED;
    } else if (strategy == "target") {
        /* the target's CPU atomics on 1..8-byte elements are atomic with
         * respect to UCP's own only when those are CPU atomics too (one
         * actor, fi_atomic(3)); wider elements are out of UCP's reach */
        return (cfg.am && (big || !device_domain(cfg))) ? REQUIRED : FORBIDDEN;
    } else if (strategy == "auto") {
        if (!ucp_amo_available(cfg)) {
            return (strategy_can(cfg, "target", c) == REQUIRED) ? REQUIRED :
                   strategy_can(cfg, "direct", c);
        }
        if (!big || cfg.am) {
            return REQUIRED;
        }
        return strategy_can(cfg, "direct", c);
    }
    return FORBIDDEN;
}

expectation expect_cell(const config &cfg, const cell &c)
{
    return strategy_can(cfg, cfg.strategy, c);
}

fiatomic_strategy_t strategy_from_name(const std::string &name)
{
    if (name == "native") {
        return FIATOMIC_STRATEGY_NATIVE;
    } else if (name == "cas") {
        return FIATOMIC_STRATEGY_CAS;
    } else if (name == "direct") {
        return FIATOMIC_STRATEGY_DIRECT;
    } else if (name == "target") {
        return FIATOMIC_STRATEGY_TARGET;
    }
    return FIATOMIC_STRATEGY_NONE;
}

} // namespace fiatomic_test
