/* Driver side of iob_pattern.run (patterns that time their own phases), and helpers they share. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "driver.h"
#include "pattern_run.h"

int iob_run_agree(iob_ctx *c, int rc)
{
    int src = rc != IOB_OK ? c->rank : c->nranks, min = 0;
    MPI_Allreduce(&src, &min, 1, MPI_INT, MPI_MIN, c->comm);
    if (min == c->nranks)
        return IOB_OK;
    if (rc != IOB_OK)
        fprintf(stderr, "iobench: rank %d: %s\n", c->rank, c->errmsg);
    MPI_Bcast(c->errmsg, IOB_ERRLEN, MPI_CHAR, min, c->comm);
    return IOB_FAIL;
}

double iob_run_max(iob_ctx *c, double x)
{
    double m = x;
    MPI_Allreduce(&x, &m, 1, MPI_DOUBLE, MPI_MAX, c->comm);
    return m;
}

void iob_run_ops_json(iob_json *j, const char *key, int64_t ops, double total_s)
{
    jw_begin_obj(j, key);
    jw_int(j, "ops", ops);
    jw_num(j, "total_s", total_s);
    jw_num(j, "ops_per_s", total_s > 0 ? (double)ops / total_s : 0.0);
    jw_end_obj(j);
}

void iob_run_drop_file(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return;
    fdatasync(fd); /* DONTNEED cannot drop dirty pages */
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

int64_t iob_run_resident_pages(const char *path, int64_t *pages)
{
    int64_t res = 0;
    iob_probe_file(path, pages, &res);
    return res;
}

static void to_phase(iob_phase *p, const iob_run_phase *o)
{
    p->done = o->done;
    p->bytes = o->bytes;
    p->open_s = o->open_s, p->access_s = o->access_s, p->sync_s = o->sync_s;
    p->close_s = o->close_s, p->total_s = o->total_s;
    p->verified = o->verified;
    p->resident = o->resident;
}

int iob_pattern_run_rep(iob_ctx *c, iob_result *res, iob_rep *r)
{
    iob_run_phase out[2];
    memset(out, 0, sizeof out);
    if (c->rank == 0) {
        r->files = calloc(1, 4096);
        snprintf(r->files[0], 4096, "%s", c->path);
        r->nfiles = 1;
    }
    int mine = res->pat->run(c, &r->extra, out), rc = IOB_OK; /* run() agreed already; be sure */
    MPI_Allreduce(&mine, &rc, 1, MPI_INT, MPI_MAX, c->comm);
    /* counted, not assigned: what the calls returned, summed over ranks (the driver compares it with
     * bytes_total, as for its own phases) */
    int64_t moved[2] = {out[0].moved, out[1].moved}, sum[2];
    MPI_Allreduce(moved, sum, 2, MPI_INT64_T, MPI_SUM, c->comm);
    to_phase(&r->w, &out[0]);
    to_phase(&r->r, &out[1]);
    r->w.bytes = sum[0], r->r.bytes = sum[1];
    /* these workloads are uniform over ranks */
    res->bytes_total = out[0].done ? out[0].bytes : out[1].bytes;
    res->bytes_per_rank = res->bytes_total / c->nranks;
    if (out[1].done)
        snprintf(res->cache_defeat, sizeof res->cache_defeat, "%s", out[1].cache_defeat);
    return rc;
}

void iob_json_splice(iob_json *j, const iob_json *members)
{
    if (!members->len)
        return;
    /* members is a run of `"key":value` pairs written with jw_*; append them after a comma */
    size_t need = j->len + members->len + 2;
    if (need > j->cap) {
        char *nb = realloc(j->buf, need * 2);
        if (!nb)
            return;
        j->buf = nb, j->cap = need * 2;
    }
    if (j->need_comma)
        j->buf[j->len++] = ',';
    memcpy(j->buf + j->len, members->buf, members->len);
    j->len += members->len;
    j->buf[j->len] = '\0';
    j->need_comma = 1;
}

void iob_run_nop(iob_ctx *c) {}
int iob_run_verified_in_run(iob_ctx *c) { return IOB_OK; }
