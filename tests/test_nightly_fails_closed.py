"""ci/nightly.sh fails closed: a postprocess step that cannot run (its command missing from the
checkout, or its code failing to import) is a failed step, never a skipped one. The night exits 1,
the terminal names the step with the reason, and the page (when the report itself can run) shows it.

Each case runs the real nightly of a copy of this checkout with one real fault put into its code
(ReFrame is tests/fixtures/fake_reframe.py, as in tests/test_notify.py). The copy is installed as
ci/setup.sh installs a checkout (`pip install -e`), into a virtual environment that sees the
machine's packages, so it is what that nightly imports, as ci/installed_here.py demands."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _checkout(tmp_path):
    """The parts of this checkout a nightly runs and pyproject.toml installs."""
    copy = tmp_path / 'checkout'
    for part in ('ci', 'configs', 'contract', 'gate', 'postprocess', 'reframe_checks'):
        shutil.copytree(REPO / part, copy / part,
                        ignore=shutil.ignore_patterns('__pycache__', '*.pyc'))
    for name in ('pyproject.toml', 'README.md', 'LICENSE', 'ioregress_env.py'):
        shutil.copy(REPO / name, copy / name)
    return copy


def _clean_env():
    # what the caller's shell may add to the import path would shadow the copy's install
    return {k: v for k, v in os.environ.items() if not k.startswith('PYTHON')}


def _install(tmp_path, copy):
    """A virtual environment (with the machine's packages) where `copy` is installed editable."""
    venv = tmp_path / 'venv'
    subprocess.run([sys.executable, '-m', 'venv', '--system-site-packages', str(venv)], check=True,
                   env=_clean_env())
    subprocess.run([str(venv / 'bin' / 'python'), '-m', 'pip', 'install', '-q', '--no-deps',
                    '--no-build-isolation', '-e', str(copy)], check=True, env=_clean_env(),
                   capture_output=True, timeout=600)
    return venv / 'bin' / 'python'


def _night(tmp_path, copy):
    fake = tmp_path / 'fake-reframe'
    shutil.copy(REPO / 'tests' / 'fixtures' / 'fake_reframe.py', fake)
    fake.chmod(0o755)
    python = _install(tmp_path, copy)
    env = dict(_clean_env(), REFRAME=str(fake), FAKE_LINES='3', PYTHON=str(python),
               FAKE_PERFLOG=str(REPO / 'tests' / 'fixtures' / 'perflogs' / 'real' / 'local'
                                / 'default' / 'BenchIO.log'),
               FAKE_TIME='2026-11-04T03:00:00+00:00')
    for var in ('IOREGRESS_STORE', 'IOREGRESS_THIS_RUN', 'IOREGRESS_NOTIFY'):
        env.pop(var, None)
    results = tmp_path / 'results'
    proc = subprocess.run(['bash', str(copy / 'ci' / 'nightly.sh'), '--system', 'local',
                           '--results', str(results)], capture_output=True, text=True, env=env,
                          timeout=600)
    return proc, proc.stdout + proc.stderr, results / 'latest'


def test_a_missing_postprocess_command_fails_the_night_and_shows_on_the_page(tmp_path):
    copy = _checkout(tmp_path)
    cli = copy / 'postprocess' / 'cli.py'
    text = cli.read_text()
    assert "    'postprocess.darshan.cli:register'," in text
    cli.write_text(text.replace("    'postprocess.darshan.cli:register',", ''))
    proc, out, run = _night(tmp_path, copy)
    assert proc.returncode == 1, out[-3000:]
    line = next(ln for ln in out.splitlines() if 'postprocess darshan-index cannot run' in ln)
    assert line.startswith('nightly.sh: FAILED: ') and "invalid choice: 'darshan-index'" in line
    assert 'skipped' not in line
    assert 'FAILED: a postprocess step failed' in out
    # the other steps ran: the night was judged and its page written, with the failed step on it
    assert (run / 'post' / 'detect.json').exists()
    page = (run / 'post' / 'report' / 'index.html').read_text()
    assert 'failed step' in page and 'darshan-index' in page and 'cannot run' in page
    assert 'Nothing needs your attention' not in page


def test_an_import_error_in_the_verdict_code_fails_the_night(tmp_path):
    copy = _checkout(tmp_path)
    code = copy / 'postprocess' / 'detect' / 'cli.py'
    code.write_text('import ioregress_no_such_module  # the fault\n' + code.read_text())
    proc, out, run = _night(tmp_path, copy)
    assert proc.returncode == 1, out[-3000:]
    why = "cannot run: ModuleNotFoundError: No module named 'ioregress_no_such_module'"
    for step in ('darshan-index', 'detect', 'report'):
        assert f'nightly.sh: FAILED: postprocess {step} {why}' in out, (step, out[-3000:])
    steps = (run / 'post' / 'failed-steps.tsv').read_text().splitlines()
    assert [s.split('\t')[0] for s in steps][:3] == ['darshan-index', 'detect', 'report']
    assert 'nightly.sh: OK' not in out
