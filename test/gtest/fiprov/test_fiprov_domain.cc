/**
 * Fabric and domain objects through libfabric's API: opening them from
 * every offer, closing in the wrong order (-FI_EBUSY), an info the provider
 * never offered (-FI_EINVAL), and fi_query_atomic checked cell by cell
 * against the reference model (src/ref): defined cells are answered with
 * the element size, the others are refused.
 */
#include "fiprov_fixture.h"

#include <fiatomic_ref.h>

#include <stdlib.h>

#include <string>

using namespace fiprov_test;

namespace {

class domain : public domain_test {
protected:
    void SetUp() override
    {
        test_base::SetUp();
        open_fabric();
    }


};

TEST_F(domain, opens_from_every_offer_and_threading)
{
    for (struct fi_info *info : m_infos) {
        for (enum fi_threading t : {FI_THREAD_SAFE, FI_THREAD_DOMAIN}) {
            struct fid_domain *dom;

            info->domain_attr->threading = t;
            ASSERT_EQ(0, fi_domain(m_fabric, info, &dom, NULL));
            EXPECT_EQ((size_t)FI_CLASS_DOMAIN, dom->fid.fclass);
            EXPECT_EQ(0, fi_close(&dom->fid));
        }
    }
}

TEST_F(domain, several_domains_and_close_order)
{
    struct fid_domain *d1, *d2;

    ASSERT_EQ(0, fi_domain(m_fabric, m_head, &d1, NULL));
    ASSERT_EQ(0, fi_domain(m_fabric, m_head, &d2, NULL));
    /* the fabric outlives its domains */
    EXPECT_EQ(-FI_EBUSY, fi_close(&m_fabric->fid));
    EXPECT_EQ(0, fi_close(&d1->fid));
    EXPECT_EQ(-FI_EBUSY, fi_close(&m_fabric->fid));
    EXPECT_EQ(0, fi_close(&d2->fid));
}

TEST_F(domain, info_not_offered_is_refused)
{
    struct fi_info *info = fi_dupinfo(m_head);
    struct fid_domain *dom = NULL;

    ASSERT_NE(nullptr, info);
    info->ep_attr->type = FI_EP_MSG;
    EXPECT_EQ(-FI_EINVAL, fi_domain(m_fabric, info, &dom, NULL));
    info->ep_attr->type = FI_EP_RDM;
    info->caps |= FI_SOURCE_ERR;
    EXPECT_EQ(-FI_EINVAL, fi_domain(m_fabric, info, &dom, NULL));
    EXPECT_EQ(nullptr, dom);
    fi_freeinfo(info);
}

/* fi_query_atomic over one UCX transport selection (UCX reads UCX_TLS when
 * the domain's UCP context is created) */
class domain_tls : public domain,
                   public testing::WithParamInterface<const char*> {
protected:
    void SetUp() override
    {
        const char *saved = getenv("UCX_TLS");

        m_saved_set = (saved != NULL);
        if (m_saved_set) {
            m_saved = saved;
        }
        setenv("UCX_TLS", GetParam(), 1);
        domain::SetUp();
    }

    void TearDown() override
    {
        domain::TearDown();
        if (m_saved_set) {
            setenv("UCX_TLS", m_saved.c_str(), 1);
        } else {
            unsetenv("UCX_TLS");
        }
    }

    bool        m_saved_set = false;
    std::string m_saved;
};

TEST_P(domain_tls, query_atomic_matches_the_reference_cells)
{
    static const uint64_t family_flags[FIATOMIC_REF_FAMILY_LAST] = {
        0, FI_FETCH_ATOMIC, FI_COMPARE_ATOMIC
    };
    struct fid_domain *dom;
    unsigned defined = 0, answered = 0;

    ASSERT_EQ(0, fi_domain(m_fabric, m_head, &dom, NULL));
    for (int family = 0; family < FIATOMIC_REF_FAMILY_LAST; ++family) {
        for (int op = 0; op < FIATOMIC_REF_OP_COUNT; ++op) {
            for (int dt = 0; dt < FIATOMIC_REF_DATATYPE_COUNT; ++dt) {
                struct fi_atomic_attr attr = {0, 0};
                int ret = fi_query_atomic(dom, (enum fi_datatype)dt,
                                          (enum fi_op)op, &attr,
                                          family_flags[family]);

                if (fiatomic_ref_cell_defined(family, op, dt)) {
                    ++defined;
                    /* every defined cell executes through libfiatomic
                     * (its target-side execution covers any transport) */
                    EXPECT_EQ(0, ret) << fiatomic_ref_family_name(family)
                        << " " << fiatomic_ref_op_name(op) << " "
                        << fiatomic_ref_datatype_name(dt);
                    if (ret == 0) {
                        ++answered;
                        EXPECT_EQ(fiatomic_ref_datatype_size(dt),
                                  attr.size);
                        EXPECT_GE(attr.count, 1u);
                    }
                } else {
                    EXPECT_EQ(-FI_EOPNOTSUPP, ret)
                        << fiatomic_ref_family_name(family) << " "
                        << fiatomic_ref_op_name(op) << " "
                        << fiatomic_ref_datatype_name(dt);
                }
            }
        }
    }
    EXPECT_EQ(414u, defined);
    EXPECT_EQ(defined, answered);
    EXPECT_EQ(0, fi_close(&dom->fid));
}

INSTANTIATE_TEST_SUITE_P(tls, domain_tls,
                         testing::Values("posix,self", "tcp,self"),
                         [](const testing::TestParamInfo<const char*> &info) {
                             return std::string(info.param).substr(
                                 0, std::string(info.param).find(','));
                         });

TEST_F(domain, query_atomic_bad_input)
{
    struct fid_domain *dom;
    struct fi_atomic_attr attr;

    ASSERT_EQ(0, fi_domain(m_fabric, m_head, &dom, NULL));
    EXPECT_EQ(-FI_EINVAL, fi_query_atomic(dom, FI_UINT64, FI_SUM, NULL, 0));
    EXPECT_EQ(-FI_EINVAL, fi_query_atomic(dom, FI_UINT64, FI_SUM, &attr,
                                          FI_FETCH_ATOMIC |
                                          FI_COMPARE_ATOMIC));
    EXPECT_EQ(-FI_EOPNOTSUPP, fi_query_atomic(dom, FI_UINT64, FI_SUM, &attr,
                                              FI_TAGGED));
    EXPECT_EQ(-FI_EOPNOTSUPP,
              fi_query_atomic(dom, (enum fi_datatype)FIATOMIC_REF_DATATYPE_COUNT,
                              FI_SUM, &attr, 0));
    EXPECT_EQ(-FI_EOPNOTSUPP,
              fi_query_atomic(dom, FI_UINT64,
                              (enum fi_op)FIATOMIC_REF_OP_COUNT, &attr, 0));
    EXPECT_EQ(0, fi_close(&dom->fid));
}

} // namespace
