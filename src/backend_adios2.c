/* ADIOS2 backend (C bindings, MPI). Modes are engines: bp5 (default), bp4, hdf5. One global array per
 * variable (shape gdims, this rank's start/count; a compound element of nfields doubles becomes a
 * trailing dimension). The halo is stripped with adios2_set_memory_selection: the BP engines copy the
 * block into their own buffer on put anyway, so packing it ourselves would only add a second copy.
 * ADIOS2 never fsyncs: sync() closes the engine (the metadata is written at close) and then fsyncs
 * the files the engine wrote, all inside the timer: each rank the subfiles it held open, rank 0 the
 * metadata files. ADIOS2 reports errors only on stderr: each call goes through A2/A2P (adios2_msg.h),
 * which put the library's own words into the message. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <adios2_c.h>
#include "iobench.h"
#include "adios2_msg.h"

typedef struct {
    adios2_adios *adios;
    adios2_io *io;
    adios2_engine *engine;
    int writing;
    char target[4096];      /* the .bp directory or the .h5 file */
    void **packed;          /* hdf5 engine reads: packed block per variable (no memory selection) */
} a2_state;

/* ---- modes, params ------------------------------------------------------------------------------ */
static const char *engine_type(const char *mode)
{
    return strcmp(mode, "bp4") == 0 ? "BP4" : strcmp(mode, "hdf5") == 0 ? "HDF5" : "BP5";
}

/* Engine parameters, set with adios2_set_parameter as given; ADIOS2 checks the values (its message
 * names them) except where it would take a bad one silently. Absent: ADIOS2's defaults. */
#define BP "bp5|bp4"
static const iob_option options[] = {
    {"NumAggregators", IOB_OPT_STRING, NULL, .help = "ranks that write subfiles", .modes = BP},
    {"AggregatorRatio", IOB_OPT_INT, NULL, .help = "ranks per aggregator (divides the rank count)", .min = 1, .modes = BP},
    {"NumSubFiles", IOB_OPT_STRING, NULL, .help = "subfiles", .modes = "bp5"},
    {"AggregationType", IOB_OPT_STRING, NULL, .help = "EveryoneWrites, EveryoneWritesSerial, TwoLevelShm", .modes = "bp5"},
    {"BufferChunkSize", IOB_OPT_STRING, NULL, .help = "bytes per buffer chunk", .modes = "bp5"},
    {"AsyncWrite", IOB_OPT_STRING, NULL, .help = "write in a thread after EndStep", .modes = "bp5"},
    {"BurstBufferPath", IOB_OPT_STRING, NULL, .help = "node-local directory written first", .modes = BP},
    {"DirectIO", IOB_OPT_STRING, NULL, .help = "O_DIRECT for the subfiles", .modes = "bp5"},
    {"StatsLevel", IOB_OPT_STRING, NULL, .help = "min/max statistics per block (0: none)", .modes = BP},
    {"BurstBufferDrain", IOB_OPT_STRING, NULL, .help = "drain the burst buffer to the target", .modes = "bp4"},
    {"InitialBufferSize", IOB_OPT_STRING, NULL, .help = "bytes of the first buffer", .modes = "bp4"},
    {"MaxBufferSize", IOB_OPT_STRING, NULL, .help = "bytes of buffer at most", .modes = "bp4"},
    {"CollectiveMetadata", IOB_OPT_STRING, NULL, .help = "aggregate metadata collectively", .modes = "bp4"},
    /* the HDF5 engine takes any other value as "independent" without a word */
    {"H5CollectiveMPIO", IOB_OPT_ENUM, NULL, .help = "collective MPI-IO data transfers", .values = "yes|no|true|false",
     .modes = "hdf5"},
    {0}};

/* What the option table cannot judge: AggregatorRatio must divide the rank count. */
static int check(const iob_opts *o, int nranks, char *err, size_t errlen)
{
    const char *v = iob_kv_get(&o->params, "AggregatorRatio");
    if (v && nranks % iob_param_int(o, "AggregatorRatio")) {
        snprintf(err, errlen, "adios2 param AggregatorRatio must divide the %d ranks '%s'", nranks, v);
        return IOB_BADINPUT;
    }
    return IOB_OK;
}

static void target_name(const iob_ctx *c, char *out, size_t n)
{
    snprintf(out, n, "%.4080s%s", c->path, strcmp(c->opt->mode, "hdf5") == 0 ? ".h5" : ".bp");
}

static int files(const iob_ctx *c, char paths[][4096], int max)
{
    if (max < 1)
        return 0;
    target_name(c, paths[0], 4096);
    return 1;
}

/* ---- open / write / read ------------------------------------------------------------------------ */
static int a2_open(iob_ctx *c, int writing)
{
    a2_state *s = calloc(1, sizeof *s);
    if (!s)
        return iob_fail(c, "adios2: out of memory");
    c->backend_state = s;
    s->writing = writing;
    target_name(c, s->target, sizeof s->target);
    snprintf(c->sync_method, sizeof c->sync_method, "fsync of engine files after close");
    const char *type = engine_type(c->opt->mode);
    char call[4200];
    A2P(c, "adios2_init_mpi", s->adios, adios2_init_mpi(c->comm));
    A2P(c, "adios2_declare_io(iobench)", s->io, adios2_declare_io(s->adios, "iobench"));
    snprintf(call, sizeof call, "adios2_set_engine(%s)", type);
    A2(c, call, adios2_set_engine(s->io, type));
    A2(c, "adios2_set_parameter(Profile=Off)", adios2_set_parameter(s->io, "Profile", "Off"));
    for (int i = 0; i < c->opt->params.n; i++) {
        const iob_kv *kv = &c->opt->params.kv[i];
        if (!iob_option_find(options, kv->key))
            continue;
        snprintf(call, sizeof call, "adios2_set_parameter(%s=%s)", kv->key, kv->value);
        A2(c, call, adios2_set_parameter(s->io, kv->key, kv->value));
    }
    /* the engine parses its parameters in open, and its message may not name the one it chokes on */
    size_t len = (size_t)snprintf(call, sizeof call, "adios2_open(%s, %s", s->target, writing ? "write" : "read");
    for (int i = 0, k = 0; i < c->opt->params.n && len < sizeof call; i++)
        if (iob_option_find(options, c->opt->params.kv[i].key))
            len += (size_t)snprintf(call + len, sizeof call - len, "%s%s=%s", k++ ? ", " : "; ",
                                    c->opt->params.kv[i].key, c->opt->params.kv[i].value);
    if (len < sizeof call)
        snprintf(call + len, sizeof call - len, ")");
    A2P(c, call, s->engine, adios2_open(s->io, s->target, writing ? adios2_mode_write : adios2_mode_read));
    return IOB_OK;
fail:
    return IOB_FAIL; /* close() releases what was created */
}

/* Shape, start, count (and memory start/count) with the compound fields as a trailing dimension. */
static size_t dims_of(const iob_var *v, size_t *shape, size_t *start, size_t *count, size_t *mstart,
                      size_t *mcount)
{
    int nd = v->ndims;
    for (int d = 0; d < nd; d++) {
        shape[d] = (size_t)v->gdims[d], start[d] = (size_t)v->start[d], count[d] = (size_t)v->count[d];
        mstart[d] = (size_t)v->moff[d], mcount[d] = (size_t)v->mdims[d];
    }
    if (v->nfields > 1) {
        shape[nd] = count[nd] = mcount[nd] = (size_t)v->nfields;
        start[nd] = mstart[nd] = 0;
        nd++;
    }
    return (size_t)nd;
}

static int has_halo(const iob_var *v)
{
    for (int d = 0; d < v->ndims; d++)
        if (v->mdims[d] != v->count[d])
            return 1;
    return 0;
}

static adios2_type elem_type(const iob_var *v)
{
    return v->dtype == IOB_INT64 && v->nfields == 1 ? adios2_type_int64_t : adios2_type_double;
}

static int a2_write(iob_ctx *c)
{
    a2_state *s = c->backend_state;
    adios2_step_status st;
    int64_t put = 0;
    A2(c, "adios2_begin_step", adios2_begin_step(s->engine, adios2_step_mode_append, -1.0f, &st));
    for (int i = 0; i < c->nvars; i++) {
        const iob_var *v = &c->vars[i];
        size_t shape[IOB_MAXDIMS + 1], start[IOB_MAXDIMS + 1], count[IOB_MAXDIMS + 1];
        size_t ms[IOB_MAXDIMS + 1], mc[IOB_MAXDIMS + 1];
        size_t nd = dims_of(v, shape, start, count, ms, mc);
        adios2_variable *var;
        char call[256];
        snprintf(call, sizeof call, "adios2_define_variable(%s)", v->name);
        A2P(c, call, var, adios2_define_variable(s->io, v->name, elem_type(v), nd, shape, start, count,
                                                 adios2_constant_dims_true));
        static double nothing; /* put needs a pointer even for an empty block */
        if (iob_var_count_elems(v) == 0) {
            /* BP: no block. HDF5: the engine creates the dataset at put, and parallel HDF5 needs
             * every rank to take part in that, so an empty block is put too. */
            if (strcmp(c->opt->mode, "hdf5") == 0) {
                snprintf(call, sizeof call, "adios2_put(%s, empty block)", v->name);
                A2(c, call, adios2_put(s->engine, var, &nothing, adios2_mode_deferred));
            }
            continue;
        }
        if (has_halo(v))
            A2(c, "adios2_set_memory_selection", adios2_set_memory_selection(var, nd, ms, mc));
        snprintf(call, sizeof call, "adios2_put(%s)", v->name);
        A2(c, call, adios2_put(s->engine, var, v->buf, adios2_mode_deferred));
        put += iob_var_count_elems(v) * iob_var_elem_bytes(v);
    }
    /* EndStep hands the data to the engine's transports (BP5 writes it here unless AsyncWrite) */
    A2(c, "adios2_end_step", adios2_end_step(s->engine));
    c->moved += put; /* deferred puts return no count: the blocks of a step that ended without error */
    return IOB_OK;
fail:
    return IOB_FAIL;
}

static int a2_read(iob_ctx *c)
{
    a2_state *s = c->backend_state;
    int hdf5 = strcmp(c->opt->mode, "hdf5") == 0;
    adios2_step_status st;
    int64_t got = 0;
    A2(c, "adios2_begin_step", adios2_begin_step(s->engine, adios2_step_mode_read, -1.0f, &st));
    if (st != adios2_step_status_ok)
        return iob_fail(c, "adios2_begin_step(%s): no step to read (status %d)", s->target, (int)st);
    if (hdf5 && !s->packed && !(s->packed = calloc((size_t)c->nvars, sizeof *s->packed)))
        return iob_fail(c, "adios2: out of memory");
    for (int i = 0; i < c->nvars; i++) {
        const iob_var *v = &c->vars[i];
        size_t shape[IOB_MAXDIMS + 1], start[IOB_MAXDIMS + 1], count[IOB_MAXDIMS + 1];
        size_t ms[IOB_MAXDIMS + 1], mc[IOB_MAXDIMS + 1], fshape[IOB_MAXDIMS + 1], fnd = 0;
        size_t nd = dims_of(v, shape, start, count, ms, mc);
        adios2_variable *var;
        char call[256];
        snprintf(call, sizeof call, "adios2_inquire_variable(%s)", v->name);
        A2P(c, call, var, adios2_inquire_variable(s->io, v->name));
        /* a file of another shape (other rank count or size) is named, not misread */
        A2(c, "adios2_variable_ndims", adios2_variable_ndims(&fnd, var));
        if (fnd == nd)
            A2(c, "adios2_variable_shape", adios2_variable_shape(fshape, var));
        for (size_t d = 0; d < nd; d++)
            if (fnd != nd || fshape[d] != shape[d])
                return iob_fail(c, "adios2: variable %s in %s has another shape than this run expects "
                                   "(written with other --size or rank count?)", v->name, s->target);
        if (iob_var_count_elems(v) == 0)
            continue;
        A2(c, "adios2_set_selection", adios2_set_selection(var, nd, start, count));
        void *dst = v->buf;
        if (hdf5 && has_halo(v)) { /* the HDF5 engine ignores memory selections on reads */
            size_t bytes = (size_t)(iob_var_count_elems(v) * iob_var_elem_bytes(v));
            if (!s->packed[i] && !(s->packed[i] = malloc(bytes)))
                return iob_fail(c, "adios2: out of memory for %zu bytes", bytes);
            dst = s->packed[i];
        } else if (has_halo(v)) {
            A2(c, "adios2_set_memory_selection", adios2_set_memory_selection(var, nd, ms, mc));
        }
        snprintf(call, sizeof call, "adios2_get(%s)", v->name);
        A2(c, call, adios2_get(s->engine, var, dst, adios2_mode_deferred));
        got += iob_var_count_elems(v) * iob_var_elem_bytes(v);
    }
    A2(c, "adios2_end_step", adios2_end_step(s->engine)); /* performs the deferred gets */
    c->moved += got;
    for (int i = 0; hdf5 && i < c->nvars; i++)
        if (s->packed[i])
            iob_var_pack(&c->vars[i], s->packed[i], 0);
    return IOB_OK;
fail:
    return IOB_FAIL;
}

/* ---- sync / close ------------------------------------------------------------------------------- */
/* The engine files this rank holds open now (/proc/self/fd): a BP writer keeps the subfile it
 * aggregates into open until close, so these are what this rank's node wrote. Newline-separated. */
static void held_files(const char *target, char *out, size_t n)
{
    out[0] = '\0';
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    size_t tl = strlen(target);
    while (d && (e = readdir(d))) {
        char link[300], p[4096];
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        ssize_t k = readlink(link, p, sizeof p - 1);
        if (k <= 0)
            continue;
        p[k] = '\0';
        if (strncmp(p, target, tl) == 0 && (p[tl] == '\0' || p[tl] == '/') && !strstr(out, p) &&
            strlen(out) + (size_t)k + 2 < n)
            strcat(strcat(out, p), "\n");
    }
    if (d)
        closedir(d);
}

/* fsync the file, or the metadata files of the directory (everything but the data.* subfiles). */
static int fsync_target(iob_ctx *c, const char *target, int with_metadata, char *held)
{
    struct stat st;
    if (stat(target, &st) != 0)
        return iob_fail(c, "stat(%s) after adios2_close: %s", target, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return c->node_rank == 0 ? iob_fsync_path(c, target) : IOB_OK; /* one file (hdf5 engine): per node */
    int rc = IOB_OK;
    DIR *d = with_metadata ? opendir(target) : NULL;
    if (with_metadata && !d)
        return iob_fail(c, "opendir(%s): %s", target, strerror(errno));
    struct dirent *e;
    while (d && rc == IOB_OK && (e = readdir(d))) { /* metadata files, unless held (synced below) */
        char p[8192];
        snprintf(p, sizeof p, "%s/%s\n", target, e->d_name);
        if (e->d_name[0] == '.' || strncmp(e->d_name, "data.", 5) == 0 || strstr(held, p))
            continue;
        p[strlen(p) - 1] = '\0';
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode))
            rc = iob_fsync_path(c, p);
    }
    if (d)
        closedir(d);
    for (char *p = held, *nl; rc == IOB_OK && (nl = strchr(p, '\n')); p = nl + 1) {
        *nl = '\0';
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode))
            rc = iob_fsync_path(c, p);
    }
    return rc;
}

/* Each rank fsyncs the engine files it held open (its node's aggregated subfile, whoever wrote it),
 * rank 0 also the metadata files: every dirty page is synced once by a node that wrote it, and no
 * node fsyncs another node's subfiles (on a parallel file system that is lock traffic, not I/O). */
static int a2_sync(iob_ctx *c)
{
    a2_state *s = c->backend_state;
    adios2_engine *e = s->engine;
    s->engine = NULL;
    char call[4200], held[16384];
    held_files(s->target, held, sizeof held);
    snprintf(call, sizeof call, "adios2_close(%s)", s->target);
    A2(c, call, adios2_close(e));
    return fsync_target(c, s->target, c->rank == 0, held);
fail:
    return IOB_FAIL;
}

/* ADIOS2 2.11's BP5 reader writes its profile at close, whatever Profile says, to
 * /tmp/<basename of the target>_<pid in hex>_profiling.json from rank 0 of the engine's communicator
 * (BP5Reader::FlushProfiler): files outside --dir that no sweep of run directories sees, one per reading
 * process and read. Each reading process removes its own (none there: ENOENT, nothing else named so). */
static void drop_reader_profile(iob_ctx *c, const a2_state *s)
{
    if (s->writing)
        return;
    const char *base = strrchr(s->target, '/');
    char p[4400];
    snprintf(p, sizeof p, "/tmp/%s_%x_profiling.json", base ? base + 1 : s->target, (unsigned)getpid());
    unlink(p);
}

static int a2_close(iob_ctx *c)
{
    a2_state *s = c->backend_state;
    if (!s)
        return IOB_OK;
    int rc = IOB_OK;
    char call[4200];
    if (s->engine) {
        snprintf(call, sizeof call, "adios2_close(%s)", s->target);
        A2(c, call, adios2_close(s->engine));
        drop_reader_profile(c, s);
    }
    goto done;
fail:
    rc = IOB_FAIL;
done:
    if (s->adios) {
        char msg[IOB_ERRLEN];
        cap_begin();
        adios2_error e = adios2_finalize(s->adios);
        cap_end(msg, sizeof msg);
        if (e != adios2_error_none && rc == IOB_OK)
            rc = a2fail(c, "adios2_finalize", msg);
    }
    for (int i = 0; s->packed && i < c->nvars; i++)
        free(s->packed[i]);
    free(s->packed);
    free(s);
    c->backend_state = NULL;
    return rc;
}

static void versions(iob_kvlist *out)
{
    iob_kv_put(out, "adios2", ADIOS2_VERSION_STR);
}

static const char *const modes[] = {"bp5", "bp4", "hdf5", NULL};
const iob_backend iob_backend_adios2 = {
    .name = "adios2", .modes = modes, .options = options, .check = check, .files = files,
    .open = a2_open, .write = a2_write, .read = a2_read, .sync = a2_sync, .close = a2_close,
    .versions = versions,
};
