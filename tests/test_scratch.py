"""Scratch hygiene: a run killed mid-write leaves its directory (marker inside), the next nightly's
sweep removes it (.bp directories included), nothing unmarked or young is touched, and iobench
lists and removes every rank's file beyond the old 64-file cap."""
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iobench_lib import scratch

REPO = Path(__file__).resolve().parent.parent

FAKE_REFRAME = REPO / 'tests' / 'fixtures' / 'fake_reframe.py'
REAL_LOG = REPO / 'tests' / 'fixtures' / 'perflogs' / 'real' / 'local' / 'default' / 'BenchIO.log'


def marked(path, age_h=0.0, text=None):
    path.mkdir(parents=True)
    marker = path / scratch.MARKER
    marker.write_text(text or scratch.marker_text('T') + '\n')
    past = time.time() - age_h * 3600
    os.utime(marker, (past, past))
    return path


def test_sweep_removes_old_marked_dirs_only(tmp_path):
    old = marked(tmp_path / 'scratch' / 'ioregress-a', age_h=30)
    (old / 'iob.rep0.bp').mkdir()
    (old / 'iob.rep0.bp' / 'data.0').write_bytes(b'x' * 4096)
    (old / 'posix.rep0.1').write_bytes(b'y')
    deep = marked(tmp_path / 'runs' / 'r1' / 'stage' / 'local' / 'default' / 'mpi-gnu' / 'B_1' / 'data',
                  age_h=30)
    young = marked(tmp_path / 'scratch' / 'ioregress-b', age_h=1)
    foreign = marked(tmp_path / 'scratch' / 'not-ours', age_h=30, text='someone else\n')
    plain = tmp_path / 'scratch' / 'users-data'
    plain.mkdir()
    (plain / 'keep.dat').write_text('x')
    removed, kept = scratch.sweep([tmp_path / 'scratch', tmp_path / 'runs', tmp_path / 'nosuch'],
                                  12 * 3600)
    assert sorted(removed) == sorted([str(old), str(deep)])
    assert kept == [str(young)]
    assert not old.exists() and not deep.exists()
    assert young.exists() and foreign.exists() and (plain / 'keep.dat').exists()
    proc = subprocess.run([sys.executable, str(REPO / 'reframe_checks' / 'iobench_lib' / 'scratch.py'),
                           '--older-than-hours', '-1', str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.count('\n') == 1 and '-1' in proc.stderr


def kill_job(job, scratch_dir):
    """What a batch system does at the time limit: SIGKILL to every process of the job (its
    session, and any rank that left it, found by the run directory on its command line)."""
    deadline = time.time() + 20
    while time.time() < deadline:
        pids = {int(p) for p in subprocess.run(['pgrep', '-s', str(job.pid)], capture_output=True,
                                               text=True).stdout.split()}
        pids |= {int(p) for p in subprocess.run(['pgrep', '-f', str(scratch_dir)], capture_output=True,
                                                text=True).stdout.split()}
        pids.discard(os.getpid())
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)
    job.wait()


def dry_run_job_script(tmp_path, io, scratch_dir):
    """The real job script ReFrame writes for one nightly BenchIO case (dry run: nothing runs)."""
    work = tmp_path / 'rf'
    work.mkdir()
    proc = subprocess.run(['reframe', '-C', str(REPO / 'configs' / 'settings.py'), '-c',
                           str(REPO / 'reframe_checks' / 'benchio.py'), '--system', 'local',
                           '--prefix', str(work), '-n', f'^BenchIO\\b.*io={io}', '--tag', 'nightly',
                           '--dry-run'], cwd=work, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, IOREGRESS_SCRATCH=str(scratch_dir)))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (script,) = [p for p in (work / 'stage').rglob('rfm_job.sh') if 'IOBenchBuild' not in str(p)]
    return script


@pytest.mark.reframe
def test_run_killed_mid_write_is_swept_by_the_next_nightly(tmp_path, iobench, iobench_backends):
    io = 'adios2:bp5' if 'adios2' in iobench_backends else 'posix:fpp'
    scratch_dir = tmp_path / 'scratch'
    script = dry_run_job_script(tmp_path, io, scratch_dir)
    text = script.read_text()
    assert scratch.MARKER in text and 'rm -rf' in text and scratch.LEFTOVER in text
    # the build fixture's path -> this session's iobench; then the job, killed once data are written
    script.write_text(re.sub(r'\S*/IOBenchBuild_\w+/build/iobench', iobench, text))
    job = subprocess.Popen(['bash', str(script)], cwd=script.parent, start_new_session=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and job.poll() is None:
        data = [p for p in scratch_dir.rglob('*') if p.is_file() and p.name != scratch.MARKER]
        if any(p.stat().st_size > 0 for p in data):
            break
        time.sleep(0.05)
    assert job.poll() is None, 'the job ended before it was killed: make the case larger'
    kill_job(job, scratch_dir)              # the time limit's kill: no postrun
    (run_dir,) = scratch_dir.iterdir()
    assert (run_dir / scratch.MARKER).exists() and len(list(run_dir.rglob('*'))) > 1
    # the next nightly, 13 h later (fake ReFrame: the sweep is what is tested here) removes it and
    # keeps a run directory of a job that is writing now (younger than the 12 h default bound)
    past = time.time() - 13 * 3600
    os.utime(run_dir / scratch.MARKER, (past, past))
    young = marked(scratch_dir / 'ioregress-running-now')
    fake = tmp_path / 'fake-reframe'
    fake.write_text(FAKE_REFRAME.read_text())
    fake.chmod(0o755)
    env = dict(os.environ, REFRAME=str(fake), FAKE_PERFLOG=str(REAL_LOG), FAKE_LINES='1',
               FAKE_TIME='2026-11-20T03:00:00+00:00',
               IOREGRESS_SCRATCH=str(scratch_dir))
    env.pop('IOREGRESS_SWEEP_HOURS', None)
    proc = subprocess.run(['bash', str(REPO / 'ci' / 'nightly.sh'), '--system', 'local', '--results',
                           str(tmp_path / 'results')], capture_output=True, text=True, env=env,
                          timeout=600)
    assert f'scratch sweep: removed {run_dir}' in proc.stdout, proc.stdout[-3000:]
    assert 'older than 12 h removed, 1 younger kept' in proc.stdout, proc.stdout[-3000:]
    assert list(scratch_dir.iterdir()) == [young]
    assert 'nightly.sh: OK' in proc.stdout, proc.stdout[-3000:]


def test_iobench_lists_and_removes_every_rank_file(tmp_path, iobench):
    """66 ranks, file per process: the JSON lists all 66 files (the list was capped at 64) and
    none is left; the same holds past 256 ranks, where only rank 0's file used to be listed."""
    out = tmp_path / 'r.json'
    data = tmp_path / 'd'
    data.mkdir()
    proc = subprocess.run(['mpirun', '-np', '66', '--oversubscribe', iobench, '--backend', 'posix',
                           '--mode', 'fpp', '--size', '4', '--dir', str(data), '--repeat', '1',
                           '--json', str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    files = json.loads(out.read_text())['repetitions'][0]['files']
    assert len(files) == len(set(files)) == 66, len(files)
    assert list(data.iterdir()) == []


@pytest.mark.parametrize('mode', ['bp5', 'bp4', 'hdf5'])
def test_adios2_reads_leave_nothing_in_tmp(tmp_path, run_iobench, iobench_backends, mode):
    """ADIOS2 2.11's BP5 reader writes /tmp/<target>_<pid>_profiling.json at every close, whatever
    Profile says: one file per reading rank and read, outside --dir. iobench removes its own."""
    if 'adios2' not in iobench_backends:
        pytest.skip('adios2 not compiled into this iobench')
    name = f'tmpcheck{os.getpid()}{mode}'
    proc, doc = run_iobench(['--backend', 'adios2', '--mode', mode, '--pattern', 'benchio', '--size', '1',
                             '--dir', tmp_path, '--name', name], np=3)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert doc['repetitions'][0]['read']['verified'] is True
    assert [p.name for p in Path('/tmp').iterdir() if p.name.startswith(name)] == []
    assert list(tmp_path.iterdir()) == []
