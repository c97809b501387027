"""Faults of an unattended night (issue 14): ci/nightly.sh killed at several stages, two nightlies at
once, a disk that fills while perflogs are appended, hostile names in perflogs and reports.

Most tests drive nightly.sh with a FAKE ReFrame (tests/fixtures/fake_reframe.py: it appends lines
of the real perflog fixture and can sleep between them) because killing at a chosen stage needs
timing control; the postprocess steps are real. `test_real_reframe_killed_midway` (slow) kills a real ReFrame run.
Checked every time: exit status, the run directory's INCOMPLETE/COMPLETE marker, the history perflogs
(every byte written before the night is unchanged) and what the next nightly counts as a night.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
NIGHTLY = REPO / 'ci' / 'nightly.sh'
REAL_LOG = REPO / 'tests' / 'fixtures' / 'perflogs' / 'real' / 'local' / 'default' / 'BenchIO.log'
DARSHAN_LOG = REPO / 'tests' / 'fixtures' / 'darshan' / 'iobench-posix-fpp.darshan'

FAKE_REFRAME = REPO / 'tests' / 'fixtures' / 'fake_reframe.py'   # see its docstring


@pytest.fixture
def fake(tmp_path):
    path = tmp_path / 'fake-reframe'
    shutil.copy(FAKE_REFRAME, path)
    path.chmod(0o755)
    return path


def night(day):
    return f'2026-11-{day:02d}T03:00:00+00:00'


def env_for(fake, day, **extra):
    env = dict(os.environ, REFRAME=str(fake), FAKE_PERFLOG=str(REAL_LOG), FAKE_TIME=night(day))
    env.pop('IOREGRESS_STORE', None)
    env.pop('IOREGRESS_THIS_RUN', None)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def seed_history(fake, results, days):
    """Nights written straight by the fake (history from before this run-directory ledger)."""
    for day in days:
        subprocess.run([str(fake), '-r', '--perflogdir', str(results / 'perflogs'),
                        '--report-file', str(results / 'seed.json')],
                       env=env_for(fake, day), check=True, capture_output=True)


def start_nightly(fake, results, day, out, **extra):
    return subprocess.Popen(['bash', str(NIGHTLY), '--system', 'local', '--results', str(results)],
                            stdout=open(out, 'w'), stderr=subprocess.STDOUT,
                            env=env_for(fake, day, **extra), start_new_session=True)


def nightly(fake, results, day, **extra):
    proc = subprocess.run(['bash', str(NIGHTLY), '--system', 'local', '--results', str(results)],
                          capture_output=True, text=True, env=env_for(fake, day, **extra),
                          timeout=600)
    return proc


def wait_for(path, text, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.exists() and text in path.read_text(errors='replace'):
            return
        time.sleep(0.1)
    raise AssertionError(f'{text!r} never appeared in {path}:\n{path.read_text(errors="replace")}')


def session_pids(sid):
    pids = []
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                stat = Path(f'/proc/{entry}/stat').read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(')') + 2:].split()
            if int(fields[3]) == sid and fields[0] != 'Z':
                pids.append(int(entry))
    return pids


def kill_session(sid, sig):
    """What a CI runner or the OOM killer does: every process of the nightly's session."""
    for pid in session_pids(sid):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def perflog_bytes(results):
    root = results / 'perflogs'
    return {p: p.read_bytes() for p in root.rglob('*.log*')} if root.exists() else {}


def assert_history_intact(before, results):
    after = perflog_bytes(results)
    for path, data in before.items():
        assert after[path][:len(data)] == data, f'{path}: earlier history bytes changed'


def history_nights(results):
    """Nights the results store holds (incomplete runs never enter it), via `ingest`."""
    proc = subprocess.run([sys.executable, '-m', 'postprocess', 'ingest', '--store',
                           str(results / 'store'), '--format', 'jsonl'], cwd=REPO,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return sorted({json.loads(line)['night'] for line in proc.stdout.splitlines()})


def run_dirs(results):
    return sorted((results / 'runs').iterdir())


@pytest.mark.parametrize('sig, stage, whom', [
    (signal.SIGTERM, 'reframe', 'pid'),          # the nightly alone (kill PID): it stops ReFrame
    (signal.SIGKILL, 'reframe', 'session'),      # OOM killer / CI hard kill of the whole tree
    (signal.SIGTERM, 'postprocess', 'session'),  # CI cancel while detect/report run
    (signal.SIGKILL, 'postprocess', 'session'),
    # night 6: one check 5x slower, far below its five usual nights: the nightly re-runs it
    (signal.SIGTERM, 'confirmation', 'session'),
    (signal.SIGKILL, 'confirmation', 'session'),
])
def test_nightly_killed_leaves_history_and_next_night_ignores_it(fake, tmp_path, sig, stage, whom):
    results = tmp_path / 'results'
    seed_history(fake, results, [1, 2, 3, 4, 5])   # min_nights: judged
    before = perflog_bytes(results)
    out = tmp_path / 'killed.out'
    extra = {'reframe': {'FAKE_SLEEP': 1.5}, 'postprocess': {},
             'confirmation': {'FAKE_SCALE': 0.2, 'FAKE_SCALE_MATCH': 'posix:fpp',
                              'FAKE_CONFIRM_SLEEP': 60}}[stage]
    proc = start_nightly(fake, results, 6, out, **extra)
    wait_for(out, {'reframe': 'line 2 written', 'postprocess': 'nightly.sh: postprocess ',
                   'confirmation': 'confirmation: re-running'}[stage])
    if stage == 'confirmation':
        wait_for(next((results / 'runs').iterdir()) / 'confirm' / 'reframe.out',
                 'confirmation re-run')
    if whom == 'pid':
        os.kill(proc.pid, sig)
    else:
        kill_session(proc.pid, sig)
    status = proc.wait(timeout=120)
    text = out.read_text()
    assert status == (-9 if sig == signal.SIGKILL else 143), text
    assert 'nightly.sh: OK' not in text
    time.sleep(0.5)
    assert session_pids(proc.pid) == [], 'processes of the killed nightly survive'
    (killed,) = run_dirs(results)
    assert (killed / 'INCOMPLETE').exists() and not (killed / 'COMPLETE').exists()
    if sig == signal.SIGTERM:
        assert f'stopped by SIGTERM during {stage}' in (killed / 'INCOMPLETE').read_text()
    assert_history_intact(before, results)
    assert history_nights(results) == [f'2026-11-0{d}' for d in range(1, 6)]

    nxt = nightly(fake, results, 7)
    assert nxt.returncode == 0, nxt.stdout + nxt.stderr
    assert f'run {killed.name} did not complete' in nxt.stdout
    assert 'nightly.sh: OK' in nxt.stdout
    done = [d for d in run_dirs(results) if d != killed]
    assert len(done) == 1 and (done[0] / 'COMPLETE').read_text().startswith('exit status 0')
    assert (killed / 'INCOMPLETE').exists()                 # still not a night, for good
    assert history_nights(results) == [f'2026-11-0{d}' for d in (1, 2, 3, 4, 5, 7)]
    findings = json.loads((done[0] / 'post' / 'detect.json').read_text())
    # every series judged on the five good nights, the killed one not among them (the fake's
    # phases are too short for a stack level: bandwidth-bound members only, docs/verdicts.md)
    latest = [f for f in findings if f.get('night') == '2026-11-07' and f['scope'] == 'series']
    assert latest and all(f['history_nights'] == 5 for f in latest), \
        [(f['check'], f['history_nights']) for f in latest]


def test_two_nightlies_at_once_keep_history_whole(fake, tmp_path):
    results = tmp_path / 'results'
    seed_history(fake, results, [1, 2, 3])
    outs = [tmp_path / 'a.out', tmp_path / 'b.out']
    procs = [start_nightly(fake, results, 4 + i, outs[i], FAKE_SLEEP=0.3) for i in range(2)]
    statuses = [p.wait(timeout=600) for p in procs]
    assert statuses == [0, 0], [o.read_text() for o in outs]
    runs = run_dirs(results)
    assert len(runs) == 2 and all((r / 'COMPLETE').exists() for r in runs)
    log = results / 'perflogs' / 'local' / 'default' / 'BenchIO.log'
    lines = log.read_text().splitlines()
    assert len(lines) == 1 + 5 * 6 and all(line.count('|') == lines[1].count('|')
                                           for line in lines[1:])
    assert history_nights(results) == [f'2026-11-0{d}' for d in range(1, 6)]


@pytest.fixture
def small_tmpfs(tmp_path):
    mnt = tmp_path / 'mnt'
    mnt.mkdir()
    proc = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=3m', 'tmpfs', str(mnt)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f'cannot mount a tmpfs (root needed): {proc.stderr.strip()}')
    yield mnt
    subprocess.run(['umount', '-l', str(mnt)], check=False)


def test_full_disk_while_perflogs_are_appended(fake, small_tmpfs, tmp_path):
    results = small_tmpfs / 'results'
    seed_history(fake, results, [1, 2, 3])
    before = perflog_bytes(results)
    proc = nightly(fake, results, 4, FAKE_FILL=2)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 1, text
    assert 'No space left on device' in text and 'nightly.sh: OK' not in text
    assert 'Traceback' not in proc.stderr.replace('--- Logging error ---\nTraceback', ''), proc.stderr
    assert_history_intact(before, results)
    # space back: the next night runs normally and every earlier line is still read
    (results / 'filler').unlink()
    nxt = nightly(fake, results, 5)
    assert nxt.returncode == 0, nxt.stdout + nxt.stderr
    assert_history_intact(before, results)
    assert {'2026-11-01', '2026-11-02', '2026-11-03', '2026-11-05'} <= set(history_nights(results))


def test_postprocess_outputs_on_a_full_disk_stay_whole(small_tmpfs):
    out = small_tmpfs / 'report'
    synth = REPO / 'tests' / 'fixtures' / 'perflogs' / 'synthetic'
    cmd = [sys.executable, '-m', 'postprocess']
    first = subprocess.run(cmd + ['detect', '--perflogs', str(synth), '--json', str(out / 'd.json')],
                           cwd=REPO, capture_output=True, text=True)
    assert first.returncode == 1 and (out / 'd.json').exists()        # 1: a regression is shown
    previous = (out / 'd.json').read_bytes()
    filler = small_tmpfs / 'filler'
    with pytest.raises(OSError):
        with open(filler, 'wb') as fp:
            while True:
                fp.write(b'x' * 65536)
                fp.flush()
    for args in (['detect', '--perflogs', str(synth), '--all-nights', '--json', str(out / 'd.json')],
                 ['ingest', '--perflogs', str(synth), '-o', str(out / 'tidy.csv')],
                 ['report', '--perflogs', str(synth), '-o', str(out / 'r')]):
        proc = subprocess.run(cmd + args, cwd=REPO, capture_output=True, text=True)
        assert proc.returncode == 1, proc.stderr
        errors = [line for line in proc.stderr.splitlines() if 'error' in line]
        assert len(errors) == 1 and 'No space left on device' in errors[0], proc.stderr
        assert 'Traceback' not in proc.stderr
    assert (out / 'd.json').read_bytes() == previous
    assert not (out / 'tidy.csv').exists()
    assert not [p for p in out.rglob('.*.tmp')]


HOSTILE = ['<script>alert(1)</script>', '"><img src=x onerror=alert(2)>', "$(touch PWNED)",
           '; rm -rf ~ #', '../../../etc/evil', '`id`&amp;']


def hostile_perflog(root):
    """A perflog whose names and parameters are hostile strings (ReFrame writes what it is given)."""
    lines = REAL_LOG.read_text().splitlines()
    out = [lines[0]]
    for day in range(1, 6):
        for i, line in enumerate(lines[1:]):
            f = line.split('|')
            bad = HOSTILE[i % len(HOSTILE)]
            f[0] = f'2026-11-{day:02d}T03:0{i}:00+0000'
            f[2] = f'BenchIO {bad}'
            f[4] = 'p' + bad                      # partition
            f[5] = bad                            # environ
            f[6] = f[6].replace('stripe=default', f'stripe={bad.replace(",", ";")}')
            out.append('|'.join(f))
    path = root / 'local' / 'default' / 'BenchIO.log'
    path.parent.mkdir(parents=True)
    path.write_text('\n'.join(out) + '\n')


class ActiveContent(HTMLParser):
    """Elements and attributes a browser would act on: what a hostile name must never become."""

    def __init__(self):
        super().__init__()
        self.found, self._script = [], False

    def handle_starttag(self, tag, attrs):
        self._script = tag == 'script'
        for name, value in attrs:
            if name.startswith('on') or 'alert(' in (value or '') and name in ('href', 'src'):
                self.found.append(f'<{tag} {name}={value!r}>')
        if tag == 'img' and dict(attrs).get('src') == 'x':
            self.found.append('<img src=x>')

    def handle_data(self, data):
        # Names inside a script (Bokeh's JSON) are data; raw markup there would break out of it.
        if self._script and ('<script>alert(1)' in data or '<img src=x' in data):
            self.found.append(f'raw hostile markup inside a script: {data[:60]!r}')

    def handle_endtag(self, tag):
        self._script = False


def assert_escaped(html_text):
    parser = ActiveContent()
    parser.feed(html_text)
    assert parser.found == [], parser.found
    assert '<script>alert' not in html_text


def test_hostile_names_are_escaped_in_every_page(tmp_path):
    perflogs = tmp_path / 'perflogs'
    hostile_perflog(perflogs)
    work = tmp_path / 'cwd'
    work.mkdir()
    cmd = [sys.executable, '-m', 'postprocess']
    out = tmp_path / 'out'
    proc = subprocess.run(cmd + ['report', '--perflogs', str(perflogs), '-o', str(out / 'report')],
                          cwd=work, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    proc = subprocess.run(cmd + ['detect', '--perflogs', str(perflogs), '--all-nights',
                                 '--json', str(out / 'detect.json')],
                          cwd=work, capture_output=True, text=True)
    assert proc.returncode in (0, 1) and '<script>alert(1)</script>' in proc.stdout   # text: verbatim
    # Darshan index: hostile names from the run report of a results tree with one real log
    case_dir = tmp_path / 'run' / 'output' / 'local' / 'default' / 'gnu' / 'case'
    case_dir.mkdir(parents=True)
    shutil.copy(DARSHAN_LOG, case_dir / 'iobench.darshan')
    (tmp_path / 'run' / 'report.json').write_text(json.dumps({'runs': [{'testcases': [{
        'system': 'local', 'partition': HOSTILE[0], 'environ': HOSTILE[1],
        'display_name': HOSTILE[2] + HOSTILE[0], 'iob_params': HOSTILE[4], 'result': 'fail',
        'fail_reason': HOSTILE[1], 'outputdir': str(case_dir)}]}]}))
    proc = subprocess.run(cmd + ['darshan-index', str(tmp_path / 'run'), '-o', str(out / 'darshan'),
                                 '--no-summaries', '-j', '1'],
                          cwd=work, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    pages = list(out.rglob('*.html'))
    assert any(p.parent.name == 'report' for p in pages) and any('darshan' in str(p) for p in pages)
    for page in pages:
        assert_escaped(page.read_text(errors='replace'))
    # nothing written outside the outputs, no command substitution ran
    for path in out.rglob('*'):
        assert path.resolve().is_relative_to(out.resolve()), path
    assert list(work.iterdir()) == [] and not (tmp_path / 'PWNED').exists()
    assert {p.name for p in tmp_path.iterdir()} == {'perflogs', 'cwd', 'out', 'run'}


@pytest.mark.parametrize('name', ['../x', 'a/b', '<b>', 'x;id', '$(id)', '-rf', 'a b', 'x' * 65])
def test_hostile_system_names_rejected_everywhere(fake, tmp_path, name):
    env = env_for(fake, 1)
    proc = subprocess.run(['bash', str(NIGHTLY), '--system', name, '--results', str(tmp_path / 'r')],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 2 and proc.stderr.count('\n') == 1, proc.stderr
    assert f"bad system name '{name}'" in proc.stderr and not (tmp_path / 'r').exists()
    for cmd in (['detect', '--perflogs', str(REAL_LOG.parent), f'--system={name}'],
                ['calibrate', '--perflogs', str(REAL_LOG.parent), f'--system={name}',
                 '-o', str(tmp_path / 'refs.yaml')]):
        proc = subprocess.run([sys.executable, '-m', 'postprocess'] + cmd, cwd=tmp_path,
                              capture_output=True, text=True, env=env)
        assert proc.returncode == 2 and proc.stderr.count('\n') == 1, proc.stderr
        assert f"bad system name '{name}'" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ['fake-reframe']


@pytest.mark.slow
def test_real_reframe_killed_midway(tmp_path):
    """A real ReFrame quick run, SIGTERM to the nightly once the first perflog line is written."""
    results = tmp_path / 'results'
    out = tmp_path / 'nightly.out'
    env = dict(os.environ)
    env.pop('REFRAME', None)
    proc = subprocess.Popen(['bash', str(NIGHTLY), '--system', 'local', '--results', str(results),
                             '--name', 'BenchIO'], stdout=open(out, 'w'), stderr=subprocess.STDOUT,
                            env=env, start_new_session=True)
    log = results / 'perflogs' / 'local' / 'default' / 'BenchIO.log'
    deadline = time.time() + 900
    while time.time() < deadline and proc.poll() is None:
        if log.exists() and len(log.read_text().splitlines()) >= 2:
            break
        time.sleep(0.5)
    assert proc.poll() is None, out.read_text()
    before = perflog_bytes(results)
    os.kill(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=120) == 143, out.read_text()
    time.sleep(1)
    assert session_pids(proc.pid) == [], 'ReFrame or its jobs survive the stopped nightly'
    (run,) = run_dirs(results)
    assert (run / 'INCOMPLETE').exists() and not (run / 'COMPLETE').exists()
    assert_history_intact(before, results)
    # the perflogs keep its lines (nothing rewrites them); the history is the store, and a run
    # killed before its EXIT trap never enters it (docs/CONTRACT.md section 3)
    assert not list((results / 'store').rglob('*.parquet'))
    ingest = subprocess.run([sys.executable, '-m', 'postprocess', 'ingest', '--store',
                             str(results / 'store')], cwd=REPO, capture_output=True, text=True,
                            env=env)
    assert ingest.returncode == 2 and 'no history in the store' in ingest.stderr, ingest.stderr


def broken_config(tmp_path, text):
    """A copy of configs/ with one broken system file (the real tree is shared: never touched)."""
    cfg = tmp_path / 'configs'
    shutil.copytree(REPO / 'configs', cfg, ignore=shutil.ignore_patterns('__pycache__'))
    (cfg / 'systems' / 'broken.py').write_text(text)
    return cfg / 'settings.py'


NIGHTLY_BAD = [     # (arguments, environment, words, exit status); {t} = tmp_path
    (['--tag', 'weekly'], {}, "unknown tag 'weekly'", 2),
    (['--tag'], {}, "option '--tag' needs a value", 2),
    (['--system'], {}, "option '--system' needs a value", 2),
    (['--bogus'], {}, "unknown option '--bogus'", 2),
    (['--name', '(unclosed'], {}, "bad --name regular expression '(unclosed'", 2),
    (['--system', 'nosuch'], {}, "unknown system 'nosuch'", 2),
    (['--system', 'local'], {'REFRAME': '/nonexistent/reframe'}, "reframe not found: '/nonexistent/reframe'", 2),
    (['--system', 'local', '--results', '{t}/afile'], {}, "results path is not a directory '{t}/afile'", 2),
    (['--system', 'local', '--results', '{t}/afile/sub'], {}, "cannot create results directory '{t}/afile/sub'", 1),
    (['--system', 'local'], {'IOREGRESS_CONFIG': '{t}/nosuch.py'}, "no ReFrame configuration file '{t}/nosuch.py'", 2),
    (['--system', 'local'], {'BROKEN': 'site_configuration = {"systems": [ {"name": "x"\n'},
     "system file '{t}/configs/systems/broken.py'): SyntaxError", 2),
    (['--system', 'local'], {'BROKEN': 'import nosuchmodule_ioregress\n'},
     "No module named 'nosuchmodule_ioregress'", 2),
]


@pytest.mark.parametrize('args, env, words, status', NIGHTLY_BAD,
                         ids=[f'{i:02d}' for i in range(len(NIGHTLY_BAD))])
def test_nightly_bad_usage_is_one_line(fake, tmp_path, args, env, words, status):
    (tmp_path / 'afile').write_text('a regular file\n')
    fill = lambda a: str(a).replace('{t}', str(tmp_path))  # noqa: E731
    environ = env_for(fake, 1)
    environ.update({k: fill(v) for k, v in env.items() if k != 'BROKEN'})
    if 'BROKEN' in env:                 # the real ReFrame reads the broken configuration
        environ.pop('REFRAME')
        environ['IOREGRESS_CONFIG'] = str(broken_config(tmp_path, env['BROKEN']))
    args = [fill(a) for a in args]
    if '--results' not in args:
        args += ['--results', str(tmp_path / 'results')]
    before = sorted(p.name for p in tmp_path.iterdir())
    proc = subprocess.run(['bash', str(NIGHTLY)] + args, capture_output=True, text=True, env=environ,
                          timeout=300)
    assert proc.returncode == status, proc.stderr
    assert proc.stderr.count('\n') == 1 and fill(words) in proc.stderr, proc.stderr
    assert proc.stdout == '' and 'Traceback' not in proc.stderr and '\x1b[' not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before              # nothing created
