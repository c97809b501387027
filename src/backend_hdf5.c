/* Parallel HDF5 backend: one file, one dataset per variable (global dims, this rank's hyperslab; the
 * memory space selects the block inside the halo'd buffer), independent or collective transfers
 * (H5Pset_dxpl_mpio), H5Fflush(GLOBAL) inside the timer. Every H5* call is checked and the HDF5 error
 * stack is captured into the message. A variable with xfer set (pattern ior) is accessed as IOR's HDF5
 * backend does: one hyperslab H5Dwrite/H5Dread of xfer bytes per call, in file order.
 * Params: the table at the end. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hdf5.h>
#include "iobench.h"

typedef struct { hid_t file, fapl, dxpl; } h5_state;

/* HDF5's stack does not carry the system error, and Open MPI's OMPIO can even report success from a
 * collective write whose pwritev failed: errno of the failed system call is then the only trace. */
static int io_errno_fatal(int e) { return e == ENOSPC || e == EDQUOT || e == EIO || e == EFBIG; }

static herr_t stack_cb(unsigned n, const H5E_error2_t *e, void *data)
{
    char *buf = data;
    size_t len = strlen(buf);
    if (n < 4 && len < IOB_ERRLEN - 200) /* the innermost entries say what happened */
        snprintf(buf + len, IOB_ERRLEN - 200 - len, "%s%s(): %s", len ? "; " : "", e->func_name,
                 e->desc ? e->desc : "");
    return 0;
}

/* Record "call: <innermost HDF5 messages first>" and clear the stack. */
static int h5fail(iob_ctx *c, const char *call)
{
    int e = errno;
    char stack[IOB_ERRLEN] = "";
    if (io_errno_fatal(e))
        snprintf(stack, 200, "errno %d: %s", e, strerror(e));
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, stack_cb, stack);
    H5Eclear2(H5E_DEFAULT);
    return iob_fail(c, "%s: %s", call, stack[0] ? stack : "HDF5 call failed (no error stack)");
}

static int files(const iob_ctx *c, char paths[][4096], int max)
{
    if (max < 1)
        return 0;
    snprintf(paths[0], 4096, "%s", c->path);
    return 1;
}

static int alignment_ok(const char *v)
{
    int64_t thresh, align;
    return iob_alignment(v, &thresh, &align) == 0;
}

static int h5_open(iob_ctx *c, int writing)
{
    const iob_opts *o = c->opt;
    char call[4200];
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* errors are collected from the stack, not printed */
    h5_state *s = calloc(1, sizeof *s);
    if (!s)
        return iob_fail(c, "hdf5: out of memory");
    s->file = s->fapl = s->dxpl = H5I_INVALID_HID;
    c->backend_state = s;
    MPI_Info info = iob_make_info(o);
    int64_t thresh, align;
    const char *v;
    int rc = IOB_OK;
    if ((s->fapl = H5Pcreate(H5P_FILE_ACCESS)) < 0)
        rc = h5fail(c, "H5Pcreate(H5P_FILE_ACCESS)");
    else if (H5Pset_fapl_mpio(s->fapl, c->comm, info) < 0)
        rc = h5fail(c, "H5Pset_fapl_mpio");
    else if ((v = iob_kv_get(&o->params, "alignment")) && !iob_alignment(v, &thresh, &align) &&
             H5Pset_alignment(s->fapl, (hsize_t)thresh, (hsize_t)align) < 0)
        rc = h5fail(c, "H5Pset_alignment");
    else if (iob_kv_get(&o->params, "meta_block_size") &&
             H5Pset_meta_block_size(s->fapl, (hsize_t)iob_param_int(o, "meta_block_size")) < 0)
        rc = h5fail(c, "H5Pset_meta_block_size");
    else if (iob_kv_get(&o->params, "coll_metadata") && /* HDF5's default (0) is left alone */
             (H5Pset_all_coll_metadata_ops(s->fapl, iob_param_int(o, "coll_metadata")) < 0 ||
              H5Pset_coll_metadata_write(s->fapl, iob_param_int(o, "coll_metadata")) < 0))
        rc = h5fail(c, "H5Pset_all_coll_metadata_ops/H5Pset_coll_metadata_write");
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    if (rc == IOB_OK) {
        snprintf(call, sizeof call, "%s(%s)", writing ? "H5Fcreate" : "H5Fopen", c->path);
        s->file = writing ? H5Fcreate(c->path, H5F_ACC_TRUNC, H5P_DEFAULT, s->fapl)
                          : H5Fopen(c->path, H5F_ACC_RDONLY, s->fapl);
        if (s->file < 0)
            rc = h5fail(c, call);
    }
    if (rc == IOB_OK) {
        MPI_File *fh = NULL; /* hints in effect, from the MPI file under the MPI-IO driver */
        if (H5Fget_vfd_handle(s->file, s->fapl, (void **)&fh) >= 0 && fh)
            iob_record_file_info(c, *fh);
        else
            H5Eclear2(H5E_DEFAULT);
        int coll = strcmp(o->mode, "collective") == 0;
        if ((s->dxpl = H5Pcreate(H5P_DATASET_XFER)) < 0)
            rc = h5fail(c, "H5Pcreate(H5P_DATASET_XFER)");
        else if (H5Pset_dxpl_mpio(s->dxpl, coll ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT) < 0)
            rc = h5fail(c, "H5Pset_dxpl_mpio");
    }
    snprintf(c->sync_method, sizeof c->sync_method, "H5Fflush+MPI_File_sync");
    if (rc != IOB_OK) {
        if (s->file >= 0)
            H5Fclose(s->file);
        if (s->fapl >= 0)
            H5Pclose(s->fapl);
        if (s->dxpl >= 0)
            H5Pclose(s->dxpl);
        free(s);
        c->backend_state = NULL;
    }
    return rc;
}

/* Element type in memory and file: an 8-byte scalar, or a compound of nfields named doubles. */
static hid_t elem_type(const iob_var *v)
{
    if (v->nfields == 1)
        return H5Tcopy(v->dtype == IOB_INT64 ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE);
    hid_t t = H5Tcreate(H5T_COMPOUND, (size_t)iob_var_elem_bytes(v));
    for (int f = 0; t >= 0 && f < v->nfields; f++)
        if (H5Tinsert(t, v->field_names[f], (size_t)f * 8, H5T_NATIVE_DOUBLE) < 0) {
            H5Tclose(t);
            return H5I_INVALID_HID;
        }
    return t;
}

static int select_block(hid_t space, const iob_var *v, const int64_t *off)
{
    hsize_t start[IOB_MAXDIMS], count[IOB_MAXDIMS];
    if (iob_var_count_elems(v) == 0)
        return H5Sselect_none(space);
    for (int d = 0; d < v->ndims; d++)
        start[d] = (hsize_t)off[d], count[d] = (hsize_t)v->count[d];
    return H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
}

/* H5Dwrite/H5Dread return no byte count: a call that succeeded moved its file selection. */
static void counted(iob_ctx *c, int rc, hid_t fspace, hid_t type)
{
    hssize_t n = rc == IOB_OK ? H5Sget_select_npoints(fspace) : 0;
    if (n > 0)
        c->moved += (int64_t)n * (int64_t)H5Tget_size(type);
}

static int transfer_var(iob_ctx *c, h5_state *s, const iob_var *v, int writing)
{
    char call[4400];
    hid_t type = H5I_INVALID_HID, fspace = H5I_INVALID_HID, mspace = H5I_INVALID_HID;
    hid_t dset = H5I_INVALID_HID, dcpl = H5I_INVALID_HID;
    hsize_t gd[IOB_MAXDIMS], md[IOB_MAXDIMS];
    int rc = IOB_OK;
    for (int d = 0; d < v->ndims; d++)
        gd[d] = (hsize_t)v->gdims[d], md[d] = (hsize_t)v->mdims[d];
#define H5TRY(expr, ...)                                                                                 \
    if (rc == IOB_OK && (expr) < 0) {                                                                    \
        snprintf(call, sizeof call, __VA_ARGS__);                                                        \
        rc = h5fail(c, call);                                                                            \
    }
    H5TRY(type = elem_type(v), "H5Tcreate(%s)", v->name);
    if (writing) {
        H5TRY(fspace = H5Screate_simple(v->ndims, gd, NULL), "H5Screate_simple(%s)", v->name);
        H5TRY(dcpl = H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate(H5P_DATASET_CREATE)");
        /* no fill pass: it would write the whole dataset once more before the data */
        H5TRY(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER), "H5Pset_fill_time");
        H5TRY(dset = H5Dcreate2(s->file, v->name, type, fspace, H5P_DEFAULT, dcpl, H5P_DEFAULT),
              "H5Dcreate2(%s, %s)", c->path, v->name);
    } else {
        H5TRY(dset = H5Dopen2(s->file, v->name, H5P_DEFAULT), "H5Dopen2(%s, %s)", c->path, v->name);
        H5TRY(fspace = H5Dget_space(dset), "H5Dget_space(%s)", v->name);
        if (rc == IOB_OK) {
            hsize_t have[IOB_MAXDIMS] = {0};
            int nd = H5Sget_simple_extent_dims(fspace, have, NULL);
            int same = nd == v->ndims;
            for (int d = 0; same && d < nd; d++)
                same = have[d] == gd[d];
            if (!same)
                rc = iob_fail(c, "H5Dopen2(%s, %s): dataset shape differs from the expected global size "
                              "(ndims %d, first dim %llu vs %llu)", c->path, v->name, nd,
                              (unsigned long long)have[0], (unsigned long long)gd[0]);
        }
    }
    if (v->xfer > 0) { /* IOR's way: one hyperslab of xfer bytes per H5Dwrite/H5Dread, in file order */
        hsize_t n = (hsize_t)(v->xfer / iob_var_elem_bytes(v)), st;
        H5TRY(mspace = H5Screate_simple(1, &n, NULL), "H5Screate_simple(memory, %s)", v->name);
        for (hsize_t i = 0; rc == IOB_OK && i < (hsize_t)v->count[0] / n; i++) {
            hsize_t k = (hsize_t)(v->order ? v->order[i] : (int64_t)i) * n;
            int64_t off = (int64_t)k * iob_var_elem_bytes(v);
            char *p = v->xfer_fill ? v->buf : (char *)v->buf + off; /* one refilled buffer, as IOR's */
            st = (hsize_t)v->start[0] + k;
            H5TRY(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &st, NULL, &n, NULL),
                  "H5Sselect_hyperslab(file, %s, %llu)", v->name, (unsigned long long)st);
            if (writing && v->xfer_fill)
                v->xfer_fill(c, v, off);
            errno = 0;
            if (writing) {
                H5TRY(H5Dwrite(dset, type, mspace, fspace, s->dxpl, p), "H5Dwrite(%s, %s, element %llu)",
                      c->path, v->name, (unsigned long long)st);
                counted(c, rc, fspace, type);
                if (rc == IOB_OK && io_errno_fatal(errno))
                    rc = iob_fail(c, "H5Dwrite(%s, %s): HDF5 returned success but the I/O layer failed "
                                  "with errno %d: %s", c->path, v->name, errno, strerror(errno));
            } else {
                H5TRY(H5Dread(dset, type, mspace, fspace, s->dxpl, p), "H5Dread(%s, %s, element %llu)",
                      c->path, v->name, (unsigned long long)st);
                counted(c, rc, fspace, type);
                if (rc == IOB_OK && v->xfer_read)
                    v->xfer_read(c, v, off);
            }
        }
    } else {
        H5TRY(mspace = H5Screate_simple(v->ndims, md, NULL), "H5Screate_simple(memory, %s)", v->name);
        H5TRY(select_block(fspace, v, v->start), "H5Sselect_hyperslab(file, %s)", v->name);
        H5TRY(select_block(mspace, v, v->moff), "H5Sselect_hyperslab(memory, %s)", v->name);
        errno = 0;
        if (writing) {
            H5TRY(H5Dwrite(dset, type, mspace, fspace, s->dxpl, v->buf), "H5Dwrite(%s, %s)", c->path, v->name);
            counted(c, rc, fspace, type);
            if (rc == IOB_OK && io_errno_fatal(errno))
                rc = iob_fail(c, "H5Dwrite(%s, %s): HDF5 returned success but the I/O layer failed with errno %d: %s",
                              c->path, v->name, errno, strerror(errno));
        } else {
            H5TRY(H5Dread(dset, type, mspace, fspace, s->dxpl, v->buf), "H5Dread(%s, %s)", c->path, v->name);
            counted(c, rc, fspace, type);
        }
    }
    if (dset >= 0)
        H5TRY(H5Dclose(dset), "H5Dclose(%s)", v->name);
#undef H5TRY
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (mspace >= 0)
        H5Sclose(mspace);
    if (fspace >= 0)
        H5Sclose(fspace);
    if (type >= 0)
        H5Tclose(type);
    return rc;
}

static int h5_transfer(iob_ctx *c, int writing)
{
    for (int i = 0; i < c->nvars; i++)
        if (transfer_var(c, c->backend_state, &c->vars[i], writing))
            return IOB_FAIL;
    return IOB_OK;
}

static int h5_write(iob_ctx *c) { return h5_transfer(c, 1); }
static int h5_read(iob_ctx *c) { return h5_transfer(c, 0); }

static int h5_sync(iob_ctx *c)
{
    h5_state *s = c->backend_state;
    char call[4200];
    snprintf(call, sizeof call, "H5Fflush(%s, H5F_SCOPE_GLOBAL)", c->path);
    errno = 0;
    if (H5Fflush(s->file, H5F_SCOPE_GLOBAL) < 0)
        return h5fail(c, call);
    if (io_errno_fatal(errno))
        return iob_fail(c, "%s: HDF5 returned success but the I/O layer failed with errno %d: %s", call, errno,
                        strerror(errno));
    return IOB_OK;
}

static int h5_close(iob_ctx *c)
{
    h5_state *s = c->backend_state;
    if (!s)
        return IOB_OK;
    c->backend_state = NULL;
    char call[4200];
    snprintf(call, sizeof call, "H5Fclose(%s)", c->path);
    H5Pclose(s->dxpl);
    H5Pclose(s->fapl);
    errno = 0;
    int rc = H5Fclose(s->file) < 0 ? h5fail(c, call) : IOB_OK;
    free(s);
    return rc;
}

static void versions(iob_kvlist *out)
{
    unsigned maj, min, rel;
    char v[32];
    H5get_libversion(&maj, &min, &rel);
    snprintf(v, sizeof v, "%u.%u.%u", maj, min, rel);
    iob_kv_put(out, "hdf5", v);
}

static const char *const modes[] = {"independent", "collective", NULL};
/* Also read by patterns hacc and mddatasets (their files are HDF5 files too). */
static const iob_option options[] = {
    {"alignment", IOB_OPT_STRING, NULL, .help = "H5Pset_alignment (HDF5's default: 1, none)", .valid = alignment_ok,
     .allowed = "ALIGN or THRESH,ALIGN bytes, ALIGN a power of two"},
    {"meta_block_size", IOB_OPT_INT, NULL, .help = "H5Pset_meta_block_size (HDF5's default: 2048)", .min = 1},
    {"coll_metadata", IOB_OPT_BOOL, "0", .help = "1: collective metadata reads and writes "
                                         "(H5Pset_all_coll_metadata_ops, H5Pset_coll_metadata_write)"},
    {0}};
const iob_backend iob_backend_hdf5 = {
    .name = "hdf5", .modes = modes, .options = options, .files = files,
    .open = h5_open, .write = h5_write, .read = h5_read, .sync = h5_sync, .close = h5_close,
    .versions = versions, .one_xfer_buffer = 1,
};
