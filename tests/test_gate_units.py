"""The gate's parts that need no measurement: its statistics, the parts of two real stacks (as
ReFrame resolves iobench_lib/gate_stacks.py), their mixes, bad usage, and `compare` failing closed
on the committed synthetic perflogs. The runs themselves: tests/test_gate.py."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gate import pairs, stacks

REPO = Path(__file__).resolve().parent.parent
SETTINGS = REPO / 'configs' / 'settings.py'
SYNTH = REPO / 'tests' / 'fixtures' / 'perflogs' / 'synthetic'


def run(*command):
    """``python -m <command...>`` from the checkout: ('postprocess', 'compare', ...), ('gate', ...)."""
    return subprocess.run([sys.executable, '-m', *map(str, command)], cwd=REPO,
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
    # at the spread seen, that many pairs from the same distribution decide 4 times in 5: for
    # "same", and for "slower" (a -15 % change), where the interval's exact coverage at small n
    # (97.9 % at 10 pairs for a 90 % level) asks for more pairs than the nominal z would
    decided = sum(pairs.judge(list(np.exp(rng.normal(0, 0.12, nl))))['status'] == 'same'
                  for _ in range(300))
    assert decided >= 0.7 * 300, (nl, decided)
    slow = list(np.exp(np.log(0.85) + np.array([-1, 0, 1]) * 0.15 / pairs.MAD_NORMAL))
    ns = pairs.pairs_needed(slow)           # a spread (MAD-based sd) of 0.15 around 0.85
    assert 12 <= ns <= 30, ns
    decided = sum(pairs.judge(list(np.exp(rng.normal(np.log(0.85), 0.15, ns))))['status']
                  == 'slower' for _ in range(300))
    assert decided >= 0.7 * 300, (ns, decided)


def test_exit_status_never_zero_without_a_judgement():
    assert pairs.exit_status(['same', 'faster']) == 0
    assert pairs.exit_status([]) == 4
    assert pairs.exit_status(['same', 'cannot tell']) == 4
    assert pairs.exit_status(['cannot tell', 'slower', 'same']) == 3
    assert pairs.exit_status(['slower', 'failed']) == 1


# ---- the bisection's rule, on judgements as its stages return them ---------------------
KEY = ('BenchIO @local:default', 'write')
QUIET = (1.0, 0.97, 1.03)


def _named(monkeypatch, *stages):
    """{part: how} that bisect._bisect names from these stages' (ratio, lo, hi) per mix."""
    from types import SimpleNamespace
    from gate import bisect
    parts = [stacks.Part('env', k, None, '1') for k in ('X', 'Y', 'Z')]
    todo = iter(stages)

    def row(ratio, lo, hi):
        return {'check': KEY[0], 'phase': KEY[1], 'ratio': ratio, 'lo': lo, 'hi': hi}

    def stage(session, a_name, a, b, takes, prefix, only, select, cfg):
        assert only == {KEY}
        return {'kind': prefix, 'mixes': [{'env': f'mix{i}', 'label': prefix,
                                           'parts': [p.name for p in taken], 'results': [row(*r)]}
                                          for i, (taken, r) in enumerate(zip(takes, next(todo)))]}
    monkeypatch.setattr(bisect, '_stage', stage)
    cfg = SimpleNamespace(pairs=8, tolerance=0.05, level=0.90, max_parts=8)
    doc = bisect._bisect({'parts': [], 'stages': [], 'named': []}, None, ('A', 'B'), {}, {}, parts,
                         {KEY}, [], [dict(row(0.8, 0.75, 0.85), status='slower')], cfg)
    assert len(doc['stages']) == len(stages)         # stage 2 only when stage 1 left it open
    return {n['part']: n['how'] for n in doc['named']}


def test_bisect_names_alone_needed_and_interacting(monkeypatch):
    # X's mix is slower and carries the change; Z's is surely below 1 but a sliver (5 %) of it
    assert _named(monkeypatch, [(0.8, 0.76, 0.84), QUIET, (0.99, 0.985, 0.995)]) == \
        {'env X': 'alone'}
    # stage 1 too noisy to be sure; without Y (only) the slowdown is gone: needed, not interacting
    assert _named(monkeypatch, [(0.85, 0.6, 1.1), QUIET, QUIET],
                  [(0.8, 0.7, 0.9), QUIET, (0.8, 0.7, 0.9)]) == {'env Y': 'needed'}
    # no mix of one part is slower, and B without X or without Y is not: they interact
    assert _named(monkeypatch, [QUIET] * 3, [QUIET, QUIET, (0.8, 0.7, 0.9)]) == \
        {'env X': 'interacting', 'env Y': 'interacting'}
    assert _named(monkeypatch, [QUIET] * 3, [(0.8, 0.7, 0.9)] * 3) == {}


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
    (['--a', 'mpi-gnu', '--b', 'mpi-gnu', '--effect', 'abc'], "'abc'"),
    (['--a', 'mpi-gnu', '--b', 'mpi-gnu', '--effect', '150%'], "'150%'"),
    (['--a', 'mpi-gnu', '--b', 'mpi-gnu', '--effect', '2%'], "--effect must be at least"),
    (['--a', 'mpi-gnu', '--b', 'mpi-gnu', '--pairs', 'often'], "'often'"),
    (['--a', 'mpi-gnu', '--b', 'mpi-gnu', '--pairs', 'auto', '--max-pairs', '0'], "'0'"),
    # the bisection's bound is checked before anything runs
    (['--a', 'mpi-gnu-romio', '--b', 'mpi-gnu-next', '--bisect', '--max-parts', '2'],
     'differ in 3 parts, more than --max-parts 2'),
])
def test_gate_bad_usage(tmp_path, args, says):
    out = tmp_path / 'gate'
    proc = run('gate', *args, '--out', out)
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
    proc = run('postprocess', 'compare', '--perflogs', SYNTH, '--before', before, '--after', after, '--json', out)
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
    ok, ok_doc = _compare(tmp_path, '2026-11-01..2026-11-06', '2026-11-07')   # 5+ nights before
    assert ok.returncode == 0 and ok_doc['status'] == 'ok' and not ok_doc['cannot_tell']
    assert ok_doc['series'] and all(s['status'] == 'ok' for s in ok_doc['series'])


def test_later_slots_are_pinned_to_the_nodes_of_the_first():
    from gate.runs import _pin
    case = {'fixture': False, 'scheduler': 'slurm', 'job_nodelist': ['nid002', 'nid001']}
    build = {'fixture': True, 'scheduler': 'slurm', 'job_nodelist': ['nid009']}
    assert _pin([case, dict(case), build]) == 'nid001,nid002'
    # checks on different nodes: no one node list fits all, the scheduler places each run
    assert _pin([case, dict(case, job_nodelist=['nid003'])]) == ''
    assert _pin([dict(case, scheduler='local', job_nodelist=['vm'])]) == ''


def test_a_check_whose_build_failed_is_failed_not_a_missing_figure():
    """ReFrame reports a check whose fixture (the iobench build) failed as 'fail_deps' with no
    figures: a failure of that stack (exit 1), not 'cannot tell' for want of a phase."""
    from gate import judge
    from gate.runs import _figures
    ok = {'name': 'BenchIO', 'system': 'local', 'partition': 'default', 'result': 'pass',
          'iob_reps': '', 'perfvalues': {
        'local:default:write': [500.0, None, None, None, 'MiB/s']}}
    assert _figures(ok, {}) == dict(_figures(ok, {}), result='pass', phases={'write': 500.0})
    assert _figures(dict(ok, result='fail', fail_phase='performance'), {})['result'] == 'pass'
    dep = _figures(dict(ok, result='fail_deps', fail_reason=None, perfvalues={}), {})
    assert dep['result'] == 'fail' and 'fixture' in dep['reason'] and dep['phases'] == {}
    good = [{'checks': {'BenchIO': _figures(ok, {})}}] * 5
    rows = judge.arm(good, [{'checks': {'BenchIO': dep}}] * 5, 0.05, 0.90)
    assert [(r['status'], r['phase']) for r in rows] == [('failed', 'write')]
    assert 'failed under B in 5 of 5' in rows[0]['reason']
    assert pairs.exit_status([r['status'] for r in rows]) == 1
