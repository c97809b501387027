"""The nightly verdict as a whole (postprocess/detect/): groups, the confirmation re-run, the CLI,
and that a verdict is a function of its data (judging a past night again gives what that
night's nightly said). Histories are simulated run records (lognormal repetitions, fixed seeds)
through the real History and detector; the CLI tests run `python -m postprocess detect|verdict`
on perflogs in the ReFrame format. tests/test_verdict_rules.py tests one level's rules."""
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from postprocess.common.stats import hodges_lehmann
from postprocess.detect import verdict
from postprocess.detect.suite import detect
from postprocess.history.perflog import read_perflogs
from postprocess.history.store import History
from tests.support.simruns import night_of, red, runs, runs_for, write_perflogs

REPO = Path(__file__).resolve().parent.parent
SYNTH = REPO / 'tests' / 'fixtures' / 'perflogs' / 'synthetic'


def test_hodges_lehmann_is_the_median_of_walsh_averages_and_ignores_a_burst():
    x = [1.0, 2.0, 4.0, 7.0]
    walsh = sorted((x[i] + x[j]) / 2 for i in range(4) for j in range(i, 4))
    assert hodges_lehmann(x) == pytest.approx(np.median(walsh))
    assert abs(hodges_lehmann([10.0, 10.1, 9.9, 10.05, 1000.0]) - 10.05) < 0.1


def slowed(nights, backends=('posix', 'mpiio', 'hdf5'), by=0.75, phase='write', fio=False):
    """A factor for tests.support.simruns.runs: ``backends``' ``phase`` slower by ``by`` on
    ``nights`` (and fio too when ``fio``)."""
    def factor(night, backend, ph, c):
        hit = (backend in backends or (fio and backend == 'fio')) and ph == phase
        return by if hit and night in nights else 1.0
    return factor


def test_a_step_of_every_check_is_one_stack_finding_red_on_its_third_night():
    found = detect(History(runs(range(23), factor=slowed({20, 21, 22}))), latest_only=False)
    stack = [f for f in found if f['scope'] == 'stack' and f['phase'] == 'write']
    status = {f['night']: f['status'] for f in stack}
    assert [status[night_of(n)] for n in (20, 21, 22)] == ['noisy', 'degraded', 'regression']
    last = next(f for f in stack if f['night'] == night_of(22))
    assert last['since'] == night_of(20) and -0.3 < last['change'] < -0.2
    # read on its bandwidth-bound members (phases of 0.1 s or more), every one of which fell
    assert last['moved'] == last['members'] >= 3 and last['factor_min_seconds'] == 0.1
    assert not [f for f in found if f['scope'] != 'series' and f['status'] == 'regression'
                and f['phase'] == 'read']
    # fio fell with them: the filesystem or the partition
    found = detect(History(runs(range(23), factor=slowed({20, 21, 22}, fio=True))),
                   latest_only=True)
    assert [f['scope'] for f in found if f['scope'] in ('stack', 'system')
            and f['phase'] == 'write'] == ['system']


def test_one_librarys_step_is_its_group_not_the_stack():
    found = detect(History(runs(range(23), factor=slowed({20, 21, 22}, backends=('hdf5',)))),
                   latest_only=True)
    groups = {(f['scope'], f['params'], f['phase']): f['status'] for f in found
              if f['scope'] != 'series'}
    assert groups[('group', 'backend=hdf5', 'write')] == 'regression'
    assert groups[('stack', '', 'write')] == 'ok'
    assert groups[('group', 'backend=posix', 'write')] == 'ok'


def test_clean_nights_of_a_large_suite_are_calm():
    """41 series, 30 nights, repetitions of 15 % and no change: no night is red."""
    found = detect(History(runs_for(range(30))))
    assert not [f for f in found if f['status'] == 'regression']
    noisy = sum(f['status'] in ('noisy', 'degraded') for f in found)
    assert noisy <= 0.01 * len(found)


def test_judging_a_past_night_again_gives_what_its_nightly_said():
    """Night after night, the nightly (latest night of a history that ends there) and one pass
    over the whole history (--all-nights) give every series and group the same finding."""
    factor = slowed({16, 17, 18, 19}, backends=('hdf5',), by=0.7)
    records = runs(range(24), factor=factor)
    everything = detect(History(records))
    by_night = {}
    for f in everything:
        by_night.setdefault(f['night'], []).append(f)
    for n in range(24):
        nightly = detect(History([r for r in records if r['time'].date().isoformat()
                                  <= night_of(n)]), latest_only=True)
        want = {_key(f): _said(f) for f in by_night[night_of(n)]}
        assert {_key(f): _said(f) for f in nightly if f['night'] == night_of(n)} == want, n
    assert red(everything, night_of(18))


def _key(f):
    return (f['scope'], f['check'], f['params'], f['phase'])


def _said(f):
    return (f['status'], f['since'], None if f['change'] is None else round(f['change'], 12),
            None if f['detectable'] is None else round(f['detectable'], 12))


def test_an_acceptance_counts_from_the_night_it_was_recorded():
    records = runs(range(26), factor=slowed(set(range(18, 26)), backends=('hdf5',), by=0.6))
    rec = {'id': 'a', 'system': 'sim', 'partition': None, 'checks': ['hdf5'],
           'since': night_of(18), 'at': night_of(23) + 'T09:00:00+00:00', 'reason': 'new HDF5'}
    found = detect(History(records), acceptances=[rec])
    hdf5 = {f['night']: f['status'] for f in found if f['params'] == 'backend=hdf5'
            and f['phase'] == 'write'}
    assert hdf5[night_of(22)] == 'regression'           # before it was recorded: as it was said
    assert hdf5[night_of(25)] in ('ok', 'insufficient history')


# ---- the CLI: detect, the re-run as data, the verdict ----------------------------------------------

def pp(*args):
    env = dict(os.environ)
    env.pop('IOREGRESS_THIS_RUN', None)
    return subprocess.run([sys.executable, '-m', 'postprocess', *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, env=env, timeout=300)


def report_for(findings):
    cases = {(f['system'], f['partition'], f['environ'], f['check']) for f in findings
             if f['scope'] == 'series'}
    return {'runs': [{'testcases': [
        {'system': s, 'partition': p, 'environ': e, 'display_name': c, 'name': c,
         'result': 'pass', 'hashcode': f'{i:08x}', 'repeat': 3}
        for i, (s, p, e, c) in enumerate(sorted(cases))]}]}


def far_night(tmp_path, by=0.5):
    """A results tree of 15 quiet nights whose last one has HDF5's writes ``by`` slower."""
    records = runs(range(15), factor=slowed({14}, backends=('hdf5',), by=by))
    write_perflogs(tmp_path / 'results' / 'perflogs', records)
    return tmp_path / 'results'


def rerun_of(results, by, name='run14'):
    """RESULTS/runs/NAME/confirm/perflogs: the HDF5 checks of the last night measured again,
    ``by`` their usual level, minutes after the night's run."""
    again = [r for r in runs(range(15), factor=slowed({14}, backends=('hdf5',), by=by))
             if r['time'].date().isoformat() == night_of(14) and 'hdf5' in r['params']]
    for r in again:
        r['time'] += datetime.timedelta(minutes=30)
    return write_perflogs(results / 'runs' / name / 'confirm' / 'perflogs', again)


def test_a_far_night_is_re_run_and_its_reproduced_rerun_makes_it_red(tmp_path):
    results = far_night(tmp_path)
    det, out = tmp_path / 'detect.json', tmp_path / 'verdict.json'
    rerun, runs_file = tmp_path / 'rerun.txt', tmp_path / 'rerun.runs'
    proc = pp('detect', '--perflogs', results / 'perflogs', '--json', det)
    assert proc.returncode == 0, proc.stderr                   # one night: not red by itself
    findings = json.loads(det.read_text())
    group = next(f for f in findings if f['params'] == 'backend=hdf5' and f['phase'] == 'write')
    assert group['status'] in ('noisy', 'degraded') and group['far'] and group['detectable'] < 0
    report = tmp_path / 'report.json'
    report.write_text(json.dumps(report_for(findings)))
    proc = pp('verdict', '--detect', det, '--report', report, '--json', out,
              '--rerun-list', rerun, '--rerun-runs', runs_file, '--confirm-repeat', '9')
    assert proc.returncode == 0 and json.loads(out.read_text())['confirmation'] == 'pending'
    assert len(rerun.read_text().split()) == 6 and runs_file.read_text().strip() == '3'
    confirm = rerun_of(results, 0.5)
    common = ['verdict', '--detect', det, '--report', report, '--json', out,
              '--confirm-perflogs', confirm, '--perflogs', results / 'perflogs', '--system', 'sim']
    proc = pp(*common)
    doc = json.loads(out.read_text())
    assert proc.returncode == 3 and doc['confirmation'] == 'done', proc.stdout + proc.stderr
    g = next(f for f in doc['findings'] if f['params'] == 'backend=hdf5' and f['phase'] == 'write')
    assert g['status'] == 'regression' and g['confirmation'] == 'confirmed'
    assert g['since'] == night_of(14)
    # later nights read that re-run as the night's data: detect --runs says the same
    proc = pp('detect', '--perflogs', results / 'perflogs', '--runs', results / 'runs')
    assert proc.returncode == 1 and 'REGRESSION' in proc.stdout


def test_an_acceptance_counts_whichever_source_the_history_is_read_from(tmp_path):
    """<results>/accepted.jsonl judges the series it names from the store (the nightly's source),
    the perflogs and the results DB alike: the results tree is the parent of each."""
    records = runs(range(26), factor=slowed(set(range(18, 26)), backends=('hdf5',), by=0.6))
    results = tmp_path / 'results'
    write_perflogs(results / 'perflogs', records)
    imported = pp('import', '--perflogs', results / 'perflogs')
    assert imported.returncode == 0, imported.stderr
    rec = {'schema': 'ioregress-accept/1', 'action': 'accept', 'id': 'a1', 'system': 'sim',
           'partition': None, 'checks': ['hdf5'], 'since': night_of(18), 'reason': 'new HDF5',
           'by': 'test', 'at': night_of(23) + 'T09:00:00+00:00'}
    for source in (['--store', results / 'store'], ['--perflogs', results / 'perflogs']):
        said = {}
        for accepted in (False, True):
            (results / 'accepted.jsonl').write_text(json.dumps(rec) + '\n' if accepted else '')
            proc = pp('detect', *source, '--system', 'sim', '--json', tmp_path / 'd.json')
            assert proc.returncode in (0, 1), proc.stderr
            said[accepted] = [f for f in json.loads((tmp_path / 'd.json').read_text())
                              if f['scope'] == 'series' and 'hdf5' in f['params']
                              and f['phase'] == 'write']
        assert said[False] and all(f['status'] == 'regression' for f in said[False]), source
        assert all(f['status'] != 'regression' and f['accepted']['reason'] == 'new HDF5'
                   for f in said[True]), source


def test_a_rerun_that_reads_usual_leaves_a_noisy_night(tmp_path):
    results = far_night(tmp_path)
    det, out = tmp_path / 'detect.json', tmp_path / 'verdict.json'
    pp('detect', '--perflogs', results / 'perflogs', '--json', det)
    report = tmp_path / 'report.json'
    report.write_text(json.dumps(report_for(json.loads(det.read_text()))))
    confirm = rerun_of(results, 1.0)
    proc = pp('verdict', '--detect', det, '--report', report, '--json', out, '--confirm-perflogs',
              confirm, '--perflogs', results / 'perflogs', '--system', 'sim')
    doc = json.loads(out.read_text())
    assert proc.returncode == 0 and doc['status'] == 'ok' and doc['regressions'] == 0
    g = next(f for f in doc['findings'] if f['params'] == 'backend=hdf5' and f['phase'] == 'write')
    assert g['status'] == 'noisy' and g['confirmation'] == 'not reproduced'


def test_rerun_targets_are_the_far_nights_members_that_fell_most_never_a_rate():
    def series(check, params, change, seconds=0.3):
        return {'system': 'local', 'partition': 'default', 'environ': 'gnu', 'check': check,
                'params': params, 'phase': 'write', 'scope': 'series', 'status': 'ok',
                'change': change, 'phase_seconds': seconds, 'night': '2026-01-13'}
    members = [series(f'BenchIO %io={i}', f'backend=posix,mode=fpp,pattern=benchio,size={i}', c)
               for i, c in enumerate((0.0, -0.21, -0.22, -0.23, -0.24, -0.25, -0.26, -0.27))]
    short = series('BenchIO %io=short', 'backend=posix,mode=fpp,pattern=benchio,size=64', -0.5,
                   0.01)
    rate = series('MDEmptyFiles', 'backend=posix,filesize=0,mode=fpp,pattern=mdfiles', -0.5)
    stack = dict(series('*', '', -0.24), scope='stack', status='noisy', far=True,
                 factor_min_seconds=0.1, check='*', environ='*')
    keys = {k[3] for k in verdict._rerun_keys(members + [short, rate, stack])}
    assert keys == {f'BenchIO %io={i}' for i in range(2, 8)}
    stack['filesystem_busy'] = True             # fio fell too: a re-run cannot tell
    assert not verdict._rerun_keys(members + [stack])


def test_detect_json_has_the_contract_fields():
    findings = detect(History(read_perflogs(SYNTH)[0]), latest_only=True)
    for f in findings:
        assert {'system', 'partition', 'environ', 'check', 'params', 'phase', 'night', 'status',
                'median', 'history_median', 'change', 'scope', 'since', 'z', 'p', 'n',
                'history_nights', 'detectable', 'far', 'filesystem_busy',
                'confirmation'} <= set(f), f
        assert f['scope'] in ('series', 'system', 'stack', 'group')
        assert f['status'] in ('regression', 'degraded', 'noisy', 'improvement', 'ok',
                               'insufficient history')


@pytest.mark.parametrize('args, words', [
    (['--detect', '{t}/nope.json', '--report', '{t}/r.json', '--json', '{t}/v.json'],
     "no such detect JSON '{t}/nope.json'"),
    (['--detect', '{t}/bad.json', '--report', '{t}/r.json', '--json', '{t}/v.json'],
     "cannot read detect JSON '{t}/bad.json'"),
    (['--detect', '{t}/d.json', '--report', '{t}/r.json', '--json', '{t}/v.json',
      '--confirm-perflogs', '{t}'], '--confirm-perflogs needs the history (--store DIR, --perflogs DIR or --db FILE) and --system NAME'),
    (['--detect', '{t}/d.json', '--report', '{t}/r.json', '--json', '{t}/v.json',
      '--set', 'window=lots'], "bad value for window: 'lots'"),
])
def test_verdict_bad_input_one_line_exit_2_nothing_written(tmp_path, args, words):
    (tmp_path / 'bad.json').write_text('{not json')
    (tmp_path / 'd.json').write_text('[]')
    (tmp_path / 'r.json').write_text('{"runs": []}')
    fill = [a.replace('{t}', str(tmp_path)) for a in args]
    proc = pp('verdict', *fill)
    assert proc.returncode == 2 and proc.stderr.count('\n') == 1, proc.stderr
    assert words.replace('{t}', str(tmp_path)) in proc.stderr and 'Traceback' not in proc.stderr
    assert not (tmp_path / 'v.json').exists()
