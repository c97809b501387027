"""End to end: real `ci/nightly.sh` runs of quick-suite checks on re-dated nights, then iobench's
writes made genuinely slower (an LD_PRELOAD library built here with cc delays large write/pwrite
calls) for two nights: the nightly must exit 3 on both slowed nights -- one `system` finding for the
write phase or the slowed checks named -- and 0 on the clean ones.

Re-dating: each run's perflog lines carry today's date while it judges itself; afterwards they are
moved (in place, same length) to their own past night, so the next run sees them as history.
"""
import datetime
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIRST_NIGHT = datetime.date(2026, 1, 1)        # the re-dated nights: 2026-01-01, -02, ...
pytestmark = pytest.mark.reframe

SLOW_WRITES = r'''
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
/* Test-only: every write of >= 64 KiB also waits bytes / SLOW_WRITE_MIBPS, like a slower disk. */
static void delay(size_t n) {
    static double rate = 0;
    if (rate == 0) {
        const char *e = getenv("SLOW_WRITE_MIBPS");
        rate = (e ? atof(e) : 200.0) * 1048576.0;
    }
    if (n < 65536) return;
    double s = n / rate;
    struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}
ssize_t write(int fd, const void *b, size_t n) {
    static ssize_t (*real)(int, const void *, size_t);
    if (!real) real = dlsym(RTLD_NEXT, "write");
    delay(n);
    return real(fd, b, n);
}
ssize_t pwrite(int fd, const void *b, size_t n, off_t o) {
    static ssize_t (*real)(int, const void *, size_t, off_t);
    if (!real) real = dlsym(RTLD_NEXT, "pwrite");
    delay(n);
    return real(fd, b, n, o);
}
ssize_t pwrite64(int fd, const void *b, size_t n, off_t o) {
    static ssize_t (*real)(int, const void *, size_t, off_t);
    if (!real) real = dlsym(RTLD_NEXT, "pwrite64");
    delay(n);
    return real(fd, b, n, o);
}
'''


def build_slow_writes(tmp_path):
    if not shutil.which('cc'):
        pytest.skip('no C compiler (cc)')
    src = tmp_path / 'slow_writes.c'
    src.write_text(SLOW_WRITES)
    lib = tmp_path / 'libslow_writes.so'
    subprocess.run(['cc', '-shared', '-fPIC', '-O2', '-o', str(lib), str(src), '-ldl'],
                   check=True, capture_output=True)
    return lib


def redate(perflogs, sizes, night):
    """Move the lines appended since ``sizes`` (path -> bytes) to ``night`` (YYYY-MM-DD), in place."""
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    for path in Path(perflogs).rglob('*.log'):
        start = sizes.get(path, 0)
        with open(path, 'r+b') as fp:
            fp.seek(start)
            tail = fp.read()
            lines = tail.split(b'\n')
            # the date of the completion time opens each data line; keep the clock time
            lines = [night.encode() + ln[10:] if ln[:10] == today.encode() else ln for ln in lines]
            fp.seek(start)
            fp.write(b'\n'.join(lines))


def nightly(results, names, env):
    cmd = [str(REPO / 'ci' / 'nightly.sh'), '--tag', 'quick', '--system', 'local',
           '--results', str(results)]
    for n in names:
        cmd += ['--name', n]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1200)


def run_nights(tmp_path, names, clean, slowed):
    lib = build_slow_writes(tmp_path)
    results = tmp_path / 'results'
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1',
               PYTHONPATH=str(REPO))
    first = FIRST_NIGHT
    outcomes = []
    for i in range(clean + slowed):
        perflogs = results / 'perflogs'
        sizes = {p: p.stat().st_size for p in perflogs.rglob('*.log')} if perflogs.exists() else {}
        run_env = dict(env)
        if i >= clean:
            run_env.update(LD_PRELOAD=str(lib), SLOW_WRITE_MIBPS='150')
        proc = nightly(results, names, run_env)
        verdict_path = results / 'latest' / 'post' / 'verdict.json'
        verdict = json.loads(verdict_path.read_text()) if verdict_path.exists() else None
        outcomes.append((proc.returncode, verdict, proc.stdout[-4000:] + proc.stderr[-2000:]))
        redate(perflogs, sizes, (first + datetime.timedelta(days=i)).isoformat())
        shutil.rmtree(results / 'cache', ignore_errors=True)    # the ingest cache saw the old dates
    return outcomes


def assert_verdicts(outcomes, clean, min_history=3):
    for i, (status, verdict, out) in enumerate(outcomes):
        if i < min_history:
            assert status == 0, out           # too little history to judge: never red
        elif i < clean:
            assert status == 0, out
            assert verdict is not None and verdict['status'] == 'ok', out
        else:
            assert status == 3, out
            flagged = [f for f in verdict['findings'] if f['status'] == 'regression']
            assert flagged, out
            # the slowed writes are named (a loaded shared machine may add a real read change)
            writes = [f for f in flagged if f['phase'] == 'write']
            assert writes, out
            assert verdict['confirmation'] == 'done', out
            assert all(f.get('confirmation') == 'confirmed' for f in writes), out
            if i == clean + 1:                # the second slowed night: still red, since the first
                first_slow = (FIRST_NIGHT + datetime.timedelta(days=clean)).isoformat()
                assert any(f.get('since') == first_slow for f in writes), out


FAST = ['BenchIO.*ranks=2.*posix:fpp', 'BaselineFio']
SUITE = ['BenchIO.*ranks=2.*posix:', 'BenchIO.*mpiio:independent', 'BaselineFio']


def test_nightly_red_on_slowed_writes_green_otherwise_fast(tmp_path):
    """CI's version: one BenchIO check and the fio baseline, 3 clean nights, 2 slowed."""
    outcomes = run_nights(tmp_path, FAST, clean=3, slowed=2)
    assert_verdicts(outcomes, clean=3)


@pytest.mark.slow
def test_nightly_red_on_slowed_writes_green_otherwise(tmp_path):
    """Several quick-suite checks and fio, 6 clean nights, 2 slowed: a `system` finding for the
    write phase (everything slowed) or the slowed checks named."""
    outcomes = run_nights(tmp_path, SUITE, clean=6, slowed=2)
    assert_verdicts(outcomes, clean=6)
    for status, verdict, out in outcomes[6:]:
        scopes = {f['scope'] for f in verdict['findings'] if f['status'] == 'regression'}
        assert 'system' in scopes or len(scopes) == 1, out
