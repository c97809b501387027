"""The night judged: every series and group of each system, by the rules of
postprocess/detect/rules.py, as findings (docs/CONTRACT.md section 4).

A finding is a function of the measurements (the history, and the nights' confirmation re-runs)
and of the acceptances recorded by then: judging a past night again gives what the nightly said
(``--all-nights`` and the nightly are the same computation; the nightly reads only the nights a
judgement can look back over).
"""
import bisect
import math

import numpy as np

from contract.perflog import PHASES
from postprocess.detect import groups as groups_mod
from postprocess.detect import levels as levels_mod
from postprocess.detect.options import with_overrides
from postprocess.detect.outliers import OUTLIER_K, outlier_indices
from postprocess.detect.rules import INSUFFICIENT, judge

SYSTEM_CHECK = '*'
LOW_STATUSES = ('regression', 'degraded', 'noisy')


def detect(history, value='bw_MiBps', latest_only=False, acceptances=(), reruns=None,
           matches=None, nights_from=None, every_night=None, **options):
    """Findings for each series and group night (``latest_only``: each one's latest night;
    ``nights_from``: only nights from this label on), sorted by night. ``reruns``:
    levels.read_reruns' {series key: {night: values}} of confirmation re-runs; ``acceptances``:
    records of postprocess/accept/ (``matches`` their matcher). ``every_night``: a function of
    the findings of each series' and group's latest night (from ``nights_from``) that names the
    series keys (key fields + phase) whose earlier nights are wanted too; the others' are not
    judged (a report circles the nights of the few series it draws)."""
    opt = with_overrides(options)
    systems = levels_mod.build(history, value)
    if reruns:
        levels_mod.attach_reruns(systems, reruns)
    if acceptances:
        if matches is None:
            from postprocess.accept.apply import matches
        levels_mod.attach_acceptances(systems, acceptances, matches)
    first = {system: 0 if nights_from is None else bisect.bisect_left(nights, nights_from)
             for system, (nights, _) in systems.items()}

    def judged(pick_series, pick_groups):
        return [f for system, (nights, levels) in systems.items()
                for f in _judge_system(history, system, nights, levels, opt, value,
                                       lambda lv: pick_series(lv, first[system]),
                                       pick_groups and (lambda g: pick_groups(g, first[system])))]
    if every_night is None:
        pick = _latest if latest_only else _in_range
        out = judged(pick, pick)
    else:
        out = judged(_latest_in_range, _latest_in_range)
        keys = set(every_night(list(out)))
        out += judged(lambda lv, a: _in_range(lv, a)[:-1] if lv.key in keys else (), None)
    out.sort(key=lambda f: (f['night'], f['scope'] == 'series', f['check'], f['params'],
                            f['phase']))
    return out


def _latest(lv, first):
    return [len(lv) - 1]


def _in_range(lv, first):
    return range(int(np.searchsorted(lv.t, first)), len(lv))


def _latest_in_range(lv, first):
    return _in_range(lv, first)[-1:]


def _judge_system(history, system, nights, levels, opt, value, pick, pick_groups):
    """Findings of a system's levels at the positions ``pick(level)`` gives, and of its groups at
    ``pick_groups(group)`` (None: no group judged)."""
    fio = {}            # (partition, phase_id) -> {night index: (judgement, change)}
    for lv in levels:
        if levels_mod.is_baseline(lv.params):
            for m, j in zip(range(len(lv)), judge(lv, opt)):
                fio.setdefault((lv.partition, lv.phase_id), {})[int(lv.t[m])] = j
    busy = {slot: frozenset(t for t, j in js.items() if j.status in LOW_STATUSES)
            for slot, js in fio.items()}
    out = []
    for lv in levels:
        fio_low = busy.get((lv.partition, lv.phase_id), frozenset())
        if levels_mod.is_baseline(lv.params):
            fio_low = frozenset()       # fio is the reading, not something it could excuse
        positions = pick(lv)
        for m, j in zip(positions, judge(lv, opt, fio_low, positions)):
            out.append(_series_finding(history, lv, m, j, nights, value, opt))
    if pick_groups is None:
        return out
    devs = {}

    def devs_of(lv):
        if id(lv) not in devs:
            devs[id(lv)] = groups_mod.deviations(lv, opt)
        return devs[id(lv)]
    for g in groups_mod.build(system, levels, opt):
        fio_low = busy.get((g.partition, g.phase_id), frozenset())
        positions = pick_groups(g)
        for m, j in zip(positions, judge(g, opt, fio_low, positions)):
            f = _group_finding(g, m, j, nights, fio.get((g.partition, g.phase_id), {}), devs_of)
            out.append(f)
    return out


def _common(j, nights, lv, m):
    """The fields every finding has, from a Judgement."""
    change = None if j.change is None else math.expm1(j.change)
    return {'night': nights[int(lv.t[m])], 'status': j.status,
            'since': None if j.since is None else nights[int(lv.t[j.since])],
            'change': change, 'z': j.z, 'p': None, 'history_nights': j.history,
            'detectable': j.reach, 'far': j.far, 'filesystem_busy': j.busy,
            'confirmation': j.confirmation}


def _series_finding(history, lv, m, j, nights, value, opt):
    f = dict(zip(('system', 'partition', 'environ', 'check', 'params', 'phase'), lv.key))
    f.update(_common(j, nights, lv, m))
    vals = lv.vals[m]
    q1, med, q3 = (float(v) for v in np.percentile(vals, [25, 50, 75]))
    usual = None if j.usual is None else math.exp(j.usual)
    f.update(scope='series', session=history.sessions[lv.sids[m]]['id'], n=int(vals.size),
             median=med, q1=q1, q3=q3, min=float(vals.min()), max=float(vals.max()),
             outliers=outlier_indices(vals, OUTLIER_K.get(lv.phase, 12.0), (q1, q3)),
             history_median=usual, expected_median=usual,
             phase_seconds=lv.seconds_at(m, opt['window']),
             value=value)
    if j.status == INSUFFICIENT:
        f.update(change=None, z=None)
    return f


def _group_finding(g, m, j, nights, fio_js, devs_of):
    night = int(g.t[m])
    fio_j = fio_js.get(night)
    fio_change = None if fio_j is None or fio_j.change is None else math.expm1(fio_j.change)
    scope = g.scope
    if scope == 'stack' and j.busy:
        scope = 'system'            # fio fell with the checks: the filesystem or the partition
    f = {'system': g.system, 'partition': g.partition, 'environ': SYSTEM_CHECK,
         'check': SYSTEM_CHECK, 'params': g.params, 'phase': PHASES[g.phase_id]}
    f.update(_common(j, nights, g, m))
    change = j.change
    f.update(scope=scope, session=None, n=g.count(m), members=g.count(m),
             moved=groups_mod.moved(g, m, change, devs_of) if change is not None else 0,
             median=None if change is None else math.exp(change), history_median=1.0,
             fio_change=fio_change, factor_series=len(g.members),
             factor_min_seconds=g.basis_at[m], outliers=[], value='bw_MiBps')
    return f


def compare_sides(history, after_nights, value='bw_MiBps', **options):
    """Each series' ``after`` nights (labels) against all its nights before them, as one run is
    against its usual level (postprocess/compare/): ``regression`` when the after nights' median
    level is low (rules.py), ``improvement`` when high, ``insufficient history`` with fewer than
    ``min_nights`` before nights. Findings on the last after night."""
    from postprocess.detect.rules import Level, _Usual
    opt = with_overrides(options)
    after = set(after_nights)
    out = []
    for system, (nights, levels) in levels_mod.build(history, value).items():
        for lv in levels:
            mine = [m for m in range(len(lv)) if nights[int(lv.t[m])] in after]
            before = [m for m in range(len(lv)) if nights[int(lv.t[m])] not in after]
            if not mine:
                continue
            y = np.concatenate([lv.y[before], [float(np.median(lv.y[mine]))]])
            joined = Level(range(len(y)), y)
            us = _Usual(joined.y, 0, dict(opt, window=max(len(before), 1)))
            m = len(y) - 1
            us.need(m, m)
            if np.isnan(us.B[m]):
                status, change = INSUFFICIENT, None
            else:
                change = float(y[m] - us.B[m])
                status = ('regression' if y[m] < us.low[m] else
                          'improvement' if y[m] > us.high[m] else 'ok')
            vals = np.concatenate([lv.vals[i] for i in mine])
            f = dict(zip(('system', 'partition', 'environ', 'check', 'params', 'phase'), lv.key))
            f.update(scope='series', night=nights[int(lv.t[mine[-1]])], status=status,
                     since=None, change=None if change is None else math.expm1(change),
                     z=None if change is None else change / float(us.lo_spread[m]), p=None,
                     n=int(vals.size), median=float(np.median(vals)),
                     expected_median=None if change is None else math.exp(us.B[m]),
                     history_median=None if change is None else math.exp(us.B[m]),
                     history_nights=len(before), value=value)
            out.append(f)
    return out
