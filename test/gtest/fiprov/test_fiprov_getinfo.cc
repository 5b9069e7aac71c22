/**
 * The provider as fi_getinfo(3) finds it: loaded from FI_PROVIDER_PATH, its
 * offers and their attributes, and libfabric 1.17's hint matching (caps,
 * mode, endpoint type, progress, threading, memory registration modes,
 * operation flags, orderings, sizes, names).
 */
#include "fiprov_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>

using namespace fiprov_test;

namespace {

static const uint64_t mr_prov = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR |
                                FI_MR_ALLOCATED;

class getinfo : public test_base {
protected:
    void SetUp() override
    {
        test_base::SetUp();
        m_hints = hints_alloc();
        ASSERT_NE(nullptr, m_hints);
    }

    void TearDown() override
    {
        fi_freeinfo(m_head);
        fi_freeinfo(m_hints);
        test_base::TearDown();
    }

    int ask(uint32_t version = api_version)
    {
        fi_freeinfo(m_head);
        m_head = NULL;
        return fiprov_test::getinfo(m_hints, &m_infos, &m_head, version);
    }

    /* the offers without hints beyond the provider's name */
    struct fi_info *unhinted()
    {
        struct fi_info *hints = hints_alloc(), *list = NULL;

        EXPECT_EQ(0, fi_getinfo(api_version, NULL, NULL, 0, hints, &list));
        fi_freeinfo(hints);
        return list;
    }

    void expect_nodata(const char *what)
    {
        EXPECT_EQ(-FI_ENODATA, ask()) << what;
        EXPECT_EQ(0u, m_infos.size()) << what;
    }

    struct fi_info              *m_hints = NULL;
    struct fi_info              *m_head  = NULL;
    std::vector<struct fi_info*> m_infos;
};

TEST_F(getinfo, provider_is_found_and_offers_both_mr_modes)
{
    ASSERT_EQ(0, ask());
    ASSERT_EQ(2u, m_infos.size());
    for (struct fi_info *info : m_infos) {
        ASSERT_NE(nullptr, info->fabric_attr->prov_name);
        EXPECT_STREQ("fiatomic", info->fabric_attr->prov_name);
        EXPECT_STREQ("fiatomic", info->fabric_attr->name);
        EXPECT_STREQ("ucp", info->domain_attr->name);
        EXPECT_EQ(FI_EP_RDM, info->ep_attr->type);
        EXPECT_EQ(0u, info->mode);
        EXPECT_EQ(8u, info->domain_attr->mr_key_size);
        EXPECT_EQ(FI_THREAD_SAFE, info->domain_attr->threading);
        EXPECT_EQ(FI_PROGRESS_AUTO, info->domain_attr->data_progress);
        EXPECT_EQ(FI_PROGRESS_AUTO, info->domain_attr->control_progress);
        EXPECT_EQ(info->caps, info->tx_attr->caps);
        EXPECT_EQ(info->caps, info->rx_attr->caps);
    }
    /* provider keys first: a peer uses them unchanged */
    EXPECT_EQ((int)mr_prov, m_infos[0]->domain_attr->mr_mode);
    EXPECT_EQ(0, m_infos[1]->domain_attr->mr_mode);
}

/* The sanitizer runtime this process runs with ("" if none): a provider
 * built with it loads into fi_info only when fi_info preloads it too. */
static std::string asan_runtime()
{
    char line[4096];
    std::string path;
    FILE *maps = fopen("/proc/self/maps", "r");

    while ((maps != NULL) && path.empty() &&
           (fgets(line, sizeof(line), maps) != NULL)) {
        const char *p = strstr(line, "/libasan.so");

        if (p != NULL) {
            path = strchr(line, '/');
            path.erase(path.find_last_not_of("\n") + 1);
        }
    }
    if (maps != NULL) {
        fclose(maps);
    }
    return path;
}

TEST_F(getinfo, fi_info_tool_lists_the_provider)
{
    std::string asan = asan_runtime(), out, cmd;
    char line[256];
    FILE *p;

    if (system("command -v fi_info >/dev/null 2>&1") != 0) {
        GTEST_SKIP() << "fi_info not installed (Debian: libfabric-bin)";
    }
    if (!asan.empty()) {
        /* libfabric's own leaks are not the provider's to report */
        cmd = "LD_PRELOAD='" + asan + "' ASAN_OPTIONS=detect_leaks=0 ";
    }
    cmd += "fi_info -p fiatomic 2>&1";
    p = popen(cmd.c_str(), "r");
    ASSERT_NE(nullptr, p);
    while (fgets(line, sizeof(line), p) != NULL) {
        out += line;
    }
    EXPECT_EQ(0, pclose(p)) << out;
    EXPECT_NE(std::string::npos, out.find("provider: fiatomic")) << out;
    EXPECT_NE(std::string::npos, out.find("type: FI_EP_RDM")) << out;
}

TEST_F(getinfo, caps_beyond_the_offer_are_refused)
{
    static const uint64_t caps[] = {
        FI_MSG, FI_RMA, FI_TAGGED, FI_ATOMIC, FI_MULTICAST, FI_COLLECTIVE,
        FI_READ, FI_WRITE, FI_RECV, FI_SEND, FI_REMOTE_READ,
        FI_REMOTE_WRITE, FI_RMA_EVENT, FI_SOURCE, FI_DIRECTED_RECV,
        FI_FENCE, FI_NAMED_RX_CTX, FI_HMEM
    };
    struct fi_info *offer = unhinted();

    ASSERT_NE(nullptr, offer);
    for (uint64_t cap : caps) {
        m_hints->caps = cap;
        if (offer->caps & cap) {
            ASSERT_EQ(0, ask()) << std::hex << cap;
            for (struct fi_info *info : m_infos) {
                EXPECT_EQ(cap, info->caps & cap);
            }
        } else {
            expect_nodata("a capability not offered");
        }
    }
    fi_freeinfo(offer);
}

/* FI_TAGGED asked: offered, on the transmit and receive sides too; the tag
 * format is 64 unstructured bits unless the hints name fields, which are
 * given as asked (any layout fits the 64 bits the provider matches) */
TEST_F(getinfo, tagged_offered_when_asked_with_the_tag_format_asked)
{
    m_hints->caps = FI_TAGGED | FI_SEND | FI_RECV;
    ASSERT_EQ(0, ask());
    ASSERT_EQ(2u, m_infos.size());
    for (struct fi_info *info : m_infos) {
        EXPECT_EQ((uint64_t)(FI_TAGGED | FI_SEND | FI_RECV), info->caps);
        EXPECT_TRUE(info->tx_attr->caps & FI_TAGGED);
        EXPECT_TRUE(info->rx_attr->caps & FI_TAGGED);
        EXPECT_EQ(0xaaaaaaaaaaaaaaaaull, info->ep_attr->mem_tag_format);
    }
    for (uint64_t format : {0x30ffull, 0xffffffffffffffffull,
                            0x00ffff0000ffffffull}) {
        m_hints->ep_attr->mem_tag_format = format;
        ASSERT_EQ(0, ask()) << std::hex << format;
        for (struct fi_info *info : m_infos) {
            EXPECT_EQ(format, info->ep_attr->mem_tag_format);
        }
    }
    m_hints->tx_attr->caps = FI_TAGGED | FI_SEND;
    m_hints->rx_attr->caps = FI_TAGGED | FI_RECV;
    ASSERT_EQ(0, ask());
    for (struct fi_info *info : m_infos) {
        EXPECT_EQ((uint64_t)(FI_TAGGED | FI_SEND), info->tx_attr->caps);
        EXPECT_EQ((uint64_t)(FI_TAGGED | FI_RECV), info->rx_attr->caps);
    }
}

TEST_F(getinfo, transfer_caps_only_with_endpoints)
{
    struct fi_info *offer = unhinted();
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_ep *ep = NULL;
    int ret;

    /* a capability offered is one the endpoint implements: while endpoints
     * cannot be opened, no transfer capability may be offered */
    ASSERT_NE(nullptr, offer);
    ASSERT_EQ(0, fi_fabric(offer->fabric_attr, &fabric, NULL));
    ASSERT_EQ(0, fi_domain(fabric, offer, &domain, NULL));
    ret = fi_endpoint(domain, offer, &ep, NULL);
    if (ret == -FI_ENOSYS) {
        EXPECT_EQ(0u, offer->caps & (FI_MSG | FI_RMA | FI_ATOMIC |
                                     FI_TAGGED | FI_READ | FI_WRITE |
                                     FI_SEND | FI_RECV));
        EXPECT_EQ(0u, offer->tx_attr->msg_order);
        EXPECT_EQ(0u, offer->tx_attr->inject_size);
        EXPECT_EQ(0u, offer->ep_attr->max_msg_size);
    } else {
        ASSERT_EQ(0, ret);
        EXPECT_EQ(0, fi_close(&ep->fid));
        /* atomics, RMA, messages and tagged messages are implemented,
         * on both sides, with directed receives and sources, to peers
         * and to the domain itself */
        const uint64_t done = FI_ATOMIC | FI_RMA | FI_MSG | FI_TAGGED |
                              FI_SEND | FI_RECV;
        const uint64_t msg_caps = FI_DIRECTED_RECV | FI_SOURCE |
                                  FI_LOCAL_COMM | FI_REMOTE_COMM;
        EXPECT_EQ(done, offer->caps & done);
        EXPECT_EQ(done & ~(uint64_t)FI_ATOMIC & ~(uint64_t)FI_RMA,
                  offer->tx_attr->caps & (FI_MSG | FI_TAGGED | FI_SEND |
                                          FI_RECV));
        EXPECT_EQ(done & ~(uint64_t)FI_ATOMIC & ~(uint64_t)FI_RMA,
                  offer->rx_attr->caps & (FI_MSG | FI_TAGGED | FI_SEND |
                                          FI_RECV));
        EXPECT_EQ(msg_caps, offer->caps & msg_caps);
        /* no source in error entries */
        EXPECT_EQ(0u, offer->caps & FI_SOURCE_ERR);
        /* sends from one endpoint to another match in order */
        EXPECT_EQ((uint64_t)FI_ORDER_SAS,
                  offer->tx_attr->msg_order & FI_ORDER_SAS);
        EXPECT_EQ((uint64_t)FI_ORDER_SAS,
                  offer->rx_attr->msg_order & FI_ORDER_SAS);
        /* 64 tag bits, unstructured (fi_endpoint(3)) */
        EXPECT_EQ(0xaaaaaaaaaaaaaaaaull, offer->ep_attr->mem_tag_format);
        /* a message's limits: 4 MiB (fi_fiatomic(7)), 8 bytes of remote
         * CQ data, up to 4 iov entries each way */
        EXPECT_EQ((size_t)4 << 20, offer->ep_attr->max_msg_size);
        EXPECT_EQ(8u, offer->domain_attr->cq_data_size);
        EXPECT_EQ(4u, offer->rx_attr->iov_limit);
        EXPECT_EQ((uint64_t)(FI_ORDER_ATOMIC_RAR | FI_ORDER_ATOMIC_RAW |
                             FI_ORDER_ATOMIC_WAR | FI_ORDER_ATOMIC_WAW |
                             FI_ORDER_SAS),
                  offer->tx_attr->msg_order);
        EXPECT_LE(16u, offer->tx_attr->inject_size);
        EXPECT_LT(0u, offer->ep_attr->max_msg_size);
    }
    EXPECT_EQ(0, fi_close(&domain->fid));
    EXPECT_EQ(0, fi_close(&fabric->fid));
    fi_freeinfo(offer);
}

/* what Sandia OpenSHMEM's OFI transport asks (both key modes, both
 * progress models) is still offered with messages in the offer, and a
 * message program's limits are offered up to the provider's and not
 * beyond */
TEST_F(getinfo, openshmem_and_message_hints)
{
    for (int basic = 0; basic < 2; ++basic) {
        for (enum fi_progress progress : {FI_PROGRESS_AUTO,
                                          FI_PROGRESS_MANUAL}) {
            m_hints->caps                        = FI_RMA | FI_ATOMIC;
            m_hints->ep_attr->type               = FI_EP_RDM;
            m_hints->ep_attr->max_msg_size       = 1;
            m_hints->domain_attr->av_type        = FI_AV_TABLE;
            m_hints->domain_attr->resource_mgmt  = FI_RM_ENABLED;
            m_hints->domain_attr->data_progress  = progress;
            m_hints->domain_attr->mr_mode        = basic ? (int)mr_prov : 0;
            m_hints->tx_attr->op_flags           = FI_DELIVERY_COMPLETE;
            m_hints->tx_attr->inject_size        = 16;
            ASSERT_EQ(0, ask()) << basic << " " << progress;
            for (struct fi_info *info : m_infos) {
                /* the caps asked, not more */
                EXPECT_EQ((uint64_t)(FI_RMA | FI_ATOMIC), info->caps);
            }
        }
    }

    m_hints->caps                     = FI_MSG | FI_SEND | FI_RECV;
    m_hints->ep_attr->max_msg_size    = (size_t)4 << 20;
    m_hints->tx_attr->inject_size     = 64;
    m_hints->tx_attr->iov_limit       = 4;
    m_hints->rx_attr->iov_limit       = 4;
    m_hints->tx_attr->op_flags        = 0;
    m_hints->domain_attr->cq_data_size = 8;
    ASSERT_EQ(0, ask());
    m_hints->ep_attr->max_msg_size = ((size_t)4 << 20) + 1;
    expect_nodata("a message above 4 MiB");
    m_hints->ep_attr->max_msg_size     = 0;
    m_hints->domain_attr->cq_data_size = 9;
    expect_nodata("more than 8 bytes of remote CQ data");
    m_hints->domain_attr->cq_data_size = 0;
    m_hints->rx_attr->iov_limit        = 5;
    expect_nodata("5 receive iov entries");
    m_hints->rx_attr->iov_limit        = 0;
    m_hints->caps |= FI_SOURCE_ERR;
    expect_nodata("sources of error entries");
    m_hints->caps = FI_MSG | FI_SOURCE | FI_SOURCE_ERR;
    expect_nodata("sources of error entries");
    /* what Open MPI's mtl ofi asks (with FI_ORDER_SAS) and MPICH's
     * ch4:ofi (sources): offered, with exactly those capabilities */
    for (uint64_t caps : {(uint64_t)(FI_TAGGED | FI_DIRECTED_RECV |
                                     FI_LOCAL_COMM | FI_REMOTE_COMM),
                          (uint64_t)(FI_MSG | FI_TAGGED | FI_SOURCE |
                                     FI_DIRECTED_RECV | FI_SEND |
                                     FI_RECV)}) {
        m_hints->caps               = caps;
        m_hints->tx_attr->msg_order = FI_ORDER_SAS;
        m_hints->rx_attr->msg_order = FI_ORDER_SAS;
        ASSERT_EQ(0, ask()) << std::hex << caps;
        for (struct fi_info *info : m_infos) {
            EXPECT_EQ(caps, info->caps);
        }
    }
    m_hints->tx_attr->msg_order = 0;
    m_hints->rx_attr->msg_order = 0;
}

TEST_F(getinfo, endpoint_type)
{
    m_hints->ep_attr->type = FI_EP_RDM;
    EXPECT_EQ(0, ask());
    m_hints->ep_attr->type = FI_EP_MSG;
    expect_nodata("FI_EP_MSG");
    m_hints->ep_attr->type = FI_EP_DGRAM;
    expect_nodata("FI_EP_DGRAM");
}

TEST_F(getinfo, progress_models)
{
    /* both are implemented: the one asked is the one given */
    for (enum fi_progress p : {FI_PROGRESS_AUTO, FI_PROGRESS_MANUAL}) {
        m_hints->domain_attr->data_progress    = p;
        m_hints->domain_attr->control_progress = p;
        ASSERT_EQ(0, ask());
        for (struct fi_info *info : m_infos) {
            EXPECT_EQ(p, info->domain_attr->data_progress);
            EXPECT_EQ(p, info->domain_attr->control_progress);
        }
    }
    m_hints->domain_attr->data_progress = (enum fi_progress)7;
    expect_nodata("an unknown progress model");
}

TEST_F(getinfo, threading_models)
{
    for (enum fi_threading t : {FI_THREAD_SAFE, FI_THREAD_FID,
                                FI_THREAD_DOMAIN, FI_THREAD_COMPLETION,
                                FI_THREAD_ENDPOINT}) {
        m_hints->domain_attr->threading = t;
        ASSERT_EQ(0, ask());
        for (struct fi_info *info : m_infos) {
            EXPECT_EQ(t, info->domain_attr->threading);
        }
    }
    m_hints->domain_attr->threading = (enum fi_threading)(FI_THREAD_ENDPOINT
                                                          + 1);
    expect_nodata("an unknown threading model");
}

TEST_F(getinfo, mr_modes_from_api_1_5)
{
    struct {
        int                 asked;
        std::vector<int>    given;
    } cases[] = {
        /* the caller supports no mode bit: program keys only */
        {0,                                        {0}},
        {(int)mr_prov,                             {(int)mr_prov, 0}},
        {(int)(mr_prov | FI_MR_LOCAL | FI_MR_ENDPOINT),
                                                   {(int)mr_prov, 0}},
        /* one of the three missing: provider keys cannot be given */
        {FI_MR_PROV_KEY | FI_MR_VIRT_ADDR,         {0}},
        {FI_MR_VIRT_ADDR | FI_MR_ALLOCATED,        {0}},
        {FI_MR_BASIC,                              {(int)mr_prov}},
        {FI_MR_SCALABLE,                           {0}}
    };

    for (auto &c : cases) {
        m_hints->domain_attr->mr_mode = c.asked;
        ASSERT_EQ(0, ask()) << std::hex << c.asked;
        ASSERT_EQ(c.given.size(), m_infos.size()) << std::hex << c.asked;
        for (size_t i = 0; i < c.given.size(); ++i) {
            EXPECT_EQ(c.given[i], m_infos[i]->domain_attr->mr_mode)
                << std::hex << c.asked;
        }
    }
}

TEST_F(getinfo, mr_modes_before_api_1_5)
{
    uint32_t v14 = FI_VERSION(1, 4);

    m_hints->domain_attr->mr_mode = FI_MR_UNSPEC;
    ASSERT_EQ(0, ask(v14));
    ASSERT_EQ(2u, m_infos.size());
    EXPECT_EQ(FI_MR_BASIC, m_infos[0]->domain_attr->mr_mode);
    EXPECT_EQ(FI_MR_SCALABLE, m_infos[1]->domain_attr->mr_mode);

    m_hints->domain_attr->mr_mode = FI_MR_BASIC;
    ASSERT_EQ(0, ask(v14));
    ASSERT_EQ(1u, m_infos.size());
    EXPECT_EQ(FI_MR_BASIC, m_infos[0]->domain_attr->mr_mode);

    m_hints->domain_attr->mr_mode = FI_MR_SCALABLE;
    ASSERT_EQ(0, ask(v14));
    ASSERT_EQ(1u, m_infos.size());
    EXPECT_EQ(FI_MR_SCALABLE, m_infos[0]->domain_attr->mr_mode);

    /* mode bits are not an old caller's values */
    m_hints->domain_attr->mr_mode = FI_MR_LOCAL;
    EXPECT_EQ(-FI_ENODATA, ask(v14));
}

TEST_F(getinfo, tx_attributes_beyond_the_offer_are_refused)
{
    struct fi_info *offer = unhinted();

    ASSERT_NE(nullptr, offer);
    /* exactly the offer is accepted */
    m_hints->tx_attr->inject_size = offer->tx_attr->inject_size;
    m_hints->tx_attr->size        = offer->tx_attr->size;
    m_hints->tx_attr->msg_order   = offer->tx_attr->msg_order;
    ASSERT_EQ(0, ask());

    m_hints->tx_attr->inject_size = offer->tx_attr->inject_size + 1;
    expect_nodata("inject_size above the offer");
    m_hints->tx_attr->inject_size = 0;

    m_hints->tx_attr->size = offer->tx_attr->size + 1;
    expect_nodata("tx size above the offer");
    m_hints->tx_attr->size = 0;

    m_hints->tx_attr->iov_limit = offer->tx_attr->iov_limit + 1;
    expect_nodata("iov_limit above the offer");
    m_hints->tx_attr->iov_limit = 0;

    for (uint64_t order : {FI_ORDER_ATOMIC_RAR, FI_ORDER_ATOMIC_RAW,
                           FI_ORDER_ATOMIC_WAR, FI_ORDER_ATOMIC_WAW,
                           FI_ORDER_SAS, FI_ORDER_RMA_WAW}) {
        m_hints->tx_attr->msg_order = order;
        if (offer->tx_attr->msg_order & order) {
            EXPECT_EQ(0, ask()) << std::hex << order;
        } else {
            expect_nodata("an ordering not offered");
        }
    }
    m_hints->tx_attr->msg_order = 0;

    /* a default operation flag is given as asked, or refused */
    for (uint64_t flag : {FI_DELIVERY_COMPLETE, FI_TRANSMIT_COMPLETE,
                          FI_INJECT_COMPLETE, FI_COMMIT_COMPLETE,
                          FI_INJECT, FI_COMPLETION}) {
        m_hints->tx_attr->op_flags = flag;
        if (ask() == 0) {
            for (struct fi_info *info : m_infos) {
                EXPECT_EQ(flag, info->tx_attr->op_flags);
            }
        } else {
            EXPECT_EQ(0u, m_infos.size());
        }
    }
    fi_freeinfo(offer);
}

TEST_F(getinfo, shared_contexts_auth_keys_and_addresses_are_refused)
{
    m_hints->ep_attr->tx_ctx_cnt = 2;
    expect_nodata("two transmit contexts");
    m_hints->ep_attr->tx_ctx_cnt = 0;

    m_hints->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
    expect_nodata("a shared receive context");
    m_hints->ep_attr->rx_ctx_cnt = 0;

    /* a job key's size without its bytes (test_fiprov_admit.cc offers
     * one with them) */
    m_hints->domain_attr->auth_key_size = 8;
    expect_nodata("an authorization key size without a key");
    m_hints->domain_attr->auth_key_size = 0;

    m_hints->addr_format = FI_SOCKADDR_IN;
    expect_nodata("a socket address format");
    m_hints->addr_format = FI_FORMAT_UNSPEC;

    EXPECT_EQ(0, ask());
}

TEST_F(getinfo, node_and_service_are_refused)
{
    struct fi_info *list = NULL;

    EXPECT_EQ(-FI_ENODATA, fi_getinfo(api_version, "localhost", NULL, 0,
                                      m_hints, &list));
    EXPECT_EQ(nullptr, list);
    EXPECT_EQ(-FI_ENODATA, fi_getinfo(api_version, NULL, "4242", 0, m_hints,
                                      &list));
    EXPECT_EQ(nullptr, list);
}

/* fi_pingpong's client asks with the server's fi_getname bytes as the
 * destination: offers come back naming it; bytes that are no address of
 * the provider's, and a source address, are refused */
TEST_F(getinfo, destination_address_is_taken_and_validated)
{
    /* fi_fiatomic(7)'s layout: version 1, IPv4, port 4242, 127.0.0.1,
     * endpoint 3, reserved zero, a non-zero nonce */
    uint8_t addr[24] = {1, 4, 0x10, 0x92, 127, 0, 0, 1, 0, 0, 0, 3,
                        0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
    uint8_t bad[24];

    m_hints->dest_addr    = malloc(sizeof(addr));
    ASSERT_NE(nullptr, m_hints->dest_addr);
    memcpy(m_hints->dest_addr, addr, sizeof(addr));
    m_hints->dest_addrlen = sizeof(addr);
    ASSERT_EQ(0, ask());
    ASSERT_EQ(2u, m_infos.size());
    for (struct fi_info *i : m_infos) {
        ASSERT_EQ(sizeof(addr), i->dest_addrlen);
        ASSERT_NE(nullptr, i->dest_addr);
        EXPECT_NE(m_hints->dest_addr, i->dest_addr);   /* its own copy */
        EXPECT_EQ(0, memcmp(i->dest_addr, addr, sizeof(addr)));
        EXPECT_EQ(nullptr, i->src_addr);
    }

    m_hints->dest_addrlen = sizeof(addr) - 1;
    expect_nodata("a short destination");
    m_hints->dest_addrlen = sizeof(addr);
    /* another version, another family, port 0, 0.0.0.0, a reserved field
     * not zero, a zero nonce: each field's bytes set to `value` */
    struct {
        size_t offset, len;
        uint8_t value;
    } faults[] = {{0, 1, 2}, {1, 1, 6}, {2, 2, 0}, {4, 4, 0}, {12, 4, 1},
                  {16, 8, 0}};
    for (const auto &f : faults) {
        memcpy(bad, addr, sizeof(addr));
        memset(bad + f.offset, f.value, f.len);
        memcpy(m_hints->dest_addr, bad, sizeof(bad));
        expect_nodata(("a malformed destination at byte " +
                       std::to_string(f.offset)).c_str());
    }
    memcpy(m_hints->dest_addr, addr, sizeof(addr));
    m_hints->addr_format = FI_SOCKADDR_IN;
    expect_nodata("a destination in another format");
    m_hints->addr_format = FI_FORMAT_UNSPEC;
    EXPECT_EQ(0, ask());

    m_hints->src_addr    = malloc(sizeof(addr));
    ASSERT_NE(nullptr, m_hints->src_addr);
    memcpy(m_hints->src_addr, addr, sizeof(addr));
    m_hints->src_addrlen = sizeof(addr);
    expect_nodata("a source address");
}

TEST_F(getinfo, names)
{
    free(m_hints->fabric_attr->name);
    m_hints->fabric_attr->name = strdup("fiatomic");
    free(m_hints->domain_attr->name);
    m_hints->domain_attr->name = strdup("ucp");
    EXPECT_EQ(0, ask());

    free(m_hints->domain_attr->name);
    m_hints->domain_attr->name = strdup("mlx5_0");
    expect_nodata("another domain");

    free(m_hints->domain_attr->name);
    m_hints->domain_attr->name = NULL;
    free(m_hints->fabric_attr->name);
    m_hints->fabric_attr->name = strdup("IB-0xfe80");
    expect_nodata("another fabric");

    free(m_hints->fabric_attr->name);
    m_hints->fabric_attr->name = NULL;
    free(m_hints->fabric_attr->prov_name);
    m_hints->fabric_attr->prov_name = strdup("tcp");
    expect_nodata("another provider");
}

TEST_F(getinfo, newer_api_is_refused)
{
    std::vector<struct fi_info*> infos;
    struct fi_info *head = NULL;

    /* the provider serves the API it was built against, and older ones */
    EXPECT_NE(0, fiprov_test::getinfo(m_hints, &infos, &head,
                                      FI_VERSION(FI_MAJOR_VERSION,
                                                 FI_MINOR_VERSION + 1)));
    EXPECT_EQ(0u, infos.size());
    fi_freeinfo(head);
    EXPECT_EQ(0, ask(FI_VERSION(1, 5)));
}

} // namespace
