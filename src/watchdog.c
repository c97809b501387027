/* Watchdog for the error path: after a failure a library may leave some rank stuck inside a collective
 * call (e.g. HDF5 when only some ranks hit ENOSPC). If the error path has not finished within
 * IOBENCH_HANG_S seconds (default 60), this rank removes its data files (unless --keep), says why,
 * writes the failed result document (rendered ahead of time with the error known so far; stdout and
 * --json) and exits 1; mpirun then ends the job. So a hung run still leaves its JSON, as any other
 * failed run does. Rank 0 writes at once; another rank first waits its rank number of seconds (at
 * most 30): when rank 0 (or a lower rank) writes, mpirun ends this one before it does, and when rank
 * 0 is the one stuck in a collective call, never armed, the lowest armed rank writes (hosts and files
 * are then its own). Only async-signal-safe calls in the handler. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "driver.h"

static int hang_s = 60, armed, reported;
static char hang_paths[IOB_MAXFILES][4096], hang_msg[IOB_ERRLEN + 256], json_path[4096], json_tmp[4200];
static char *volatile hang_doc;      /* the failed document, replaced as more is known */
static size_t hang_doc_len;
static int to_stdout, rank_;
static iob_result *run_res;

int iob_watchdog_init(iob_ctx *c, iob_result *res)
{
    const char *s = getenv("IOBENCH_HANG_S");
    if (s) {
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (end == s || *end || errno || v <= 0 || v > 86400) {
            if (c->rank == 0)
                fprintf(stderr, "iobench: error: IOBENCH_HANG_S must be whole seconds in 1..86400, got '%s'\n", s);
            return IOB_BADINPUT;
        }
        hang_s = (int)v;
    }
    run_res = res;
    return IOB_OK;
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0)
            return;
        p += w, n -= (size_t)w;
    }
}

static void hang_handler(int sig)
{
    (void)sig;
    for (int i = 0; i < IOB_MAXFILES && hang_paths[i][0]; i++)
        iob_remove_tree_sigsafe(AT_FDCWD, hang_paths[i], 0); /* files and .bp directories */
    char *doc = hang_doc;
    if (doc && rank_ > 0) {
        struct timespec grace = {rank_ < 30 ? rank_ : 30, 0};
        while (nanosleep(&grace, &grace) == -1 && errno == EINTR) {}
    }
    if (doc) {
        if (to_stdout)
            write_all(1, doc, hang_doc_len);
        if (json_path[0]) {
            int fd = open(json_tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd >= 0) {
                write_all(fd, doc, hang_doc_len);
                close(fd);
                rename(json_tmp, json_path);
            }
        }
    }
    write_all(2, hang_msg, strlen(hang_msg));
    _exit(IOB_FAIL);
}

/* Replace the document the handler would write, while the alarm cannot land half-way. */
static void swap_doc(char *doc, size_t len)
{
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGALRM);
    sigprocmask(SIG_BLOCK, &block, &old);
    char *prev = hang_doc;
    hang_doc = doc, hang_doc_len = len;
    sigprocmask(SIG_SETMASK, &old, NULL);
    free(prev);
}

/* Render the failed document with the error known now (its own, or the agreed one once broadcast)
 * and the hang said after it. Called again whenever the error becomes known. */
void iob_watchdog_update(iob_ctx *c)
{
    if (!armed || reported || !run_res)
        return;
    if (!run_res->hosts[0]) { /* the hosts are gathered on rank 0 only: this rank's own */
        int len;
        MPI_Get_processor_name(run_res->hosts, &len);
        strcat(run_res->hosts, "\n");
    }
    static char saved[IOB_ERRLEN];
    memcpy(saved, c->errmsg, IOB_ERRLEN);
    snprintf(c->errmsg, IOB_ERRLEN, "%.700s; then the error path did not complete within %d s (a rank stuck in a "
             "collective call of the I/O library): exited", saved[0] ? saved : "another rank failed (its "
             "message is on stderr)", hang_s);
    int was_failed = run_res->failed;
    run_res->failed = 1;
    iob_json j = {0};
    iob_result_json(c, run_res, &j);
    run_res->failed = was_failed;
    memcpy(c->errmsg, saved, IOB_ERRLEN);
    size_t len = j.buf ? strlen(j.buf) : 0;
    char *doc = malloc(len + 2);
    if (!doc) {
        iob_json_free(&j);
        return;
    }
    memcpy(doc, j.buf, len);
    doc[len] = '\n', doc[len + 1] = '\0';
    iob_json_free(&j);
    swap_doc(doc, len + 1);
}

/* The failure path has emitted the document (rank 0, every rank calls this there, before it
 * releases the library): a hang after that must not print a second one. */
void iob_watchdog_reported(void)
{
    reported = 1;
    swap_doc(NULL, 0);
}

void iob_watchdog_arm(iob_ctx *c, const iob_backend *be)
{
    if (armed++)
        return;
    int n = c->opt->keep || !be ? 0 : be->files(c, hang_paths, IOB_MAXFILES);
    if (n < IOB_MAXFILES)
        hang_paths[n][0] = '\0';
    snprintf(hang_msg, sizeof hang_msg, "iobench: rank %d: %s%serror path did not complete within %d s (a rank "
             "is stuck in a collective call after the failure); exiting\n", c->rank, c->errmsg,
             c->errmsg[0] ? "; then the " : "", hang_s);
    rank_ = c->rank;
    to_stdout = !c->opt->quiet;
    if (c->opt->json_path) {
        snprintf(json_path, sizeof json_path, "%s", c->opt->json_path);
        snprintf(json_tmp, sizeof json_tmp, "%s.tmp%d", c->opt->json_path, c->rank);
    }
    iob_watchdog_update(c);
    signal(SIGALRM, hang_handler);
    alarm((unsigned)hang_s);
}
