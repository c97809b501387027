"""iobench times a phase as IOR does (docs/CONTRACT.md §2): one span per rank from open to close, the
phase = max(end) - min(start) over ranks, no agreement inside the span; `--param barriers=1` (IOR -g)
agrees between the steps. Checked with real delays: a small LD_PRELOAD shim (compiled here) makes
open() of the data file slow on one rank and close() of it slow on another. IOR's timing counts one
delay (the ranks wait in parallel); agreements inside the span count both."""
import os
import shutil
import subprocess

import pytest

DELAY = 0.4   # seconds; large against this machine's open/write/close of 32 KiB, small for the suite

SHIM = r'''
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


@pytest.fixture(scope='module')
def shim(tmp_path_factory):
    cc = shutil.which('cc') or shutil.which('gcc')
    if not cc:
        pytest.skip('no C compiler for the LD_PRELOAD shim')
    d = tmp_path_factory.mktemp('shim')
    (d / 'delay.c').write_text(SHIM)
    subprocess.run([cc, '-shared', '-fPIC', '-O2', '-o', str(d / 'delay.so'), str(d / 'delay.c'), '-ldl'],
                   check=True, capture_output=True)
    return str(d / 'delay.so')


def delayed_write(run_iobench, shim, tmp_path, *extra):
    env = {'LD_PRELOAD': shim, 'IOB_DELAY_MATCH': 'slowrank', 'IOB_DELAY_S': str(DELAY),
           'IOB_DELAY_OPEN_RANK': '0', 'IOB_DELAY_CLOSE_RANK': '1'}
    proc, doc = run_iobench(['--backend', 'posix', '--mode', 'fpp', '--size', 16, '--dir', tmp_path,
                             '--name', 'slowrank', '--phase', 'write', *extra], env=env)
    assert proc.returncode == 0, proc.stderr
    assert os.listdir(tmp_path) == []
    return doc['repetitions'][0]['write']


def test_one_span_per_rank_counts_one_delay(run_iobench, shim, tmp_path):
    w = delayed_write(run_iobench, shim, tmp_path)
    # per-step maxima still show each delay where it happened
    assert w['open_s'] >= DELAY and w['close_s'] >= DELAY, w
    # rank 0 waited in open, rank 1 in close, each in its own span: one delay, not two
    assert DELAY <= w['total_s'] < 1.5 * DELAY, w
    assert w['bytes'] == 2 * 16 ** 3 * 8


def test_barriers_param_keeps_ior_g(run_iobench, shim, tmp_path):
    w = delayed_write(run_iobench, shim, tmp_path, '--param', 'barriers=1')
    # agreements after open and after close: everyone waits for the slow open, then for the slow close
    assert w['total_s'] >= 2 * DELAY, w
    assert w['total_s'] >= w['open_s'] + w['close_s'] - 0.01, w


def test_driver_params_are_checked(run_iobench, tmp_path):
    for key in ('barriers', 'pagepool'):
        proc, _ = run_iobench(['--backend', 'posix', '--dir', tmp_path, '--param', f'{key}=2'], np=1)
        assert proc.returncode == 2 and f"--param {key} (0 or 1) '2'" in proc.stderr, proc.stderr
    assert os.listdir(tmp_path) == []
