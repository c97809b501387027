/* iobench driver: validate, then per repetition time write and read (barrier -> open -> access -> sync ->
 * close -> barrier, max over ranks), defeat the page cache between them, verify, delete, report JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>
#include "driver.h"

static int opened_now; /* this rank holds an open backend handle */
static const iob_backend *cur_be;

/* All ranks learn whether any failed; the lowest failing rank's message is broadcast. */
static int agree(iob_ctx *c, int failed)
{
    if (failed)
        iob_watchdog_arm(c, cur_be);
    int src = failed ? c->rank : c->nranks, min = 0;
    MPI_Allreduce(&src, &min, 1, MPI_INT, MPI_MIN, c->comm);
    if (min == c->nranks)
        return 0;
    iob_watchdog_arm(c, cur_be);
    if (failed)
        fprintf(stderr, "iobench: rank %d: %s\n", c->rank, c->errmsg);
    MPI_Bcast(c->errmsg, IOB_ERRLEN, MPI_CHAR, min, c->comm);
    iob_watchdog_update(c); /* the agreed error, for the document a hang would leave */
    return 1;
}

/* One phase as IOR times it: barrier, then each rank's own span open -> access (-> sync) -> close, with
 * no agreement inside it; total_s = the longest rank's span, each on its own clock from where it left
 * the barrier (IOR's max(end) - min(start) when ranks leave it together; node clocks need not agree).
 * The outcome is agreed once, after the span. A rank whose open failed skips its access and close;
 * one whose access failed still syncs and closes so that collective calls stay matched (its watchdog
 * is armed first, in case a library hangs there).
 * --param barriers=1 (IOR -g) agrees after open, after access+sync and after close, inside the span,
 * and ends it with a barrier: total_s is then about max(open) + max(access+sync) + max(close). */
static int run_phase(iob_ctx *c, const iob_backend *be, int writing, iob_phase *ph)
{
    double t[5] = {0, 0, 0, 0, 0}, tmax[5], a;
    c->moved = 0;
    MPI_Barrier(c->comm);
    double t0 = MPI_Wtime();
    int rc = be->open(c, writing);
    t[0] = MPI_Wtime() - t0;
    opened_now = rc == IOB_OK;
    if (c->barriers && agree(c, rc))
        return IOB_FAIL;
    if (opened_now) {
        a = MPI_Wtime();
        rc = writing ? be->write(c) : be->read(c);
        t[1] = MPI_Wtime() - a;
        if (writing) {
            /* Each rank syncs as soon as its own writes are done, as IOR's ranks do (fsync at the end
             * of WriteOrRead). Sync runs even after a failed write, so collective syncs (MPI_File_sync,
             * H5Fflush, engine close) stay matched; the write's error is the one reported. */
            a = MPI_Wtime();
            int src = be->sync(c);
            t[2] = MPI_Wtime() - a;
            rc = rc != IOB_OK ? rc : src;
        }
        if (c->barriers && agree(c, rc))
            return IOB_FAIL;
        if (rc != IOB_OK)
            iob_watchdog_arm(c, be);
        a = MPI_Wtime();
        int crc = be->close(c);
        t[3] = MPI_Wtime() - a;
        opened_now = 0;
        rc = rc != IOB_OK ? rc : crc;
        if (c->barriers && agree(c, rc))
            return IOB_FAIL;
    }
    if (c->barriers)
        MPI_Barrier(c->comm);
    t[4] = MPI_Wtime() - t0; /* this rank's end; its start is 0 on its own clock */
    if (agree(c, rc))
        return IOB_FAIL;
    MPI_Allreduce(t, tmax, 5, MPI_DOUBLE, MPI_MAX, c->comm);
    MPI_Allreduce(&c->moved, &ph->bytes, 1, MPI_INT64_T, MPI_SUM, c->comm);
    ph->done = 1;
    ph->open_s = tmax[0], ph->access_s = tmax[1], ph->sync_s = tmax[2];
    ph->close_s = tmax[3], ph->total_s = tmax[4];
    return IOB_OK;
}

/* How this run's reads avoid the cache (JSON cache_defeat, docs/CONTRACT.md §2). */
static void describe_defeat(const iob_ctx *c, iob_result *res)
{
    char *d = res->cache_defeat;
    size_t n = sizeof res->cache_defeat;
    if (res->read_cross == c->nranks)
        snprintf(d, n, "rank_shift+posix_fadvise_dontneed");
    else if (c->read_direct && res->read_cross > 0)
        snprintf(d, n, "rank_shift+o_direct (%d of %d ranks on their own node)", c->nranks - res->read_cross,
                 c->nranks);
    else if (c->read_direct)
        snprintf(d, n, "o_direct");
    else if (!res->cache_defeated)
        snprintf(d, n, "cache not defeated (%d of %d ranks read their own node's data)",
                 c->nranks - res->read_cross, c->nranks);
    else if (res->read_cross > 0)
        snprintf(d, n, "rank_shift+posix_fadvise_dontneed (%d of %d ranks on their own node)",
                 c->nranks - res->read_cross, c->nranks);
    else
        snprintf(d, n, "posix_fadvise_dontneed");
}

/* The bytes a phase moved, as the backends' calls returned them (summed over ranks), must be what the
 * pattern asked for: a short transfer that a library let pass is a failure, not bandwidth. */
static int check_counted(iob_ctx *c, const iob_phase *ph, int64_t asked, const char *what)
{
    if (ph->bytes == asked)
        return IOB_OK;
    return c->rank == 0 ? iob_fail(c, "%s: the backend's calls moved %lld bytes, the pattern asked for %lld",
                                   what, (long long)ph->bytes, (long long)asked) : IOB_OK;
}

static int setup_for(iob_ctx *c, const iob_pattern *pat, int io_rank)
{
    if (c->vars && pat->teardown)
        pat->teardown(c);
    c->io_rank = io_rank;
    return pat->setup ? pat->setup(c) : IOB_OK;
}

/* Files of this repetition for the JSON: the union over every rank, uncapped (sanity checks each is gone). */
static void record_files(iob_ctx *c, const iob_backend *be, iob_rep *r)
{
    static char paths[IOB_MAXFILES][4096];
    int n = be->files(c, paths, IOB_MAXFILES);
    char *mine = calloc((size_t)n + 1, 4096);
    for (int i = 0; i < n; i++)
        strcat(strcat(mine, paths[i]), "\n");
    int len = (int)strlen(mine) + 1, *lens = NULL, *displs = NULL, tot = 0;
    char *all = NULL;
    int gather = 1;
    if (c->rank == 0) {
        lens = calloc((size_t)c->nranks, sizeof *lens);
        displs = calloc((size_t)c->nranks, sizeof *displs);
    }
    if (gather)
        MPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, c->comm);
    if (c->rank == 0) {
        if (!gather)
            lens[0] = len;
        for (int i = 0; i < (gather ? c->nranks : 1); i++)
            displs[i] = tot, tot += lens[i];
        all = malloc((size_t)tot);
    }
    if (gather)
        MPI_Gatherv(mine, len, MPI_CHAR, all, lens, displs, MPI_CHAR, 0, c->comm);
    else if (c->rank == 0)
        memcpy(all, mine, (size_t)len);
    if (c->rank == 0) {
        int cap = 1;
        for (int i = 0; i < tot; i++)
            cap += all[i] == '\n';
        r->files = calloc((size_t)cap, 4096);
        for (int i = 0; i < (gather ? c->nranks : 1); i++)
            for (char *s = all + displs[i], *e; (e = strchr(s, '\n')); s = e + 1) {
                *e = '\0';
                int dup = 0;
                for (int f = 0; f < r->nfiles; f++)
                    dup |= strcmp(r->files[f], s) == 0;
                if (!dup && r->nfiles < cap)
                    snprintf(r->files[r->nfiles++], 4096, "%s", s);
            }
        free(all), free(lens), free(displs);
    }
    free(mine);
}

static void describe_run(iob_ctx *c, iob_result *res, int ppn)
{
    time_t now = time(NULL);
    strftime(res->started, sizeof res->started, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    char name[MPI_MAX_PROCESSOR_NAME] = {0}, *all = NULL;
    int len;
    MPI_Get_processor_name(name, &len);
    if (c->rank == 0)
        all = calloc((size_t)c->nranks, MPI_MAX_PROCESSOR_NAME);
    MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, c->comm);
    if (c->rank == 0) {
        for (int i = 0; i < c->nranks; i++) {
            const char *h = all + (size_t)i * MPI_MAX_PROCESSOR_NAME;
            char line[MPI_MAX_PROCESSOR_NAME + 2];
            snprintf(line, sizeof line, "%s\n", h);
            if (!strstr(res->hosts, line) && strlen(res->hosts) + strlen(line) < sizeof res->hosts)
                strcat(res->hosts, line);
        }
        free(all);
    }
    snprintf(res->fs_type, sizeof res->fs_type, "%s", iob_fs_type(c->opt->dir));
    iob_kv_put(&res->versions, "iobench", IOB_VERSION);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, "\n")] = '\0';
    iob_kv_put(&res->versions, "mpi", lib);
    if (res->be->versions)
        res->be->versions(&res->versions);
    int64_t mine = 0;
    for (int v = 0; v < c->nvars; v++)
        mine += iob_var_count_elems(&c->vars[v]) * iob_var_elem_bytes(&c->vars[v]);
    MPI_Allreduce(&mine, &res->bytes_total, 1, MPI_INT64_T, MPI_SUM, c->comm);
    MPI_Allreduce(&mine, &res->bytes_per_rank, 1, MPI_INT64_T, MPI_MAX, c->comm);
    (void)ppn;
}

static void emit(const iob_ctx *c, const iob_result *res)
{
    iob_watchdog_reported(); /* every rank: the document is out */
    if (c->rank != 0)
        return;
    iob_json j = {0};
    iob_result_json(c, res, &j);
    if (!c->opt->quiet) {
        fputs(j.buf, stdout);
        fputc('\n', stdout);
        fflush(stdout);
    }
    if (c->opt->json_path) {
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s.tmp", c->opt->json_path);
        FILE *f = fopen(tmp, "w");
        if (!f || fprintf(f, "%s\n", j.buf) < 0 || fclose(f) != 0 || rename(tmp, c->opt->json_path) != 0)
            fprintf(stderr, "iobench: cannot write --json file '%s'\n", c->opt->json_path);
    }
    iob_json_free(&j);
}

int main(int argc, char **argv)
{
    static iob_opts opt;
    static iob_ctx ctx;
    static iob_result res;
    iob_ctx *c = &ctx;
    char err[IOB_ERRLEN];
    MPI_Init(&argc, &argv);
    c->comm = MPI_COMM_WORLD;
    c->opt = &opt;
    MPI_Comm_rank(c->comm, &c->rank);
    MPI_Comm_size(c->comm, &c->nranks);
    snprintf(c->sync_method, sizeof c->sync_method, "none");

    if (iob_watchdog_init(c, &res) != IOB_OK) {
        MPI_Finalize();
        return IOB_BADINPUT;
    }
    int rc = iob_parse_options(argc, argv, &opt, c->nranks, c->rank == 0 ? stdout : NULL, err, sizeof err);
    if (rc != IOB_OK) {
        if (rc == IOB_BADINPUT && c->rank == 0)
            fprintf(stderr, "iobench: error: %s\n", err);
        MPI_Finalize();
        return rc == IOB_BADINPUT ? IOB_BADINPUT : IOB_OK;
    }
    const iob_backend *be = iob_find_backend(opt.backend);
    const iob_pattern *pat = iob_find_pattern(opt.pattern);
    res.be = be, res.pat = pat;
    cur_be = be;

    int ppn, status = IOB_OK, emitted = 0;
    c->barriers = (int)iob_param_int(&opt, "barriers");
    if (iob_placement(c, &ppn, &res.read_cross, &res.node_index)) {
        fprintf(stderr, "iobench: rank %d: %s\n", c->rank, c->errmsg);
        MPI_Abort(c->comm, IOB_FAIL);
    }
    res.read_shift = c->read_shift;
    /* A cache outside Linux's page cache (GPFS pagepool) survives posix_fadvise and hides from
     * mincore: only a read of another node's data, or an O_DIRECT read, is not served from memory
     * there. So where some rank must read its own node's data, a backend that can reads with O_DIRECT
     * (as CSCS's IOR checks, -B); the others' reads are reported as cache not defeated. */
    int pagepool = strcmp(iob_fs_type(opt.dir), "gpfs") == 0 || iob_param_int(&opt, "pagepool");
    c->read_direct = pagepool && res.read_cross < c->nranks && be->direct_read && !pat->run;
    res.cache_defeated = !(pagepool && res.read_cross < c->nranks) || c->read_direct;

    res.reps = calloc((size_t)opt.repeat, sizeof *res.reps);
    if (agree(c, setup_for(c, pat, c->rank))) {
        res.failed = 1;
        describe_run(c, &res, ppn);
        emit(c, &res);
        MPI_Finalize();
        return IOB_FAIL;
    }
    describe_run(c, &res, ppn);

    if (!opt.do_write && !pat->run) { /* read-only: the files must exist (bad input, nothing touched) */
        char missing[4096] = "";
        int bad = 0;
        for (int k = 0; k < opt.repeat && !bad; k++) {
            snprintf(c->path, sizeof c->path, "%s/%s.rep%d", opt.dir, opt.name, k);
            bad = iob_data_missing(c, be, missing, sizeof missing);
        }
        int src = bad ? c->rank : c->nranks, min = 0;
        MPI_Allreduce(&src, &min, 1, MPI_INT, MPI_MIN, c->comm);
        if (min < c->nranks) {
            MPI_Bcast(missing, sizeof missing, MPI_CHAR, min, c->comm);
            if (c->rank == 0)
                fprintf(stderr, "iobench: error: data file for --phase read does not exist '%s'\n", missing);
            MPI_Finalize();
            return IOB_BADINPUT;
        }
    }

    for (int k = 0; k < opt.repeat && status == IOB_OK; k++) {
        iob_rep *r = &res.reps[k];
        r->rep = k;
        res.nreps = k + 1;
        snprintf(c->path, sizeof c->path, "%s/%s.rep%d", opt.dir, opt.name, k);
        c->rep = k;
        if (pat->run) { /* a pattern that times its own phases (metadata workloads) */
            if (iob_pattern_run_rep(c, &res, r) ||
                (r->w.done && agree(c, check_counted(c, &r->w, res.bytes_total, "write"))) ||
                (r->r.done && agree(c, check_counted(c, &r->r, res.bytes_total, "read"))))
                goto failed_kept;
            continue;
        }
        if (c->io_rank != c->rank && agree(c, setup_for(c, pat, c->rank)))
            goto failed;
        record_files(c, be, r);
        if (opt.do_write) {
            iob_remove_data(c, be); /* a stale file from an earlier --keep run must not be appended to */
            MPI_Barrier(c->comm);
            pat->fill(c);
            if (run_phase(c, be, 1, &r->w) || agree(c, check_counted(c, &r->w, res.bytes_total, "write")))
                goto failed;
        }
        if (opt.do_read) {
            /* cache defeat, outside the timer: read another node's block (placement.c, also in a
             * read-only run) and drop this node's pages of it, whatever the layout */
            describe_defeat(c, &res);
            if (c->read_shift && agree(c, setup_for(c, pat, (c->rank + c->read_shift) % c->nranks)))
                goto failed;
            if (c->nranks <= IOB_PLACEMENT_MAX) { /* the blocks really read, for the JSON */
                if (c->rank == 0 && !res.blocks_read)
                    res.blocks_read = calloc((size_t)c->nranks, sizeof(int));
                MPI_Gather(&c->io_rank, 1, MPI_INT, res.blocks_read, 1, MPI_INT, 0, c->comm);
            }
            pat->clear(c);
            /* Pages another rank just wrote can sit in that CPU's LRU batch, where a DONTNEED from
             * this rank cannot drop them: drop, wait for every rank, measure, and drop again (at most
             * 3 rounds) while any rank still sees pages resident. What remains is recorded. */
            for (int round = 0; round < 3; round++) {
                iob_drop_cache(c, be);
                MPI_Barrier(c->comm);
                double resident = iob_resident_fraction(c, be);
                MPI_Allreduce(&resident, &r->r.resident, 1, MPI_DOUBLE, MPI_MAX, c->comm);
                if (r->r.resident == 0.0)
                    break;
            }
            if (run_phase(c, be, 0, &r->r) || agree(c, check_counted(c, &r->r, res.bytes_total, "read")))
                goto failed;
            if (opt.verify && agree(c, pat->verify(c)))
                goto failed;
            r->r.verified = opt.verify;
        }
        if (!opt.keep) {
            MPI_Barrier(c->comm);
            iob_remove_data(c, be);
            MPI_Barrier(c->comm);
        }
        continue;
    failed:
        /* report and clean up first, then release the library (its close may hang: watchdog armed) */
        status = IOB_FAIL;
        res.failed = 1;
        emit(c, &res);
        emitted = 1;
        if (!opt.keep)
            iob_remove_data(c, be);
        if (opened_now)
            be->close(c);
        break;
    failed_kept:
        status = IOB_FAIL;
        res.failed = 1;
    }
    if (!res.cache_defeat[0])
        snprintf(res.cache_defeat, sizeof res.cache_defeat, "none (write-only run)");
    if (!emitted)
        emit(c, &res);
    if (pat->teardown)
        pat->teardown(c);
    MPI_Finalize();
    return status;
}
