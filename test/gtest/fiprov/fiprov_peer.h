/**
 * A second process for the provider's two-process tests: the test binary
 * runs itself again (fork and exec, so the peer starts with a fresh UCX),
 * the peer opens the provider as a program would, registers a region for
 * remote atomics and tells the test its fi_getname address, its key and
 * the region's remote address over a pipe. The test then sets and reads
 * the region's bytes through the peer, has the peer run fetch-adds of its
 * own on it, or replace its region. Every wait on the peer is bounded.
 */
#ifndef FIPROV_PEER_H_
#define FIPROV_PEER_H_

#include "fiprov_fixture.h"

#include <stdint.h>
#include <sys/types.h>

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

    /** Set region bytes [offset, offset + bytes.size()). */
    void set(size_t offset, const std::vector<uint8_t> &bytes);
    /** Read region bytes. */
    std::vector<uint8_t> get(size_t offset, size_t len);
    /** The peer fetch-adds 1 (FI_UINT64) n times at offset through its own
     *  endpoint to its own address; the values it fetched. */
    std::vector<uint64_t> fetch_add(size_t offset, uint64_t n);
    /** The peer closes its region and registers a new one: the new key. */
    uint64_t replace_region();

    std::vector<uint8_t> addr;  /* fi_getname */
    uint64_t             key  = 0;
    uint64_t             base = 0;  /* the region's remote address */

private:
    void command(char cmd, const void *buf, size_t len,
                 std::vector<uint8_t> *reply);

    pid_t m_pid    = -1;
    int   m_to     = -1;
    int   m_from   = -1;
};

/** The peer process's main (the binary started with peer_flag). */
int peer_main(int argc, char **argv);

/** argv[1] that makes the test binary a peer. */
static const char peer_flag[] = "--fiprov-peer";

} // namespace fiprov_test

#endif
