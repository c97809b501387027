"""The confirmation re-run of a change that goes on (postprocess/detect/suite.py _rerun_nights):
judged with the change's nights before tonight, not alone, while it is still nearer the changed
level. Simulated run records through the real History, detector and verdict. (ci/nightly.sh
re-runs such a change only when no earlier night's re-run confirmed it: tests/test_verdicts_carry.py.)"""
import datetime

from postprocess.detect import verdict
from postprocess.detect.suite import detect
from postprocess.history.store import History
from tests.support.simruns import flags, runs_for, START


def confirm_second_night(rerun_factor, noise_seed, seed=5):
    """Check 9's writes -40 % from night 11 (flagged and confirmed that night), still -40 % on
    night 12; night 12's re-run (3 repetitions) draws check 9 at ``rerun_factor``. Its
    confirmation: (status, confirmation, the re-run's change)."""
    slow = lambda n, c, p: 0.6 if (c == 9 and p == 'write' and n >= 11) else 1.0  # noqa: E731
    history = runs_for(range(13), reps=5, cv=0.3, seed=seed, factor=slow)
    first = detect(History([dict(r) for r in history[:-41]]), latest_only=True)
    assert [f['check'] for f in flags(first)] == ['Sim %id=9'], flags(first)   # night 11
    tonight = detect(History([dict(r) for r in history]), latest_only=True)
    nine = [f for f in flags(tonight) if f['check'] == 'Sim %id=9']
    assert nine and nine[0]['since'] == first[0]['night'], nine
    rerun = [r for r in runs_for([12], reps=3, cv=0.3, seed=seed, noise_seed=noise_seed,
                                 factor=lambda n, c, p: rerun_factor if (c == 9 and p == 'write')
                                 else 1.0, start=START + datetime.timedelta(hours=2))
             if r['check'] == 'Sim %id=9']
    judged = verdict.confirm(history, rerun, tonight)
    return [(f['status'], f['confirmation'], round(f['confirm_change'], 2)) for f in judged
            if f['check'] == 'Sim %id=9' and f['phase'] == 'write'][0]


def test_a_change_confirmed_last_night_is_reconfirmed_with_its_nights_not_by_the_rerun_alone():
    # a re-run of 3 repetitions at -31 %: alone p ~0.03 against their 30 % spread, not
    # reproduced; with night 11's -40 % the change goes on (run 25.1's metadata fault turned its
    # second slowed night green this way)
    status, confirmation, change = confirm_second_night(0.72, noise_seed=7)
    assert (status, confirmation) == ('regression', 'confirmed'), change
    # the same draw with the change gone at the re-run (-5 %): not confirmed
    status, confirmation, change = confirm_second_night(1.0, noise_seed=7)
    assert (status, confirmation) == ('unconfirmed', 'not reproduced'), change
