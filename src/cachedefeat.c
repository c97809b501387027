/* Data files outside the timer: page-cache drop (posix_fadvise DONTNEED), residency probe (mincore),
 * existence check, deletion, and the filesystem type of --dir. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include "driver.h"

static int (*walk_fn)(const char *, void *);
static void *walk_arg;
static int walk_rc;

static int walk_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    if (flag == FTW_F && S_ISREG(st->st_mode)) {
        int rc = walk_fn(p, walk_arg);
        if (rc && !walk_rc)
            walk_rc = rc;
    }
    return 0;
}

int iob_for_each_data_file(const iob_ctx *c, const iob_backend *be, int (*fn)(const char *, void *), void *arg)
{
    static char paths[IOB_MAXFILES][4096];
    int n = be->files(c, paths, IOB_MAXFILES);
    int rc = 0;
    for (int i = 0; i < n; i++) {
        struct stat st;
        if (stat(paths[i], &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            walk_fn = fn, walk_arg = arg, walk_rc = 0;
            nftw(paths[i], walk_cb, 16, FTW_PHYS);
            if (walk_rc && !rc)
                rc = walk_rc;
        } else if (S_ISREG(st.st_mode)) {
            int r = fn(paths[i], arg);
            if (r && !rc)
                rc = r;
        }
    }
    return rc;
}

static int drop_one(const char *p, void *arg)
{
    int fd = open(p, O_RDONLY);
    if (fd < 0)
        return 0;
    /* fsync first: DONTNEED cannot drop dirty pages (backends synced already; this is cheap then) */
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
    return 0;
}

int iob_drop_cache(const iob_ctx *c, const iob_backend *be)
{
    return iob_for_each_data_file(c, be, drop_one, NULL);
}

typedef struct { int64_t pages, resident; } residency;

/* Residency of one file by sampling: at most IOB_PROBE_PAGES pages, evenly spaced over the file, each
 * mapped alone (one page of address space, one byte of mincore vector): constant memory whatever the
 * file size and rank count. A file of fewer pages is probed page by page, i.e. exactly. */
void iob_probe_file(const char *path, int64_t *pages, int64_t *resident)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0)
        return;
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
        int64_t pg = sysconf(_SC_PAGESIZE), np = (st.st_size + pg - 1) / pg;
        int64_t n = np < IOB_PROBE_PAGES ? np : IOB_PROBE_PAGES;
        for (int64_t i = 0; i < n; i++) {
            off_t off = (off_t)((np * i / n) * pg); /* page i of n evenly spaced ones */
            unsigned char vec = 0;
            void *m = mmap(NULL, (size_t)pg, PROT_READ, MAP_SHARED, fd, off);
            if (m == MAP_FAILED)
                continue;
            if (mincore(m, (size_t)pg, &vec) == 0)
                *resident += vec & 1, *pages += 1;
            munmap(m, (size_t)pg);
        }
    }
    close(fd);
}

static int probe_one(const char *p, void *arg)
{
    residency *r = arg;
    iob_probe_file(p, &r->pages, &r->resident);
    return 0;
}

double iob_resident_fraction(const iob_ctx *c, const iob_backend *be)
{
    residency r = {0, 0};
    iob_for_each_data_file(c, be, probe_one, &r);
    return r.pages ? (double)r.resident / (double)r.pages : 0.0;
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    remove(p);
    return 0;
}

void iob_remove_data(const iob_ctx *c, const iob_backend *be)
{
    static char paths[IOB_MAXFILES][4096];
    int n = be->files(c, paths, IOB_MAXFILES);
    for (int i = 0; i < n; i++) {
        struct stat st;
        if (lstat(paths[i], &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            if (c->rank == 0) /* one remover for a shared directory */
                nftw(paths[i], rm_cb, 16, FTW_DEPTH | FTW_PHYS);
        } else {
            unlink(paths[i]); /* a shared file: the other ranks get ENOENT, fine */
        }
    }
}

#ifdef __linux__
#include <sys/syscall.h>
struct iob_dirent64 { unsigned long long ino; long long off; unsigned short reclen; unsigned char type; char name[]; };
#endif

/* unlink NAME (relative to DIRFD) or remove it as a directory tree, using only async-signal-safe calls
 * (the error-path watchdog's SIGALRM handler: an ADIOS2 .bp directory must go too, and nftw mallocs).
 * Entries removed while listing can shift getdents' offsets, so a directory is listed until empty. */
void iob_remove_tree_sigsafe(int dirfd, const char *name, int depth)
{
    if (unlinkat(dirfd, name, 0) == 0 || (errno != EISDIR && errno != EPERM) || depth > 8)
        return;
#ifdef __linux__
    for (int pass = 0; pass < 4 && unlinkat(dirfd, name, AT_REMOVEDIR) != 0 && errno == ENOTEMPTY; pass++) {
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        if (fd < 0)
            return;
        static char buf[9][8192]; /* one per depth (<= 8): no stack growth, no malloc */
        long n;
        while ((n = syscall(SYS_getdents64, fd, buf[depth], sizeof buf[0])) > 0)
            for (long off = 0; off < n;) {
                struct iob_dirent64 *d = (struct iob_dirent64 *)(buf[depth] + off);
                off += d->reclen;
                if (strcmp(d->name, ".") != 0 && strcmp(d->name, "..") != 0)
                    iob_remove_tree_sigsafe(fd, d->name, depth + 1);
            }
        close(fd);
    }
#endif
}

int iob_data_missing(const iob_ctx *c, const iob_backend *be, char *missing, size_t len)
{
    static char paths[IOB_MAXFILES][4096];
    int n = be->files(c, paths, IOB_MAXFILES);
    for (int i = 0; i < n; i++) {
        struct stat st;
        if (stat(paths[i], &st) != 0) {
            snprintf(missing, len, "%s", paths[i]);
            return 1;
        }
    }
    return 0;
}

const char *iob_fs_type(const char *dir)
{
    static const struct { unsigned long magic; const char *name; } fs[] = {
        {0x0BD00BD0UL, "lustre"}, {0x47504653UL, "gpfs"},     {0x01021994UL, "tmpfs"},
        {0xEF53UL, "ext2/ext3"}, {0x58465342UL, "xfs"}, {0x6969UL, "nfs"},
        {0x794C7630UL, "overlay"}, {0x9123683EUL, "btrfs"},   {0x65735546UL, "fuse"},
        {0x5346414FUL, "afs"},     {0x73717368UL, "squashfs"}, {0xFF534D42UL, "cifs"},
        {0x2FC12FC1UL, "zfs"},     {0x858458F6UL, "ramfs"},    {0xAAD7AAEAUL, "panfs"},
        {0x19830326UL, "beegfs"},  {0x00C36400UL, "ceph"},
    };
    static char other[32];
    struct statfs s;
    if (statfs(dir, &s) != 0)
        return "unknown";
    for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++)
        if ((unsigned long)s.f_type == fs[i].magic)
            return fs[i].name;
    snprintf(other, sizeof other, "0x%lx", (unsigned long)s.f_type);
    return other;
}
