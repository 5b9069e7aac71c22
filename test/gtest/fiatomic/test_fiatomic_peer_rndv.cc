/*
 * A foreign peer's requests through UCP's own protocols: a raw UCP client
 * (not libfiatomic) sends target-side requests to a target context in this
 * process, forced eager or by rendezvous, with and without the reply flag.
 * Most are refused (longer than any valid request, or shorter than a
 * header), some are well-formed
 * but wrong (a bad token), some valid. The target must stay up, answer each
 * request that has a reply endpoint exactly once (valid ones with UCS_OK,
 * the others with an error), execute each valid one exactly once (none
 * without a reply endpoint), decline rendezvous messages on its reply id,
 * serve another peer afterwards, and neither side may log a UCX error or
 * warning. Every wait is bounded: a descriptor answered twice shows as a
 * crash, or (UCX release builds, no assertions) as a send or reply that
 * never completes.
 */
#include "fiatomic_test_env.h"
#include "fiatomic_test_raw.h"
#include "test_ucx_log.h"

extern "C" {
#include "fiatomic_wire.h"
}

#include <atomic>
#include <deque>
#include <memory>
#include <thread>
#include <tuple>

using namespace fiatomic_test;

namespace {

/* The longest valid request: header, operands and compare values. */
const size_t REQUEST_MAX = sizeof(fiatomic_wire_req_t) +
                           2 * FIATOMIC_WIRE_MAX_PAYLOAD;

const unsigned REQUESTS     = 2000; /* per test */
const unsigned REPLY_ID_MSGS = 200; /* rendezvous ones on the reply id */
const unsigned WINDOW       = 32;   /* requests without a reply yet */
const double   DEADLINE_SEC = 30.0; /* for everything of one test */

enum protocol { EAGER, RNDV };

typedef std::tuple<std::string, protocol, bool> rndv_param;

class peer_rndv : public ::testing::TestWithParam<rndv_param> {
protected:
    void SetUp() override
    {
        std::string missing = transport_missing(tl()), error;

        if (!missing.empty()) {
            GTEST_SKIP() << missing;
        }
        ASSERT_EQ(UCS_OK, ucp_setup_create({{"TLS", tl()}}, NULL, true,
                                           &m_setup, &error, m_mt))
                << error;
        ASSERT_NO_FATAL_FAILURE(expose());
        ASSERT_NE(0u, m_hdr.flags & FIATOMIC_KEY_F_TARGET);
        ASSERT_EQ(UCS_OK, ucp_worker_get_address(m_setup.worker, &m_address,
                                                 &m_address_length));
        test_common::ucx_log_count_reset();
        ASSERT_TRUE(m_client.start(tl(), address(), &error)) << error;
    }

    void TearDown() override
    {
        m_client_p.reset();
        m_other_p.reset();
        if (m_address != NULL) {
            ucp_worker_release_address(m_setup.worker, m_address);
        }
        if (m_mem != NULL) {
            fiatomic_mem_unexpose(m_mem);
        }
        ucp_setup_destroy(&m_setup);
    }

    const std::string &tl() const { return std::get<0>(GetParam()); }
    bool rndv() const { return std::get<1>(GetParam()) == RNDV; }
    bool with_reply() const { return std::get<2>(GetParam()); }

    std::vector<uint8_t> address() const
    {
        return std::vector<uint8_t>((uint8_t*)m_address,
                                    (uint8_t*)m_address + m_address_length);
    }

    uint32_t send_flags(bool reply) const
    {
        return (rndv() ? UCP_AM_SEND_FLAG_RNDV : UCP_AM_SEND_FLAG_EAGER) |
               (reply ? UCP_AM_SEND_FLAG_REPLY : 0);
    }

    void expose()
    {
        fiatomic_mem_params_t params;
        void *key;
        size_t key_size;

        /* 8 bytes past a 64-byte boundary: UCP maps from a lower address,
         * the key must still say the user's */
        memset(m_words, 0, sizeof(m_words));
        memset(&params, 0, sizeof(params));
        params.field_mask = FIATOMIC_MEM_PARAM_FIELD_ADDRESS |
                            FIATOMIC_MEM_PARAM_FIELD_LENGTH;
        params.address    = &m_words[1];
        params.length     = sizeof(m_words) - sizeof(m_words[0]);
        ASSERT_EQ(UCS_OK, fiatomic_mem_expose(m_setup.fia, &params, &m_mem));
        ASSERT_EQ(UCS_OK, fiatomic_mem_pack_key(m_mem, &key, &key_size));
        ASSERT_GE(key_size, sizeof(m_hdr));
        memcpy(&m_hdr, key, sizeof(m_hdr));
        fiatomic_key_release(key);
        ASSERT_EQ((uintptr_t)&m_words[1], m_hdr.address)
                << "the key names other memory than was exposed";
        ASSERT_EQ(params.length, m_hdr.length);
    }

    /* fetch-add 1 on the counter, with `token` */
    std::vector<uint8_t> fetch_add(uint64_t token, uint64_t id) const
    {
        uint64_t one = 1;

        return wire_message(wire_fetch_sum(FI_UINT64, 1, m_hdr.region, token,
                                           m_hdr.address, id),
                            &one, sizeof(one));
    }

    /* A request longer than any valid one: a valid header (the fetch-add)
     * followed by `length` bytes in all. */
    std::vector<uint8_t> too_long(size_t length) const
    {
        std::vector<uint8_t> msg = fetch_add(m_hdr.token, 0x1009);

        msg.resize(length, 0x5a);
        return msg;
    }

    void progress_both()
    {
        ucp_worker_progress(m_setup.worker);
        m_client.progress();
        if ((m_other_p != NULL) && (m_other.worker() != NULL)) {
            m_other.progress();
        }
    }

    /* `client` sends the valid fetch-add eagerly with the reply flag, as
     * libfiatomic does; its reply's status and value. */
    bool call(raw_client *client, const std::vector<uint8_t> &msg,
              ucs_status_t *status, uint64_t *value, std::string *error)
    {
        std::deque<ucs_status_ptr_t> pending;
        unsigned replies = client->replies();
        fiatomic_wire_reply_t reply;
        ucs_status_ptr_t sptr;

        sptr = client->send(msg.data(), msg.size(),
                            UCP_AM_SEND_FLAG_EAGER | UCP_AM_SEND_FLAG_REPLY);
        if (UCS_PTR_IS_ERR(sptr)) {
            *error = ucs_status_string(UCS_PTR_STATUS(sptr));
            return false;
        }
        if (sptr != NULL) {
            pending.push_back(sptr);
        }
        if (!drain(&pending, now_sec() + 10.0, [&]() {
                    return client->replies() > replies;
                }, error)) {
            return false;
        }
        const std::vector<uint8_t> &raw = client->last_reply();
        if (raw.size() != sizeof(reply) + sizeof(*value)) {
            *error = "a reply of " + std::to_string(raw.size()) + " bytes";
            return false;
        }
        memcpy(&reply, raw.data(), sizeof(reply));
        memcpy(value, raw.data() + sizeof(reply), sizeof(*value));
        *status = (ucs_status_t)reply.status;
        return true;
    }

    /* Progress until every request in `pending` completed (each must
     * complete with UCS_OK: a declined rendezvous does too) and `done()`
     * holds, or the deadline passes. */
    template <typename F>
    bool drain(std::deque<ucs_status_ptr_t> *pending, double deadline,
               F done, std::string *error)
    {
        ucs_status_t status;

        for (;;) {
            while (!pending->empty()) {
                status = ucp_request_check_status(pending->front());
                if (status == UCS_INPROGRESS) {
                    break;
                }
                ucp_request_free(pending->front());
                pending->pop_front();
                if (status != UCS_OK) {
                    *error = std::string("a send failed: ") +
                             ucs_status_string(status);
                    return false;
                }
            }
            if (pending->empty() && done()) {
                return true;
            }
            if (now_sec() > deadline) {
                *error = std::to_string(pending->size()) +
                         " sends still in progress, " +
                         std::to_string(m_client.replies()) +
                         " replies at the deadline";
                return false;
            }
            progress_both();
        }
    }

    /* Queue one send; an immediate error fails it. */
    bool post(std::deque<ucs_status_ptr_t> *pending, const void *msg,
              size_t length, uint32_t flags, unsigned am_offset,
              std::string *error)
    {
        ucs_status_ptr_t sptr = m_client.send(msg, length, flags, am_offset);

        if (UCS_PTR_IS_ERR(sptr)) {
            *error = std::string("ucp_am_send_nbx: ") +
                     ucs_status_string(UCS_PTR_STATUS(sptr));
            return false;
        }
        if (sptr != NULL) {
            pending->push_back(sptr);
        }
        return true;
    }

    void refused_requests();

    bool               m_mt       = false; /* a multi-threaded worker */
    ucp_setup          m_setup    = {NULL, NULL, NULL};
    fiatomic_mem_h     m_mem      = NULL;
    ucp_address_t      *m_address = NULL;
    size_t             m_address_length = 0;
    fiatomic_key_hdr_t m_hdr;
    /* the raw peers go before the target (TearDown) */
    std::unique_ptr<raw_client> m_client_p{new raw_client()};
    std::unique_ptr<raw_client> m_other_p{new raw_client()};
    raw_client         &m_client = *m_client_p;
    raw_client         &m_other  = *m_other_p;
    alignas(64) uint64_t m_words[65]; /* [0]: a guard, [1] the counter */
};

/* Thousands of requests from one peer, most of them refused; then another
 * peer is served. */
void peer_rndv::refused_requests()
{
    const std::vector<uint8_t> lengths_refused[] = {
        too_long(REQUEST_MAX + 1), too_long(16384), too_long(65636)
    };
    const std::vector<uint8_t> valid = fetch_add(m_hdr.token, 0x77);
    const std::vector<uint8_t> bad   = fetch_add(m_hdr.token ^ 1, 0x78);
    const std::vector<uint8_t> too_short(valid.begin(), valid.begin() + 16);
    const uint32_t flags = send_flags(with_reply());
    std::deque<ucs_status_ptr_t> pending;
    unsigned sent = 0, valid_sent = 0, bad_sent = 0, refused_sent = 0;
    double start = now_sec(), deadline = start + DEADLINE_SEC;
    std::string error;
    uint64_t old;

    while (sent < REQUESTS) {
        /* a reply slot for each: the target drops requests of a peer that
         * leaves more than its bound of replies unread */
        while ((sent < REQUESTS) && (pending.size() < WINDOW) &&
               (!with_reply() || (sent - m_client.replies() < WINDOW))) {
            const std::vector<uint8_t> *msg;

            if ((sent % 8) == 0) {
                msg = &valid;
                ++valid_sent;
            } else if ((sent % 8) == 1) {
                msg = &bad;
                ++bad_sent;
            } else if ((sent % 8) == 2) {
                msg = &too_short; /* shorter than a header */
                ++refused_sent;
            } else {
                msg = &lengths_refused[sent % 3];
                ++refused_sent;
            }
            ASSERT_TRUE(post(&pending, msg->data(), msg->size(), flags,
                             FIATOMIC_WIRE_AM_REQUEST, &error))
                    << "request " << sent << ": " << error;
            ++sent;
        }
        ASSERT_TRUE(drain(&pending, deadline, [&]() {
                    return !with_reply() ||
                           (sent - m_client.replies() < WINDOW);
                }, &error))
                << "after " << sent << " requests: " << error;
    }

    /* Every reply, and nothing more: a little longer for strays. */
    ASSERT_TRUE(drain(&pending, deadline, [&]() {
                return !with_reply() || (m_client.replies() >= sent);
            }, &error)) << error;
    for (double end = now_sec() + 0.2; now_sec() < end;) {
        progress_both();
    }
    double elapsed = now_sec() - start;

    std::cout << "[ INFO     ] " << tl() << (rndv() ? " rndv" : " eager")
              << (with_reply() ? " with" : " without") << " reply flag: "
              << sent << " requests (" << refused_sent << " too short or long, "
              << bad_sent << " bad token, " << valid_sent << " valid) in "
              << elapsed << " s, " << m_client.replies() << " replies ("
              << m_client.ok_replies() << " ok, " << m_client.error_replies()
              << " errors), counter " << m_words[1] << std::endl;

    EXPECT_EQ(0u, m_client.bad_replies());
    if (with_reply() && m_mt && rndv()) {
        /* a rendezvous that came while another thread held the context was
         * declined at once and answered with an error, valid or not: each
         * answered once, executed exactly when answered UCS_OK */
        EXPECT_EQ(sent, m_client.replies());
        EXPECT_LE(m_client.ok_replies(), valid_sent);
        EXPECT_EQ(sent - m_client.ok_replies(), m_client.error_replies());
        EXPECT_EQ(m_client.ok_replies(), m_words[1])
                << "requests executed and answered UCS_OK";
    } else if (with_reply()) {
        EXPECT_EQ(sent, m_client.replies());
        EXPECT_EQ(valid_sent, m_client.ok_replies());
        EXPECT_EQ(refused_sent + bad_sent, m_client.error_replies());
        EXPECT_EQ(valid_sent, m_words[1]) << "valid requests executed";
    } else {
        /* nobody could learn the outcome: nothing executed, no reply */
        EXPECT_EQ(0u, m_client.replies());
        EXPECT_EQ(0u, m_words[1]);
    }

    /* Rendezvous messages on the reply id: no request of ours waits for
     * them, they are declined. */
    if (rndv()) {
        for (unsigned i = 0; i < REPLY_ID_MSGS; ++i) {
            const std::vector<uint8_t> &msg = lengths_refused[i % 3];

            ASSERT_TRUE(post(&pending, msg.data(), msg.size(), flags,
                             FIATOMIC_WIRE_AM_REPLY, &error)) << error;
            ASSERT_TRUE(drain(&pending, deadline, [&]() {
                        return pending.size() < WINDOW;
                    }, &error)) << error;
        }
        ASSERT_TRUE(drain(&pending, deadline, []() { return true; }, &error))
                << "on the reply id: " << error;
    }

    /* Another peer is served, and so is this one. */
    old = m_words[1];
    ASSERT_TRUE(m_other.start(tl(), address(), &error)) << error;
    for (raw_client *client : {&m_other, &m_client}) {
        ucs_status_t status;
        uint64_t value;

        ASSERT_TRUE(call(client, valid, &status, &value, &error)) << error;
        EXPECT_EQ(UCS_OK, status);
        EXPECT_EQ(old, value);
        ++old;
    }
    EXPECT_EQ(old, m_words[1]);
    EXPECT_EQ(0u, m_words[0]) << "the word before the exposed memory";
    EXPECT_EQ(0u, test_common::ucx_log_count())
            << "UCX logged errors or warnings";
}

TEST_P(peer_rndv, refused_requests)
{
    refused_requests();
}

/* The same with a multi-threaded worker while another thread keeps taking
 * the context's lock: eager messages that come in meanwhile wait in the
 * context's queue for the thread that lets the lock go; a rendezvous is
 * declined inside UCP's callback and answered with an error (UCX declines
 * one outside its callback without the worker's lock). */
class peer_rndv_contended : public peer_rndv {
protected:
    peer_rndv_contended() { m_mt = true; }
};

TEST_P(peer_rndv_contended, refused_requests)
{
    std::atomic<bool> stop(false);
    unsigned long rounds = 0;
    std::thread contender([&]() {
        fiatomic_cntr_h cntr;

        while (!stop.load()) {
            if (fiatomic_cntr_open(m_setup.fia, &cntr) == UCS_OK) {
                fiatomic_cntr_close(cntr);
            }
            ++rounds;
        }
    });

    refused_requests();
    stop = true;
    contender.join();
    std::cout << "[ INFO     ] " << rounds << " lock rounds of the other "
              << "thread" << std::endl;
}

std::string param_name(const ::testing::TestParamInfo<rndv_param> &info)
{
    return std::get<0>(info.param) +
           ((std::get<1>(info.param) == RNDV) ? "_rndv" : "_eager") +
           (std::get<2>(info.param) ? "_reply" : "_noreply");
}

INSTANTIATE_TEST_SUITE_P(
        tl, peer_rndv,
        ::testing::Combine(::testing::Values(std::string("tcp"),
                                             std::string("posix")),
                           ::testing::Values(EAGER, RNDV),
                           ::testing::Values(true, false)),
        param_name);

INSTANTIATE_TEST_SUITE_P(
        tl, peer_rndv_contended,
        ::testing::Combine(::testing::Values(std::string("tcp"),
                                             std::string("posix")),
                           ::testing::Values(EAGER, RNDV),
                           ::testing::Values(true, false)),
        param_name);

} // namespace
