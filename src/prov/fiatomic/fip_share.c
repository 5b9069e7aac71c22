/**
 * Registered memory placed in shared memory (FI_FIATOMIC_MR_SHARE): a
 * program registers pages it allocated itself, which UCX's posix and sysv
 * transports cannot map into a peer, so every call on them would be
 * executed at the target in software. With sharing on, fi_mr_reg moves the
 * registration's pages (rounded out to whole pages) into a shared segment
 * libfiatomic allocated through UCP (FIATOMIC_MEM_FLAG_ALLOCATE), at the
 * program's own address: peers on the host map the segment and execute
 * with CPU atomics (libfiatomic's direct strategy), and the program keeps
 * its pointers. How, without a moment where the range is unmapped:
 *  1. the segment is allocated at some address A and the pages copied in;
 *  2. mremap(A, len, len, MAYMOVE | FIXED | DONTUNMAP, program address)
 *     replaces the program's private pages by the segment's in one step;
 *     A keeps mapping the same segment (a shared mapping left behind by
 *     DONTUNMAP refaults from its file, Linux >= 5.13), so UCP's handle of
 *     A stays valid and is what libfiatomic exposes; peers' addresses are
 *     translated to A (mr->exposed) by the key service;
 *  3. at fi_close the pages are copied into a fresh private mapping that
 *     mremap puts over the program's range, then the segment is freed.
 * Only what must be is copied (a heap is large and mostly never touched):
 * the segment's range is punched out first (UCP writes the whole posix
 * segment when it allocates it), anonymous pages that do not exist are not
 * copied in, and only the segment's data that is not all zero is copied
 * back.
 * mremap is called as a system call: UCX 1.13's memory hooks replace
 * mremap by a 4-argument function that drops the new address, which with
 * MREMAP_FIXED moves the pages to whatever the register held. UCP's
 * registration cache is told of both moves (ucm_vm_munmap).
 * Regions with remote read and write only (fip_mr.c): peers map the segment
 * read-write, which no narrower access could bound. Eligible ranges only
 * (else the registration is the usual one): wholly in
 * private writable mappings, not a [stack], [vdso], [vvar] or [vsyscall]
 * and not the calling thread's stack; no page shared by another live
 * registration of this process (any domain); a segment of shared memory
 * (the domain has a shared-memory transport) at a page boundary.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mremap's flags, pthread_getattr_np */
#endif
#include "fip.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <ucm/api/ucm.h>

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4 /* Linux >= 5.7; shared mappings >= 5.13 */
#endif

#define FIP_SHARE_PARAM "mr_share"

struct fip_share {
    fip_share_t   *next;   /* in fip_shares */
    uintptr_t     start;   /* the program's pages */
    size_t        len;
    void          *segment; /* A: the same pages, as UCP allocated them */
    unsigned long ino;     /* the segment's file */
    dev_t         dev;
};

/* every live shared registration of the process: their pages may not
 * overlap (a second one would move pages that are the first's segment) */
static pthread_mutex_t fip_share_lock = PTHREAD_MUTEX_INITIALIZER;
static fip_share_t *fip_shares;

void fip_params_define(void)
{
    (void)fi_param_define(&fip_provider, FIP_SHARE_PARAM, FI_PARAM_BOOL,
                          "Place registered memory in shared memory at its "
                          "own address, so that same-host peers map it and "
                          "execute atomics with CPU instructions "
                          "(default: no)");
    (void)fi_param_define(&fip_provider, FIP_UCP_ONESIDED_PARAM,
                          FI_PARAM_BOOL,
                          "Let UCP's one-sided RMA and atomics in (its "
                          "RMA and AMO features), for NIC atomics: then "
                          "every peer that can connect reaches the whole "
                          "process memory, registered or not, with any "
                          "key; only for sites whose peers are all "
                          "trusted (default: no)");
    (void)fi_param_define(&fip_provider, FIP_AUTH_KEY_PARAM, FI_PARAM_STRING,
                          "Job key: a peer domain without the same key "
                          "cannot open a connection to this one (its "
                          "messages, key requests and RMA are dropped and "
                          "the connection closed); the domain attribute "
                          "auth_key wins over it (default: none, every "
                          "peer admitted)");
}

int fip_share_wanted(void)
{
    int value = 0;

    if (fi_param_get_bool(&fip_provider, FIP_SHARE_PARAM, &value) != 0) {
        return 0;
    }
    return value != 0;
}

static void *fip_share_mremap(void *old, size_t len, int flags, void *to)
{
    return (void*)syscall(SYS_mremap, old, len, len, flags, to);
}

/* whether /proc/self/maps maps [start, end) wholly, in writable mappings
 * that are private and not special (shared 0: *ino_p set non-zero when one
 * of them maps a file), or shared from one file (shared 1: *ino_p 0 takes
 * any file and is set to it, else only that; *off_p the file offset of
 * start, *dev_p its device) */
static int fip_share_maps_check(uintptr_t start, uintptr_t end, int shared,
                                unsigned long *ino_p, unsigned long *off_p,
                                dev_t *dev_p)
{
    char line[512], perms[8], path[256];
    unsigned long lo, hi, off, ino;
    uintptr_t next = start;
    unsigned dmaj, dmin;
    int ok = 1, c;
    FILE *maps;

    maps = fopen("/proc/self/maps", "re");
    if (maps == NULL) {
        return 0;
    }
    while ((next < end) && (fgets(line, sizeof(line), maps) != NULL)) {
        if (strchr(line, '\n') == NULL) {
            /* a long path: drop the rest of the line */
            while (((c = fgetc(maps)) != EOF) && (c != '\n')) {
            }
        }
        path[0] = '\0';
        if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu %255s", &lo, &hi, perms,
                   &off, &dmaj, &dmin, &ino, path) < 7) {
            ok = 0;
            break;
        }
        if (hi <= next) {
            continue;
        }
        if ((lo > next) || (strncmp(perms, "rw", 2) != 0)) {
            ok = 0; /* a hole, or not writable */
            break;
        }
        if (!shared) {
            ok = (perms[3] == 'p') &&
                 ((path[0] != '[') || (strcmp(path, "[heap]") == 0));
            *ino_p |= ino;
        } else {
            ok = (perms[3] == 's') && (ino != 0) &&
                 ((*ino_p == 0) || (ino == *ino_p));
            if (ok && (next == start)) {
                *off_p = off + (start - lo);
                *dev_p = makedev(dmaj, dmin);
            }
            *ino_p = ino;
        }
        if (!ok) {
            break;
        }
        next = hi;
    }
    fclose(maps);
    return ok && (next >= end);
}

/* whether [start, start + len) meets the calling thread's stack */
static int fip_share_on_own_stack(uintptr_t start, size_t len)
{
    pthread_attr_t attr;
    void *stack;
    size_t size;
    int ret;

    if (pthread_getattr_np(pthread_self(), &attr) != 0) {
        return 1; /* unknown: not eligible */
    }
    ret = pthread_attr_getstack(&attr, &stack, &size);
    pthread_attr_destroy(&attr);
    if (ret != 0) {
        return 1;
    }
    return (start < (uintptr_t)stack + size) &&
           ((uintptr_t)stack < start + len);
}

/* with fip_share_lock held */
static int fip_share_overlaps(uintptr_t start, size_t len)
{
    fip_share_t *s;

    for (s = fip_shares; s != NULL; s = s->next) {
        if ((start < s->start + s->len) && (s->start < start + len)) {
            return 1;
        }
    }
    return 0;
}

/* copy the program's pages into the fresh segment; of anonymous memory only
 * the pages that exist (present or swapped, /proc/self/pagemap): the rest
 * read as zeroes, as the segment does, and copying them would make the
 * segment's every page real (a heap of 512 MiB mostly never touched) */
static void fip_share_copy_in(void *segment, uintptr_t start, size_t len,
                              int anonymous)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uint64_t entries[512];
    size_t i, n, done;
    ssize_t got;
    int fd = -1;

    if (anonymous) {
        fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    }
    if (fd < 0) {
        memcpy(segment, (void*)start, len);
        return;
    }
    for (done = 0; done < len; done += n * page) {
        n   = (len - done) / page;
        n   = (n < 512) ? n : 512;
        got = pread(fd, entries, n * sizeof(entries[0]),
                    (off_t)((start + done) / page * sizeof(entries[0])));
        if (got != (ssize_t)(n * sizeof(entries[0]))) {
            /* cannot tell: copy the rest */
            memcpy((char*)segment + done, (char*)start + done, len - done);
            break;
        }
        for (i = 0; i < n; ++i) {
            /* bit 63: present, bit 62: swapped */
            if (entries[i] & (3ULL << 62)) {
                memcpy((char*)segment + done + i * page,
                       (char*)start + done + i * page, page);
            }
        }
    }
    close(fd);
}

/* the descriptor UCP keeps open of the segment's file (posix shared memory
 * is opened through /proc/<pid>/fd by peers), -1 if none (sysv) */
static int fip_share_segment_fd(unsigned long ino, dev_t dev)
{
    struct dirent *d;
    struct stat st;
    int fd = -1, n;
    DIR *dir;

    dir = opendir("/proc/self/fd");
    if (dir == NULL) {
        return -1;
    }
    while ((fd < 0) && ((d = readdir(dir)) != NULL)) {
        n = atoi(d->d_name);
        if ((d->d_name[0] >= '0') && (d->d_name[0] <= '9') &&
            (n != dirfd(dir)) && (fstat(n, &st) == 0) &&
            S_ISREG(st.st_mode) && (st.st_ino == ino) &&
            (st.st_dev == dev)) {
            fd = n;
        }
    }
    closedir(dir);
    return fd;
}

/* copy into untouched private anonymous memory, leaving out the pages that
 * hold only zeroes: they read as zeroes there without being allocated (UCP
 * writes the whole posix segment when it allocates it, so its pages are
 * all data, most of them zero in a heap) */
static void fip_share_copy_nonzero(char *to, const char *from, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t done, n, i;

    for (done = 0; done < len; done += n) {
        n = ((len - done) < page) ? (len - done) : page;
        for (i = 0; (i < n) && (from[done + i] == 0); ++i) {
        }
        if (i < n) {
            memcpy(to + done, from + done, n);
        }
    }
}

/* copy the shared pages into the fresh private mapping: with the segment's
 * file at hand, only its data (SEEK_DATA / SEEK_HOLE): reading a hole
 * through the mapping would allocate it */
static void fip_share_copy_out(void *fresh, const fip_share_t *share,
                               unsigned long off)
{
    int fd = fip_share_segment_fd(share->ino, share->dev);
    off_t end = (off_t)(off + share->len), data, hole;

    if (fd < 0) {
        fip_share_copy_nonzero(fresh, (void*)share->start, share->len);
        return;
    }
    for (data = (off_t)off; data < end; data = hole) {
        hole = data;
        data = lseek(fd, hole, SEEK_DATA);
        if ((data < 0) && (errno != ENXIO)) {
            /* cannot tell: copy the rest */
            fip_share_copy_nonzero((char*)fresh + (hole - (off_t)off),
                                   (char*)share->start + (hole - (off_t)off),
                                   (size_t)(end - hole));
            break;
        }
        if ((data < 0) || (data >= end)) {
            break; /* only holes after */
        }
        hole = lseek(fd, data, SEEK_HOLE);
        if ((hole <= data) || (hole > end)) {
            hole = end;
        }
        fip_share_copy_nonzero((char*)fresh + (data - (off_t)off),
                               (char*)share->start + (data - (off_t)off),
                               (size_t)(hole - data));
    }
}

static void fip_share_unexpose(fip_mr_t *mr)
{
    (void)fiatomic_mem_unexpose(mr->mem);
    mr->mem = NULL;
}

int fip_share_register(fip_domain_t *domain, fip_mr_t *mr)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)mr->addr & ~(page - 1);
    fiatomic_mem_params_t params;
    unsigned long file = 0, off = 0;
    int fd;
    fip_share_t *share;
    size_t len, seg_len;
    void *segment;

    if ((uintptr_t)mr->addr + mr->length < (uintptr_t)mr->addr) {
        return -FI_ENOSYS;
    }
    len = (((uintptr_t)mr->addr + mr->length + page - 1) & ~(page - 1)) -
          start;
    share = calloc(1, sizeof(*share));
    if (share == NULL) {
        return -FI_ENOSYS;
    }

    pthread_mutex_lock(&fip_share_lock);
    if (fip_share_overlaps(start, len) ||
        fip_share_on_own_stack(start, len) ||
        !fip_share_maps_check(start, start + len, 0, &file, NULL, NULL)) {
        goto err_unlock;
    }

    params.field_mask = FIATOMIC_MEM_PARAM_FIELD_LENGTH |
                        FIATOMIC_MEM_PARAM_FIELD_FLAGS;
    params.length     = len;
    params.flags      = FIATOMIC_MEM_FLAG_ALLOCATE;
    if (fiatomic_mem_expose(domain->fia, &params, &mr->mem) != UCS_OK) {
        mr->mem = NULL;
        goto err_unlock;
    }
    if ((fiatomic_mem_query(mr->mem, &segment, &seg_len) != UCS_OK) ||
        ((uintptr_t)segment & (page - 1)) || (seg_len != len)) {
        goto err_unexpose;
    }
    if (!fip_share_maps_check((uintptr_t)segment, (uintptr_t)segment + len,
                              1, &share->ino, &off, &share->dev)) {
        /* UCP allocated private memory: no shared-memory transport */
        domain->share_none = 1;
        goto err_unexpose;
    }

    /* UCP wrote the whole posix segment when it allocated it: make this
     * range sparse again, so that only the pages copied in and the pages
     * written later take memory, and only they are copied back at close */
    fd = fip_share_segment_fd(share->ino, share->dev);
    if (fd >= 0) {
        (void)fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                        (off_t)off, (off_t)len);
    }
    fip_share_copy_in(segment, start, len, file == 0);
    if (fip_share_mremap(segment, len, MREMAP_MAYMOVE | MREMAP_FIXED |
                         MREMAP_DONTUNMAP, (void*)start) != (void*)start) {
        goto err_unexpose;
    }
    /* the program's range has other pages: registrations of it are stale */
    ucm_vm_munmap((void*)start, len);

    share->start   = start;
    share->len     = len;
    share->segment = segment;
    share->next    = fip_shares;
    fip_shares     = share;
    pthread_mutex_unlock(&fip_share_lock);
    mr->share   = share;
    mr->exposed = (char*)segment + ((uintptr_t)mr->addr - start);
    return 0;

err_unexpose:
    fip_share_unexpose(mr);
err_unlock:
    pthread_mutex_unlock(&fip_share_lock);
    free(share);
    return -FI_ENOSYS; /* not eligible: the usual registration */
}

void fip_share_release(fip_mr_t *mr)
{
    fip_share_t *share = mr->share;
    unsigned long ino  = share->ino, off = 0;
    dev_t dev          = 0;
    fip_share_t **p;
    void *fresh;

    pthread_mutex_lock(&fip_share_lock);
    /* the program's range still holds the segment (it did not unmap the
     * registered memory before closing): private pages again, same bytes.
     * Without memory for them the range stays shared, its bytes intact. */
    if (fip_share_maps_check(share->start, share->start + share->len, 1,
                             &ino, &off, &dev) && (dev == share->dev)) {
        fresh = mmap(NULL, share->len, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (fresh != MAP_FAILED) {
            fip_share_copy_out(fresh, share, off);
            if (fip_share_mremap(fresh, share->len,
                                 MREMAP_MAYMOVE | MREMAP_FIXED,
                                 (void*)share->start) ==
                (void*)share->start) {
                ucm_vm_munmap((void*)share->start, share->len);
            } else {
                munmap(fresh, share->len);
            }
        }
    }
    for (p = &fip_shares; *p != NULL; p = &(*p)->next) {
        if (*p == share) {
            *p = share->next;
            break;
        }
    }
    pthread_mutex_unlock(&fip_share_lock);
    /* peers that map the segment see its state word say unexposed */
    fip_share_unexpose(mr);
    free(share);
    mr->share = NULL;
}
