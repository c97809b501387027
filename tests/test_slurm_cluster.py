"""The multi-node Slurm of `ci/slurm/start.sh --nodes 4` and the `local-cluster` system: iobench and
ReFrame jobs that really span nodes (each node a slurmd in its own network and UTS namespace, ranks on
different nodes talking TCP over the bridge start.sh made).

Checked on uneven and cyclic layouts: every block is read exactly once, from another node whenever the
layout allows it for a constant shift (IOR -C), verified against the data written; the JSON says which
block each rank read and on which node each rank ran. Needs root; if the cluster cannot be started the
tests skip with the reason (on this machine and in CI, .ci/run starts it).
"""
import json
import os
import pathlib
import re
import shutil
import subprocess
import time
import warnings

import pytest

from tests.support.delay import DELAY

REPO = pathlib.Path(__file__).resolve().parents[1]
START = REPO / 'ci' / 'slurm' / 'start.sh'
STOP = REPO / 'ci' / 'slurm' / 'stop.sh'
SETTINGS = REPO / 'configs' / 'settings.py'
NODES = 4
MPI_ENV = {'OMPI_ALLOW_RUN_AS_ROOT': '1', 'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1',
           'OMPI_MCA_btl': 'self,vader,tcp', 'OMPI_MCA_btl_tcp_if_include': '10.219.19.0/24',
           'OMPI_MCA_btl_tcp_disable_family': '6', 'SLURM_MPI_TYPE': 'pmix'}


def run(cmd, timeout=120, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, **kw)


def cluster_nodes():
    if not shutil.which('sinfo'):
        return []
    out = run(['sinfo', '-h', '-p', 'cluster', '-N', '-o', '%N %T'], timeout=20).stdout.split('\n')
    return [ln.split()[0] for ln in out if ln.strip() and ln.split()[1] == 'idle']


@pytest.fixture(scope='module')
def cluster(slurm_lock):
    if os.geteuid() != 0:
        pytest.skip('the namespaced cluster needs root (network namespaces, Slurm daemons)')
    conf = pathlib.Path('/etc/slurm/slurm.conf')
    if conf.exists() and 'ci/slurm/start.sh' not in conf.read_text().split('\n', 1)[0]:
        pytest.skip(f'{conf} was not written by ci/slurm/start.sh: not touching a real Slurm')
    up_before = shutil.which('scontrol') and run(['scontrol', 'ping'], timeout=20).returncode == 0
    if len(cluster_nodes()) < NODES:
        # a superset of the one-node cluster (partition batch keeps working): left running if Slurm was
        # running before, stopped at the end if this fixture started Slurm itself
        res = run(['bash', START, '--nodes', NODES], timeout=600)
        if res.returncode != 0:
            last = (res.stderr.strip().splitlines() or ['(no message)'])[-1]
            pytest.skip(f'the {NODES}-node cluster could not be started: {last}')
    yield cluster_nodes()
    if not up_before:
        res = run(['bash', STOP], timeout=120)
        assert res.returncode == 0, res.stdout + res.stderr


def launch_crashed(res):
    """Open MPI 4.1.4's TCP BTL, between these namespaced nodes, now and then calls a NULL active-message
    callback inside MPI_Init (core: ompi_mpi_init -> opal_progress -> mca_btl_tcp.so -> 0x0; ~2-7 % of
    3-node launches, IOR and iobench alike, always before the program's first line; docs/nightly.md). That
    step printed nothing and its ranks died of SIGSEGV at address nil."""
    return (res.returncode != 0 and not res.stdout.strip() and 'Segmentation fault' in res.stderr
            and 'Failing at address: (nil)' in res.stderr)


def wait_all_idle(timeout=60):
    """The layouts below are Slurm's on idle nodes; the previous job's CPUs are freed a moment after its
    srun returned (COMPLETING until each slurmd reports), seconds later on a loaded machine: a launch
    then got 2 CPUs of iorn1 and another node set. Wait for every node to be idle first."""
    deadline = time.time() + timeout
    while len(cluster_nodes()) < NODES and time.time() < deadline:
        time.sleep(0.2)


def srun(args, timeout=120, env=None, retries=2):
    """srun in partition cluster from this host, with the MPI settings of the local-cluster system.
    A launch that crashed in MPI_Init (launch_crashed) runs again, at most `retries` times, with a
    warning in the test summary; a program's own failure is never retried."""
    for attempt in range(retries + 1):
        wait_all_idle()
        # -K: a rank that dies ends the step at once (else the others wait in MPI until the timeout)
        res = run(['srun', '-K', '-p', 'cluster', *args], timeout=timeout,
                  env={**os.environ, **MPI_ENV, **(env or {})})
        if not launch_crashed(res) or attempt == retries:
            return res
        warnings.warn(f'Open MPI TCP launch crash in MPI_Init, launched again: srun {" ".join(map(str, args[:8]))}')
    return res


# ---- the cluster itself --------------------------------------------------------------------------------
def test_four_nodes_four_hostnames_own_addresses(cluster):
    assert cluster == [f'iorn{i}' for i in range(1, NODES + 1)], cluster
    res = srun(['-N', NODES, '-l', 'sh', '-c', 'echo $(hostname) $(hostname -I)'])
    assert res.returncode == 0, res.stderr
    rows = sorted(line.split(': ', 1)[1].split() for line in res.stdout.splitlines())
    assert rows == [[f'iorn{i}', f'10.219.19.{10 + i}'] for i in range(1, NODES + 1)], res.stdout


def test_mpi_ranks_on_different_nodes_talk_over_tcp(cluster):
    # btl self,tcp only: a message between ranks can go nowhere but over TCP on the bridge
    prog = ('from mpi4py import MPI; import socket; c = MPI.COMM_WORLD; '
            'n = c.Split_type(MPI.COMM_TYPE_SHARED); h = c.allgather(socket.gethostname()); '
            'x = c.allreduce(c.rank + 1); s = c.allgather(n.size); c.rank or print(h, s, x, flush=True)')
    res = srun(['-N', 3, '-n', 7, 'python3', '-c', prog], env={'OMPI_MCA_btl': 'self,tcp'})
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == (f"{['iorn1'] * 4 + ['iorn2'] * 2 + ['iorn3']} "
                                  f"{[4] * 4 + [2] * 2 + [1]} 28"), res.stdout


# ---- reads from another node, for any layout ------------------------------------------------------------
def best_constant_shift(nodes):
    """(ranks reading another node's block) for the best constant shift, by brute force."""
    n = len(nodes)
    return max(sum(nodes[(r + s) % n] != nodes[r] for r in range(n)) for s in range(n))


def check_placement(doc, layout_nodes=None):
    n = doc['ranks']
    pl = doc['read_placement']
    nodes, blocks = pl['node_of_rank'], pl['block_read_by_rank']
    assert len(nodes) == n and doc['nodes'] == len(set(nodes)) > 1
    if layout_nodes is not None:
        assert nodes == layout_nodes, nodes
    assert sorted(blocks) == list(range(n)), f'not a permutation: {blocks}'      # every block once
    assert blocks == [(r + pl['shift']) % n for r in range(n)], blocks           # IOR -C: one shift
    cross = sum(nodes[b] != nodes[r] for r, b in enumerate(blocks))
    assert cross == pl['ranks_reading_another_node'] == best_constant_shift(nodes), (nodes, blocks)
    if cross == n:
        assert doc['cache_defeat'] == 'rank_shift+posix_fadvise_dontneed'
    else:
        assert doc['cache_defeat'] == (f'rank_shift+posix_fadvise_dontneed ({n - cross} of {n} ranks '
                                       f'on their own node)'), doc['cache_defeat']
    for rep in doc['repetitions']:
        assert rep['read']['verified'] is True and rep['read']['bytes'] == doc['bytes_total']
        assert rep['read']['cache_resident_before_read'] <= 0.05   # one kernel: the drop matters here
    return cross


def run_iobench_on(iobench_path, args, layout, tmp_path, timeout=180):
    res = srun([*layout, iobench_path, '--pattern', 'ior', '--param', 'block=64k', '--param',
                'transfer=16k', '--param', 'segments=2', '--dir', tmp_path, *args], timeout=timeout)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return json.loads(res.stdout)


LAYOUTS = {  # srun arguments -> node of each rank (Slurm's distribution on 4-CPU nodes)
    '3x7-block': (['-N', 3, '-n', 7, '-m', 'block'], [0, 0, 0, 0, 1, 1, 2]),
    '3x7-cyclic': (['-N', 3, '-n', 7, '-m', 'cyclic'], None),
    '3x10-block': (['-N', 3, '-n', 10, '-m', 'block'], [0, 0, 0, 0, 1, 1, 1, 1, 2, 2]),   # 4+4+2
    '2x6-cyclic': (['-N', 2, '-n', 6, '--ntasks-per-node', 3, '-m', 'cyclic'], [0, 1, 0, 1, 0, 1]),
    '4x8-block': (['-N', 4, '-n', 8, '--ntasks-per-node', 2, '-m', 'block'], [0, 0, 1, 1, 2, 2, 3, 3]),
}


@pytest.mark.parametrize('layout', LAYOUTS, ids=list(LAYOUTS))
def test_every_block_read_once_from_another_node(cluster, iobench, layout, tmp_path):
    args, nodes = LAYOUTS[layout]
    doc = run_iobench_on(iobench, ['--backend', 'posix', '--mode', 'fpp'], args, tmp_path)
    cross = check_placement(doc, nodes)
    if layout in ('3x10-block', '2x6-cyclic', '4x8-block'):   # layouts a constant shift serves fully
        assert cross == doc['ranks']
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize('io', ['mpiio:independent', 'mpiio:collective', 'hdf5:collective', 'adios2:bp5',
                                'sionlib:independent'])
def test_every_backend_reads_the_same_blocks(cluster, iobench, iobench_backends, io, tmp_path):
    backend, mode = io.split(':')
    if backend not in iobench_backends:
        pytest.skip(f'{backend} not compiled into this iobench')
    args, nodes = LAYOUTS['3x10-block']
    doc = run_iobench_on(iobench, ['--backend', backend, '--mode', mode], args, tmp_path)
    assert check_placement(doc, nodes) == doc['ranks']


def test_read_phase_alone_reads_from_another_node(cluster, iobench, tmp_path):
    args, nodes = LAYOUTS['2x6-cyclic']
    common = ['--backend', 'mpiio', '--name', 'kept']
    run_iobench_on(iobench, [*common, '--phase', 'write', '--keep'], args, tmp_path)
    doc = run_iobench_on(iobench, [*common, '--phase', 'read'], args, tmp_path)
    assert check_placement(doc, nodes) == doc['ranks']


def test_pagepool_reports_cache_not_defeated(cluster, iobench, tmp_path):
    """On a partition marked +gpfs (--param pagepool=1) a read of a rank's own node's data is not
    disk bandwidth: in 3+... layouts where some rank must stay on its node, posix reads with O_DIRECT
    (every rank) and says so, MPI-IO says cache not defeated; where every rank reads another node's
    block, both are the usual rank shift."""
    doc = run_iobench_on(iobench, ['--backend', 'mpiio', '--param', 'pagepool=1'], LAYOUTS['3x7-block'][0], tmp_path)
    assert doc['cache_defeated'] is False
    assert doc['cache_defeat'] == "cache not defeated (1 of 7 ranks read their own node's data)"
    doc = run_iobench_on(iobench, ['--backend', 'posix', '--param', 'pagepool=1'], LAYOUTS['3x7-block'][0], tmp_path)
    assert doc['cache_defeated'] is True
    assert doc['cache_defeat'] == 'rank_shift+o_direct (1 of 7 ranks on their own node)'
    for backend in ('posix', 'mpiio'):
        doc = run_iobench_on(iobench, ['--backend', backend, '--param', 'pagepool=1'], LAYOUTS['4x8-block'][0],
                             tmp_path)
        assert doc['cache_defeated'] is True and doc['cache_defeat'] == 'rank_shift+posix_fadvise_dontneed'


# ---- IOR's timing across nodes ---------------------------------------------------------------------
def test_one_delay_counted_when_the_slow_ranks_are_on_different_nodes(cluster, iobench, delay_shim,
                                                                      tmp_path):
    """Rank 0 (iorn1) waits DELAY in open(), rank 1 (iorn2) DELAY in close() (tests/support/delay.py's
    LD_PRELOAD shim): each rank's span starts at its own exit from the barrier, so the phase counts one
    delay across nodes as on one; --param barriers=1 (IOR -g) counts both."""
    env = {'LD_PRELOAD': delay_shim, 'IOB_DELAY_MATCH': 'slowrank', 'IOB_DELAY_S': str(DELAY),
           'IOB_DELAY_OPEN_RANK': '0', 'IOB_DELAY_CLOSE_RANK': '1'}
    totals, added = {}, {}
    for extra in ([], ['--param', 'barriers=1']):
        res = srun(['-N', 2, '-n', 2, '-m', 'block', iobench, '--backend', 'posix', '--mode', 'fpp', '--size', 16,
                    '--dir', tmp_path, '--name', 'slowrank', '--phase', 'write', *extra], env=env)
        assert res.returncode == 0, res.stderr[-2000:]
        doc = json.loads(res.stdout)
        assert doc['nodes'] == 2 and doc['read_placement']['node_of_rank'] == [0, 1], doc['hosts']
        w = doc['repetitions'][0]['write']
        assert w['open_s'] >= DELAY and w['close_s'] >= DELAY, w    # both delays happened
        # the span, and the span less its slowest data access and sync: what open and close
        # added (an fsync behind another test's 256 MiB of writes can take ~1 s here, and is not
        # the question)
        totals[bool(extra)] = w['total_s']
        added[bool(extra)] = w['total_s'] - w['access_s'] - w['sync_s']
    assert totals[False] >= DELAY and added[False] < 1.5 * DELAY, (totals, added)
    assert totals[True] >= 2 * DELAY, totals
    assert list(tmp_path.iterdir()) == []


# ---- ReFrame on local-cluster: placement from the configuration -----------------------------------------
@pytest.mark.reframe
def test_benchio_and_scaling_span_nodes_through_reframe(cluster, iobench, tmp_path):
    """BenchIO at 6 ranks and BenchIOScaling at 6 ranks, posix fpp, on local-cluster: the partition
    states 4 cores per node, so the jobs ask for at most 4 tasks per node on exclusive nodes: 2 nodes."""
    report = tmp_path / 'report.json'
    res = run(['reframe', '-C', SETTINGS, '-c', REPO / 'reframe_checks' / 'benchio.py',
               '-c', REPO / 'reframe_checks' / 'scaling.py', '--system', 'local-cluster', '-r',
               '-n', r'^(BenchIO|BenchIOScaling)\b.*posix:fpp', '-P', 'ranks=6', '-P', 'size=16',
               '--prefix', tmp_path / 'rf', '--report-file', report, '--nocolor',
               '--max-retries', 2],   # launch_crashed: ReFrame cannot tell it apart, so it retries any failure
              timeout=900, cwd=tmp_path)
    assert res.returncode == 0, res.stdout[-4000:]
    last = {c['name']: c for r in json.loads(report.read_text())['runs'] for c in r['testcases']}  # retries last
    cases = [c for name, c in last.items() if not name.startswith('IOBenchBuild')]
    names = {c['name'].split()[0] for c in cases}
    assert names == {'BenchIO', 'BenchIOScaling'}, names
    for case in cases:
        assert case['result'] == 'pass', case.get('fail_reason')
        stage = pathlib.Path(case['outputdir'])   # job script and result.json are kept there
        script = (stage / 'rfm_job.sh').read_text()
        assert re.search(r'#SBATCH --ntasks-per-node=4\b', script), script
        assert '#SBATCH --exclusive' in script, script
        doc = json.loads((stage / 'result.json').read_text())
        assert doc['ranks'] == 6 and doc['nodes'] == 2, doc['hosts']
        # Slurm spreads 6 tasks at most 4 per node over the two nodes it allocated (3 + 3)
        assert check_placement(doc) == 6


@pytest.mark.parametrize('args, named', [(['--nodes', '99'], "'99'"), (['--nodes'], "''"),
                                         (['--bogus'], "'--bogus'")])
def test_start_bad_usage_is_one_line(args, named):
    res = run(['bash', START, *args], timeout=30)
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0] and lines[0].startswith('slurm: error:'), res.stderr
