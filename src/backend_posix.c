/* POSIX backend. fpp: one file per rank (path.<rank>), the block packed in C order. shared: one file
 * holding the global array; each contiguous run goes to its global C-order offset. Runs adjacent in the
 * file are gathered into pwritev/preadv calls (up to IOV_MAX buffers) so halo rows cost no extra calls.
 * Calls move at most IOB_POSIX_BATCH bytes, or exactly a variable's xfer when set (pattern ior).
 * Reads with O_DIRECT (direct=1, or the driver's c->read_direct on a pagepool cache): a call whose
 * offset, length or buffers are not block-aligned reads the aligned extent around it into a
 * page-aligned buffer and copies its bytes out. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include "iobench.h"

#define MAXIOV 1024 /* IOV_MAX on Linux */
#define ALIGN 4096  /* O_DIRECT: offsets, lengths and buffers in multiples of the logical block (<= 4 KiB) */
#ifndef IOB_POSIX_BATCH
#define IOB_POSIX_BATCH (4LL << 20) /* bytes per call */
#endif

typedef struct {
    iob_ctx *c;
    int fd, writing;
    char file[4096];
    struct iovec iov[MAXIOV];
    int niov;
    int64_t off, len; /* file extent of the pending batch */
    int64_t lim;      /* bytes per call: the variable's xfer, else IOB_POSIX_BATCH */
    int direct;       /* opened with O_DIRECT */
    char *bounce;     /* O_DIRECT reads of unaligned calls: the aligned extent (bounce_len bytes) */
    int64_t bounce_len;
} posix_state;

static int fpp(const iob_ctx *c) { return strcmp(c->opt->mode, "fpp") == 0; }

static void file_name(const iob_ctx *c, char *out, size_t n)
{
    if (fpp(c))
        snprintf(out, n, "%.4080s.%d", c->path, c->io_rank);
    else
        snprintf(out, n, "%s", c->path);
}

static int files(const iob_ctx *c, char paths[][4096], int max)
{
    if (max < 1)
        return 0;
    file_name(c, paths[0], 4096);
    return 1;
}

static int posix_open(iob_ctx *c, int writing)
{
    posix_state *s = calloc(1, sizeof *s);
    if (!s)
        return iob_fail(c, "posix: out of memory");
    s->c = c;
    s->writing = writing;
    file_name(c, s->file, sizeof s->file);
    s->direct = iob_param_int(c->opt, "direct") || (!writing && c->read_direct);
    int flags = (writing ? O_WRONLY | O_CREAT : O_RDONLY) | (s->direct ? O_DIRECT : 0);
    s->fd = open(s->file, flags, 0644);
    if (s->fd < 0) {
        int e = errno;
        iob_fail(c, "open(%s): %s", s->file, strerror(e));
        free(s);
        return IOB_FAIL;
    }
    c->backend_state = s;
    snprintf(c->sync_method, sizeof c->sync_method, "fsync");
    return IOB_OK;
}

static int aligned(const posix_state *s)
{
    if ((s->off | s->len) % ALIGN)
        return 0;
    for (int i = 0; i < s->niov; i++)
        if (((uintptr_t)s->iov[i].iov_base | s->iov[i].iov_len) % ALIGN)
            return 0;
    return 1;
}

/* O_DIRECT read of a batch that is not block-aligned (benchio's rows, its halo): one pread of the
 * aligned extent around it, then its bytes copied out; the batch's bytes are what is counted. */
static int read_bounced(posix_state *s)
{
    int64_t lo = s->off / ALIGN * ALIGN, hi = (s->off + s->len + ALIGN - 1) / ALIGN * ALIGN, got = 0;
    if (hi - lo > s->bounce_len) {
        free(s->bounce);
        s->bounce_len = posix_memalign((void **)&s->bounce, ALIGN, (size_t)(hi - lo)) ? 0 : hi - lo;
        if (!s->bounce_len)
            return iob_fail(s->c, "posix: out of memory for an O_DIRECT buffer of %lld bytes", (long long)(hi - lo));
    }
    while (lo + got < s->off + s->len) {
        ssize_t r = pread(s->fd, s->bounce + got, (size_t)(hi - lo - got), lo + got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return iob_fail(s->c, "pread(%s, offset %lld, O_DIRECT): %s", s->file, (long long)(lo + got),
                            r ? strerror(errno) : "unexpected end of file");
        got += r;
    }
    const char *p = s->bounce + (s->off - lo);
    for (int i = 0; i < s->niov; p += s->iov[i].iov_len, i++)
        memcpy(s->iov[i].iov_base, p, s->iov[i].iov_len);
    s->c->moved += s->len;
    s->niov = 0;
    s->len = 0;
    return IOB_OK;
}

/* Issue the pending batch, looping on short transfers and EINTR. */
static int flush(posix_state *s)
{
    if (s->direct && !s->writing && !aligned(s))
        return read_bounced(s);
    int64_t done = 0, off = s->off;
    struct iovec *iov = s->iov;
    int n = s->niov;
    while (n > 0) {
        ssize_t r = s->writing ? pwritev(s->fd, iov, n, off) : preadv(s->fd, iov, n, off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return iob_fail(s->c, "%s(%s, offset %lld): %s", s->writing ? "pwritev" : "preadv", s->file,
                            (long long)off, strerror(errno));
        if (r == 0) /* no progress: end of file (read) or a write that moves nothing (would loop) */
            return iob_fail(s->c, "%s(%s, offset %lld): %s (%lld of %lld bytes)", s->writing ? "pwritev" : "preadv",
                            s->file, (long long)off, s->writing ? "wrote 0 bytes" : "unexpected end of file",
                            (long long)done, (long long)s->len);
        done += r, off += r;
        s->c->moved += r; /* counted as the calls returned them */
        while (n > 0 && (size_t)r >= iov->iov_len)
            r -= (ssize_t)iov->iov_len, iov++, n--;
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + r;
            iov->iov_len -= (size_t)r;
        }
    }
    s->niov = 0;
    s->len = 0;
    return IOB_OK;
}

static int add_run(void *arg, int64_t file_off, void *mem, int64_t bytes)
{
    posix_state *s = arg;
    /* calls of at most s->lim bytes (IOR-like 4 MiB transfers, or the variable's xfer exactly) */
    while (bytes > 0) {
        int64_t chunk = bytes > s->lim ? s->lim : bytes;
        if (s->niov && (s->niov == MAXIOV || file_off != s->off + s->len || s->len + chunk > s->lim))
            if (flush(s))
                return IOB_FAIL;
        if (s->niov == 0)
            s->off = file_off;
        s->iov[s->niov].iov_base = mem;
        s->iov[s->niov].iov_len = (size_t)chunk;
        s->niov++;
        s->len += chunk;
        file_off += chunk, mem = (char *)mem + chunk, bytes -= chunk;
    }
    return IOB_OK;
}

/* Pattern ior with one transfer buffer (v->xfer_fill set): refill it before each pwrite, hand it to
 * xfer_read after each pread, one call of xfer bytes per transfer as IOR's POSIX backend. */
static int transfer_one_buffer(posix_state *s, const iob_var *v, int64_t file_off)
{
    int64_t n = v->count[0] * iob_var_elem_bytes(v) / v->xfer;
    for (int64_t i = 0; i < n; i++) {
        int64_t done = (v->order ? v->order[i] : i) * v->xfer;
        if (s->writing)
            v->xfer_fill(s->c, v, done);
        s->iov[0].iov_base = v->buf;
        s->iov[0].iov_len = (size_t)v->xfer;
        s->niov = 1, s->off = file_off + done, s->len = v->xfer;
        if (flush(s))
            return IOB_FAIL;
        if (!s->writing && v->xfer_read)
            v->xfer_read(s->c, v, done);
    }
    return IOB_OK;
}

static int transfer(iob_ctx *c)
{
    posix_state *s = c->backend_state;
    int64_t packed = 0;
    for (int i = 0; i < c->nvars; i++) {
        iob_var v = c->vars[i];
        if (v.xfer_fill) { /* 1-D, no halo: the block is one run */
            if (s->niov && flush(s))
                return IOB_FAIL;
            int64_t off = fpp(c) ? packed : v.file_offset + v.start[0] * iob_var_elem_bytes(&v);
            packed += v.count[0] * iob_var_elem_bytes(&v);
            if (transfer_one_buffer(s, &c->vars[i], off))
                return IOB_FAIL;
            continue;
        }
        if (s->niov && (v.xfer ? v.xfer : IOB_POSIX_BATCH) != s->lim && flush(s))
            return IOB_FAIL;
        s->lim = v.xfer ? v.xfer : IOB_POSIX_BATCH;
        if (fpp(c)) { /* the rank's own file holds its blocks packed one after another */
            for (int d = 0; d < v.ndims; d++)
                v.gdims[d] = v.count[d], v.start[d] = 0;
            v.file_offset = packed;
            packed += iob_var_count_elems(&v) * iob_var_elem_bytes(&v);
        }
        if (iob_var_foreach_run(&v, add_run, s))
            return IOB_FAIL;
    }
    return s->niov ? flush(s) : IOB_OK;
}

static int posix_sync(iob_ctx *c)
{
    posix_state *s = c->backend_state;
    if (fsync(s->fd) != 0)
        return iob_fail(c, "fsync(%s): %s", s->file, strerror(errno));
    return IOB_OK;
}

static int posix_close(iob_ctx *c)
{
    posix_state *s = c->backend_state;
    if (!s)
        return IOB_OK;
    int rc = close(s->fd), e = errno;
    c->backend_state = NULL;
    char file[4096];
    snprintf(file, sizeof file, "%s", s->file);
    free(s->bounce);
    free(s);
    return rc == 0 ? IOB_OK : iob_fail(c, "close(%s): %s", file, strerror(e));
}

/* direct=1: O_DIRECT (IOR's --posix.odirect): no page cache on either side; the transfers must be
 * aligned, so only pattern ior, whose one transfer buffer is page-aligned (its sizes are checked there). */
static int check(const iob_opts *o, int nranks, char *err, size_t errlen)
{
    if (iob_param_int(o, "direct") && strcmp(o->pattern, "ior") != 0) {
        snprintf(err, errlen, "posix param direct=1 needs --pattern ior (aligned transfers) '%s'", o->pattern);
        return IOB_BADINPUT;
    }
    return IOB_OK;
}

static const char *const modes[] = {"fpp", "shared", NULL};
static const iob_option options[] = {
    {"direct", IOB_OPT_BOOL, "0", .help = "1: O_DIRECT for the timed write and read (IOR --posix.odirect); pattern ior, "
                                  "block and transfer multiples of 4096"},
    {0}};
const iob_backend iob_backend_posix = {
    .name = "posix", .modes = modes, .options = options, .check = check, .files = files,
    .open = posix_open, .write = transfer, .read = transfer, .sync = posix_sync, .close = posix_close,
    .one_xfer_buffer = 1, .direct_read = 1,
};
