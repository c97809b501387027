"""One series, one night: its repetitions against the recent history of the same key.

The nightly verdict judges the night as a whole (postprocess/detect/suite.py); this module keeps the
per-series comparison (``compare``) and the outlier rule both use.

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

``compare`` judges one series alone, at its own significance level: for a suite, use
``postprocess.detect.suite.detect`` (common factor, suite-wide error control, persistence).
"""
import math

import numpy as np
from scipy import stats

from postprocess.common.stats import median_log_var  # noqa: F401  (re-exported)

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


def mann_whitney(x, y):
    """Two-sided Mann-Whitney U test of samples x and y: (U of x, z, p).

    scipy.stats.mannwhitneyu, normal approximation with tie and continuity corrections (the
    sample sizes here: a night has >= 3 repetitions, the history >= 9); z is its signed statistic.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size == 0 or y.size == 0:
        return float('nan'), float('nan'), 1.0
    if np.ptp(np.concatenate((x, y))) == 0:
        return float(x.size * y.size / 2.0), 0.0, 1.0       # all ties: no evidence
    res = stats.mannwhitneyu(x, y, alternative='two-sided', method='asymptotic',
                             use_continuity=True)
    u = float(res.statistic)
    z = math.copysign(float(stats.norm.isf(res.pvalue / 2.0)), u - x.size * y.size / 2.0)
    return u, z, float(res.pvalue)


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


def fixed_threshold(night, previous_night, drop=0.20):
    """The naive method bench/detection.py compares with: one run vs the previous, -20 % fails."""
    return float(np.median(night)) < (1.0 - drop) * float(np.median(previous_night))
