/* Metadata stress in one HDF5 file, Exodus-like (seed 003): `nblocks` groups /block_<b> (2 attributes
 * each) holding `nvars` 1-D datasets var_<v> (2 attributes each) of P*n doubles; rank r writes elements
 * [r*n, (r+1)*n) of every dataset (--size n, default 32: small, so metadata dominates). Collective metadata
 * (H5Pset_all_coll_metadata_ops + H5Pset_coll_metadata_write) is param coll_metadata=0|1; what the file's
 * access property list reports back is recorded. Phases, each barrier to barrier (slowest rank):
 * write = open (H5Fcreate), define (groups, datasets, attributes), write (H5Dwrite), close (H5Fflush then
 * close everything); read = open, lookup (open groups/datasets, read attributes), read, close.
 * Runs with --backend hdf5 (mode independent/collective = the data transfer); does its own I/O through
 * iob_pattern.run. Value of dataset d = b*nvars + v at global index g: d*P*n + g + 1.
 */
#include <fcntl.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "pattern_run.h"

typedef struct {
    int64_t nvars, nblocks, n;
    int coll;                 /* requested */
    hbool_t got_ops, got_write; /* read back from the file's access property list */
    hid_t file, *groups, *dsets;
    double *buf;              /* nblocks*nvars*n */
} mdd_state;

static int mdd_params(const iob_opts *o, int nranks, mdd_state *s, char *err, size_t errlen)
{
    s->nvars = iob_param_int(o, "nvars");
    s->nblocks = iob_param_int(o, "nblocks");
    s->coll = (int)iob_param_int(o, "coll_metadata"); /* the hdf5 backend's key */
    s->n = o->size[0];
    if (o->nsize != 1) {
        snprintf(err, errlen, "--size for mddatasets (elements per rank per dataset, one number) '%lld,...'",
                 (long long)o->size[0]);
        return IOB_BADINPUT;
    }
    if ((double)s->nvars * s->nblocks > 1e6 || (double)s->nvars * s->nblocks * s->n * nranks > 9e15) {
        snprintf(err, errlen, "nvars x nblocks for mddatasets (at most 1e6 datasets) '%lld'",
                 (long long)(s->nvars * s->nblocks));
        return IOB_BADINPUT;
    }
    return IOB_OK;
}

static int mdd_check(const iob_opts *o, int nranks, char *err, size_t errlen)
{
    mdd_state s;
    if (strcmp(o->backend, "hdf5") != 0) {
        snprintf(err, errlen, "backend for mddatasets (hdf5) '%s'", o->backend);
        return IOB_BADINPUT;
    }
    if (!o->do_write) {
        snprintf(err, errlen, "--phase for mddatasets (write or both) '%s'", "read");
        return IOB_BADINPUT;
    }
    return mdd_params(o, nranks, &s, err, errlen);
}

static int mdd_setup(iob_ctx *c)
{
    if (c->pattern_state)
        return IOB_OK;
    char err[256];
    mdd_state *s = calloc(1, sizeof *s);
    c->pattern_state = s;
    c->vars = calloc(1, sizeof(iob_var)); /* no block variables: run() does the I/O */
    c->nvars = 0;
    if (!s || !c->vars || mdd_params(c->opt, c->nranks, s, err, sizeof err))
        return iob_fail(c, "mddatasets: setup failed %s", s ? err : "");
    size_t nd = (size_t)(s->nblocks * s->nvars);
    s->groups = calloc((size_t)s->nblocks, sizeof(hid_t));
    s->dsets = calloc(nd, sizeof(hid_t));
    s->buf = malloc(nd * (size_t)s->n * sizeof(double));
    if (!s->groups || !s->dsets || !s->buf)
        return iob_fail(c, "mddatasets: cannot allocate %zu datasets of %lld elements", nd, (long long)s->n);
    return IOB_OK;
}

/* The HDF5 error stack's innermost message (the library's own text). Call before any other H5
 * call: every successful API call clears the stack. */
static herr_t mdd_err_cb(unsigned n, const H5E_error2_t *e, void *arg)
{
    if (n == 0)
        snprintf(arg, 512, "%s (in %s)", e->desc, e->func_name);
    return 0;
}

static int mdd_fail(iob_ctx *c, const char *call, const char *obj)
{
    char msg[512] = "unknown HDF5 error";
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, mdd_err_cb, msg);
    return iob_fail(c, "%s(%s): %s", call, obj, msg);
}

#define H5CHK(expr, call, obj) do { if ((expr) < 0) return mdd_fail(c, call, obj); } while (0)

static hid_t mdd_fapl(iob_ctx *c, mdd_state *s)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    MPI_Info info = iob_make_info(c->opt);
    H5Pset_fapl_mpio(fapl, c->comm, info);
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    H5Pset_all_coll_metadata_ops(fapl, s->coll);
    H5Pset_coll_metadata_write(fapl, s->coll);
    const char *al = iob_kv_get(&c->opt->params, "alignment"); /* the hdf5 backend's keys */
    int64_t thresh, align;
    if (al && !iob_alignment(al, &thresh, &align))
        H5Pset_alignment(fapl, (hsize_t)thresh, (hsize_t)align);
    if (iob_kv_get(&c->opt->params, "meta_block_size"))
        H5Pset_meta_block_size(fapl, (hsize_t)iob_param_int(c->opt, "meta_block_size"));
    return fapl;
}

static double mdd_value(const iob_ctx *c, const mdd_state *s, int64_t d, int64_t g)
{
    return (double)(d * c->nranks * s->n + g + 1);
}

/* Two int64 attributes on obj (a group or a dataset): created and written, or opened, read and
 * compared with what was written. `where` names obj in messages. */
static int mdd_attr_pair(iob_ctx *c, hid_t obj, hid_t scalar, const char *where,
                         const char *const names[2], const int64_t want[2], int creating)
{
    for (int a = 0; a < 2; a++) {
        int64_t got = 0;
        hid_t at = creating ? H5Acreate2(obj, names[a], H5T_NATIVE_INT64, scalar, H5P_DEFAULT, H5P_DEFAULT)
                            : H5Aopen(obj, names[a], H5P_DEFAULT);
        H5CHK(at, creating ? "H5Acreate2" : "H5Aopen", names[a]);
        herr_t e = creating ? H5Awrite(at, H5T_NATIVE_INT64, &want[a]) : H5Aread(at, H5T_NATIVE_INT64, &got);
        int rc = e < 0 ? mdd_fail(c, creating ? "H5Awrite" : "H5Aread", names[a]) : IOB_OK;
        H5Aclose(at);
        if (rc)
            return rc;
        if (!creating && got != want[a])
            return iob_fail(c, "mddatasets: attribute %s/%s: read %lld, expected %lld", where, names[a],
                            (long long)got, (long long)want[a]);
    }
    return IOB_OK;
}

static int mdd_define(iob_ctx *c, mdd_state *s, int creating)
{
    static const char *const block_attrs[2] = {"id", "num_elements"};
    static const char *const var_attrs[2] = {"variable_index", "dataset_index"};
    char name[64], where[160];
    hsize_t gd = (hsize_t)(c->nranks * s->n);
    hid_t space = H5Screate_simple(1, &gd, NULL), scalar = H5Screate(H5S_SCALAR);
    int rc = IOB_OK;
    for (int64_t b = 0; b < s->nblocks && rc == IOB_OK; b++) {
        const int64_t battr[2] = {b + 1, c->nranks * s->n};
        snprintf(name, sizeof name, "block_%lld", (long long)b);
        s->groups[b] = creating ? H5Gcreate2(s->file, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)
                                : H5Gopen2(s->file, name, H5P_DEFAULT);
        H5CHK(s->groups[b], creating ? "H5Gcreate2" : "H5Gopen2", name);
        rc = mdd_attr_pair(c, s->groups[b], scalar, name, block_attrs, battr, creating);
        for (int64_t v = 0; v < s->nvars && rc == IOB_OK; v++) {
            int64_t d = b * s->nvars + v;
            const int64_t vattr[2] = {v, d};
            snprintf(name, sizeof name, "var_%lld", (long long)v);
            s->dsets[d] = creating ? H5Dcreate2(s->groups[b], name, H5T_NATIVE_DOUBLE, space, H5P_DEFAULT,
                                                H5P_DEFAULT, H5P_DEFAULT)
                                   : H5Dopen2(s->groups[b], name, H5P_DEFAULT);
            H5CHK(s->dsets[d], creating ? "H5Dcreate2" : "H5Dopen2", name);
            snprintf(where, sizeof where, "block_%lld/%s (dataset %lld)", (long long)b, name, (long long)d);
            rc = mdd_attr_pair(c, s->dsets[d], scalar, where, var_attrs, vattr, creating);
        }
    }
    H5Sclose(space);
    H5Sclose(scalar);
    return rc;
}

static int mdd_access(iob_ctx *c, mdd_state *s, int writing, int owner)
{
    hsize_t n = (hsize_t)s->n, start = (hsize_t)owner * n;
    hid_t mem = H5Screate_simple(1, &n, NULL), dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, strcmp(c->opt->mode, "collective") == 0 ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT);
    int rc = IOB_OK;
    for (int64_t d = 0; d < s->nblocks * s->nvars && rc == IOB_OK; d++) {
        hid_t fs = H5Dget_space(s->dsets[d]);
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &n, NULL);
        double *b = s->buf + d * s->n;
        herr_t e = writing ? H5Dwrite(s->dsets[d], H5T_NATIVE_DOUBLE, mem, fs, dxpl, b)
                           : H5Dread(s->dsets[d], H5T_NATIVE_DOUBLE, mem, fs, dxpl, b);
        if (e < 0)
            rc = mdd_fail(c, writing ? "H5Dwrite" : "H5Dread", "dataset");
        else /* HDF5 returns no byte count: a call that succeeded moved its selection (backend_hdf5.c) */
            c->moved += (int64_t)H5Sget_select_npoints(fs) * (int64_t)sizeof(double);
        H5Sclose(fs);
    }
    H5Pclose(dxpl);
    H5Sclose(mem);
    return rc;
}

static void mdd_close_all(mdd_state *s)
{
    for (int64_t d = 0; d < s->nblocks * s->nvars; d++)
        if (s->dsets[d] > 0)
            H5Dclose(s->dsets[d]), s->dsets[d] = 0;
    for (int64_t b = 0; b < s->nblocks; b++)
        if (s->groups[b] > 0)
            H5Gclose(s->groups[b]), s->groups[b] = 0;
    if (s->file > 0)
        H5Fclose(s->file), s->file = 0;
}

/* A phase is one span per rank, as the driver's (IOR's): barrier, then its steps back to back on each
 * rank; a rank whose step failed skips the rest; the outcome is agreed after the span. Per-step seconds
 * are each rank's own, reported as maxima; total = max over ranks of the span. barriers=1 (IOR -g):
 * each step barrier to barrier with an agreement after it, total = the sum of the step maxima. */
#define STEP(dst, expr) do { double t_ = MPI_Wtime(); int rc_ = rc == IOB_OK ? (expr) : IOB_OK; \
        if (c->barriers) MPI_Barrier(c->comm); \
        dst = MPI_Wtime() - t_; rc = rc != IOB_OK ? rc : rc_; \
        if (c->barriers && iob_run_agree(c, rc)) goto fail; } while (0)

/* Maxima over ranks of the n step times and of the span (steps[n]); 0 when every rank agreed OK. */
static int mdd_span_end(iob_ctx *c, int rc, double t0, double *steps, int n, double *total)
{
    if (c->barriers) {
        *total = 0;
        for (int i = 0; i < n; i++)
            *total += steps[i] = iob_run_max(c, steps[i]);
        return IOB_OK;
    }
    double end = MPI_Wtime() - t0, m[8];
    if (iob_run_agree(c, rc))
        return IOB_FAIL;
    steps[n] = end;
    MPI_Allreduce(steps, m, n + 1, MPI_DOUBLE, MPI_MAX, c->comm);
    memcpy(steps, m, sizeof(double) * (size_t)n);
    *total = m[n];
    return IOB_OK;
}

static int mdd_open(iob_ctx *c, mdd_state *s, int creating)
{
    hid_t fapl = mdd_fapl(c, s);
    s->file = creating ? H5Fcreate(c->path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl) : H5Fopen(c->path, H5F_ACC_RDONLY, fapl);
    int rc = s->file < 0 ? mdd_fail(c, creating ? "H5Fcreate" : "H5Fopen", c->path) : IOB_OK;
    H5Pclose(fapl);
    return rc;
}

static int mdd_flush(iob_ctx *c, mdd_state *s)
{
    H5CHK(H5Fflush(s->file, H5F_SCOPE_GLOBAL), "H5Fflush", c->path);
    return IOB_OK;
}

static int mdd_close(iob_ctx *c, mdd_state *s) { mdd_close_all(s); return IOB_OK; }

/* What the open file really uses: collective metadata flags and MPI-IO hints in effect. */
static void mdd_readback(iob_ctx *c, mdd_state *s)
{
    hid_t fapl = H5Fget_access_plist(s->file);
    H5Pget_all_coll_metadata_ops(fapl, &s->got_ops);
    H5Pget_coll_metadata_write(fapl, &s->got_write);
    H5Pclose(fapl);
    MPI_File *fh = NULL;
    if (H5Fget_vfd_handle(s->file, H5P_DEFAULT, (void **)&fh) >= 0 && fh)
        iob_record_file_info(c, *fh);
}

static int mdd_run(iob_ctx *c, iob_json *x, iob_run_phase out[2])
{
    mdd_state *s = c->pattern_state;
    int64_t nd = s->nblocks * s->nvars, bytes = nd * s->n * 8 * c->nranks;
    int owner = (c->rank + c->read_shift) % c->nranks; /* placement.c: another node's block */
    double w[6] = {0}, r[5] = {0}, w_total = 0, r_total = 0, t0; /* open define write flush close */
    int rc = IOB_OK;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    snprintf(c->sync_method, sizeof c->sync_method, "H5Fflush");

    for (int64_t d = 0; d < nd; d++)
        for (int64_t i = 0; i < s->n; i++)
            s->buf[d * s->n + i] = mdd_value(c, s, d, c->rank * s->n + i);
    c->moved = 0;
    MPI_Barrier(c->comm);
    t0 = MPI_Wtime();
    STEP(w[0], mdd_open(c, s, 1));
    if (rc == IOB_OK) { /* provenance, not I/O: its time is taken out of the span */
        double rb = MPI_Wtime();
        mdd_readback(c, s);
        t0 += MPI_Wtime() - rb;
    }
    STEP(w[1], mdd_define(c, s, 1));
    STEP(w[2], mdd_access(c, s, 1, c->rank));
    STEP(w[3], mdd_flush(c, s));
    STEP(w[4], mdd_close(c, s));
    if (mdd_span_end(c, rc, t0, w, 5, &w_total))
        goto fail;
    out[0] = (iob_run_phase){.done = 1, .bytes = bytes, .moved = c->moved, .open_s = w[0], .access_s = w[2], .sync_s = w[3],
                             .close_s = w[4], .total_s = w_total};
    if (c->opt->do_read) {
        iob_run_drop_file(c->path);
        MPI_Barrier(c->comm);
        int64_t pages = 0, res = iob_run_resident_pages(c->path, &pages);
        out[1].resident = iob_run_max(c, pages ? (double)res / (double)pages : 0.0);
        snprintf(out[1].cache_defeat, sizeof out[1].cache_defeat, "%s",
                 owner != c->rank ? "rank_shift+posix_fadvise_dontneed" : "posix_fadvise_dontneed");
        memset(s->buf, 0xff, (size_t)(nd * s->n) * sizeof(double));
        c->moved = 0;
        MPI_Barrier(c->comm);
        t0 = MPI_Wtime();
        STEP(r[0], mdd_open(c, s, 0));
        STEP(r[1], mdd_define(c, s, 0));
        STEP(r[2], mdd_access(c, s, 0, owner));
        STEP(r[3], mdd_close(c, s));
        if (mdd_span_end(c, rc, t0, r, 4, &r_total))
            goto fail;
        out[1].done = 1, out[1].bytes = bytes, out[1].moved = c->moved, out[1].open_s = r[0], out[1].access_s = r[2];
        out[1].close_s = r[3], out[1].total_s = r_total;
        for (int64_t d = 0; c->opt->verify && d < nd && rc == IOB_OK; d++)
            for (int64_t i = 0; i < s->n; i++) {
                double want = mdd_value(c, s, d, owner * s->n + i), got = s->buf[d * s->n + i];
                if (got != want) {
                    rc = iob_fail(c, "mddatasets: dataset %lld at global index %lld: read %.17g, expected %.17g",
                                  (long long)d, (long long)(owner * s->n + i), got, want);
                    break;
                }
            }
        if (iob_run_agree(c, rc))
            goto fail;
        out[1].verified = c->opt->verify;
    }
    MPI_Barrier(c->comm);
    if (!c->opt->keep && c->rank == 0)
        unlink(c->path);

    jw_begin_obj(x, "metadata");
    jw_int(x, "datasets", nd);
    jw_int(x, "attributes", 2 * nd + 2 * s->nblocks);
    jw_bool(x, "coll_metadata_requested", s->coll);
    jw_bool(x, "all_coll_metadata_ops", s->got_ops);
    jw_bool(x, "coll_metadata_write", s->got_write);
    jw_begin_obj(x, "write");
    jw_num(x, "open_s", w[0]), jw_num(x, "define_s", w[1]), jw_num(x, "write_s", w[2]);
    jw_num(x, "flush_s", w[3]), jw_num(x, "close_s", w[4]);
    jw_end_obj(x);
    if (out[1].done) {
        jw_begin_obj(x, "read");
        jw_num(x, "open_s", r[0]), jw_num(x, "lookup_s", r[1]), jw_num(x, "read_s", r[2]);
        jw_num(x, "close_s", r[3]);
        jw_end_obj(x);
    }
    jw_end_obj(x);
    return IOB_OK;
fail:
    mdd_close_all(s);
    MPI_Barrier(c->comm);
    if (!c->opt->keep && c->rank == 0)
        unlink(c->path);
    return IOB_FAIL;
}

static void mdd_teardown(iob_ctx *c)
{
    mdd_state *s = c->pattern_state;
    if (s) {
        free(s->groups);
        free(s->dsets);
        free(s->buf);
    }
    iob_pattern_release(c);
}

static void mdd_describe(const iob_ctx *c, iob_json *j)
{
    const mdd_state *s = c->pattern_state;
    jw_int(j, "nblocks", s->nblocks);
    jw_int(j, "nvars", s->nvars);
    jw_int(j, "elements_per_rank_per_dataset", s->n);
}

static const iob_option options[] = {
    {"nvars", IOB_OPT_INT, "20", .help = "datasets per group", .min = 1, .max = 100000},
    {"nblocks", IOB_OPT_INT, "50", .help = "groups", .min = 1, .max = 100000},
    {0}};
const iob_pattern iob_pattern_mddatasets = {
    .name = "mddatasets",
    .about = "hdf5 only; --size doubles per rank per dataset (32); the hdf5 backend's coll_metadata, alignment "
             "and meta_block_size apply",
    .options = options,
    .check = mdd_check,
    .setup = mdd_setup,
    .fill = iob_run_nop,
    .clear = iob_run_nop,
    .verify = iob_run_verified_in_run,
    .teardown = mdd_teardown,
    .describe = mdd_describe,
    .run = mdd_run,
};
