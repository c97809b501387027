"""A change an earlier night's re-run confirmed, going on tonight (postprocess/detect/verdict.py
carry_confirmed): red without a re-run of its own (``confirmation`` ``carried``). Runs 28.2, 29.2
and 30.1 lost a true stack fault on its second night to one short re-run. Simulated run records
through the real History, detector and verdict, and the real `postprocess verdict` command."""
import datetime
import json
import subprocess
import sys
from pathlib import Path

from postprocess.common.findings import flag_key
from postprocess.detect import verdict
from postprocess.detect.cli import PastFlags
from postprocess.detect.suite import detect
from postprocess.history.store import History
from tests.support.simruns import flags, night_of, runs_for, START

REPO = Path(__file__).resolve().parent.parent


def second_night():
    """Check 9's writes -40 % from night 11 on (test_verdicts_confirm.py): the history, night
    12's findings and check 9's write finding among them."""
    slow = lambda n, c, p: 0.6 if (c == 9 and p == 'write' and n >= 11) else 1.0  # noqa: E731
    history = runs_for(range(13), reps=5, cv=0.3, seed=5, factor=slow)
    tonight = detect(History([dict(r) for r in history]), latest_only=True)
    nine = [f for f in flags(tonight) if f['check'] == 'Sim %id=9' and f['phase'] == 'write']
    assert nine and nine[0]['since'] == night_of(11) and nine[0]['night'] == night_of(12), nine
    return history, tonight, nine[0]


def past_with(finding, confirmed_nights):
    past = PastFlags()
    past.confirmed[flag_key(finding)] = set(confirmed_nights)
    return past


def gone_rerun():
    """Night 12's re-run of check 9 with the change gone: alone, it would refute the flag."""
    return [r for r in runs_for([12], reps=3, cv=0.3, seed=5, noise_seed=7,
                                start=START + datetime.timedelta(hours=2))
            if r['check'] == 'Sim %id=9']


def test_a_change_confirmed_before_is_carried_not_rerun():
    history, tonight, nine = second_night()
    assert verdict._rerun_keys(tonight) == {('sim', 'p1', 'gnu', 'Sim %id=9')}
    verdict.carry_confirmed(tonight, past_with(nine, {night_of(11)}))
    assert nine['confirmation'] == verdict.CARRIED
    assert flags(tonight) == [nine] and verdict._rerun_keys(tonight) == set()
    judged = verdict.confirm(history, gone_rerun(), tonight)
    assert (nine['status'], nine['confirmation']) == ('regression', verdict.CARRIED)
    assert verdict.summary(judged, 'done')['exit'] == 3


def test_without_a_confirmed_night_the_rerun_still_decides():
    # night 11's flag refuted (or never raised): nothing to carry; the re-run refutes it
    history, tonight, nine = second_night()
    verdict.carry_confirmed(tonight, past_with(nine, {night_of(10)}))
    assert 'confirmation' not in nine
    verdict.confirm(history, gone_rerun(), tonight)
    assert (nine['status'], nine['confirmation']) == ('unconfirmed', 'not reproduced')


def test_the_verdict_command_carries_it_and_asks_for_no_rerun(tmp_path):
    _, tonight, nine = second_night()
    detect_json = tmp_path / 'detect.json'
    detect_json.write_text(json.dumps(tonight, default=str))
    report = {'runs': [{'testcases': [
        {'result': 'pass', 'display_name': f['check'], 'system': f['system'],
         'partition': f['partition'], 'environ': f['environ'], 'hashcode': f'h{i}', 'repeat': 5}
        for i, f in enumerate(tonight) if f.get('scope') == 'series']}]}
    (tmp_path / 'report.json').write_text(json.dumps(report))
    past = tmp_path / 'runs' / '20260312T020000Z-sim-quick' / 'post'
    past.mkdir(parents=True)
    (past / 'verdict.json').write_text(json.dumps({'findings': [
        dict(nine, night=night_of(11), since=night_of(11), confirmation='confirmed')]}))

    def run(*extra):
        return subprocess.run(
            [sys.executable, '-m', 'postprocess', 'verdict', '--detect', detect_json, '--report',
             tmp_path / 'report.json', '--json', tmp_path / 'verdict.json', '--rerun-list',
             tmp_path / 'rerun.txt', *extra], cwd=REPO, capture_output=True, text=True)
    proc = run('--runs', tmp_path / 'runs')
    assert proc.returncode == 3, proc.stdout + proc.stderr
    doc = json.loads((tmp_path / 'verdict.json').read_text())
    mine = [f for f in doc['findings'] if f['check'] == 'Sim %id=9' and f['phase'] == 'write']
    assert mine[0]['confirmation'] == verdict.CARRIED and '[carried]' in proc.stdout
    assert doc['confirmation'] == 'none' and doc['regressions'] == 1
    assert (tmp_path / 'rerun.txt').read_text() == '', proc.stdout
    # without the run directories the same night is re-run as before
    proc = run()
    assert proc.returncode == 3 and (tmp_path / 'rerun.txt').read_text().strip(), proc.stdout
