/**
 * A second process for the provider's two-process tests: the test binary
 * runs itself again (fork and exec, so the peer starts with a fresh UCX),
 * the peer opens the provider as a program would, registers a region for
 * remote atomics and tells the test its fi_getname address, its key and
 * the region's remote address over a pipe. The test then sets and reads
 * the region's bytes through the peer, has the peer run fetch-adds of its
 * own on it, replace its region, or echo messages (untagged or tagged)
 * back through its own endpoint. Every wait on the peer is bounded.
 */
#ifndef FIPROV_PEER_H_
#define FIPROV_PEER_H_

#include "fiprov_fixture.h"

#include <stdint.h>
#include <sys/types.h>

#include <ostream>
#include <set>
#include <string>
#include <vector>

namespace fiprov_test {

/** The peer's region: bytes. */
static const size_t peer_region_len = 64 * 1024;

class peer {
public:
    ~peer() { stop(); }

    /** Start the peer with the domain parameters (UCX_TLS is inherited). */
    void start(const open_params &p);
    /** Tell the peer to close and wait for its exit status (0: clean). */
    int stop();
    /** Kill the peer (SIGKILL: it closes nothing) and reap it. */
    void kill_now();
    /** The peer stops progressing its domain for ms milliseconds (it
     *  sleeps); returns at once: finish with pause_wait(). */
    void pause_start(uint64_t ms);
    /** After pause_start: true once the peer answered (bounded). */
    bool pause_wait();
    /** Its process id (-1 when not running). */
    pid_t pid() const { return m_pid; }

    /** Set region bytes [offset, offset + bytes.size()). */
    void set(size_t offset, const std::vector<uint8_t> &bytes);
    /** Read region bytes. */
    std::vector<uint8_t> get(size_t offset, size_t len);
    /** The peer fetch-adds 1 (FI_UINT64) n times at offset through its own
     *  endpoint to its own address; the values it fetched. */
    std::vector<uint64_t> fetch_add(size_t offset, uint64_t n);
    /** fetch_add, returning at once: finish with fetch_add_wait() (the
     *  values the peer fetched; none if it failed or did not answer). */
    void fetch_add_start(size_t offset, uint64_t n);
    std::vector<uint64_t> fetch_add_wait();
    /** The peer closes its region and registers a new one: the new key. */
    uint64_t replace_region();
    /** Ask the peer to close its domain and exit as soon as the 8 bytes at
     *  offset hold value (it polls them, progressing its domain); returns
     *  at once: finish with leave_wait(). */
    void leave_when(size_t offset, uint64_t value);
    /** The peer receives n messages (receives of `size` bytes, posted one
     *  at a time) and sends each back to `to` (an fi_getname address) from
     *  its own endpoint, with remote CQ data one above the message's when
     *  it had some; returns at once: finish with echo_wait(). */
    void echo_start(uint64_t n, uint64_t size,
                    const std::vector<uint8_t> &to);
    /** After echo_start: 0 once the peer echoed all and its sends
     *  completed, else the peer's failure code (waits at most
     *  pipe_timeout_ms, reading `progress` meanwhile: this process's
     *  domain progresses under manual progress too). */
    int echo_wait(struct fid_cntr *progress);
    /** echo_start for tagged messages: the peer posts n tagged receives
     *  that take any tag (one at a time) and sends each message back with
     *  its tag (fi_tsend, or fi_tsenddata with remote CQ data one above
     *  the message's); finish with echo_wait(). */
    void tagged_echo_start(uint64_t n, uint64_t size,
                           const std::vector<uint8_t> &to);
    /** The peer sends n messages of `size` bytes (pattern_byte(i, k) at
     *  byte k of message i) to `to`, waits for their send completions,
     *  then closes its domain and exits at once; returns at once: finish
     *  with leave_wait(). */
    void send_and_leave(uint64_t n, uint64_t size,
                        const std::vector<uint8_t> &to);

    /** The peer sends n messages of `size` bytes (at least 8) to `to`:
     *  message i starts with seed << 32 | i (8 bytes, host order), then
     *  stream_byte(seed, i, k) at byte k; tagged (tag stream_tag(i)) when
     *  `tagged`; then one tagged message of tag stream_fence and 8 bytes,
     *  which arrives after them all. Returns at once: finish with
     *  echo_wait() (0 once all its sends completed). */
    void stream_start(uint64_t n, uint64_t size, uint32_t seed, bool tagged,
                      const std::vector<uint8_t> &to);

    /** After leave_when: the peer's exit status (0: saw the value, closed
     *  cleanly), waiting at most pipe_timeout_ms. */
    int leave_wait();

    std::vector<uint8_t> addr;  /* fi_getname */
    uint64_t             key  = 0;
    uint64_t             base = 0;  /* the region's remote address */

private:
    void command(char cmd, const void *buf, size_t len,
                 std::vector<uint8_t> *reply);
    /* a command that takes a count, a size and an fi_getname address */
    void messages_start(char cmd, uint64_t n, uint64_t size,
                        const std::vector<uint8_t> &to);

    pid_t m_pid    = -1;
    int   m_to     = -1;
    int   m_from   = -1;
};

/** Byte k of message i of send_and_leave. */
static inline uint8_t pattern_byte(uint64_t i, uint64_t k)
{
    return (uint8_t)(i * 31 + k * 7 + 1);
}

/** Byte k (from 8) of message i of stream_start's stream `seed`. */
static inline uint8_t stream_byte(uint32_t seed, uint64_t i, uint64_t k)
{
    return (uint8_t)(seed * 101 + i * 31 + k * 7 + 1);
}

/** The tag of message i of a tagged stream, and of the fence after it. */
static inline uint64_t stream_tag(uint64_t i)
{
    return 0x7000 | (i & 0xfff);
}
static const uint64_t stream_fence = 0xfeedull;

/** How a two-process test runs: transports, progress, key mode. */
struct peer_param {
    const char       *tls;
    enum fi_progress progress;
    int              prov_keys;
    int              share = 0; /* FI_FIATOMIC_MR_SHARE=1 in both */
};

std::ostream &operator<<(std::ostream &os, const peer_param &p);

/** The instantiations every two-process suite runs: shared memory
 *  (UCX_TLS=posix, addresses naming the published worker address) and tcp,
 *  each key mode and each progress mode once. */
extern const std::vector<peer_param> peer_params;
/** Shared memory with tcp's connection manager (UCX_TLS=posix,self,tcp:
 *  addresses naming the listener, the data on posix), for a few suites. */
extern const std::vector<peer_param> peer_params_sockaddr;
/** Shared memory with registrations placed in shared memory
 *  (FI_FIATOMIC_MR_SHARE=1 in this process and the peer), each key mode
 *  and each progress mode once. */
extern const std::vector<peer_param> peer_params_share;
std::string peer_param_name(const testing::TestParamInfo<peer_param> &info);

/** How long a two-process test waits for a completion. */
static const int peer_wait_ms = 30000;

/**
 * A two-process test: UCX_TLS set, the peer started, this process's
 * objects open (CQ in cq_format(), FI_READ and FI_WRITE counters) and
 * the peer's address in the vector (m_dest).
 */
class peer_test : public test_base,
                  public testing::WithParamInterface<peer_param> {
protected:
    /** The capabilities this process asks for. */
    virtual uint64_t caps() const { return FI_ATOMIC | FI_RMA; }
    /** Its CQ's format. */
    virtual enum fi_cq_format cq_format() const
    {
        return FI_CQ_FORMAT_DATA;
    }

    void SetUp() override;
    void TearDown() override;

    /** Wait for the counters to reach their values, then take the CQ's
     *  entries (each with the flag `kind`): their contexts. */
    void wait_complete(uint64_t reads, uint64_t writes, uint64_t kind,
                       std::multiset<void*> *contexts);

    peer        m_peer;
    objects     m_o;
    fi_addr_t   m_dest    = FI_ADDR_UNSPEC;
    bool        m_had_tls = false;
    std::string m_saved_tls;
    bool        m_had_share = false;
    std::string m_saved_share;
};

/** The peer process's main (the binary started with peer_flag). */
int peer_main(int argc, char **argv);

/** The variable the peer takes its region's remote access from (a number:
 *  FI_REMOTE_READ / FI_REMOTE_WRITE bits); both when unset. */
static const char peer_access_env[] = "FIPROV_PEER_ACCESS";

/** argv[1] that makes the test binary a peer. */
static const char peer_flag[] = "--fiprov-peer";

} // namespace fiprov_test

#endif
