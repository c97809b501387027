/* benchio: a 3-D global array of doubles on a Cartesian process grid; each rank holds an n1 x n2 x n3
 * block inside a buffer with a halo of depth 1 (never written). Element at global C-order index g holds
 * g + 1, so any tool can check a kept file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "iobench.h"

#define SENTINEL (-1.0)   /* halo cells: never a file value (those are >= 1) */
#define POISON (-2.0)     /* block cells before a read */

typedef struct { int dims[3], coords[3]; iob_var var; } benchio;

/* benchio's halo depth; --param halo=0 gives a packed buffer (to isolate I/O) */
static int halo_of(const iob_opts *o) { return (int)iob_param_int(o, "halo"); }

static int check(const iob_opts *o, int nranks, char *err, size_t errlen)
{
    int dims[3] = {0, 0, 0}, HALO = halo_of(o);
    MPI_Dims_create(nranks, 3, dims);
    long double global = 8.0L, mem = 8.0L;
    for (int d = 0; d < 3; d++) {
        global *= (long double)o->size[d] * dims[d];
        mem *= (long double)(o->size[d] + 2 * HALO);
    }
    /* global byte offsets and the halo'd buffer must fit in int64 (2^62 keeps headroom) */
    if (global > 4611686018427387904.0L || mem > 4611686018427387904.0L) {
        char v[96];
        if (o->nsize == 1)
            snprintf(v, sizeof v, "%lld", (long long)o->size[0]);
        else
            snprintf(v, sizeof v, "%lld,%lld,%lld", (long long)o->size[0], (long long)o->size[1],
                     (long long)o->size[2]);
        snprintf(err, errlen, "--size too large for benchio on %d ranks '%s'", nranks, v);
        return IOB_BADINPUT;
    }
    return IOB_OK;
}

static int setup(iob_ctx *c)
{
    benchio *b = calloc(1, sizeof *b);
    int HALO = halo_of(c->opt);
    if (!b)
        return iob_fail(c, "benchio: out of memory");
    MPI_Dims_create(c->nranks, 3, b->dims);
    int r = c->io_rank;   /* row-major Cartesian coordinates, as MPI_Cart_coords gives */
    b->coords[2] = r % b->dims[2];
    b->coords[1] = (r / b->dims[2]) % b->dims[1];
    b->coords[0] = r / (b->dims[2] * b->dims[1]);
    iob_var *v = &b->var;
    snprintf(v->name, sizeof v->name, "data");
    v->dtype = IOB_DOUBLE;
    v->nfields = 1;
    v->ndims = 3;
    size_t melems = 1;
    for (int d = 0; d < 3; d++) {
        v->count[d] = c->opt->size[d];
        v->gdims[d] = c->opt->size[d] * b->dims[d];
        v->start[d] = c->opt->size[d] * b->coords[d];
        v->mdims[d] = c->opt->size[d] + 2 * HALO;
        v->moff[d] = HALO;
        melems *= (size_t)v->mdims[d];
    }
    v->buf = malloc(melems * sizeof(double));
    if (!v->buf) {
        free(b);
        return iob_fail(c, "benchio: cannot allocate %zu bytes for the block", melems * sizeof(double));
    }
    double *p = v->buf;
    for (size_t i = 0; i < melems; i++)
        p[i] = SENTINEL;
    c->pattern_state = b;
    c->vars = v;
    c->nvars = 1;
    return IOB_OK;
}

/* Visit every memory cell: fn(cell, global index or -1 for halo). Returns first non-zero. */
#define FOR_CELLS(v, ...)                                                                                \
    do {                                                                                                 \
        double *p_ = (v)->buf;                                                                           \
        const int64_t HALO = (v)->moff[0];                                                               \
        for (int64_t i = 0; i < (v)->mdims[0]; i++)                                                      \
            for (int64_t j = 0; j < (v)->mdims[1]; j++) {                                                \
                int inrow = i >= HALO && i < HALO + (v)->count[0] && j >= HALO && j < HALO + (v)->count[1]; \
                int64_t gbase = ((v)->start[0] + i - HALO) * (v)->gdims[1] + (v)->start[1] + j - HALO;   \
                for (int64_t k = 0; k < (v)->mdims[2]; k++, p_++) {                                      \
                    int inside = inrow && k >= HALO && k < HALO + (v)->count[2];                         \
                    int64_t g = inside ? gbase * (v)->gdims[2] + (v)->start[2] + k - HALO : -1;          \
                    __VA_ARGS__;                                                                              \
                }                                                                                        \
            }                                                                                            \
    } while (0)

static void fill(iob_ctx *c)
{
    iob_var *v = &((benchio *)c->pattern_state)->var;
    FOR_CELLS(v, *p_ = g >= 0 ? (double)(g + 1) : SENTINEL);
}

static void clear(iob_ctx *c)
{
    iob_var *v = &((benchio *)c->pattern_state)->var;
    FOR_CELLS(v, *p_ = g >= 0 ? POISON : SENTINEL);
}

static int verify(iob_ctx *c)
{
    iob_var *v = &((benchio *)c->pattern_state)->var;
    int64_t bad = -2, mi = -1;
    double want = 0, got = 0;
    int64_t m = 0;
    FOR_CELLS(v, {
        double e = g >= 0 ? (double)(g + 1) : SENTINEL;
        if (bad == -2 && *p_ != e)
            bad = g, want = e, got = *p_, mi = m;
        m++;
    });
    if (bad == -2)
        return IOB_OK;
    if (bad == -1)
        return iob_fail(c, "verify: halo cell at memory index %lld overwritten with %.17g (read wrote "
                           "outside the block)", (long long)mi, got);
    return iob_fail(c, "verify: mismatch at global index %lld: expected %.17g, read %.17g",
                    (long long)bad, want, got);
}

static void teardown(iob_ctx *c)
{
    benchio *b = c->pattern_state;
    if (!b)
        return;
    free(b->var.buf);
    free(b);
    c->pattern_state = NULL;
    c->vars = NULL;
    c->nvars = 0;
}

static void describe(const iob_ctx *c, iob_json *j)
{
    const benchio *b = c->pattern_state;
    jw_begin_arr(j, "dims");
    for (int d = 0; d < 3; d++)
        jw_int(j, NULL, b->dims[d]);
    jw_end_arr(j);
    jw_begin_arr(j, "local_size");
    for (int d = 0; d < 3; d++)
        jw_int(j, NULL, b->var.count[d]);
    jw_end_arr(j);
    jw_int(j, "halo", b->var.moff[0]);
    jw_begin_arr(j, "global_size");
    for (int d = 0; d < 3; d++)
        jw_int(j, NULL, b->var.gdims[d]);
    jw_end_arr(j);
}

static const iob_option options[] = {
    {"halo", IOB_OPT_INT, "1", .help = "halo depth of the memory buffer (0: packed, to isolate I/O)", .min = 0, .max = 1},
    {0}};
const iob_pattern iob_pattern_benchio = {
    .name = "benchio", .options = options, .check = check, .setup = setup, .fill = fill,
    .clear = clear, .verify = verify, .teardown = teardown, .describe = describe,
    .about = "--size n or n1,n2,n3 (32): local block of doubles per rank, 3-D process grid",
};
