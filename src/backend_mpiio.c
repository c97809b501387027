/* MPI-IO backend: one shared file; each variable through a subarray file view at its file_offset;
 * independent (MPI_File_write/read) or collective (MPI_File_write_all/read_all) access; the memory
 * datatype strips the halo; MPI_File_sync makes the data durable inside the timer. A variable with xfer
 * set (pattern ior) goes as IOR's MPIIO backend does: explicit offsets, one call per transfer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "iobench.h"

typedef struct { MPI_File fh; } mpiio_state;

/* Open MPI's OMPIO can return MPI_SUCCESS from collective writes whose pwritev failed (disk full):
 * errno from the failed system call is then the only trace left, so these values fail the call. */
static int io_errno_fatal(int e) { return e == ENOSPC || e == EDQUOT || e == EIO || e == EFBIG; }

static int files(const iob_ctx *c, char paths[][4096], int max)
{
    if (max < 1)
        return 0;
    snprintf(paths[0], 4096, "%s", c->path);
    return 1;
}

static int mpiio_open(iob_ctx *c, int writing)
{
    mpiio_state *s = calloc(1, sizeof *s);
    if (!s)
        return iob_fail(c, "mpiio: out of memory");
    MPI_Info info = iob_make_info(c->opt);
    char call[4200];
    snprintf(call, sizeof call, "MPI_File_open(%s)", c->path);
    /* errors come back as codes (the default for files, made explicit) */
    MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
    int rc = MPI_File_open(c->comm, c->path, writing ? MPI_MODE_CREATE | MPI_MODE_WRONLY : MPI_MODE_RDONLY,
                           info, &s->fh);
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    if (iob_mpi_check(c, rc, call)) {
        free(s);
        return IOB_FAIL;
    }
    MPI_File_set_errhandler(s->fh, MPI_ERRORS_RETURN);
    /* IOR's create truncates, collectively (aiori-MPIIO.c: MPI_File_set_size(fd, 0) for IOR_TRUNC): the
     * same call inside the timed open, so both tools' opens do the same work (docs/ior.md) */
    if (writing) {
        snprintf(call, sizeof call, "MPI_File_set_size(%s, 0)", c->path);
        if (iob_mpi_check(c, MPI_File_set_size(s->fh, 0), call)) {
            MPI_File_close(&s->fh);
            free(s);
            return IOB_FAIL;
        }
    }
    iob_record_file_info(c, s->fh);
    snprintf(c->sync_method, sizeof c->sync_method, "MPI_File_sync");
    c->backend_state = s;
    return IOB_OK;
}

/* Bytes a completed call moved, from its status (counted, not assumed). */
static int64_t status_bytes(MPI_Status *st)
{
    MPI_Count n = 0;
    MPI_Get_elements_x(st, MPI_BYTE, &n);
    return n > 0 ? (int64_t)n : 0;
}

/* A 1-D block in calls of v->xfer bytes at explicit offsets, as IOR does (MPI_File_write_at or
 * MPI_File_write_at_all per transfer; every rank makes the same number of calls). */
static int transfer_xfer(iob_ctx *c, mpiio_state *s, const iob_var *v, int writing, int coll)
{
    const char *name = writing ? (coll ? "MPI_File_write_at_all" : "MPI_File_write_at")
                               : (coll ? "MPI_File_read_at_all" : "MPI_File_read_at");
    int64_t eb = iob_var_elem_bytes(v), bytes = v->count[0] * eb, n = v->xfer / eb;
    MPI_Datatype el = MPI_INT64_T; /* 8-byte elements: up to 2^34 bytes per call */
    char call[4400];
    for (int64_t i = 0; i < bytes / v->xfer; i++) {
        int64_t done = (v->order ? v->order[i] : i) * v->xfer;
        MPI_Offset off = (MPI_Offset)(v->file_offset + v->start[0] * eb + done);
        char *p = v->xfer_fill ? v->buf : (char *)v->buf + done; /* one refilled buffer, as IOR's */
        MPI_Status st;
        if (writing && v->xfer_fill)
            v->xfer_fill(c, v, done);
        errno = 0;
        int rc = writing ? (coll ? MPI_File_write_at_all(s->fh, off, p, (int)n, el, &st)
                                 : MPI_File_write_at(s->fh, off, p, (int)n, el, &st))
                         : (coll ? MPI_File_read_at_all(s->fh, off, p, (int)n, el, &st)
                                 : MPI_File_read_at(s->fh, off, p, (int)n, el, &st));
        int io_errno = errno;
        snprintf(call, sizeof call, "%s(%s, var %s, offset %lld)", name, c->path, v->name, (long long)off);
        if (rc == MPI_SUCCESS && io_errno_fatal(io_errno))
            return iob_fail(c, "%s: MPI returned success but the I/O layer failed with errno %d: %s", call,
                            io_errno, strerror(io_errno));
        if (iob_mpi_check(c, rc, call))
            return IOB_FAIL;
        int64_t moved = status_bytes(&st);
        c->moved += moved;
        if (moved != n * eb) /* a short (or over-long) count that MPI let pass without an error */
            return iob_fail(c, "%s: the call moved %lld bytes, asked for %lld", call, (long long)moved,
                            (long long)(n * eb));
        if (!writing && v->xfer_read)
            v->xfer_read(c, v, done);
    }
    return IOB_OK;
}

static int transfer(iob_ctx *c, int writing)
{
    mpiio_state *s = c->backend_state;
    int coll = strcmp(c->opt->mode, "collective") == 0;
    const char *name = writing ? (coll ? "MPI_File_write_all" : "MPI_File_write")
                               : (coll ? "MPI_File_read_all" : "MPI_File_read");
    for (int i = 0; i < c->nvars; i++) {
        const iob_var *v = &c->vars[i];
        if (v->xfer > 0) {
            if (transfer_xfer(c, s, v, writing, coll))
                return IOB_FAIL;
            continue;
        }
        MPI_Datatype ftype, mtype, etype = MPI_BYTE;
        if (iob_var_filetype(c, v, &ftype))
            return IOB_FAIL;
        if (iob_var_memtype(c, v, &mtype)) {
            MPI_Type_free(&ftype);
            return IOB_FAIL;
        }
        MPI_Info info = iob_make_info(c->opt);
        int rc = MPI_File_set_view(s->fh, v->file_offset, etype, ftype, "native", info);
        if (info != MPI_INFO_NULL)
            MPI_Info_free(&info);
        char call[4400];
        snprintf(call, sizeof call, "MPI_File_set_view(%s)", v->name);
        if (iob_mpi_check(c, rc, call) == IOB_OK) {
            MPI_Status st;
            errno = 0;
            if (writing)
                rc = coll ? MPI_File_write_all(s->fh, v->buf, 1, mtype, &st)
                          : MPI_File_write(s->fh, v->buf, 1, mtype, &st);
            else
                rc = coll ? MPI_File_read_all(s->fh, v->buf, 1, mtype, &st)
                          : MPI_File_read(s->fh, v->buf, 1, mtype, &st);
            int io_errno = errno;
            snprintf(call, sizeof call, "%s(%s, var %s)", name, c->path, v->name);
            if (rc == MPI_SUCCESS && io_errno_fatal(io_errno))
                iob_fail(c, "%s: MPI returned success but the I/O layer failed with errno %d: %s", call,
                         io_errno, strerror(io_errno));
            else if (iob_mpi_check(c, rc, call) == IOB_OK) {
                /* all bytes moved? one memtype element expected (none if this rank owns nothing) */
                MPI_Count size = 0;
                MPI_Type_size_x(mtype, &size);
                int64_t moved = status_bytes(&st);
                c->moved += moved;
                if (moved != (int64_t)size)
                    iob_fail(c, "%s: the call moved %lld bytes, asked for %lld (errno: %s)", call,
                             (long long)moved, (long long)size, io_errno ? strerror(io_errno) : "none");
            }
        }
        MPI_Type_free(&ftype);
        MPI_Type_free(&mtype);
        if (c->errmsg[0])
            return IOB_FAIL;
    }
    return IOB_OK;
}

static int mpiio_write(iob_ctx *c) { return transfer(c, 1); }
static int mpiio_read(iob_ctx *c) { return transfer(c, 0); }

static int mpiio_sync(iob_ctx *c)
{
    mpiio_state *s = c->backend_state;
    char call[4200];
    snprintf(call, sizeof call, "MPI_File_sync(%s)", c->path);
    return iob_mpi_check(c, MPI_File_sync(s->fh), call);
}

static int mpiio_close(iob_ctx *c)
{
    mpiio_state *s = c->backend_state;
    if (!s)
        return IOB_OK;
    c->backend_state = NULL;
    char call[4200];
    snprintf(call, sizeof call, "MPI_File_close(%s)", c->path);
    int rc = MPI_File_close(&s->fh);
    free(s);
    return iob_mpi_check(c, rc, call);
}

static const char *const modes[] = {"independent", "collective", NULL};
const iob_backend iob_backend_mpiio = {
    .name = "mpiio", .modes = modes, .files = files, .open = mpiio_open,
    .write = mpiio_write, .read = mpiio_read, .sync = mpiio_sync, .close = mpiio_close, .one_xfer_buffer = 1,
};
