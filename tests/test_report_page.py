"""The report page without a browser: escaping, self-containment, links only to what exists,
graceful degradation when the issue-11 fields or the Darshan index are absent."""
import json
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / 'tests'))

from postprocess.report import html, verdict  # noqa: E402
from test_report_summary import SYNTH, cases_for, pp, synthetic_findings  # noqa: E402

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
           finding(check='BenchIO %io=mpiio:collective', status='unconfirmed', change=-0.15)]
    a_old = verdict.build(old)['attention']
    assert [(a['kind'], a['since']) for a in a_old] == [('regression', '2026-11-12')]
    a_new = verdict.build(new)['attention']
    assert [(a['kind'], a['since']) for a in a_new] == [
        ('regression', '2026-11-09'), ('system', '2026-11-11'), ('unconfirmed', '2026-11-12')]
    page = Path(html.write_report(str(tmp_path / 'i.html'), [], new, [],
                                  verdict=verdict.build(new))).read_text()
    for label in ('>regression<', '>system-wide<', '>unconfirmed<', 'since 2026-11-09'):
        assert label in page


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
