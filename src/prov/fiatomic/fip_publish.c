/**
 * The published worker address: a domain whose transports have no
 * connection manager (UCX_TLS=posix: no listener a peer could connect to)
 * writes its UCP worker address into a file of its host's shared-memory
 * file system, which same-host peers read without the domain progressing,
 * and connect to with ucp_ep_create(remote address) (fip_peer.c). The file
 * is named from the process id and the domain's random nonce (both in the
 * endpoints' addresses, fip_addr.c), readable by the owner only, written
 * once before any address is handed out and removed when the domain
 * closes. A reader takes only a regular file of its own user, no larger
 * than the cap, whose header names the nonce asked for and the exact
 * length that follows. The file of a process that ended without closing
 * stays: a reader finds its process gone and removes it, and so does every
 * domain that publishes, for all of its user's such files.
 *
 *   0  magic (FIP_PUBLISH_MAGIC, 32 bits)   8  nonce (64 bits)
 *   4  address length (32 bits)            16  the worker address
 *
 * in host byte order (only this host reads it).
 */
#include "fip.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIP_PUBLISH_MAGIC 0x66697057u /* "fipW" */
#define FIP_PUBLISH_DIR   "/dev/shm"
#define FIP_PUBLISH_PATH  256

typedef struct fip_publish_hdr {
    uint32_t magic;
    uint32_t length;
    uint64_t nonce;
} fip_publish_hdr_t;

static uint32_t fip_publish_hash(const char *data, size_t len)
{
    uint32_t hash = 2166136261u; /* FNV-1a */
    size_t i;

    for (i = 0; i < len; ++i) {
        hash = (hash ^ (uint8_t)data[i]) * 16777619u;
    }
    return (hash != 0) ? hash : 1;
}

uint32_t fip_publish_host(void)
{
    static uint32_t host; /* atomic: computed once, the same every time */
    char id[64];
    uint32_t value = __atomic_load_n(&host, __ATOMIC_ACQUIRE);
    ssize_t n      = -1;
    int fd;

    if (value != 0) {
        return value;
    }
    /* the boot id tells hosts (and boots) apart; without it, the host
     * name does */
    fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = read(fd, id, sizeof(id));
        close(fd);
    }
    if (n <= 0) {
        if (gethostname(id, sizeof(id) - 1) != 0) {
            id[0] = '\0';
        }
        id[sizeof(id) - 1] = '\0';
        n                  = (ssize_t)strlen(id);
    }
    value = fip_publish_hash(id, (size_t)n);
    __atomic_store_n(&host, value, __ATOMIC_RELEASE);
    return value;
}

void fip_publish_path(uint32_t pid, uint64_t nonce, char *buf, size_t len)
{
    snprintf(buf, len, FIP_PUBLISH_DIR "/fiatomic-%u-%016llx",
             (unsigned)pid, (unsigned long long)nonce);
}

/* All len bytes read into rbuf, or written from wbuf (the other one NULL),
 * going on after a signal and a short transfer: 0, or -1 on an error or
 * the end of the file before len bytes. */
static int fip_publish_io(int fd, void *rbuf, const void *wbuf, size_t len)
{
    size_t done = 0;
    ssize_t n;

    while (done < len) {
        n = (rbuf != NULL) ? read(fd, (char*)rbuf + done, len - done) :
                             write(fd, (const char*)wbuf + done, len - done);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        done += (size_t)n;
    }
    return 0;
}

/* Remove the files of this user's processes that exited without closing
 * their domains (a program that ends with exit() and no fi_close, or is
 * killed): each domain that publishes sweeps once, so that such files do
 * not pile up. A name that is not one of ours, a file of another user and
 * one whose process lives are left. */
static void fip_publish_sweep(void)
{
    char path[FIP_PUBLISH_PATH];
    unsigned long long nonce;
    struct dirent *entry;
    unsigned pid;
    struct stat st;
    DIR *dir;
    int n;

    dir = opendir(FIP_PUBLISH_DIR);
    if (dir == NULL) {
        return;
    }
    while ((entry = readdir(dir)) != NULL) {
        if ((sscanf(entry->d_name, "fiatomic-%u-%16llx%n", &pid, &nonce,
                    &n) != 2) ||
            (entry->d_name[n] != '\0') || (pid == 0)) {
            continue;
        }
        fip_publish_path(pid, nonce, path, sizeof(path));
        if ((strcmp(path + strlen(FIP_PUBLISH_DIR "/"), entry->d_name) ==
             0) && (lstat(path, &st) == 0) && S_ISREG(st.st_mode) &&
            (st.st_uid == geteuid()) && (kill((pid_t)pid, 0) != 0) &&
            (errno == ESRCH)) {
            unlink(path);
        }
    }
    closedir(dir);
}

int fip_publish_start(fip_domain_t *domain)
{
    ucp_worker_attr_t attr = {0};
    fip_publish_hdr_t hdr  = {0};
    char path[FIP_PUBLISH_PATH];
    int fd, ret = 0;

    /* under domain->lock */
    if (domain->published) {
        return 0;
    }
    attr.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS;
    if (ucp_worker_query(domain->ucp_worker, &attr) != UCS_OK) {
        return -FI_EADDRNOTAVAIL;
    }
    if (attr.address_length > FIP_PUBLISH_ADDR_MAX) {
        ret = -FI_EADDRNOTAVAIL;
        goto out_release;
    }
    fip_publish_path((uint32_t)getpid(), domain->nonce, path, sizeof(path));
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
              S_IRUSR | S_IWUSR);
    if (fd < 0) {
        ret = -FI_EADDRNOTAVAIL;
        goto out_release;
    }
    hdr.magic  = FIP_PUBLISH_MAGIC;
    hdr.length = (uint32_t)attr.address_length;
    hdr.nonce  = domain->nonce;
    if ((fip_publish_io(fd, NULL, &hdr, sizeof(hdr)) != 0) ||
        (fip_publish_io(fd, NULL, attr.address,
                        attr.address_length) != 0)) {
        close(fd);
        unlink(path);
        ret = -FI_EADDRNOTAVAIL;
        goto out_release;
    }
    close(fd);
    domain->published = 1;
    fip_publish_sweep();
out_release:
    ucp_worker_release_address(domain->ucp_worker, attr.address);
    return ret;
}

void fip_publish_stop(fip_domain_t *domain)
{
    char path[FIP_PUBLISH_PATH];

    if (domain->published) {
        fip_publish_path((uint32_t)getpid(), domain->nonce, path,
                         sizeof(path));
        unlink(path);
        domain->published = 0;
    }
}

int fip_publish_read(const fip_addr_t *addr, void **worker_addr,
                     size_t *len)
{
    char path[FIP_PUBLISH_PATH];
    fip_publish_hdr_t hdr;
    struct stat st;
    void *buf;
    int fd;

    fip_publish_path(addr->pid, addr->nonce, path, sizeof(path));
    fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        /* closed, or never there */
        return -FI_ECONNREFUSED;
    }
    if ((fstat(fd, &st) != 0) || !S_ISREG(st.st_mode) ||
        (st.st_uid != geteuid()) || (st.st_size <= (off_t)sizeof(hdr)) ||
        (st.st_size > (off_t)(sizeof(hdr) + FIP_PUBLISH_ADDR_MAX)) ||
        (fip_publish_io(fd, &hdr, NULL, sizeof(hdr)) != 0) ||
        (hdr.magic != FIP_PUBLISH_MAGIC) || (hdr.nonce != addr->nonce) ||
        ((off_t)hdr.length != st.st_size - (off_t)sizeof(hdr))) {
        close(fd);
        return -FI_EINVAL;
    }
    /* a process that died without closing its domain left its file: it
     * will not answer (its process id may be another's by now, whose
     * domains have other nonces) */
    if ((kill((pid_t)addr->pid, 0) != 0) && (errno == ESRCH)) {
        close(fd);
        unlink(path);
        return -FI_ECONNREFUSED;
    }
    buf = malloc(hdr.length);
    if (buf == NULL) {
        close(fd);
        return -FI_ENOMEM;
    }
    if (fip_publish_io(fd, buf, NULL, hdr.length) != 0) {
        free(buf);
        close(fd);
        return -FI_EINVAL;
    }
    close(fd);
    *worker_addr = buf;
    *len         = hdr.length;
    return 0;
}
