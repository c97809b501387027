/* Private declarations shared by main.c, options.c, opttable.c, cachedefeat.c and result.c (not a plugin seam). */
#ifndef IOB_DRIVER_H
#define IOB_DRIVER_H
#include <stdio.h>
#include "iobench.h"

enum { IOB_INFO_EXIT = 3 };   /* --help/--version/--list handled: exit 0 */
#define IOB_MAXFILES 64

/* Parse and validate argv (no MPI calls, nothing created). Returns IOB_OK, IOB_BADINPUT (err filled with
 * "<what> '<value>'") or IOB_INFO_EXIT (text printed to `out` when out != NULL). */
int iob_parse_options(int argc, char **argv, iob_opts *o, int nranks, FILE *out, char *err, size_t errlen);

/* opttable.c: the driver's own --param keys (options.c); every --param given checked against the
 * run's tables (driver, backend, pattern): IOB_BADINPUT with "what 'value'" in err; a table for --help. */
extern const iob_option iob_driver_options[];
int iob_params_check(const iob_opts *o, char *err, size_t errlen);
void iob_options_help(FILE *out, const iob_option *t);

/* One phase of one repetition, already reduced (max over ranks). */
typedef struct {
    int done;
    int64_t bytes;
    double open_s, access_s, sync_s, close_s, total_s;
    int verified;
    double resident;            /* read only: cache_resident_before_read */
} iob_phase;

typedef struct {
    int rep;
    iob_phase w, r;
    int nfiles;
    char (*files)[4096];
    iob_json extra;             /* members a self-timed pattern adds to this repetition (rank 0) */
} iob_rep;

typedef struct {
    const iob_backend *be;
    const iob_pattern *pat;
    char started[32];
    char hosts[4096];           /* JSON array body, already quoted */
    char fs_type[64];
    char cache_defeat[96];
    int read_shift, read_cross;  /* placement.c: the shift, and how many ranks read another node */
    int cache_defeated;          /* 0: a pagepool-like cache and some rank reads its own node's data */
    int *node_index, *blocks_read; /* per rank (rank 0, <= IOB_PLACEMENT_MAX ranks): node, block read */
    int64_t bytes_per_rank, bytes_total;
    iob_kvlist versions;
    int nreps;
    iob_rep *reps;
    int failed;
} iob_result;

/* placement.c: node layout (c->nodes, c->node_rank, this node's rank count) and c->read_shift; cross =
 * ranks whose read block lives on another node; node_index: malloc'd node number (0, 1, ... in order
 * of first rank) of every rank. Collective. */
int iob_placement(iob_ctx *c, int *ppn, int *cross, int **node_index);
#define IOB_PLACEMENT_MAX 256 /* ranks up to which the JSON lists every rank's node and block read */

/* cachedefeat.c: apply fn to each regular file of the backend's files() list (directories walked). */
int iob_for_each_data_file(const iob_ctx *c, const iob_backend *be, int (*fn)(const char *path, void *arg),
                           void *arg);
int iob_drop_cache(const iob_ctx *c, const iob_backend *be);          /* posix_fadvise DONTNEED */
double iob_resident_fraction(const iob_ctx *c, const iob_backend *be); /* mincore, this rank */
#define IOB_PROBE_PAGES 1024 /* pages sampled per file by the residency probe */
void iob_probe_file(const char *path, int64_t *pages, int64_t *resident); /* adds sampled/resident */
void iob_remove_data(const iob_ctx *c, const iob_backend *be);          /* unlink / rm -r, ENOENT ok */
void iob_remove_tree_sigsafe(int dirfd, const char *name, int depth);   /* same, from a signal handler */
int iob_data_missing(const iob_ctx *c, const iob_backend *be, char *missing, size_t len);
const char *iob_fs_type(const char *dir);

/* result.c: the JSON document (rank 0). */
void iob_result_json(const iob_ctx *c, const iob_result *res, iob_json *j);

/* The error-path watchdog (watchdog.c): init reads IOBENCH_HANG_S (IOB_BADINPUT on a bad value); arm
 * starts the clock on this rank's first failure; update re-renders the failed document it would write
 * once the agreed error is known, so a run that hangs still leaves it; reported: the failure path
 * emitted the document itself (every rank calls it there). */
int iob_watchdog_init(iob_ctx *c, iob_result *res);
void iob_watchdog_arm(iob_ctx *c, const iob_backend *be);
void iob_watchdog_update(iob_ctx *c);
void iob_watchdog_reported(void);
void iob_json_free(iob_json *j);

/* pattern_run.c: one repetition of a self-timed pattern (iob_pattern.run); raw member splice. */
int iob_pattern_run_rep(iob_ctx *c, iob_result *res, iob_rep *r);
void iob_json_splice(iob_json *j, const iob_json *members);
#endif
