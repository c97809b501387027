/* Metadata stress with many small files (seed 001: 36,000 files of 300 KB, scaled), mdtest style.
 * Each rank creates+writes+fsyncs+closes, stats, reads and removes `nfiles` files of `filesize` bytes in
 * one shared directory DIR/BASE.rep<k>/ (files f<rank>.<i>). Every phase is timed barrier to barrier
 * (slowest rank) and reported as operations per second; the page cache of the files is dropped before
 * the read (posix_fadvise DONTNEED, residency checked with mincore). Runs with --backend posix; it does
 * its own I/O through iob_pattern.run.
 * File content: 8-byte words; word 0 = a key of (rank, file index), word k = k ^ salt, so a misplaced
 * or mixed-up file is caught. Files per rank: param nfiles, else --size N, else 200; param filesize
 * (bytes, default 307200). filesize=0 is mdtest's default (-w 0): empty files, no write, fsync or
 * read, so every phase is metadata calls only (create+close, stat, open+close, unlink); verified by
 * counting the directory's entries and each file's size 0.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include "pattern_run.h"

#define MDF_SALT 0x5eed5eed5eed5eedULL

typedef struct {
    int64_t nfiles, filesize;
    uint64_t *wbuf;   /* one file's content (word 0 rewritten per file) */
    char *rbuf;       /* every file read, nfiles * filesize */
} mdf_state;

static int mdf_params(const iob_opts *o, int64_t *nfiles, int64_t *filesize, char *err, size_t errlen)
{
    /* files per rank: param nfiles, else --size N if given (iob_opts cannot tell it from the default) */
    int64_t dflt = strstr(o->command, " --size ") || strstr(o->command, " --size=") ? o->size[0] : 200;
    if (o->nsize != 1) {
        snprintf(err, errlen, "--size for mdfiles (files per rank, one number) '%lld,...'", (long long)o->size[0]);
        return IOB_BADINPUT;
    }
    *nfiles = iob_kv_get(&o->params, "nfiles") ? iob_param_int(o, "nfiles") : dflt;
    if (*nfiles < 1 || *nfiles > 10000000) { /* the table checks the param; --size is checked here */
        snprintf(err, errlen, "--size for mdfiles (files per rank, 1..10000000) '%lld'", (long long)*nfiles);
        return IOB_BADINPUT;
    }
    *filesize = iob_param_int(o, "filesize");
    return IOB_OK;
}

static int mdfiles_check(const iob_opts *o, int nranks, char *err, size_t errlen)
{
    int64_t nf, fs;
    if (strcmp(o->backend, "posix") != 0) {
        snprintf(err, errlen, "backend for mdfiles (posix) '%s'", o->backend);
        return IOB_BADINPUT;
    }
    if (!o->do_write || !o->do_read) {
        snprintf(err, errlen, "--phase for mdfiles (both) '%s'", o->do_write ? "write" : "read");
        return IOB_BADINPUT;
    }
    if (mdf_params(o, &nf, &fs, err, errlen))
        return IOB_BADINPUT;
    if ((double)nf * (double)fs > 2147483648.0) {
        snprintf(err, errlen, "nfiles x filesize for mdfiles (read buffer over 2 GiB per rank) '%lld'",
                 (long long)nf);
        return IOB_BADINPUT;
    }
    struct statvfs sv;
    if (statvfs(o->dir, &sv) == 0) {
        double files = (double)nf * nranks + 1; /* + the directory */
        if (sv.f_files > 0 && files > (double)sv.f_favail) { /* f_files 0: no inode limit reported */
            snprintf(err, errlen, "nfiles for mdfiles (%d ranks x %lld files exceed the %llu free inodes of "
                     "--dir) '%lld'", nranks, (long long)nf, (unsigned long long)sv.f_favail, (long long)nf);
            return IOB_BADINPUT;
        }
        double blk = sv.f_bsize ? (double)sv.f_bsize : 4096.0;
        double need = files * ((double)((fs + (int64_t)blk - 1) / (int64_t)blk) * blk);
        if (need > (double)sv.f_bavail * (double)sv.f_frsize) {
            snprintf(err, errlen, "filesize for mdfiles (%d ranks x %lld files need %.0f bytes, --dir has %.0f "
                     "free) '%lld'", nranks, (long long)nf, need, (double)sv.f_bavail * (double)sv.f_frsize,
                     (long long)fs);
            return IOB_BADINPUT;
        }
    }
    return IOB_OK;
}

static int mdfiles_setup(iob_ctx *c)
{
    if (c->pattern_state)
        return IOB_OK;
    char err[256];
    mdf_state *s = calloc(1, sizeof *s);
    c->pattern_state = s;
    c->vars = calloc(1, sizeof(iob_var)); /* no block variables: run() does the I/O */
    c->nvars = 0;
    if (!s || !c->vars)
        return iob_fail(c, "mdfiles: out of memory");
    if (mdf_params(c->opt, &s->nfiles, &s->filesize, err, sizeof err))
        return iob_fail(c, "mdfiles: %s", err);
    size_t words = (size_t)(s->filesize + 7) / 8 + 1; /* + 1: never malloc(0) for empty files */
    s->wbuf = malloc(words * 8);
    s->rbuf = malloc((size_t)(s->nfiles * s->filesize) + 1);
    if (!s->wbuf || !s->rbuf)
        return iob_fail(c, "mdfiles: cannot allocate %lld bytes for reading back",
                        (long long)(s->nfiles * s->filesize));
    for (size_t k = 0; k < words; k++)
        s->wbuf[k] = (uint64_t)k ^ MDF_SALT;
    return IOB_OK;
}

static uint64_t mdf_key(int rank, int64_t i) { return ((uint64_t)(rank + 1) << 32) ^ (uint64_t)i ^ MDF_SALT; }

static void mdf_path(const iob_ctx *c, int rank, int64_t i, char *p, size_t len)
{
    snprintf(p, len, "%s/f%d.%lld", c->path, rank, (long long)i);
}

static int io_all(iob_ctx *c, int fd, char *buf, int64_t len, int writing, const char *path)
{
    while (len > 0) {
        ssize_t n = writing ? write(fd, buf, (size_t)len) : read(fd, buf, (size_t)len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return iob_fail(c, "%s(%s): %s", writing ? "write" : "read", path, n ? strerror(errno) : "short file");
        buf += n, len -= n;
        c->moved += n; /* counted as the calls returned them */
    }
    return IOB_OK;
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f) { return remove(p), 0; }

/* Remove this rank's files (and, rank 0, the directory after everyone): outside the timer. */
static void mdf_cleanup(iob_ctx *c, mdf_state *s)
{
    char p[4200];
    for (int64_t i = 0; i < s->nfiles; i++) {
        mdf_path(c, c->rank, i, p, sizeof p);
        unlink(p);
    }
    MPI_Barrier(c->comm);
    if (c->rank == 0)
        rmdir(c->path);
}

typedef struct { double t0, open_s, access_s, sync_s, close_s; } mdf_clock;

static double now(void) { return MPI_Wtime(); }

static void mdf_begin(iob_ctx *c, mdf_clock *k)
{
    memset(k, 0, sizeof *k);
    c->moved = 0;
    MPI_Barrier(c->comm);
    k->t0 = now();
}

/* End a phase: barrier, then the slowest rank's total and components into ph. */
static void mdf_end(iob_ctx *c, mdf_clock *k, iob_run_phase *ph, int64_t bytes)
{
    MPI_Barrier(c->comm);
    double t[5] = {now() - k->t0, k->open_s, k->access_s, k->sync_s, k->close_s}, m[5];
    MPI_Allreduce(t, m, 5, MPI_DOUBLE, MPI_MAX, c->comm);
    ph->total_s = m[0], ph->open_s = m[1], ph->access_s = m[2], ph->sync_s = m[3], ph->close_s = m[4];
    ph->bytes = bytes, ph->moved = c->moved;
}

static int mdf_write(iob_ctx *c, mdf_state *s, mdf_clock *k)
{
    char p[4200];
    for (int64_t i = 0; i < s->nfiles; i++) {
        mdf_path(c, c->rank, i, p, sizeof p);
        double a = now();
        int fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0644);
        k->open_s += now() - a;
        if (fd < 0)
            return iob_fail(c, "open(%s): %s", p, strerror(errno));
        int rc = IOB_OK;
        if (s->filesize > 0) { /* empty files (mdtest -w 0): no data, nothing to sync */
            s->wbuf[0] = mdf_key(c->rank, i);
            a = now();
            rc = io_all(c, fd, (char *)s->wbuf, s->filesize, 1, p);
            k->access_s += now() - a;
            a = now();
            if (rc == IOB_OK && fsync(fd) != 0)
                rc = iob_fail(c, "fsync(%s): %s", p, strerror(errno));
            k->sync_s += now() - a;
        }
        a = now();
        if (close(fd) != 0 && rc == IOB_OK)
            rc = iob_fail(c, "close(%s): %s", p, strerror(errno));
        k->close_s += now() - a;
        if (rc)
            return rc;
    }
    return IOB_OK;
}

static int mdf_stat(iob_ctx *c, mdf_state *s, int owner)
{
    char p[4200];
    struct stat st;
    for (int64_t i = 0; i < s->nfiles; i++) {
        mdf_path(c, owner, i, p, sizeof p);
        if (stat(p, &st) != 0)
            return iob_fail(c, "stat(%s): %s", p, strerror(errno));
        if (st.st_size != s->filesize)
            return iob_fail(c, "stat(%s): size %lld, expected %lld", p, (long long)st.st_size,
                            (long long)s->filesize);
    }
    return IOB_OK;
}

static int mdf_read(iob_ctx *c, mdf_state *s, int owner, mdf_clock *k)
{
    char p[4200];
    for (int64_t i = 0; i < s->nfiles; i++) {
        mdf_path(c, owner, i, p, sizeof p);
        double a = now();
        int fd = open(p, O_RDONLY);
        k->open_s += now() - a;
        if (fd < 0)
            return iob_fail(c, "open(%s): %s", p, strerror(errno));
        a = now();
        int rc = s->filesize ? io_all(c, fd, s->rbuf + i * s->filesize, s->filesize, 0, p) : IOB_OK;
        k->access_s += now() - a;
        a = now();
        close(fd);
        k->close_s += now() - a;
        if (rc)
            return rc;
    }
    return IOB_OK;
}

/* Rank 0: the directory holds exactly nranks x nfiles entries (an extra or a lost file is caught
 * even when each expected one is there); outside the timers. */
static int mdf_count(iob_ctx *c, mdf_state *s)
{
    if (c->rank != 0)
        return IOB_OK;
    DIR *d = opendir(c->path);
    if (!d)
        return iob_fail(c, "opendir(%s): %s", c->path, strerror(errno));
    int64_t n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    if (n != s->nfiles * c->nranks)
        return iob_fail(c, "mdfiles: %s holds %lld entries, expected %lld", c->path, (long long)n,
                        (long long)(s->nfiles * c->nranks));
    return IOB_OK;
}

static int mdf_verify(iob_ctx *c, mdf_state *s, int owner)
{
    if (s->filesize == 0) /* nothing to compare: the stat phase checked size 0, mdf_count the count */
        return IOB_OK;
    for (int64_t i = 0; i < s->nfiles; i++) {
        const char *got = s->rbuf + i * s->filesize;
        s->wbuf[0] = mdf_key(owner, i);
        for (int64_t b = 0; b < s->filesize; b += 8) {
            int64_t n = s->filesize - b < 8 ? s->filesize - b : 8;
            if (memcmp(got + b, (char *)s->wbuf + b, (size_t)n) != 0)
                return iob_fail(c, "mdfiles: file f%d.%lld: bytes %lld..%lld differ from what was written",
                                owner, (long long)i, (long long)b, (long long)(b + n - 1));
        }
    }
    return IOB_OK;
}

static int mdf_unlink(iob_ctx *c, mdf_state *s)
{
    char p[4200];
    for (int64_t i = 0; i < s->nfiles; i++) {
        mdf_path(c, c->rank, i, p, sizeof p);
        if (unlink(p) != 0)
            return iob_fail(c, "unlink(%s): %s", p, strerror(errno));
    }
    return IOB_OK;
}

static int mdfiles_run(iob_ctx *c, iob_json *x, iob_run_phase out[2])
{
    mdf_state *s = c->pattern_state;
    int64_t ops = s->nfiles * c->nranks, bytes = ops * s->filesize;
    /* read another node's files when there is one (placement.c); drop the page cache in any case */
    int owner = (c->rank + c->read_shift) % c->nranks;
    double st_s = 0, rm_s = 0;
    mdf_clock k;
    snprintf(c->sync_method, sizeof c->sync_method, "%s", s->filesize ? "fsync" : "none (empty files)");

    int rc = IOB_OK;
    if (c->rank == 0) { /* a stale directory from a --keep run must not make O_EXCL fail */
        nftw(c->path, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
        if (mkdir(c->path, 0755) != 0)
            rc = iob_fail(c, "mkdir(%s): %s", c->path, strerror(errno));
    }
    if (iob_run_agree(c, rc))
        return IOB_FAIL;

    mdf_begin(c, &k);
    rc = mdf_write(c, s, &k);
    mdf_end(c, &k, &out[0], bytes);
    if (iob_run_agree(c, rc))
        goto fail;
    out[0].done = 1;

    mdf_begin(c, &k);
    rc = mdf_stat(c, s, owner);
    MPI_Barrier(c->comm);
    st_s = iob_run_max(c, now() - k.t0);
    if (iob_run_agree(c, rc))
        goto fail;
    if (c->opt->verify && iob_run_agree(c, mdf_count(c, s)))
        goto fail;

    char p[4200];
    int64_t pages = 0, resident = 0;
    /* empty files have no pages to drop; their fdatasync would commit the journal once per file
     * (~1 ms each here) and turn a 0.1 s run into seconds */
    for (int64_t i = 0; s->filesize && i < s->nfiles; i++) {
        mdf_path(c, c->rank, i, p, sizeof p);
        iob_run_drop_file(p);
    }
    MPI_Barrier(c->comm);
    for (int64_t i = 0; s->filesize && i < s->nfiles; i++) {
        mdf_path(c, owner, i, p, sizeof p);
        resident += iob_run_resident_pages(p, &pages);
    }
    memset(s->rbuf, 0xff, (size_t)(s->nfiles * s->filesize) + 1);
    out[1].resident = iob_run_max(c, pages ? (double)resident / (double)pages : 0.0);
    snprintf(out[1].cache_defeat, sizeof out[1].cache_defeat, "%s", !s->filesize ? "none (empty files)"
             : owner != c->rank ? "rank_shift+posix_fadvise_dontneed" : "posix_fadvise_dontneed");

    mdf_begin(c, &k);
    rc = mdf_read(c, s, owner, &k);
    mdf_end(c, &k, &out[1], bytes);
    if (iob_run_agree(c, rc))
        goto fail;
    out[1].done = 1;
    if (c->opt->verify && iob_run_agree(c, mdf_verify(c, s, owner)))
        goto fail;
    out[1].verified = c->opt->verify;

    if (!c->opt->keep) {
        mdf_begin(c, &k);
        rc = mdf_unlink(c, s);
        MPI_Barrier(c->comm);
        rm_s = iob_run_max(c, now() - k.t0);
        if (iob_run_agree(c, rc))
            goto fail;
        MPI_Barrier(c->comm);
        if (c->rank == 0)
            rmdir(c->path);
    }

    jw_begin_obj(x, "metadata");
    jw_int(x, "files_per_rank", s->nfiles);
    jw_int(x, "file_size", s->filesize);
    iob_run_ops_json(x, "create", ops, out[0].total_s); /* create + write + fsync + close */
    /* filesize 0: create+close and open+close only, mdtest's file creation and read */
    iob_run_ops_json(x, "stat", ops, st_s);
    iob_run_ops_json(x, "read", ops, out[1].total_s);   /* open + read + close */
    if (!c->opt->keep)
        iob_run_ops_json(x, "remove", ops, rm_s);
    jw_end_obj(x);
    return IOB_OK;
fail:
    if (!c->opt->keep)
        mdf_cleanup(c, s);
    return IOB_FAIL;
}

static void mdfiles_teardown(iob_ctx *c)
{
    mdf_state *s = c->pattern_state;
    if (s) {
        free(s->wbuf);
        free(s->rbuf);
    }
    iob_pattern_release(c);
}

static void mdfiles_describe(const iob_ctx *c, iob_json *j)
{
    const mdf_state *s = c->pattern_state;
    jw_int(j, "files_per_rank", s->nfiles);
    jw_int(j, "file_size", s->filesize);
}

static const iob_option options[] = {
    {"nfiles", IOB_OPT_INT, "200", .help = "files per rank (default: --size when given)", .min = 1, .max = 10000000},
    {"filesize", IOB_OPT_INT, "307200", .help = "bytes per file (0: empty files, mdtest -w 0)", .min = 0, .max = 1 << 30},
    {0}};
const iob_pattern iob_pattern_mdfiles = {
    .name = "mdfiles",
    .about = "posix only; --size files per rank (nfiles wins)",
    .options = options,
    .check = mdfiles_check,
    .setup = mdfiles_setup,
    .fill = iob_run_nop,
    .clear = iob_run_nop,
    .verify = iob_run_verified_in_run,
    .teardown = mdfiles_teardown,
    .describe = mdfiles_describe,
    .run = mdfiles_run,
};
