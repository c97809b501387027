/* SIONlib backend: one container file per communicator (sion_paropen_mpi, numFiles = 1), each rank's
 * variables packed one after another into its own chunk. File mode "posix" so the I/O is plain
 * POSIX (Darshan's POSIX module sees it). Modes: independent (sion_fwrite/sion_fread), collective
 * (sion_coll_fwrite/fread: collectors write for groups of ranks) and collectivemerge (a collector
 * writes its group's data as one chunk of its own; the senders' chunks stay empty, so reads split
 * the collector's data by original rank and send each rank its block).
 * Reads open the container on a communicator ordered by io_rank, so with rank shift each process
 * reads the chunk another node wrote. SIONlib writes its metadata at sion_parclose_mpi, so sync()
 * closes and then fsyncs the container by path, inside the timer. SIONlib reports errors on stderr
 * only: each call's is captured (sionlib_msg.h) so the message carries the library's text.
 * Independent mode writes and reads in calls of a variable's xfer bytes when the pattern sets one (ior).
 * Params: the table at the end. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "iobench.h" /* mpi.h first: sion.h declares the MPI API only when MPI is seen */
#include <sion.h>
#include "sionlib_msg.h"

#define PIECE (1LL << 30) /* largest single transfer: keeps write()/MPI counts far from 2^31 */

typedef struct {
    MPI_Comm comm;        /* ranks ordered by io_rank: rank k here accesses task k's chunk */
    int sid, writing, merged, coll;
    char *packed;         /* this rank's variables packed one after another */
    int in_place;         /* packed is the variables' own memory (contiguous()): not copied, not freed */
    int64_t bytes;        /* this rank's payload */
    int64_t piece;        /* largest independent write: the chunk size, at most PIECE */
} sion_state;

/* ---- params (their types and ranges: the table at the end) -------------------------------------- */
static int check(const iob_opts *o, int nranks, char *err, size_t errlen)
{
    long long mem = (long long)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE);
    const char *v;
    if ((v = iob_kv_get(&o->params, "chunksize")) && iob_param_int(o, "chunksize") > mem) {
        snprintf(err, errlen, "sionlib param chunksize must be at most this node's memory (%lld bytes) '%s'", mem, v);
        return IOB_BADINPUT;
    }
    if ((v = iob_kv_get(&o->params, "collsize")) && iob_param_int(o, "collsize") > nranks) {
        snprintf(err, errlen, "sionlib param collsize must be -1 or 1..%d ranks '%s'", nranks, v);
        return IOB_BADINPUT;
    }
    return IOB_OK;
}

static int files(const iob_ctx *c, char paths[][4096], int max)
{
    if (max < 1)
        return 0;
    snprintf(paths[0], 4096, "%s", c->path);
    return 1;
}

/* ---- pack / unpack the rank's variables --------------------------------------------------------- */
/* The packed layout is the posix fpp one: each variable's block in C order, one after another. */
static void pack(iob_ctx *c, char *packed, int to_file)
{
    for (int i = 0; i < c->nvars; i++) {
        iob_var_pack(&c->vars[i], packed, to_file);
        packed += iob_var_count_elems(&c->vars[i]) * iob_var_elem_bytes(&c->vars[i]);
    }
}

/* The variables' memory when it already is the packed layout (no halo, each block right after the
 * previous one, as pattern ior's segments): then nothing is allocated or copied inside the timed span,
 * as IOR's SIONlib backend writes from its buffer. NULL otherwise (benchio's halo: pack, as a code
 * using SIONlib would). */
static char *contiguous(const iob_ctx *c)
{
    char *next = NULL;
    for (int i = 0; i < c->nvars; i++) {
        const iob_var *v = &c->vars[i];
        for (int d = 0; d < v->ndims; d++)
            if (v->mdims[d] != v->count[d] || v->moff[d] != 0)
                return NULL;
        if (i > 0 && (char *)v->buf != next)
            return NULL;
        next = (char *)v->buf + iob_var_count_elems(v) * iob_var_elem_bytes(v);
    }
    return c->nvars > 0 ? (char *)c->vars[0].buf : NULL;
}

/* ---- open / write / read ------------------------------------------------------------------------ */
static int sion_open_(iob_ctx *c, int writing)
{
    const iob_opts *o = c->opt;
    sion_state *s = calloc(1, sizeof *s);
    if (!s)
        return iob_fail(c, "sionlib: out of memory");
    c->backend_state = s;
    s->sid = -1;
    s->comm = MPI_COMM_NULL;
    s->writing = writing;
    s->merged = strcmp(o->mode, "collectivemerge") == 0;
    s->coll = strcmp(o->mode, "independent") != 0;
    snprintf(c->sync_method, sizeof c->sync_method, "fsync of container after sion_parclose_mpi");
    for (int i = 0; i < c->nvars; i++)
        s->bytes += iob_var_count_elems(&c->vars[i]) * iob_var_elem_bytes(&c->vars[i]);
    s->in_place = (s->packed = contiguous(c)) != NULL;
    if (s->bytes > 0 && !s->in_place && !(s->packed = malloc((size_t)s->bytes)))
        return iob_fail(c, "sionlib: out of memory for %lld bytes", (long long)s->bytes);
    if (iob_mpi_check(c, MPI_Comm_split(c->comm, 0, c->io_rank, &s->comm), "MPI_Comm_split"))
        return IOB_FAIL;

    const char *v;
    sion_int64 chunksize = iob_kv_get(&o->params, "chunksize") ? iob_param_int(o, "chunksize")
                                                              : s->bytes > 0 ? s->bytes : 1;
    sion_int32 fsblksize = (sion_int32)iob_param_int(o, "fsblksize");
    if (writing && s->coll && chunksize < s->bytes)
        return iob_fail(c, "sionlib: chunksize %lld is smaller than this rank's block of %lld bytes; the "
                           "collective modes write each block with one call", (long long)chunksize,
                        (long long)s->bytes);
    char fmode[256];
    snprintf(fmode, sizeof fmode, "%s,posix%s%s", writing ? "bw" : "br", s->coll ? ",collective" : "",
             s->merged ? ",collectivemerge" : "");
    if (s->coll && (v = iob_kv_get(&o->params, "collsize")))
        snprintf(fmode + strlen(fmode), sizeof fmode - strlen(fmode), ",collsize=%s", v);
    if (s->merged && !writing) /* merged data is read back plainly and split by original rank below */
        snprintf(fmode, sizeof fmode, "br,posix");

    int nfiles = 1, grank = c->io_rank;
    char *newname = NULL, msg[IOB_ERRLEN], call[4400];
    MPI_Comm lcomm = s->comm;
    cap_begin();
    errno = 0;
    s->sid = sion_paropen_mpi(c->path, fmode, &nfiles, s->comm, &lcomm, &chunksize, &fsblksize, &grank, NULL,
                              &newname);
    int e = errno;
    cap_end(msg, sizeof msg);
    free(newname);
    if (s->sid < 0) {
        snprintf(call, sizeof call, "sion_paropen_mpi(%s, \"%s\")", c->path, fmode);
        if (!writing && strstr(msg, "ntasks")) /* the container fixes the task count */
            snprintf(msg + strlen(msg), sizeof msg - strlen(msg),
                     " -- a SIONlib container is read by as many ranks as wrote it (%d now)", c->nranks);
        return sionfail(c, call, msg, e);
    }
    if (!writing) { /* SIONlib checks the task count only for multi-file containers: check it here */
        int ntasks = -1, maxchunks;
        sion_int64 skip, varheader, *chunks, *granks, *bcount, *bsizes;
        sion_get_locations(s->sid, &ntasks, &maxchunks, &skip, &varheader, &chunks, &granks, &bcount, &bsizes);
        if (ntasks != c->nranks)
            return iob_fail(c, "sion_paropen_mpi(%s): container was written by %d tasks, this run has %d ranks: "
                               "SIONlib gives each rank the chunk of the task with its rank, so read it with "
                               "-np %d", c->path, ntasks, c->nranks, ntasks);
    }
    s->piece = chunksize < PIECE ? chunksize : PIECE;
    if (c->nvars > 0 && c->vars[0].xfer > 0 && c->vars[0].xfer < s->piece)
        s->piece = c->vars[0].xfer; /* pattern ior: one sion_fwrite/sion_fread per transfer */
    char val[64];
    iob_kv_put(&c->hints_in_effect, writing ? "file_mode_write" : "file_mode_read", fmode);
    snprintf(val, sizeof val, "%d", (int)fsblksize);
    iob_kv_put(&c->hints_in_effect, "fsblksize", val);
    snprintf(val, sizeof val, "%lld", (long long)chunksize);
    iob_kv_put(&c->hints_in_effect, "chunksize", val);
    return IOB_OK;
}

static int sion_write_(iob_ctx *c)
{
    sion_state *s = c->backend_state;
    char msg[IOB_ERRLEN];
    if (!s->in_place)
        pack(c, s->packed, 1);
    /* collective calls must match across ranks: one per rank; independent ones go piece by piece */
    int64_t done = 0;
    do {
        int64_t n = s->coll ? s->bytes : s->bytes - done;
        if (!s->coll && n > s->piece) /* a write must fit into one chunk; SIONlib starts new blocks */
            n = s->piece;
        cap_begin();
        errno = 0;
        size_t w = s->coll ? sion_coll_fwrite(s->packed + done, 1, (size_t)n, s->sid)
                           : sion_fwrite(s->packed + done, 1, (size_t)n, s->sid);
        int e = errno;
        cap_end(msg, sizeof msg);
        c->moved += (int64_t)w;
        if ((int64_t)w != n) {
            char call[128];
            snprintf(call, sizeof call, "%s(%lld bytes at %lld)", s->coll ? "sion_coll_fwrite" : "sion_fwrite",
                     (long long)n, (long long)done);
            return sionfail(c, call, msg, e);
        }
        done += n;
    } while (done < s->bytes);
    return IOB_OK;
}

/* Read `bytes` of this task's chunk(s) into buf: sion_fread does not cross block boundaries. */
static int read_own(iob_ctx *c, sion_state *s, char *buf, int64_t bytes)
{
    char msg[IOB_ERRLEN];
    for (int64_t done = 0; done < bytes;) {
        if (sion_feof(s->sid))
            return iob_fail(c, "sion_fread(%s): container holds %lld bytes for task %d, expected %lld "
                               "(written with another --size or rank count?)", c->path, (long long)done,
                            c->io_rank, (long long)bytes);
        int64_t n = sion_bytes_avail_in_chunk(s->sid);
        if (n > bytes - done)
            n = bytes - done;
        if (n > s->piece)
            n = s->piece;
        cap_begin();
        errno = 0;
        size_t r = sion_fread(buf + done, 1, (size_t)n, s->sid);
        int e = errno;
        cap_end(msg, sizeof msg);
        c->moved += (int64_t)r;
        if ((int64_t)r != n)
            return sionfail(c, "sion_fread", msg, e);
        done += n;
    }
    return IOB_OK;
}

/* Bytes this task's chunk(s) hold (sum over its blocks). */
static int64_t chunk_bytes(sion_state *s)
{
    int cur = 0, nblocks = 0;
    sion_int64 pos = 0, *sizes = NULL, sum = 0;
    if (sion_get_current_location(s->sid, &cur, &pos, &nblocks, &sizes) != SION_SUCCESS)
        return -1;
    for (int b = 0; b < nblocks; b++)
        sum += sizes[b];
    return sum;
}

static int send_big(char *p, int64_t n, int peer, MPI_Comm comm, int recv)
{
    for (int64_t off = 0; off < n; off += PIECE) {
        int k = (int)(n - off > PIECE ? PIECE : n - off);
        int rc = recv ? MPI_Recv(p + off, k, MPI_BYTE, peer, 7, comm, MPI_STATUS_IGNORE)
                      : MPI_Send(p + off, k, MPI_BYTE, peer, 7, comm);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

/* collectivemerge: task k's chunk holds its group's blocks in task order; the following tasks' chunks
 * are empty. Each collector reads its chunk and sends each sender its block. */
static int read_merged(iob_ctx *c, sion_state *s)
{
    int n, me;
    MPI_Comm_size(s->comm, &n);
    MPI_Comm_rank(s->comm, &me);
    int64_t mine[2] = {s->bytes, chunk_bytes(s)}, *all = malloc(sizeof(int64_t) * 2 * (size_t)n);
    if (!all)
        return iob_fail(c, "sionlib: out of memory");
    MPI_Allgather(mine, 2, MPI_INT64_T, all, 2, MPI_INT64_T, s->comm);
    for (int k = 0; k < n; k++)
        if (all[2 * k + 1] < 0) { /* the failing rank says so; the driver stops every rank */
            free(all);
            return k == me ? iob_fail(c, "sion_get_current_location(%s): failed", c->path) : IOB_OK;
        }
    /* a group = a task with a non-empty chunk and the empty ones after it; its blocks must add up */
    int coll = -1, bad = -1, rc = IOB_OK;
    int64_t group = 0;
    for (int k = 0; k <= n && bad < 0; k++) {
        if (k == n || all[2 * k + 1] > 0) {
            if (coll >= 0 && group != all[2 * coll + 1])
                bad = coll;
            coll = k, group = 0;
        } else if (coll < 0 && all[2 * k] > 0) {
            bad = k; /* data before any collector */
        }
        if (k < n)
            group += all[2 * k];
    }
    if (bad >= 0) {
        free(all);
        return iob_fail(c, "sionlib: merged chunk of task %d does not hold its group's blocks (written with "
                           "another --size or rank count?)", bad);
    }
    int my_coll = me, failed;
    while (my_coll > 0 && all[2 * my_coll + 1] == 0)
        my_coll--;
    int64_t have = all[2 * me + 1];
    char *buf = (have == s->bytes || have == 0) ? s->packed : malloc((size_t)have);
    if (!buf)
        rc = iob_fail(c, "sionlib: out of memory for %lld bytes", (long long)have);
    if (rc == IOB_OK && have > 0)
        rc = read_own(c, s, buf, have);
    /* senders wait for their collector: exchange only when every collector has its data */
    MPI_Allreduce(&rc, &failed, 1, MPI_INT, MPI_MAX, s->comm);
    if (!failed && my_coll == me && have > 0) {
        int64_t at = all[2 * me]; /* the senders' blocks follow the collector's own */
        for (int k = me + 1; rc == IOB_OK && k < n && all[2 * k + 1] == 0; at += all[2 * k], k++)
            if (all[2 * k] > 0)
                rc = iob_mpi_check(c, send_big(buf + at, all[2 * k], k, s->comm, 0), "MPI_Send(merged block)");
        if (rc == IOB_OK && buf != s->packed)
            memcpy(s->packed, buf, (size_t)s->bytes);
    } else if (!failed && s->bytes > 0) {
        rc = iob_mpi_check(c, send_big(s->packed, s->bytes, my_coll, s->comm, 1), "MPI_Recv(merged block)");
    } /* else: the failing rank recorded why; the driver stops every rank */
    if (buf && buf != s->packed)
        free(buf);
    free(all);
    return rc;
}

static int sion_read_(iob_ctx *c)
{
    sion_state *s = c->backend_state;
    int rc;
    if (s->merged) {
        rc = read_merged(c, s);
    } else if (s->coll) {
        char msg[IOB_ERRLEN];
        cap_begin();
        errno = 0;
        size_t r = sion_coll_fread(s->packed, 1, (size_t)s->bytes, s->sid);
        int e = errno;
        cap_end(msg, sizeof msg);
        c->moved += (int64_t)r;
        rc = (int64_t)r == s->bytes ? IOB_OK : sionfail(c, "sion_coll_fread", msg, e);
    } else {
        rc = read_own(c, s, s->packed, s->bytes);
    }
    if (rc == IOB_OK)
        if (!s->in_place)
            pack(c, s->packed, 0);
    return rc;
}

/* ---- sync / close ------------------------------------------------------------------------------- */
static int parclose(iob_ctx *c, sion_state *s)
{
    char msg[IOB_ERRLEN], call[4200];
    cap_begin();
    errno = 0;
    int rc = sion_parclose_mpi(s->sid), e = errno;
    cap_end(msg, sizeof msg);
    s->sid = -1;
    snprintf(call, sizeof call, "sion_parclose_mpi(%s)", c->path);
    return rc == SION_SUCCESS ? IOB_OK : sionfail(c, call, msg, e);
}

static int sion_sync_(iob_ctx *c)
{
    sion_state *s = c->backend_state;
    if (parclose(c, s)) /* writes the metadata blocks: they must be durable too */
        return IOB_FAIL;
    /* one fsync per node: its page cache holds every dirty page of the file */
    return c->node_rank == 0 ? iob_fsync_path(c, c->path) : IOB_OK;
}

static int sion_close_(iob_ctx *c)
{
    sion_state *s = c->backend_state;
    if (!s)
        return IOB_OK;
    int rc = s->sid >= 0 ? parclose(c, s) : IOB_OK;
    if (s->comm != MPI_COMM_NULL)
        MPI_Comm_free(&s->comm);
    if (!s->in_place)
        free(s->packed);
    free(s);
    c->backend_state = NULL;
    return rc;
}

static void versions(iob_kvlist *out)
{
    int major = 0, minor = 0, patch = 0, format = 0;
    char v[64];
    sion_get_version(&major, &minor, &patch, &format);
    snprintf(v, sizeof v, "%d.%d.%d (file format %d)", major, minor, patch, format);
    iob_kv_put(out, "sionlib", v);
}

static const char *const modes[] = {"independent", "collective", "collectivemerge", NULL};
static const iob_option options[] = {
    {"chunksize", IOB_OPT_INT, NULL, .help = "bytes per task chunk (default: this rank's block)", .min = 1},
    {"fsblksize", IOB_OPT_INT, "-1", .help = "file system block size in bytes (-1: SIONlib detects)", .min = 1,
     .max = INT32_MAX, .special = "-1"},
    {"collsize", IOB_OPT_INT, "-1", .help = "ranks per collector (-1: SIONlib decides)", .min = 1, .max = INT32_MAX,
     .special = "-1", .modes = "collective|collectivemerge"},
    {0}};
const iob_backend iob_backend_sionlib = {
    .name = "sionlib", .modes = modes, .options = options, .check = check, .files = files,
    .open = sion_open_, .write = sion_write_, .read = sion_read_, .sync = sion_sync_, .close = sion_close_,
    .versions = versions,
};
