"""Regression detection: each night's repetitions against the recent history of the same key.

A nightly point is a sample of repetitions. For every (key, phase) and night we compare that night's
repetitions with the pooled repetitions of the previous ``window`` nights that had data:

* robust summaries: median, Q1, Q3, IQR of the night and of the history;
* Mann-Whitney U (rank test, no normality assumed; normal approximation with tie correction) of
  night vs history;
* flag ``regression`` when the test is significant (p < alpha) AND the median moved down by at
  least ``min_effect`` (relative) AND by more than ``night_k`` robust standard deviations of the
  history's night medians (log scale, MAD-based) -- the last guard keeps ordinary night-to-night
  drift of a busy system from looking significant just because it has many repetitions;
  ``improvement`` symmetrically upward;
* outliers beyond Q3 + k*IQR (and below Q1 - k*IQR), k = 12 for writes and 20 for reads (seed 000),
  are listed, never dropped.

The defaults were tuned with bench/detection.py (simulated lognormal CV 15 %, 10 repetitions a night,
7 nights of history): see that file for the measured detection and false-alarm rates.
"""
import math

import numpy as np

from postprocess.common.stats import median_log_var  # noqa: F401  (re-exported)
from postprocess.history.perflog import PHASES

BETWEEN_F = 2.0
OUTLIER_K = {'write': 12.0, 'read': 20.0}
DEFAULTS = {'window': 7, 'min_nights': 3, 'z_regression': 2.4, 'z_improvement': 3.0,
            'max_p': 0.05, 'min_effect': 0.05}


def quartiles(values):
    q1, med, q3 = np.percentile(values, [25, 50, 75])
    return float(q1), float(med), float(q3)


def outlier_indices(values, k):
    """Indices of values beyond Q3 + k*IQR or below Q1 - k*IQR (empty for < 4 values)."""
    values = np.asarray(values, dtype=float)
    if values.size < 4:
        return []
    q1, _, q3 = quartiles(values)
    iqr = q3 - q1
    return [int(i) for i in np.flatnonzero((values > q3 + k * iqr) | (values < q1 - k * iqr))]


def rankdata(values):
    """Average ranks (1-based) with ties sharing the mean rank, like scipy.stats.rankdata."""
    values = np.asarray(values)
    order = np.argsort(values, kind='mergesort')
    ranks = np.empty(values.size, dtype=float)
    sorted_vals = values[order]
    boundaries = np.flatnonzero(np.diff(sorted_vals)) + 1
    starts = np.concatenate(([0], boundaries))
    ends = np.concatenate((boundaries, [values.size]))
    for s, e in zip(starts, ends):
        ranks[order[s:e]] = 0.5 * (s + e - 1) + 1.0
    return ranks, ends - starts


def mann_whitney(x, y):
    """Two-sided Mann-Whitney U test of samples x and y: (U of x, z, p).

    Normal approximation with tie correction and continuity correction; adequate for the sample
    sizes here (a night has >= 5 repetitions, history >= 15).
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n1, n2 = x.size, y.size
    if n1 == 0 or n2 == 0:
        return float('nan'), float('nan'), 1.0
    ranks, tie_sizes = rankdata(np.concatenate((x, y)))
    u = ranks[:n1].sum() - n1 * (n1 + 1) / 2.0
    mean = n1 * n2 / 2.0
    n = n1 + n2
    tie_term = float(np.sum(tie_sizes ** 3 - tie_sizes))
    var = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1))) if n > 1 else 0.0
    if var <= 0:
        return float(u), 0.0, 1.0
    z = (u - mean - math.copysign(0.5, u - mean)) / math.sqrt(var) if u != mean else 0.0
    return float(u), float(z), float(math.erfc(abs(z) / math.sqrt(2.0)))


def shift_test(night, recent, night_var=0.0, history_var=0.0):
    """Robust shift of log bandwidth, night vs pooled history: (Hodges-Lehmann shift, z).

    The shift is the median of all pairwise differences of logs (rank-based, efficient, not moved
    by outliers). Its standard error combines within-night noise (pooled MAD of each night's
    residuals about its own median) and any extra night-to-night variance of the history's night
    medians beyond what within-night noise explains (a random-effects model). ``night_var`` and
    ``history_var`` are known extra variances (log scale) of the night's and of an average history
    night's level, e.g. from dividing by a baseline median measured with its own noise.
    """
    logs_new = np.log(night)
    logs_hist = [np.log(h) for h in recent]
    pooled = np.concatenate(logs_hist)
    shift = float(np.median(logs_new[:, None] - pooled[None, :]))
    residuals = np.concatenate([g - np.median(g) for g in logs_hist + [logs_new]])
    # Scale: MAD first (robust), then the SD of residuals winsorized at 3 MADs -- nearly as
    # efficient as a plain SD, so z is not made noisy by a noisy scale, yet outliers cannot inflate
    # it. Residuals about a small group's own median are biased low: n/(n-1) corrects enough.
    n_eff = np.mean([g.size for g in logs_hist + [logs_new]])
    mad = 1.4826 * float(np.median(np.abs(residuals)))
    clipped = np.clip(residuals, -3.0 * mad, 3.0 * mad)
    sigma_w = float(np.sqrt(np.mean(clipped ** 2) * n_eff / max(n_eff - 1.0, 1.0)))
    medians = np.array([np.median(g) for g in logs_hist])
    mean_n = float(np.mean([g.size for g in logs_hist]))
    # variance of a night median from noise alone (+ the known per-night part)
    expected = (math.pi / 2.0) * sigma_w ** 2 / mean_n + history_var
    observed = float(np.var(medians, ddof=1)) if medians.size > 1 else 0.0
    # Count night-to-night variance only when clearly there (observed > BETWEEN_F x expected):
    # its estimate from a week of nights is noisy and would otherwise blunt detection on a
    # steady machine.
    var_between = observed - expected if observed > BETWEEN_F * expected else 0.0
    var = (math.pi / 3.0) * sigma_w ** 2 * (1.0 / logs_new.size + 1.0 / pooled.size)
    var += var_between * (1.0 + 1.0 / len(logs_hist)) + night_var + history_var / len(logs_hist)
    z = shift / math.sqrt(var) if var > 0 else (0.0 if shift == 0 else math.copysign(math.inf, shift))
    return shift, z, math.sqrt(var_between)


def compare(night, history_nights, phase='write', night_var=0.0, history_var=0.0, **options):
    """Judge one night's repetitions against a list of earlier nights' repetition arrays.

    Returns a dict: status ('regression', 'improvement', 'ok', 'insufficient history'), the
    night's min/Q1/median/Q3/max, history median, relative change (Hodges-Lehmann shift), z, the
    Mann-Whitney p value, outlier indices of the night.
    """
    opt = dict(DEFAULTS)
    opt.update({k: v for k, v in options.items() if v is not None})
    unknown = set(opt) - set(DEFAULTS)
    if unknown:
        raise TypeError(f'unknown detection option(s): {sorted(unknown)}')
    night = np.asarray(night, dtype=float)
    recent = [np.asarray(h, dtype=float) for h in history_nights if len(h)][-opt['window']:]
    q1, med, q3 = quartiles(night)
    result = {'n': int(night.size), 'median': med, 'q1': q1, 'q3': q3, 'min': float(night.min()),
              'max': float(night.max()), 'history_nights': len(recent),
              'outliers': outlier_indices(night, OUTLIER_K.get(phase, 12.0)),
              'history_median': None, 'change': None, 'z': None, 'p': None, 'status': 'ok'}
    if len(recent) < opt['min_nights'] or night.size < 2 or np.any(night <= 0):
        result['status'] = 'insufficient history' if len(recent) < opt['min_nights'] else 'ok'
        return result
    pooled = np.concatenate(recent)
    shift, z, between = shift_test(night, recent, night_var, history_var)
    _, _, p = mann_whitney(night, pooled)
    change = math.expm1(shift)
    result.update(history_median=float(np.median(pooled)), change=change, z=z, p=p,
                  night_to_night=between)
    if abs(change) >= opt['min_effect'] and p < opt['max_p']:
        if z <= -opt['z_regression']:
            result['status'] = 'regression'
        elif z >= opt['z_improvement']:
            result['status'] = 'improvement'
    return result


def detect(history, value='bw_MiBps', latest_only=False, series=None, last_nights=None,
           **options):
    """Findings for every (key, phase, night) of a History: a list of dicts, oldest first.

    ``value='efficiency'`` judges bandwidth / that night's fio baseline median; the baseline
    median's own noise is passed on to the test so it is not mistaken for a change.
    ``latest_only``: only each series' latest night; ``series``: only these (key_id, phase_id);
    ``last_nights``: only each series' last N nights (earlier ones still serve as history).
    """
    findings = []
    window = options.get('window') or DEFAULTS['window']
    for (kid, phase_id), nights in history.groups(value).items():
        if series is not None and (kid, phase_id) not in series:
            continue
        phase = PHASES[phase_id]
        for i, (sid, vals) in enumerate(nights):
            if latest_only and i != len(nights) - 1:
                continue
            if last_nights is not None and i < len(nights) - last_nights:
                continue
            extra = {}
            if value == 'efficiency':
                hist_ids = [h for h, _ in nights[:i]][-window:]
                extra['night_var'] = history.baseline_var(sid, phase_id)
                extra['history_var'] = (float(np.mean([history.baseline_var(h, phase_id)
                                                       for h in hist_ids])) if hist_ids else 0.0)
            res = compare(vals, [v for _, v in nights[:i]], phase=phase, **extra, **options)
            res.update(history.key_dict(kid))
            res.update(phase=phase, value=value, session=history.sessions[sid]['id'],
                       night=history.sessions[sid]['night'])
            findings.append(res)
    findings.sort(key=lambda f: (f['night'], f['check'], f['params'], f['phase']))
    return findings


def fixed_threshold(night, previous_night, drop=0.20):
    """The naive method bench/detection.py compares with: one run vs the previous, -20 % fails."""
    return float(np.median(night)) < (1.0 - drop) * float(np.median(previous_night))
