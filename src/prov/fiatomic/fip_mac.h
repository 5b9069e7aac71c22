/**
 * SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast short-input PRF",
 * 2012): the keyed MAC of the provider's job admission (fip_admit.c).
 * Self-contained, so that the unit test builds it alone.
 */
#ifndef FIP_MAC_H_
#define FIP_MAC_H_

#include <stddef.h>
#include <stdint.h>

/** The 64-bit SipHash-2-4 of `len` bytes of `in` under the 16-byte `key`. */
uint64_t fip_siphash24(const uint8_t key[16], const void *in, size_t len);

/** A 16-byte MAC key from a job key of any length (two SipHash-2-4 of its
 *  bytes under fixed, distinct keys). */
void fip_mac_key_derive(const void *job_key, size_t len, uint8_t key[16]);

#endif
