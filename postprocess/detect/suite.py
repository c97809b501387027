"""The night as a whole: one verdict per system and night, not hundreds of independent coin flips.

Per system, nights in order (a night = every session of the system that started on that date):

1. Level. Each series (system, partition, environ, check, params, phase) gets a level per night:
   the Hodges-Lehmann location of log bandwidth (efficient like a mean of logs, robust to a burst),
   with its variance k_n * sigma^2 / n; sigma (within-night spread) is pooled over the series'
   recent nights and shrunk towards the partition's common value (empirical Bayes, limma style),
   so 3 repetitions still give a usable scale.
2. Common factor. Per partition and phase, a median polish of the levels over the recent nights
   splits them into series effects + a night factor c (fio baseline included). What moved every
   series together is judged once, as a finding of scope ``system``; series are judged on their
   residual r = level - c.
3. Evidence. A series' residual tonight, pooled with the consecutive nights just before it that
   were already suspect (same sign, |z| >= ``suspect_z``, up to ``pool_nights`` in all: a window
   fixed by that rule, one test per series), is compared with the mean of its clean history (the
   last ``window`` nights not inside a detected change), Student t tails; extra night-to-night
   variance is counted when the history clearly shows it. With >= 30 series the night's own spread
   of z (empirical null) widens the scale if the model is too optimistic.
4. Suite error rate, in two stages. Screening: Holm's step-down over all fresh tests of the system
   that night, one family per direction, regressions at ``alpha`` (a screen: ~1 night in 4 of a
   400-series suite carries a flag that is not a change), improvements at ``alpha_improvement``.
   Confirmation: ci/nightly.sh re-runs the flagged checks right away (verdict.py); the re-run,
   a fresh independent sample, alone against the history before the change, Holm over the
   flags at ``alpha_confirm``: whatever the screen let through, the chance of a false red night
   stays <= ``alpha_confirm`` (bench/detection.py). Holm, not Benjamini-Hochberg: the goal is no
   false alarm on a night (family-wise), and BH lets false flags ride along with true ones.
5. Persistence. A detected change stays (status regression/improvement) while tonight is closer to
   the changed level than to the old one and the nights since it still differ from the history
   (one-sided p < ``alpha_continue``); its nights never join the history that judges it, unless
   they turn out not to differ after all (then it was a noisy night, and they rejoin). ``since``,
   the night it began, is named by change points over the judged span (Apache Otava's E-divisive,
   detect/changepoint.py).

bench/detection.py replays simulated suites through the CLI and prints the figures (docs/verdicts.md).
"""
import math

import numpy as np

from postprocess.common.stats import holm, mad_sd, median_polish
from postprocess.detect.evidence import (NightJudge, Track, build_tracks, continue_change,
                                         fresh_evidence, p_toward, t_tails, within_noise)
from postprocess.detect.options import DEFAULTS
from postprocess.detect.outliers import OUTLIER_K, outlier_indices
from postprocess.history.perflog import PHASES

SYSTEM_CHECK = '*'          # check/environ of a finding of scope `system`


def _system_levels(members, c):
    """Residual levels of each track: {track: {night: level - common factor}}; nights without a
    factor (outside tonight's span) keep their level."""
    shifts = [(u, cu) for u, cu in c.items() if math.isfinite(cu)]
    gone = [u for u, cu in c.items() if not math.isfinite(cu)]
    out = {}
    for tr in members:
        y = tr.y
        lv = dict(y)                # a C-level copy, then the few nights the factor covers
        lv.update({u: y[u] - cu for u, cu in shifts if u in y})
        for u in gone:
            lv.pop(u, None)
        out[tr] = lv
    return out


def _finding(track, t, status, est, z, p, since, hist_levels, history, nights, scope, extra=None):
    f = {'history_nights': len(hist_levels), 'change': None if est is None else math.expm1(est),
         'z': z, 'p': p, 'status': status, 'scope': scope, 'since': since, '_est': est,
         '_track': track, '_t': t, '_hist': hist_levels}
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
             expected_median=None if est is None else med / math.exp(est))
    return f


def _outliers(vals, phase):
    return outlier_indices(vals, OUTLIER_K.get(phase, 12.0))


def _system_tester(night, present):
    """Test of the common factor: its history's SD (floored at its estimation noise)."""
    floor2 = 0.0
    if present:
        cell = [night.cell_var(tr, max(tr.n)) for tr in present
                if tr in night.sigma2 and np.isfinite(night.sigma2[tr][0])]
        if cell:
            floor2 = (math.pi / 2.0) * float(np.median(cell)) / len(present)

    def tester(track, new, hist, levels):
        c_new = np.array([levels[u] for u in new])
        c_hist = np.array([levels[u] for u in hist])
        est = float(c_new.mean() - c_hist.mean())
        var_c = max(float(np.var(c_hist, ddof=1)) if c_hist.size > 1 else 0.0, floor2, 1e-12)
        var = var_c * (1.0 / len(new) + 1.0 / len(hist))
        return est, est / math.sqrt(var), max(len(hist) - 1, 1)
    return tester


def _judge_system(tracks, nights, history, opt, carry_night=None, estimate_factor=()):
    groups = {}
    for tr in tracks:
        groups.setdefault((tr.partition, tr.phase_id), []).append(tr)
    factor = {g: Track(None, g[1], g[0]) for g in groups}
    out = []
    for t in range(len(nights)):
        night = NightJudge(t, opt)
        span = range(max(0, t - opt['window'] - opt['pool_nights']), t + 1)
        fresh, sys_findings, rerun = [], [], []
        for g, members in groups.items():
            present = [tr for tr in members if t in tr.y]
            if not present:
                continue
            within_noise(night, present, span)
            c = {u: 0.0 for u in span}
            ft = factor[g]
            if len(members) >= opt['min_common']:
                y = np.array([[tr.y.get(u, np.nan) for u in span] for tr in members])
                if (g[0], PHASES[g[1]]) not in estimate_factor:
                    # a confirmation re-run of a few flagged checks cannot tell the machine's
                    # state apart from their own change: it keeps tonight's factor
                    y[:, [i for i, u in enumerate(span) if nights[u] == carry_night]] = np.nan
                counts = np.isfinite(y).sum(axis=0)
                _, cols = median_polish(y)
                c, last = {}, (float(np.median(cols[counts > 0])) if np.any(counts > 0) else 0.0)
                for i, u in enumerate(span):
                    # too few series that night: the nearest earlier night's factor
                    last = c[u] = float(cols[i]) if counts[i] >= opt['min_common'] else last
                sys_levels = {u: c[u] for i, u in enumerate(span)
                              if counts[i] >= opt['min_common']}
                if t in sys_levels:
                    sys_findings.append(_judge_factor(ft, t, sys_levels, night, present, g,
                                                      history))
            levels = _system_levels(present, c)
            group_fresh = []
            for tr in present:
                lv = levels[tr]
                if tr.since is not None and nights[t] == carry_night:
                    # the re-run is a second, independent sample: it alone against the history
                    # before the change, one family over what is being confirmed (below)
                    hist = night.clean_before(tr, tr.since, lv)
                    est, z, dof = night.test(tr, [t], hist, lv)
                    rerun.append((tr, est, z, p_toward(z, dof, tr.direction), hist))
                    continue
                if tr.since is not None:
                    cont = continue_change(tr, t, lv, night.test, night)
                    if cont is not None:
                        est, z, dof, hist, new = cont
                        p = p_toward(z, dof, tr.direction)
                        if p < opt['alpha_continue']:
                            status = 'regression' if tr.direction < 0 else 'improvement'
                            out.append(_finding(tr, t, status, est, z, p, nights[tr.since], hist,
                                                history, nights, 'series'))
                            continue
                        # the nights since no longer differ from the history: it was the first
                        # night's noise (or a short, lucky history), not a change; they rejoin
                        tr.since = None
                        tr.excluded.difference_update(new)
                res = fresh_evidence(tr, t, lv, night.test, night)
                if res is None:
                    out.append(_finding(tr, t, 'insufficient history', None, None, None, None,
                                        night.clean_before(tr, t, lv), history, nights, 'series'))
                    continue
                res['levels'] = lv
                group_fresh.append((tr, res))
            # Empirical null: a big group's own spread of single-night z (after the common
            # factor) shows when the noise model is too optimistic; widen, never narrow.
            if len(group_fresh) >= opt['empirical_null_min']:
                zs = np.array([tr.z[t] for tr, _ in group_fresh])
                s0 = mad_sd(zs)
                if s0 > 1.0:
                    for _, res in group_fresh:
                        res['z'] /= s0
            fresh += group_fresh
        out += [f for f in sys_findings if f is not None]
        for (tr, est, z, p, hist), kept in zip(rerun, holm([r[3] for r in rerun],
                                                           opt['alpha_confirm'])):
            status = ('regression' if tr.direction < 0 else 'improvement') if kept else 'ok'
            out.append(_finding(tr, t, status, est, z, p, nights[tr.since], hist, history, nights,
                                'series'))
        if not fresh:
            continue
        tails = [t_tails(res['z'], res['dof']) for _, res in fresh]
        down = holm([p for p, _ in tails], opt['alpha'])
        # improvements never turn a night red; a real one persists and pools evidence, so it
        # can wait for stronger proof than a regression
        up = holm([p for _, p in tails], opt['alpha_improvement'])
        for (tr, res), (p_down, p_up), is_down, is_up in zip(fresh, tails, down, up):
            change = math.expm1(res['est'])
            status, since = 'ok', None
            if (is_down and change <= -opt['min_effect']) or (is_up and change >= opt['min_effect']):
                status = 'regression' if is_down else 'improvement'
                since = nights[tr.start_change(res['levels'], t, -1 if is_down else 1,
                                               res['k'])]
            out.append(_finding(tr, t, status, res['est'], res['z'], min(p_down, p_up), since,
                                res['hist'], history, nights, 'series',
                                {'pooled_nights': len(res['new'])}))
    return out


def _judge_factor(ft, t, levels, night, present, group, history):
    """The common factor of one partition and phase tonight: a finding of scope `system`."""
    opt = night.opt
    tester = _system_tester(night, present)
    status, since, est, z, p, hist = 'ok', None, None, None, None, []
    cont = continue_change(ft, t, levels, tester, night) if ft.since is not None else None
    if cont is not None:
        est, z, dof, hist, _ = cont
        status = 'regression' if ft.direction < 0 else 'improvement'
        since, p = ft.since, min(t_tails(z, dof))
    else:
        res = fresh_evidence(ft, t, levels, tester, night)
        if res is None:
            status = 'insufficient history'
        else:
            est, z, hist = res['est'], res['z'], res['hist']
            p_down, p_up = t_tails(z, res['dof'])
            p = min(p_down, p_up)
            if p < opt['alpha_system'] and abs(math.expm1(est)) >= opt['min_effect']:
                status = 'regression' if est < 0 else 'improvement'
                since = ft.start_change(levels, t, -1 if est < 0 else 1, res['k'])
    fio = [tr for tr in present if is_baseline_params(history.keys[tr.kid][4])]
    fio_change = None
    if fio and hist and est is not None:
        tr = fio[0]
        h = [u for u in hist if u in tr.y]
        if h:
            fio_change = math.expm1(tr.y[t] - float(np.mean([tr.y[u] for u in h])))
    return {'status': status, 'scope': 'system', 'since': since, 'est': est, 'z': z, 'p': p,
            'history_nights': len(hist), 'n': len(present), 'fio_change': fio_change,
            'partition': group[0], 'phase': PHASES[group[1]], '_sid': present[0].sid[t], 't': t}


def is_baseline_params(params):
    return 'backend=fio' in params.split(',')


def detect(history, value='bw_MiBps', latest_only=False, series=None, last_nights=None,
           carry_night=None, estimate_factor=(), **options):
    """Findings for every series and night of a History (list of dicts, oldest first), plus one
    finding of scope `system` per partition, phase and night (check '*').

    ``latest_only``: only each series' latest night; ``series``: only these (key_id, phase_id);
    ``last_nights``: only each series' last N nights (earlier ones still serve as history).
    ``carry_night``: a night label (the confirmation re-run) whose common factor is carried from
    the night before, except for the (partition, phase) pairs in ``estimate_factor``.
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
        for f in _judge_system(tracks, nights, history, opt, carry_night, estimate_factor):
            if f.get('scope') == 'system' and 't' in f:
                f = _system_finding(f, system, nights, history)
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
    kept.sort(key=lambda f: (f['night'], f['scope'] != 'system', f['check'], f['params'],
                             f['phase']))
    return kept


def _series_key(f):
    return (f['system'], f['partition'], f['environ'], f['check'], f['params'], f['phase'])


def _system_finding(raw, system, nights, history):
    est = raw['est']
    return {'system': system, 'partition': raw['partition'], 'environ': SYSTEM_CHECK,
            'check': SYSTEM_CHECK, 'params': '', 'phase': raw['phase'], 'night': nights[raw['t']],
            'status': raw['status'], 'scope': 'system',
            'since': None if raw['since'] is None else nights[raw['since']],
            'median': None if est is None else math.exp(est), 'history_median': 1.0,
            'change': None if est is None else math.expm1(est), 'z': raw['z'], 'p': raw['p'],
            'n': raw['n'], 'history_nights': raw['history_nights'],
            'fio_change': raw['fio_change'], 'outliers': [],
            'session': history.sessions[raw['_sid']]['id']}
