/* ior: IOR's layout and semantics (github.com/hpc/ior, src/ior.c and src/aiori-*.c), so iobench can
 * be held against IOR on every backend. Per rank and segment one block of `block` bytes (IOR -b),
 * accessed in calls of `transfer` bytes (IOR -t), `segments` times (IOR -s):
 *
 *   shared file (posix shared, mpiio, hdf5, adios2, sionlib's container):
 *       byte offset = seg*(ranks*block) + rank*block + k*transfer      (segment-major, as IOR)
 *   file per process (posix fpp, IOR -F), file <path>.<rank>:
 *       byte offset = seg*block + k*transfer
 *
 * Declared as `segments` variables "Dataset-0000.<seg>" (IOR's HDF5 dataset names), each a 1-D global
 * array of ranks*block/8 8-byte integers of which rank r owns [r*block/8, (r+1)*block/8), at
 * file_offset seg*ranks*block, with xfer = transfer. So: posix issues one pwrite per transfer,
 * mpiio one MPI_File_write_at(_all) per transfer at IOR's offset, hdf5 one dataset per segment (1-D,
 * H5T_NATIVE_INT64 like IOR's H5T_NATIVE_LLONG) and one hyperslab H5Dwrite per transfer, adios2 one
 * global array per segment with one block per rank (in one step), sionlib one chunk per rank holding
 * its segments in order (independent mode: one sion_fwrite per transfer).
 *
 * Value: the 8-byte integer at shared-file byte offset o holds o/8 + 1, i.e. element e of rank r's
 * block of segment s holds (s*ranks*block + r*block)/8 + e + 1, in every backend and in fpp files too,
 * so a kept file can be checked against IOR's offsets by any tool.
 *
 * Memory, as IOR's: with posix, mpiio and hdf5 (iob_backend.one_xfer_buffer) a rank holds ONE buffer of
 * `transfer` bytes that the backend has refilled with the transfer's values right before each write
 * call, inside the timed loop (IOR refills its transfer buffer per call too); the timed read reads into
 * it and looks at nothing (IOR -r); --verify then re-reads the file through the backend, untimed, and
 * checks every transfer (IOR -R). Writing from a whole segments*block buffer instead reads the data
 * from DRAM, not cache, and was measurably slower than IOR. adios2 and sionlib (whole-block puts)
 * keep one buffer of segments*block bytes, filled before the timer and checked after the read.
 *
 * --size N: block = N MiB unless --param block=SIZE is given. Params (sizes take k/m/g/t, powers of
 * 1024 as IOR's): block, transfer (default 1m, or block if smaller), segments (default 1).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "iobench.h"

typedef struct {
    int64_t block, transfer, segments;
    int one_buffer;  /* the backend refills one transfer buffer per call (xfer_fill) */
    int64_t *data;   /* one_buffer: `transfer` bytes; else segments*block: the rank's blocks in order */
    int bad;         /* verify pass: a mismatch was recorded (the first one only) */
} ior_state;

static const char *const ior_keys[] = {"block", "transfer", "segments", NULL};

/* "123", "4k", "16M", "1g", "2t": bytes (powers of 1024). -1 on bad syntax or overflow of int64. */
static int64_t parse_size(const char *s)
{
    if (!s || !*s || *s < '0' || *s > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return -1;
    int shift = 0;
    if (*end) {
        const char *u = strchr("kmgt", end[0] | 0x20);
        if (!u || end[1])
            return -1;
        shift = 10 * (int)(u - "kmgt" + 1);
    }
    if (v > (unsigned long long)INT64_MAX >> shift)
        return -1;
    return (int64_t)(v << shift);
}

/* Resolve and validate the three sizes; on bad input "what 'value'" in err. */
static int sizes(const iob_opts *o, int nranks, int64_t *block, int64_t *transfer, int64_t *segments,
                 char *err, size_t errlen)
{
    const char *b = iob_kv_get(&o->params, "block"), *t = iob_kv_get(&o->params, "transfer");
    const char *s = iob_kv_get(&o->params, "segments");
    char sz[32];
    if (!b) { /* --size N = N MiB */
        snprintf(sz, sizeof sz, "%lldm", (long long)o->size[0]);
        if (o->nsize != 1) {
            snprintf(err, errlen, "--size for ior (block in MiB, one number) '%lld,...'", (long long)o->size[0]);
            return IOB_BADINPUT;
        }
        b = sz;
    }
    struct { const char *name, *val; int64_t *out; } p[3] = {
        {"block", b, block}, {"transfer", t, transfer}, {"segments", s, segments}};
    *transfer = *segments = 0;
    for (int i = 0; i < 3; i++) {
        if (!p[i].val)
            continue;
        int64_t v = i == 2 ? (strspn(p[i].val, "0123456789") == strlen(p[i].val) ? parse_size(p[i].val) : -1)
                           : parse_size(p[i].val);
        if (v < 0) {
            snprintf(err, errlen, "bad ior param %s (%s, below 2^63) '%s'", p[i].name,
                     i == 2 ? "a count" : "bytes, optional k/m/g/t suffix", p[i].val);
            return IOB_BADINPUT;
        }
        if (v == 0) {
            snprintf(err, errlen, "ior param %s must be > 0 '%s'", p[i].name, p[i].val);
            return IOB_BADINPUT;
        }
        *p[i].out = v;
    }
    if (!*segments)
        *segments = 1;
    if (*segments > INT_MAX) {
        snprintf(err, errlen, "ior param segments must be at most %d '%s'", INT_MAX, s);
        return IOB_BADINPUT;
    }
    if (!*transfer)
        *transfer = *block < (1 << 20) ? *block : (1 << 20);
    if (*transfer % 8 || *transfer / 8 > INT_MAX) {
        snprintf(err, errlen, "ior param transfer must be a multiple of 8 bytes, at most 16 GiB '%s'",
                 t ? t : b);
        return IOB_BADINPUT;
    }
    if (*block % *transfer) {
        snprintf(err, errlen, "ior param block must be a multiple of transfer (%lld bytes) '%s'",
                 (long long)*transfer, b);
        return IOB_BADINPUT;
    }
    int64_t per_seg, total;
    if (__builtin_mul_overflow(*block, (int64_t)nranks, &per_seg) ||
        __builtin_mul_overflow(per_seg, *segments, &total)) {
        snprintf(err, errlen, "ior file size segments x ranks x block overflows 2^63 bytes (%d ranks) "
                 "'%lld x %lld'", nranks, (long long)*segments, (long long)*block);
        return IOB_BADINPUT;
    }
    return IOB_OK;
}

static int ior_check(const iob_opts *o, int nranks, char *err, size_t errlen)
{
    int64_t b, t, s;
    return sizes(o, nranks, &b, &t, &s, err, errlen);
}

/* Shared-file byte offset / 8 + 1 of the first word of the transfer at byte `off` of v's block. */
static int64_t first_value(const iob_var *v, int64_t off)
{
    return (v->file_offset + v->start[0] * 8 + off) / 8 + 1;
}

/* Backend hook before each write call (one_buffer): the transfer's values into the one buffer. */
static void ior_fill_xfer(iob_ctx *c, const iob_var *v, int64_t off)
{
    int64_t *b = v->buf, first = first_value(v, off), n = v->xfer / 8;
    (void)c;
    for (int64_t i = 0; i < n; i++)
        b[i] = first + i;
}

/* Backend hook after each read call of the verify pass: the first mismatch goes into c->errmsg. The
 * transfer loop goes on (collective calls must stay matched over ranks); verify reports it. */
static void ior_check_xfer(iob_ctx *c, const iob_var *v, int64_t off)
{
    ior_state *st = c->pattern_state;
    const int64_t *b = v->buf, first = first_value(v, off), n = v->xfer / 8;
    for (int64_t i = 0; i < n && !st->bad; i++)
        if (b[i] != first + i) {
            st->bad = 1;
            iob_fail(c, "verify: ior rank %d segment %lld transfer %lld byte %lld: expected %lld, read %lld",
                     c->io_rank, (long long)(v->file_offset / (c->nranks * st->block)),
                     (long long)(off / st->transfer), (long long)(i * 8), (long long)(first + i),
                     (long long)b[i]);
        }
}

static int ior_setup(iob_ctx *c)
{
    ior_state *st = c->pattern_state;
    if (!st) {
        char err[256];
        st = calloc(1, sizeof *st);
        if (!st)
            return iob_fail(c, "ior: out of memory");
        c->pattern_state = st;
        sizes(c->opt, c->nranks, &st->block, &st->transfer, &st->segments, err, sizeof err);
        const iob_backend *be = iob_find_backend(c->opt->backend);
        st->one_buffer = be && be->one_xfer_buffer;
        void *mem = NULL;
        if (st->one_buffer) { /* page-aligned, as IOR's aligned_buffer_alloc */
            if (posix_memalign(&mem, 4096, (size_t)st->transfer))
                mem = NULL;
        } else if ((uint64_t)st->segments * (uint64_t)st->block <= SIZE_MAX / 2) {
            mem = malloc((size_t)(st->segments * st->block));
        }
        if (!(st->data = mem) || !(c->vars = calloc((size_t)st->segments, sizeof(iob_var))))
            return iob_fail(c, "ior: cannot allocate %lld bytes for this rank's %s",
                            (long long)(st->one_buffer ? st->transfer : st->segments * st->block),
                            st->one_buffer ? "transfer buffer" : "blocks");
        c->nvars = (int)st->segments;
    }
    int64_t P = c->nranks, r = c->io_rank, n = st->block / 8;
    for (int64_t s = 0; s < st->segments; s++) {
        iob_var *v = &c->vars[s];
        memset(v, 0, sizeof *v);
        snprintf(v->name, sizeof v->name, "Dataset-0000.%04lld", (long long)s);
        v->dtype = IOB_INT64;
        v->nfields = 1;
        v->ndims = 1;
        v->gdims[0] = P * n;
        v->start[0] = r * n;
        v->count[0] = v->mdims[0] = n;
        v->buf = st->one_buffer ? st->data : st->data + s * n;
        v->file_offset = s * P * st->block;
        v->xfer = st->transfer;
        v->xfer_fill = st->one_buffer ? ior_fill_xfer : NULL;
    }
    return IOB_OK;
}

/* Value of element e of segment s of rank r's block: its shared-file byte offset / 8 + 1. */
static int64_t ior_value(const ior_state *st, int64_t P, int64_t r, int64_t s, int64_t e)
{
    return (s * P * st->block + r * st->block) / 8 + e + 1;
}

static void ior_fill(iob_ctx *c)
{
    ior_state *st = c->pattern_state;
    int64_t n = st->block / 8;
    if (st->one_buffer) { /* the backend refills per transfer; touch the pages now, outside the timer */
        ior_fill_xfer(c, &c->vars[0], 0);
        return;
    }
    for (int64_t s = 0; s < st->segments; s++)
        for (int64_t e = 0; e < n; e++)
            st->data[s * n + e] = ior_value(st, c->nranks, c->io_rank, s, e);
}

static void ior_clear(iob_ctx *c)
{
    ior_state *st = c->pattern_state;
    int64_t words = st->one_buffer ? st->transfer / 8 : st->segments * (st->block / 8);
    for (int64_t i = 0; i < words; i++)
        st->data[i] = -1; /* never a file value (those are >= 1) */
}

/* IOR -R: read the file again through the backend (untimed) and check every transfer. All ranks. */
static int ior_verify_reread(iob_ctx *c)
{
    ior_state *st = c->pattern_state;
    const iob_backend *be = iob_find_backend(c->opt->backend);
    int rc = be->open(c, 0), any = 0, opened = rc == IOB_OK;
    MPI_Allreduce(&rc, &any, 1, MPI_INT, MPI_MAX, c->comm);
    st->bad = 0;
    for (int s = 0; s < c->nvars; s++)
        c->vars[s].xfer_read = ior_check_xfer;
    if (any == IOB_OK) {
        rc = be->read(c);
        MPI_Allreduce(&rc, &any, 1, MPI_INT, MPI_MAX, c->comm);
    }
    if (opened)
        rc |= be->close(c);
    for (int s = 0; s < c->nvars; s++)
        c->vars[s].xfer_read = NULL;
    if (rc == IOB_OK && any != IOB_OK) /* another rank failed: the driver reports its message */
        return iob_fail(c, "verify: ior re-read failed on another rank");
    return rc == IOB_OK && !st->bad ? IOB_OK : IOB_FAIL;
}

static int ior_verify(iob_ctx *c)
{
    ior_state *st = c->pattern_state;
    int64_t n = st->block / 8;
    if (st->one_buffer)
        return ior_verify_reread(c);
    for (int64_t s = 0; s < st->segments; s++)
        for (int64_t e = 0; e < n; e++) {
            int64_t want = ior_value(st, c->nranks, c->io_rank, s, e), got = st->data[s * n + e];
            if (got != want)
                return iob_fail(c, "verify: ior rank %d segment %lld transfer %lld byte %lld: expected %lld, "
                                   "read %lld", c->io_rank, (long long)s, (long long)(e * 8 / st->transfer),
                                (long long)(e * 8 % st->transfer), (long long)want, (long long)got);
        }
    return IOB_OK;
}

static void ior_teardown(iob_ctx *c)
{
    ior_state *st = c->pattern_state;
    if (st)
        free(st->data);
    iob_pattern_release(c);
}

static void ior_describe(const iob_ctx *c, iob_json *j)
{
    const ior_state *st = c->pattern_state;
    int fpp = strcmp(c->opt->backend, "posix") == 0 && strcmp(c->opt->mode, "fpp") == 0;
    jw_int(j, "block_size", st->block);
    jw_int(j, "transfer_size", st->transfer);
    jw_int(j, "segments", st->segments);
    jw_int(j, "transfers_per_rank", st->segments * (st->block / st->transfer));
    jw_str(j, "file_layout", fpp ? "file per process: offset = seg*block + k*transfer"
                                 : "shared, segment-major: offset = seg*ranks*block + rank*block + k*transfer");
    jw_int(j, "file_size", fpp ? st->segments * st->block : st->segments * c->nranks * st->block);
}

const iob_pattern iob_pattern_ior = {
    .name = "ior",
    .param_keys = ior_keys,
    .check = ior_check,
    .setup = ior_setup,
    .fill = ior_fill,
    .clear = ior_clear,
    .verify = ior_verify,
    .teardown = ior_teardown,
    .describe = ior_describe,
};
