/**
 * atomicx guest tests: UCT harness implementation.
 */

#include "atomicx_test_uct.h"

#include <gtest/gtest.h>

#include <chrono>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

namespace atomicx_test {

std::string test_device()
{
    const char *dev = getenv("ATOMICX_TEST_DEV");
    return (dev != nullptr) ? dev : "rxe0:1";
}

bool device_required()
{
    const char *guest = getenv("ATOMICX_GUEST");
    return (guest != nullptr) && !strcmp(guest, "1");
}

static void completion_cb(uct_completion_t *self)
{
    completion *comp = ucs_container_of(self, completion, super);
    comp->done       = true;
    comp->status     = self->status;
}

completion::completion()
{
    reset();
}

void completion::reset(int count)
{
    super.func   = completion_cb;
    super.count  = count;
    super.status = UCS_OK;
    done         = false;
    status       = UCS_ERR_NO_MESSAGE;
}

uct_env::uct_env()
{
    memset(&iface_attr, 0, sizeof(iface_attr));
}

uct_env::~uct_env()
{
    close();
}

static ucs_status_t env_err_handler(void *arg, uct_ep_h ep,
                                    ucs_status_t status)
{
    uct_env *env = static_cast<uct_env*>(arg);
    (void)env;
    return UCS_OK;
}

void uct_env::set_error_handler(uct_error_handler_t cb, void *arg)
{
    m_err_cb  = cb;
    m_err_arg = arg;
}

bool uct_env::open(const std::string &dev,
                   const std::map<std::string, std::string> &config,
                   std::string *why)
{
    unsigned num_components;
    ucs_status_t status;

    status = ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                      &m_async);
    EXPECT_EQ(UCS_OK, status);
    status = uct_worker_create(m_async, UCS_THREAD_MODE_SINGLE, &m_worker);
    EXPECT_EQ(UCS_OK, status);

    status = uct_query_components(&m_components, &num_components);
    EXPECT_EQ(UCS_OK, status);

    for (unsigned c = 0; (c < num_components) && (iface == nullptr); ++c) {
        uct_component_attr_t cattr;
        cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                           UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        EXPECT_EQ(UCS_OK, uct_component_query(m_components[c], &cattr));
        if (strcmp(cattr.name, "atomicx")) {
            continue;
        }

        std::vector<uct_md_resource_desc_t> mds(cattr.md_resource_count);
        cattr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        cattr.md_resources = mds.data();
        EXPECT_EQ(UCS_OK, uct_component_query(m_components[c], &cattr));

        for (auto &mdr : mds) {
            uct_md_config_t *md_config;
            uct_md_h md_try;

            EXPECT_EQ(UCS_OK, uct_md_config_read(m_components[c], NULL, NULL,
                                                 &md_config));
            status = uct_md_open(m_components[c], mdr.md_name, md_config,
                                 &md_try);
            uct_config_release(md_config);
            EXPECT_EQ(UCS_OK, status) << mdr.md_name;
            if (status != UCS_OK) {
                continue;
            }

            uct_tl_resource_desc_t *tls;
            unsigned num_tls;
            bool found = false;
            EXPECT_EQ(UCS_OK, uct_md_query_tl_resources(md_try, &tls,
                                                        &num_tls));
            for (unsigned t = 0; t < num_tls; ++t) {
                found = found || (dev == tls[t].dev_name);
            }
            uct_release_tl_resource_list(tls);
            if (!found) {
                uct_md_close(md_try);
                continue;
            }

            component = m_components[c];
            md        = md_try;

            uct_iface_config_t *iface_config;
            EXPECT_EQ(UCS_OK, uct_md_iface_config_read(md, "atomicx", NULL,
                                                       NULL, &iface_config));
            for (auto &kv : config) {
                /* UCX >= 1.22 matches the name with the table's prefix
                 * (ATOMICX_TX_QUEUE_LEN); older releases without it */
                std::string full = "ATOMICX_" + kv.first;
                ucs_status_t status = uct_config_modify(iface_config,
                                                        full.c_str(),
                                                        kv.second.c_str());
                if (status == UCS_ERR_NO_ELEM) {
                    status = uct_config_modify(iface_config, kv.first.c_str(),
                                               kv.second.c_str());
                }
                EXPECT_EQ(UCS_OK, status) << kv.first;
            }

            uct_iface_params_t params;
            memset(&params, 0, sizeof(params));
            params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                          UCT_IFACE_PARAM_FIELD_DEVICE |
                                          UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                                          UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                                          UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
            params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
            params.mode.device.tl_name  = "atomicx";
            params.mode.device.dev_name = dev.c_str();
            params.err_handler          = (m_err_cb != nullptr) ?
                                          m_err_cb : env_err_handler;
            params.err_handler_arg      = (m_err_cb != nullptr) ?
                                          m_err_arg : this;
            params.err_handler_flags    = 0;

            status = uct_iface_open(md, m_worker, &params, iface_config,
                                    &iface);
            uct_config_release(iface_config);
            EXPECT_EQ(UCS_OK, status) << "uct_iface_open(" << dev << ")";
            if (status != UCS_OK) {
                iface = nullptr;
                break;
            }

            EXPECT_EQ(UCS_OK, uct_iface_query(iface, &iface_attr));
            uct_iface_progress_enable(iface, UCT_PROGRESS_SEND |
                                             UCT_PROGRESS_RECV);
            break;
        }
    }

    if (iface == nullptr) {
        *why = "no atomicx device " + dev + " (the atomicx component is " +
               "registered; the soft-RoCE guest provides rxe0:1)";
        return false;
    }
    return true;
}

void uct_env::close()
{
    if (iface != nullptr) {
        uct_iface_close(iface);
        iface = nullptr;
    }
    if (md != nullptr) {
        uct_md_close(md);
        md = nullptr;
    }
    if (m_components != nullptr) {
        uct_release_component_list(m_components);
        m_components = nullptr;
    }
    if (m_worker != nullptr) {
        uct_worker_destroy(m_worker);
        m_worker = nullptr;
    }
    if (m_async != nullptr) {
        ucs_async_context_destroy(m_async);
        m_async = nullptr;
    }
}

void uct_env::reg(region &r, size_t length)
{
    uct_md_attr_t md_attr;

    ASSERT_EQ(0, posix_memalign(&r.buffer, 64, length));
    memset(r.buffer, 0, length);
    r.length = length;
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(md, r.buffer, length,
                                     UCT_MD_MEM_ACCESS_ALL, &r.memh));
    ASSERT_EQ(UCS_OK, uct_md_query(md, &md_attr));
    r.packed_rkey.resize(md_attr.rkey_packed_size);
    ASSERT_EQ(UCS_OK, uct_md_mkey_pack(md, r.memh, r.packed_rkey.data()));
}

void uct_env::dereg(region &r)
{
    if (r.memh != nullptr) {
        EXPECT_EQ(UCS_OK, uct_md_mem_dereg(md, r.memh));
        r.memh = nullptr;
    }
    free(r.buffer);
    r.buffer = nullptr;
}

uct_rkey_bundle_t uct_env::unpack(const std::vector<char> &packed) const
{
    uct_rkey_bundle_t rkey;
    EXPECT_EQ(UCS_OK, uct_rkey_unpack(component, packed.data(), &rkey));
    return rkey;
}

void uct_env::release(uct_rkey_bundle_t &rkey) const
{
    EXPECT_EQ(UCS_OK, uct_rkey_release(component, &rkey));
}

uct_ep_h uct_env::create_ep()
{
    uct_ep_params_t params;
    uct_ep_h ep = nullptr;

    params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    params.iface      = iface;
    EXPECT_EQ(UCS_OK, uct_ep_create(&params, &ep));
    return ep;
}

std::vector<char> uct_env::ep_address(uct_ep_h ep) const
{
    std::vector<char> addr(iface_attr.ep_addr_len);
    EXPECT_EQ(UCS_OK, uct_ep_get_address(ep, (uct_ep_addr_t*)addr.data()));
    return addr;
}

std::vector<char> uct_env::dev_address() const
{
    std::vector<char> addr(iface_attr.device_addr_len);
    EXPECT_EQ(UCS_OK, uct_iface_get_device_address(
                              iface, (uct_device_addr_t*)addr.data()));
    return addr;
}

void uct_env::connect(uct_ep_h ep, const std::vector<char> &dev_addr,
                      const std::vector<char> &ep_addr)
{
    EXPECT_TRUE(uct_iface_is_reachable(iface,
                                       (const uct_device_addr_t*)
                                               dev_addr.data(),
                                       NULL));
    EXPECT_EQ(UCS_OK,
              uct_ep_connect_to_ep(ep,
                                   (const uct_device_addr_t*)dev_addr.data(),
                                   (const uct_ep_addr_t*)ep_addr.data()));
}

void uct_env::loopback_pair(uct_ep_h *a, uct_ep_h *b)
{
    *a = create_ep();
    *b = create_ep();
    std::vector<char> dev = dev_address();
    connect(*a, dev, ep_address(*b));
    connect(*b, dev, ep_address(*a));
}

void loopback_test::open_loopback()
{
    ASSERT_NO_FATAL_FAILURE(env.reg(mem, 64));
    env.loopback_pair(&a, &b);
    rkey        = env.unpack(mem.packed_rkey);
    m_have_rkey = true;
}

void loopback_test::TearDown()
{
    if (m_have_rkey) {
        env.release(rkey);
        m_have_rkey = false;
    }
    if (a != nullptr) {
        uct_ep_destroy(a);
        a = nullptr;
    }
    if (b != nullptr) {
        uct_ep_destroy(b);
        b = nullptr;
    }
    env.dereg(mem);
}

unsigned uct_env::progress()
{
    return uct_worker_progress(m_worker);
}

bool uct_env::progress_until(const std::function<bool()> &cond,
                             double seconds)
{
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration<double>(seconds);
    while (!cond()) {
        if (std::chrono::steady_clock::now() > deadline) {
            return false;
        }
        progress();
    }
    return true;
}

ucs_status_t uct_env::start(uct_ep_h ep, uct_atomic_op_t op, unsigned size,
                            bool fetch, uint64_t value, uint64_t compare,
                            uint64_t remote_addr, uct_rkey_t rkey,
                            void *result, uct_completion_t *comp)
{
    if (op == UCT_ATOMIC_OP_CSWAP) {
        return (size == 8) ?
               uct_ep_atomic_cswap64(ep, compare, value, remote_addr, rkey,
                                     (uint64_t*)result, comp) :
               uct_ep_atomic_cswap32(ep, (uint32_t)compare, (uint32_t)value,
                                     remote_addr, rkey, (uint32_t*)result,
                                     comp);
    }

    if (fetch) {
        return (size == 8) ?
               uct_ep_atomic64_fetch(ep, op, value, (uint64_t*)result,
                                     remote_addr, rkey, comp) :
               uct_ep_atomic32_fetch(ep, op, (uint32_t)value,
                                     (uint32_t*)result, remote_addr, rkey,
                                     comp);
    }

    return (size == 8) ?
           uct_ep_atomic64_post(ep, op, value, remote_addr, rkey) :
           uct_ep_atomic32_post(ep, op, (uint32_t)value, remote_addr, rkey);
}

ucs_status_t uct_env::run(uct_ep_h ep, uct_atomic_op_t op, unsigned size,
                          bool fetch, uint64_t value, uint64_t compare,
                          uint64_t remote_addr, uct_rkey_t rkey,
                          uint64_t *result)
{
    union {
        uint32_t u32;
        uint64_t u64;
    } res = {};
    completion comp;
    ucs_status_t status;

    bool want_result = fetch || (op == UCT_ATOMIC_OP_CSWAP);
    do {
        status = start(ep, op, size, fetch, value, compare, remote_addr,
                       rkey, want_result ? &res : nullptr, &comp.super);
        if (status == UCS_ERR_NO_RESOURCE) {
            progress();
        }
    } while (status == UCS_ERR_NO_RESOURCE);

    if (status == UCS_INPROGRESS) {
        status = progress_until([&] { return comp.done; }) ? comp.status :
                                                             UCS_ERR_TIMED_OUT;
    }

    if ((status == UCS_OK) && !want_result) {
        status = flush(ep);
    }

    if (result != nullptr) {
        *result = (size == 8) ? res.u64 : res.u32;
    }
    return status;
}

ucs_status_t uct_env::flush(uct_ep_h ep)
{
    completion comp;
    ucs_status_t status;

    for (;;) {
        status = (ep != nullptr) ? uct_ep_flush(ep, 0, &comp.super) :
                                   uct_iface_flush(iface, 0, nullptr);
        if (status == UCS_ERR_NO_RESOURCE) {
            progress();
            continue;
        }
        if ((status == UCS_INPROGRESS) && (ep == nullptr)) {
            progress();
            continue;
        }
        break;
    }

    if (status == UCS_INPROGRESS) {
        status = progress_until([&] { return comp.done; }) ? comp.status :
                                                             UCS_ERR_TIMED_OUT;
    }
    return status;
}

void write_all(int fd, const void *buf, size_t len)
{
    const char *p = static_cast<const char*>(buf);
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            fprintf(stderr, "write_all: %m\n");
            _exit(90);
        }
        p   += n;
        len -= n;
    }
}

void read_all(int fd, void *buf, size_t len)
{
    char *p = static_cast<char*>(buf);
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            fprintf(stderr, "read_all: %s\n", n ? strerror(errno) : "EOF");
            _exit(91);
        }
        p   += n;
        len -= n;
    }
}

void write_blob(int fd, const std::vector<char> &blob)
{
    uint32_t len = blob.size();
    write_all(fd, &len, sizeof(len));
    write_all(fd, blob.data(), len);
}

std::vector<char> read_blob(int fd)
{
    uint32_t len;
    read_all(fd, &len, sizeof(len));
    std::vector<char> blob(len);
    read_all(fd, blob.data(), len);
    return blob;
}

} // namespace atomicx_test
