"""The per-level rules of the verdict (postprocess/detect/rules.py) on levels built night by night:
what each kind of night is called, and that a judgement is a function of its data."""
import math

import numpy as np
import pytest

from postprocess.detect import rules
from postprocess.detect.options import DEFAULTS

RNG = np.random.default_rng(7)


def level(values, **kw):
    return rules.Level(range(len(values)), np.log(values), **kw)


def quiet(n, sd=0.03, start=1000.0):
    """n nights of a quiet series (log-normal, sd in log units)."""
    return list(start * np.exp(RNG.normal(0.0, sd, n)))


def statuses(lv, opt=DEFAULTS, **kw):
    return [j.status for j in rules.judge(lv, opt, **kw)]


def test_a_young_series_is_insufficient_then_judged():
    st = statuses(level(quiet(8)))
    assert st[:DEFAULTS['min_nights']] == ['insufficient history'] * DEFAULTS['min_nights']
    assert set(st[DEFAULTS['min_nights']:]) <= {'ok', 'improvement', 'noisy'}


def test_one_low_night_is_noisy_two_are_degraded_three_a_step():
    v = quiet(20) + [600.0, 600.0, 600.0, 600.0]
    js = rules.judge(level(v), DEFAULTS)
    assert [j.status for j in js[20:]] == ['noisy', 'degraded', 'regression', 'regression']
    assert js[22].since == 20 and js[23].since == 20
    assert js[22].change == pytest.approx(math.log(600.0) - js[22].usual, abs=1e-9)
    assert js[23].change < -0.4


def test_a_single_normal_night_does_not_end_a_run_but_two_do():
    v = quiet(20) + [600.0, 1000.0, 600.0, 600.0]
    assert statuses(level(v))[20:] == ['noisy', 'ok', 'degraded', 'regression']
    v = quiet(20) + [600.0, 1000.0, 1000.0, 600.0, 600.0]
    st = statuses(level(v))[20:]
    assert st[3:] == ['degraded', 'degraded']   # a new run of two: no step, yet low nights


def test_a_busy_history_asks_more_of_a_night():
    """The same -30 % night is low against a quiet history, not against one with busy nights
    (its lower tail is wide)."""
    quiet_hist = quiet(28, sd=0.02)
    busy_hist = [x * (0.4 if i % 5 == 0 else 1.0) for i, x in enumerate(quiet(28, sd=0.02))]
    assert statuses(level(quiet_hist + [700.0]))[-1] == 'noisy'
    assert statuses(level(busy_hist + [700.0]))[-1] == 'ok'


def test_a_far_night_confirmed_by_its_rerun_is_a_step_unless_fio_fell():
    v = quiet(20) + [500.0]
    lv = level(v, rerun={20: math.log(520.0)})
    j = rules.judge(lv, DEFAULTS)[20]
    assert j.far and j.status == 'regression' and j.confirmation == 'confirmed' and j.since == 20
    busy = rules.judge(level(v, rerun={20: math.log(520.0)}), DEFAULTS, fio_low={20})[20]
    assert busy.status == 'noisy' and busy.busy and busy.confirmation == 'filesystem busy'
    gone = rules.judge(level(v, rerun={20: math.log(990.0)}), DEFAULTS)[20]
    assert gone.status == 'noisy' and gone.confirmation == 'not reproduced'


def test_a_low_night_that_is_not_far_is_not_confirmed_by_a_rerun():
    v = quiet(20, sd=0.01) + [925.0]          # low (3.45 floor spreads: -6.7 %), not far (-9 %)
    lv = level(v, rerun={20: math.log(925.0)})
    j = rules.judge(lv, DEFAULTS)[20]
    assert j.status == 'noisy' and not j.far and j.confirmation is None


def test_an_earlier_confirmed_night_keeps_the_step_red():
    v = quiet(20) + [500.0, 600.0]
    lv = level(v, rerun={20: math.log(510.0)})
    js = rules.judge(lv, DEFAULTS)
    assert js[20].status == js[21].status == 'regression' and js[21].since == 20


def test_an_improvement_is_the_same_run_upwards():
    v = quiet(20) + [1500.0] * 3
    assert statuses(level(v))[20:] == ['ok', 'ok', 'improvement']


def test_an_accepted_change_is_the_usual_level_from_its_first_night():
    v = quiet(20) + [600.0] * 10
    lv = level(v, accepted=[(20, 27)])
    st = statuses(lv)
    assert st[22:27] == ['regression'] * 5
    assert set(st[27:]) <= {'insufficient history', 'ok'}   # judged on the accepted level


def test_a_run_older_than_the_horizon_is_the_new_normal():
    opt = dict(DEFAULTS, horizon=10, window=8)
    v = quiet(20) + [600.0] * 30
    st = statuses(level(v), opt)
    assert st[25] == 'regression' and st[-1] == 'ok'


def test_reach_is_the_far_threshold_until_a_run_needs_one_more_night():
    v = quiet(20, sd=0.02)
    lv = level(v + [600.0, 600.0, 1000.0])
    js = rules.judge(lv, DEFAULTS)
    far = js[20].reach
    assert js[21].reach == pytest.approx(far)   # the run's second night: a re-run must confirm
    assert far < js[22].reach < 0               # its third night: being low is enough
    assert js[22].status == 'ok'


def test_a_judgement_reads_only_its_lookback():
    """Night m's judgement is the same with or without the nights before its lookback."""
    v = quiet(400, sd=0.05)
    v[300:305] = [600.0] * 5
    full = rules.judge(level(v), DEFAULTS)
    cut = rules.lookback(DEFAULTS)
    for m in (330, 399):
        part = rules.Level(range(m - cut + 1, m + 1), np.log(v[m - cut + 1:m + 1]))
        again = rules.judge(part, DEFAULTS, positions=[cut - 1])[0]
        j = full[m]
        assert (again.status, again.change, again.reach) == (j.status, j.change, j.reach)


def test_the_vectorised_helpers_agree_with_one_night_at_a_time():
    """accepted_from_all and trailing_medians serve the groups and the nightly at scale: each must
    give, night for night, what the one-night definitions give (acceptances, a sparse series)."""
    import numpy as np
    from postprocess.detect.options import DEFAULTS
    from postprocess.detect.rules import (Level, _accepted_from, accepted_from_all,
                                          trailing_medians)
    rng = np.random.default_rng(7)
    t = np.cumsum(rng.integers(1, 9, 400))             # gaps: the lookback binds on some nights
    level = Level(t, rng.normal(size=t.size),
                  accepted=[(int(t[50]), int(t[60])), (int(t[200]), int(t[210])),
                            (int(t[120]), int(t[300]))])
    assert accepted_from_all(level, DEFAULTS).tolist() == \
        [_accepted_from(level, m, DEFAULTS) for m in range(t.size)]
    x = rng.normal(size=50)
    x[[3, 17, 18]] = np.nan
    got = trailing_medians(x, 7)
    for m in range(50):
        before = x[max(0, m - 7):m]
        before = before[np.isfinite(before)]
        assert (np.isnan(got[m]) and not before.size) or got[m] == np.median(before)


def test_nightly_levels_at_once_are_each_nights_own():
    """levels.build takes every night of every series at once; each level must be, night for
    night, the Hodges-Lehmann of that night's positive values over its sessions in order, with the
    median phase time and the last session: two sessions a night, a zero-byte and a zero-second
    repetition, nights of 1 to 203 repetitions, a phase missing, two systems."""
    import datetime
    from postprocess.common.stats import hodges_lehmann
    from postprocess.detect import levels
    from postprocess.history.store import History
    rng = np.random.default_rng(11)
    runs = []
    for day in range(6):
        for hour in (1, 9):                                 # 8 h apart: two sessions a night
            for system, check in (('a', 'C1'), ('a', 'C2'), ('b', 'C1')):
                n = int(rng.choice([1, 2, 3, 5, 8, 203]))
                reps = [(2 ** 24, float(s)) for s in rng.uniform(0.01, 0.1, n)]
                if day == 2 and check == 'C1':
                    reps[0] = (0, reps[0][1])               # bw 0: not a level's value
                if day == 3 and check == 'C2':
                    reps[-1] = (2 ** 24, 0.0)               # no bandwidth, no time
                when = datetime.datetime(2026, 1, 1 + day, hour, 10 * (check == 'C2'),
                                         tzinfo=datetime.timezone.utc)
                runs.append({'time': when, 'system': system, 'partition': 'p', 'environ': 'e',
                             'check': check, 'params': f'backend=posix,check={check}',
                             'jobid': '1', 'result': 'pass', 'perf': {}, 'provenance': {},
                             'reps': {'write': reps} | ({'read': reps[::-1]} if day % 2 else {})})
    history = History(runs)
    got = levels.build(history)
    bw, secs = history.groups(), history.groups('seconds')
    assert sorted(got) == ['a', 'b']
    for system, (nights, series) in got.items():
        assert len(series) == (4 if system == 'a' else 2)
        for lv in series:
            by_night, sec_by_night = {}, {}
            for sid, v in bw[(lv.kid, lv.phase_id)]:
                if (v > 0).any():
                    by_night.setdefault(history.sessions[sid]['night'], []).append((sid, v[v > 0]))
            for sid, v in secs[(lv.kid, lv.phase_id)]:
                sec_by_night.setdefault(history.sessions[sid]['night'], []).append(v)
            want = sorted(by_night)
            assert [nights[t] for t in lv.t] == want
            for m, night in enumerate(want):
                v = np.concatenate([p[1] for p in by_night[night]])
                assert lv.y[m] == hodges_lehmann(np.log(v))
                assert np.array_equal(lv.vals[m], v)
                assert lv.sids[m] == by_night[night][-1][0]
                assert lv.secs[m] == np.median(np.concatenate(sec_by_night[night]))


def dipped_history(n, every=5, depth=0.08, seed=11):
    """A production-like history: quiet nights and, every ``every`` nights, a one-night dip to
    ``depth`` of the level (a busy night), so its single nights' lower tail is very wide."""
    rng = np.random.default_rng(seed)
    v = 1000.0 * np.exp(rng.normal(0.0, 0.05, n))
    v[::every] *= depth
    return list(v)


def test_a_step_under_one_night_dips_is_red_by_its_third_night_and_stays_red():
    """Edison's read, 2017-08: every night 85 % down for weeks, in a history whose one-night dips
    fell further. A run of three such nights is far less likely than one: red on the third night,
    and never `ok` on the nights after (until the horizon makes it the new normal)."""
    hist = dipped_history(84)
    st = statuses(level(hist + [150.0] * 30))
    assert st[84 + 2] == 'regression'
    assert 'ok' not in st[84 + 2:]
    assert statuses(level(hist + [150.0] * 3))[84] != 'regression'     # one night is no step


def test_a_normal_night_inside_a_red_run_does_not_read_ok():
    hist = quiet(28)
    st = statuses(level(hist + [500.0, 500.0, 500.0, 1000.0, 500.0, 500.0]))
    assert st[28 + 2:] == ['regression'] * 4


def test_under_one_night_dips_a_busy_night_and_a_two_night_dip_are_never_red():
    hist = dipped_history(84)
    st = statuses(level(hist + [1000.0, 150.0, 1000.0, 1000.0]))
    assert st[85] == 'ok'       # no lower than the history's own busy nights: not even noisy
    st = statuses(level(hist + [1000.0, 150.0, 150.0, 1000.0, 1000.0, 1000.0]))
    assert 'regression' not in st[84:]
    st = statuses(level(quiet(28) + [600.0, 1000.0]))
    assert st[28:] == ['noisy', 'ok']


def test_a_run_is_judged_against_runs_of_as_many_nights():
    """The threshold of a run's median loosens from one night to three when single nights dip
    alone (their runs of three do not), and never asks more of a longer run."""
    lv = level(dipped_history(84) + [1000.0])
    rules.judge(lv, DEFAULTS)
    us = next(iter(lv._usual.values()))
    m = 84
    one, three, seven = (float(us.run_low(m, k)) for k in (1, 3, 7))
    assert three > one + 1.0            # e**1: a run of three needs far less than one night
    assert seven >= three


def test_row_quantiles_are_numpys_to_the_bit():
    """rules.row_median_quantiles stands in for numpy's nanmedian/nanquantile over rows (their 2-D
    forms loop in Python): the same floats, ties, NaN gaps and single values included, so the
    verdict's JSON stays byte for byte what it was."""
    from postprocess.detect.rules import row_median_quantiles
    rng = np.random.default_rng(7)
    for trial in range(400):
        rows, width = int(rng.integers(1, 12)), int(rng.integers(1, 90))
        x = rng.normal(size=(rows, width)) * rng.choice([1e-3, 1.0, 100.0])
        if trial % 3 == 0:
            x = np.round(x, 1)                                  # ties
        x[rng.random((rows, width)) < rng.random() * 0.9] = np.nan
        x[np.arange(rows), rng.integers(0, width, rows)] = rng.normal(size=rows)
        mid, q10, q90 = row_median_quantiles(x, (0.1, 0.9))
        want = [np.nanmedian(x, axis=1), *np.nanquantile(x, (0.1, 0.9), axis=1)]
        for got, exp in zip((mid, q10, q90), want):
            assert np.array_equal(got, exp), trial
