/**
 * SipHash-2-4 as the paper specifies it: the key and message read as
 * little-endian 64-bit words, two compression rounds per word, four
 * finalisation rounds. Used as a MAC, not as a hash table's hash.
 */
#include "fip_mac.h"

#include <string.h>

#define FIP_ROTL(_x, _b) (uint64_t)(((_x) << (_b)) | ((_x) >> (64 - (_b))))

static uint64_t fip_mac_le64(const uint8_t *p)
{
    uint64_t v = 0;
    int i;

    for (i = 7; i >= 0; --i) {
        v = (v << 8) | p[i];
    }
    return v;
}

static void fip_sip_round(uint64_t v[4])
{
    v[0] += v[1]; v[1] = FIP_ROTL(v[1], 13); v[1] ^= v[0];
    v[0] = FIP_ROTL(v[0], 32);
    v[2] += v[3]; v[3] = FIP_ROTL(v[3], 16); v[3] ^= v[2];
    v[0] += v[3]; v[3] = FIP_ROTL(v[3], 21); v[3] ^= v[0];
    v[2] += v[1]; v[1] = FIP_ROTL(v[1], 17); v[1] ^= v[2];
    v[2] = FIP_ROTL(v[2], 32);
}

uint64_t fip_siphash24(const uint8_t key[16], const void *in, size_t len)
{
    const uint8_t *p = in;
    uint64_t k0      = fip_mac_le64(key);
    uint64_t k1      = fip_mac_le64(key + 8);
    uint64_t v[4]    = {k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull,
                        k0 ^ 0x6c7967656e657261ull, k1 ^ 0x7465646279746573ull};
    uint8_t last[8]  = {0};
    size_t left      = len & 7;
    uint64_t m;
    size_t i;

    for (i = 0; i + 8 <= len; i += 8) {
        m     = fip_mac_le64(p + i);
        v[3] ^= m;
        fip_sip_round(v);
        fip_sip_round(v);
        v[0] ^= m;
    }
    memcpy(last, p + (len - left), left);
    m     = fip_mac_le64(last) | ((uint64_t)(len & 0xff) << 56);
    v[3] ^= m;
    fip_sip_round(v);
    fip_sip_round(v);
    v[0] ^= m;
    v[2] ^= 0xff;
    for (i = 0; i < 4; ++i) {
        fip_sip_round(v);
    }
    return v[0] ^ v[1] ^ v[2] ^ v[3];
}

void fip_mac_key_derive(const void *job_key, size_t len, uint8_t key[16])
{
    static const uint8_t k0[16] = "fiatomic-job-k0";
    static const uint8_t k1[16] = "fiatomic-job-k1";
    uint64_t a = fip_siphash24(k0, job_key, len);
    uint64_t b = fip_siphash24(k1, job_key, len);
    int i;

    for (i = 0; i < 8; ++i) {
        key[i]     = (uint8_t)(a >> (8 * i));
        key[8 + i] = (uint8_t)(b >> (8 * i));
    }
}
