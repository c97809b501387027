/* HACC-IO (seed 004): 9 particle variables per rank of equal size (doubles): id, mask, x, y, z, vx,
 * vy, vz, phi. --size = particles per rank (n). Param `layout` selects how they sit in the file:
 *
 *   interleaved (flat backends) / multi (hdf5, adios2): one variable "particles" of global dims (P, 9, n),
 *       rank r owns (r, 0..8, 0..n-1): each rank's 9 blocks follow each other.
 *   contiguous (flat backends) / individual (hdf5, adios2): 9 variables of global dims (P*n), variable k
 *       at byte file_offset k*P*n*8 of a shared flat file: variable after variable across ranks.
 *   compound (hdf5): one variable "particles" of P*n elements, each a compound of the 9 named doubles.
 *
 * Value of variable k at global particle index g = r*n + j is k*1e12 + g + 1 (exact in a double), so
 * any outside tool can check a kept file and every misplaced block is caught.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "iobench.h"

#define HACC_NVARS 9
#define HACC_VAR_STRIDE 1e12 /* value offset between variables; g must stay below it */

static const char *const hacc_names[HACC_NVARS] = {"id", "mask", "x", "y", "z", "vx", "vy", "vz", "phi"};

typedef enum { HACC_INTERLEAVED, HACC_CONTIGUOUS, HACC_COMPOUND } hacc_shape;

typedef struct {
    hacc_shape shape;
    const char *layout;
    int64_t n;        /* particles per rank */
    double *data;     /* 9*n doubles: var-major for interleaved/contiguous, particle-major for compound */
} hacc_state;

/* Layout names each backend accepts; the first is the default. */
static const char *const *hacc_layouts(const char *backend)
{
    static const char *const flat[] = {"interleaved", "contiguous", NULL};
    static const char *const h5[] = {"individual", "multi", "compound", NULL};
    static const char *const ad[] = {"individual", "multi", NULL};
    if (strcmp(backend, "hdf5") == 0) return h5;
    if (strcmp(backend, "adios2") == 0) return ad;
    return flat;
}

static const char *hacc_layout(const iob_opts *o)
{
    const char *l = iob_param_str(o, "layout");
    return l ? l : hacc_layouts(o->backend)[0];
}

static hacc_shape hacc_shape_of(const char *layout)
{
    if (strcmp(layout, "compound") == 0) return HACC_COMPOUND;
    if (strcmp(layout, "contiguous") == 0 || strcmp(layout, "individual") == 0) return HACC_CONTIGUOUS;
    return HACC_INTERLEAVED;
}

/* Largest file this process may write in dir: the filesystem's FILESIZEBITS and RLIMIT_FSIZE. */
static int64_t hacc_file_size_limit(const char *dir)
{
    int64_t lim = INT64_MAX;
    long bits = pathconf(dir, _PC_FILESIZEBITS);
    if (bits > 1 && bits < 64) lim = ((int64_t)1 << (bits - 1)) - 1;
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (int64_t)rl.rlim_cur < lim)
        lim = (int64_t)rl.rlim_cur;
    return lim;
}

static int hacc_check(const iob_opts *o, int nranks, char *err, size_t errlen)
{
    const char *layout = hacc_layout(o);
    const char *const *ok = hacc_layouts(o->backend);
    int found = 0;
    char names[128] = "";
    for (int i = 0; ok[i]; i++) {
        found |= strcmp(ok[i], layout) == 0;
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", ok[i]);
    }
    if (!found) {
        snprintf(err, errlen, "layout for backend %s (one of %s) '%s'", o->backend, names, layout);
        return IOB_BADINPUT;
    }
    if (o->nsize != 1 || o->size[0] <= 0) {
        snprintf(err, errlen, "--size for hacc (particles per rank, one number > 0) '%lld%s'",
                 (long long)o->size[0], o->nsize != 1 ? ",..." : "");
        return IOB_BADINPUT;
    }
    int64_t n = o->size[0];
    if (n >= (int64_t)(HACC_VAR_STRIDE / nranks)) {
        snprintf(err, errlen, "--size for hacc (particles per rank x ranks must stay below 1e12) '%lld'",
                 (long long)n);
        return IOB_BADINPUT;
    }
    /* HDF5 alignment (the hdf5 backend's key, checked there) pads every dataset to a multiple of ALIGN:
     * the file must still fit. */
    const char *al = iob_kv_get(&o->params, "alignment");
    int64_t thresh, a;
    if (al && !iob_alignment(al, &thresh, &a)) {
        int ndsets = hacc_shape_of(layout) == HACC_CONTIGUOUS ? HACC_NVARS : 1;
        int64_t lim = hacc_file_size_limit(o->dir ? o->dir : ".");
        double dset = (double)n * nranks * 8.0 * HACC_NVARS / ndsets;
        double need = ndsets * (ceil(dset / (double)a) + 1.0) * (double)a;
        if (need > (double)lim) {
            snprintf(err, errlen, "alignment (file would exceed the file size limit of %lld bytes) '%s'",
                     (long long)lim, al);
            return IOB_BADINPUT;
        }
    }
    return IOB_OK;
}

static double hacc_value(int k, int64_t g) { return k * HACC_VAR_STRIDE + (double)g + 1.0; }

static int hacc_setup(iob_ctx *c)
{
    hacc_state *s = c->pattern_state;
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s) return iob_fail(c, "hacc: out of memory");
        s->layout = hacc_layout(c->opt);
        s->shape = hacc_shape_of(s->layout);
        s->n = c->opt->size[0];
        s->data = malloc((size_t)s->n * HACC_NVARS * sizeof(double));
        c->pattern_state = s;
        c->vars = calloc(HACC_NVARS, sizeof(iob_var));
        if (!s->data || !c->vars) return iob_fail(c, "hacc: cannot allocate %lld particles",
                                                  (long long)s->n);
    }
    int64_t n = s->n, P = c->nranks, r = c->io_rank;
    memset(c->vars, 0, HACC_NVARS * sizeof(iob_var));
    if (s->shape == HACC_CONTIGUOUS) {
        c->nvars = HACC_NVARS;
        for (int k = 0; k < HACC_NVARS; k++) {
            iob_var *v = &c->vars[k];
            snprintf(v->name, sizeof v->name, "%s", hacc_names[k]);
            v->dtype = IOB_DOUBLE;
            v->nfields = 1;
            v->ndims = 1;
            v->gdims[0] = P * n;
            v->start[0] = r * n;
            v->count[0] = v->mdims[0] = n;
            v->buf = s->data + (size_t)k * n;
            v->file_offset = (int64_t)k * P * n * 8;
        }
        return IOB_OK;
    }
    c->nvars = 1;
    iob_var *v = &c->vars[0];
    snprintf(v->name, sizeof v->name, "particles");
    v->dtype = IOB_DOUBLE;
    v->buf = s->data;
    if (s->shape == HACC_COMPOUND) {
        v->nfields = HACC_NVARS;
        v->field_names = hacc_names;
        v->ndims = 1;
        v->gdims[0] = P * n;
        v->start[0] = r * n;
        v->count[0] = v->mdims[0] = n;
    } else {
        v->nfields = 1;
        v->ndims = 3;
        v->gdims[0] = P, v->gdims[1] = HACC_NVARS, v->gdims[2] = n;
        v->start[0] = r;
        v->count[0] = v->mdims[0] = 1;
        v->count[1] = v->mdims[1] = HACC_NVARS;
        v->count[2] = v->mdims[2] = n;
    }
    return IOB_OK;
}

/* Where variable k of local particle j lives in the buffer. */
static size_t hacc_index(const hacc_state *s, int k, int64_t j)
{
    return s->shape == HACC_COMPOUND ? (size_t)j * HACC_NVARS + k : (size_t)k * s->n + j;
}

static void hacc_fill(iob_ctx *c)
{
    hacc_state *s = c->pattern_state;
    int64_t g0 = (int64_t)c->io_rank * s->n;
    for (int k = 0; k < HACC_NVARS; k++)
        for (int64_t j = 0; j < s->n; j++)
            s->data[hacc_index(s, k, j)] = hacc_value(k, g0 + j);
}

static void hacc_clear(iob_ctx *c)
{
    hacc_state *s = c->pattern_state;
    for (size_t i = 0; i < (size_t)s->n * HACC_NVARS; i++) s->data[i] = -1.0; /* never a valid value */
}

static int hacc_verify(iob_ctx *c)
{
    hacc_state *s = c->pattern_state;
    int64_t g0 = (int64_t)c->io_rank * s->n;
    for (int k = 0; k < HACC_NVARS; k++)
        for (int64_t j = 0; j < s->n; j++) {
            double got = s->data[hacc_index(s, k, j)], want = hacc_value(k, g0 + j);
            if (got != want)
                return iob_fail(c, "hacc: variable %s at global particle index %lld: read %.17g, expected %.17g",
                                hacc_names[k], (long long)(g0 + j), got, want);
        }
    return IOB_OK;
}

static void hacc_teardown(iob_ctx *c)
{
    hacc_state *s = c->pattern_state;
    if (s) free(s->data);
    iob_pattern_release(c);
}

/* Layout and bytes per variable: per-variable bandwidth = these bytes over the phase's total_s
 * share is not timed separately (the variables are written in one open/close span). */
static void hacc_describe(const iob_ctx *c, iob_json *j)
{
    const hacc_state *s = c->pattern_state;
    int64_t P = c->nranks, n = s->n;
    jw_str(j, "layout", s->layout);
    jw_int(j, "particles_per_rank", n);
    jw_int(j, "particles_total", P * n);
    jw_begin_arr(j, "variables");
    for (int k = 0; k < HACC_NVARS; k++) {
        jw_begin_obj(j, NULL);
        jw_str(j, "name", hacc_names[k]);
        jw_int(j, "bytes_total", P * n * 8);
        if (s->shape == HACC_CONTIGUOUS) jw_int(j, "file_offset", (int64_t)k * P * n * 8);
        jw_end_obj(j);
    }
    jw_end_arr(j);
}

static const iob_option options[] = {
    {"layout", IOB_OPT_ENUM, NULL, .help = "posix, mpiio, sionlib: interleaved, contiguous; hdf5: individual, multi, "
                                   "compound; adios2: individual, multi (default: the first)",
     .values = "interleaved|contiguous|individual|multi|compound"},
    {0}};
const iob_pattern iob_pattern_hacc = {
    .name = "hacc",
    .about = "--size particles per rank",
    .options = options,
    .check = hacc_check,
    .setup = hacc_setup,
    .fill = hacc_fill,
    .clear = hacc_clear,
    .verify = hacc_verify,
    .teardown = hacc_teardown,
    .describe = hacc_describe,
};
