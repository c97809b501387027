"""The terminal verdict (`python -m postprocess summary`) and ci/quick.sh ending with it.

Inputs are real where cheap: the session's one real quick run (tests/conftest.py `quick_run`), and
real detect findings of the synthetic perflog history; the issue-11 fields (`scope`, `since`, a
`noisy` night) are added to those findings the way that issue describes them.
"""
import json
from pathlib import Path

import pytest

from tests.support.report_inputs import cases_for, make_run, pp, synthetic_findings

REPO = Path(__file__).resolve().parent.parent


def test_summary_lists_regression_failure_and_issue11_fields(tmp_path):
    findings = synthetic_findings(tmp_path)
    regressions = [f for f in findings if f['status'] == 'regression']
    assert regressions
    checks = sorted({f['check'] for f in findings})
    failed = next(c for c in checks if 'posix:fpp' in c and '%ranks=4' in c)
    skipped = next(c for c in checks if 'hdf5' in c)
    report = cases_for(findings, fail=failed, skip=[skipped])
    # issue 11 fields: a confirmed regression with its first night, a system-wide change, a noisy
    # night (shown, not red)
    latest = max(f['night'] for f in findings)
    for f in findings:
        if f['status'] == 'regression':
            f['since'] = '2026-11-10'
    other = next(f for f in findings if f['night'] == latest and f['status'] == 'ok'
                 and f.get('scope', 'series') == 'series' and f['check'] not in (failed, skipped))
    other['status'] = 'noisy'
    findings.append({'system': 'synthetic', 'partition': 'p1', 'environ': '*', 'check': '*',
                     'params': '', 'phase': 'read', 'night': latest, 'status': 'regression',
                     'scope': 'system', 'since': latest, 'change': -0.22, 'median': None,
                     'history_median': None})
    run = make_run(tmp_path, findings, report)
    proc = pp('summary', '--run', run)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    n = len({f['check'] for f in findings if f.get('scope', 'series') == 'series'})
    assert lines[0] == f'ioregress: {n} test cases: {n - 2} passed, 1 failed, 1 skipped'
    kinds = [line.split()[0] for line in lines if line.startswith('  ') and line[2] != ' ']
    # ordered: what moved many series at once, regressions, failures; then (not red) noisy
    assert kinds == ['SYSTEM-WIDE'] + ['REGRESSION'] * len(regressions) + ['FAILED', 'NOISY']
    assert lines.index(next(ln for ln in lines if ln.startswith('  NOISY'))) - 1 == \
        lines.index(next(ln for ln in lines if ln.startswith('not red tonight')))
    reg = next(line for line in lines if line.startswith('  REGRESSION'))
    r = regressions[0]
    assert f'{r["change"]:+.1%}' in reg and 'since 2026-11-10' in reg and r['phase'] in reg
    assert 'mpiio/collective ranks=4 size=64' in reg
    failed_line = next(ln for ln in lines if ln.startswith('  FAILED'))
    assert 'verification failed at element 17' in failed_line
    assert 'all iobench checks and fio: the filesystem or the partition read -22.0%' in proc.stdout
    assert lines[-1] == f'no report page ({run}/post/report/index.html not written)'


def test_a_check_not_run_tonight_does_not_raise_its_old_flag(tmp_path):
    findings = synthetic_findings(tmp_path)
    regressed = {f['check'] for f in findings if f['status'] == 'regression'}
    report = cases_for([f for f in findings if f['check'] not in regressed])
    proc = pp('summary', '--run', make_run(tmp_path, findings, report))
    assert proc.returncode == 0
    assert 'REGRESSION' not in proc.stdout and 'nothing needs attention' in proc.stdout


@pytest.mark.parametrize('damage, message', [
    (lambda run: (run / 'report.json').write_text('{"runs": [{"testcases": [{"res'),
     "cannot read ReFrame report '{run}/report.json'"),
    (lambda run: (run / 'report.json').write_text('{"session_info": {}}'),
     "not a ReFrame report (no runs/testcases): '{run}/report.json'"),
    (lambda run: (run / 'post' / 'detect.json').write_text('{"status": "ok"}'),
     "not a list of detect findings: '{run}/post/detect.json'"),
])
def test_bad_input_is_one_line_and_status_2(tmp_path, damage, message):
    run = make_run(tmp_path, [], {'runs': [{'testcases': []}]})
    damage(run)
    before = sorted(p.name for p in run.rglob('*'))
    proc = pp('summary', '--run', run)
    assert proc.returncode == 2 and proc.stdout == ''
    lines = proc.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f'python -m postprocess summary: error: {message.format(run=run)}')
    assert sorted(p.name for p in run.rglob('*')) == before


@pytest.mark.parametrize('report', [None, {'runs': [{'testcases': []}]}])
def test_a_run_where_nothing_ran_cannot_be_judged(tmp_path, report):
    """ReFrame died before its report (a broken config), or ran nothing: the summary says it cannot
    judge and exits 1, never "nothing needs attention"."""
    run = make_run(tmp_path, [], report)
    if report is None:
        (run / 'report.json').unlink()
    proc = pp('summary', '--run', run)
    assert proc.returncode == 1, proc.stderr
    assert 'cannot judge: no test case ran' in proc.stdout
    assert 'nothing needs attention' not in proc.stdout


def test_missing_run_dir_is_one_line(tmp_path):
    proc = pp('summary', '--run', tmp_path / 'nope')
    assert proc.returncode == 2
    assert proc.stderr == f"python -m postprocess summary: error: no such run directory " \
                          f"'{tmp_path / 'nope'}'\n"


@pytest.mark.reframe
def test_quick_sh_ends_with_the_verdict(quick_run):
    """The session's one real quick run (tests/conftest.py): the terminal ends with the verdict,
    ReFrame's own count of test cases (the build fixture among them), the skip reasons, then the
    page's address. A failed check's line: tests/test_reframe.py's impossible reference."""
    out, proc = quick_run
    report = json.loads((out / 'report.json').read_text())
    info = report['session_info']
    builds = sum(c['fixture'] and c['result'] == 'pass' for c in report['runs'][0]['testcases'])
    tail = proc.stdout.rstrip('\n').splitlines()
    verdict_at = next(i for i, line in enumerate(tail) if line.startswith('ioregress: '))
    summary = tail[verdict_at:]
    failures, skipped = info['num_failures'], info['num_skipped']
    cases = info['num_cases']           # ReFrame's count, the build fixture included, as it says
    assert f'Ran {cases}/{cases} test case(s)' in proc.stdout
    assert builds == 1 and failures == 0 and summary[0] == (
        f'ioregress: {cases} test cases (1 build): {cases - skipped} passed, 0 failed, '
        f'{skipped} skipped')
    if skipped:          # the reasons come from ReFrame's console
        assert any(line.startswith(f'skipped {skipped}: ') for line in summary), summary
    page = out / 'post' / 'report' / 'index.html'
    assert summary[-1] == page.as_uri() and page.exists()


def test_skip_reasons_from_reframe_console(tmp_path):
    out = tmp_path / 'reframe.out'     # two lines as ReFrame 4.10 prints them (colour, padding)
    out.write_text('[ \x1b[33m    SKIP\x1b[0m ] ( 3/37) NektarSmall %size=100000 '
                   '%io=sionlib:collective'
                   ' /738a81f1 @local:default+mpi-gnu [backend sionlib: feature +sionlib not on'
                   ' local:default / mpi-gnu]\n'
                   '[     SKIP ] (2/8) BenchIO %size=64 %stripe=c4-S4M /30de5d02 @local:default+'
                   'mpi-gnu [stripe c4-S4M needs a +lustre partition]\n'
                   '[       OK ] (1/8) BenchIO %size=64 /e3eb8e8d @local:default+mpi-gnu\n')
    from postprocess.report.verdict import skip_reasons
    assert skip_reasons(out) == {
        'NektarSmall %size=100000 %io=sionlib:collective':
            'backend sionlib: feature +sionlib not on local:default / mpi-gnu',
        'BenchIO %size=64 %stripe=c4-S4M': 'stripe c4-S4M needs a +lustre partition'}


def test_summary_prefers_the_nightly_verdict_document(tmp_path):
    """ci/nightly.sh writes post/verdict.json (`postprocess verdict`, issue 11): its findings,
    scoped to tonight and confirmed, are what the summary lists."""
    findings = synthetic_findings(tmp_path)
    checks = sorted({f['check'] for f in findings if f.get('scope', 'series') == 'series'})
    run = make_run(tmp_path, findings, cases_for(findings))
    proc = pp('verdict', '--detect', run / 'post' / 'detect.json', '--report', run / 'report.json',
              '--json', run / 'post' / 'verdict.json')
    assert proc.returncode in (0, 3), proc.stderr
    doc = json.loads((run / 'post' / 'verdict.json').read_text())
    shown = [f for f in doc['findings'] if f['status'] in ('regression', 'degraded', 'noisy')]
    proc = pp('summary', '--run', run)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f'ioregress: {len(checks)} test cases: {len(checks)} passed, 0 failed, 0 skipped'
    listed = [line for line in lines if line.startswith('  ') and line[2] != ' ']
    assert len(listed) == len(shown) + sum(f.get('scope') == 'system' for f in doc['findings'])
    for f in shown:
        expected = f.get('expected_median', f['history_median'])
        assert any(f'{f["change"]:+.1%}' in line and f'vs {expected:.4g}' in line
                   for line in listed)
    # the document wins over detect.json: drop its findings and nothing is listed any more
    doc['findings'] = []
    (run / 'post' / 'verdict.json').write_text(json.dumps(doc))
    assert 'nothing needs attention' in pp('summary', '--run', run).stdout


def test_an_empty_file_series_is_shown_in_ops_per_second():
    """MDEmptyFiles logs operations as its amount (CONTRACT §3): its 'MiB/s' are ops/s / 2^20."""
    from postprocess.report.summary import format_line
    a = {'kind': 'regression', 'check': 'MDEmptyFiles %size=5000', 'phase': 'read',
         'params': 'backend=posix,filesize=0,mode=fpp,pattern=mdfiles,ranks=2,size=5000',
         'change': -0.2, 'median': 0.16, 'history_median': 0.2, 'since': '2026-01-13'}
    line = format_line(a)
    assert '(1.678e+05 vs 2.097e+05 ops/s)' in line and 'MiB/s' not in line, line
    b = dict(a, params='backend=posix,filesize=307200,mode=fpp,pattern=mdfiles,ranks=2,size=20')
    assert '(0.16 vs 0.2 MiB/s)' in format_line(b)


def test_a_collapse_on_several_file_systems_is_one_line_with_each_size():
    """Edison, summer 2017: the shared-file read fell on scratch1, 2 and 3 within a few nights.
    The terminal says it once, naming each file system with its fall; the same check falling on
    another file system weeks later is a change of its own."""
    from postprocess.report import summary, verdict

    def red(partition, since, change):
        return {'system': 'edison', 'partition': partition, 'environ': 'default',
                'check': 'IOR %bench=ior_shared_read', 'params': 'backend=posix,mode=shared',
                'phase': 'read', 'night': '2017-08-12', 'status': 'regression', 'scope': 'series',
                'since': since, 'change': change, 'median': 100.0, 'expected_median': 700.0}
    findings = [red('scratch1', '2017-08-04', -0.85), red('scratch2', '2017-08-04', -0.84),
                red('scratch3', '2017-08-08', -0.88), red('scratch4', '2017-07-10', -0.60)]
    result = verdict.build(findings)
    lines = [summary.format_line(a) for a in result['attention']]
    assert len(lines) == 2, lines
    one = next(line for line in lines if 'scratch1' in line)
    assert 'on edison:scratch1 -85%, scratch2 -84%, scratch3 -88%' in one
    assert 'since 2017-08-04' in one
    assert 'scratch4' not in one
