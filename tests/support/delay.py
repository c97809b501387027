"""The delay library of the timing tests (tests/test_iobench_timing.py, test_slurm_cluster.py): a
small LD_PRELOAD shim, compiled by the conftest fixture `delay_shim`, that makes open() of the data
file slow on one rank and close() of it slow on another."""

DELAY = 0.4   # seconds; large against this machine's open/write/close of 32 KiB, small for the suite

SOURCE = r'''
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
/* open() of a path containing $IOB_DELAY_MATCH for writing sleeps $IOB_DELAY_S on rank
 * $IOB_DELAY_OPEN_RANK; close() of such an fd sleeps on rank $IOB_DELAY_CLOSE_RANK. */
static int tracked[1024];
static int rank_is(const char *var)
{
    const char *r = getenv("OMPI_COMM_WORLD_RANK"), *want = getenv(var);
    if (!r)
        r = getenv("SLURM_PROCID"); /* srun's direct launch (tests/test_slurm_cluster.py) */
    return r && want && strcmp(r, want) == 0;
}
static void nap(void) { usleep((useconds_t)(atof(getenv("IOB_DELAY_S")) * 1e6)); }
static int wrap(const char *sym, const char *p, int flags, mode_t mode)
{
    int (*real)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, sym);
    const char *m = getenv("IOB_DELAY_MATCH");
    int ours = m && p && strstr(p, m) && (flags & O_CREAT);
    if (ours && rank_is("IOB_DELAY_OPEN_RANK"))
        nap();
    int fd = real(p, flags, mode);
    if (ours && fd >= 0 && fd < 1024)
        tracked[fd] = 1;
    return fd;
}
#define MODE_ARG mode_t mode = 0; if (flags & O_CREAT) { va_list a; va_start(a, flags); \
    mode = (mode_t)va_arg(a, int); va_end(a); }
int open(const char *p, int flags, ...) { MODE_ARG return wrap("open", p, flags, mode); }
int open64(const char *p, int flags, ...) { MODE_ARG return wrap("open64", p, flags, mode); }
int close(int fd)
{
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "close");
    if (fd >= 0 && fd < 1024 && tracked[fd]) {
        tracked[fd] = 0;
        if (rank_is("IOB_DELAY_CLOSE_RANK"))
            nap();
    }
    return real(fd);
}
'''
