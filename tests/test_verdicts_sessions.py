"""Two nightly sessions on one date (detect/cli.py PastFlags): the first session's refuted flag
does not answer for the second's. CI 2026-11-28: a red HDF5 night (write -99 %) read
`unconfirmed`, with no re-run, because an earlier session dated that night had its flag on the
series refuted. Simulated run records, the real History, detector and verdict files."""
import json

from postprocess.common.findings import flag_key
from postprocess.detect.cli import past_unconfirmed
from postprocess.detect.suite import detect
from postprocess.detect.verdict import confirm
from postprocess.history.store import History
from tests.support.simruns import night_of, runs


TONIGHT = 10
SLOW = 5        # the check whose writes fall 40 % tonight


def history():
    shape = lambda n, b, p, c: 0.6 if c == SLOW and p == 'write' and n == TONIGHT else 1.0  # noqa
    return History(runs(range(TONIGHT + 1), seed=4, night_cv=0.05, factor=shape))


def slow_write(findings):
    return next(f for f in findings if f['params'].endswith(f'size={SLOW}')
                and f['phase'] == 'write' and f['night'] == night_of(TONIGHT))


def verdict_file(runs_dir, name, finding, status, confirmation):
    post = runs_dir / name / 'post'
    post.mkdir(parents=True)
    f = dict(finding, status=status, confirmation=confirmation)
    (post / 'verdict.json').write_text(json.dumps({'findings': [f]}))


def test_an_earlier_sessions_refutation_does_not_answer_for_this_run(tmp_path):
    runs_dir = tmp_path / 'runs'
    found = slow_write(detect(history(), latest_only=True))
    assert found['status'] == 'regression', found
    # the first session that night: its flag on the series, refuted by its re-run
    verdict_file(runs_dir, '20261128T010000Z-sim-quick', found, 'unconfirmed', 'not reproduced')
    # the second session asks (ci/nightly.sh: --this-run, no verdict of its own yet): its flag
    # is a regression to confirm by its own re-run
    this_run = runs_dir / '20261128T150000Z-sim-quick'
    this_run.mkdir()
    memory = past_unconfirmed(str(runs_dir), str(this_run))
    assert slow_write(detect(history(), latest_only=True, unconfirmed=memory))['status'] == \
        'regression'
    # its re-run then decides, judged with the same history the first stage used
    again = confirm(history().runs, [], [dict(found)], memory)
    assert again[0]['status'] == 'regression' and again[0]['confirmation'] == 'not re-run'
    # asked by no run (a page rebuilt later), the night's last word stands: the refutation
    old = past_unconfirmed(str(runs_dir))
    assert slow_write(detect(history(), latest_only=True, unconfirmed=old))['status'] == \
        'unconfirmed'
    # once the second session's verdict confirmed it, that is the night's last word
    verdict_file(runs_dir, this_run.name + '-x', found, 'regression', 'confirmed')
    later = past_unconfirmed(str(runs_dir))
    key = flag_key(found)
    assert not later.get(key) and later.confirmed[key] == {night_of(TONIGHT)}
    assert slow_write(detect(history(), latest_only=True, unconfirmed=later))['status'] == \
        'regression'


def test_this_runs_own_refutation_holds(tmp_path):
    """The report step after the re-run (the same run asking): its own refutation stands."""
    runs_dir = tmp_path / 'runs'
    found = slow_write(detect(history(), latest_only=True))
    verdict_file(runs_dir, '20261128T150000Z-sim-quick', found, 'unconfirmed', 'not reproduced')
    memory = past_unconfirmed(str(runs_dir), str(runs_dir / '20261128T150000Z-sim-quick'))
    assert slow_write(detect(history(), latest_only=True, unconfirmed=memory))['status'] == \
        'unconfirmed'
