/* The result document (docs/CONTRACT.md §2) and its per-phase summary over repetitions. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "driver.h"

#define MiB 1048576.0

void iob_json_free(iob_json *j)
{
    free(j->buf);
    j->buf = NULL;
    j->len = j->cap = 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Quantile with linear interpolation between order statistics (numpy's default). */
static double quantile(const double *sorted, int n, double q)
{
    double pos = q * (n - 1);
    int lo = (int)floor(pos), hi = lo + 1 < n ? lo + 1 : lo;
    return sorted[lo] + (pos - lo) * (sorted[hi] - sorted[lo]);
}

static void phase_json(iob_json *j, const char *key, const iob_phase *p, int reading)
{
    jw_begin_obj(j, key);
    jw_int(j, "bytes", p->bytes);
    jw_num(j, "open_s", p->open_s);
    jw_num(j, "access_s", p->access_s);
    jw_num(j, "sync_s", p->sync_s);
    jw_num(j, "close_s", p->close_s);
    jw_num(j, "total_s", p->total_s);
    /* a phase that moves no bytes (mdfiles filesize=0) has 0 MiB/s, not 0/0 */
    jw_num(j, "bw_MiBps", p->bytes ? p->bytes / p->total_s / MiB : 0.0);
    jw_num(j, "access_bw_MiBps", p->bytes ? p->bytes / p->access_s / MiB : 0.0);
    if (reading) {
        jw_bool(j, "verified", p->verified);
        jw_num(j, "cache_resident_before_read", p->resident);
    }
    jw_end_obj(j);
}

/* min/q1/median/q3/max/iqr of bw_MiBps; outliers: reps beyond the fences Q3 + k*IQR and Q1 - k*IQR. */
static void summary_json(iob_json *j, const char *key, const iob_result *res, int reading, double k)
{
    int n = 0;
    double *bw = malloc(sizeof(double) * (size_t)(res->nreps + 1)), *s;
    for (int i = 0; i < res->nreps; i++) {
        const iob_phase *p = reading ? &res->reps[i].r : &res->reps[i].w;
        if (p->done)
            bw[n++] = p->bytes / p->total_s / MiB;
    }
    if (n == 0) {
        free(bw);
        return;
    }
    s = malloc(sizeof(double) * (size_t)n);
    memcpy(s, bw, sizeof(double) * (size_t)n);
    qsort(s, (size_t)n, sizeof(double), cmp_double);
    double q1 = quantile(s, n, 0.25), q3 = quantile(s, n, 0.75), iqr = q3 - q1;
    jw_begin_obj(j, key);
    jw_begin_obj(j, "bw_MiBps");
    jw_num(j, "min", s[0]);
    jw_num(j, "q1", q1);
    jw_num(j, "median", quantile(s, n, 0.5));
    jw_num(j, "q3", q3);
    jw_num(j, "max", s[n - 1]);
    jw_num(j, "iqr", iqr);
    jw_end_obj(j);
    jw_num(j, "outlier_k", k);
    jw_begin_arr(j, "outliers");
    for (int i = 0, m = 0; i < res->nreps; i++) {
        const iob_phase *p = reading ? &res->reps[i].r : &res->reps[i].w;
        if (!p->done)
            continue;
        if (bw[m] > q3 + k * iqr || bw[m] < q1 - k * iqr)
            jw_int(j, NULL, i);
        m++;
    }
    jw_end_arr(j);
    jw_end_obj(j);
    free(s);
    free(bw);
}

void iob_result_json(const iob_ctx *c, const iob_result *res, iob_json *j)
{
    const iob_opts *o = c->opt;
    jw_begin_obj(j, NULL);
    jw_str(j, "schema", IOB_SCHEMA);
    jw_str(j, "status", res->failed ? "failed" : "ok");
    jw_str(j, "error", res->failed ? c->errmsg : NULL);
    jw_str(j, "command", o->command);
    jw_str(j, "started", res->started);
    jw_str(j, "backend", o->backend);
    jw_str(j, "mode", o->mode);
    jw_str(j, "pattern", o->pattern);
    jw_int(j, "ranks", c->nranks);
    jw_int(j, "nodes", c->nodes);
    jw_begin_arr(j, "hosts");
    char hosts[sizeof res->hosts];
    memcpy(hosts, res->hosts, sizeof hosts);
    for (char *s = hosts, *e; (e = strchr(s, '\n')); s = e + 1) {
        *e = '\0';
        jw_str(j, NULL, s);
    }
    jw_end_arr(j);
    if (res->pat->describe && c->vars)
        res->pat->describe(c, j);
    jw_int(j, "bytes_per_rank", res->bytes_per_rank);
    jw_int(j, "bytes_total", res->bytes_total);
    jw_str(j, "dir", o->dir);
    jw_str(j, "fs_type", res->fs_type);
    jw_kvlist(j, "params", &o->params);
    jw_kvlist(j, "hints_requested", &o->hints);
    jw_kvlist(j, "hints_in_effect", &c->hints_in_effect);
    jw_kvlist(j, "library_versions", &res->versions);
    jw_str(j, "sync_method", c->sync_method);
    jw_str(j, "cache_defeat", res->cache_defeat);
    jw_bool(j, "cache_defeated", res->cache_defeated);
    jw_begin_obj(j, "read_placement");
    jw_int(j, "shift", res->read_shift);
    jw_int(j, "ranks_reading_another_node", res->read_cross);
    if (c->nranks <= IOB_PLACEMENT_MAX) {
        jw_begin_arr(j, "node_of_rank");
        for (int r = 0; res->node_index && r < c->nranks; r++)
            jw_int(j, NULL, res->node_index[r]);
        jw_end_arr(j);
        jw_begin_arr(j, "block_read_by_rank");
        for (int r = 0; res->blocks_read && r < c->nranks; r++)
            jw_int(j, NULL, res->blocks_read[r]);
        jw_end_arr(j);
    }
    jw_end_obj(j);
    jw_bool(j, "verify", o->verify);
    jw_begin_arr(j, "repetitions");
    for (int i = 0; i < res->nreps; i++) {
        const iob_rep *r = &res->reps[i];
        jw_begin_obj(j, NULL);
        jw_int(j, "rep", r->rep);
        jw_begin_arr(j, "files");
        for (int f = 0; f < r->nfiles; f++)
            jw_str(j, NULL, r->files[f]);
        jw_end_arr(j);
        iob_json_splice(j, &r->extra);
        if (!res->failed) { /* a failed run carries no bandwidth anywhere */
            if (r->w.done)
                phase_json(j, "write", &r->w, 0);
            if (r->r.done)
                phase_json(j, "read", &r->r, 1);
        }
        jw_end_obj(j);
    }
    jw_end_arr(j);
    jw_begin_obj(j, "summary");
    if (!res->failed) {
        summary_json(j, "write", res, 0, 12.0);
        summary_json(j, "read", res, 1, 20.0);
    }
    jw_end_obj(j);
    jw_end_obj(j);
}
