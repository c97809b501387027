"""One phase's common factor judged against the other's (postprocess/detect/suite.py contrasts):
simulated run records through the real History, detector and confirmation, fixed seeds.

The machine's own state (a faster VM tonight, a burst) moves the writes and reads of every check
together; real nights here: each factor wanders 4-9 % between nights, their difference 2-4 %
(runs 16-19, docs/verdicts.md). So a stack slower at writes only is seen against the same
night's reads, when its writes alone sit inside the machine's wander:

* writes -15 % on nights the machine ran +6 %: no `stack` write finding, one contrast finding
  (`params` `against=read`), `since` its first night, confirmed by a re-run under the fault and
  refuted by one without it;
* reads +20 % with writes steady: no write regression (the other phase got faster);
* both phases -20 %: the factors say it, the contrast says nothing;
* a machine wandering 8 % a night with no fault: no contrast regression on any judged night.
"""
import datetime
import sys
from pathlib import Path

import numpy as np

from postprocess.common.findings import many_label
from postprocess.detect import verdict
from postprocess.detect.suite import detect
from postprocess.history.store import History
from tests.support.simruns import night_of, red, runs, START

REPO = Path(__file__).resolve().parent.parent

NIGHTS = range(12)


def machine(seed, wander=0.06, faster=()):
    """The machine's state per night (every iobench check, both phases; fio is the filesystem's
    reading and stays): lognormal ``wander``, the nights ``faster`` +6 % above its usual."""
    rng = np.random.default_rng(seed)
    state = {n: float(np.exp(rng.normal(0.0, wander))) for n in range(20)}
    usual = float(np.median([state[n] for n in range(10)]))
    state.update({n: 1.06 * usual for n in faster})
    return lambda n, b, p, c: 1.0 if b == 'fio' else state[n]


def contrasts(findings, night):
    return [f for f in red(findings, night) if f.get('against')]


def factors_red(findings, night):
    return [f for f in red(findings, night) if f['scope'] in ('stack', 'system')
            and not f.get('against')]


def writes_slower(m):
    return lambda n, b, p, c: m(n, b, p, c) * (0.85 if n >= 10 and p == 'write' and b != 'fio'
                                               else 1.0)


def test_writes_slower_on_a_faster_night_are_a_write_path_finding_against_the_reads():
    m = machine(2, faster=(10, 11))
    found = detect(History(runs(NIGHTS, factor=writes_slower(m))))
    for night in (10, 11):
        assert not factors_red(found, night_of(night)), red(found, night_of(night))
    got = contrasts(found, night_of(11))
    assert [(f['scope'], f['phase'], f['params'], f['against']) for f in got] == \
        [('stack', 'write', 'against=read', 'read')], red(found, night_of(11))
    f = got[0]
    assert f['since'] == night_of(10)
    assert -0.22 < f['change'] < -0.08 and f['against_change'] > 0
    assert 'write path of the I/O stack' in many_label(f) and 'against their reads' in many_label(f)


def _rerun(found, factor, night):
    """The checks nightly.sh re-runs for tonight's flags, drawn again two hours later."""
    flagged = [f for f in found if f['night'] == night_of(night)]
    ran = {f['check'] for f in flagged if f['check'] != '*'}
    report = {'runs': [{'testcases': [{'result': 'pass', 'name': c, 'system': 'sim',
                                       'partition': 'p1', 'environ': 'gnu', 'hashcode': c}
                                      for c in ran]}]}
    chosen = {t.lstrip('/') for t in verdict.rerun_targets(flagged, report)}
    later = runs([night], factor=factor, seed=77)
    return [dict(r, time=r['time'] + datetime.timedelta(hours=2)) for r in later
            if r['check'] in chosen], flagged


def test_the_contrast_flag_is_confirmed_by_a_rerun_under_the_fault_and_refuted_without_it():
    m = machine(2, faster=(10, 11))
    history = runs(NIGHTS, factor=writes_slower(m))
    upto = [r for r in history if r['time'] < START + datetime.timedelta(days=11)]
    tonight = detect(History([dict(r) for r in upto]), latest_only=True)
    assert contrasts(tonight, night_of(10)), red(tonight, night_of(10))
    for factor, expect in ((writes_slower(m), ('regression', 'confirmed')),
                           (m, ('unconfirmed', 'not reproduced'))):
        rerun, flagged = _rerun(tonight, factor, 10)
        assert len({r['check'] for r in rerun}) >= 3
        judged = verdict.confirm(upto, rerun, [dict(f) for f in flagged])
        got = [(f['status'], f.get('confirmation')) for f in judged if f.get('against')
               and f['phase'] == 'write']
        assert got == [expect], [f for f in judged if f.get('against')]


def test_reads_faster_with_writes_steady_is_no_write_regression():
    """Six machines: on about half of these nights the writes' own factor leans low by chance, so
    'writes fell' alone would call the read gain a write regression."""
    for seed in range(6):
        m = machine(seed)
        reads = lambda n, b, p, c: m(n, b, p, c) * (1.2 if n >= 10 and p == 'read' else 1.0)  # noqa: E731,B023
        found = detect(History(runs(NIGHTS, factor=reads, seed=seed)))
        for night in (10, 11):
            assert not [f for f in red(found, night_of(night)) if f['scope'] != 'series'], \
                (seed, red(found, night_of(night)))


def test_both_phases_slower_are_the_factors_not_a_contrast():
    m = machine(5)
    both = lambda n, b, p, c: m(n, b, p, c) * (0.8 if n >= 10 and b != 'fio' else 1.0)  # noqa: E731
    found = detect(History(runs(NIGHTS, factor=both)))
    night = night_of(11)
    assert {f['phase'] for f in factors_red(found, night)} == {'write', 'read'}, red(found, night)
    assert not contrasts(found, night)


def test_a_wandering_machine_without_a_fault_has_no_contrast_regression():
    for seed in range(4):
        found = detect(History(runs(range(14), seed=seed, factor=machine(10 + seed, wander=0.08))))
        late = [f for f in found if f.get('against') and f['status'] == 'regression'
                and f['night'] >= night_of(3)]
        assert not late, late


def test_the_terminal_names_the_write_path(tmp_path):
    """The contrast finding as nightly.sh shows it: one I/O STACK line with both phases' moves."""
    import json
    import subprocess
    m = machine(2, faster=(10, 11))
    f = contrasts(detect(History(runs(NIGHTS, factor=writes_slower(m)))), night_of(11))[0]
    f = dict(f, confirmation='confirmed')
    run = tmp_path / 'run'
    (run / 'post').mkdir(parents=True)
    (run / 'post' / 'detect.json').write_text(json.dumps([f]))
    (run / 'post' / 'verdict.json').write_text(json.dumps(
        verdict.summary([f], 'done')))
    proc = subprocess.run([sys.executable, '-m', 'postprocess', 'summary', '--run', str(run)],
                          cwd=REPO, capture_output=True, text=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith('  I/O STACK')]
    assert len(lines) == 1, proc.stdout + proc.stderr
    assert 'iobench writes against their reads (writes -' in lines[0], lines[0]
    assert 'the write path of the I/O stack' in lines[0] and f'since {night_of(10)}' in lines[0]
