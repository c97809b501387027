"""The gate's sequential rule (``--pairs auto``): look after every block, stop when decided.

A confidence sequence for the median of the log pair ratios, from signs only: the sequential
form of the sign test's interval of pairs.py (Howard & Ramdas 2022, "Sequential estimation of
quantiles with applications to A/B-testing and best-arm identification", Bernoulli 28(3); the
mixture martingale of Robbins 1970, "Statistical methods related to the law of the iterated
logarithm", Ann. Math. Statist. 41; valid at every look by Ville's inequality).

For a boundary c, "the median is at least c" makes each pair fall below c with probability at
most 1/2. The count S_n of pairs below c after n pairs then keeps

    M_n = integral over p of (2p)^S_n (2(1-p))^(n-S_n) pi(p) dp,
    pi = W_ALL U[1/2, 1] + (1 - W_ALL) U[1/2, P_MAX]   (any mixing law over p >= 1/2 will do)

a nonnegative supermartingale of mean <= 1, so P(M_n ever reaches 1/alpha) <= alpha however often
one looks, whatever the shape of the noise (only signs are counted: a pair 5x off weighs as much
as one 5 % off). M_n grows with S_n, so it reaches 1/alpha exactly when S_n >= s*(n), the least
such count; in order statistics the upper end of the sequence is x(s*), the lower x(n+1-s*),
intersected over all looks. alpha = (1 - level) / 2 per end.

Verdicts at the tolerance t and the effect d (d >= t), decided once and then kept:
  slower       upper end below log(1 - t): B slower by more than the tolerance, beyond doubt
  faster       lower end above log(1 + t)
  same         the sequence inside [log(1 - d), log(1 + d)]: no change as large as the effect
  cannot tell  none of these by the cap
(slower before faster before same when one look decides several.) Counting "slower" as
S_n(log(1 - t)) >= s*(n) at any look so far is the same as the intersected upper end below it,
which is what ``decide`` computes, vectorised over many sequences (bench/gate_sim.py) or one.
"""
import functools
import math

import numpy as np

SLOWER, FASTER, SAME, OPEN = 'slower', 'faster', 'same', 'cannot tell'
EFFECT = 0.15
#: power the plan asks of the sequence at the effect (the pairs by which 9 gates in 10 decide)
POWER = 0.90
NEVER = 1 << 30
#: The mixture over p: W_ALL of its weight uniform on [1/2, 1] (a large change decided by its first
#: 7 pairs, as with that prior alone), the rest uniform on [1/2, P_MAX], where a change at the
#: effect puts the chance a pair falls below the slower boundary: 0.64 (sd 0.3) to 0.80 (sd 0.13).
#: bench/gate_sim.py, 5000 gates a case: at -15 % the mean pairs fell from 55-61 % of the fixed
#: design's to 53-58 %, the plan's pairs at sd 0.3 from 202 to 194; -30 % still 7.3 pairs quiet.
P_MAX = 0.8
W_ALL = 0.5


@functools.lru_cache(maxsize=None)
def critical(n_max, level):
    """s*(n) for n = 1..n_max as an int array (NEVER where no count decides yet)."""
    from scipy import special
    alpha = (1 - level) / 2
    n = np.arange(1, n_max + 1)[:, None]
    s = np.arange(0, n_max + 1)[None, :]
    ok = s <= n
    a, b = np.where(ok, s + 1, 1), np.where(ok, n - s + 1, 1)
    # log M = (n + 1) log 2 + log B(a, b) + log P(Beta(a, b) > 1/2)
    # M = 2^n B(a, b) [W P(1/2 < Beta < 1) / (1/2) + (1 - W) P(1/2 < Beta < P_MAX) / (P_MAX - 1/2)]
    tail = special.betaincc(a, b, 0.5)
    mass = W_ALL * tail / 0.5 + (1 - W_ALL) * (tail - special.betaincc(a, b, P_MAX)) / (P_MAX - 0.5)
    with np.errstate(divide='ignore'):
        log_m = n * math.log(2) + special.betaln(a, b) + np.log(np.maximum(mass, 0))
    hit = ok & (log_m >= math.log(1 / alpha))
    out = np.where(hit.any(axis=1), hit.argmax(axis=1), NEVER)
    out.setflags(write=False)
    return out


def bounds(tolerance, effect):
    """Log boundaries (slower, faster, same-low, same-high)."""
    return (math.log(1 - tolerance), math.log(1 + tolerance), math.log(1 - effect),
            math.log(1 + effect))


def decide(logs, tolerance, effect=EFFECT, level=0.90):
    """Verdicts of sequences of log ratios ``logs`` (shape (runs, n); NaN: not yet seen, only at
    the end of a row). Returns (status array of str, first look that decided, 0 if none)."""
    logs = np.atleast_2d(np.asarray(logs, dtype=float))
    runs, n = logs.shape
    s_star = critical(max(n, 1), level)[:n]
    c_slow, c_fast, c_low, c_high = bounds(tolerance, effect)
    seen = ~np.isnan(logs)

    def first(mask):
        """First look at which the count of ``mask`` reached s*(n), or NEVER."""
        hit = np.cumsum(mask & seen, axis=1) >= s_star
        return np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, NEVER)

    with np.errstate(invalid='ignore'):
        slow, fast = first(logs < c_slow), first(logs > c_fast)
        same = np.maximum(first(logs > c_low), first(logs < c_high))
    when = np.minimum(np.minimum(slow, fast), same)
    status = np.full(runs, OPEN, dtype=object)
    # one look deciding several: slower wins, then faster (fail closed)
    for verdict, at in ((SAME, same), (FASTER, fast), (SLOWER, slow)):
        status[(at == when) & (when < NEVER)] = verdict
    return status, np.where(when < NEVER, when, 0)


def sequence(ratios, level=0.90):
    """(lo, hi) of the confidence sequence after these ratios, intersected over every look
    (None for an end not yet bounded)."""
    logs = np.log(np.asarray(ratios, dtype=float))
    s_star = critical(max(len(logs), 1), level)
    lo, hi = -math.inf, math.inf
    for m in range(1, len(logs) + 1):
        k = int(s_star[m - 1])
        if k <= m:
            x = np.sort(logs[:m])
            lo, hi = max(lo, x[m - k]), min(hi, x[k - 1])
    return (math.exp(lo) if lo > -math.inf else None, math.exp(hi) if hi < math.inf else None)


def judge(ratios, tolerance, effect=EFFECT, level=0.90):
    """One check and phase after its pairs so far: pairs.judge's fields, the sequence as the
    interval, and 'decided_at' (the look that decided, or None)."""
    import statistics
    status, at = decide([np.log(ratios)] if len(ratios) else np.empty((1, 0)), tolerance,
                        effect, level)
    lo, hi = sequence(ratios, level) if len(ratios) else (None, None)
    return {'status': status[0], 'n': len(ratios), 'decided_at': int(at[0]) or None,
            'ratio': statistics.median(ratios) if len(ratios) else None, 'lo': lo, 'hi': hi,
            'coverage': level, 'needed': None}


# ---- the plan: pairs that tell the effect, exactly, from the chance one pair falls below ----
def crossing(p, n_max, level=0.90):
    """P(the count of pairs on one side of a boundary, each there with chance p, has reached
    s*(m) at some look m <= n), for n = 1..n_max: a walk of counts absorbed at s*, exactly."""
    s_star = critical(n_max, level)
    alive = np.zeros(n_max + 2)
    alive[0] = 1.0
    done, out = 0.0, np.empty(n_max)
    for m in range(1, n_max + 1):
        nxt = alive * (1 - p)
        nxt[1:] += alive[:-1] * p
        k = int(s_star[m - 1])
        if k <= m:
            done += nxt[k:].sum()
            nxt[k:] = 0.0
        alive, out[m - 1] = nxt, done
    return out


def racing(q_low, q_mid, n_max, level=0.90):
    """Chances, for n = 1..n_max, that the rule has said "slower" by n pairs, and that it has
    decided at all, when each pair falls below log(1 - effect) with chance q_low and between it
    and log(1 - tolerance) with q_mid: a walk of counts (N1 below the first, N2 between)
    absorbed at "slower" (N1 + N2 >= s*) or at "same" (n - N1 >= s*, its other end taken as
    reached: "same" no later than it could come), computed exactly."""
    s_star = critical(n_max, level)
    q_high = 1 - q_low - q_mid
    alive = np.zeros((1, 1))
    alive[0, 0] = 1.0
    slow = same = 0.0
    out_slow, out_done = np.empty(n_max), np.empty(n_max)
    for m in range(1, n_max + 1):
        nxt = np.zeros((m + 1, m + 1))
        nxt[:m, :m] = alive * q_high
        nxt[1:, :m] += alive * q_low
        nxt[:m, 1:] += alive * q_mid
        k = int(s_star[m - 1])
        if k <= m:
            i = np.arange(m + 1)
            win = (i[:, None] + i[None, :]) >= k                # slower (wins a tie)
            lose = (m - i[:, None] >= k) & ~win                  # same
            slow += nxt[win].sum()
            same += nxt[lose].sum()
            nxt[win | lose] = 0.0
        alive, out_slow[m - 1], out_done[m - 1] = nxt, slow, slow + same
        if 1 - out_done[m - 1] < 1e-7:      # all decided: the rest is flat
            out_slow[m:], out_done[m:] = slow, slow + same
            break
    return out_slow, out_done


def below(sd, boundary, centre):
    """Chance that one log ratio falls below ``boundary`` at normal spread ``sd`` about
    ``centre``."""
    from scipy.stats import norm
    return float(norm.cdf((boundary - centre) / sd)) if sd > 0 else float(boundary > centre)


@functools.lru_cache(maxsize=256)
def plan(sd, tolerance, effect=EFFECT, level=0.90, power=POWER, n_max=400):
    """At a spread ``sd`` of the log ratios: {'pairs': the pairs by which a change of -effect is
    called slower with ``power``, 'cap': the cap of --pairs auto, 'mean': the mean pairs the rule
    runs at that change, 'same_pairs': the pairs by which no change is called same with
    ``power``} (None: more than n_max). The cap is twice the pairs: the spread is itself an
    estimate, and twice the pairs still tells the effect at a spread sqrt(2) larger."""
    c_slow, _, c_low, _ = bounds(tolerance, effect)
    centre = math.log(1 - effect)
    q_low = below(sd, c_low, centre)
    slow, done = racing(q_low, below(sd, c_slow, centre) - q_low, n_max, level)
    # no change: each end of "same" is one walk; both ends together at least 1 - 2 (1 - one)
    same = np.clip(2 * crossing(1 - below(sd, c_low, 0.0), n_max, level) - 1, 0, 1)
    pairs = _first(slow >= power)
    return {'pairs': pairs, 'cap': min(2 * pairs, n_max) if pairs else None,
            'mean': float(1 + np.sum(1 - done[:-1])), 'same_pairs': _first(same >= power)}


def _first(mask):
    return int(mask.argmax()) + 1 if mask.any() else None
