"""The gate's parts that need no measurement: its statistics, the parts of two real stacks (as
ReFrame resolves configs/systems/_stacks.py), their mixes, bad usage, and `compare` failing
closed on the committed synthetic perflogs. The runs themselves: tests/test_gate.py."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from postprocess.gate import pairs, stacks

REPO = Path(__file__).resolve().parent.parent
SETTINGS = REPO / 'configs' / 'settings.py'
SYNTH = REPO / 'tests' / 'fixtures' / 'perflogs' / 'synthetic'


def pp(*args):
    return subprocess.run([sys.executable, '-m', 'postprocess', *map(str, args)], cwd=REPO,
                          capture_output=True, text=True)


# ---- statistics -------------------------------------------------------------------------
def test_interval_is_the_binomial_order_statistics():
    x = [0.9, 0.95, 0.97, 1.0, 1.01, 1.02, 1.05, 1.3]
    lo, hi, cov = pairs.median_ci(x, 0.90)
    assert (lo, hi) == (0.95, 1.05)              # k = 2 of 8: x(2), x(7)
    assert cov == pytest.approx(1 - 2 * 9 / 256)
    assert pairs.median_ci(x[:4], 0.90) is None  # 4 pairs give no 90 % interval
    assert pairs.min_pairs(0.90) == 5 and pairs.min_pairs(0.95) == 6


def test_interval_covers_the_median_as_often_as_it_says():
    rng = np.random.default_rng(7)
    for n in (5, 8, 12):
        hits = 0
        for _ in range(4000):
            lo, hi, cov = pairs.median_ci(np.exp(rng.normal(0.0, 0.1, n)))
            hits += lo <= 1.0 <= hi
        assert hits / 4000 >= cov - 0.02, (n, hits, cov)


def test_verdicts():
    tight = [1.0 + d for d in (-0.02, -0.01, 0.0, 0.005, 0.01, 0.02, 0.01, -0.005)]
    assert pairs.judge(tight)['status'] == 'same'
    assert pairs.judge([r * 0.8 for r in tight])['status'] == 'slower'
    assert pairs.judge([r * 1.2 for r in tight])['status'] == 'faster'
    # 8 % slower: the interval straddles the tolerance's edge
    edge = pairs.judge([r * 0.95 for r in (0.9, 0.95, 1.0, 1.02, 0.93, 0.97, 0.99, 0.96)])
    assert edge['status'] == 'cannot tell' and edge['needed'] is not None
    few = pairs.judge([1.0, 1.01, 0.99])
    assert few['status'] == 'cannot tell' and few['needed'] >= 5 and few['lo'] is None


def test_pairs_needed_grows_with_spread_and_decides_when_reached():
    rng = np.random.default_rng(3)
    quiet = list(np.exp(rng.normal(0, 0.04, 6)))
    loud = list(np.exp(rng.normal(0, 0.12, 6)))
    nq, nl = pairs.pairs_needed(quiet), pairs.pairs_needed(loud)
    assert nq < nl
    # at the spread seen, that many pairs from the same distribution decide most of the time
    decided = sum(pairs.judge(list(np.exp(rng.normal(0, 0.12, nl))))['status'] == 'same'
                  for _ in range(200))
    assert decided > 100, (nl, decided)


def test_exit_status_never_zero_without_a_judgement():
    assert pairs.exit_status(['same', 'faster']) == 0
    assert pairs.exit_status([]) == 4
    assert pairs.exit_status(['same', 'cannot tell']) == 4
    assert pairs.exit_status(['cannot tell', 'slower', 'same']) == 3
    assert pairs.exit_status(['slower', 'failed']) == 1


# ---- stacks: parts and mixes of the local stacks ---------------------------------------
@pytest.fixture(scope='module')
def envs():
    return stacks.resolve('reframe', str(SETTINGS), 'local')


def test_local_next_stack_differs_in_three_parts(envs):
    a, b = envs['mpi-gnu-romio'], envs['mpi-gnu-next']
    got = {p.name: p for p in stacks.parts(a, b)}
    assert sorted(got) == ['env OMPI_MCA_io', 'extras adios2_dir', 'hint cb_buffer_size'], got
    assert (got['env OMPI_MCA_io'].a, got['env OMPI_MCA_io'].b) == ('romio321', 'ompio')
    adios2 = got['extras adios2_dir']
    assert adios2.b.endswith('adios2-2.10.1')
    # the prefix's other appearances go with it, not as parts of their own
    assert adios2.attached['cmake_prefix_path'][1] == [adios2.b]
    assert adios2.b in adios2.attached['gate_setup'][1][0]
    assert 'env OMPI_MCA_io: romio321 -> ompio' == got['env OMPI_MCA_io'].label()


def test_mixes_take_exactly_their_parts(envs):
    a, b = envs['mpi-gnu-romio'], envs['mpi-gnu-next']
    ps = {p.name: p for p in stacks.parts(a, b)}
    only_adios2 = stacks.mix(a, b, [ps['extras adios2_dir']], 'gate-mix1')
    assert stacks.parts(a, only_adios2)[0].name == 'extras adios2_dir'
    assert len(stacks.parts(a, only_adios2)) == 1
    assert only_adios2['extras']['cmake_prefix_path'] == [ps['extras adios2_dir'].b]
    assert ['OMPI_MCA_io', 'romio321'] in only_adios2['env_vars']
    everything = stacks.mix(a, b, list(ps.values()), 'gate-all')
    assert stacks.parts(b, everything) == []         # all parts taken: B itself
    assert stacks.parts(a, stacks.mix(a, b, [], 'gate-none')) == []
    assert everything['name'] == 'gate-all' and 'adios2' in everything['features']


def test_a_module_part_keeps_the_load_order():
    a = {'name': 'a', 'modules': ['PrgEnv-gnu', 'cray-mpich/8.1.25', 'cray-hdf5-parallel/1.12.2'],
         'env_vars': [['MPICH_MPIIO_HINTS', '*:romio_cb_write=enable']]}
    b = {'name': 'b', 'modules': ['PrgEnv-gnu', 'cray-mpich/8.1.28', 'cray-hdf5-parallel/1.14.3'],
         'env_vars': []}
    ps = stacks.parts(a, b)
    assert [p.name for p in ps] == ['module cray-hdf5-parallel', 'module cray-mpich',
                                    'env MPICH_MPIIO_HINTS']
    m = stacks.mix(a, b, [ps[1]], 'x')
    assert m['modules'] == ['PrgEnv-gnu', 'cray-hdf5-parallel/1.12.2', 'cray-mpich/8.1.28']
    assert m['env_vars'] == [['MPICH_MPIIO_HINTS', '*:romio_cb_write=enable']]
    assert stacks.mix(a, b, [ps[2]], 'y')['env_vars'] == []


# ---- bad usage: one line, exit 2, nothing made -------------------------------------------
@pytest.mark.parametrize('args,says', [
    (['--a', 'mpi-gnu', '--b', 'no-such-env'], "no environment 'no-such-env'"),
    (['--a', 'mpi-gnu', '--b', 'mpi-gnu', '--pairs', '0'], "'0'"),
    (['--a', 'mpi-gnu', '--b', 'mpi-gnu', '--tolerance', '5'], "'5'"),
    (['--a', 'mpi-gnu', '--b', 'mpi-gnu', '--config', '/nonexistent.py'], "'/nonexistent.py'"),
    (['--a', 'mpi-gnu', '--b', 'mpi-gnu', '--system', 'nosuch'], "nosuch"),
    # ReFrame ran and found nothing to run: the run's directory goes again
    (['--a', 'mpi-gnu', '--b', 'mpi-gnu', '--name', 'NoSuchCheck'], 'selects no check'),
    # the bisection's bound is checked before anything runs
    (['--a', 'mpi-gnu-romio', '--b', 'mpi-gnu-next', '--bisect', '--max-parts', '2'],
     'differ in 3 parts, more than --max-parts 2'),
])
def test_gate_bad_usage(tmp_path, args, says):
    out = tmp_path / 'gate'
    proc = pp('gate', *args, '--out', out)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and says in proc.stderr, proc.stderr
    assert not out.exists()


def test_gate_sh_usage():
    proc = subprocess.run([str(REPO / 'ci' / 'gate.sh'), '--a', 'mpi-gnu'], capture_output=True,
                          text=True)
    assert proc.returncode == 2 and proc.stderr.strip() == \
        'gate.sh: error: --a ENV and --b ENV are required'


# ---- compare fails closed -------------------------------------------------------------------
def _compare(tmp_path, before, after):
    out = tmp_path / f'{before}-{after}.json'
    proc = pp('compare', '--perflogs', SYNTH, '--before', before, '--after', after, '--json', out)
    return proc, json.loads(out.read_text())


def test_compare_cannot_tell_without_history(tmp_path):
    proc, doc = _compare(tmp_path, '2026-11-01', '2026-11-02')     # one night before: too few
    assert proc.returncode == 4 and doc['exit'] == 4 and doc['status'] == 'cannot tell'
    assert doc['cannot_tell'] and 'CANNOT TELL' in proc.stderr


def test_compare_cannot_tell_one_session(tmp_path):
    proc, doc = _compare(tmp_path, '2026-11-05', '2026-11-05')
    assert proc.returncode == 4 and doc['status'] == 'cannot tell'
    assert 'share 1 session' in proc.stderr and 'gate' in proc.stderr


def test_compare_still_passes_what_it_judged(tmp_path):
    ok, ok_doc = _compare(tmp_path, '2026-11-01..2026-11-04', '2026-11-05')
    assert ok.returncode == 0 and ok_doc['status'] == 'ok' and not ok_doc['cannot_tell']
    assert ok_doc['series'] and all(s['status'] == 'ok' for s in ok_doc['series'])


def test_later_slots_are_pinned_to_the_nodes_of_the_first():
    from postprocess.gate.runs import _pin
    case = {'fixture': False, 'scheduler': 'slurm', 'job_nodelist': ['nid002', 'nid001']}
    build = {'fixture': True, 'scheduler': 'slurm', 'job_nodelist': ['nid009']}
    assert _pin([case, dict(case), build]) == 'nid001,nid002'
    # checks on different nodes: no one node list fits all, the scheduler places each run
    assert _pin([case, dict(case, job_nodelist=['nid003'])]) == ''
    assert _pin([dict(case, scheduler='local', job_nodelist=['vm'])]) == ''
