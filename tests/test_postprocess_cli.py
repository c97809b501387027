"""`python -m postprocess` end to end on committed perflogs: outputs, messages, exit codes."""
import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SYNTH = REPO / 'tests' / 'fixtures' / 'perflogs' / 'synthetic'
REAL = REPO / 'tests' / 'fixtures' / 'perflogs' / 'real'


def pp(*args, cwd=REPO):
    return subprocess.run([sys.executable, '-m', 'postprocess', *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def make_bad_inputs(root):
    """Files a site could hand the CLI by mistake, created under ``root``."""
    (root / 'empty').mkdir()
    (root / 'notlogs').mkdir()
    (root / 'notlogs' / 'README.txt').write_text('hello\n')
    (root / 'headeronly').mkdir()
    (root / 'headeronly' / 'X.log').write_text(
        (REAL / 'local' / 'default' / 'BenchIO.log').read_text().splitlines()[0] + '\n')
    (root / 'garbage.log').write_bytes(bytes(range(256)) * 8)
    (root / 'garbage.db').write_bytes(b'not sqlite at all\n' * 100)
    (root / 'afile').write_text('a regular file\n')
    conn = sqlite3.connect(root / 'other.db')
    conn.execute('CREATE TABLE t (x)')
    conn.commit()
    conn.close()
    conn = sqlite3.connect(root / 'damaged.db')
    conn.execute('CREATE TABLE sessions (uuid TEXT, session_start_unix REAL, json_blob TEXT)')
    conn.execute('CREATE INDEX s_i ON sessions (uuid)')
    conn.executemany('INSERT INTO sessions VALUES (?, ?, ?)',
                     [(f'u{i}', i, 'x' * 3000) for i in range(200)])
    conn.commit()
    conn.close()
    data = bytearray((root / 'damaged.db').read_bytes())
    data[4096 * 3:4096 * 5] = b'\xff' * 8192                 # two pages of the table overwritten
    (root / 'damaged.db').write_bytes(bytes(data))
    refs = {'malformed.yaml': 'BenchIO: [unclosed\n', 'list.yaml': '- a list\n',
            'badindex.yaml': 'BenchIO:\n  $index: 3\n',
            'badtuple.yaml': "BenchIO:\n  $index: [$partition, iob_params]\n  'local:default':\n"
                             "    'backend=posix': {write_bw: [fast, -0.1, null, MiB/s]}\n"}
    for name, text in refs.items():
        (root / name).write_text(text)


BAD = [     # (arguments, words the one line must hold, exit status); {t} = the fixture directory
    ([], 'a command is required', 2),
    (['bogus'], "invalid choice: 'bogus'", 2),
    (['ingest'], 'give --perflogs', 2),
    (['ingest', '--perflogs', '/nonexistent/x'], "no such file or directory '/nonexistent/x'", 2),
    (['ingest', '--perflogs', SYNTH, '--format', 'xml'], "invalid choice: 'xml'", 2),
    (['detect', '--perflogs', SYNTH, '--from', '2026-13-01'], "'2026-13-01'", 2),
    (['detect', '--perflogs', SYNTH, '--from', '2026-11-05', '--to', '2026-11-01'], 'is after', 2),
    (['detect', '--perflogs', SYNTH, '--set', 'window=0'], "window must be positive: '0'", 2),
    (['detect', '--perflogs', SYNTH, '--set', 'window=x'], "bad value for window: 'x'", 2),
    (['detect', '--perflogs', SYNTH, '--set', 'pool_nights=3'], "unknown setting 'pool_nights=3'",
     2),
    (['detect', '--perflogs', SYNTH, '--value', 'speed'], "invalid choice: 'speed'", 2),
    (['calibrate', '--perflogs', SYNTH], 'the following arguments are required: --system', 2),
    (['report', '--perflogs', SYNTH], 'the following arguments are required: -o/--output', 2),
    (['detect', '--perflogs', '{t}/empty'], "no perflog files (*.log, *.log.h<N>) in '{t}/empty'", 2),
    (['detect', '--perflogs', '{t}/notlogs'], "no perflog files", 2),
    (['detect', '--perflogs', '{t}/headeronly'], "no perflog line with a measurement in '{t}/headeronly'", 2),
    (['ingest', '--perflogs', '{t}/garbage.log'], "no perflog line with a measurement in '{t}/garbage.log'", 2),
    (['detect', '--perflogs', SYNTH, '--system', 'nosuch'], "no runs of system 'nosuch'", 2),
    (['detect', '--perflogs', SYNTH, '--to', '2001-01-01'], 'no runs of dates .....2001-01-01', 2),
    (['detect', '--perflogs', SYNTH, '--system', '../x'], "bad system name '../x'", 2),
    (['report', '--perflogs', SYNTH, '--system', '<b>x', '-o', '{t}/r'], "bad system name '<b>x'", 2),
    (['calibrate', '--perflogs', SYNTH, '--system', '../../tmp/x'], "bad system name '../../tmp/x'", 2),
    (['calibrate', '--perflogs', SYNTH, '--system', 'a;rm -rf x'], "bad system name 'a;rm -rf x'", 2),
    (['calibrate', '--perflogs', SYNTH, '--system', 'synthetic', '-o', '{t}/malformed.yaml'],
     "malformed reference file {t}/malformed.yaml: not valid YAML", 2),
    (['calibrate', '--perflogs', SYNTH, '--system', 'synthetic', '-o', '{t}/list.yaml'],
     'top level must be a mapping', 2),
    (['calibrate', '--perflogs', SYNTH, '--system', 'synthetic', '-o', '{t}/badindex.yaml'],
     'BenchIO.$index: expected a list', 2),
    (['calibrate', '--perflogs', SYNTH, '--system', 'synthetic', '-o', '{t}/badtuple.yaml'],
     "reference value must be a number, got 'fast'", 2),
    (['calibrate', '--perflogs', SYNTH, '--system', 'synthetic', '--vars', ','], "--vars names no variable: ','", 2),
    (['detect', '--db', '{t}/garbage.db'], "not a readable ReFrame results database '{t}/garbage.db'", 2),
    (['detect', '--db', '{t}/other.db'], "not a ReFrame results database '{t}/other.db'", 2),
    (['detect', '--db', '{t}/empty'], "not a file: --db '{t}/empty'", 2),
    (['detect', '--db', '{t}/damaged.db'], "damaged ReFrame results database '{t}/damaged.db'", 1),
    (['detect', '--perflogs', SYNTH, '--this-run', '{t}/nosuchrun'], "no such run directory", 2),
    (['report', '--perflogs', SYNTH, '--history-nights', '0', '-o', '{t}/r'], "'0'", 2),
    (['report', '--perflogs', SYNTH, '--max-history-plots', '-1', '-o', '{t}/r'], "'-1'", 2),
    (['ingest', '--perflogs', SYNTH, '-o', '{t}/afile/tidy.csv'], "'{t}/afile", 1),
    (['detect', '--perflogs', SYNTH, '--json', '{t}/afile/d.json'], "'{t}/afile", 1),
    (['report', '--perflogs', REAL, '-o', '{t}/afile/out'], "'{t}/afile", 1),
    (['ingest', '--perflogs', SYNTH, '-o', '{ro}/tidy.csv'], 'Read-only file system', 1),
    (['report', '--perflogs', REAL, '-o', '{ro}/report'], 'Read-only file system', 1),
    (['darshan-index', '{t}/nosuchdir', '-o', '{t}/d'], "results directory does not exist: '{t}/nosuchdir'", 2),
    (['darshan-diff', '{t}/garbage.log', '{t}/garbage.log'], '{t}/garbage.log', 2),
    (['darshan-check', '{t}/nosuch.darshan', '{t}/afile'], "no such Darshan log: '{t}/nosuch.darshan'", 2),
]


@pytest.fixture(scope='module')
def readonly_fs(tmp_path_factory):
    mnt = tmp_path_factory.mktemp('ro')
    proc = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'ro,size=1m', 'tmpfs', str(mnt)],
                          capture_output=True, text=True)
    if proc.returncode:
        pytest.fail(f'cannot mount a read-only tmpfs (root needed): {proc.stderr.strip()}')
    yield mnt
    subprocess.run(['umount', '-l', str(mnt)], check=False)


@pytest.mark.parametrize('args, words, status', BAD, ids=[f'{i:02d}' for i in range(len(BAD))])
def test_bad_input_one_line_no_traceback_nothing_written(tmp_path, readonly_fs, args, words, status):
    inputs = tmp_path / 'in'
    inputs.mkdir()
    make_bad_inputs(inputs)
    before = {p: p.read_bytes() for p in inputs.rglob('*') if p.is_file()}
    work = tmp_path / 'cwd'
    work.mkdir()
    fill = lambda a: str(a).replace('{t}', str(inputs)).replace('{ro}', str(readonly_fs))  # noqa: E731
    proc = pp(*map(fill, args), cwd=work)
    assert proc.returncode == status, proc.stderr
    assert proc.stderr.count('\n') == 1 and fill(words) in proc.stderr, proc.stderr
    assert 'Traceback' not in proc.stderr
    assert proc.stdout == '' or status == 1        # detect prints its findings before --json fails
    assert list(work.iterdir()) == []                                      # nothing created
    after = {p: p.read_bytes() for p in inputs.rglob('*') if p.is_file()}
    assert after == before                                                 # inputs untouched


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


def test_detect_one_run(tmp_path):
    proc = pp('detect', '--perflogs', REAL)
    # 14 series; no group level yet (its members have no usual level of their own)
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
    assert proc.returncode == 2 and "no runs of system 'nosuch'" in proc.stderr
    assert not (tmp_path / 'n.yaml').exists()


def test_report_writes_pngs_and_html(tmp_path):
    (tmp_path / 'darshan').mkdir()
    (tmp_path / 'darshan' / 'index.html').write_text('<html></html>')
    proc = pp('report', '--perflogs', SYNTH, '-o', tmp_path, '--value', 'efficiency',
              '--max-history-plots', '14')
    assert proc.returncode == 0, proc.stderr
    pngs = sorted(p.name for p in (tmp_path / 'figures').glob('*.png'))
    kinds = {name.split('_')[0] for name in pngs}
    assert kinds == {'bw', 'stripes', 'libraries', 'history'}
    for name in pngs:
        assert (tmp_path / 'figures' / name).read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    page = (tmp_path / 'index.html').read_text()
    assert page.count('<img ') == len(pngs)
    assert 'href="darshan/index.html"' in page and 'regression' in page
    # each of the 14 chosen series is drawn once: of the first 12 those with two nights or more
    # interactive, the rest as PNGs (the fio baseline has no efficiency of its own)
    figures = re.findall(r'<figure id="(h-\d+-(?:write|read))"', page)
    history_pngs = [n for n in pngs if n.startswith('history_')]
    assert 0 < len(figures) <= 12 and len(figures) + len(history_pngs) == 14
    assert not {f'h-{n.rsplit("_", 1)[1][:-4]}-{n.split("_")[1]}' for n in history_pngs} & set(figures)
    # the flagged series come first under a limit: its line links its interactive figure
    line = re.search(r'<li class="line regression".*?</li>', page, re.S).group(0)
    assert 'mpiio/collective' in line and '<i>write</i>' in line
    anchor = re.search(r'href="#(h-\d+-write)"', line).group(1)
    assert anchor in figures


def test_report_with_no_data_says_so(tmp_path):
    proc = pp('report', '--perflogs', REAL, '-o', tmp_path / 'out', '--max-history-plots', '2')
    assert proc.returncode == 0
    assert 'no series with two or more rank counts' in proc.stderr
    assert "no runs with a stripe setting other than 'default'" in proc.stderr
    page = (tmp_path / 'out' / 'index.html').read_text()
    assert 'No data for this figure' in page and 'Darshan' not in page
    drawn = len(list((tmp_path / 'out' / 'figures').glob('history_*.png'))) + \
        page.count('<figure id="h-')
    assert drawn == 2
    assert 'history: 14 series, 2 plotted' in proc.stderr
