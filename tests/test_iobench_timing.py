"""iobench times a phase as IOR does (docs/CONTRACT.md §2): one span per rank from open to close, the
phase = the longest rank's span, no agreement inside the span; `--param barriers=1` (IOR -g)
agrees between the steps. Checked with real delays: a small LD_PRELOAD shim (tests/support/delay.py,
compiled here) makes open() of the data file slow on one rank and close() of it slow on another. IOR's timing counts one
delay (the ranks wait in parallel); agreements inside the span count both."""
import json
import os
import shutil
import subprocess

import pytest

from tests.support.delay import DELAY


def delayed_write(run_iobench, delay_shim, tmp_path, *extra):
    env = {'LD_PRELOAD': delay_shim, 'IOB_DELAY_MATCH': 'slowrank', 'IOB_DELAY_S': str(DELAY),
           'IOB_DELAY_OPEN_RANK': '0', 'IOB_DELAY_CLOSE_RANK': '1'}
    proc, doc = run_iobench(['--backend', 'posix', '--mode', 'fpp', '--size', 16, '--dir', tmp_path,
                             '--name', 'slowrank', '--phase', 'write', *extra], env=env)
    assert proc.returncode == 0, proc.stderr
    assert os.listdir(tmp_path) == []
    return doc['repetitions'][0]['write']


def test_one_span_per_rank_counts_one_delay(run_iobench, delay_shim, tmp_path):
    w = delayed_write(run_iobench, delay_shim, tmp_path)
    # per-step maxima still show each delay where it happened
    assert w['open_s'] >= DELAY and w['close_s'] >= DELAY, w
    # rank 0 waited in open, rank 1 in close, each in its own span: one delay, not two
    assert DELAY <= w['total_s'] < 1.5 * DELAY, w
    assert w['bytes'] == 2 * 16 ** 3 * 8


def test_barriers_param_keeps_ior_g(run_iobench, delay_shim, tmp_path):
    w = delayed_write(run_iobench, delay_shim, tmp_path, '--param', 'barriers=1')
    # agreements after open and after close: everyone waits for the slow open, then for the slow close
    assert w['total_s'] >= 2 * DELAY, w
    assert w['total_s'] >= w['open_s'] + w['close_s'] - 0.01, w


def test_driver_params_are_checked(run_iobench, tmp_path):
    for key in ('barriers', 'pagepool'):
        proc, _ = run_iobench(['--backend', 'posix', '--dir', tmp_path, '--param', f'{key}=2'], np=1)
        assert proc.returncode == 2 and f"--param {key} (0 or 1) '2'" in proc.stderr, proc.stderr
    assert os.listdir(tmp_path) == []


# ---- what an IOR user expects: O_DIRECT, random offsets, a self-describing --list ----------------------
IOR_SMALL = ['--pattern', 'ior', '--param', 'block=256k', '--param', 'transfer=16k', '--param', 'segments=2']


def traced(iobench, tmp_path, calls, np_, args):
    """iobench --backend posix ARGS under strace -f -e trace=CALLS: (process, trace file)."""
    strace = shutil.which('strace')
    if not strace:
        pytest.skip('strace not installed')
    trace, data = tmp_path / 'trace', tmp_path / 'data'
    data.mkdir()
    proc = subprocess.run([strace, '-f', '-e', f'trace={calls}', '-o', str(trace), 'mpirun', '-np', str(np_),
                           '--oversubscribe', iobench, '--backend', 'posix', *args, '--dir', str(data)],
                          capture_output=True, text=True, timeout=120)
    return proc, trace


def test_direct_io_round_trip(iobench, tmp_path):
    """posix direct=1 opens the data files with O_DIRECT for the timed write and read (strace shows
    the flag; the untimed cache drop and probe open them plainly) and still verifies every word."""
    proc, trace = traced(iobench, tmp_path, 'openat', 2, ['--mode', 'fpp', *IOR_SMALL, '--param', 'direct=1',
                                                          '--name', 'odirect'])
    if proc.returncode != 0 and 'Invalid argument' in proc.stderr:
        pytest.skip(f'this file system refuses O_DIRECT: {proc.stderr.strip().splitlines()[-1]}')
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)['repetitions'][0]
    assert rep['read']['verified'] is True and rep['read']['bytes'] == 2 * 2 * 256 * 1024
    opens = [ln for ln in trace.read_text().splitlines() if 'odirect.rep0.' in ln and 'openat(' in ln]
    creates = [ln for ln in opens if 'O_CREAT' in ln]
    assert len(creates) == 2 and all('O_DIRECT' in ln for ln in creates), opens
    assert sum('O_RDONLY|O_DIRECT' in ln for ln in opens) >= 2, opens   # timed read (and verify re-read)


@pytest.mark.parametrize('backend', ['posix', 'mpiio', 'hdf5'])
def test_random_order_moves_and_verifies_the_same_bytes(run_iobench, iobench_backends, backend, tmp_path):
    if backend not in iobench_backends:
        pytest.skip(f'{backend} not compiled in')
    proc, doc = run_iobench(['--backend', backend, *IOR_SMALL, '--param', 'random=1', '--dir', tmp_path,
                             '--keep', '--name', 'rnd'])
    assert proc.returncode == 0, proc.stderr
    assert doc['transfer_order'].startswith('random')
    assert doc['repetitions'][0]['read']['verified'] is True   # every word re-read and checked
    if backend == 'hdf5':
        return   # HDF5 object headers carry creation times: files of two runs differ anyway
    # the kept file is byte for byte what a sequential run writes: same data, other order
    proc2, doc2 = run_iobench(['--backend', backend, *IOR_SMALL, '--dir', tmp_path, '--keep', '--name', 'seq'])
    assert proc2.returncode == 0 and doc2['transfer_order'] == 'sequential'
    a, b = sorted(tmp_path.glob('rnd.rep0*')), sorted(tmp_path.glob('seq.rep0*'))
    assert a and [p.read_bytes() for p in a] == [p.read_bytes() for p in b]


def test_random_needs_a_per_transfer_backend(run_iobench, iobench_backends, tmp_path):
    if 'adios2' not in iobench_backends:
        pytest.skip('adios2 not compiled in')
    proc, _ = run_iobench(['--backend', 'adios2', *IOR_SMALL, '--param', 'random=1', '--dir', tmp_path], np=1)
    assert proc.returncode == 2 and "'adios2'" in proc.stderr
    proc, _ = run_iobench(['--backend', 'posix', '--param', 'direct=1', '--dir', tmp_path], np=1)
    assert proc.returncode == 2 and "needs --pattern ior" in proc.stderr
    proc, _ = run_iobench(['--backend', 'posix', '--pattern', 'ior', '--param', 'block=6k', '--param',
                           'transfer=6k', '--param', 'direct=1', '--dir', tmp_path], np=1)
    assert proc.returncode == 2 and 'multiples of 4096' in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_list_and_help_name_every_pattern_and_param(iobench):
    import re
    for opt in ('--list', '--help'):
        out = subprocess.run([iobench, opt], capture_output=True, text=True, check=True).stdout
        for pattern in ('benchio', 'hacc', 'nektar', 'mdfiles', 'ior'):
            assert re.search(rf'^  {pattern} +\S', out, re.M), (opt, pattern)
        for kv in ('barriers=0', 'pagepool=0', 'direct=0', 'transfer=1m', 'segments=1', 'random=0',
                   'nfiles=200', 'filesize=307200', 'halo=1', 'case=small'):
            assert kv in out, (opt, kv)


def test_residency_probe_is_sampled(iobench, tmp_path):
    """The probe maps one page at a time, at most 1024 per file (constant memory whatever the file
    size): a 16 MiB file (4096 pages) is probed with 1024 one-page mincore calls per round."""
    proc, trace = traced(iobench, tmp_path, 'mincore', 1, ['--pattern', 'ior', '--param', 'block=16m'])
    assert proc.returncode == 0, proc.stderr
    calls = [ln for ln in trace.read_text().splitlines() if 'mincore(' in ln]
    assert calls and all(', 4096, ' in ln for ln in calls), calls[:3]
    rounds = json.loads(proc.stdout)['repetitions'][0]['read']['cache_resident_before_read'] > 0
    assert len(calls) in ((1024,) if not rounds else (1024, 2048, 3072)), len(calls)
