"""Evidence for one series (or one partition's common factor) on one night: levels per night,
within-night noise, the test of tonight (or the nights since a suspected change) against the clean
history, and the state of a detected change. postprocess/detect/suite.py explains the method."""
import collections
import functools
import math

import numpy as np
from scipy import special

from postprocess.common.stats import (MAD_NORMAL, hl_var_factor, hodges_lehmann,
                                      moderated_variances, winsorized_sd)
from postprocess.detect.changepoint import change_start


class Track:
    """Per series (or per partition:phase common factor): levels by night index and change state."""

    def __init__(self, kid, phase_id, partition):
        self.kid, self.phase_id, self.partition = kid, phase_id, partition
        self.y, self.n, self.resid, self.vals, self.sid = {}, {}, {}, {}, {}
        self.since = None           # night index where the active change began
        self.flagged = None         # night index whose flag started it (since <= flagged)
        self.direction = 0
        self.excluded = set()       # nights inside detected changes: never history again
        self.z = {}                 # single-night z, for "suspected" pooling
        self.unconfirmed = set()    # nights whose flag a confirmation re-run did not reproduce
        self.undecided = set()      # those of them whose re-run read half the change its way
        self.seconds = None         # median phase time over its nights (factors.measurable)
        self.watch = False          # the active change is a fall from a level that never settled

    def end_change(self):
        """The active change is over (its nights stay out unless the caller lets them rejoin)."""
        self.since, self.watch = None, False

    def start_change(self, levels, t, direction, window_start):
        """A change detected on night ``t``: its start (change points, within the test's window
        from ``window_start``), and its nights kept out of the history from now on."""
        self.direction, self.flagged = direction, t
        self.since = change_start(levels, t, direction, window_start)
        self.excluded.update(u for u in levels if self.since <= u <= t)
        return self.since


def build_tracks(history, value, horizon=None):
    """{system: {(kid, phase_id): Track}} with levels per night, and {system: [nights]}.

    ``horizon``: only each system's last N nights (levels are the costly part; a nightly verdict
    needs the recent past only, so years of history cost no more than a few months)."""
    systems, nights = {}, {}
    groups = history.groups(value)
    keep = None
    if horizon is not None:
        recent = {}
        for (kid, _), entries in groups.items():
            recent.setdefault(history.keys[kid][0], set()).update(
                history.sessions[sid]['night'] for sid, _ in entries)
        keep = {system: set(sorted(ns)[-horizon:]) for system, ns in recent.items()}
    for (kid, ph), entries in groups.items():
        system, partition = history.keys[kid][0], history.keys[kid][1]
        track = Track(kid, ph, partition)
        by_night = {}
        for sid, vals in entries:
            vals = vals[vals > 0]
            night = history.sessions[sid]['night']
            if vals.size and (keep is None or night in keep[system]):
                by_night.setdefault(night, []).append((sid, vals))
        if not by_night:
            continue
        systems.setdefault(system, {})[(kid, ph)] = (track, by_night)
        nights.setdefault(system, set()).update(by_night)
    seconds = history.groups('seconds')
    out = {}
    for system, members in systems.items():
        order = sorted(nights[system])
        index = {n: i for i, n in enumerate(order)}
        for track, by_night in members.values():
            secs = [v for sid, v in seconds.get((track.kid, track.phase_id), ())
                    if history.sessions[sid]['night'] in by_night]
            track.seconds = float(np.median(np.concatenate(secs))) if secs else None
            for night, parts in by_night.items():
                t = index[night]
                vals = np.concatenate([v for _, v in parts])
                logs = np.log(vals)
                track.vals[t], track.sid[t] = vals, parts[-1][0]
                track.y[t] = hodges_lehmann(logs)
                track.n[t] = logs.size
                track.resid[t] = logs - track.y[t]
        out[system] = ([m[0] for m in members.values()], order)
    return out


def since_rise(hist, levels, opt):
    """The nights of ``hist`` since a rise that held (``settle_nights`` or more), else ``hist``: a
    machine that got faster and stayed so is the level now, as a flagged improvement that held is
    (continue_change). The rise is the split of ``hist`` with the largest step up (pooled t over
    both parts' own spreads), significant at ``alpha_improvement`` after Bonferroni over the
    splits tried; it has held when ``settle_nights`` nights follow it. Only a rise: a fall that
    was never flagged stays in the level, so a slow decline is still judged against the nights
    before it. A scan of t, not Otava's change points (detect/changepoint.py, which names
    ``since``): its permutation test takes ~2 ms a call, and this runs on every history."""
    h, late, early = len(hist), opt['settle_nights'], opt['min_nights']
    if h < late + early:
        return hist
    y = [levels[u] for u in hist]
    total, total2 = math.fsum(y), math.fsum(v * v for v in y)
    best, at, sa, sa2 = 0.0, None, 0.0, 0.0
    for s, v in enumerate(y[:h - 1], 1):        # running sums: ~10^4 calls a night
        sa, sa2 = sa + v, sa2 + v * v
        if s < early:
            continue
        nb = h - s
        sb, sb2 = total - sa, total2 - sa2
        ss = max(sa2 - sa * sa / s + sb2 - sb * sb / nb, 0.0)
        var = ss / (h - 2) * (1.0 / s + 1.0 / nb)
        t = (sb / nb - sa / s) / math.sqrt(var) if var > 0 else 0.0
        if t > best:
            best, at = t, s
    if at is None or h - at < late:
        return hist                 # no rise, or one that has not held settle_nights yet
    if float(special.stdtr(h - 2, -best)) * (h - early) >= opt['alpha_improvement']:
        return hist
    return hist[at:]


def robust_var(x):
    """Variance of x with values beyond 3 robust SDs of the median clipped (ddof 1), when they are
    at most one in five.

    Plain Python: x is a history of ~14 levels and the verdict takes ~10^4 of these a night, where
    numpy's per-call overhead (sort, clip, var: ~25 us) was a third of a warm nightly detect."""
    x = sorted(map(float, x))
    n = len(x)
    if n < 2:
        return 0.0
    med = _sorted_median(x)
    sd = MAD_NORMAL * _sorted_median(sorted(abs(v - med) for v in x))
    if sd > 0:
        lo, hi = med - 3 * sd, med + 3 * sd
        # a wild night in five at most (a first run, a burst); more beyond the bound is the
        # spread itself (a step, a drift: 2 of 5 nights clipped made run 13.2's history agree)
        if sum(1 for v in x if v < lo or v > hi) <= max(1, n // 5):
            x = [lo if v < lo else hi if v > hi else v for v in x]
    mean = math.fsum(x) / n
    return math.fsum((v - mean) ** 2 for v in x) / (n - 1)


def _sorted_median(s):
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0


class NightJudge:
    """Judging of one night of one system (all partitions and phases)."""

    def __init__(self, t, opt):
        self.t, self.opt = t, opt
        self.c = {}                 # (partition, phase) -> {night index: factor}
        self.sigma2 = {}            # track -> (sigma^2, dof): within-night noise
        self.spread = {}            # track -> (V, dof, V_own, dof_own): night-to-night variance
        self.spread_hist = {}       # track -> the nights its spread was taken over

    def clean_before(self, track, k, levels):
        hist = [u for u in sorted(levels) if u < k and u not in track.excluded]
        hist = hist[-self.opt['window']:]
        if self.opt.get('follow_rise'):
            return since_rise(hist, levels, self.opt)
        return hist

    def cell_var(self, track, u):
        s2, _ = self.sigma2[track]
        n = track.n[u]
        return hl_var_factor(n) * s2 / n

    def test(self, track, new, hist, levels):
        """Pooled mean of levels on nights ``new`` minus the robust level of ``hist``.

        Night-to-night variance is always part of the test: the variance V of the series' nightly
        levels, moderated towards its partition's (night_spread), gives tau^2 = V - (within-night
        part) for each new night and V/h (Hodges-Lehmann factor) for the history's level. Returns
        Evidence(est, z, dof, z_own, dof_own): z with the moderated V, z_own with the series' own
        history alone (what "watching" asks of a flag)."""
        s2 = self.sigma2[track][0]
        n_of = track.n
        m, h = len(new), len(hist)
        r_hist = [levels[u] for u in hist]
        v_new = math.fsum(hl_var_factor(n_of[u]) * s2 / n_of[u] for u in new)
        e_hist = math.fsum(hl_var_factor(n_of[u]) * s2 / n_of[u] for u in hist) / h
        est = math.fsum(levels[u] for u in new) / m - robust_level(r_hist)
        d_within = self.sigma2[track][1]
        if track not in self.spread:
            # too few series to moderate the spread (a small suite): the series' own evidence
            V, d = _own_spread(r_hist)[:2]
            z, dof = _own_z(est, v_new, m, h, V, e_hist, d, d_within)
            return Evidence(est, z, dof, z, dof)
        V, dof, V_own, dof_own = self.spread[track]
        if hist != self.spread_hist[track]:
            # the own history of a pooled window (before its suspect nights) or of a change: its
            # spread over those nights, never over nights under test (a drop's first night, not
            # flagged, nearly doubled the spread and made the next night's pooled flag watching)
            V_own, dof_own = _own_spread(r_hist)[2:]
            V_own = V_own if V_own > 0 else V
        z = _own_z(est, v_new, m, h, V, e_hist, dof, d_within)[0]   # its dof: the moderated V's
        # the series' own nights, with its own degrees of freedom; its own spread where its
        # nights contradict the moderated one (chi-square), else the moderated spread
        v_own = V_own if V_own > V and special.chdtrc(dof_own, dof_own * V_own / V) < 0.05 else V
        z_own, dof_own = _own_z(est, v_new, m, h, v_own, e_hist, dof_own, d_within)
        return Evidence(est, z, dof, z_own, dof_own)


Evidence = collections.namedtuple('Evidence', 'est z dof z_own dof_own')


def _own_spread(r_hist):
    v = robust_var(r_hist)
    return v, max(len(r_hist) - 1, 1), v, max(len(r_hist) - 1, 1)


def _own_z(est, v_new, m, h, V, e_hist, d_tau, d_within):
    """The series' own evidence: its night-to-night part known to its own h - 1 degrees of
    freedom (never below the moderated estimate: a few nights that happened to agree prove
    nothing), its within-night part to many (Welch-Satterthwaite). A steady series is judged
    nearly as a normal; one whose nights wander, by its few nights."""
    k = level_var_factor(h)
    tau_part = (1.0 / m + k / h) * max(V - e_hist, 0.0)
    within = v_new / m ** 2 + k * e_hist / h
    var = tau_part + within
    if var <= 0:
        return (0.0 if est == 0 else math.copysign(1e9, est)), max(d_within, 1)
    dof = var ** 2 / (tau_part ** 2 / max(d_tau, 1) + within ** 2 / max(d_within, 1))
    return est / math.sqrt(var), dof


def robust_level(x):
    """The history's level, robust to one wild night (the first run after a boot, a burst): the
    median up to 4 nights (Hodges-Lehmann breaks down at one in three), then Hodges-Lehmann
    (95 % as efficient as the mean, still robust to a wild night in five)."""
    if len(x) < 5:
        return float(np.median(x))
    return hodges_lehmann(x)


def level_var_factor(h):
    """Var(robust_level of h levels) / (V / h)."""
    return math.pi / 2.0 if h < 5 else hl_var_factor(h)


def night_spread(night, present, levels):
    """Night-to-night variance of each series' clean history levels, moderated across the
    partition's series (limma's empirical Bayes, as the within-night sigma is), the prior weighing
    what the series vouch for (``prior_vouch``: the normal quantile of that bound, 0 for limma's
    estimate; ``prior_nights`` caps it if set; stats.moderated_variances): a series with a short
    history borrows its partition's spread rather than claiming none. Kept beside it: the
    series' own estimate (for "watching")."""
    raw, dofs, own = [], [], []
    for tr in present:
        hist = night.clean_before(tr, night.t, levels[tr])
        v = robust_var([levels[tr][u] for u in hist]) if len(hist) > 1 else float('nan')
        raw.append(v if v > 0 else float('nan'))
        dofs.append(len(hist) - 1)
        own.append((v, max(len(hist) - 1, 1), hist))
    mod, dmod = moderated_variances(raw, dofs, max_prior_dof=night.opt['prior_nights'],
                                    vouched=night.opt['prior_vouch'])
    for tr, v, d, (vo, do, hist) in zip(present, mod, dmod, own):
        if not np.isfinite(v) or v <= 0:
            continue                # too few series to moderate: the test uses the own spread
        night.spread[tr] = (float(v), float(max(d, 1)), vo if vo > 0 else float(v), do)
        night.spread_hist[tr] = hist


def t_tails(z, dof):
    """One-sided p values (regression, improvement) of a Student t statistic."""
    lower = float(special.stdtr(dof, z))           # Student t cdf (the ufunc under stats.t)
    return lower, (1.0 - lower if z < 0 else float(special.stdtr(dof, -z)))


def p_toward(z, dof, direction):
    """One-sided p value in a change's direction (-1 regression, +1 improvement)."""
    p_down, p_up = t_tails(z, dof)
    return p_down if direction < 0 else p_up


def detectable_fall(est, tests, level, floor):
    """The smallest fall (a relative change, e.g. -0.23) of a level that tonight's first stage
    could flag: where each statistic of its test, ``tests`` [(z, dof)] for the same ``est``,
    reaches the one-sided ``level`` (Holm's first step in its family), and at least ``floor``
    (``min_effect``). A fall this size is flagged about half the time; a smaller one cannot be.
    None where the test has no scale (no estimate)."""
    need = math.log1p(-floor)
    for z, dof in tests:
        if not est or not z or not math.isfinite(z):
            return None
        se = est / z                # the test's standard error, in log units
        if not se > 0 or not math.isfinite(se):
            return None
        need = min(need, float(special.stdtrit(max(dof, 1.0), level)) * se)
    return math.expm1(need)


def still_changed(track, levels, hist, during, t):
    """Is night t's level still nearer the change's level (its nights ``during``) than the
    history's, in the change's direction?"""
    base = float(np.mean([levels[u] for u in hist]))
    before = float(np.mean([levels[u] for u in during])) - base
    return track.direction * (levels[t] - base) >= abs(before) / 2.0


def continue_change(track, t, levels, tester, night):
    """An active change: still on (est, z, dof, hist, new) or over (None; its nights stay out)."""
    hist = night.clean_before(track, track.since, levels)
    during = [u for u in sorted(levels) if track.since <= u < t]
    if (track.direction > 0 or track.watch) and len(during) >= night.opt['settle_nights']:
        # an improvement that held is the machine's level now (a faster filesystem after an
        # upgrade, a drift up), and so is a watched fall from a level that never settled (the
        # first week): the nights before it retire, its own nights become the history, so a
        # later fall back to the old level is a regression, not the end of an improvement
        track.excluded.update(u for u in levels if u < track.since)
        track.excluded.difference_update(during)
        track.end_change()
        return None
    if len(hist) < night.opt['min_nights'] or not during:
        track.end_change()
        return None
    if not still_changed(track, levels, hist, during, t):
        track.end_change()          # back nearer the old level than the changed one
        return None
    new = during + [t]
    ev = tester(track, new, hist, levels)
    track.excluded.add(t)
    return ev, hist, new


def fresh_evidence(track, t, levels, tester, night):
    """Tonight, pooled with the nights just before it that were already suspect, vs the clean
    history; or None.

    The window is fixed by a rule, not searched: back from tonight over consecutive nights whose
    own z had tonight's sign and at least ``suspect_z`` (up to ``pool_nights`` in all). One test
    per series and night, so no multiplicity over windows; what the rule's look at earlier nights
    costs in false alarms is measured by bench/detection.py and caught by the confirmation re-run.
    A leading night of the window that sits nearer the history's level than the pooled new level
    only leaned that way: it is dropped, so ``since`` never names the quiet night before a change.
    """
    opt = night.opt
    hist = night.clean_before(track, t, levels)
    if len(hist) < opt['min_nights']:
        return None
    ev = tester(track, [t], hist, levels)
    track.z[t] = ev.z
    k, hist_k = t, hist
    for back in range(1, opt['pool_nights']):
        u = t - back
        zu = track.z.get(u)
        if u not in levels or u in track.excluded or zu is None or zu * ev.z <= 0 \
                or abs(zu) < opt['suspect_z'] \
                or (u in track.unconfirmed and u not in track.undecided):
            break
        hist_u = night.clean_before(track, u, levels)
        if len(hist_u) < opt['min_nights']:
            break
        k, hist_k = u, hist_u
    new = [u for u in range(k, t + 1) if u in levels]
    while len(new) > 1:
        base = robust_level([levels[u] for u in hist_k])
        step = math.fsum(levels[u] for u in new) / len(new) - base
        if abs(levels[new[0]] - base) >= abs(levels[new[0]] - base - step):
            break
        new = new[1:]
        hist_k = night.clean_before(track, new[0], levels)
    if len(new) > 1:
        ev = tester(track, new, hist_k, levels)
    else:
        hist_k = hist
    return {'k': new[0], 'est': ev.est, 'z': ev.z, 'dof': ev.dof, 'z_own': ev.z_own,
            'dof_own': ev.dof_own, 'hist': hist_k, 'new': new}


def within_noise(night, present, span):
    """Within-night variance of each series (its recent nights), moderated across the group."""
    raw, dofs = [], []
    for tr in present:
        res = [tr.resid[u] for u in span if u in tr.resid]
        dof = sum(r.size - 1 for r in res)
        raw.append(winsorized_sd(np.concatenate(res), dof) ** 2 if dof > 0 else np.nan)
        dofs.append(dof)
    s2, d = moderated_variances(raw, dofs)
    for tr, v, dv in zip(present, s2, d):
        if not np.isfinite(v) or v <= 0:       # single repetitions: spread of levels instead
            lv = [tr.y[u] for u in span if u in tr.y]
            v, dv = max(robust_var(lv), 1e-8), max(len(lv) - 1, 1)
        night.sigma2[tr] = (float(v), float(dv))
