/* Helpers for self-timed patterns (iob_pattern.run: mdfiles, mddatasets); pattern_run.c. */
#ifndef IOB_PATTERN_RUN_H
#define IOB_PATTERN_RUN_H
#include "iobench.h"

/* All ranks learn whether any rank failed (rc != IOB_OK); the lowest failing rank prints and
 * broadcasts its message into every c->errmsg. Returns IOB_OK or IOB_FAIL on every rank. */
int iob_run_agree(iob_ctx *c, int rc);
/* Maximum of x over ranks. */
double iob_run_max(iob_ctx *c, double x);
/* {"ops": N, "total_s": S, "ops_per_s": N/S} under key (a metadata phase, mdtest style). */
void iob_run_ops_json(iob_json *j, const char *key, int64_t ops, double total_s);
/* posix_fadvise(DONTNEED) after fdatasync on one file, and the fraction of its pages resident. */
void iob_run_drop_file(const char *path);
int64_t iob_run_resident_pages(const char *path, int64_t *pages);
/* fill/clear/verify of a self-timed pattern: its run() fills, clears and verifies itself. */
void iob_run_nop(iob_ctx *c);
int iob_run_verified_in_run(iob_ctx *c);
#endif
