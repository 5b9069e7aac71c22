/**
 * The objects a provider test opens, in one place: fabric, domain, address
 * vector, completion queue, counters and an endpoint, from hints with a
 * chosen progress and memory registration mode, closed in reverse order.
 * A test opens as far as it needs (open_domain, then open_ep) and the
 * fixture closes what is open.
 */
#ifndef FIPROV_FIXTURE_H_
#define FIPROV_FIXTURE_H_

#include "fiprov_test.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_eq.h>

#include <string>

namespace fiprov_test {

/**
 * The start every single-process suite shares: fi_getinfo with the
 * provider's hints (data progress as given), fi_fabric and, on request,
 * fi_domain with the first offer; TearDown closes the domain and fabric
 * after the suite's own objects (closed by the suite's TearDown first).
 */
class domain_test : public test_base {
protected:
    /** getinfo and fabric: fatal failure on error. */
    void open_fabric(enum fi_progress progress = FI_PROGRESS_UNSPEC);
    /** open_fabric, then fi_domain with m_head. */
    void open_domain(enum fi_progress progress = FI_PROGRESS_UNSPEC);
    void TearDown() override;

    struct fi_info               *m_head   = NULL;
    std::vector<struct fi_info*> m_infos;
    struct fid_fabric            *m_fabric = NULL;
    struct fid_domain            *m_domain = NULL;
};

/**
 * domain_test once per data progress mode (the suite's parameter, named by
 * progress_name), the domain opened in SetUp; m_obj, the queue or counter
 * the suite opens there, closed in TearDown before the domain unless the
 * test closed it (and set it NULL).
 */
template <typename fid_t>
class progress_domain_test
    : public domain_test, public testing::WithParamInterface<enum fi_progress> {
protected:
    void SetUp() override
    {
        test_base::SetUp();
        open_domain(GetParam());
    }

    void TearDown() override
    {
        if (m_obj != NULL) {
            EXPECT_EQ(0, fi_close(&m_obj->fid));
        }
        domain_test::TearDown();
    }

    fid_t *m_obj = NULL;
};

/** The name of a progress_domain_test's instance: auto or manual. */
std::string progress_name(const testing::TestParamInfo<enum fi_progress> &info);

/** How a fixture's domain is opened. */
struct open_params {
    enum fi_progress progress = FI_PROGRESS_AUTO;
    int              prov_keys = 0;  /* FI_MR_PROV_KEY|VIRT_ADDR|ALLOCATED */
    uint64_t         caps      = 0;  /* asked in the hints */
    enum fi_cq_format cq_format = FI_CQ_FORMAT_CONTEXT;
    uint64_t         cq_bind   = FI_TRANSMIT | FI_RECV;
    std::string      auth_key;       /* the domain's job key, if any */
};

/** The provider's variable that places registrations in shared memory. */
static const char share_env[] = "FI_FIATOMIC_MR_SHARE";

/** The memory registration mode bits of a provider-key domain. */
static const uint64_t prov_key_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR |
                                      FI_MR_ALLOCATED;

class objects {
public:
    ~objects() { close(); }

    /** fi_getinfo + fi_fabric + fi_domain: 0 or the failing call's value. */
    int open_domain(const open_params &p);
    /** address vector (table), CQ, a FI_READ and a FI_WRITE counter (and
     *  with FI_MSG or FI_TAGGED in the caps an FI_SEND and an FI_RECV
     *  one), an enabled
     *  endpoint; needs open_domain. */
    int open_ep();
    void close();

    open_params       params;
    struct fi_info    *info    = NULL;
    struct fid_fabric *fabric  = NULL;
    struct fid_domain *domain  = NULL;
    struct fid_av     *av      = NULL;
    struct fid_cq     *cq      = NULL;
    struct fid_cntr   *rcntr   = NULL;  /* FI_READ */
    struct fid_cntr   *wcntr   = NULL;  /* FI_WRITE */
    struct fid_cntr   *scntr   = NULL;  /* FI_SEND, with FI_MSG/TAGGED */
    struct fid_cntr   *rvcntr  = NULL;  /* FI_RECV, with FI_MSG/TAGGED */
    struct fid_ep     *ep      = NULL;
};

/** A second endpoint of `o`'s domain, on its AV and (for receives) its CQ,
 *  its sends counted by a counter of its own (not queued), enabled; its
 *  address inserted into the AV as *addr. */
void open_sibling_ep(const objects &o, struct fid_ep **ep,
                     struct fid_cntr **sent, fi_addr_t *addr);

} // namespace fiprov_test

#endif
