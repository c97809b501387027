#!/usr/bin/env python3
"""The gate's rule shown right by simulation: its own decision code on pairs drawn from measured
spreads, 5,000 gates per case (a rate's standard error 0.4 %).

Spreads (sd of the log pair ratios B/A): this machine quiet (0.13) and loaded (0.30), and a
heavy-tailed production-like one (sd 0.3 with 5 % of the pairs 2-5x off, either way). Each pair's
log ratio is B's run noise minus A's (each sd/sqrt(2)), so the mixes of a bisection block share
A's noise as they do in the gate. For every spread:

* the plan (plan.rows -> sequential.plan) at the robust spread the gate would measure, and the
  cap of --pairs auto it sets (plan.cap);
* gates under --pairs auto (sequential.decide, what judge.arm calls): A/A "slower" and "same",
  and how often -10 %, -15 % and -30 % are called "slower", with the mean pairs run;
* the fixed design (pairs.judge's order-statistic interval at one n, "same" at the effect as the
  sequential rule): the fewest pairs at which its error rates are no worse than the sequential
  rule's (A/A not "same", -15 % not "slower"), computed exactly from binomial counts; the
  sequential mean pairs as a share of that n;
* bisections of three parts, one carrying the change: the gate, then stage 1's three mixes against
  A, each by sequential.decide, the stage stopping when all are decided or at the cap, a part named
  by bisect.carries; the share of runs naming exactly the right part, a wrong one, or none (stage
  2 is not simulated: a run that would need it counts as naming none).

Usage: python3 -m bench.gate_sim [--runs 5000] [--effect 0.15] [--seed 1]
"""
import argparse
import math
import time

import numpy as np
from scipy import stats as sst
from scipy.special import gammaln

from gate import bisect, plan, sequential
from gate import pairs as gate_pairs

TOL, LEVEL = gate_pairs.TOLERANCE, gate_pairs.LEVEL
SPREADS = {'quiet 0.13': (0.13, 0.0), 'loaded 0.30': (0.30, 0.0),
           'heavy 0.3 + 5 % 2-5x': (0.30, 0.05)}
CHANGES = (0.0, -0.10, -0.15, -0.30)


def draw(rng, shape, sd, outliers, centre=0.0, shared=None):
    """Log ratios: centre + B's noise - A's (``shared``: A's noise, one per block and run), with
    a share ``outliers`` of pairs moved by a factor 2-5 either way."""
    a = shared if shared is not None else rng.normal(0, sd / math.sqrt(2), shape)
    x = centre + rng.normal(0, sd / math.sqrt(2), shape) - a
    if outliers:
        off = rng.random(shape) < outliers
        x = x + off * rng.choice([-1, 1], shape) * np.log(rng.uniform(2, 5, shape))
    return x


def robust_sd(rng, sd, outliers):
    """The spread the gate measures of such pairs (1.4826 x MAD of a large sample)."""
    x = draw(rng, (200000,), sd, outliers)
    return gate_pairs.MAD_NORMAL * float(np.median(np.abs(x - np.median(x))))


def run_gates(rng, runs, cap, sd, outliers, change, effect):
    """(status array, pairs run array) of ``runs`` gates under --pairs auto."""
    x = draw(rng, (runs, cap), sd, outliers, math.log(1 + change))
    status, at = sequential.decide(x, TOL, effect, LEVEL)
    return status, np.where(at > 0, at, cap)


def cdf(sd, outliers, centre, c):
    """P(log ratio < c) of the model, exactly (normal, or normal with the outliers' mixture)."""
    base = sst.norm.cdf(c - centre, scale=sd)
    if not outliers:
        return base
    f = np.linspace(math.log(2), math.log(5), 201)[:, None]     # log factor, uniform in 2..5
    w = 1 / np.exp(f)                                            # density of log U(2, 5)
    w = w / w.sum()
    moved = 0.5 * (sst.norm.cdf(c - centre - f, scale=sd) + sst.norm.cdf(c - centre + f, scale=sd))
    return (1 - outliers) * base + outliers * float((w * moved).sum())


def fixed_rates(n, sd, outliers, effect):
    """Exact error rates of the fixed design at n pairs: (P(A/A not same), P(-effect change
    not slower), P(A/A slower))."""
    k, _ = gate_pairs._rank(n, LEVEL)           # the gate's interval: x(k) .. x(n+1-k)
    if not k:
        return 1.0, 1.0, 0.0
    c_slow, _, c_low, c_high = sequential.bounds(TOL, effect)
    need = n - k + 1                            # hi < c  <=>  #(x < c) >= n + 1 - k
    miss = sst.binom.cdf(need - 1, n, cdf(sd, outliers, math.log(1 - effect), c_slow))
    aa_slow = sst.binom.sf(need - 1, n, cdf(sd, outliers, 0.0, c_slow))
    # same: fewer than k pairs below c_low and fewer than k above c_high (trinomial, exact)
    q1 = cdf(sd, outliers, 0.0, c_low)
    q3 = 1 - cdf(sd, outliers, 0.0, c_high)
    i, j = np.arange(k)[:, None], np.arange(k)[None, :]
    ln = gammaln(n + 1) - gammaln(i + 1) - gammaln(j + 1) - gammaln(n - i - j + 1) \
        + i * math.log(q1) + j * math.log(q3) + (n - i - j) * math.log(1 - q1 - q3)
    return 1 - float(np.exp(ln).sum()), float(miss), float(aa_slow)


def fixed_n(sd, outliers, effect, not_same, miss, n_max=600):
    """Fewest pairs at which the fixed design is no worse than (not_same, miss)."""
    for n in range(gate_pairs.min_pairs(LEVEL), n_max):
        ns, ms, _ = fixed_rates(n, sd, outliers, effect)
        if ns <= not_same and ms <= miss:
            return n
    return None


def bisect_runs(rng, runs, cap, sd, outliers, change, effect):
    """Shares of bisections naming the right part, a wrong one, nothing; mean pairs."""
    centre = math.log(1 + change)
    gate, g_at = run_gates(rng, runs, cap, sd, outliers, change, effect)
    b_logs = draw(rng, (runs, cap), sd, outliers, centre)
    a_noise = rng.normal(0, sd / math.sqrt(2), (runs, cap))
    thetas = (centre, 0.0, 0.0)                 # part 1 carries the whole change
    mixes = [draw(rng, (runs, cap), sd, outliers, t, shared=a_noise) for t in thetas]
    decided = [sequential.decide(m, TOL, effect, LEVEL) for m in mixes]
    open_ = np.any([d[1] == 0 for d in decided], axis=0)
    stop = np.max([d[1] for d in decided], axis=0)
    stop = np.where(open_, cap, stop)
    b_med = _median(b_logs, g_at)
    named = []
    for m, (status, _) in zip(mixes, decided):
        share = _median(m, stop) / b_med
        named.append(bisect.carries(status, np.ones(runs), share, sequential=True) & ~open_)
    slower = gate == sequential.SLOWER
    right = slower & named[0] & ~named[1] & ~named[2]
    wrong = slower & (named[1] | named[2])
    pairs = g_at + np.where(slower, stop, 0)
    return right.mean(), wrong.mean(), (slower & open_).mean(), slower.mean(), pairs.mean()


def _median(x, upto):
    """Row medians of the first ``upto`` values of each row."""
    masked = np.where(np.arange(x.shape[1])[None, :] < upto[:, None], x, np.nan)
    return np.nanmedian(masked, axis=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--runs', type=int, default=5000)
    ap.add_argument('--effect', type=float, default=sequential.EFFECT)
    ap.add_argument('--seed', type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.time()
    print(f'# {args.runs} gates per case, tolerance {TOL:g}, effect {args.effect:g}, level '
          f'{LEVEL:g}, seed {args.seed}')
    for label, (sd, outliers) in SPREADS.items():
        measured = robust_sd(rng, sd, outliers)
        rows = plan.rows({('sim', 'write'): (measured, 'simulation')}, TOL, args.effect, LEVEL)
        cap = plan.cap(rows)
        planned = rows[0]['pairs'] or cap      # None: more than the plan's 400 pairs
        print(f'\n## {label}: measured sd {measured:.3f}, plan {rows[0]["pairs"] or ">400"} '
              f'pairs (mean {rows[0]["mean"]:.1f}), cap {cap}')
        seq = {}
        for change in sorted(set(CHANGES) | {-args.effect}, reverse=True):
            status, n = run_gates(rng, args.runs, cap, sd, outliers, change, args.effect)
            seq[change] = status, n
            by_plan = np.mean((status == 'slower') & (n <= planned))
            print(f'  change {change:+.0%}: slower {np.mean(status == "slower"):.1%} (by the '
                  f'planned {planned} pairs {by_plan:.1%}), same '
                  f'{np.mean(status == "same"):.1%}, faster {np.mean(status == "faster"):.1%}, '
                  f'cannot tell {np.mean(status == "cannot tell"):.1%}; mean pairs {n.mean():.1f}')
        not_same = float(np.mean(seq[0.0][0] != 'same'))
        miss = float(np.mean(seq[-args.effect][0] != 'slower'))
        nf = fixed_n(sd, outliers, args.effect, max(not_same, 1 / args.runs), miss)
        if nf:
            ns, ms, aa = fixed_rates(nf, sd, outliers, args.effect)
            means = {c: seq[c][1].mean() for c in (0.0, -args.effect, -0.30)}
            print(f'  fixed design at equal error rates (A/A not same <= {not_same:.1%}, '
                  f'-{args.effect:.0%} missed <= {miss:.1%}): {nf} pairs (its A/A slower '
                  f'{aa:.2%}); sequential mean as a share: A/A {means[0.0] / nf:.0%}, '
                  f'-{args.effect:.0%} {means[-args.effect] / nf:.0%}, -30 % '
                  f'{means[-0.30] / nf:.0%}, A/A and -{args.effect:.0%} together '
                  f'{(means[0.0] + means[-args.effect]) / 2 / nf:.0%}')
        for change in (-args.effect, -0.30):
            right, wrong, open_, slower, pairs = bisect_runs(rng, args.runs, cap, sd, outliers,
                                                             change, args.effect)
            print(f'  bisect, {change:+.0%} in one of three parts: right part {right:.1%} '
                  f'({right / slower if slower else 0:.1%} of the gates that said slower), '
                  f'wrong part {wrong:.1%}, stage cannot tell {open_:.1%}; mean pairs {pairs:.1f}')
    print(f'\n# {time.time() - started:.0f} s')


if __name__ == '__main__':
    main()
