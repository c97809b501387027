/* iofault: an LD_PRELOAD library that makes iobench's I/O genuinely slower, for the real-night
 * replay (bench/real_replay.py) and the end-to-end verdict test (tests/test_verdicts_e2e.py).
 *
 * It acts only in processes named IOFAULT_EXE (default "iobench"): the fio baseline, the launcher
 * and ReFrame pass through untouched, so "the I/O stack got slower, the filesystem did not" is
 * what the suite sees. The delay is relative: after the real call returns, the process sleeps
 * IOFAULT_FACTOR times the call's own duration (0.25 -> the phase takes 1.25x, bandwidth -20 %),
 * so the fault has a realistic size on any disk. The delay is owed and paid once it reaches
 * 0.5 ms, and in full at fsync/fdatasync/close of data (inside the timed span): a sleep per call
 * would cost each tiny call the timer's slack (~50 us), a 10x slowdown of a metadata-heavy check,
 * not 25 %. What a sleep oversleeps is credited against the next delays, so the total is exact.
 * A write pays in kind first (pay_writes below): a sleep is absorbed where the ranks share a disk.
 *
 *   IOFAULT_PHASE   write (write/pwrite/writev/pwritev and fsync/fdatasync: data reach storage in
 *                   the sync), read (read/pread/readv/preadv), meta (open/openat/creat, stat/lstat/
 *                   fstatat, unlink/unlinkat, mkdir/rmdir, and close of a file opened by path:
 *                   each call +FACTOR of its own time, as a slower metadata server would; an
 *                   empty-file create here takes ~10-100 us, so a fixed delay per call would be
 *                   no realistic size on any filesystem)
 *                   A create (creat, open/openat with O_CREAT, mkdir) pays its delay in kind, not
 *                   asleep: see pay_in_kind below
 *   IOFAULT_FACTOR  relative delay (default 0.25)
 *   IOFAULT_MATCH   only files whose path contains this string (e.g. "iobench_hdf5_": one
 *                   library's files); empty = every file
 *   IOFAULT_EXE     process name to act in (default iobench)
 *   IOFAULT_REPORT  a file: at exit each acting process appends "<pid> <seconds> <dir seconds>
 *                   <bytes>", the delay it owed (FACTOR x its calls' time; tests/test_iofault.py
 *                   reads it), how much of it was mkdir/rmdir's (mdfiles
 *                   makes and removes each repetition's directory outside its timed phases), and
 *                   the bytes its writes paid in kind
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

enum { OFF, WRITE, READ, META };
static int mode = -1;
static double factor = 0.25;
static double charged;     /* total delay owed over the process's life, seconds */
static double charged_dirs; /* of which by mkdir/rmdir */
static double kind_bytes;  /* bytes a write paid in kind */
static void report(void);
static const char *match = "";

static void init(void) {
    if (mode >= 0) return;
    const char *exe = getenv("IOFAULT_EXE");
    const char *phase = getenv("IOFAULT_PHASE");
    mode = OFF;
    if (strcmp(program_invocation_short_name, exe && *exe ? exe : "iobench") != 0 || !phase) return;
    if (!strcmp(phase, "write")) mode = WRITE;
    else if (!strcmp(phase, "read")) mode = READ;
    else if (!strcmp(phase, "meta")) mode = META;
    if (getenv("IOFAULT_FACTOR")) factor = atof(getenv("IOFAULT_FACTOR"));
    if (getenv("IOFAULT_MATCH")) match = getenv("IOFAULT_MATCH");
    if (mode != OFF && getenv("IOFAULT_REPORT")) atexit(report);
}

static void report(void) {
    FILE *fp = fopen(getenv("IOFAULT_REPORT"), "a");
    if (!fp) return;
    fprintf(fp, "%d %.6f %.6f %.0f\n", (int)getpid(), charged, charged_dirs, kind_bytes);
    fclose(fp);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double owed;        /* delay not paid yet, seconds (negative: overslept, credited) */

static void pay(void) {
    double t0 = now();
    struct timespec ts = {(time_t)owed, (long)((owed - (time_t)owed) * 1e9)};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {}
    owed -= now() - t0;
}

static void charge(double s) {
    charged += s;
    owed += s;
}

static void owe(double s) {
    charge(s);
    if (owed >= 5e-4) pay();
}

static void settle(void) {
    if (owed > 0) pay();
}

/* A create holds its directory's lock (the kernel's here, a metadata server's on Lustre): a delay
 * slept after it only fills the time the other ranks wait for that lock anyway (measured
 * 2026-11-27, MDEmptyFiles' shape, 2 ranks: +25 % slept after each call realized +7-14 % on the
 * create phase). A slower server does more work under that lock, so a create pays in kind: dummy
 * create+unlink pairs in its directory until their own measured time covers what it owes. They
 * queue for the lock as the creates do, so the delay has the creates' contention in it too. */
static double dummy_s;     /* the last pair's time: pay while more than half of it is owed */

static void pay_in_kind(const char *path) {
    char dummy[4200];
    const char *slash = path ? strrchr(path, '/') : NULL;
    snprintf(dummy, sizeof dummy, "%.*s/.iofault.%d", slash ? (int)(slash - path) : 1,
             slash ? path : ".", (int)getpid());
    while (owed > dummy_s / 2) {
        double t0 = now();      /* raw syscalls: the interposed calls must not see the dummy */
        int fd = (int)syscall(SYS_openat, AT_FDCWD, dummy, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0) { settle(); return; }       /* no creating there: sleep instead */
        syscall(SYS_close, fd);
        syscall(SYS_unlinkat, AT_FDCWD, dummy, 0);
        dummy_s = now() - t0;
        owed -= dummy_s;
    }
}

/* A write's delay slept is absorbed where the ranks share one disk: while one sleeps, the other's
 * data get the disk to itself, and the phase, as slow as its slowest rank, hardly waits (measured
 * 2026-11-27, BenchIO's shape, 2 ranks: +25 % slept realized x1.07-1.20 on the write phase side by
 * side; bench/fault_size.py). A slower stack above the filesystem makes the storage work more
 * (write amplification: data sieving, a misaligned stripe, a library's extra metadata), so a write
 * pays in kind: FACTOR of its bytes again to a dummy file beside it (unlinked at once), written out
 * to the device just before the file's own sync, which then flushes both (sync_file_range: a
 * second journal commit of its own doubled the sync of a small check, HaccHDF5 -50 %). That time
 * counts against what is owed; the rest is slept. Below
 * IN_KIND bytes per sync the delay is slept: such a phase is latency-bound, and one more device
 * write would be most of it. */
#define IN_KIND (256 << 10)
static int dummy_fd = -1;
static double dummy_pending;   /* bytes owed to the dummy, not written yet */
static double dummy_written;   /* written to it since its last sync */
static char junk[1 << 20];

static void open_dummy(int fd) {
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0) return;
    path[n] = 0;
    char *slash = strrchr(path, '/');
    if (!slash) return;
    snprintf(slash, sizeof path - (size_t)(slash - path), "/.iofault.%d.data", (int)getpid());
    dummy_fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (dummy_fd >= 0) syscall(SYS_unlinkat, AT_FDCWD, path, 0);
    /* not zeros: a virtual disk may store a zero block as a hole, at no cost */
    unsigned long x = 88172645463325252UL;
    for (size_t i = 0; i < sizeof junk; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        junk[i] = (char)x;
    }
}

/* time spent paying in kind counts against what is owed */
static void credit(double seconds) {
    owed -= seconds;
    if (owed < 0) owed = 0;     /* in kind beyond the delay: the storage's own pace, no credit */
}

/* drop what the dummy holds: a sync that did not come, or too few bytes to pay in kind */
static void forget_dummy(void) {
    if (dummy_written > 0) {
        syscall(SYS_ftruncate, dummy_fd, 0);
        syscall(SYS_lseek, dummy_fd, 0, SEEK_SET);
    }
    dummy_pending = dummy_written = 0;
}

/* the pending bytes into the dummy (its page cache, as the file's went); returns the seconds */
static double write_pending(int fd) {
    if (dummy_fd < 0) open_dummy(fd);
    double t0 = now();
    while (dummy_fd >= 0 && dummy_pending >= 1) {
        size_t n = dummy_pending < sizeof junk ? (size_t)dummy_pending : sizeof junk;
        if (syscall(SYS_write, dummy_fd, junk, n) <= 0) break;
        dummy_pending -= n;
        dummy_written += n;
        kind_bytes += n;
    }
    return now() - t0;
}

/* during the writes: pay once enough is owed, in kind when enough bytes are */
static void pay_writes(int fd) {
    if (dummy_pending >= IN_KIND) credit(write_pending(fd));
    settle();
}

/* before the file's sync: the dummy's data out to the device (the file's sync flushes both);
 * returns the seconds, counted against the delay the sync itself will owe */
static double sync_dummy(int fd) {
    if (dummy_pending + dummy_written < IN_KIND) {
        forget_dummy();
        return 0;
    }
    double t0 = now();
    write_pending(fd);
    if (dummy_fd >= 0)
        syscall(SYS_sync_file_range, dummy_fd, 0L, 0L,
                SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
    forget_dummy();
    return now() - t0;
}

static int path_matches(const char *path) { return !*match || (path && strstr(path, match)); }

#define MAXFD 65536
/* fds opened by a matching path in meta mode: their close is a metadata call too (readlink of
 * /proc/self/fd at each close would itself cost more than an empty file's open+close) */
static unsigned char opened[MAXFD];
/* per fd, known at its first data call, forgotten at its close: 1 a regular file that matches
 * (what the fault acts on: not MPI's pipes and sockets), 2 anything else, 0 not known yet */
static unsigned char target[MAXFD];

static int fd_matches(int fd) {
    if (fd < 0 || fd >= MAXFD) return 0;
    if (!target[fd]) {
        struct stat st;
        char link[64], path[4096];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = *match ? readlink(link, path, sizeof path - 1) : 0;
        if (n >= 0) path[n] = 0;
        target[fd] = syscall(SYS_fstat, fd, &st) == 0 && S_ISREG(st.st_mode)
                     && (!*match || (n > 0 && strstr(path, match))) ? 1 : 2;
    }
    return target[fd] == 1;
}

#define REAL(name) static __typeof__(name) *real_##name; if (!real_##name) real_##name = dlsym(RTLD_NEXT, #name)
/* a data call on fd: time it, then sleep factor x its duration when the phase and file match */
#define DATA_CALL(phase, fd, call) do { \
        init(); int errsv_; double t0_ = now(); __typeof__(call) r_ = call; errsv_ = errno; \
        if (mode == (phase) && fd_matches(fd)) owe(factor * (now() - t0_)); \
        errno = errsv_; return r_; } while (0)
/* a write on fd: the same delay, owed as FACTOR of its bytes in kind (pay_writes) */
#define WRITE_CALL(fd, call) do { \
        init(); int errsv_; double t0_ = now(); __typeof__(call) r_ = call; errsv_ = errno; \
        if (mode == WRITE && fd_matches(fd)) { \
            charge(factor * (now() - t0_)); \
            if ((long)r_ > 0) dummy_pending += factor * (double)(long)r_; \
            if (owed >= 5e-4) pay_writes(fd); } \
        errno = errsv_; return r_; } while (0)
/* a sync of fd: the dummy's data go out first, the sync's own delay is owed less that time */
#define SYNC_CALL(fd, call) do { \
        init(); int m_ = mode == WRITE && fd_matches(fd); double kind_ = m_ ? sync_dummy(fd) : 0; \
        int errsv_; double t0_ = now(); __typeof__(call) r_ = call; errsv_ = errno; \
        if (m_) { charge(factor * (now() - t0_)); credit(kind_); settle(); } \
        errno = errsv_; return r_; } while (0)
/* a metadata call on path: the same relative delay (a create's paid in kind); an fd it opens is
 * remembered for its close; a directory's (mkdir/rmdir) charge is also counted apart, as mdfiles
 * makes and removes its directories outside its timed phases */
#define META_CALL(path, call, opens, creates) META_CALL_DIR(path, call, opens, creates, 0)
#define META_CALL_DIR(path, call, opens, creates, dir) do { \
        init(); int errsv_; double t0_ = now(); __typeof__(call) r_ = call; errsv_ = errno; \
        if (mode == META && path_matches(path)) { \
            double d_ = factor * (now() - t0_); \
            if (dir) charged_dirs += d_; \
            if (creates) { charge(d_); pay_in_kind(path); } else owe(d_); \
            if ((opens) && (long)r_ >= 0 && (long)r_ < MAXFD) opened[(long)r_] = 1; } \
        errno = errsv_; return r_; } while (0)

ssize_t write(int fd, const void *b, size_t n) { REAL(write); WRITE_CALL(fd, real_write(fd, b, n)); }
ssize_t pwrite(int fd, const void *b, size_t n, off_t o) { REAL(pwrite); WRITE_CALL(fd, real_pwrite(fd, b, n, o)); }
ssize_t pwrite64(int fd, const void *b, size_t n, off_t o) { REAL(pwrite64); WRITE_CALL(fd, real_pwrite64(fd, b, n, o)); }
ssize_t writev(int fd, const struct iovec *v, int c) { REAL(writev); WRITE_CALL(fd, real_writev(fd, v, c)); }
ssize_t pwritev(int fd, const struct iovec *v, int c, off_t o) { REAL(pwritev); WRITE_CALL(fd, real_pwritev(fd, v, c, o)); }
int fsync(int fd) { REAL(fsync); SYNC_CALL(fd, real_fsync(fd)); }
int fdatasync(int fd) { REAL(fdatasync); SYNC_CALL(fd, real_fdatasync(fd)); }
int close(int fd) {
    REAL(close); init();
    /* a file written and no sync came: no storage work is owed, only time. Only a file already
     * known as written: reading /proc/self/fd at every close would itself slow an empty-file
     * check by half (MDEmptyFiles' open+close -55 % under the hdf5 fault, run 23) */
    if (mode == WRITE && fd >= 0 && fd < MAXFD && target[fd] == 1) {
        forget_dummy();
        settle();
    }
    if (mode == READ) settle();
    if (fd >= 0 && fd < MAXFD) target[fd] = 0;
    if (mode != META || fd < 0 || fd >= MAXFD || !opened[fd]) return real_close(fd);
    opened[fd] = 0;
    double t0 = now(); int r = real_close(fd), errsv = errno;
    owe(factor * (now() - t0));
    errno = errsv; return r;
}
ssize_t read(int fd, void *b, size_t n) { REAL(read); DATA_CALL(READ, fd, real_read(fd, b, n)); }
ssize_t pread(int fd, void *b, size_t n, off_t o) { REAL(pread); DATA_CALL(READ, fd, real_pread(fd, b, n, o)); }
ssize_t pread64(int fd, void *b, size_t n, off_t o) { REAL(pread64); DATA_CALL(READ, fd, real_pread64(fd, b, n, o)); }
ssize_t readv(int fd, const struct iovec *v, int c) { REAL(readv); DATA_CALL(READ, fd, real_readv(fd, v, c)); }
ssize_t preadv(int fd, const struct iovec *v, int c, off_t o) { REAL(preadv); DATA_CALL(READ, fd, real_preadv(fd, v, c, o)); }

/* open/openat take a mode only with O_CREAT/O_TMPFILE */
static mode_t open_mode(int flags, va_list ap) {
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
}
int open(const char *p, int f, ...) {
    va_list ap; va_start(ap, f); mode_t m = open_mode(f, ap); va_end(ap);
    REAL(open); META_CALL(p, real_open(p, f, m), 1, f & O_CREAT);
}
int open64(const char *p, int f, ...) {
    va_list ap; va_start(ap, f); mode_t m = open_mode(f, ap); va_end(ap);
    REAL(open64); META_CALL(p, real_open64(p, f, m), 1, f & O_CREAT);
}
int openat(int d, const char *p, int f, ...) {
    va_list ap; va_start(ap, f); mode_t m = open_mode(f, ap); va_end(ap);
    REAL(openat); META_CALL(p, real_openat(d, p, f, m), 1, f & O_CREAT);
}
int openat64(int d, const char *p, int f, ...) {
    va_list ap; va_start(ap, f); mode_t m = open_mode(f, ap); va_end(ap);
    REAL(openat64); META_CALL(p, real_openat64(d, p, f, m), 1, f & O_CREAT);
}
int creat(const char *p, mode_t m) { REAL(creat); META_CALL(p, real_creat(p, m), 1, 1); }
int creat64(const char *p, mode_t m) { REAL(creat64); META_CALL(p, real_creat64(p, m), 1, 1); }
int stat(const char *p, struct stat *s) { REAL(stat); META_CALL(p, real_stat(p, s), 0, 0); }
int stat64(const char *p, struct stat64 *s) { REAL(stat64); META_CALL(p, real_stat64(p, s), 0, 0); }
int lstat(const char *p, struct stat *s) { REAL(lstat); META_CALL(p, real_lstat(p, s), 0, 0); }
int fstatat(int d, const char *p, struct stat *s, int f) { REAL(fstatat); META_CALL(p, real_fstatat(d, p, s, f), 0, 0); }
int unlink(const char *p) { REAL(unlink); META_CALL(p, real_unlink(p), 0, 0); }
int unlinkat(int d, const char *p, int f) { REAL(unlinkat); META_CALL(p, real_unlinkat(d, p, f), 0, 0); }
int mkdir(const char *p, mode_t m) { REAL(mkdir); META_CALL_DIR(p, real_mkdir(p, m), 0, 1, 1); }
int rmdir(const char *p) { REAL(rmdir); META_CALL_DIR(p, real_rmdir(p), 0, 0, 1); }
