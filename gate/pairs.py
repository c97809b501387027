"""The gate's statistics: one ratio per pair, the median ratio, its distribution-free interval.

Stack A and stack B run side by side in blocks (A B, then B A, ...), so slow drift of the machine
(a filesystem filling, a neighbour's job) touches both members of a pair alike and cancels in their
ratio B/A. Nothing is assumed about the shape of the ratios' distribution: the interval of their
median comes from binomial order statistics (the sign test's interval), so one burst moves it by
one rank, never by its size. Figures are rates (MiB/s, ops/s): a ratio below 1 is B slower.

Verdicts, with ``tol`` the tolerance (default 5 %) and [lo, hi] the interval:
  same        1 - tol <= lo and hi <= 1 + tol: whatever changed is inside the tolerance
  slower      hi < 1 - tol: B is slower by more than the tolerance
  faster      lo > 1 + tol
  cannot tell anything else (too few pairs, too much spread, or a change near the tolerance),
              with how many pairs would decide at the observed spread
"""
import functools
import math
import statistics

TOLERANCE = 0.05
LEVEL = 0.90
MAX_NEEDED = 1000          # "more than this" when the median sits on the tolerance's edge
#: large-sample standard error of a sample median is sqrt(pi/2) sigma / sqrt(n) (normal data)
MEDIAN_SE = math.sqrt(math.pi / 2)
#: "pairs would decide" is a plan for the next run: decide 4 times in 5 (80 % power), not a coin
#: flip (the interval's expected half-width just fitting would decide half the time)
POWER = 0.80
MAD_NORMAL = 1.482602218505602


def median_ci(ratios, level=LEVEL):
    """Distribution-free interval of the median: order statistics x(k)..x(n+1-k), k the largest
    with P(Binom(n, 1/2) < k) <= (1 - level) / 2. Returns (lo, hi, exact coverage), or None when
    n is too small for that level (n >= 5 at 90 %, n >= 6 at 95 %)."""
    x, n = sorted(ratios), len(ratios)
    k, coverage = _rank(n, level)
    if k == 0:
        return None
    return x[k - 1], x[n - k], coverage


@functools.lru_cache(maxsize=None)
def _rank(n, level):
    """(k, exact coverage) of median_ci for n values (k = 0: no interval)."""
    from scipy.stats import binom
    # binom.ppf lands on k or one below it: start there (n up to MAX_NEEDED stays cheap)
    k = max(0, min(int(binom.ppf((1 - level) / 2, n, 0.5)) - 1, n // 2))
    while k + 1 <= n // 2 and binom.cdf(k, n, 0.5) <= (1 - level) / 2:
        k += 1
    return k, (1 - 2 * float(binom.cdf(k - 1, n, 0.5)) if k else None)


def min_pairs(level=LEVEL):
    """The fewest pairs that give an interval at this level at all."""
    n = 1
    while median_ci([1.0] * n, level) is None:
        n += 1
    return n


def log_spread(ratios):
    """Robust sd of the log ratios (MAD_NORMAL x their MAD), or None for fewer than 2."""
    logs = [math.log(r) for r in ratios]
    if len(logs) < 2:
        return None
    mid = statistics.median(logs)
    return MAD_NORMAL * statistics.median(abs(x - mid) for x in logs)


def pairs_needed(ratios, tolerance=TOLERANCE, level=LEVEL):
    """Pairs that would decide, 4 times in 5, at the spread seen: (z + z_power) * sqrt(pi/2) *
    sigma / sqrt(n) in log ratio (sigma from the MAD of the log ratios; z that of the interval's
    exact coverage at n, 97.9 % at n = 10 for a 90 % level, so a small n needs more than the
    nominal z says; z_power 0.84, or 1.28 for "same", whose interval must fit at both ends) has
    to fit between the median and the nearer edge of the tolerance band. None when the median
    sits on that edge (no number of pairs decides: > MAX_NEEDED)."""
    from scipy.stats import norm
    n0 = max(min_pairs(level), len(ratios) + 1)
    sigma = log_spread(ratios)
    if not sigma:
        return n0
    mid = statistics.median(math.log(r) for r in ratios)
    lo_edge, hi_edge = math.log(1 - tolerance), math.log(1 + tolerance)
    if lo_edge < mid < hi_edge:     # for "same": both ends of the interval have to fit
        room, z_power = min(mid - lo_edge, hi_edge - mid), norm.ppf(1 - (1 - POWER) / 2)
    else:                           # for "slower"/"faster": one end
        room = lo_edge - mid if mid <= lo_edge else mid - hi_edge
        z_power = norm.ppf(POWER)
    if room <= 0:
        return None
    # the nominal z gives a lower bound; the exact coverage only widens the interval
    n = max(n0, math.ceil(((norm.ppf(1 - (1 - level) / 2) + z_power) * MEDIAN_SE * sigma
                           / room) ** 2))
    while n <= MAX_NEEDED:
        k, coverage = _rank(n, level)
        z = norm.ppf(1 - (1 - coverage) / 2)
        if k and (z + z_power) * MEDIAN_SE * sigma / math.sqrt(n) <= room:
            return n
        n += 1
    return None


def judge(ratios, tolerance=TOLERANCE, level=LEVEL):
    """{'status', 'ratio', 'lo', 'hi', 'coverage', 'n', 'needed'} of one check and phase."""
    n = len(ratios)
    out = {'n': n, 'ratio': statistics.median(ratios) if ratios else None,
           'lo': None, 'hi': None, 'coverage': None, 'needed': None}
    ci = median_ci(ratios, level) if ratios else None
    if ci is not None:
        out.update(lo=ci[0], hi=ci[1], coverage=ci[2])
        lo, hi = ci[0], ci[1]
        if 1 - tolerance <= lo and hi <= 1 + tolerance:
            return dict(out, status='same')
        if hi < 1 - tolerance:
            return dict(out, status='slower')
        if lo > 1 + tolerance:
            return dict(out, status='faster')
    needed = pairs_needed(ratios, tolerance, level)
    return dict(out, status='cannot tell', needed=needed if needed is not None else f'>{MAX_NEEDED}')


#: exit status of a gate: the worst of its checks' statuses (failed > slower > cannot tell > ok)
EXIT = {'same': 0, 'faster': 0, 'cannot tell': 4, 'slower': 3, 'failed': 1}
RANK = {0: 0, 4: 1, 3: 2, 1: 3}


def exit_status(statuses):
    """0 only when there is at least one judgement and every one is same or faster."""
    codes = [EXIT[s] for s in statuses]
    if not codes:
        return 4
    return max(codes, key=RANK.__getitem__)
