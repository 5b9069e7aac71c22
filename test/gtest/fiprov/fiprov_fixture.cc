/**
 * The provider tests' objects (fiprov_fixture.h).
 */
#include "fiprov_fixture.h"

#include <stdlib.h>
#include <string.h>

namespace fiprov_test {

void domain_test::open_fabric(enum fi_progress progress)
{
    struct fi_info *hints = hints_alloc();

    ASSERT_NE(nullptr, hints);
    hints->domain_attr->data_progress = progress;
    ASSERT_EQ(0, fiprov_test::getinfo(hints, &m_infos, &m_head));
    fi_freeinfo(hints);
    ASSERT_EQ(0, fi_fabric(m_head->fabric_attr, &m_fabric, NULL));
}

void domain_test::open_domain(enum fi_progress progress)
{
    open_fabric(progress);
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_EQ(0, fi_domain(m_fabric, m_head, &m_domain, NULL));
}

std::string progress_name(const testing::TestParamInfo<enum fi_progress> &info)
{
    return (info.param == FI_PROGRESS_AUTO) ? "auto" : "manual";
}

void domain_test::TearDown()
{
    if (m_domain != NULL) {
        EXPECT_EQ(0, fi_close(&m_domain->fid));
        m_domain = NULL;
    }
    if (m_fabric != NULL) {
        EXPECT_EQ(0, fi_close(&m_fabric->fid));
        m_fabric = NULL;
    }
    fi_freeinfo(m_head);
    m_head = NULL;
    test_base::TearDown();
}

int objects::open_domain(const open_params &p)
{
    struct fi_info *hints = hints_alloc();
    int ret;

    params = p;
    if (hints == NULL) {
        return -FI_ENOMEM;
    }
    hints->caps                       = p.caps;
    hints->ep_attr->type              = FI_EP_RDM;
    hints->domain_attr->data_progress = p.progress;
    hints->domain_attr->mr_mode       = p.prov_keys ? (int)prov_key_mode : 0;
    if (!p.auth_key.empty()) {
        /* freed with the hints */
        hints->domain_attr->auth_key = (uint8_t*)malloc(p.auth_key.size());
        if (hints->domain_attr->auth_key == NULL) {
            fi_freeinfo(hints);
            return -FI_ENOMEM;
        }
        memcpy(hints->domain_attr->auth_key, p.auth_key.data(),
               p.auth_key.size());
        hints->domain_attr->auth_key_size = p.auth_key.size();
    }
    ret = fi_getinfo(api_version, NULL, NULL, 0, hints, &info);
    fi_freeinfo(hints);
    if (ret != 0) {
        return ret;
    }
    ret = fi_fabric(info->fabric_attr, &fabric, NULL);
    if (ret != 0) {
        return ret;
    }
    return fi_domain(fabric, info, &domain, NULL);
}

int objects::open_ep()
{
    struct fi_av_attr av_attr     = {};
    struct fi_cq_attr cq_attr     = {};
    struct fi_cntr_attr cntr_attr = {};
    int ret;

    av_attr.type     = FI_AV_TABLE;
    cq_attr.format   = params.cq_format;
    cq_attr.wait_obj = FI_WAIT_UNSPEC;
    cntr_attr.events = FI_CNTR_EVENTS_COMP;
    if (((ret = fi_av_open(domain, &av_attr, &av, NULL)) != 0) ||
        ((ret = fi_cq_open(domain, &cq_attr, &cq, NULL)) != 0) ||
        ((ret = fi_cntr_open(domain, &cntr_attr, &rcntr, NULL)) != 0) ||
        ((ret = fi_cntr_open(domain, &cntr_attr, &wcntr, NULL)) != 0) ||
        ((ret = fi_endpoint(domain, info, &ep, NULL)) != 0) ||
        ((ret = fi_ep_bind(ep, &av->fid, 0)) != 0) ||
        ((ret = fi_ep_bind(ep, &cq->fid, params.cq_bind)) != 0) ||
        ((ret = fi_ep_bind(ep, &rcntr->fid, FI_READ)) != 0) ||
        ((ret = fi_ep_bind(ep, &wcntr->fid, FI_WRITE)) != 0)) {
        return ret;
    }
    if ((params.caps & (FI_MSG | FI_TAGGED)) &&
        (((ret = fi_cntr_open(domain, &cntr_attr, &scntr, NULL)) != 0) ||
         ((ret = fi_cntr_open(domain, &cntr_attr, &rvcntr, NULL)) != 0) ||
         ((ret = fi_ep_bind(ep, &scntr->fid, FI_SEND)) != 0) ||
         ((ret = fi_ep_bind(ep, &rvcntr->fid, FI_RECV)) != 0))) {
        return ret;
    }
    return fi_enable(ep);
}

void objects::close()
{
    struct fid *fids[] = {ep ? &ep->fid : NULL, rcntr ? &rcntr->fid : NULL,
                          wcntr ? &wcntr->fid : NULL,
                          scntr ? &scntr->fid : NULL,
                          rvcntr ? &rvcntr->fid : NULL,
                          cq ? &cq->fid : NULL, av ? &av->fid : NULL,
                          domain ? &domain->fid : NULL,
                          fabric ? &fabric->fid : NULL};

    for (struct fid *f : fids) {
        if (f != NULL) {
            EXPECT_EQ(0, fi_close(f)) << "closing class " << f->fclass;
        }
    }
    ep     = NULL;
    rcntr  = wcntr = NULL;
    scntr  = rvcntr = NULL;
    cq     = NULL;
    av     = NULL;
    domain = NULL;
    fabric = NULL;
    fi_freeinfo(info);
    info = NULL;
}

void open_sibling_ep(const objects &o, struct fid_ep **ep,
                     struct fid_cntr **sent, fi_addr_t *addr)
{
    struct fi_cntr_attr cntr_attr = {};
    uint8_t name[64];
    size_t len = sizeof(name);

    ASSERT_EQ(0, fi_endpoint(o.domain, o.info, ep, NULL));
    ASSERT_EQ(0, fi_ep_bind(*ep, &o.av->fid, 0));
    ASSERT_EQ(0, fi_cntr_open(o.domain, &cntr_attr, sent, NULL));
    ASSERT_EQ(0, fi_ep_bind(*ep, &o.cq->fid, FI_RECV));
    ASSERT_EQ(0, fi_ep_bind(*ep, &(*sent)->fid, FI_SEND));
    ASSERT_EQ(0, fi_enable(*ep));
    ASSERT_EQ(0, fi_getname(&(*ep)->fid, name, &len));
    ASSERT_EQ(1, fi_av_insert(o.av, name, 1, addr, 0, NULL));
}

} // namespace fiprov_test
