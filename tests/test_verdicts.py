"""The nightly verdict (postprocess/detect/suite.py, verdict.py): the night judged as a whole.

Histories are simulated run records (lognormal repetitions, fixed seeds) fed through the real
History and detector; the CLI tests run `python -m postprocess detect|verdict` on perflogs in the
ReFrame format. Rates over many trials are measured by bench/detection.py, not here.
"""
import datetime
import json
from collections import Counter
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from postprocess.common.stats import hodges_lehmann, holm, moderated_variances
from postprocess.detect import verdict
from postprocess.detect.changepoint import change_start
from postprocess.detect.suite import detect
from postprocess.history.perflog import read_perflogs
from postprocess.history.store import History
from tests.support.simruns import flags, night_of, runs_for, START

REPO = Path(__file__).resolve().parent.parent

SYNTH = REPO / 'tests' / 'fixtures' / 'perflogs' / 'synthetic'
MiB = 2 ** 20


# ---- statistics from the field ------------------------------------------------------------------

def test_hodges_lehmann_is_the_median_of_walsh_averages_and_ignores_a_burst():
    x = [1.0, 2.0, 4.0, 7.0]
    walsh = sorted((x[i] + x[j]) / 2 for i in range(4) for j in range(i, 4))
    assert hodges_lehmann(x) == pytest.approx(float(np.median(walsh)))
    calm = np.log([100, 101, 99, 100, 102, 98, 100, 99])
    assert abs(hodges_lehmann(np.append(calm, np.log(5.0))) - hodges_lehmann(calm)) < 0.01


def test_holm_controls_the_family_not_each_test():
    p = [0.001, 0.01, 0.03, 0.5]
    assert list(holm(p, 0.05)) == [True, True, False, False]       # 0.03 > 0.05 / 2
    assert not holm([0.0002] * 1 + [0.5] * 399, 0.05)[0]            # 0.0002 > 0.05 / 400
    assert holm([0.0001] + [0.5] * 399, 0.05)[0]


def test_moderated_variances_shrink_equal_noise_and_keep_different_noise():
    rng = np.random.default_rng(3)
    equal = [float(np.var(rng.normal(0, 1, 4), ddof=1)) for _ in range(200)]
    shrunk, dof = moderated_variances(equal, [3] * 200)
    assert np.ptp(shrunk) < 0.2 * np.ptp(equal) and dof.min() > 30
    mixed = [float(np.var(rng.normal(0, s, 40), ddof=1)) for s in [0.1] * 100 + [1.0] * 100]
    kept, _ = moderated_variances(mixed, [39] * 200)
    assert np.median(kept[:100]) < 0.1 * np.median(kept[100:])


def test_a_prior_claims_no_more_than_its_series_vouch_for():
    # equal noise: the point estimate of the prior's weight is "infinitely many nights" whenever
    # the log variances happen to spread less than chi-square noise; the vouched one is bounded
    # by how well the series pin that spread down: a few short series little, many more
    rng = np.random.default_rng(5)
    few, many, point_inf = [], [], 0
    for _ in range(20):
        v = rng.chisquare(7, 24) / 7
        point_inf += moderated_variances(v, [7] * 24)[1][0] > 1e5
        few.append(moderated_variances(v, [7] * 24, vouched=1.645)[1][0] - 7)
        v = rng.chisquare(9, 400) / 9
        many.append(moderated_variances(v, [9] * 400, vouched=1.645)[1][0] - 9)
    assert point_inf >= 5
    assert max(few) < 60 and np.median(many) > 2 * np.median(few) and min(many) > 15


# ---- the night as a whole -----------------------------------------------------------------------

def test_a_moving_partition_is_one_system_finding_not_many_series():
    # everything, fio included, 20 % slower from night 12: one `system` regression per phase
    slow = runs_for(range(14), factor=lambda n, c, p: 0.8 if n >= 12 else 1.0)
    findings = detect(History(slow))
    for night in (night_of(12), night_of(13)):
        tonight = [f for f in flags(findings, night) if f['scope'] == 'system']
        assert {(f['phase'], f['status']) for f in tonight} == {
            ('write', 'regression'), ('read', 'regression')}
        # the series are judged after the common factor: at most the screen's stray flag
        # (alpha 0.1 a night, for the re-run to clear), not 82 series regressions; fio is judged
        # on its own level (the filesystem's reading: it moved)
        others = [f for f in flags(findings, night) if f['scope'] == 'series'
                  and f['check'] != 'BaselineFio']
        assert len(others) <= 1
        for f in tonight:
            assert f['since'] == night_of(12) and f['change'] == pytest.approx(-0.2, abs=0.03)
            assert -0.4 < f['fio_change'] < -0.05             # fio alone: one noisy series
            assert f['check'] == '*' and f['n'] == 41


def test_many_series_judged_as_calmly_as_few():
    # 200 checks x 2 phases + fio, nothing changes. Detection flags a night at most at its family
    # rate (the screen's alpha: a stray flag, never a burst of them), and the nightly's re-run,
    # a fresh draw with 10 repetitions, does not reproduce it: no night ends red.
    history = runs_for(range(14), checks=200, seed=7)
    findings = detect(History([dict(r) for r in history]))
    strays = flags(findings)
    per_night = Counter(f['night'] for f in strays)
    assert max(per_night.values(), default=0) <= 2, strays        # never a burst of flags
    for night in sorted({f['night'] for f in strays}):
        n = next(i for i in range(14) if night_of(i) == night)
        upto = [r for r in history if r['time'].date().isoformat() <= night]
        tonight = [f for f in findings if f['night'] == night]
        rerun = [r for r in runs_for([n], checks=200, seed=7, noise_seed=1000 + n,
                                     start=START + datetime.timedelta(hours=2))
                 if r['check'] in {f['check'] for f in flags(tonight)}]
        judged = verdict.confirm(upto, rerun, tonight)
        assert verdict.summary(judged, 'done')['regressions'] == 0, flags(judged)


def test_a_drop_is_found_persists_since_its_night_and_clears_when_gone():
    def factor(n, c, phase):
        return 0.75 if (c == 5 and phase == 'write' and 10 <= n <= 12) else 1.0
    findings = detect(History(runs_for(range(16), seed=11, factor=factor)))
    series = [f for f in findings if f['check'] == 'Sim %id=5' and f['phase'] == 'write']
    by_night = {f['night']: f for f in series}
    for n in (10, 11, 12):
        f = by_night[night_of(n)]
        assert f['status'] == 'regression' and f['since'] == night_of(10), f
        assert f['change'] == pytest.approx(-0.25, abs=0.06)
    # the changed nights never became history: night 12 is judged against nights before 10
    assert by_night[night_of(12)]['history_nights'] == by_night[night_of(10)]['history_nights']
    for n in (13, 14, 15):
        assert by_night[night_of(n)]['status'] == 'ok'
    # one series' change does not leak into the others through the common factor; elsewhere
    # only the family rate's strays (alpha a night, for the re-run to clear)
    others = [f for f in flags(findings) if f['check'] != 'Sim %id=5']
    assert not [f for f in others if f['phase'] == 'write'
                and f['night'] in (night_of(10), night_of(11), night_of(12))], others
    assert max(Counter(f['night'] for f in others).values(), default=0) <= 2, others


def test_a_drop_missed_on_its_first_night_is_red_on_its_second():
    # four checks -16 % on night 10, -20 % after: a first night below the suite-wide level
    # must not hide the second. The pooled nights' own history is the one before them: the
    # missed first night counted in the series' own spread made its flag watching (or nothing)
    # on night 11 (the code before 242fb99: two of the four still ok on night 11)
    def factor(n, c, phase):
        if c in (5, 6, 7, 8) and phase == 'write':
            return 0.84 if n == 10 else 0.8 if n >= 11 else 1.0
        return 1.0
    findings = detect(History(runs_for(range(13), checks=200, seed=4, factor=factor)))
    for c in (5, 6, 7, 8):
        f = next(f for f in findings if f['check'] == f'Sim %id={c}' and f['phase'] == 'write'
                 and f['night'] == night_of(11))
        assert f['status'] == 'regression' and f['since'] == night_of(10), f


def test_change_points_name_the_start_not_the_suspect_night_before_it():
    # levels of a flagged series: steady, one low night (9) that the test's window reached back
    # to, the real step from night 10; Otava's E-divisive names 10
    rng = np.random.default_rng(4)
    levels = {u: float(x) for u, x in enumerate(rng.normal(0.0, 0.03, 12))}
    levels[9] = -0.08
    levels.update({u: -0.25 + float(rng.normal(0, 0.03)) for u in (10, 11, 12)})
    assert change_start(levels, 12, -1, fallback=9) == 10
    # no step the flagged way inside the window: the window's start stays
    assert change_start(levels, 12, +1, fallback=9) == 9
    flat = {u: float(x) for u, x in enumerate(rng.normal(0.0, 0.03, 12))}
    assert change_start(flat, 11, -1, fallback=11) == 11
    assert change_start({0: 0.0, 1: -0.3}, 1, -1, fallback=1) == 1     # too short to split


def test_detect_is_causal_all_nights_equals_each_nightly():
    runs = runs_for(range(9), checks=12, reps=5, seed=5,
                    factor=lambda n, c, p: 0.7 if (c == 3 and n >= 7) else 1.0)
    every = detect(History(runs))
    for last in (6, 7, 8):
        upto = [r for r in runs_for(range(last + 1), checks=12, reps=5, seed=5,
                                    factor=lambda n, c, p: 0.7 if (c == 3 and n >= 7) else 1.0)]
        tonight = detect(History(upto), latest_only=True)
        expect = {(f['check'], f['phase'], f['status'], f['since'], round(f['z'] or 0, 9))
                  for f in every if f['night'] == night_of(last)}
        assert {(f['check'], f['phase'], f['status'], f['since'], round(f['z'] or 0, 9))
                for f in tonight} == expect


def test_a_burst_night_is_unconfirmed_by_the_rerun_and_a_real_drop_confirmed():
    def factor(n, c, phase):
        if phase == 'write' and n == 12 and c == 4:
            return 0.5                          # a neighbour's burst: tonight only
        if phase == 'write' and n == 12 and c == 9:
            return 0.7                          # a real change: still there at the re-run
        return 1.0
    history = runs_for(range(13), seed=21, factor=factor)
    tonight = [f for f in detect(History([dict(r) for r in history]), latest_only=True)]
    flagged = {f['check'] for f in flags(tonight)}
    assert flagged == {'Sim %id=4', 'Sim %id=9'}
    # the re-run: the two checks, 10 repetitions, two hours later, burst gone, change still on
    rerun = [r for r in runs_for([12], seed=21, noise_seed=99, factor=lambda n, c, p: 0.7 if (c == 9 and p ==
                                                                              'write') else 1.0,
                                 start=START + datetime.timedelta(hours=2))
             if r['check'] in flagged]
    judged = verdict.confirm(history, rerun, tonight)
    status = {f['check']: (f['status'], f.get('confirmation')) for f in judged
              if f['check'] in flagged and f['phase'] == 'write'}
    assert status == {'Sim %id=4': ('unconfirmed', 'not reproduced'),
                      'Sim %id=9': ('regression', 'confirmed')}
    doc = verdict.summary(judged, 'done')
    assert doc['exit'] == 3 and doc['regressions'] == 1 and doc['unconfirmed'] == 1


def test_nothing_rerun_keeps_the_flag():
    history = runs_for(range(13), seed=21, factor=lambda n, c, p: 0.6 if (c == 4 and n == 12) else 1)
    tonight = detect(History([dict(r) for r in history]), latest_only=True)
    judged = verdict.confirm(history, [], tonight)
    assert all(f['confirmation'] == 'not re-run' and f['status'] == 'regression'
               for f in flags(judged))


# ---- the CLI nightly.sh uses ----------------------------------------------------------------------

def pp(*args, cwd=REPO):
    env = dict(os.environ)
    env.pop('IOREGRESS_THIS_RUN', None)
    return subprocess.run([sys.executable, '-m', 'postprocess', *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=300)


def report_for(findings):
    cases = {(f['system'], f['partition'], f['environ'], f['check']) for f in findings
             if f['scope'] == 'series'}
    return {'runs': [{'testcases': [
        {'system': s, 'partition': p, 'environ': e, 'display_name': c, 'name': c,
         'result': 'pass', 'hashcode': f'{i:08x}'} for i, (s, p, e, c) in enumerate(sorted(cases))]}]}


def test_a_factor_re_run_takes_the_bandwidth_checks_that_moved_like_it_never_a_rate():
    """A flagged stack factor re-runs fio and the series it was read on that moved like it: an
    operation rate (empty files, ops/s) is no member of a bandwidth factor, so it takes no slot
    (run 17.2 night 13 re-ran MDEmptyFiles in one of six, and the factor was re-read on five);
    nor of a group, whose re-run takes the members that moved most."""
    def series(check, params, change, seconds=0.3):
        return {'system': 'local', 'partition': 'default', 'environ': 'gnu', 'check': check,
                'params': params, 'phase': 'write', 'scope': 'series', 'status': 'ok',
                'change': change, 'phase_seconds': seconds, 'night': '2026-01-13'}
    bw = [series(f'BenchIO %io={i}', f'backend=posix,mode=fpp,pattern=benchio,size={i}', c)
          for i, c in enumerate((0.0, 0.01, -0.02, 0.03, -0.04, 0.05, 0.06, -0.3))]
    bw[-1]['status'] = 'regression'           # an outlier: re-run for its own flag
    short = series('BenchIO %io=short', 'backend=posix,mode=fpp,pattern=benchio,size=64', 0.0, 0.01)
    rate = series('MDEmptyFiles', 'backend=posix,filesize=0,mode=fpp,pattern=mdfiles', 0.0)
    fio = series('BaselineFio', 'backend=fio,bs=1M,mode=seq,pattern=fio', -0.01)
    stack = dict(series('*', '', -0.19), scope='stack', status='regression',
                 factor_min_seconds=0.1, check='*', environ='*')
    keys = {k[3] for k in verdict._rerun_keys(bw + [short, rate, fio, stack])}
    assert keys == {'BaselineFio', 'BenchIO %io=7'} | {f'BenchIO %io={i}' for i in range(6)}
    # a group's re-run takes its members that moved most, never a rate of the same library
    group = dict(series('*', 'backend=posix', -0.19), scope='group', status='regression')
    for g in bw:
        g['change'], g['status'] = -0.1, 'ok'
    rate['change'] = -0.5
    keys = {k[3] for k in verdict._rerun_keys(bw + [rate, group])}
    assert 'MDEmptyFiles' not in keys and len(keys) == verdict.MAX_GROUP_RERUN


def test_detect_json_has_the_contract_fields():
    findings = detect(History(read_perflogs(SYNTH)[0]), latest_only=True)
    for f in findings:
        assert {'system', 'partition', 'environ', 'check', 'params', 'phase', 'night', 'status',
                'median', 'history_median', 'change', 'scope', 'since'} <= set(f), f
        assert f['scope'] in ('series', 'system', 'stack', 'group')
        assert f['status'] in ('regression', 'improvement', 'ok', 'insufficient history')


def test_verdict_cli_exit_status_rerun_list_and_json(tmp_path):
    det = tmp_path / 'detect.json'
    proc = pp('detect', '--perflogs', SYNTH, '--json', det)
    assert proc.returncode == 1                             # the planted regression
    findings = json.loads(det.read_text())
    report = tmp_path / 'report.json'
    report.write_text(json.dumps(report_for(findings)))
    out, rerun = tmp_path / 'verdict.json', tmp_path / 'rerun.txt'
    proc = pp('verdict', '--detect', det, '--report', report, '--json', out, '--rerun-list', rerun)
    assert proc.returncode == 3, proc.stderr
    doc = json.loads(out.read_text())
    assert doc['status'] == 'regression' and doc['confirmation'] == 'pending'
    assert [f['phase'] for f in doc['findings'] if f['status'] == 'regression'] == ['write']
    assert len(rerun.read_text().split()) == 2              # the regression and the improvement
    assert all(line.startswith('/') for line in rerun.read_text().split())
    # whole runs as tonight's: 3 repetitions a run -> 4 runs give the 10 wanted; 10 a run -> 1
    runs = tmp_path / 'rerun.runs'
    for repeat, want in ((3, '4'), (10, '1')):
        doc = report_for(findings)
        for case in doc['runs'][0]['testcases']:
            case['repeat'] = repeat
        report.write_text(json.dumps(doc))
        proc = pp('verdict', '--detect', det, '--report', report, '--json', out, '--rerun-list',
                  rerun, '--rerun-runs', runs, '--confirm-repeat', '10')
        assert proc.returncode == 3 and runs.read_text().strip() == want, proc.stderr
    # a run that did not run the flagged check is not failed by it
    report.write_text(json.dumps({'runs': [{'testcases': []}]}))
    proc = pp('verdict', '--detect', det, '--report', report, '--json', out)
    assert proc.returncode == 0 and json.loads(out.read_text())['status'] == 'ok'


@pytest.mark.parametrize('args, words', [
    (['--detect', '{t}/nope.json', '--report', '{t}/r.json', '--json', '{t}/v.json'],
     "no such detect JSON '{t}/nope.json'"),
    (['--detect', '{t}/bad.json', '--report', '{t}/r.json', '--json', '{t}/v.json'],
     "cannot read detect JSON '{t}/bad.json'"),
    (['--detect', '{t}/d.json', '--report', '{t}/r.json', '--json', '{t}/v.json',
      '--confirm-perflogs', '{t}'], '--confirm-perflogs needs the history (--store DIR, --perflogs DIR or --db FILE) and --system NAME'),
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


def test_the_confirmation_judges_against_the_history_the_first_stage_used(tmp_path, monkeypatch):
    """`verdict --runs` gives the re-run's detect the flags earlier re-runs refuted, as `detect
    --runs` gives the first stage: their nights leave a series' history in both stages."""
    from postprocess import cli
    post = tmp_path / 'runs' / 'r1' / 'post'
    post.mkdir(parents=True)
    flag = {'system': 'synthetic', 'partition': 'p1', 'environ': 'e', 'check': 'BenchIO',
            'params': 'x', 'phase': 'write', 'night': '2026-01-03', 'status': 'unconfirmed'}
    (post / 'verdict.json').write_text(json.dumps({'findings': [flag]}))
    (tmp_path / 'd.json').write_text('[]')
    (tmp_path / 'r.json').write_text('{"runs": []}')
    seen = []
    monkeypatch.setattr(verdict, 'confirm',
                        lambda h, c, t, unconfirmed=None: seen.append(unconfirmed) or t)
    logs = str(REPO / 'tests' / 'fixtures' / 'perflogs' / 'synthetic')
    common = ['verdict', '--detect', str(tmp_path / 'd.json'), '--report', str(tmp_path / 'r.json'),
              '--json', str(tmp_path / 'v.json'), '--confirm-perflogs', logs, '--perflogs', logs,
              '--system', 'synthetic']
    assert cli.main(common + ['--runs', str(tmp_path / 'runs')]) == 0
    assert cli.main(common) == 0
    key = ('synthetic', 'p1', 'e', 'BenchIO', 'x', 'write')
    assert seen == [{key: {'2026-01-03'}}, None]
