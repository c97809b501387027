"""Robust statistics shared by history (baseline noise) and detection (scipy.stats underneath)."""
import functools
import math
import warnings

import numpy as np
from scipy import special


def median_log_var(values):
    """Variance of the log of a sample median (robust sigma, large-sample pi/2 factor)."""
    logs = np.log(np.asarray(values, dtype=float))
    if logs.size < 2:
        return 0.0
    from scipy import stats     # ~1 s to import: only where used, not on every nightly's path
    sigma = float(stats.median_abs_deviation(logs, scale='normal'))
    return (math.pi / 2.0) * sigma ** 2 / logs.size


MAD_NORMAL = 1.482602218505602     # 1 / Phi^-1(3/4): scipy's median_abs_deviation(scale='normal')


def small_median(x):
    """Median of a 1-D float array by sorting: the same value as np.median, without its ~20 us of
    argument handling -- the verdict takes ~10^5 medians of 3-60 values a night."""
    s = np.sort(x)
    n = s.size
    if n == 0:
        return float('nan')
    return float(s[n // 2]) if n % 2 else float((s[n // 2 - 1] + s[n // 2]) / 2.0)


def hodges_lehmann(values):
    """One-sample Hodges-Lehmann location: median of the Walsh averages (x_i + x_j)/2, i <= j.

    95 % as efficient as the mean for normal data (here: logs of lognormal bandwidths) yet one
    burst cannot move it. Large samples (> 200) fall back to the median (n^2 memory).
    """
    x = np.asarray(values, dtype=float)
    if x.size > 200:
        return float(np.median(x))
    i, j = _walsh_pairs(x.size)
    return small_median((x[i] + x[j]) / 2.0)


@functools.lru_cache(maxsize=None)
def _walsh_pairs(n):
    return np.triu_indices(n)


@functools.lru_cache(maxsize=None)
def hl_var_factor(n):
    """Var(Hodges-Lehmann of n normal values) / (sigma^2 / n), by a fixed-seed simulation.

    pi/3 asymptotically; close to 1 for n <= 3. Measured once per n so small nights are not
    judged with the large-sample factor.
    """
    if n <= 2:
        return 1.0
    if n > 60:
        return math.pi / 3.0
    rng = np.random.default_rng(12345 + n)
    draws = 4000 if n > 20 else 20000
    x = rng.normal(size=(draws, n))
    i, j = np.triu_indices(n)
    hl = np.median((x[:, i] + x[:, j]) / 2.0, axis=1)
    return float(np.var(hl) * n)


def mad_sd(x):
    """Normal-consistent MAD about the median. scipy.stats.median_abs_deviation gives the same
    value but costs ~2.5 ms a call in its argument handling: the nightly makes 10^4 such calls on
    arrays of 3-30 values (bench/detection.py went from 22 s to ~2 s a replayed night)."""
    x = np.asarray(x, dtype=float)
    return MAD_NORMAL * small_median(np.abs(x - small_median(x))) if x.size else 0.0


def winsorized_sd(residuals, dof):
    """Scale of residuals: MAD first (robust), then the SD of residuals clipped at 3 MADs over
    ``dof`` degrees of freedom -- nearly as efficient as a plain SD, yet a burst cannot inflate it."""
    r = np.asarray(residuals, dtype=float)
    if r.size == 0 or dof <= 0:
        return float('nan')
    mad = MAD_NORMAL * small_median(np.abs(r))
    clipped = np.clip(r, -3.0 * mad, 3.0 * mad) if mad > 0 else r
    return float(math.sqrt(np.sum(clipped ** 2) / dof))


def moderated_variances(variances, dofs, max_prior_dof=None, vouched=None):
    """Empirical-Bayes shrinkage of per-series variances towards their common level (limma's
    moderated t): returns (shrunk variances, their degrees of freedom).

    The prior's degrees of freedom d0 come from how much more the log variances spread than
    chi-square noise alone explains: equal true noise -> d0 large -> nearly the common value;
    very different series -> d0 small -> each keeps its own. ``vouched`` (a normal quantile,
    1.645 for 95 %): d0 from the upper confidence bound of that excess spread instead of its
    estimate -- what the series can vouch for: 400 series of 9 dof that agree give ~60 nights,
    24 of 7 dof ~12, where the estimate alone said "infinitely many" whenever the log
    variances happened to spread less than chi-square noise. ``max_prior_dof`` caps d0.
    """
    s2 = np.asarray(variances, dtype=float)
    d = np.asarray(dofs, dtype=float)
    ok = (s2 > 0) & (d > 0) & np.isfinite(s2)
    if ok.sum() < 5:
        return s2, d
    z = np.log(s2[ok]) - special.digamma(d[ok] / 2.0) + np.log(d[ok] / 2.0)
    k2 = special.polygamma(1, d[ok] / 2.0)     # chi-square noise's share of z's variance
    excess = float(np.var(z, ddof=1) - np.mean(k2))
    if vouched is not None:
        # the excess at most what the series allow: its estimate (never below zero) plus the
        # standard error of a sample variance of log chi-squares (cumulants psi1, psi3 of
        # log Gamma(d/2)), so a prior is never "infinitely many nights" by chance
        k4 = special.polygamma(3, d[ok] / 2.0)
        se = math.sqrt(float(np.mean(k4 + 2.0 * k2 * k2)) / z.size)
        excess = max(excess, 0.0) + vouched * se
    s0 = float(np.exp(np.mean(z)))         # z is unbiased for log(sigma^2) of each series
    if excess <= 0:
        d0 = 1e6
    else:
        # trigamma(d0/2) = excess; trigamma(x) ~ 1/x + 1/(2 x^2) inverted by Newton steps
        x = 0.5 + 1.0 / excess
        for _ in range(30):
            f = special.polygamma(1, x) - excess
            x = max(x - f / special.polygamma(2, x), 1e-3)
        d0 = 2.0 * x
    if max_prior_dof is not None:
        d0 = min(d0, float(max_prior_dof))
    out = s2.copy()
    out[ok] = (d0 * s0 + d[ok] * s2[ok]) / (d0 + d[ok])
    out[~ok] = s0
    return out, np.where(ok, d + d0, d0)


def holm(pvalues, alpha):
    """Holm's step-down: booleans, True where p is rejected with family-wise error <= alpha."""
    p = np.asarray(pvalues, dtype=float)
    reject = np.zeros(p.size, dtype=bool)
    for rank, i in enumerate(np.argsort(p)):
        if p[i] > alpha / (p.size - rank):
            break
        reject[i] = True
    return reject


def median_polish(matrix, iterations=6):
    """Tukey's median polish of a (rows x columns) matrix with NaN holes: (row effects,
    column effects) such that matrix ~ row + column, each fitted by medians (robust to < half of
    the rows moving in a column)."""
    m = np.asarray(matrix, dtype=float)
    rows, cols = np.zeros(m.shape[0]), np.zeros(m.shape[1])
    if m.size == 0:
        return rows, cols
    for _ in range(iterations):
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', RuntimeWarning)     # all-NaN rows/columns
            rows = np.nanmedian(m - cols[None, :], axis=1)
            cols = np.nanmedian(m - rows[:, None], axis=0)
    rows = np.nan_to_num(rows)
    cols = np.nan_to_num(cols)
    return rows, cols
