"""The time-series store, for real: Debian's victoria-metrics on loopback, quick checks run through
ReFrame with a system file's 'export': {'victoriametrics': URL} (the httpjson perflog handler of
configs/settings.py), the values queried back with PromQL and compared with the perflog; the
verdict's findings exported as ioregress_finding; every query of the Grafana dashboard answered.
"""
import base64
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from postprocess.history.perflog import read_perflogs
from tests.support.servers import free_port, victoria_metrics, webhook

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.reframe
CHECKS = ['BenchIO.*size=64.*ranks=2.*posix:fpp', 'BaselineFio']      # with --tag quick: one BenchIO and fio


def checkout_with_export(tmp_path, url):
    """A copy of configs/ whose `local` system file says 'export': {'victoriametrics': url}, beside
    this checkout's postprocess/ (what settings.py loads the formatter from)."""
    co = tmp_path / 'checkout'
    shutil.copytree(REPO / 'configs', co / 'configs')
    (co / 'postprocess').symlink_to(REPO / 'postprocess')
    local = co / 'configs' / 'systems' / 'local.py'
    text = local.read_text()
    assert "'hostnames': ['.*']," in text
    local.write_text(text.replace("'hostnames': ['.*'],",
                                  f"'hostnames': ['.*'], 'export': {{'victoriametrics': {url!r}}},"))
    return co / 'configs' / 'settings.py'


def run_checks(settings, workdir, names):
    cmd = ['reframe', '-C', str(settings), '-c', str(REPO / 'reframe_checks'), '--system', 'local',
           '-r', '--tag', 'quick', '--prefix', str(workdir), '--perflogdir', str(workdir / 'perflogs'),
           '--report-file', str(workdir / 'report.json'), '--nocolor']
    for n in names:
        cmd += ['-n', n]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1')
    env.pop('RFM_ENABLE_RESULTS_STORAGE', None)
    return subprocess.run(cmd, cwd=workdir.parent, capture_output=True, text=True, env=env,
                          timeout=900)


def postprocess(*args):
    return subprocess.run([sys.executable, '-m', 'postprocess', *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def dashboard_queries():
    doc = json.loads((REPO / 'configs' / 'grafana' / 'ioregress.json').read_text())
    exprs = [t['expr'] for p in doc['panels'] for t in p.get('targets', [])]
    exprs += [a['expr'] for a in doc['annotations']['list'] if 'expr' in a]
    variables = [v['definition'] for v in doc['templating']['list'] if v['type'] == 'query']
    return exprs, variables


def grafana_substitute(expr):
    """What Grafana sends with every variable at 'All' and a 90-day range."""
    expr = expr.replace('${phase:regex}', 'write|read').replace('$__range', '90d')
    return re.sub(r'\$(system|partition|check)\b', '.*', expr)


def test_values_and_findings_reach_victoriametrics(tmp_path):
    with victoria_metrics(tmp_path) as vm:
        settings = checkout_with_export(tmp_path, vm.url)
        proc = run_checks(settings, tmp_path / 'rf', CHECKS)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        assert 'httpjson' not in proc.stdout + proc.stderr      # no warning: every record sent
        runs, diag = read_perflogs(tmp_path / 'rf' / 'perflogs')
        assert list(diag) == [] and len(runs) == 2
        values = sum(len(r['perf']) for r in runs)
        sent = vm.export('{__name__=~"ioregress_.+"}', expect=values)
        # every perflog value is there, with its labels, at its completion time (ms)
        assert len(sent) == values
        for run in runs:
            for var, perf in run['perf'].items():
                [(labels, values, stamps)] = [s for s in sent if s[0]['__name__'] == f'ioregress_{var}'
                                              and s[0]['check'] == run['check']]
                assert labels == {'__name__': f'ioregress_{var}', 'system': 'local',
                                  'partition': 'default', 'environ': run['environ'],
                                  'check': run['check'], 'params': run['params'],
                                  'phase': var.split('_')[0] if var.split('_')[0] in ('write', 'read') else '',
                                  'unit': perf['unit']}
                assert values == [pytest.approx(perf['value'], rel=1e-6)]
                assert stamps[0] // 1000 == int(run['time'].timestamp())
        # PromQL, as Grafana asks
        bench = next(r for r in runs if r['check'].startswith('BenchIO'))
        at = bench['time'].timestamp() + 1
        [(labels, value)] = vm.query(f'ioregress_write_bw{{system="local", check="{bench["check"]}"}}', at)
        assert value == pytest.approx(bench['perf']['write_bw']['value'], rel=1e-6)
        assert labels['params'] == bench['params'] and labels['unit'] == 'MiB/s'

        # the verdict's findings (a series and a system-wide one), as a nightly run leaves them
        run_dir = tmp_path / 'results' / 'runs' / '20260105T020000Z-local-quick'
        (run_dir / 'post').mkdir(parents=True)
        written = bench['time'].replace(microsecond=0)
        findings = [dict(status='regression', scope='series', system='local', partition='default',
                         environ='mpi-gnu', check=bench['check'], params=bench['params'],
                         phase='write', change=-0.42, since='2026-01-04', night='2026-01-05',
                         confirmation='confirmed'),
                    dict(status='regression', scope='system', system='local', partition='default',
                         environ='*', check='*', params='', phase='read', change=-0.3,
                         since='2026-01-05', night='2026-01-05', confirmation='confirmed'),
                    dict(status='noisy', scope='series', system='local', partition='default',
                         environ='mpi-gnu', check=bench['check'], params=bench['params'],
                         phase='read', change=-0.2, since=None, night='2026-01-05',
                         confirmation='not reproduced')]
        (run_dir / 'post' / 'verdict.json').write_text(json.dumps(
            {'schema': 'ioregress-verdict/1', 'written': written.isoformat(), 'confirmation': 'done',
             'status': 'regression', 'findings': findings}))
        proc = postprocess('export-findings', '--run', str(run_dir), '--system', 'local',
                           '--config', str(settings))
        assert proc.returncode == 0 and '3 finding(s) ->' in proc.stdout, proc.stdout + proc.stderr
        got = {s[0]['scope']: s for s in vm.export('ioregress_finding{status="regression"}', expect=2)}
        assert set(got) == {'series', 'system'}
        [(other, _, _)] = vm.export('ioregress_finding{status!="regression"}', expect=1)
        assert other['confirmation'] == 'not reproduced' and 'since' not in other   # empty labels are no labels
        labels, values, stamps = got['series']
        assert (labels['since'], labels['change'], labels['status'], labels['check']) == \
            ('2026-01-04', '-42.0%', 'regression', bench['check'])
        assert labels['page'].endswith('/runs/20260105T020000Z-local-quick/post/report/index.html')
        assert values == [1.0] and stamps == [int(written.timestamp()) * 1000]   # a finding: Grafana draws it
        assert got['system'][0]['phase'] == 'read' and got['system'][0]['since'] == '2026-01-05'

        # every query of the Grafana dashboard answers with data (variables at 'All')
        exprs, variables = dashboard_queries()
        assert len(exprs) >= 3
        for expr in exprs:
            assert vm.query(grafana_substitute(expr), at), expr
        for definition in variables:      # label_values(metric{...}, label) -> the series API
            m = re.fullmatch(r'label_values\((.+), (\w+)\)', definition)
            assert m, definition
            assert any(m.group(2) in s[0] for s in vm.export(grafana_substitute(m.group(1)))), definition


def test_unreachable_store_is_a_warning_not_a_failure(tmp_path):
    dead = f'http://127.0.0.1:{free_port()}'
    settings = checkout_with_export(tmp_path, dead)
    proc = run_checks(settings, tmp_path / 'rf', ['BaselineFio'])
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert 'httpjson: could not connect to server 127.0.0.1' in out
    runs, _ = read_perflogs(tmp_path / 'rf' / 'perflogs')
    assert len(runs) == 1                                   # the perflog has the night
    run_dir = tmp_path / 'results' / 'runs' / '20260105T020000Z-local-quick'
    (run_dir / 'post').mkdir(parents=True)
    (run_dir / 'post' / 'verdict.json').write_text(json.dumps(
        {'written': datetime.datetime.now(datetime.timezone.utc).isoformat(),
         'findings': [{'status': 'regression', 'system': 'local', 'change': -0.5}]}))
    proc = postprocess('export-findings', '--run', str(run_dir), '--system', 'local',
                       '--config', str(settings))
    assert proc.returncode == 0
    assert proc.stdout == '' and len(proc.stderr.splitlines()) == 1
    assert f'1 finding(s) not exported to {dead}' in proc.stderr
    # a store that answers with errors (overloaded, wrong URL): the check passes, the perflog has it
    with webhook(status=500) as (port, posted):
        settings = checkout_with_export(tmp_path / 'failing', f'http://127.0.0.1:{port}')
        proc = run_checks(settings, tmp_path / 'rf2', ['BaselineFio'])
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out[-3000:]
        assert 'could not log performance data' in out and posted
        assert len(read_perflogs(tmp_path / 'rf2' / 'perflogs')[0]) == 1
    # a store behind basic auth (vmauth): the credentials go as a header, never into a log line
    with webhook() as (port, posted):
        proc = postprocess('export-findings', '--run', str(run_dir), '--system', 'local',
                           '--url', f'http://ioregress:s%40cret@127.0.0.1:{port}')
        assert proc.returncode == 0 and 's%40cret' not in proc.stdout + proc.stderr
        assert proc.stdout == f'export-findings: 1 finding(s) -> http://127.0.0.1:{port}\n'
        assert posted[0][0] == '/api/v1/import'
        assert posted.headers[0]['Authorization'] == 'Basic ' + base64.b64encode(b'ioregress:s@cret').decode()
    # not configured: nothing at all
    proc = postprocess('export-findings', '--run', str(run_dir), '--system', 'local',
                       '--config', str(REPO / 'configs' / 'settings.py'))
    assert proc.returncode == 0 and proc.stdout + proc.stderr == ''


def test_nightly_sends_values_when_the_system_file_says_so(tmp_path):
    """ci/nightly.sh with a configuration whose `local` system exports: tonight's values reach
    VictoriaMetrics through the nightly's own ReFrame run, and the night stays green."""
    with victoria_metrics(tmp_path) as vm:
        settings = checkout_with_export(tmp_path, vm.url)
        results = tmp_path / 'results'
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1',
                   IOREGRESS_CONFIG=str(settings))
        proc = subprocess.run([str(REPO / 'ci' / 'nightly.sh'), '--tag', 'quick', '--system', 'local',
                               '--results', str(results), '--name', 'BaselineFio'],
                              capture_output=True, text=True, env=env, timeout=900)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        runs, _ = read_perflogs(results / 'perflogs')
        [run] = runs
        sent = {s[0]['__name__']: s for s in vm.export('{system="local"}', expect=len(run['perf']))}
        assert set(sent) == {f'ioregress_{v}' for v in run['perf']}
        for var, perf in run['perf'].items():
            assert sent[f'ioregress_{var}'][1] == [pytest.approx(perf['value'], rel=1e-6)]


# ---- findings as Grafana draws them ----------------------------------------------------------------
def grafana_annotation_events(annotation, series, step_s):
    """Grafana's Prometheus annotation processing (its datasource's processAnnotationResponse) on a
    query_range answer: per series, the samples whose value is active become events, those at most a
    step apart merged into one region; title and text rendered from the series' labels. Most releases
    keep values > 0, some values >= 1: a sample must pass both to show in every one."""
    def render(fmt, labels):
        return re.sub(r'\{\{\s*(.+?)\s*\}\}', lambda m: labels.get(m.group(1), ''), fmt)
    events = []
    for s in series:
        active = [int(t) * 1000 for t, v in s['values'] if float(v) > 0 and float(v) >= 1]
        region = None
        for stamp in active:
            if region and region['timeEnd'] + step_s * 1000 >= stamp:
                region['timeEnd'] = stamp
                continue
            if region:
                events.append(region)
            region = {'time': stamp, 'timeEnd': stamp, 'labels': s['metric'],
                      'title': render(annotation['titleFormat'], s['metric']),
                      'text': render(annotation['textFormat'], s['metric'])}
        if region:
            events.append(region)
    return events


def test_every_exported_finding_is_a_grafana_annotation(tmp_path):
    """Each finding `export-findings` sends comes back from the dashboard's own annotation queries
    (read from configs/grafana/ioregress.json, variables at 'All', over Grafana's aligned range and
    annotation step) as a sample Grafana turns into an annotation, in the right one of the two
    (regressions red, the rest orange), titled with its change. Signed changes as values were
    dropped by Grafana (it keeps only values > 0), so regressions never showed."""
    written = datetime.datetime(2026, 1, 5, 2, 0, 7, tzinfo=datetime.timezone.utc)
    common = dict(system='local', partition='default', environ='mpi-gnu', night='2026-01-05')
    findings = [dict(common, status='regression', scope='series', check='BenchIO_a', params='size=64',
                     phase='write', change=-0.42, since='2026-01-04', confirmation='confirmed'),
                dict(common, status='regression', scope='system', check='*', environ='*', params='',
                     phase='read', change=-0.03, since='2026-01-05', confirmation='carried'),
                dict(common, status='improvement', scope='series', check='BenchIO_b', params='size=128',
                     phase='read', change=0.25, since='2026-01-05'),
                dict(common, status='failed', scope='series', check='BenchIO_c', params='size=32',
                     phase='write', change=None)]
    run_dir = tmp_path / 'runs' / '20260105T020000Z-local-nightly'
    (run_dir / 'post').mkdir(parents=True)
    (run_dir / 'post' / 'verdict.json').write_text(json.dumps(
        {'schema': 'ioregress-verdict/1', 'written': written.isoformat(), 'confirmation': 'done',
         'status': 'regression', 'findings': findings}))
    doc = json.loads((REPO / 'configs' / 'grafana' / 'ioregress.json').read_text())
    annotations = [a for a in doc['annotations']['list'] if 'ioregress_finding' in a.get('expr', '')]
    assert len(annotations) == 2
    with victoria_metrics(tmp_path) as vm:
        proc = postprocess('export-findings', '--run', str(run_dir), '--system', 'local', '--url', vm.url)
        assert proc.returncode == 0 and '4 finding(s) ->' in proc.stdout, proc.stdout + proc.stderr
        vm.export('ioregress_finding', expect=len(findings))
        drawn = {}
        for annotation in annotations:
            step = int(annotation['step'].rstrip('h')) * 3600
            assert annotation['step'].endswith('h') and not annotation['useValueForTime']
            start = (int(written.timestamp()) - 7 * 86400) // step * step    # Grafana aligns to step
            end = (int(written.timestamp()) + 86400) // step * step + step
            series = vm.query_range(grafana_substitute(annotation['expr']), start, end, step)
            drawn[annotation['name']] = grafana_annotation_events(annotation, series, step)
    red, other = (drawn[a['name']] for a in annotations)
    assert annotations[0]['iconColor'] == 'red'
    for f in findings:
        where = red if f['status'] == 'regression' else other
        [event] = [e for e in where if e['labels']['check'] == f['check'] and e['labels']['phase'] == f['phase']]
        assert written.timestamp() * 1000 - 1000 <= event['time'] <= written.timestamp() * 1000 + step * 1000
        change = '' if f['change'] is None else f"{f['change']:+.1%}"
        assert event['title'].rstrip().endswith(f"{f['system']}:{f['partition']} {f['check']} {f['phase']} {change}".rstrip())
        assert event['title'].startswith(f['status'])
    assert len(red) == 2 and len(other) == 2
    assert '-42.0%' in next(e['title'] for e in red if e['labels']['check'] == 'BenchIO_a')
