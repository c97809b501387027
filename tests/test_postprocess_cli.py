"""`python -m postprocess` end to end on committed perflogs: outputs, messages, exit codes."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SYNTH = REPO / 'tests' / 'fixtures' / 'perflogs' / 'synthetic'
REAL = REPO / 'tests' / 'fixtures' / 'perflogs' / 'real'


def pp(*args, cwd=REPO):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, '-m', 'postprocess', *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.parametrize('args, word', [
    ([], 'a command is required'),
    (['bogus'], "invalid choice: 'bogus'"),
    (['ingest'], 'give --perflogs'),
    (['ingest', '--perflogs', '/nonexistent/x'], "no such file or directory '/nonexistent/x'"),
    (['detect', '--perflogs', SYNTH, '--from', '2026-13-01'], "'2026-13-01'"),
    (['detect', '--perflogs', SYNTH, '--from', '2026-11-05', '--to', '2026-11-01'], 'is after'),
    (['detect', '--perflogs', SYNTH, '--window', '0'], "'0'"),
    (['detect', '--perflogs', SYNTH, '--window', 'x'], "invalid int value: 'x'"),
    (['calibrate', '--perflogs', SYNTH], 'the following arguments are required: --system'),
    (['report', '--perflogs', SYNTH], 'the following arguments are required: -o/--output'),
])
def test_bad_arguments_one_line_exit_2(tmp_path, args, word):
    proc = pp(*args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count('\n') == 1 and word in proc.stderr, proc.stderr
    assert 'Traceback' not in proc.stderr and proc.stdout == ''
    assert list(tmp_path.iterdir()) == []                     # nothing created


def test_ingest_csv_reports_bad_lines_and_keeps_the_rest(tmp_path):
    out = tmp_path / 'tidy.csv'
    proc = pp('ingest', '--perflogs', SYNTH, '-o', out)
    assert proc.returncode == 0, proc.stderr
    assert 'BenchIO.log:17: expected 26 fields' in proc.stderr
    lines = out.read_text().splitlines()
    assert lines[0].startswith('system,partition,environ,check,params,time,night')
    assert len(lines) - 1 == 155 * 10 - 1          # 5 reps x 2 phases per run, one bad rep
    assert not list(tmp_path.glob('.*'))


def test_detect_exit_status_and_json(tmp_path):
    out = tmp_path / 'findings.json'
    proc = pp('detect', '--perflogs', SYNTH, '--value', 'efficiency', '--all-nights', '--json', out)
    assert proc.returncode == 1                    # a regression on the latest night
    assert proc.stdout.count('REGRESSION') == 1 and proc.stdout.count('IMPROVEMENT') == 1
    findings = json.loads(out.read_text())
    assert {f['status'] for f in findings} >= {'ok', 'regression', 'insufficient history'}
    proc = pp('detect', '--perflogs', SYNTH, '--to', '2026-11-11')      # before the drop
    assert proc.returncode == 0 and 'REGRESSION' not in proc.stdout


def test_detect_empty_history_and_one_run(tmp_path):
    proc = pp('detect', '--perflogs', tmp_path)
    assert proc.returncode == 0 and 'no runs found' in proc.stderr
    proc = pp('detect', '--perflogs', REAL)
    assert proc.returncode == 0 and proc.stdout.count('INSUFFICIENT HISTORY') == 14


def test_calibrate_cli_writes_stamped_file_atomically(tmp_path):
    out = tmp_path / 'refs' / 'synthetic.yaml'
    proc = pp('calibrate', '--system', 'synthetic', '--perflogs', SYNTH, '--from', '2026-11-01',
              '--to', '2026-11-11', '-o', out)
    assert proc.returncode == 0, proc.stderr
    assert '13 entries calibrated from 142 runs' in proc.stdout
    text = out.read_text()
    assert 'from runs 2026-11-01..2026-11-11' in text and '# calibrated 2026-11-01..2026-11-11' in text
    assert [p.name for p in out.parent.iterdir()] == ['synthetic.yaml']
    proc = pp('calibrate', '--system', 'nosuch', '--perflogs', SYNTH, '-o', tmp_path / 'n.yaml')
    assert proc.returncode == 1 and "no runs of system 'nosuch'" in proc.stderr
    assert not (tmp_path / 'n.yaml').exists()


def test_report_writes_pngs_and_html(tmp_path):
    (tmp_path / 'darshan').mkdir()
    (tmp_path / 'darshan' / 'index.html').write_text('<html></html>')
    proc = pp('report', '--perflogs', SYNTH, '-o', tmp_path, '--value', 'efficiency',
              '--max-history-plots', '3')
    assert proc.returncode == 0, proc.stderr
    pngs = sorted(p.name for p in (tmp_path / 'figures').glob('*.png'))
    kinds = {name.split('_')[0] for name in pngs}
    assert kinds == {'bw', 'stripes', 'libraries', 'history'}
    for name in pngs:
        assert (tmp_path / 'figures' / name).read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    page = (tmp_path / 'index.html').read_text()
    assert page.count('<img ') == len(pngs)
    assert 'href="darshan/index.html"' in page and 'regression' in page
    # the flagged series come first under a limit
    assert any('mpiio_collective' in n and n.startswith('history_write') for n in pngs)


def test_report_with_no_data_says_so(tmp_path):
    proc = pp('report', '--perflogs', REAL, '-o', tmp_path / 'out', '--max-history-plots', '2')
    assert proc.returncode == 0
    assert 'no series with two or more rank counts' in proc.stderr
    assert "no runs with a stripe setting other than 'default'" in proc.stderr
    page = (tmp_path / 'out' / 'index.html').read_text()
    assert 'No data for this figure' in page and 'Darshan' not in page
    assert len(list((tmp_path / 'out' / 'figures').glob('history_*.png'))) == 2
    assert 'history: 14 series, 2 plotted' in proc.stderr
