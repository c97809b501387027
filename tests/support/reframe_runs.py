"""The real ReFrame front end in a subprocess on the `local` system, and its report's test cases."""
import json
import pathlib
import subprocess
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
SETTINGS = str(REPO / 'configs' / 'settings.py')
CHECKS = str(REPO / 'reframe_checks')
#: test-only checks (not part of the suite), each run with `-c <file>`
TEST_CHECKS = REPO / 'tests' / 'reframe_checks'


def reframe(workdir, *args, timeout=900):
    """Run reframe with everything (stage, output, perflogs, report, log) under workdir."""
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    cmd = ['reframe', '-C', SETTINGS, '--system', 'local', '--prefix', str(workdir),
           '--perflogdir', str(workdir / 'perflogs'), '--report-file', str(workdir / 'report.json'),
           *args]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=timeout)
    proc.elapsed = time.monotonic() - t0
    proc.output = proc.stdout + proc.stderr
    return proc


def report_cases(workdir):
    with open(pathlib.Path(workdir) / 'report.json') as fp:
        report = json.load(fp)
    return [c for run in report['runs'] for c in run['testcases']]
