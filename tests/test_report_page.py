"""The report page without a browser: escaping, self-containment, links only to what exists,
graceful degradation when the issue-11 fields or the Darshan index are absent."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from contract.perflog import PHASES
from postprocess.report import html, verdict
from tests.support.report_inputs import cases_for, pp, SYNTH, synthetic_findings

REPO = Path(__file__).resolve().parent.parent

EVIL = '<script>alert(1)</script>'


def finding(**kw):
    base = dict(system='s', partition='p', environ='e', check='BenchIO %io=posix:fpp',
                params='backend=posix,mode=fpp,pattern=benchio,ranks=2,size=64,stripe=default',
                phase='write', night='2026-11-12', status='ok', median=100.0,
                history_median=100.0, change=0.0, z=0.0, n=5, outliers=[])
    base.update(kw)
    return base


def test_names_and_reasons_are_escaped(tmp_path):
    findings = [finding(check=f'Evil{EVIL}', params=f'backend={EVIL}', status='regression',
                        change=-0.3),
                finding(check='BenchIO "quoted" & <b>', phase='read')]
    cases = [{'system': 's', 'partition': 'p', 'environ': 'e', 'display_name': f'Evil{EVIL}',
              'result': 'fail', 'fail_phase': 'sanity', 'fail_reason': f'bad {EVIL}'},
             {'system': 's', 'partition': 'p', 'environ': 'e',
              'display_name': 'BenchIO "quoted" & <b>', 'result': 'pass'}]
    page = html.write_report(str(tmp_path / 'index.html'), [], findings, [f'note {EVIL}'],
                             verdict=verdict.build(findings, cases))
    text = Path(page).read_text()
    assert EVIL not in text and '& <b>' not in text
    assert text.count('&lt;script&gt;alert(1)&lt;/script&gt;') >= 4
    assert 'data-text="BenchIO BenchIO &#34;quoted&#34; &amp; &lt;b&gt;' in text


def test_page_is_self_contained_and_links_nothing_without_darshan(tmp_path):
    findings = synthetic_findings(tmp_path)
    run = tmp_path / 'run'
    (run / 'post').mkdir(parents=True)
    (run / 'report.json').write_text(json.dumps(cases_for(findings)))
    proc = pp('report', '--perflogs', SYNTH, '-o', run / 'post' / 'report',
              '--max-history-plots', '3')
    assert proc.returncode == 0, proc.stderr
    text = (run / 'post' / 'report' / 'index.html').read_text()
    # no fetched resources: scripts and styles are inline, no http(s) URL is loaded
    assert not re.search(r'<(script|img|link|iframe)[^>]+(src|href)="(https?:)?//', text)
    assert '<script src=' not in text and 'Darshan' not in text
    assert text.count('class="bk-root"') + text.count('data-root-id') >= 3   # 3 Bokeh figures
    # the run's report.json was found without --run (output under RUN_DIR/post/)
    n = len({f['check'] for f in findings if f.get('scope', 'series') == 'series'})
    assert f'{n} passed' in text


def test_old_findings_without_issue11_fields_and_new_ones_with_them(tmp_path):
    old = [finding(status='regression', change=-0.25)]
    new = [finding(status='regression', change=-0.25, scope='series', since='2026-11-09'),
           finding(check='', params='', status='regression', scope='system', change=-0.2,
                   since='2026-11-11'),
           finding(check='BenchIO %io=mpiio:collective', status='noisy', change=-0.15)]
    a_old = verdict.build(old)['attention']
    assert [(a['kind'], a['since']) for a in a_old] == [('regression', '2026-11-12')]
    built = verdict.build(new)
    # red first (what moved many series, then series); the noisy night is not red
    assert [(a['kind'], a['since']) for a in built['attention']] == [
        ('system', '2026-11-11'), ('regression', '2026-11-09')]
    assert [a['kind'] for a in built['notes']] == ['noisy']
    page = Path(html.write_report(str(tmp_path / 'i.html'), [], new, [],
                                  verdict=built)).read_text()
    for label in ('>regression<', '>system-wide<', '>noisy night<', 'since 2026-11-09',
                  '2 things need your attention', 'Not red tonight: 1 level'):
        assert label in page
    assert page.index('Not red tonight') > page.index('>system-wide<')


def test_ior_ratio_section_from_a_real_perflog_made_into_pairs(tmp_path):
    """Lines of a real BenchIO perflog relabelled as the IOR comparison check's two series
    (tool=iobench, tool=ior); the IOR copy's seconds are scaled, so the ratio is known."""
    src = (REPO / 'tests' / 'fixtures' / 'perflogs' / 'real' / 'local' / 'default' /
           'BenchIO.log').read_text().splitlines()
    header, line = src[0], next(x for x in src[1:] if 'io=posix:fpp' in x)
    fields = line.split('|')
    out = [header]
    for tool, scale in (('iobench', 1.0), ('ior', 0.5)):    # IOR twice as fast: ratio 0.5
        f = list(fields)
        f[2] = f'IorCompare %tool={tool}'
        f[6] = f[6].replace('pattern=benchio', f'pattern=ior,tool={tool}')
        f[9] = ';'.join(phase + '=' + ','.join(f'{b}:{float(s) * scale!r}' for b, s in
                                               (rep.split(':') for rep in reps.split(',')))
                        for phase, reps in (p.split('=', 1) for p in f[9].split(';')))
        out.append('|'.join(f))
    logs = tmp_path / 'perflogs' / 'local' / 'default'
    logs.mkdir(parents=True)
    (logs / 'IorCompare.log').write_text('\n'.join(out) + '\n')
    proc = pp('report', '--perflogs', tmp_path / 'perflogs', '-o', tmp_path / 'out')
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / 'out' / 'index.html').read_text()
    assert 'iobench vs IOR: 2 of 2 ratios outside 0.90–1.10' in text
    assert text.count('<td>0.50</td>') == 2 and text.count('<td>posix/fpp</td>') == 2


@pytest.mark.parametrize('args, message', [
    (['--run', '{t}/nope'], "no such run directory '{t}/nope'"),
    (['--findings', '{t}/bad.json'], "cannot read findings file '{t}/bad.json'"),
    (['--findings', '{t}/list.json'], "not a list of detect findings: '{t}/list.json'"),
    (['--darshan-json', '{t}/bad.json'], "cannot read Darshan index '{t}/bad.json'"),
    (['--history-nights', '0'], "--history-nights must be >= 1, got '0'"),
])
def test_report_bad_input_one_line_nothing_written(tmp_path, args, message):
    (tmp_path / 'bad.json').write_text('[{"status": "ok"')
    (tmp_path / 'list.json').write_text('[1, 2]')
    out = tmp_path / 'out'
    proc = pp('report', '--perflogs', SYNTH, '-o', out, *[a.format(t=tmp_path) for a in args])
    assert proc.returncode == 2 and 'Traceback' not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        'python -m postprocess report: error: ' + message.format(t=tmp_path)), proc.stderr
    assert not out.exists()


def test_report_with_findings_does_not_detect_and_circles_the_nights_since_a_change(tmp_path):
    """The nightly report reuses detect's JSON (no second detection: what made warm reports slow);
    a change that persists circles every night since it began, as detection night by night."""
    from postprocess.history import inputs
    from postprocess.history.query import HistoryQuery
    from postprocess.report.build import flags_from_findings
    findings = synthetic_findings(tmp_path)          # each series' latest night
    history, _ = inputs.load_history(HistoryQuery(perflogs=(str(SYNTH),)))
    flagged = next(f for f in findings if f['status'] == 'regression' and f['scope'] == 'series')
    nights = sorted({s['night'] for s in history.sessions})
    planted = next(f for f in findings if f['status'] == 'ok' and f['scope'] == 'series'
                   and f['night'] == nights[-1])
    planted.update(status='improvement', since=nights[-3], change=0.4)   # not detection's
    (tmp_path / 'given.json').write_text(json.dumps(findings))
    code = ('import sys; import postprocess.detect.suite as s; s.detect = None; '
            'from postprocess.cli import main; sys.exit(main())')
    out = tmp_path / 'out'
    proc = subprocess.run([sys.executable, '-c', code, 'report', '--perflogs', str(SYNTH), '-o',
                           str(out), '--findings', str(tmp_path / 'given.json'),
                           '--max-history-plots', '4'], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr       # detection would have failed: it is None
    page = (out / 'index.html').read_text()
    assert page.count('data-status="improvement"') == sum(f['status'] == 'improvement'
                                                          for f in findings) >= 1
    key = lambda f: (f['system'], f['partition'], f['environ'], f['check'], f['params'],
                     f['phase'])
    circled = flags_from_findings(findings, history, {key(flagged), key(planted)})
    assert sorted(f['night'] for f in circled if key(f) == key(planted)) == nights[-3:]
    assert all(f['status'] == 'improvement' for f in circled if key(f) == key(planted))
    assert [f['night'] for f in circled if key(f) == key(flagged)][0] == flagged['night']
    assert not flags_from_findings(findings, history, set())


def test_interactive_history_shows_the_perflog_reference_band(tmp_path):
    """The interactive figure replaces the series' PNG, so it carries the PNG's reference band:
    the latest perflog reference of the series, shaded from ref*(1+lower) to ref*(1+upper)."""
    from bokeh.models import BoxAnnotation, Span
    from postprocess.history import inputs
    from postprocess.history.query import HistoryQuery
    from postprocess.report import interactive
    history, _ = inputs.load_history(HistoryQuery(perflogs=(str(SYNTH),)))
    bands = history.reference_bands()
    (kid, phase), (low, high, ref) = next(iter(sorted(bands.items())))
    assert low < ref and (high is None or high > ref)
    groups = history.groups()
    nights = next(v for (k, p), v in groups.items() if k == kid and PHASES[p] == phase)
    fig = interactive._figure('t', [__import__('datetime').date(2026, 11, i + 1)
                                    for i in range(len(nights))], nights, {}, (low, high, ref))
    boxes = [r for r in fig.center if isinstance(r, BoxAnnotation)]
    spans = [r for r in fig.center if isinstance(r, Span)]
    assert [b.bottom for b in boxes] == [low]
    # no upper limit in the perflog: open upwards (Bokeh's default top is the frame's edge)
    assert boxes[0].top == high if high is not None else not isinstance(boxes[0].top, float)
    assert [s.location for s in spans] == [ref]
    anchors, script, _ = interactive.history_figures(
        history, [(kid, PHASES.index(phase))], [], 'bw_MiBps')
    assert anchors and f'reference {ref:.4g} MiB/s' in script


def test_history_figures_flagged_first_then_the_series_that_moved_most():
    from postprocess.history import inputs
    from postprocess.history.query import HistoryQuery
    from postprocess.report import plots
    history, _ = inputs.load_history(HistoryQuery(perflogs=(str(SYNTH),)))
    series = sorted(history.groups())
    assert len(series) >= 5

    def finding_of(s, status, z):
        key = history.key_dict(s[0])
        return dict(key, phase=PHASES[s[1]], status=status, z=z, night='2026-11-12')
    findings = [finding_of(series[4], 'ok', -2.5), finding_of(series[3], 'regression', -6.0),
                finding_of(series[2], 'ok', 0.3), finding_of(series[1], 'ok', 1.9),
                finding_of(series[0], 'insufficient history', None)]
    chosen = plots.history_series(history, findings, max_plots=4)
    assert chosen == [series[3], series[4], series[1], series[2]]


def test_an_empty_file_series_is_shown_in_operations_per_second(tmp_path):
    """MDEmptyFiles logs operations where bytes would stand (CONTRACT §3): the page's line and
    table, the interactive figure and the PNG all show ops/s, never its 'MiB/s' (ops/s / 2^20)."""
    import datetime
    from bokeh.models import Label
    from postprocess.report import interactive
    empty = 'backend=posix,filesize=0,mode=fpp,pattern=mdfiles,ranks=2,size=5000'
    findings = [finding(check='MDEmptyFiles %size=5000', params=empty, phase='read',
                        status='regression', median=0.16, history_median=0.2,
                        expected_median=0.2, change=-0.2, since='2026-11-12'),
                finding(check='MDEmptyFiles %size=5000', params=empty, phase='stat',
                        median=0.5, history_median=0.5, expected_median=0.5),
                finding(phase='read')]
    cases = [{'system': 's', 'partition': 'p', 'environ': 'e', 'display_name': f['check'],
              'result': 'pass'} for f in findings]
    page = Path(html.write_report(str(tmp_path / 'index.html'), [], findings, [],
                                  verdict=verdict.build(findings, cases))).read_text()
    assert '1.678e+05 vs 2.097e+05 usual (ops/s)' in page            # the attention line
    assert '5.243e+05 ops/s</td>' in page and '>100</td>' in page        # table: ops/s, MiB/s
    nights = [(0, [0.15, 0.16]), (1, [0.2, 0.21])]
    fig = interactive._figure('t', [datetime.date(2026, 11, 1), datetime.date(2026, 11, 2)],
                              nights, {}, (0.1, None, 0.2), scale=2.0 ** 20, unit='ops/s')
    assert fig.yaxis[0].axis_label == 'ops/s'
    assert [lb.text for lb in fig.center if isinstance(lb, Label)] == ['reference 2.097e+05 ops/s']
