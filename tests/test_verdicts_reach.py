"""What a night can see (detect's ``detectable``, postprocess/report/reach.py): the smallest fall
tonight's first stage could flag on each level, in the JSON, on the terminal and on the page.

The simulated suite is the real detector on run records (tests/test_verdicts.py); the terminal and
the page come from the real commands on real detect findings of the synthetic perflog history."""
import html
import math

import pytest

from postprocess.detect.evidence import detectable_fall
from postprocess.detect.suite import detect
from postprocess.history.store import History
from postprocess.report.reach import reach, reach_line
from tests.support.report_inputs import cases_for, make_run, pp, SYNTH, synthetic_findings
from tests.support.simruns import night_of, runs_for


def test_the_reach_is_where_the_test_meets_its_level():
    # est -0.1 at z -2: a standard error of 0.05; a normal's 0.001 quantile is -3.09
    assert detectable_fall(-0.1, [(-2.0, 1e6)], 0.001, 0.05) == pytest.approx(
        math.expm1(-3.0902 * 0.05), rel=1e-3)
    # the series' own history, stricter (5 nights), binds
    own = detectable_fall(-0.1, [(-2.0, 1e6), (-1.0, 5.0)], 0.001, 0.05)
    assert own == pytest.approx(math.expm1(-5.8934 * 0.1), rel=1e-3)
    # a very precise level: the least effect the suite reports binds
    assert detectable_fall(-0.01, [(-10.0, 30.0)], 0.001, 0.05) == pytest.approx(-0.05)
    # same on the other side of zero: the scale is what counts, not tonight's sign
    assert detectable_fall(0.1, [(2.0, 1e6)], 0.001, 0.05) == detectable_fall(
        -0.1, [(-2.0, 1e6)], 0.001, 0.05)
    assert detectable_fall(0.0, [(0.0, 10.0)], 0.001, 0.05) is None


def test_a_fall_beyond_its_reach_is_flagged_and_one_within_it_is_not():
    nights, night = range(13), night_of(12)
    quiet = detect(History(runs_for(nights, seed=21)))
    tonight = {f['check']: f for f in quiet if f['night'] == night and f['phase'] == 'write'
               and f['scope'] == 'series' and 'fio' not in f['params']}
    assert all(f['detectable'] is not None and -0.9 < f['detectable'] < -0.05
               for f in tonight.values())
    # series whose own noise tonight sat near their level: their z moves by the fall alone
    calm = sorted((c for c, f in tonight.items() if abs(f['z']) < 0.5),
                  key=lambda c: int(c.split('=')[1]))[:4]
    assert len(calm) == 4, tonight
    big, small = calm[:2], calm[2:]
    reach_of = {c: tonight[c]['detectable'] for c in calm}

    def factor(n, c, phase):
        name = f'Sim %id={c}'
        if n != 12 or phase != 'write' or name not in reach_of:
            return 1.0
        return (1 + reach_of[name]) ** (1.6 if name in big else 0.5)
    found = detect(History(runs_for(nights, seed=21, factor=factor)))
    status = {f['check']: f['status'] for f in found if f['night'] == night
              and f['phase'] == 'write' and f['scope'] == 'series'}
    assert [status[c] for c in big] == ['regression'] * 2, (status, reach_of)
    assert [status[c] for c in small] == ['ok'] * 2, (status, reach_of)


def test_every_flagged_fall_was_within_reach():
    # the converse, over a suite where a dozen series fell by different amounts (5 % to 60 %) on
    # one night: no flag is smaller than the reach it was judged with (a floor, not an estimate)
    def factor(n, c, phase):
        return 1.0 - 0.05 * c if n == 10 and phase == 'write' and c <= 12 else 1.0
    found = detect(History(runs_for(range(11), checks=60, seed=5, factor=factor)))
    tonight = [f for f in found if f['night'] == night_of(10) and f['scope'] == 'series'
               and f['phase'] == 'write']
    flagged = [f for f in tonight if f['status'] == 'regression']
    assert len(flagged) >= 5, flagged
    assert all(f['change'] <= f['detectable'] for f in flagged), flagged
    # and the falls well beyond reach were all flagged
    assert all(f['status'] == 'regression' for f in tonight
               if f['change'] <= 1.5 * f['detectable'] - 0.05), tonight


def test_terminal_and_page_say_what_the_night_could_see(tmp_path):
    findings = synthetic_findings(tmp_path)       # the real `postprocess detect` on perflogs
    assert any(f.get('detectable') is not None for f in findings)
    line = reach_line(findings)
    assert line.startswith('tonight could see falls of at least: ') and 'one series' in line
    median = reach(findings)['series'].split('%')[0]
    run = make_run(tmp_path, findings, cases_for(findings))
    proc = pp('summary', '--run', run)
    assert proc.returncode == 0, proc.stderr
    assert line in proc.stdout.splitlines()
    out = tmp_path / 'page'
    proc = pp('report', '--perflogs', SYNTH, '-o', out, '--findings', run / 'post' / 'detect.json',
              '--max-history-plots', '1')
    assert proc.returncode == 0, proc.stderr
    page = (out / 'index.html').read_text()
    assert html.escape(line, quote=False) in page and '>sees</th>' in page
    # the series table carries each series' own figure
    some = next(f for f in findings if f.get('detectable') is not None and f['scope'] == 'series'
                and f['status'] == 'ok')
    assert f'{some["detectable"]:+.0%}' in page
    assert median.isdigit()
