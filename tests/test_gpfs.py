"""GPFS (Storage Scale) reads: the pagepool caches outside Linux's page cache, so posix_fadvise cannot
drop what a rank wrote on its node. On a `+gpfs` partition (iobench `--param pagepool=1`) a read of a
rank's own node's data therefore goes through O_DIRECT where the backend can (posix, any pattern; as
CSCS's IOR checks read with -B) and is real bandwidth with `cache_defeat` "o_direct"; the other
backends' reads stay "cache not defeated", with no read_bw in the perflog.

For real on this machine's ext4 (O_DIRECT works there; no GPFS here): iobench under strace (the open
flags of the timed read), and ReFrame runs on a throw-away copy of the `local` system whose partition
has the feature `gpfs` (the checks pass pagepool=1, as on a site), read back from the perflog.
"""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from postprocess.history.perflog import read_perflogs
from tests.support import reframe_systems

REPO = Path(__file__).resolve().parent.parent


def traced_run(iobench, tmp_path, args, np_=2):
    """iobench ARGS under strace -f (openat): (result document, lines opening this run's data files)."""
    strace = shutil.which('strace')
    if not strace:
        pytest.skip('strace not installed')
    data, trace = tmp_path / 'data', tmp_path / 'trace'
    data.mkdir()
    proc = subprocess.run([strace, '-f', '-e', 'trace=openat', '-o', str(trace), 'mpirun', '-np', str(np_),
                           '--oversubscribe', iobench, *args, '--name', 'gp', '--dir', str(data)],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0 and 'Invalid argument' in proc.stderr:
        pytest.skip(f'this file system refuses O_DIRECT: {proc.stderr.strip().splitlines()[-1]}')
    assert proc.returncode == 0, proc.stderr
    opens = [ln for ln in trace.read_text().splitlines() if 'gp.rep' in ln and 'openat(' in ln and '= -1' not in ln]
    return json.loads(proc.stdout), opens


@pytest.mark.parametrize('mode,extra', [
    ('fpp', []),                                     # benchio's halo rows: unaligned, through the bounce buffer
    ('shared', ['--param', 'halo=0']),               # runs at global offsets, not block-aligned either
    ('fpp', ['--pattern', 'ior', '--param', 'block=256k', '--param', 'transfer=64k']),   # aligned: straight
])
def test_pagepool_reads_of_own_node_use_o_direct(iobench, tmp_path, mode, extra):
    """One node, pagepool=1: the timed reads open with O_DIRECT, the writes do not; every element read
    is verified, every byte counted, and the read is reported as real bandwidth ("o_direct")."""
    doc, opens = traced_run(iobench, tmp_path, ['--backend', 'posix', '--mode', mode, '--param', 'pagepool=1',
                                                '--repeat', '2', *extra])
    assert doc['cache_defeated'] is True and doc['cache_defeat'] == 'o_direct'
    for rep in doc['repetitions']:
        assert rep['read']['verified'] is True and rep['read']['bytes'] == doc['bytes_total']
        assert rep['read']['bw_MiBps'] > 0
    assert 'read' in doc['summary'] and doc['summary']['read']['bw_MiBps']['median'] > 0
    writes = [ln for ln in opens if 'O_CREAT' in ln]
    reads = [ln for ln in opens if 'O_RDONLY' in ln and 'O_DIRECT' in ln]
    assert writes and not any('O_DIRECT' in ln for ln in writes), writes
    files = 2 if mode == 'fpp' else 1
    assert len(reads) >= 2 * files, opens      # each repetition's timed read (ior: and its verify re-read)


def test_without_pagepool_reads_stay_buffered(iobench, tmp_path):
    """The page cache that posix_fadvise drops (ext4 here): no O_DIRECT, the method as before."""
    doc, opens = traced_run(iobench, tmp_path, ['--backend', 'posix', '--mode', 'fpp'])
    assert doc['cache_defeat'] == 'posix_fadvise_dontneed' and doc['cache_defeated'] is True
    assert opens and not any('O_DIRECT' in ln for ln in opens)


def test_pagepool_backends_without_o_direct_say_not_defeated(run_iobench, tmp_path):
    """MPI-IO (and a self-timed pattern, mdfiles) cannot be told to read with O_DIRECT: on one node
    their reads stay "cache not defeated" (no read bandwidth reaches the perflog)."""
    proc, doc = run_iobench(['--backend', 'mpiio', '--param', 'pagepool=1', '--dir', tmp_path])
    assert proc.returncode == 0, proc.stderr
    assert doc['cache_defeated'] is False
    assert doc['cache_defeat'] == "cache not defeated (2 of 2 ranks read their own node's data)"
    proc, doc = run_iobench(['--backend', 'posix', '--pattern', 'mdfiles', '--param', 'nfiles=4',
                             '--param', 'pagepool=1', '--dir', tmp_path])
    assert proc.returncode == 0, proc.stderr
    assert doc['cache_defeated'] is False


# ---- a +gpfs partition, through ReFrame ------------------------------------------------------------
@pytest.mark.reframe
def test_gpfs_partition_reports_real_read_bandwidth(tmp_path):
    """BenchIO on one node of a +gpfs partition: posix:fpp reads with O_DIRECT and its perflog line
    has read_bw with "o_direct" in the provenance; mpiio:collective has no read_bw and
    read_cache_defeated=0, the provenance saying why."""
    conf = reframe_systems.write_config(tmp_path / 'conf.py', [('fake-gpfs', ['gpfs'], {})])
    work = tmp_path / 'rf'
    cmd = ['reframe', '-C', str(conf), '-c', str(REPO / 'reframe_checks' / 'benchio.py'), '--system', 'fake-gpfs',
           '-r', '--tag', 'quick', '-n', r'BenchIO.*size=64.*ranks=2.*io=(posix:fpp|mpiio:collective)',
           '-S', 'repeat=2', '--prefix', str(work), '--perflogdir', str(work / 'perflogs'),
           '--report-file', str(work / 'report.json'), '--nocolor']
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1')
    env.pop('RFM_ENABLE_RESULTS_STORAGE', None)
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    runs, diag = read_perflogs(work / 'perflogs')
    assert list(diag) == [] and len(runs) == 2, out[-3000:]
    by_io = {r['provenance']['command'].split('--mode ')[0].split('--backend ')[1].strip(): r for r in runs}
    posix, mpiio = by_io['posix'], by_io['mpiio']
    assert '--param pagepool=1' in posix['provenance']['command']
    assert posix['provenance']['cache_defeat'] == 'o_direct' and posix['provenance']['cache_defeated'] is True
    assert posix['perf']['read_bw']['value'] > 0 and 'read_cache_defeated' not in posix['perf']
    assert mpiio['provenance']['cache_defeated'] is False
    assert mpiio['provenance']['cache_defeat'].startswith('cache not defeated')
    assert 'read_bw' not in mpiio['perf'] and mpiio['perf']['read_cache_defeated']['value'] == 0
    assert posix['system'] == 'fake-gpfs' and mpiio['perf']['write_bw']['value'] > 0
