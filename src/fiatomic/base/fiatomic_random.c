/**
 * Secrets from the kernel's CSPRNG (getrandom). Region tokens are the only
 * thing that keeps a peer holding one region's key away from the others, so
 * each one is drawn independently: knowing any number of tokens says nothing
 * about another. There is no weaker fallback: without randomness, memory is
 * not exposed.
 */
#include "base/fiatomic_random.h"
#include "base/fiatomic_int.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

static bool fiatomic_urandom(void *buf, size_t length)
{
    uint8_t *p = buf;
    ssize_t n;
    int fd;

    fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return false;
    }
    while (length > 0) {
        n = read(fd, p, length);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        } else if (n <= 0) {
            close(fd);
            return false;
        }
        p      += n;
        length -= n;
    }
    close(fd);
    return true;
}

ucs_status_t fiatomic_random_bytes(void *buf, size_t length)
{
    uint8_t *p = buf;
    ssize_t n;

    while (length > 0) {
        n = getrandom(p, length, 0);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            /* a kernel without getrandom (ENOSYS): the same pool */
            return fiatomic_urandom(p, length) ? UCS_OK : UCS_ERR_IO_ERROR;
        }
        p      += n;
        length -= n;
    }
    return UCS_OK;
}

ucs_status_t fiatomic_random_token(uint64_t *token_p)
{
    ucs_status_t status;

    do {
        status = fiatomic_random_bytes(token_p, sizeof(*token_p));
    } while ((status == UCS_OK) && (*token_p == 0)); /* 0 marks a free slot */
    return status;
}
