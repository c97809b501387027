"""Counted bytes in real runs (issue 19, docs/CONTRACT.md §2 "bytes is counted"): an LD_PRELOAD shim,
compiled here, changes what write calls on the data files move or report, and iobench's exit status,
its JSON and the ReFrame check's sanity must see it.

Shim modes, for write calls of more than 4 KiB on a file whose path contains $IOB_SHIM_MATCH:
- short: move half and return half (a legal short write: the caller must write the rest);
- over:  move all and return 4 KiB more than asked (a layer that miscounts: only a count catches it);
- drop:  move half and return all (a layer that lies: no count can see it, --verify must);
- zero:  move nothing and return 0 (no error, no progress: retrying for ever would hang the run).
Each altered call writes one line "iob-shim <call> <bytes>" to stderr, so a test knows the fault hit.
"""
import json
import os
import pathlib
import re
import subprocess

import pytest

from iobench_lib import results
from tests.support.preload import build_preload

REPO = pathlib.Path(__file__).resolve().parents[1]

SHIM = r'''
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
static char tracked[65536];
static int mode(void)
{
    const char *m = getenv("IOB_SHIM_MODE");
    return !m ? 0 : !strcmp(m, "short") ? 1 : !strcmp(m, "over") ? 2 : !strcmp(m, "drop") ? 3
         : !strcmp(m, "zero") ? 4 : 0;
}
static int opened(const char *sym, const char *p, int flags, mode_t md)
{
    int (*real)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, sym);
    int fd = real(p, flags, md);
    const char *m = getenv("IOB_SHIM_MATCH");
    if (fd >= 0 && fd < 65536)
        tracked[fd] = m && p && strstr(p, m) && (flags & (O_WRONLY | O_RDWR));
    return fd;
}
#define MODE_ARG mode_t md = 0; if (flags & O_CREAT) { va_list a; va_start(a, flags); \
    md = (mode_t)va_arg(a, int); va_end(a); }
int open(const char *p, int flags, ...) { MODE_ARG return opened("open", p, flags, md); }
int open64(const char *p, int flags, ...) { MODE_ARG return opened("open64", p, flags, md); }
static int hit(int fd, size_t n, const char *call)
{
    if (fd < 0 || fd >= 65536 || !tracked[fd] || n <= 4096 || !mode())
        return 0;
    char b[96];
    int l = snprintf(b, sizeof b, "iob-shim %s %zu\n", call, n);
    ssize_t (*w)(int, const void *, size_t) = dlsym(RTLD_NEXT, "write");
    if (w(2, b, (size_t)l) < 0) {}
    return 1;
}
/* what the caller is told, given what was moved (r) of n asked, and how much was attempted (want) */
static ssize_t told(ssize_t r, size_t n, size_t want)
{
    if (r < 0 || (size_t)r != want)
        return r;
    return mode() == 2 ? (ssize_t)n + 4096 : mode() == 3 ? (ssize_t)n : r;
}
static size_t want_of(size_t n) { return mode() == 2 ? n : mode() == 4 ? 0 : n / 2; }
ssize_t pwrite(int fd, const void *b, size_t n, off_t o)
{
    ssize_t (*real)(int, const void *, size_t, off_t) = dlsym(RTLD_NEXT, "pwrite");
    if (!hit(fd, n, "pwrite"))
        return real(fd, b, n, o);
    return told(real(fd, b, want_of(n), o), n, want_of(n));
}
ssize_t pwrite64(int fd, const void *b, size_t n, off_t o) { return pwrite(fd, b, n, o); }
ssize_t write(int fd, const void *b, size_t n)
{
    ssize_t (*real)(int, const void *, size_t) = dlsym(RTLD_NEXT, "write");
    if (!hit(fd, n, "write"))
        return real(fd, b, n);
    return told(real(fd, b, want_of(n)), n, want_of(n));
}
static size_t total(const struct iovec *iov, int cnt)
{
    size_t n = 0;
    for (int i = 0; i < cnt; i++)
        n += iov[i].iov_len;
    return n;
}
/* vector calls: the first iovec alone, cut like a plain write (a short vector write is legal too) */
ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t o)
{
    ssize_t (*real)(int, const struct iovec *, int, off_t) = dlsym(RTLD_NEXT, "pwritev");
    size_t n = total(iov, cnt);
    if (!hit(fd, n, "pwritev"))
        return real(fd, iov, cnt, o);
    ssize_t (*pw)(int, const void *, size_t, off_t) = dlsym(RTLD_NEXT, "pwrite");
    size_t want = mode() == 2 ? n : mode() == 4 ? 0 : iov[0].iov_len / 2;
    if (mode() == 2)
        return told(real(fd, iov, cnt, o), n, n);
    return told(pw(fd, iov[0].iov_base, want, o), n, want);
}
ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t o) { return pwritev(fd, iov, cnt, o); }
'''

NP = 2
BLOCK, XFER = 256 * 1024, 64 * 1024
IOR_ARGS = ['--pattern', 'ior', '--param', 'block=256k', '--param', 'transfer=64k']
ASKED = NP * BLOCK


@pytest.fixture(scope='module')
def shim(tmp_path_factory):
    return build_preload(tmp_path_factory.mktemp('countshim'), 'count', SHIM)


def shimmed(run_iobench, shim, tmp_path, io, mode, *extra):
    backend, bmode = io.split(':')
    env = {'LD_PRELOAD': shim, 'IOB_SHIM_MODE': mode, 'IOB_SHIM_MATCH': 'counted.rep'}
    proc, doc = run_iobench(['--backend', backend, '--mode', bmode, *IOR_ARGS, '--dir', tmp_path,
                             '--name', 'counted', *extra], np=NP, env=env)
    hits = re.findall(r'^iob-shim (\w+) (\d+)$', proc.stderr, re.M)
    assert hits, f'the shim altered no write call: {proc.stderr[-2000:]}'
    assert doc is not None, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc, doc, hits


def sanity(doc, io, exitcode):
    backend, mode = io.split(':')
    return results.problems(doc, backend=backend, mode=mode, pattern='ior', ranks=NP, exitcode=exitcode)


@pytest.mark.parametrize('io', ['posix:fpp', 'posix:shared', 'sionlib:independent'])
def test_short_writes_are_completed_and_counted_once(run_iobench, iobench_backends, shim, io, tmp_path):
    """A short write is legal: the backend writes the rest; the count is what the calls returned, so
    it equals what was asked exactly (neither the short part nor the retry counted twice)."""
    if io.split(':')[0] not in iobench_backends:
        pytest.skip(f'{io} not compiled into this iobench')
    proc, doc, hits = shimmed(run_iobench, shim, tmp_path, io, 'short')
    assert proc.returncode == 0, proc.stderr[-2000:]
    rep = doc['repetitions'][0]
    assert rep['write']['bytes'] == rep['read']['bytes'] == doc['bytes_total'] == ASKED, rep
    assert rep['read']['verified'] is True
    assert sanity(doc, io, proc.returncode) == []
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize('io', ['mpiio:independent', 'mpiio:collective'])
def test_short_count_mpi_let_pass_fails_the_run(run_iobench, shim, io, tmp_path):
    """Open MPI's OMPIO returns from MPI_File_write_at(_all) with the short count in the status and no
    error: iobench's count of that call is short, the run fails naming both numbers, and the check's
    sanity says so."""
    proc, doc, hits = shimmed(run_iobench, shim, tmp_path, io, 'short')
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert doc['status'] == 'failed' and doc['summary'] == {}
    assert 'write' not in doc['repetitions'][0]                 # no bandwidth from a failed run
    assert re.search(rf'MPI_File_write_at\w*\(.*\): the call moved {XFER // 2} bytes, asked for {XFER}$',
                     doc['error']), doc['error']
    found = sanity(doc, io, proc.returncode)
    assert any(f'moved {XFER // 2} bytes, asked for {XFER}' in p for p in found), found
    assert any('exit status 1' in p for p in found), found
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize('io', ['posix:fpp', 'posix:shared'])
def test_miscounted_write_fails_the_run(run_iobench, shim, io, tmp_path):
    """Every byte lands but the calls report 4 KiB more each time: the phase's sum over ranks differs
    from bytes_total, so the run fails (the data alone would verify)."""
    proc, doc, hits = shimmed(run_iobench, shim, tmp_path, io, 'over')
    assert proc.returncode == 1, proc.stderr[-2000:]
    moved = ASKED + 4096 * len(hits)
    assert doc['status'] == 'failed'
    assert doc['error'] == f"write: the backend's calls moved {moved} bytes, the pattern asked for {ASKED}", \
        doc['error']
    found = sanity(doc, io, proc.returncode)
    assert any(f'moved {moved} bytes, the pattern asked for {ASKED}' in p for p in found), found
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize('io', ['posix:shared', 'hdf5:independent', 'sionlib:independent'])
def test_dropped_bytes_are_caught_by_verification(run_iobench, iobench_backends, shim, io, tmp_path):
    """A layer that claims it wrote what it dropped: the count cannot see it (it is what the calls
    returned); reading back can: the file is short where the last transfer was cut (the read call's own
    count, end of file) or holds zeros where data should be (--verify), and the run fails."""
    if io.split(':')[0] not in iobench_backends:
        pytest.skip(f'{io} not compiled into this iobench')
    proc, doc, hits = shimmed(run_iobench, shim, tmp_path, io, 'drop')
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert doc['status'] == 'failed', doc
    assert re.match(r'verify: |preadv\(.*\): unexpected end of file', doc['error']), doc['error']
    assert os.listdir(tmp_path) == []


@pytest.mark.reframe
def test_reframe_sanity_names_the_counted_bytes(iobench, shim, tmp_path):
    """The suite's sanity on real runs under the shim: a miscounting layer (posix) and a short count
    MPI let pass (mpiio) both fail the check at sanity, naming the counted and the asked bytes."""
    checks = REPO / 'tests' / 'reframe_checks' / 'short_transfers.py'
    fails = {}
    for mode, io in (('over', 'posix:fpp'), ('short', 'mpiio:independent')):
        work = tmp_path / mode
        work.mkdir()
        res = subprocess.run(['reframe', '-C', REPO / 'configs' / 'settings.py', '--system', 'local', '-c', checks,
                              '-n', f'ShortTransfers.*{io}', '-S', f'shim={shim}', '-S', f'shim_mode={mode}', '-r',
                              '--prefix', work, '--report-file', work / 'report.json', '--nocolor'],
                             capture_output=True, text=True, timeout=600, cwd=work)
        assert res.returncode != 0, res.stdout[-3000:]
        cases = [c for r in json.loads((work / 'report.json').read_text())['runs'] for c in r['testcases']
                 if c['name'].startswith('ShortTransfers')]
        assert len(cases) == 1 and cases[0]['result'] == 'fail', [(c['name'], c['result']) for c in cases]
        assert cases[0]['fail_phase'] == 'sanity', cases[0]
        fails[io] = cases[0]['fail_reason']
    # 2 ranks x 1 MiB, 1 MiB transfers: 2 write calls, each over-reported by 4 KiB
    assert re.search(r"write: the backend's calls moved 2105344 bytes, the pattern asked for 2097152",
                     fails['posix:fpp']), fails['posix:fpp']
    assert 'the call moved 524288 bytes, asked for 1048576' in fails['mpiio:independent'], fails['mpiio:independent']


def test_write_that_moves_nothing_fails_not_hangs(run_iobench, shim, tmp_path):
    """pwritev returning 0 without an error: posix's retry loop stops and names the call."""
    proc, doc, hits = shimmed(run_iobench, shim, tmp_path, 'posix:fpp', 'zero')
    assert proc.returncode == 1 and doc['status'] == 'failed', proc.stderr[-2000:]
    assert re.search(rf'^pwritev\(.*counted\.rep0\.\d, offset 0\): wrote 0 bytes \(0 of {XFER} bytes\)$',
                     doc['error']), doc['error']
    assert os.listdir(tmp_path) == []


# ---- the self-timed patterns count too (mdfiles: write/read; mddatasets: HDF5 selections) -----------------
MDF_ARGS = ['--backend', 'posix', '--pattern', 'mdfiles', '--param', 'nfiles=3', '--param', 'filesize=12288']
MDF_ASKED = NP * 3 * 12288


def test_mdfiles_short_writes_completed_and_counted_once(run_iobench, shim, tmp_path):
    env = {'LD_PRELOAD': shim, 'IOB_SHIM_MODE': 'short', 'IOB_SHIM_MATCH': 'counted.rep'}
    proc, doc = run_iobench([*MDF_ARGS, '--dir', tmp_path, '--name', 'counted'], np=NP, env=env)
    assert re.findall(r'^iob-shim write \d+$', proc.stderr, re.M), proc.stderr[-2000:]
    assert proc.returncode == 0, proc.stderr[-2000:]
    rep = doc['repetitions'][0]
    assert rep['write']['bytes'] == rep['read']['bytes'] == doc['bytes_total'] == MDF_ASKED, rep
    assert os.listdir(tmp_path) == []


def test_mdfiles_miscounted_write_fails_the_run(run_iobench, shim, tmp_path):
    """Every file's data lands, its write call reports 4 KiB more: only the count can see it."""
    env = {'LD_PRELOAD': shim, 'IOB_SHIM_MODE': 'over', 'IOB_SHIM_MATCH': 'counted.rep'}
    proc, doc = run_iobench([*MDF_ARGS, '--dir', tmp_path, '--name', 'counted'], np=NP, env=env)
    hits = re.findall(r'^iob-shim write \d+$', proc.stderr, re.M)
    assert len(hits) == NP * 3, proc.stderr[-2000:]
    assert proc.returncode == 1 and doc['status'] == 'failed', proc.stderr[-2000:]
    assert doc['error'] == (f"write: the backend's calls moved {MDF_ASKED + 4096 * len(hits)} bytes, "
                            f"the pattern asked for {MDF_ASKED}"), doc['error']
    assert os.listdir(tmp_path) == []


def test_mddatasets_counts_its_selections(run_iobench, iobench_backends, tmp_path):
    """HDF5 returns no byte count: each H5Dwrite/H5Dread that succeeded adds its selection, so the phase's
    bytes are the sum over calls and ranks (20 x 2 datasets of 16 doubles per rank here)."""
    if 'hdf5' not in iobench_backends:
        pytest.skip('hdf5 not compiled into this iobench')
    proc, doc = run_iobench(['--backend', 'hdf5', '--pattern', 'mddatasets', '--size', 16, '--param', 'nvars=2',
                             '--param', 'nblocks=20', '--dir', tmp_path], np=NP)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rep = doc['repetitions'][0]
    assert rep['write']['bytes'] == rep['read']['bytes'] == doc['bytes_total'] == NP * 40 * 16 * 8, rep
