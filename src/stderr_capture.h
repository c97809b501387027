/* Capture what a library prints to stderr during one call, for libraries (ADIOS2, SIONlib) that
 * report errors only there: the text goes into iobench's error message and is re-emitted on stderr,
 * so nothing is hidden. Header-only; each including backend gets its own memfd. */
#ifndef IOB_STDERR_CAPTURE_H
#define IOB_STDERR_CAPTURE_H
#include <stdio.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

static int cap_fd = -1, cap_saved = -1;

static void cap_begin(void)
{
    fflush(stderr);
    if (cap_fd < 0)
        cap_fd = memfd_create("iobench-stderr", MFD_CLOEXEC);
    if (cap_fd < 0 || ftruncate(cap_fd, 0) != 0 || lseek(cap_fd, 0, SEEK_SET) != 0)
        return;
    cap_saved = dup(STDERR_FILENO);
    if (cap_saved >= 0)
        dup2(cap_fd, STDERR_FILENO);
}

/* Restore stderr, re-emit the captured text and return it in buf (NUL-terminated; "" if none). */
static void cap_take(char *buf, size_t n)
{
    buf[0] = '\0';
    if (cap_saved < 0)
        return;
    fflush(stderr);
    dup2(cap_saved, STDERR_FILENO);
    close(cap_saved);
    cap_saved = -1;
    ssize_t len = pread(cap_fd, buf, n - 1, 0);
    if (len <= 0)
        return;
    buf[len] = '\0';
    if (write(STDERR_FILENO, buf, (size_t)len) < 0) { /* stderr gone: nothing more to do */ }
}
#endif
