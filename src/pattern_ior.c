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
 * Value, per transfer as IOR's offset packets (-l o): word j (8 bytes) of the transfer whose first byte
 * is at shared-file byte offset O holds
 *     O/8 + j + 1   if j % 512 == 0  (a stamp: the first word of each 4 KiB, its own shared offset/8+1)
 *     -j            otherwise        (static: the same in every transfer)
 * in every backend and in fpp files too (O is the shared-file offset there as well), so a kept file
 * proves IOR's layout per rank, segment and transfer through the stamps (all >= 1, statics < 0).
 *
 * Memory and work, as IOR's: with posix, mpiio and hdf5 (iob_backend.one_xfer_buffer) a rank holds ONE
 * buffer of `transfer` bytes, filled whole before the timer; before each write call, inside the timed
 * loop, the backend has only its stamps rewritten (one word per 4 KiB, as IOR's
 * update_write_memory_pattern with -l o); the timed read reads into it and looks at nothing (IOR -r);
 * --verify then re-reads the file through the backend, untimed, and checks every word of every
 * transfer (IOR -R). Writing from a whole segments*block buffer instead reads the data from DRAM, not
 * cache, and was measurably slower than IOR; refilling every word per transfer cost a few per cent at
 * 1 rank. adios2 and sionlib (whole-block puts) keep one buffer of segments*block bytes holding the
 * same words, filled before the timer and checked after the read.
 *
 * --size N: block = N MiB unless --param block=SIZE is given. Params (sizes take k/m/g/t, powers of
 * 1024 as IOR's): block, transfer (default 1m, or block if smaller), segments (default 1).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "iobench.h"

typedef struct {
    int64_t block, transfer, segments;
    int one_buffer;  /* the backend restamps one transfer buffer per call (xfer_fill) */
    int64_t *data;   /* one_buffer: `transfer` bytes; else segments*block: the rank's blocks in order */
    int64_t *order;  /* random=1: the order of the transfers of a block (a permutation), else NULL */
    int bad;         /* verify pass: a mismatch was recorded (the first one only) */
} ior_state;

/* Resolve the three sizes (their syntax and ranges are the option table's); on bad input "what
 * 'value'" in err. */
static int sizes(const iob_opts *o, int nranks, int64_t *block, int64_t *transfer, int64_t *segments,
                 char *err, size_t errlen)
{
    const char *b = iob_kv_get(&o->params, "block"), *t = iob_kv_get(&o->params, "transfer");
    if (!b && o->nsize != 1) { /* --size N = N MiB */
        snprintf(err, errlen, "--size for ior (block in MiB, one number) '%lld,...'", (long long)o->size[0]);
        return IOB_BADINPUT;
    }
    *block = b ? iob_param_int(o, "block") : o->size[0] << 20;
    *transfer = iob_param_int(o, "transfer");
    *segments = iob_param_int(o, "segments");
    if (!t && *block < *transfer) /* IOR's default 1 MiB, or the block if smaller */
        *transfer = *block;
    if (*transfer % 8 || *transfer / 8 > INT_MAX) {
        snprintf(err, errlen, "ior param transfer must be a multiple of 8 bytes, at most 16 GiB '%s'",
                 t ? t : b ? b : "the block");
        return IOB_BADINPUT;
    }
    if (*block % *transfer) {
        char sz[32];
        snprintf(sz, sizeof sz, "%lldm", (long long)o->size[0]);
        snprintf(err, errlen, "ior param block must be a multiple of transfer (%lld bytes) '%s'",
                 (long long)*transfer, b ? b : sz);
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
    const iob_backend *be = iob_find_backend(o->backend);
    const char *direct = iob_kv_get(&o->params, "direct"); /* posix's key (checked there) */
    if (sizes(o, nranks, &b, &t, &s, err, errlen))
        return IOB_BADINPUT;
    if (iob_param_int(o, "random") && !(be && be->one_xfer_buffer)) { /* whole-block puts have no transfer order */
        snprintf(err, errlen, "ior param random=1 needs a backend that makes one call per transfer "
                 "(posix, mpiio, hdf5) '%s'", o->backend);
        return IOB_BADINPUT;
    }
    if (direct && strcmp(direct, "1") == 0 && (b % 4096 || t % 4096)) {
        snprintf(err, errlen, "ior with posix direct=1: block and transfer must be multiples of 4096 bytes "
                 "'%lld,%lld'", (long long)b, (long long)t);
        return IOB_BADINPUT;
    }
    return IOB_OK;
}

/* random=1 (IOR -z): this rank's transfers of each block in a random order, a Fisher-Yates shuffle
 * seeded by the block's owner (the same order whichever rank reads it back), made before the timer. */
static void shuffle_order(ior_state *st, int64_t owner)
{
    int64_t n = st->block / st->transfer;
    uint64_t x = 0x9E3779B97F4A7C15ULL * (uint64_t)(owner + 1);
    for (int64_t i = 0; i < n; i++)
        st->order[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
        int64_t j = (int64_t)(x % (uint64_t)(i + 1)), t = st->order[i];
        st->order[i] = st->order[j], st->order[j] = t;
    }
}

/* One stamped word per 4 KiB (IOR's update_write_memory_pattern: word i for i % 512 == 0). */
#define STAMP_EVERY 512
/* Never a file value (stamps >= 1, statics >= -(2^31)): what the buffer holds before a read. */
#define NOT_READ INT64_MIN

/* Word j of the transfer whose first word is at shared-file byte offset `o` (header comment). */
static inline int64_t word_value(int64_t o, int64_t j)
{
    return j % STAMP_EVERY ? -j : o / 8 + j + 1;
}

/* Shared-file byte offset of the transfer at byte `off` of v's block. */
static int64_t xfer_offset(const iob_var *v, int64_t off)
{
    return v->file_offset + v->start[0] * 8 + off;
}

/* Every word of one transfer (before the timer). */
static void fill_whole_xfer(int64_t *b, int64_t n, int64_t o)
{
    for (int64_t j = 0; j < n; j++)
        b[j] = word_value(o, j);
}

/* Backend hook before each write call (one_buffer): only the stamps change between transfers. */
static void ior_fill_xfer(iob_ctx *c, const iob_var *v, int64_t off)
{
    int64_t *b = v->buf, o = xfer_offset(v, off), n = v->xfer / 8;
    (void)c;
    for (int64_t j = 0; j < n; j += STAMP_EVERY)
        b[j] = o / 8 + j + 1;
}

/* First word of b (n words, the transfer at shared offset o) that is not word_value, or -1. */
static int64_t first_bad_word(const int64_t *b, int64_t n, int64_t o)
{
    for (int64_t j = 0; j < n; j++)
        if (b[j] != word_value(o, j))
            return j;
    return -1;
}

/* The message verify fails with: rank, segment, transfer and byte of the first bad word. */
static int report_bad(iob_ctx *c, int64_t seg, int64_t k, int64_t o, int64_t j, int64_t got)
{
    return iob_fail(c, "verify: ior rank %d segment %lld transfer %lld byte %lld: expected %lld, read %lld",
                    c->io_rank, (long long)seg, (long long)k, (long long)(j * 8), (long long)word_value(o, j),
                    (long long)got);
}

/* Backend hook after each read call of the verify pass: the first mismatch goes into c->errmsg. The
 * transfer loop goes on (collective calls must stay matched over ranks); verify reports it. */
static void ior_check_xfer(iob_ctx *c, const iob_var *v, int64_t off)
{
    ior_state *st = c->pattern_state;
    const int64_t *b = v->buf;
    int64_t o = xfer_offset(v, off), j;
    if (st->bad || (j = first_bad_word(b, v->xfer / 8, o)) < 0)
        return;
    st->bad = 1;
    report_bad(c, v->file_offset / (c->nranks * st->block), off / st->transfer, o, j, b[j]);
}

/* IOR's rank 0 probes a shared test file through the I/O library before the write phase's timer
 * (ior.c RemoveFile -> MPIIO_Access, which HDF5_Access calls too without H5Fis_accessible:
 * MPI_File_open(MPI_COMM_SELF, RDONLY | UNIQUE_OPEN), failing when there is no file). The first
 * MPI_File_open of a process loads and selects MPI-IO's components (~1.5 ms here, ~2 % of a 128 MiB
 * write at 1 rank), which that rank's timed open then does not pay; the same probe, on rank 0 only,
 * keeps iobench's timer like IOR's (docs/ior.md). */
static void probe_like_ior(const iob_ctx *c)
{
    char path[4200];
    MPI_File fh;
    snprintf(path, sizeof path, "%s/%s.rep0", c->opt->dir, c->opt->name);
    MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
    if (MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY | MPI_MODE_UNIQUE_OPEN, MPI_INFO_NULL, &fh) ==
        MPI_SUCCESS)
        MPI_File_close(&fh);
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
        if (iob_param_int(c->opt, "random") && !(st->order = malloc(sizeof(int64_t) * (size_t)(st->block / st->transfer))))
            return iob_fail(c, "ior: cannot allocate the random transfer order");
        if (c->rank == 0 && c->opt->do_write &&
            (strcmp(c->opt->backend, "mpiio") == 0 || strcmp(c->opt->backend, "hdf5") == 0))
            probe_like_ior(c);
    }
    int64_t P = c->nranks, r = c->io_rank, n = st->block / 8;
    if (st->order)
        shuffle_order(st, r);
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
        v->order = st->order;
    }
    return IOB_OK;
}

/* Shared-file byte offset of rank r's transfer k of segment s (IOR's GetOffsetArraySequential). */
static int64_t ior_offset(const ior_state *st, int64_t P, int64_t r, int64_t s, int64_t k)
{
    return s * P * st->block + r * st->block + k * st->transfer;
}

static void ior_fill(iob_ctx *c)
{
    ior_state *st = c->pattern_state;
    int64_t xn = st->transfer / 8, per_block = st->block / st->transfer;
    if (st->one_buffer) { /* whole, outside the timer; the backend rewrites the stamps per transfer */
        fill_whole_xfer(st->data, xn, xfer_offset(&c->vars[0], 0));
        return;
    }
    for (int64_t s = 0; s < st->segments; s++)
        for (int64_t k = 0; k < per_block; k++)
            fill_whole_xfer(st->data + (s * per_block + k) * xn, xn,
                            ior_offset(st, c->nranks, c->io_rank, s, k));
}

static void ior_clear(iob_ctx *c)
{
    ior_state *st = c->pattern_state;
    int64_t words = st->one_buffer ? st->transfer / 8 : st->segments * (st->block / 8);
    for (int64_t i = 0; i < words; i++)
        st->data[i] = NOT_READ;
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
    int64_t xn = st->transfer / 8, per_block = st->block / st->transfer;
    if (st->one_buffer)
        return ior_verify_reread(c);
    for (int64_t s = 0; s < st->segments; s++)
        for (int64_t k = 0; k < per_block; k++) {
            const int64_t *b = st->data + (s * per_block + k) * xn;
            int64_t o = ior_offset(st, c->nranks, c->io_rank, s, k), j = first_bad_word(b, xn, o);
            if (j >= 0)
                return report_bad(c, s, k, o, j, b[j]);
        }
    return IOB_OK;
}

static void ior_teardown(iob_ctx *c)
{
    ior_state *st = c->pattern_state;
    if (st) {
        free(st->data);
        free(st->order);
    }
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
    jw_str(j, "transfer_order", st->order ? "random (per block, seeded by its rank)" : "sequential");
    jw_str(j, "file_layout", fpp ? "file per process: offset = seg*block + k*transfer"
                                 : "shared, segment-major: offset = seg*ranks*block + rank*block + k*transfer");
    jw_int(j, "file_size", fpp ? st->segments * st->block : st->segments * c->nranks * st->block);
}

static const iob_option options[] = {
    {"block", IOB_OPT_SIZE, NULL, .help = "bytes per rank and segment (IOR -b; default: --size MiB)", .min = 1},
    {"transfer", IOB_OPT_SIZE, "1m", .help = "bytes per call (IOR -t; the block when smaller)", .min = 1},
    {"segments", IOB_OPT_INT, "1", .help = "blocks per rank (IOR -s)", .min = 1, .max = INT_MAX},
    {"random", IOB_OPT_BOOL, "0", .help = "1: each block's transfers in random order (IOR -z; posix, mpiio, hdf5)"},
    {0}};
const iob_pattern iob_pattern_ior = {
    .name = "ior",
    .about = "--size block MiB (32) unless block is given: IOR's layout, file offsets as IOR's",
    .options = options,
    .check = ior_check,
    .setup = ior_setup,
    .fill = ior_fill,
    .clear = ior_clear,
    .verify = ior_verify,
    .teardown = ior_teardown,
    .describe = ior_describe,
};
