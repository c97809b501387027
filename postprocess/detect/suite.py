"""The night as a whole: one verdict per system and night, not hundreds of independent coin flips.

Per system, nights in order (a night = every session of the system that started on that date):

1. Level. Each series (system, partition, environ, check, params, phase) gets a level per night:
   the Hodges-Lehmann location of log bandwidth (efficient like a mean of logs, robust to a burst),
   with its variance k_n * sigma^2 / n; sigma (within-night spread) is pooled over the series'
   recent nights and shrunk towards the partition's common value (empirical Bayes, limma style),
   so 3-5 repetitions still give a usable scale.
2. Many series at once (detect/many.py, detect/factors.py). Per partition and phase, the iobench checks' common
   factor c (median polish; fio left out: it is the filesystem's own reading): a moving factor is
   ONE finding, ``stack`` when fio stayed, ``system`` when fio moved with it (beyond its own
   night-to-night spread: one-sided p < ``alpha_fio``). The checks of one
   library or check family are one more level each (``group``), and each phase's factor is
   judged against the other phase's (a contrast, ``params`` ``against=<phase>``: the machine's
   state moves both, one path's change stands out of their difference). Series are judged on their
   residual r = level - c; fio and the operation rates of empty files (a metadata server's
   reading, factors.is_rate_params) on their own level, their noise moderated among their kind.
3. Evidence. A series' residual tonight, pooled with the consecutive nights just before it that
   were already suspect (same sign, |z| >= ``suspect_z``, up to ``pool_nights`` in all: a window
   fixed by that rule, one test per series), against the robust level (Hodges-Lehmann) of its
   clean history (the last ``window`` nights not inside a detected change). Night-to-night
   variance is always in the test, moderated towards the partition's (the prior weighing what
   the partition's series vouch for at 95 %, ``prior_vouch``). With >= 30 series the night's own
   spread of z (empirical null) widens the scale if the model is too optimistic.
4. Suite error rate, in two stages. Screening: Holm's step-down over all fresh series tests of the
   system that night, regressions at ``alpha``, improvements at ``alpha_improvement``; the
   operation rates one family of their own, factor and group tests one each, at
   ``alpha_system``. A series flag whose own history alone (Student t with its own nights'
   degrees of freedom; its own spread where its nights contradict the moderated one) does not
   reach the level Holm gave it is ``watching``: shown with its change, never red (a short
   history cannot tell a change from a drift); so is a factor or group fall from a history
   shorter than the nights' order needs (factors.shortest_history). A flag is at least
   ``min_effect`` (a series) or ``min_effect_level`` (a factor, group or contrast) in size.
   Confirmation: ci/nightly.sh re-runs the flagged checks right away (verdict.py); the re-run
   alone against the history before the change, Holm over the flags at ``alpha_confirm``.
5. Persistence. A detected change stays (status regression/improvement) while tonight is closer to
   the changed level than to the old one and the nights since it still differ from the history
   (one-sided p < ``alpha_continue``); its nights never join the history that judges it, unless
   they turn out not to differ after all (then it was a noisy night, and they rejoin). An
   improvement (or a watched fall of a factor or group) that held ``settle_nights`` nights is the
   level: the nights before it retire, so a fall back is a regression (a regression stays until
   accepted); so is a rise never flagged that held as long (``follow_rise``,
   evidence.since_rise). ``since``,
   the night it began, is named by change points over the judged span (Apache Otava's E-divisive,
   detect/changepoint.py).

bench/detection.py replays simulated suites and bench/real_replay.py real nights (docs/verdicts.md).
"""
import math

import numpy as np

from postprocess.common.stats import holm, mad_sd
from postprocess.detect import factors
from postprocess.detect.evidence import (NightJudge, build_tracks, continue_change,
                                         detectable_fall, fresh_evidence, night_spread, p_toward,
                                         still_changed, t_tails, within_noise)
from postprocess.detect.factors import SYSTEM_CHECK, is_baseline_params  # noqa: F401 (API)
from postprocess.detect.many import Many
from postprocess.detect.options import DEFAULTS
from postprocess.detect.outliers import OUTLIER_K, outlier_indices
from postprocess.history.perflog import PHASES


def _system_levels(members, c, baseline):
    """Residual levels of each track: {track: {night: level - common factor}}; nights without a
    factor (outside tonight's span) keep their level, and so does fio (``baseline``) always."""
    shifts = [(u, cu) for u, cu in c.items() if math.isfinite(cu)]
    gone = [u for u, cu in c.items() if not math.isfinite(cu)]
    out = {}
    for tr in members:
        y = tr.y
        lv = dict(y)                # a C-level copy, then the few nights the factor covers
        if tr not in baseline:
            lv.update({u: y[u] - cu for u, cu in shifts if u in y})
        for u in gone:
            lv.pop(u, None)
        out[tr] = lv
    return out


def _finding(track, t, status, est, z, p, since, hist_levels, history, nights, scope, extra=None):
    f = {'history_nights': len(hist_levels), 'change': None if est is None else math.expm1(est),
         'z': z, 'p': p, 'status': status, 'scope': scope, 'since': since, 'detectable': None,
         '_est': est, '_track': track, '_t': t, '_hist': hist_levels}
    f.update(history.key_dict(track.kid))
    f.update(phase=PHASES[track.phase_id], night=nights[t],
             session=history.sessions[track.sid[t]]['id'])
    if extra:
        f.update(extra)
    return f


def _complete(f):
    """The descriptive fields of a series finding, computed only for the findings reported."""
    track, t, hist, est = f.pop('_track'), f.pop('_t'), f.pop('_hist'), f.pop('_est')
    vals = track.vals[t]
    q1, med, q3 = (float(v) for v in np.percentile(vals, [25, 50, 75]))
    f.update(n=int(vals.size), median=med, q1=q1, q3=q3, min=float(vals.min()),
             max=float(vals.max()), outliers=_outliers(vals, f['phase']),
             history_median=(float(np.median(np.concatenate([track.vals[u] for u in hist])))
                             if hist else None),
             # tonight's median at the series' history level and tonight's partition level
             expected_median=None if est is None else med / math.exp(est),
             phase_seconds=track.seconds)
    return f


def _outliers(vals, phase):
    return outlier_indices(vals, OUTLIER_K.get(phase, 12.0))


def _mark_unconfirmed(tracks, nights, history, unconfirmed):
    index = {n: i for i, n in enumerate(nights)}
    for tr in tracks:
        for night in unconfirmed.get(history.keys[tr.kid] + (PHASES[tr.phase_id],), ()):
            if night in index:
                tr.unconfirmed.add(index[night])


def _judge_system(tracks, nights, history, opt, carry_night=None, estimate_factor=(),
                  unconfirmed=None):
    groups = {}
    for tr in tracks:
        groups.setdefault((tr.partition, tr.phase_id), []).append(tr)
    many = Many(groups, history, opt)
    if unconfirmed and tracks:
        many.mark_refuted(history.keys[tracks[0].kid][0], {n: i for i, n in enumerate(nights)},
                          unconfirmed)
    system = history.keys[tracks[0].kid][0] if tracks else ''
    out = []
    for t in range(len(nights)):
        night = NightJudge(t, opt)
        span = range(max(0, t - opt['window'] - opt['pool_nights']), t + 1)
        fresh, rerun, many_tests = [], [], []
        for g, members in groups.items():
            present = [tr for tr in members if t in tr.y]
            if not present:
                continue
            kinds = many.kinds(present)
            for kind in kinds:
                within_noise(night, kind, span)
            carry = None if (g[0], PHASES[g[1]]) in estimate_factor else carry_night
            c, sys_levels = many.common_factor(members, span, nights, carry)
            levels = _system_levels(present, c, many.baseline)
            for kind in kinds:
                night_spread(night, kind, levels)
            many_tests += many.judge(g, members, present, t, span, nights, night, carry, c,
                                     sys_levels)
            group_fresh = []
            for tr in present:
                lv = levels[tr]
                if tr.since is not None and nights[t] == carry_night:
                    # the re-run is a second, independent sample: it alone against the history
                    # before the change, one family over what is being confirmed (below); with
                    # the change's nights before tonight when it began earlier (the re-run
                    # stands in for tonight's first stage)
                    hist = night.clean_before(tr, tr.since, lv)
                    ev = night.test(tr, _rerun_nights(tr, t, lv, hist), hist, lv)
                    rerun.append((tr, ev.est, ev.z, p_toward(ev.z, ev.dof, tr.direction), hist))
                    continue
                if tr.since is not None:
                    cont = continue_change(tr, t, lv, night.test, night)
                    if cont is not None:
                        ev, hist, new = cont
                        p = p_toward(ev.z, ev.dof, tr.direction)
                        if p < opt['alpha_continue']:
                            status = 'regression' if tr.direction < 0 else 'improvement'
                            out.append(_finding(tr, t, status, ev.est, ev.z, p, nights[tr.since],
                                                hist, history, nights, 'series'))
                            continue
                        # the nights since no longer differ from the history: it was the first
                        # night's noise (or a short, lucky history), not a change; they rejoin
                        tr.end_change()
                        tr.excluded.difference_update(new)
                res = fresh_evidence(tr, t, lv, night.test, night)
                if res is None:
                    out.append(_finding(tr, t, 'insufficient history', None, None, None, None,
                                        night.clean_before(tr, t, lv), history, nights, 'series'))
                    continue
                res['levels'] = lv
                group_fresh.append((tr, res))
            # Empirical null: a big group's own spread of single-night z (after the common
            # factor) shows when the noise model of the residuals is too optimistic; widen,
            # never narrow. Series judged on their own level (fio, operation rates) follow
            # another model: neither counted nor widened.
            after = [(tr, res) for tr, res in group_fresh if tr not in many.baseline]
            if len(after) >= opt['empirical_null_min']:
                zs = np.array([tr.z[t] for tr, _ in after])
                s0 = mad_sd(zs)
                if s0 > 1.0:
                    for _, res in after:
                        res['z'] /= s0
                        res['z_own'] /= s0
            fresh += group_fresh
        many_tests += many.contrasts(t, night)
        factors.decide(many_tests, opt)
        out += many.findings(many_tests, system, nights)
        for (tr, est, z, p, hist), kept in zip(rerun, holm([r[3] for r in rerun],
                                                           opt['alpha_confirm'])):
            status = ('regression' if tr.direction < 0 else 'improvement') if kept else 'ok'
            out.append(_finding(tr, t, status, est, z, p, nights[tr.since], hist, history, nights,
                                'series'))
        # two families: the bandwidths at ``alpha``, and the operation rates (a metadata
        # server's reading, half of an IO500 score) at ``alpha_system`` among themselves, as
        # each night asks what moved the stack: a handful of rates must not wait behind a
        # hundred bandwidths
        rates, bandwidths = [], []
        for x in fresh:
            (rates if x[0] in many.rates else bandwidths).append(x)
        for family, alpha in ((rates, opt['alpha_system']), (bandwidths, opt['alpha'])):
            if family:
                out += _screen(family, t, nights, history, opt, alpha)
    return out


def _rerun_nights(tr, t, levels, hist):
    """The nights a flag's re-run (night t, right after tonight's t - 1) is judged on: the re-run
    alone for a change flagged tonight; for one flagged on an earlier night (and not refuted
    then), the change's nights before tonight with it, as a change that goes on is judged on the
    nights since it began (evidence.continue_change), while the re-run is still nearer the changed
    level than the old one. Tonight's first stage is left out: the re-run stands in for it. Judged
    alone, the re-run of a change confirmed the night before turned its second night green: run
    25.1's metadata fault, MDEmptyFiles -27 % on night 13 (confirmed), -22 % on night 14 and
    -16 % at its re-run, z -2.4 alone, -4.4 with night 13."""
    if tr.flagged >= t - 1:     # set with `since` (Track.start_change), never by a refuted flag
        return [t]
    earlier = [u for u in sorted(levels) if tr.since <= u < t - 1 and u not in tr.unconfirmed]
    if not earlier or not hist or not still_changed(tr, levels, hist, earlier, t):
        return [t]              # back nearer the old level: the re-run alone says so
    return earlier + [t]


def _screen(fresh, t, nights, history, opt, alpha):
    """Holm over tonight's fresh series tests of one family at ``alpha``; a flag its own history
    cannot carry is watching."""
    out = []
    tails = [t_tails(res['z'], res['dof']) for _, res in fresh]
    down = holm([p for p, _ in tails], alpha)
    # improvements never turn a night red; a real one persists and pools evidence, so it
    # can wait for stronger proof than a regression
    up = holm([p for _, p in tails], opt['alpha_improvement'])
    # the level Holm's first step asks of a flag: what the series' own history must reach too
    own_level = alpha / len(fresh)
    for (tr, res), (p_down, p_up), is_down, is_up in zip(fresh, tails, down, up):
        change = math.expm1(res['est'])
        status, since = 'ok', None
        if (is_down and change <= -opt['min_effect']) or (is_up and change >= opt['min_effect']):
            status = 'regression' if is_down else 'improvement'
            own = t_tails(res['z_own'], res['dof_own'])[0 if is_down else 1]
            if status == 'regression' and own > own_level:
                status = 'watching'
            elif t in tr.unconfirmed:
                status = 'unconfirmed'      # its re-run that night did not reproduce it
            else:
                since = nights[tr.start_change(res['levels'], t, -1 if is_down else 1, res['k'])]
        seen = detectable_fall(res['est'], ((res['z'], res['dof']), (res['z_own'], res['dof_own'])),
                               own_level, opt['min_effect'])
        out.append(_finding(tr, t, status, res['est'], res['z'], min(p_down, p_up), since,
                            res['hist'], history, nights, 'series',
                            {'pooled_nights': len(res['new']), 'detectable': seen}))
    return out


def detect(history, value='bw_MiBps', latest_only=False, series=None, last_nights=None,
           carry_night=None, estimate_factor=(), unconfirmed=None, **options):
    """Findings for every series and night of a History (list of dicts, oldest first), plus one
    finding of scope `system` per partition, phase and night (check '*').

    ``latest_only``: only each series' latest night; ``series``: only these (key_id, phase_id);
    ``last_nights``: only each series' last N nights (earlier ones still serve as history).
    ``carry_night``: a night label (the confirmation re-run) whose common factor is carried from
    the night before, except for the (partition, phase) pairs in ``estimate_factor``.
    ``unconfirmed``: {(system, partition, environ, check, params, phase): {night}} of earlier flags
    their re-run did not reproduce (detect/cli.py past_unconfirmed): such a night never opens a
    change window; a refuted factor or group flag's night also leaves that level's history (a
    burst, not its level; a factor's, for every phase of the partition).
    """
    opt = dict(DEFAULTS)
    opt.update({k: v for k, v in options.items() if v is not None})
    unknown = set(opt) - set(DEFAULTS)
    if unknown:
        raise TypeError(f'unknown detection option(s): {sorted(unknown)}')
    findings = []
    # Judging tonight needs the recent past only: with latest_only/last_nights the levels of each
    # system's last `horizon` nights are built (a change older than that is the new normal).
    horizon = opt['horizon'] if (latest_only or last_nights) else None
    if horizon is not None and last_nights:
        horizon = max(horizon, last_nights + opt['window'] + opt['pool_nights'])
    for system, (tracks, nights) in build_tracks(history, value, horizon).items():
        # tonight is this run's to confirm, whatever an earlier session of it said (cli.PastFlags)
        refuted = (unconfirmed.for_tonight(nights[-1])
                   if nights and hasattr(unconfirmed, 'for_tonight') else unconfirmed)
        if refuted:
            _mark_unconfirmed(tracks, nights, history, refuted)
        for f in _judge_system(tracks, nights, history, opt, carry_night, estimate_factor,
                               refuted or {}):
            f['value'] = value
            findings.append(f)
    keyed = {}
    for f in findings:
        keyed.setdefault(_series_key(f), []).append(f)
    kept = []
    for key, lst in keyed.items():
        lst.sort(key=lambda f: f['night'])
        if latest_only:
            lst = lst[-1:]
        elif last_nights is not None:
            lst = lst[-last_nights:]
        kept += lst
    if series is not None:
        wanted = {history.keys[k] + (PHASES[p],) for k, p in series}
        kept = [f for f in kept if _series_key(f) in wanted]
    kept = [_complete(f) if '_track' in f else f for f in kept]
    kept.sort(key=lambda f: (f['night'], f['scope'] == 'series', f['check'], f['params'],
                             f['phase']))
    return kept


def _series_key(f):
    return (f['system'], f['partition'], f['environ'], f['check'], f['params'], f['phase'])
