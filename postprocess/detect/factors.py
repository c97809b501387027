"""What moved many series together: the partition's common factor (the I/O stack's, or the whole
filesystem's when fio moved with it) and the factor of one library or one check family.

* Common factor: per partition and phase, a median polish (Tukey) of the iobench checks' levels
  over the recent nights: series effects + a night factor c. Series are judged on their residual
  after c from every check; the factor's own finding is judged on c from the bandwidth-bound checks
  (``measurable``: phases >= ``factor_seconds``) when there are ``min_common`` of them, and a
  group's on its bandwidth-bound members when it has ``min_group``. fio is left out: fio is the
  filesystem's own reading, the checks are the I/O stack's. A moving factor is ONE finding, of
  scope ``stack`` when fio did not move with it ("all iobench checks -21 % write, fio unchanged:
  the I/O stack above the filesystem") and ``system`` when it did (the filesystem, the partition).
* Groups: the checks of one library (``backend=hdf5``) or one check family (``check=MDDatasets``),
  at least ``min_group`` series: their level per night is the median of their levels after a
  factor estimated WITHOUT them (leave-group-out, so a library that is half the suite cannot drag
  the factor with it). A moving group is one finding ("HDF5 checks -30 % write (9 of 12)").

Factor and group levels are tested like series (detect/evidence.py: pooled over suspect nights,
against their own history's spread, floored at their estimation noise), Holm at ``alpha_system``
in one family per night for the factors and one for the groups; the confirmation re-run
(detect/verdict.py) is the second stage.
"""
import math

import numpy as np

from postprocess.common.findings import group_keys
from postprocess.common.stats import holm, mad_sd, median_polish
from postprocess.common.units import value_unit
from postprocess.detect.evidence import (Evidence, Track, continue_change, detectable_fall,
                                         fresh_evidence, level_var_factor, robust_level,
                                         robust_var, t_tails)

SYSTEM_CHECK = '*'          # check/environ of a finding about many series


def is_baseline_params(params):
    return 'backend=fio' in params.split(',')


def is_rate_params(params):
    """A series that moves no bytes (empty files: operations/s, common/units.py): a metadata
    server's rate, not a bandwidth. It neither shapes the common bandwidth factor nor is judged
    after it: it wanders on its own (a loading of 0.1-0.3 on the factor here, docs/verdicts.md),
    and taking the factor out of it only adds the factor's wander to its own."""
    return value_unit(params)[1] != 'MiB/s'


def measurable(trs, opt, at_least):
    """(series, bound): the bandwidth-bound series among ``trs`` (median phase >= ``factor_seconds``)
    and that bound, when there are ``at_least`` of them; else (``trs``, None). A 2 MiB phase of a
    few ms moves more from night to night than a 20 % slower stack moves it (docs/verdicts.md,
    run 9): the common factor a finding is judged on is read where a phase is long enough to
    measure, as fio's is."""
    limit = opt['factor_seconds']
    bound = [tr for tr in trs if tr.seconds is not None and tr.seconds >= limit]
    return (bound, limit) if len(bound) >= at_least else (trs, None)


def plan_groups(checks, keys_of, min_group):
    """{group key: [tracks]} for groups of >= min_group of ``checks`` (the series judged after
    the common factor) that are not every check."""
    groups = {}
    for tr in checks:
        for g in group_keys(keys_of(tr)[4], keys_of(tr)[3]):
            groups.setdefault(g, []).append(tr)
    return {g: trs for g, trs in groups.items() if min_group <= len(trs) < len(checks)}


def polish_factor(rows, span, nights, opt, carry):
    """Night factor {night index: c} over ``span`` from the level rows of the given tracks, and
    the nights with enough series to estimate it; ``carry``: a night whose factor is the previous
    one's (a confirmation re-run of a few checks cannot tell the machine's state from their own)."""
    if len(rows) < opt['min_common']:
        return {u: 0.0 for u in span}, {}
    y = np.array([[tr.y.get(u, np.nan) for u in span] for tr in rows])
    if carry is not None:
        y[:, [i for i, u in enumerate(span) if nights[u] == carry]] = np.nan
    counts = np.isfinite(y).sum(axis=0)
    _, cols = median_polish(y)
    c, last = {}, (float(np.median(cols[counts > 0])) if np.any(counts > 0) else 0.0)
    for i, u in enumerate(span):
        # too few series that night: the nearest earlier night's factor
        last = c[u] = float(cols[i]) if counts[i] >= opt['min_common'] else last
    return c, {u: c[u] for i, u in enumerate(span) if counts[i] >= opt['min_common']}


def group_levels(trs, c, span):
    """A group's level per night: the night effects of a median polish of its members' levels
    after the factor c, each member's own offset taken out. (It was the median of the members'
    levels themselves: with members hundreds of MiB/s apart, that median is the middle member's
    level, and it wandered as one series does -- 9 % a night for HDF5's 18 checks on run 24's
    clean nights, where their common change wandered 4 %.)"""
    y = np.array([[tr.y[u] - c[u] if u in tr.y else np.nan for u in span] for tr in trs])
    counts = np.isfinite(y).sum(axis=0)
    _, cols = median_polish(y)
    return {u: float(cols[i]) for i, u in enumerate(span) if counts[i]}


def estimation_floor(present, levels, hist, offset=None):
    """The variance of estimating a level as a median of the ``present`` series, read where it
    arises: each history night's spread of the members around the level (their own offsets taken
    out), MAD-scaled, as a median's standard error (1.2533 sd / sqrt(n)). ``offset``: per night,
    what is taken from a member's level before its median is the level (a group's leave-group-out
    common factor)."""
    def member(tr, u):
        return tr.y[u] - (offset[u] if offset is not None else 0.0)

    own = {tr: float(np.median([member(tr, u) - levels[u] for u in hist if u in tr.y]))
           for tr in present if any(u in tr.y for u in hist)}
    se2 = []
    for u in hist:
        r = [member(tr, u) - levels[u] - a for tr, a in own.items() if u in tr.y]
        if len(r) >= 3:
            se2.append((1.2533 * mad_sd(r)) ** 2 / len(r))
    return float(np.mean(se2)) if se2 else 0.0


def level_tester(floor):
    """Test of a level (a factor's, a group's, a contrast's) against its own history's spread,
    floored at ``floor(levels, hist)``, the noise of estimating it: a short history whose nights
    happened to agree must not make a few percent look like a change."""
    def tester(track, new, hist, levels):
        c_new = [levels[u] for u in new]
        c_hist = [levels[u] for u in hist]
        est = float(np.mean(c_new)) - robust_level(c_hist)
        var_c = max(robust_var(c_hist), floor(levels, hist), 1e-12)
        z = est / math.sqrt(var_c * (1.0 / len(new) + level_var_factor(len(hist)) / len(hist)))
        dof = max(len(hist) - 1, 1)
        return Evidence(est, z, dof, z, dof)
    return tester


def tester_for(present, offset=None):
    """Test of a factor's (or group's) level, floored at the noise of estimating it as a median of
    the ``present`` series (estimation_floor). (It was pi/2 x the members' median night-to-night
    variance / n: the quick checks' heavy tails and their moderated spreads put it at 6.6 % where
    the factor's own nights wandered 4.5 % and its nights' spread said 5.2 %, and a slowed stack's
    -17 % went unflagged, run 16.1.)"""
    return level_tester(lambda levels, hist: estimation_floor(present, levels, hist, offset))


def group_tester(members, others, c_lgo):
    """Test of a group's level (its members' polish after the factor of the ``others``), floored
    at the noise of both estimates: the members' median and the factor it is read after. The
    factor's noise is common to every member, so their spread around the group's level cannot
    show it (a group of 6 checks of independent 9 % nights dropped -11 % at z -3.9 on 8 nights
    with the first floor alone, tests/test_verdicts_stack.py)."""
    def floor(levels, hist):
        return (estimation_floor(members, levels, hist, c_lgo)
                + estimation_floor(others, c_lgo, hist))
    return level_tester(floor)


def contrast_tester(mine, theirs):
    """Test of a phase's factor against the other phase's (their difference per night), floored
    at the noise of estimating that difference: the spread of each check's own write-minus-read
    around it (a check that ran slow at writes tonight often ran slow at reads too, so the two
    factors' estimation noises partly cancel: run 19.1's first slowed night came out z -1.68
    with this floor, -1.54 with the two factors' floors added). ``mine``, ``theirs``: the series
    each factor was read on tonight; a check counts when it is in both."""
    by_kid = {tr.kid: tr for tr in theirs}
    pairs = [_Difference(tr, by_kid[tr.kid]) for tr in mine if tr.kid in by_kid]
    return level_tester(lambda levels, hist: estimation_floor(pairs, levels, hist))


class _Difference:
    """One check's phase level minus its other phase's level, per night both have."""

    def __init__(self, a, b):
        self.y = {u: a.y[u] - b.y[u] for u in a.y if u in b.y}


def contrast_levels(mine, theirs):
    """{night: my factor - their factor} on the nights both were estimated."""
    return {u: mine[u] - theirs[u] for u in mine if u in theirs}


def judge(ft, t, levels, night, present, opt, offset=None, tester=None):
    """Tonight's evidence on a factor/group/contrast level: a dict with status decided later
    (Holm) for a fresh test, or already decided for a change that goes on."""
    tester = tester or tester_for(present, offset)
    cont = continue_change(ft, t, levels, tester, night) if ft.since is not None else None
    if cont is not None:
        ev, hist, _ = cont
        status = 'watching' if ft.watch else 'regression' if ft.direction < 0 else 'improvement'
        return {'track': ft, 'status': status, 'since': ft.since, 'est': ev.est, 'z': ev.z,
                'p': min(t_tails(ev.z, ev.dof)), 'hist': hist, 'fresh': False}
    res = fresh_evidence(ft, t, levels, tester, night)
    if res is None:
        return {'track': ft, 'status': 'insufficient history', 'since': None, 'est': None,
                'z': None, 'p': None, 'hist': [], 'fresh': False}
    p_down, p_up = t_tails(res['z'], res['dof'])
    return {'track': ft, 'status': 'ok', 'since': None, 'est': res['est'], 'z': res['z'],
            'p': min(p_down, p_up), 'p_dir': (p_down, p_up), 'k': res['k'], 'hist': res['hist'],
            'levels': levels, 'fresh': True, 'dof': res['dof']}


def decide(tests, opt):
    """Holm over tonight's fresh tests, one family for the common factors (what moved everything),
    one for the groups (what moved one library or check family) and one for the contrasts (one
    phase's factor against the other's), each at alpha_system: a dozen group tests must not
    dilute the one question every night asks first."""
    for kind in ('factor', 'group', 'contrast'):
        fresh = [x for x in tests if x['fresh'] and x['kind'] == kind]
        if not fresh:
            continue
        down = holm([x['p_dir'][0] for x in fresh], opt['alpha_system'])
        up = holm([x['p_dir'][1] for x in fresh], opt['alpha_system'])
        for x in fresh:     # a fall from a level that never settled is never red: none to see
            x['detectable'] = (None if len(x['hist']) < shortest_history(opt) else
                               detectable_fall(x['est'], ((x['z'], x['dof']),),
                                               opt['alpha_system'] / len(fresh),
                                               opt['min_effect_level']))
        for x, is_down, is_up in zip(fresh, down, up):
            # a group is a finding when most of its checks moved, not one member dragging its
            # median
            most = kind != 'group' or 2 * (x.get('moved') or 0) >= len(x['trs'])
            if kind == 'contrast':
                # a phase slower against the other is that phase's regression only when it fell
                # by more than the other rose (else the other phase got faster: reads +20 % with
                # writes steady is no write regression); a rise is the other phase's contrast
                # falling, judged there
                is_up = False
                is_down = is_down and _fell_most(x['raw_est'], x['against_est'])
            # a level's least finding is above the machine's own steps: the whole partition's
            # level moved -5 to -9 % for days on clean nights (runs 17.2, 21), where a stack
            # fault of a fifth moved it -12 to -24 % (runs 16-20)
            big = abs(math.expm1(x['est'])) >= opt['min_effect_level']
            if (is_down or is_up) and most and big:
                direction = -1 if x['est'] < 0 else 1
                if direction < 0 and len(x['hist']) < shortest_history(opt):
                    # a fall from a level that never settled: watched, never red; if it holds
                    # settle_nights nights it is the level (evidence.continue_change)
                    x['status'], x['track'].watch = 'watching', True
                    x['since'] = x['track'].start_change(x['levels'], x['track'].t_now, -1, x['k'])
                    continue
                if x['track'].t_now in x['track'].unconfirmed:
                    x['status'] = 'unconfirmed'     # its re-run that night did not reproduce it
                    continue
                x['status'] = 'regression' if direction < 0 else 'improvement'
                x['since'] = x['track'].start_change(x['levels'], x['track'].t_now, direction,
                                                     x['k'])


def _fell_most(mine, theirs):
    """Did this phase's own factor fall tonight, by more than the other phase's rose?"""
    return mine is not None and mine < 0 and (theirs is None or -mine >= theirs)


def shortest_history(opt):
    """The fewest clean nights a factor or group level's history needs before a fall from it is
    red: the least h whose nights' order alone could reach ``alpha_system`` -- under no change,
    the pooled nights (up to ``pool_nights``) are the lowest of h + m with chance 1/C(h + m, m).
    Its spread comes from those h nights alone (no partition to borrow from): three first-week
    nights that happened to agree make any later step look certain to a t test (docs/verdicts.md,
    run 13.2). 5 with the defaults, as ``settle_nights``."""
    h = 1
    while math.comb(h + opt['pool_nights'], opt['pool_nights']) * opt['alpha_system'] < 1.0:
        h += 1
    return h


def baseline_change(present, keys_of, t, hist):
    """fio's change tonight against its own history's level, and the one-sided p value of that
    change against fio's own night-to-night spread (Student t, h - 1 dof); (None, None) without
    fio. A quick fio run wanders +-15 % between nights here: a change inside that is no sign that
    the filesystem moved."""
    fio = [tr for tr in present if is_baseline_params(keys_of(tr)[4])]
    if not fio or not hist:
        return None, None
    tr = fio[0]
    h = [tr.y[u] for u in hist if u in tr.y]
    if not h or t not in tr.y:
        return None, None
    est = tr.y[t] - robust_level(h)
    if len(h) < 3:
        return math.expm1(est), 0.0         # too few nights to know fio's spread: its size decides
    sd = math.sqrt(robust_var(h) * (1.0 + level_var_factor(len(h)) / len(h)))
    z = est / sd if sd > 0 else math.copysign(1e9, est)
    p_down, p_up = t_tails(z, len(h) - 1)
    return math.expm1(est), (p_down if est < 0 else p_up)


def members_moved(trs, c, t, hist, change):
    """How many of a group's members moved tonight at least half the group's change its way."""
    moved = 0
    for tr in trs:
        h = [tr.y[u] - c[u] for u in hist if u in tr.y]
        if t in tr.y and h and change:
            delta = math.expm1(tr.y[t] - c[t] - robust_level(h))
            moved += delta * change > 0 and abs(delta) >= abs(change) / 2.0
    return moved


def finding(x, system, partition, phase, nights, sid, n, scope, extra):
    """A detect finding about many series (scope stack, system or group)."""
    est = x['est']
    f = {'system': system, 'partition': partition, 'environ': SYSTEM_CHECK, 'check': SYSTEM_CHECK,
         'params': '', 'phase': phase, 'night': nights[x['track'].t_now], 'status': x['status'],
         'scope': scope, 'since': None if x['since'] is None else nights[x['since']],
         'median': None if est is None else math.exp(est), 'history_median': 1.0,
         'change': None if est is None else math.expm1(est), 'z': x['z'], 'p': x['p'], 'n': n,
         'history_nights': len(x['hist']), 'outliers': [], 'session': sid,
         'detectable': x.get('detectable')}
    f.update(extra)
    return f


def new_track(partition, phase_id, group=None):
    tr = Track(None, phase_id, partition)
    tr.group, tr.t_now = group, None
    return tr
