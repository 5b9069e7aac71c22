/**
 * atomicx guest tests: the UCT contract as uct.h documents it and as UCP's
 * callers rely on it (rc_verbs is the model), one return path per test:
 * interface flush with pending work, endpoint flush queued behind pending
 * requests and dispatched from the queue, flush with UCT_FLUSH_FLAG_CANCEL
 * and endpoint destroy with ops in flight, pending purge, fence.
 */

#include "atomicx_test_uct.h"

#include <gtest/gtest.h>

#include <vector>

using namespace atomicx_test;

class atomicx_uct_contract : public loopback_test {
protected:
    /* A fetching add of `add` to `word` over a new pair of endpoints returns
     * the old value and leaves the sum */
    void expect_new_endpoints_work(uint64_t *word, uint64_t add)
    {
        uint64_t r, before = *word;
        uct_ep_h c, d;

        env.loopback_pair(&c, &d);
        EXPECT_EQ(UCS_OK, env.run(c, UCT_ATOMIC_OP_ADD, 8, true, add, 0,
                                  (uintptr_t)word, rkey.rkey, &r));
        EXPECT_EQ(before, r);
        EXPECT_EQ(before + add, *word);
        uct_ep_destroy(c);
        uct_ep_destroy(d);
    }
};

namespace {

/* A pending request that posts one 32-bit add, or when it is a flush
 * request, starts a flush with a completion */
struct pending_op {
    uct_pending_req_t super;
    uct_ep_h          ep;
    uint64_t          addr;
    uct_rkey_t        rkey;
    unsigned          *posted;  /* adds posted so far, by anyone */
    bool              is_flush;
    unsigned          posted_before_flush; /* adds posted when it ran */
    completion        flush_comp;
    ucs_status_t      flush_status;
    unsigned          calls;

    void init(uct_ep_h ep, uint32_t *counter, uct_rkey_t rkey,
              unsigned *posted, bool is_flush = false);
};

ucs_status_t pending_op_cb(uct_pending_req_t *self)
{
    pending_op *r = ucs_container_of(self, pending_op, super);
    ucs_status_t s;

    ++r->calls;
    if (r->is_flush) {
        r->posted_before_flush = *r->posted;
        s = uct_ep_flush(r->ep, 0, &r->flush_comp.super);
        r->flush_status = s;
        if (s == UCS_OK) {
            r->flush_comp.done   = true;
            r->flush_comp.status = UCS_OK;
        }
        /* like UCP: a flush that started leaves the queue */
        return ((s == UCS_OK) || (s == UCS_INPROGRESS)) ? UCS_OK : s;
    }

    s = uct_ep_atomic32_post(r->ep, UCT_ATOMIC_OP_ADD, 1, r->addr, r->rkey);
    if (s == UCS_OK) {
        ++*r->posted;
    }
    return s;
}

/* A request of ep that adds 1 to *counter (or flushes ep), counting the
 * adds in *posted */
void pending_op::init(uct_ep_h ep, uint32_t *counter, uct_rkey_t rkey,
                      unsigned *posted, bool is_flush)
{
    this->super.func   = pending_op_cb;
    this->ep           = ep;
    this->addr         = (uintptr_t)counter;
    this->rkey         = rkey;
    this->posted       = posted;
    this->is_flush     = is_flush;
    this->calls        = 0;
    this->flush_status = UCS_ERR_NO_MESSAGE;
}

/* Posts 32-bit adds on ep until the send queue is full */
unsigned fill_send_queue(uct_ep_h ep, uint64_t addr, uct_rkey_t rkey)
{
    unsigned n = 0;
    while (uct_ep_atomic32_post(ep, UCT_ATOMIC_OP_ADD, 1, addr, rkey) ==
           UCS_OK) {
        ++n;
    }
    return n;
}

} // namespace


/* uct_iface_flush answers UCS_INPROGRESS, never UCS_ERR_NO_RESOURCE, while
 * an endpoint has requests pending (UCP's worker flush accepts only UCS_OK
 * and UCS_INPROGRESS), and UCS_OK once everything has been executed */
TEST_F(atomicx_uct_contract, iface_flush_with_pending_requests)
{
    ATOMICX_TEST_OPEN_LOOPBACK(std::map<std::string, std::string>{{"TX_QUEUE_LEN", "4"}});
    uint32_t *counter = (uint32_t*)mem.buffer;

    unsigned posted = fill_send_queue(a, (uintptr_t)counter, rkey.rkey);
    const unsigned direct = posted;
    ASSERT_GT(posted, 0u);
    std::vector<pending_op> reqs(16);
    for (auto &r : reqs) {
        r.init(a, counter, rkey.rkey, &posted);
        ASSERT_EQ(UCS_OK, uct_ep_pending_add(a, &r.super, 0));
    }

    ucs_status_t s = uct_iface_flush(env.iface, 0, nullptr);
    EXPECT_EQ(UCS_INPROGRESS, s) << ucs_status_string(s);
    /* with a completion: not supported, as for UCX's RC transports */
    completion c;
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_iface_flush(env.iface, 0, &c.super));

    unsigned answers_other = 0;
    ASSERT_TRUE(env.progress_until([&] {
        s = uct_iface_flush(env.iface, 0, nullptr);
        answers_other += (s != UCS_OK) && (s != UCS_INPROGRESS);
        return s == UCS_OK;
    })) << "the interface flush never completed";
    EXPECT_EQ(0u, answers_other);
    EXPECT_EQ(posted, *counter) << "flushed before every add was executed";
    EXPECT_EQ(direct + reqs.size(), posted);
    for (auto &r : reqs) {
        EXPECT_EQ(1u, r.calls) << "a dispatched request ran twice";
    }

}


/* uct_ep_flush answers UCS_ERR_NO_RESOURCE while requests are pending; the
 * flush then queued behind them (what UCP does) runs when they have been
 * posted, even with more requests queued after it, and its completion comes
 * only after the adds posted before it are done */
TEST_F(atomicx_uct_contract, ep_flush_queued_behind_pending_requests)
{
    ATOMICX_TEST_OPEN_LOOPBACK(std::map<std::string, std::string>{{"TX_QUEUE_LEN", "4"}});
    uint32_t *counter = (uint32_t*)mem.buffer;

    unsigned posted = fill_send_queue(a, (uintptr_t)counter, rkey.rkey);
    ASSERT_GT(posted, 0u);

    const unsigned before = 8, after = 8;
    std::vector<pending_op> reqs(before + 1 + after);
    for (unsigned i = 0; i < reqs.size(); ++i) {
        pending_op &r = reqs[i];
        r.init(a, counter, rkey.rkey, &posted, i == before);
        if (r.is_flush) {
            completion probe;
            EXPECT_EQ(UCS_ERR_NO_RESOURCE, uct_ep_flush(a, 0, &probe.super))
                    << "requests are pending";
        }
        ASSERT_EQ(UCS_OK, uct_ep_pending_add(a, &r.super, 0));
    }

    pending_op &flush = reqs[before];
    bool early = false;
    ASSERT_TRUE(env.progress_until([&] {
        if (flush.flush_comp.done && (*counter < flush.posted_before_flush)) {
            early = true;
        }
        return flush.flush_comp.done && (reqs.back().calls > 0) &&
               (*counter == posted);
    })) << "the queued flush never ran or never completed (calls "
        << flush.calls << ", status " << ucs_status_string(flush.flush_status)
        << ")";
    EXPECT_FALSE(early) << "the flush completed before the adds posted "
                           "before it";
    EXPECT_EQ(1u, flush.calls);
    EXPECT_TRUE((flush.flush_status == UCS_OK) ||
                (flush.flush_status == UCS_INPROGRESS))
            << ucs_status_string(flush.flush_status);
    EXPECT_EQ(UCS_OK, flush.flush_comp.status);
    EXPECT_GE(flush.posted_before_flush, before);
    ASSERT_EQ(UCS_OK, env.flush(a));
    EXPECT_EQ(posted, *counter);

}


/* Flush with UCT_FLUSH_FLAG_CANCEL while fetch ops are in flight: every op
 * completes (executed, or UCS_ERR_CANCELED), so does the flush, the error
 * handler is not called, and the endpoint takes no new op afterwards */
TEST_F(atomicx_uct_contract, flush_cancel_with_ops_in_flight)
{
    struct errors {
        unsigned calls = 0;
    } errs;
    env.set_error_handler([](void *arg, uct_ep_h, ucs_status_t) {
                              ++static_cast<errors*>(arg)->calls;
                              return UCS_OK;
                          }, &errs);
    ATOMICX_TEST_OPEN_LOOPBACK(std::map<std::string, std::string>());
    uint64_t *word = (uint64_t*)mem.buffer;

    const unsigned count = 64;
    std::vector<completion> comps(count);
    std::vector<uint64_t> results(count);
    unsigned started = 0;
    for (unsigned i = 0; i < count; ++i) {
        /* 32-bit ops are CAS loops: several round trips each */
        ucs_status_t s = env.start(a, UCT_ATOMIC_OP_ADD, (i % 2) ? 4 : 8,
                                   true, 1, 0, (uintptr_t)word, rkey.rkey,
                                   &results[i], &comps[i].super);
        if (s == UCS_ERR_NO_RESOURCE) {
            comps[i].done = true;
            continue;
        }
        ASSERT_EQ(UCS_INPROGRESS, s);
        ++started;
    }
    ASSERT_GT(started, 0u);

    completion fc;
    ucs_status_t fs = uct_ep_flush(a, UCT_FLUSH_FLAG_CANCEL, &fc.super);
    ASSERT_TRUE((fs == UCS_OK) || (fs == UCS_INPROGRESS))
            << ucs_status_string(fs);
    ASSERT_TRUE(env.progress_until([&] {
        for (auto &c : comps) {
            if (!c.done) {
                return false;
            }
        }
        return (fs == UCS_OK) || fc.done;
    })) << "ops or the canceling flush never completed";

    unsigned ok = 0, canceled = 0, other = 0;
    for (unsigned i = 0; i < count; ++i) {
        if (comps[i].status == UCS_ERR_NO_MESSAGE) {
            continue; /* never started */
        }
        ok       += (comps[i].status == UCS_OK);
        canceled += (comps[i].status == UCS_ERR_CANCELED);
        other    += (comps[i].status != UCS_OK) &&
                    (comps[i].status != UCS_ERR_CANCELED);
    }
    EXPECT_EQ(started, ok + canceled);
    EXPECT_EQ(0u, other);
    EXPECT_EQ(0u, errs.calls) << "a canceled endpoint reported an error";

    /* Unusable for new ops, and a later flush does not hang */
    uint64_t r;
    completion c2;
    ucs_status_t s = env.start(a, UCT_ATOMIC_OP_ADD, 8, true, 1, 0,
                               (uintptr_t)word, rkey.rkey, &r, &c2.super);
    EXPECT_TRUE(UCS_STATUS_IS_ERR(s) && (s != UCS_ERR_NO_RESOURCE))
            << ucs_status_string(s);
    EXPECT_EQ(UCS_OK, uct_ep_flush(a, UCT_FLUSH_FLAG_CANCEL, nullptr));
    EXPECT_EQ(UCS_OK, uct_iface_flush(env.iface, 0, nullptr));
    uct_ep_destroy(a);
    uct_ep_destroy(b);
    a = b = nullptr;

    /* The interface goes on working with new endpoints */
    expect_new_endpoints_work(word, 5);
}


/* Destroying an endpoint with ops in flight: each op's completion is called
 * once (executed, or UCS_ERR_CANCELED), none after the destroy, and the
 * interface and its other endpoints go on working */
TEST_F(atomicx_uct_contract, ep_destroy_with_ops_in_flight)
{
    ATOMICX_TEST_OPEN_LOOPBACK(std::map<std::string, std::string>());
    uint64_t *word = (uint64_t*)mem.buffer;

    struct counted {
        completion comp;
        unsigned   calls = 0;
    };
    const unsigned count = 48;
    std::vector<counted> comps(count);
    std::vector<uint64_t> results(count);
    unsigned started = 0;
    for (unsigned i = 0; i < count; ++i) {
        comps[i].comp.super.func = [](uct_completion_t *self) {
            counted *c = ucs_container_of(self, counted, comp.super);
            ++c->calls;
            c->comp.done   = true;
            c->comp.status = self->status;
        };
        ucs_status_t s = env.start(a, UCT_ATOMIC_OP_XOR, (i % 2) ? 4 : 8,
                                   true, 1, 0, (uintptr_t)word, rkey.rkey,
                                   &results[i], &comps[i].comp.super);
        if (s == UCS_INPROGRESS) {
            ++started;
        }
    }
    ASSERT_GT(started, 0u);

    uct_ep_destroy(a);
    a = nullptr;
    unsigned completed = 0, bad = 0;
    for (auto &c : comps) {
        completed += c.calls;
        bad       += (c.calls > 1) ||
                     ((c.calls == 1) && (c.comp.status != UCS_OK) &&
                      (c.comp.status != UCS_ERR_CANCELED));
    }
    EXPECT_EQ(started, completed) << "every op in flight completes by the "
                                     "end of the destroy";
    EXPECT_EQ(0u, bad);

    /* Nothing of the destroyed endpoint surfaces later */
    for (int i = 0; i < 1000; ++i) {
        env.progress();
    }
    completed = 0;
    for (auto &c : comps) {
        completed += c.calls;
    }
    EXPECT_EQ(started, completed);
    uct_ep_destroy(b);
    b = nullptr;
    EXPECT_EQ(UCS_OK, env.flush(nullptr));

    /* The interface goes on working with new endpoints */
    expect_new_endpoints_work(word, 3);
}


/* pending purge hands every queued request to the callback once, in order;
 * afterwards nothing of them runs, and flush answers at once again */
TEST_F(atomicx_uct_contract, pending_purge)
{
    ATOMICX_TEST_OPEN_LOOPBACK(std::map<std::string, std::string>{{"TX_QUEUE_LEN", "2"}});
    uint32_t *counter = (uint32_t*)mem.buffer;

    unsigned posted = fill_send_queue(a, (uintptr_t)counter, rkey.rkey);
    std::vector<pending_op> reqs(10);
    for (auto &r : reqs) {
        r.init(a, counter, rkey.rkey, &posted);
        ASSERT_EQ(UCS_OK, uct_ep_pending_add(a, &r.super, 0));
    }

    std::vector<uct_pending_req_t*> purged;
    uct_ep_pending_purge(a, [](uct_pending_req_t *req, void *arg) {
                             static_cast<std::vector<uct_pending_req_t*>*>(
                                     arg)->push_back(req);
                         }, &purged);
    ASSERT_EQ(reqs.size(), purged.size());
    for (size_t i = 0; i < reqs.size(); ++i) {
        EXPECT_EQ(&reqs[i].super, purged[i]);
    }

    ASSERT_EQ(UCS_OK, env.flush(a));
    for (int i = 0; i < 1000; ++i) {
        env.progress();
    }
    for (auto &r : reqs) {
        EXPECT_EQ(0u, r.calls) << "a purged request ran";
    }
    EXPECT_EQ(posted, *counter);
    EXPECT_EQ(UCS_OK, uct_iface_flush(env.iface, 0, nullptr));
    /* nothing pending, nothing in flight: flush answers UCS_OK at once */
    completion c;
    EXPECT_EQ(UCS_OK, uct_ep_flush(a, 0, &c.super));

}


/* pending_add answers UCS_ERR_BUSY when the endpoint has resources (the
 * caller retries the op), and the endpoint and interface fences answer
 * UCS_OK */
TEST_F(atomicx_uct_contract, pending_add_busy_and_fence)
{
    ATOMICX_TEST_OPEN_LOOPBACK(std::map<std::string, std::string>());

    unsigned posted = 0;
    pending_op r;
    r.init(a, (uint32_t*)mem.buffer, rkey.rkey, &posted);
    EXPECT_EQ(UCS_ERR_BUSY, uct_ep_pending_add(a, &r.super, 0));
    EXPECT_EQ(UCS_OK, uct_ep_fence(a, 0));
    EXPECT_EQ(UCS_OK, uct_iface_fence(env.iface, 0));
    completion c;
    EXPECT_EQ(UCS_OK, uct_ep_flush(a, 0, &c.super)) << "nothing in flight";
    EXPECT_EQ(UCS_OK, uct_ep_flush(a, UCT_FLUSH_FLAG_LOCAL, nullptr));
    EXPECT_EQ(0u, r.calls);

}
