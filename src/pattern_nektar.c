/* Nektar++-style checkpoint (seed 000): a global set of E elements, each with an ID and a variable-length
 * list of coefficients (count from a seeded hash of the element index), split over the ranks in unequal,
 * seeded shares. Stored as in Nektar++'s FieldIOHdf5: datasets ELEMENTIDS and DATA (every rank writes its
 * slice), DECOMPOSITION (one row per writing rank: elements, coefficients, element offset, coefficient
 * offset, field hash) and FIELDDEFS, both written by rank 0 after it has the offsets of every rank.
 * The element set does not depend on the rank count, so a kept file can be re-read with another rank
 * count (param write_ranks = the ranks that wrote it; rank 0 reads and verifies its DECOMPOSITION).
 *
 * Params: case=small (about 2.4 MB, metadata-bound, like the 2.5 MB aorta case) | large (about 250 MB,
 * ~196 coefficients per element like the 5.5 GB racing-car case, scaled); --size N overrides the total
 * element count; seed=S (default 1); write_ranks=P (read-only runs).
 * Values: ELEMENTIDS[e] = e + 1, DATA[c] = c + 1 (global coefficient index c), so outside tools can check.
 * The offsets are computed by every rank from the seed, outside the timer (Nektar++ gathers them inside
 * its write; that collation cost is not part of this measurement).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "iobench.h"

#define NEK_DECOMP_COLS 5
#define NEK_FDEF_COLS 8
enum { NEK_FDEF, NEK_DECOMP, NEK_IDS, NEK_DATA, NEK_NVARS };

typedef struct {
    const char *casename;
    int64_t E, cmin, cmax;   /* elements, coefficient count range per element */
    uint64_t seed;
    int write_ranks;
    int64_t e0, ne, c0, nc, ctotal; /* this io_rank's elements and coefficients; all coefficients */
    int64_t fdef[NEK_FDEF_COLS];
    int64_t *decomp, *ids;
    double *data;
} nek_state;

static uint64_t nek_mix(uint64_t x) /* splitmix64 finaliser */
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static int64_t nek_ncoeff(const nek_state *s, int64_t e)
{
    return s->cmin + (int64_t)(nek_mix(s->seed * 0x100000001b3ULL + (uint64_t)e) % (uint64_t)(s->cmax - s->cmin + 1));
}

/* First element of rank r out of P: shares weighted 0.5..1.5 by a seeded hash, so ranks are unequal. */
static int64_t nek_first_elem(const nek_state *s, int r, int P)
{
    double wsum = 0, wr = 0;
    for (int q = 0; q < P; q++) {
        double w = 0.5 + (double)(nek_mix(s->seed ^ (0xabcdULL + (uint64_t)q)) % 1000) / 1000.0;
        if (q < r) wr += w;
        wsum += w;
    }
    return r >= P ? s->E : (int64_t)((double)s->E * (wr / wsum));
}

static int64_t nek_coeff_sum(const nek_state *s, int64_t e0, int64_t e1)
{
    int64_t sum = 0;
    for (int64_t e = e0; e < e1; e++) sum += nek_ncoeff(s, e);
    return sum;
}

/* Parse params into s; on bad input write "what 'value'" into err. */
static int nek_params(const iob_opts *o, int nranks, nek_state *s, char *err, size_t errlen)
{
    const char *wr = iob_kv_get(&o->params, "write_ranks");
    s->casename = iob_param_str(o, "case");
    if (strcmp(s->casename, "small") == 0) s->E = 100000, s->cmin = 1, s->cmax = 3;
    else s->E = 160000, s->cmin = 100, s->cmax = 292;
    s->seed = (uint64_t)iob_param_int(o, "seed");
    s->write_ranks = wr ? (int)iob_param_int(o, "write_ranks") : nranks;
    if (s->write_ranks != nranks) {
        int flat_per_rank = strcmp(o->backend, "sionlib") == 0 ||
                            (strcmp(o->backend, "posix") == 0 && (!o->mode || strcmp(o->mode, "fpp") == 0));
        if (o->do_write || flat_per_rank) {
            snprintf(err, errlen, "write_ranks for nektar (differs from the rank count: only for --phase read "
                     "of a shared-file backend) '%s'", wr);
            return IOB_BADINPUT;
        }
    }
    /* --size given (iob_opts cannot tell it from the default 32): the total element count */
    if (strstr(o->command, " --size ") || strstr(o->command, " --size="))
        s->E = o->size[0];
    if (o->nsize != 1) {
        snprintf(err, errlen, "--size for nektar (total elements, one number > 0) '%lld,...'",
                 (long long)o->size[0]);
        return IOB_BADINPUT;
    }
    if (s->E <= 0) {
        snprintf(err, errlen, "--size for nektar (total elements > 0) '%lld'", (long long)s->E);
        return IOB_BADINPUT;
    }
    return IOB_OK;
}

static int nektar_check(const iob_opts *o, int nranks, char *err, size_t errlen)
{
    nek_state s = {0};
    return nek_params(o, nranks, &s, err, errlen);
}

static void nek_set(iob_var *v, const char *name, iob_dtype t, void *buf, int64_t off)
{
    snprintf(v->name, sizeof v->name, "%s", name);
    v->dtype = t;
    v->nfields = 1;
    v->buf = buf;
    v->file_offset = off;
}

static int nektar_setup(iob_ctx *c)
{
    nek_state *s = c->pattern_state;
    if (!s) {
        char err[256];
        s = calloc(1, sizeof *s);
        c->vars = calloc(NEK_NVARS, sizeof(iob_var));
        if (!s || !c->vars) return iob_fail(c, "nektar: out of memory");
        c->pattern_state = s;
        if (nek_params(c->opt, c->nranks, s, err, sizeof err)) return iob_fail(c, "nektar: %s", err);
        s->ctotal = nek_coeff_sum(s, 0, s->E);
        s->decomp = calloc((size_t)s->write_ranks * NEK_DECOMP_COLS, sizeof(int64_t));
        if (!s->decomp) return iob_fail(c, "nektar: out of memory");
    }
    free(s->ids);
    free(s->data);
    int P = c->nranks, r = c->io_rank;
    s->e0 = nek_first_elem(s, r, P);
    s->ne = nek_first_elem(s, r + 1, P) - s->e0;
    s->c0 = nek_coeff_sum(s, 0, s->e0);
    s->nc = nek_coeff_sum(s, s->e0, s->e0 + s->ne);
    s->ids = malloc((size_t)(s->ne ? s->ne : 1) * sizeof(int64_t));
    s->data = malloc((size_t)(s->nc ? s->nc : 1) * sizeof(double));
    if (!s->ids || !s->data)
        return iob_fail(c, "nektar: cannot allocate %lld elements / %lld coefficients", (long long)s->ne,
                        (long long)s->nc);

    int64_t Pw = s->write_ranks, mine0 = r == 0; /* rank 0 owns the metadata datasets */
    int64_t off_decomp = NEK_FDEF_COLS * 8, off_ids = off_decomp + Pw * NEK_DECOMP_COLS * 8,
            off_data = off_ids + s->E * 8;
    iob_var *v = c->vars;
    memset(v, 0, NEK_NVARS * sizeof *v);
    c->nvars = NEK_NVARS;
    nek_set(&v[NEK_FDEF], "FIELDDEFS", IOB_INT64, s->fdef, 0);
    v[NEK_FDEF].ndims = 2;
    v[NEK_FDEF].gdims[0] = 1, v[NEK_FDEF].gdims[1] = NEK_FDEF_COLS;
    v[NEK_FDEF].count[0] = v[NEK_FDEF].mdims[0] = mine0;
    v[NEK_FDEF].count[1] = v[NEK_FDEF].mdims[1] = NEK_FDEF_COLS;
    nek_set(&v[NEK_DECOMP], "DECOMPOSITION", IOB_INT64, s->decomp, off_decomp);
    v[NEK_DECOMP].ndims = 2;
    v[NEK_DECOMP].gdims[0] = Pw, v[NEK_DECOMP].gdims[1] = NEK_DECOMP_COLS;
    v[NEK_DECOMP].count[0] = v[NEK_DECOMP].mdims[0] = mine0 ? Pw : 0;
    v[NEK_DECOMP].count[1] = v[NEK_DECOMP].mdims[1] = NEK_DECOMP_COLS;
    nek_set(&v[NEK_IDS], "ELEMENTIDS", IOB_INT64, s->ids, off_ids);
    v[NEK_IDS].ndims = 1;
    v[NEK_IDS].gdims[0] = s->E;
    v[NEK_IDS].start[0] = s->e0;
    v[NEK_IDS].count[0] = v[NEK_IDS].mdims[0] = s->ne;
    nek_set(&v[NEK_DATA], "DATA", IOB_DOUBLE, s->data, off_data);
    v[NEK_DATA].ndims = 1;
    v[NEK_DATA].gdims[0] = s->ctotal;
    v[NEK_DATA].start[0] = s->c0;
    v[NEK_DATA].count[0] = v[NEK_DATA].mdims[0] = s->nc;
    return IOB_OK;
}

/* Expected metadata: field definition and the decomposition of the write_ranks writers. */
static void nek_expected_meta(const nek_state *s, int64_t *fdef, int64_t *decomp)
{
    int64_t hash = (int64_t)(nek_mix(s->seed ^ 0xfe1dULL) >> 1);
    int64_t f[NEK_FDEF_COLS] = {hash, 4 /* quadrilateral */, s->cmin, s->cmax, 1 /* fields */, s->E,
                                s->ctotal, (int64_t)s->seed};
    memcpy(fdef, f, sizeof f);
    int64_t e0 = 0, c0 = 0;
    for (int q = 0; q < s->write_ranks; q++) {
        int64_t e1 = nek_first_elem(s, q + 1, s->write_ranks), nc = nek_coeff_sum(s, e0, e1);
        int64_t row[NEK_DECOMP_COLS] = {e1 - e0, nc, e0, c0, hash};
        memcpy(decomp + (size_t)q * NEK_DECOMP_COLS, row, sizeof row);
        e0 = e1, c0 += nc;
    }
}

static void nektar_fill(iob_ctx *c)
{
    nek_state *s = c->pattern_state;
    if (c->io_rank == 0) nek_expected_meta(s, s->fdef, s->decomp);
    for (int64_t i = 0; i < s->ne; i++) s->ids[i] = s->e0 + i + 1;
    for (int64_t i = 0; i < s->nc; i++) s->data[i] = (double)(s->c0 + i + 1);
}

static void nektar_clear(iob_ctx *c)
{
    nek_state *s = c->pattern_state;
    memset(s->fdef, 0xff, sizeof s->fdef);
    memset(s->decomp, 0xff, (size_t)s->write_ranks * NEK_DECOMP_COLS * sizeof(int64_t));
    for (int64_t i = 0; i < s->ne; i++) s->ids[i] = -1;
    for (int64_t i = 0; i < s->nc; i++) s->data[i] = -1.0;
}

static int nektar_verify(iob_ctx *c)
{
    nek_state *s = c->pattern_state;
    if (c->io_rank == 0) {
        int64_t fdef[NEK_FDEF_COLS], *decomp = calloc((size_t)s->write_ranks * NEK_DECOMP_COLS, 8);
        if (!decomp) return iob_fail(c, "nektar: out of memory");
        nek_expected_meta(s, fdef, decomp);
        for (int i = 0; i < NEK_FDEF_COLS; i++)
            if (fdef[i] != s->fdef[i]) {
                free(decomp);
                return iob_fail(c, "nektar: FIELDDEFS at global index %d: read %lld, expected %lld", i,
                                (long long)s->fdef[i], (long long)fdef[i]);
            }
        for (int64_t i = 0; i < (int64_t)s->write_ranks * NEK_DECOMP_COLS; i++)
            if (decomp[i] != s->decomp[i]) {
                long long want = decomp[i];
                free(decomp);
                return iob_fail(c, "nektar: DECOMPOSITION at global index %lld (writer %lld): read %lld, "
                                "expected %lld", (long long)i, (long long)(i / NEK_DECOMP_COLS),
                                (long long)s->decomp[i], want);
            }
        free(decomp);
    }
    for (int64_t i = 0; i < s->ne; i++)
        if (s->ids[i] != s->e0 + i + 1)
            return iob_fail(c, "nektar: ELEMENTIDS at global index %lld: read %lld, expected %lld",
                            (long long)(s->e0 + i), (long long)s->ids[i], (long long)(s->e0 + i + 1));
    for (int64_t i = 0; i < s->nc; i++)
        if (s->data[i] != (double)(s->c0 + i + 1))
            return iob_fail(c, "nektar: DATA at global index %lld: read %.17g, expected %lld",
                            (long long)(s->c0 + i), s->data[i], (long long)(s->c0 + i + 1));
    return IOB_OK;
}

static void nektar_teardown(iob_ctx *c)
{
    nek_state *s = c->pattern_state;
    if (s) {
        free(s->decomp);
        free(s->ids);
        free(s->data);
    }
    iob_pattern_release(c);
}

static void nektar_describe(const iob_ctx *c, iob_json *j)
{
    const nek_state *s = c->pattern_state;
    jw_str(j, "case", s->casename);
    jw_int(j, "seed", (int64_t)s->seed);
    jw_int(j, "elements_total", s->E);
    jw_int(j, "coefficients_total", s->ctotal);
    jw_int(j, "write_ranks", s->write_ranks);
    jw_begin_arr(j, "elements_per_rank");
    for (int r = 0; r < c->nranks; r++)
        jw_int(j, NULL, nek_first_elem(s, r + 1, c->nranks) - nek_first_elem(s, r, c->nranks));
    jw_end_arr(j);
}

static const iob_option options[] = {
    {"case", IOB_OPT_ENUM, "small", .help = "small: 100000 elements of 1..3 coefficients; large: 160000 of 100..292",
     .values = "small|large"},
    {"seed", IOB_OPT_INT, "1", .help = "seeds the coefficient counts and the rank shares", .min = 1},
    {"write_ranks", IOB_OPT_INT, NULL, .help = "ranks that wrote the file (default: this run's; only for --phase read of "
                                       "a shared-file backend)", .min = 1, .max = 1 << 24},
    {0}};
const iob_pattern iob_pattern_nektar = {
    .name = "nektar",
    .about = "--size total elements (overrides the case's)",
    .options = options,
    .check = nektar_check,
    .setup = nektar_setup,
    .fill = nektar_fill,
    .clear = nektar_clear,
    .verify = nektar_verify,
    .teardown = nektar_teardown,
    .describe = nektar_describe,
};
