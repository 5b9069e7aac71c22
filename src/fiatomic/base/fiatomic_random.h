/**
 * Secrets from the kernel's CSPRNG (fiatomic_random.c).
 */
#ifndef FIATOMIC_RANDOM_H_
#define FIATOMIC_RANDOM_H_

#include <ucs/type/status.h>

#include <stddef.h>
#include <stdint.h>

ucs_status_t fiatomic_random_bytes(void *buf, size_t length);
/** A nonzero 64-bit secret, independent of every other one. */
ucs_status_t fiatomic_random_token(uint64_t *token_p);

#endif
