"""Messages through Apprise to real servers on loopback: an aiosmtpd SMTP server (mailto://) and a
webhook receiver (json://). Nights are run directories as ci/nightly.sh leaves them (report.json,
post/verdict.json); `postprocess notify` decides from the exit status and the state it keeps in the
results tree: a message on each red night (RED for a regression, FAILED naming what failed), one
when green again, at most one per night and system. ci/nightly.sh names its failed steps (a night
whose darshan-index really fails, ReFrame faked as in tests/test_faults.py); tests/test_results_db_e2e.py
sends one from a real red nightly run."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.servers import free_port, smtp_server, wait_for, webhook

REPO = Path(__file__).resolve().parent.parent
CHECK = 'BenchIO %size=64 %ranks=2 %stripe=default %io=posix:fpp'
PARAMS = 'backend=posix,mode=fpp,pattern=benchio,ranks=2,size=64,stripe=default'


def night(results, stamp, red, failed_check=False):
    """A run directory of one night: tonight's ReFrame report (one check, failed in sanity if
    ``failed_check``) and verdict (a confirmed regression if ``red``)."""
    run = results / 'runs' / f'{stamp}-local-quick'
    (run / 'post').mkdir(parents=True)
    case = dict(system='local', partition='default', environ='mpi-gnu', display_name=CHECK,
                result='pass', iob_params=PARAMS)
    if failed_check:
        case.update(result='fail', fail_phase='sanity', fail_reason='rep 0 read: 15 bytes, expected 16')
    (run / 'report.json').write_text(json.dumps({'runs': [{'testcases': [case]}]}))
    findings = [dict(status='regression', scope='series', system='local', partition='default',
                     environ='mpi-gnu', check=CHECK, params=PARAMS, phase='write', change=-0.42,
                     median=90.0, expected_median=155.0, since=f'{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]}',
                     night=f'{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]}', confirmation='confirmed')]
    (run / 'post' / 'verdict.json').write_text(json.dumps(
        {'schema': 'ioregress-verdict/1', 'confirmation': 'done',
         'status': 'regression' if red else 'ok', 'findings': findings if red else []}))
    return run


def notify(run, status, urls, *args, **env):
    proc = subprocess.run([sys.executable, '-m', 'postprocess', 'notify', '--run', str(run),
                           '--system', 'local', '--status', str(status), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, IOREGRESS_NOTIFY=urls, **env))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout + proc.stderr


def test_red_green_once_per_night_by_mail_and_webhook(tmp_path):
    results = tmp_path / 'results'
    with smtp_server() as (smtp, mails), webhook() as (port, hooks):
        urls = (f'mailto://127.0.0.1:{smtp}?from=ioregress@example.org&to=io-team@example.org, '
                f'json://127.0.0.1:{port}/ioregress')
        # green with nothing told before: silence
        assert notify(night(results, '20260101T020000Z', red=False), 0, urls) == ''
        # red: one message to each address, the verdict's line and the page's address
        red = night(results, '20260102T020000Z', red=True)
        out = notify(red, 3, urls, IOREGRESS_REPORT_URL='https://ci.example.org/io')
        assert out.count(': sent') == 2, out
        assert wait_for(lambda: len(mails) == 1 and len(hooks) == 1)
        mail = mails[0]
        assert mail['Subject'] == 'ioregress local 2026-01-02: RED (regression)'
        assert mail['To'] == 'io-team@example.org'
        text = mail.get_payload(decode=True).decode() if not mail.is_multipart() else \
            mail.get_payload(0).get_payload(decode=True).decode()
        page = 'https://ci.example.org/io/runs/20260102T020000Z-local-quick/post/report/index.html'
        for body in (text, json.loads(hooks[0][1])['message']):
            assert 'REGRESSION  BenchIO posix/fpp ranks=2 size=64 write -42.0% (90 vs 155 MiB/s usual), since 2026-01-02' in body
            assert '1 passed, 0 failed' in body and page in body
        # a second run the same night, red or green: already told
        assert notify(red, 3, urls) == ''
        assert notify(red, 0, urls) == ''
        # the next night red again: told again; then green: the all-clear, once
        notify(night(results, '20260103T020000Z', red=True), 3, urls)
        out = notify(night(results, '20260104T020000Z', red=False), 0, urls)
        assert out.count(': sent') == 2
        assert notify(night(results, '20260105T020000Z', red=False), 0, urls) == ''
        # a failed check is a red night too, told as what it is
        notify(night(results, '20260106T020000Z', red=False, failed_check=True), 1, urls)
        assert wait_for(lambda: len(hooks) == 4 and len(mails) == 4)
        titles = [json.loads(b)['title'] for _, b in hooks]
        assert titles == ['ioregress local 2026-01-02: RED (regression)',
                          'ioregress local 2026-01-03: RED (regression)',
                          'ioregress local 2026-01-04: green again',
                          'ioregress local 2026-01-06: FAILED (1 check failed)']
        assert [m['Subject'] for m in mails] == titles
        assert 'nothing needs attention' in json.loads(hooks[2][1])['message']
        state = json.loads((results / 'notify' / 'local.json').read_text())
        assert state['state'] == 'red' and state['night'] == '2026-01-06'


def test_broken_addresses_are_one_line_each_never_a_failure(tmp_path):
    results = tmp_path / 'results'
    run = night(results, '20260102T020000Z', red=True)
    with webhook() as (port, hooks):
        dead = free_port()
        out = notify(run, 3, f'nosuchscheme://x json://127.0.0.1:{dead}/x '
                             f'json://127.0.0.1:{port}/ok slack://token:secret@nowhere')
        lines = out.splitlines()
        assert len(lines) == 4, out
        assert 'notify: nosuchscheme://... (address 1): not sent (not a usable Apprise URL)' in lines
        assert 'notify: slack://... (address 4): not sent (not a usable Apprise URL)' in lines
        assert f'notify: json://127.0.0.1:{dead}: not sent (delivery failed)' in lines
        assert 'secret' not in out and 'token' not in out          # no credentials in the log
        assert f'notify: json://127.0.0.1:{port}: sent' in lines
        assert wait_for(lambda: len(hooks) == 1)
    # nothing reachable: not told, so the next run of the night tries again
    results2 = tmp_path / 'results2'
    run2 = night(results2, '20260102T020000Z', red=True)
    out = notify(run2, 3, f'json://127.0.0.1:{free_port()}/x')
    assert 'not sent' in out and not (results2 / 'notify' / 'local.json').exists()


def test_off_unless_configured(tmp_path):
    run = night(tmp_path / 'results', '20260102T020000Z', red=True)
    assert notify(run, 3, '') == ''
    assert not (tmp_path / 'results' / 'notify').exists()


def test_a_failed_night_says_what_failed_never_red(tmp_path):
    """Exit 1 is FAILED with its causes (failed checks from report.json, the steps the nightly
    names), never 'RED (regression)'; a regression beside them is counted; an unrecorded cause is
    said to be unknown. Exit 2 (the nightly's bad usage, nothing ran) tells nothing, changes no state."""
    results = tmp_path / 'results'
    with webhook() as (port, hooks):
        urls = f'json://127.0.0.1:{port}/ioregress'
        notify(night(results, '20260102T020000Z', red=False), 1, urls, '--failed-step', 'darshan-index')
        notify(night(results, '20260103T020000Z', red=True, failed_check=True), 1, urls,
               '--failed-step', 'reframe', '--failed-step', 'detect')
        notify(night(results, '20260104T020000Z', red=False), 1, urls)
        notify(night(results, '20260105T020000Z', red=False), 1, urls, '--failed-step', 'reframe')
        assert wait_for(lambda: len(hooks) == 4)
        docs = [json.loads(body) for _, body in hooks]
        assert [d['title'] for d in docs] == [
            'ioregress local 2026-01-02: FAILED (postprocess darshan-index failed)',
            'ioregress local 2026-01-03: FAILED (1 check failed; postprocess detect failed; and 1 regression)',
            "ioregress local 2026-01-04: FAILED (cause not recorded: see the run's reframe.out and the "
            'nightly log)',
            'ioregress local 2026-01-05: FAILED (ReFrame itself failed (no failed check in its report))']
        first, both = docs[0]['message'].splitlines(), docs[1]['message']
        assert first[0] == 'FAILED: postprocess darshan-index failed' and 'REGRESSION' not in docs[0]['message']
        assert 'nothing needs attention' in docs[0]['message']     # the checks themselves were fine
        assert both.startswith('FAILED: 1 check failed\nFAILED: postprocess detect failed\n'), both
        assert 'rep 0 read: 15 bytes, expected 16' in both and 'REGRESSION  BenchIO posix/fpp' in both
        state = results / 'notify' / 'local.json'
        before = state.read_text()
        out = notify(night(results, '20260106T020000Z', red=True), 2, urls)
        assert out == "notify: status 2 (the nightly's bad usage: nothing ran): nothing to tell\n"
        assert state.read_text() == before and len(hooks) == 4


@pytest.mark.parametrize('args, message', [
    (['--status', 'x'], "argument --status: invalid int value: 'x'"),
    (['--run', '/nonexistent'], "no such run directory '/nonexistent'"),
    (['--status', '7'], "unknown --status 7 (ci/nightly.sh's 0, 1, 2 or 3)"),
    (['--status', '3', '--failed-step', 'detect'], "--failed-step 'detect' with --status 3 (only 1 failed)"),
    (['--status', '1', '--failed-step', 'lunch'], "argument --failed-step: invalid choice: 'lunch'"),
])
def test_bad_usage_is_one_line(tmp_path, args, message):
    base = {'--run': str(tmp_path), '--system': 'local', '--status': '3'}
    base.update({k: v for k, v in zip(args[::2], args[1::2]) if k != '--failed-step'})
    steps = [x for k, v in zip(args[::2], args[1::2]) if k == '--failed-step' for x in (k, v)]
    proc = subprocess.run([sys.executable, '-m', 'postprocess', 'notify',
                           *[x for kv in base.items() for x in kv], *steps], cwd=REPO,
                          capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, IOREGRESS_NOTIFY='json://127.0.0.1:9/x'))
    assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_nightly_names_its_failed_step(tmp_path):
    """ci/nightly.sh on a night whose darshan-index really fails (its output directory's name is
    taken by a file the run left) and whose checks passed: the message says FAILED, that step, and
    no regression; the night exits 1. ReFrame is tests/fixtures/fake_reframe.py (as in test_faults)."""
    fake = tmp_path / 'fake-reframe'
    shutil.copy(REPO / 'tests' / 'fixtures' / 'fake_reframe.py', fake)
    fake.chmod(0o755)
    with webhook() as (port, hooks):
        env = dict(os.environ, REFRAME=str(fake), FAKE_LINES='3',
                   FAKE_PERFLOG=str(REPO / 'tests' / 'fixtures' / 'perflogs' / 'real' / 'local' / 'default'
                                    / 'BenchIO.log'),
                   FAKE_TIME='2026-11-04T03:00:00+00:00', FAKE_LEAVE_FILE='post/darshan',
                   IOREGRESS_NOTIFY=f'json://127.0.0.1:{port}/night')
        for var in ('IOREGRESS_STORE', 'IOREGRESS_THIS_RUN'):
            env.pop(var, None)
        proc = subprocess.run(['bash', str(REPO / 'ci' / 'nightly.sh'), '--system', 'local',
                               '--results', str(tmp_path / 'results')], capture_output=True, text=True,
                              env=env, timeout=600)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 1 and 'FAILED: a postprocess step failed' in out, out[-3000:]
        assert wait_for(lambda: len(hooks) == 1), out[-3000:]
    doc = json.loads(hooks[0][1])
    assert doc['title'].endswith(': FAILED (postprocess darshan-index failed)'), doc
    assert doc['message'].startswith('FAILED: postprocess darshan-index failed\n'), doc
    assert 'RED' not in doc['title'] and 'REGRESSION' not in doc['message']
