"""`python -m gate` end to end: real ReFrame runs of a real check under two stacks.

* too few pairs: every check and phase says cannot tell, with how many pairs would decide, and the
  gate exits 4; its page opens in headless Chromium at 1280 px with a row and a strip of points
  per check and phase;
* an A/A gate (one environment on both sides) is never slower: same (exit 0) or, where the
  machine's noise does not allow it, cannot tell (exit 4) (slow);
* three parts differ (Open MPI's MPI-IO implementation, a default MPI-IO hint, and LD_PRELOAD of
  tests/support/iofault.c, which makes every iobench write slower): the gate says slower and
  --bisect names env LD_PRELOAD and only it (slow).
Data go to /dev/shm here: on this shared machine other jobs' disk I/O moves a small check's
bandwidth by a factor of 2-5 between ReFrame runs (docs/gate.md, "On this machine"), which would
leave every verdict at cannot tell and test the disk, not the gate. bench/gate_bisect.py measures
the gate at the +-5 % tolerance (its --scratch chooses the filesystem).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import gate_bisect        # the fault stacks' configuration

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.reframe
CHECK = 'BenchIO%size=64%ranks=2%stripe=default%io=posix:fpp'
#: the slow tests judge figures: phases of ~0.2 s, not ~25 ms (whose pair ratios on this loaded
#: VM reach 0.4 and 7, where no 8 pairs decide anything)
BIG = gate_bisect.CHECK


def gate(tmp_path, *args, name=CHECK, config=None, repeat=3):
    out = tmp_path / 'gate'
    scratch = Path('/dev/shm') / f'ioregress-gate-{os.getpid()}-{tmp_path.name}'
    scratch.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, IOREGRESS_SCRATCH=str(scratch))
    cmd = [sys.executable, '-m', 'gate', '--system', 'local', '--name', name,
           '--out', str(out), *args] + (['--config', str(config)] if config else []) + \
        ['--', '-S', f'repeat={repeat}']
    try:
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=3600)
    finally:
        subprocess.run(['rm', '-rf', str(scratch)])
    doc = json.loads((out / 'gate.json').read_text()) if (out / 'gate.json').exists() else None
    return proc, doc, out


def test_too_few_pairs_cannot_tell_and_the_page_shows_it(tmp_path, browser):
    proc, doc, out = gate(tmp_path, '--a', 'mpi-gnu', '--b', 'mpi-gnu-romio', '--pairs', '2',
                          repeat=1)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert doc['exit'] == 4 and {r['phase'] for r in doc['results']} == {'write', 'read'}
    for r in doc['results']:
        assert r['status'] == 'cannot tell' and r['n'] == 2 and r['lo'] is None
        assert r['needed'] == '>1000' or r['needed'] >= 5, r
        assert all(a > 0 and b > 0 for a, b in r['pairs'])
    # A B | B A: two blocks after one warm-up per stack, each its own ReFrame run
    assert [(s['env'], s['label']) for s in doc['slots']] == [
        ('mpi-gnu', 'warm-up'), ('mpi-gnu-romio', 'warm-up'), ('mpi-gnu', 'pair 1'),
        ('mpi-gnu-romio', 'pair 1'), ('mpi-gnu-romio', 'pair 2'), ('mpi-gnu', 'pair 2')]
    assert 'GATE: CANNOT TELL (exit 4)' in proc.stdout and 'pairs would' in proc.stdout
    # B's runs really ran under romio: the environment's variable reached the job
    romio = [s for s in doc['slots'] if s['env'] == 'mpi-gnu-romio'][-1]
    script = next((out / romio['dir']).rglob('rfm_job.sh')).read_text()
    assert 'export OMPI_MCA_io=romio321' in script

    browser.get((out / 'index.html').as_uri())
    assert browser.find_element('id', 'verdict-h').text == 'CANNOT TELL (exit 4)'
    rows = browser.find_elements('css selector', 'tr.result')
    assert len(rows) == 2 and all(r.get_attribute('data-status') == 'cannot tell' for r in rows)
    for row in rows:
        assert len(row.find_elements('css selector', 'circle.pair')) == 2
        assert 'pairs would' in row.text
    width = browser.execute_script('return [document.documentElement.scrollWidth, '
                                   'document.documentElement.clientWidth]')
    assert width[0] <= width[1], width
    assert not [e for e in browser.get_log('browser') if e['level'] == 'SEVERE']
    browser.save_screenshot(str(tmp_path / 'gate-page.png'))


def test_pairs_auto_stops_at_its_cap_and_says_it_could_not_tell(tmp_path):
    # two pairs cannot decide anything (the sequence's first decision needs 7): the gate runs
    # its cap, no more, and fails closed; its first lines are the plan
    proc, doc, out = gate(tmp_path, '--a', 'mpi-gnu', '--b', 'mpi-gnu', '--pairs', 'auto',
                          '--max-pairs', '2', '--history', str(tmp_path / 'none'), repeat=1)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert doc['rule'] == 'sequential' and doc['pairs_run'] == 2 and doc['max_pairs'] == 2
    assert proc.stdout.startswith('plan: ') and 'pilot' in proc.stdout.splitlines()[1]
    assert [s['label'] for s in doc['slots']].count('pair 2') == 2
    for r in doc['results']:
        assert r['status'] == 'cannot tell' and r['n'] == 2
    assert 'not decided by the cap of 2 pairs' in proc.stdout
    assert 'id="plan"' in (out / 'index.html').read_text()


def test_plan_from_an_earlier_gate_says_pairs_and_time_without_running(tmp_path):
    # the earlier gate: spreads of its pairs and its slots' seconds; the plan runs no slot
    history = tmp_path / 'results'
    (history / 'gates' / 'old').mkdir(parents=True)
    select = ['-n', CHECK]
    ratios = [0.9, 1.1, 0.95, 1.05, 1.0, 0.85, 1.2, 0.97]
    key = 'BenchIO %size=64 %ranks=2 %stripe=default %io=posix:fpp @local:default'
    (history / 'gates' / 'old' / 'gate.json').write_text(json.dumps({
        'system': 'local', 'select': select,
        'slots': [{'label': 'pair 1', 'seconds': 30}] * 4,
        'results': [{'check': key, 'phase': 'write', 'pairs': [[100, 100 * r] for r in ratios]}]}))
    proc, _, out = gate(tmp_path, '--a', 'mpi-gnu', '--b', 'mpi-gnu', '--plan', '--history',
                        str(history))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith('plan: pairs to call a -15% change slower 9 times in 10')
    assert 'write: sd 0.1' in lines[1] and '(1 earlier gate(s))' in lines[1] and 'min' in lines[1]
    doc = json.loads((out / 'plan.json').read_text())
    assert doc['slots'] == [] and doc['plan'][0]['pairs'] >= 7


@pytest.mark.long
def test_aa_gate_is_never_slower(tmp_path):
    # one stack against itself: "same" where the pairs' spread allows it, "cannot tell" (exit 4,
    # with the pairs that would decide) where it does not, never slower or faster. On this VM
    # under other sessions' load the A/A pair ratios of this check spread from 0.44 to 1.69
    # (sd of their logs 0.13-0.35), so which of the two it says depends on the hour; how often
    # each comes at +-5 % is bench/gate_bisect.py --what aa's figure (docs/gate.md)
    proc, doc, _ = gate(tmp_path, '--a', 'mpi-gnu', '--b', 'mpi-gnu', '--pairs', '8',
                        '--tolerance', '0.4', name=BIG)
    statuses = [r['status'] for r in doc['results']]
    assert len(statuses) == 2 and set(statuses) <= {'same', 'cannot tell'}, proc.stdout
    assert all(0.67 < r['ratio'] < 1.5 and r['n'] == 8 for r in doc['results']), proc.stdout
    if statuses == ['same', 'same']:
        assert proc.returncode == 0 and 'GATE: PASS' in proc.stdout
    else:
        assert proc.returncode == 4 and 'pairs would' in proc.stdout, proc.stdout


@pytest.mark.long
def test_bisect_names_the_part_that_carries_the_slowdown(tmp_path):
    if not subprocess.run(['sh', '-c', 'command -v cc'], capture_output=True).returncode == 0:
        pytest.skip('no C compiler (cc) for the fault library')
    config = gate_bisect.fault_config(tmp_path, 1.0)     # every write +100 %: x0.5
    proc, doc, out = gate(tmp_path, '--a', 'gate-fault-a', '--b', 'gate-fault-b', '--pairs', '8',
                          '--tolerance', '0.15', '--bisect', config=config, name=BIG)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert {(r['phase'], r['status']) for r in doc['results']} >= {('write', 'slower')}
    bis = doc['bisect']
    assert sorted(p['name'] for p in bis['parts']) == [
        'env LD_PRELOAD', 'env OMPI_MCA_io', 'hint cb_buffer_size']
    assert [n['part'] for n in bis['named']] == ['env LD_PRELOAD'], proc.stdout
    share = [s for s in bis['shares'] if s['part'] == 'env LD_PRELOAD' and s['phase'] == 'write']
    assert share and share[0]['share'] > 0.5
    assert 'CULPRIT: env LD_PRELOAD' in proc.stdout
    # each mix took its one part: the hint's mix passed the hint, and only that mix
    mixes = {m['label']: m['env'] for m in bis['stages'][0]['mixes']}
    slot = [s for s in doc['slots'] if s['env'] == mixes['A+hint cb_buffer_size']][-1]
    result = next((out / slot['dir']).rglob('result.json'))
    assert json.loads(result.read_text())['hints_requested'] == {'cb_buffer_size': '1048576'}
