"""Benchmark of the regression detector (postprocess/detect/series.py) on simulated histories.

Goal (issue 7): lognormal noise with CV 15 %, 10 repetitions a night; a 20 % drop is flagged on its
first night in >= 95 % of cases, and nights without change are flagged (either way) in <= 1 %.
Compared with the naive method: one run against a reference, failing below -20 %.

Second scenario: the machine's load varies night to night (a shared factor, lognormal with CV
``--load-cv``, hitting the fio baseline and the check alike). Detection on absolute bandwidth then
raises false alarms; detection on efficiency (bandwidth / median baseline bandwidth of the same
night, postprocess/history/store.py) removes the shared factor.

Usage: python bench/detection.py [--trials 4000] [--seed 1]   (about 50 s CPU at 4000 trials)
"""
import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from postprocess.detect.series import DEFAULTS, compare, median_log_var  # noqa: E402


def lognormal(rng, median, cv, size):
    sigma = math.sqrt(math.log1p(cv * cv))
    return median * np.exp(rng.normal(0.0, sigma, size))


def simulate(rng, trials, nights, reps, cv, load_cv, drop, use_efficiency, options):
    """Fraction of trials whose last night is flagged (any direction) and as a regression."""
    flagged = regress = 0
    for _ in range(trials):
        load = lognormal(rng, 1.0, load_cv, nights + 1) if load_cv else np.ones(nights + 1)
        series, bvar = [], []
        for night in range(nights + 1):
            factor = load[night] * ((1.0 - drop) if night == nights else 1.0)
            values = lognormal(rng, 1000.0, cv, reps) * factor
            if use_efficiency:
                baseline = lognormal(rng, 2000.0, cv, reps) * load[night]
                values = values / np.median(baseline)
                bvar.append(median_log_var(baseline))
            series.append(values)
        extra = {'night_var': bvar[-1], 'history_var': float(np.mean(bvar[:-1]))} if bvar else {}
        res = compare(series[-1], series[:-1], phase='write', **extra, **options)
        flagged += res['status'] in ('regression', 'improvement')
        regress += res['status'] == 'regression'
    return flagged / trials, regress / trials


def naive(rng, trials, cv, load_cv, drop):
    """One run (one repetition) against a fixed reference (the true median): fail below -20 %."""
    load = lognormal(rng, 1.0, load_cv, trials) if load_cv else np.ones(trials)
    values = lognormal(rng, 1000.0, cv, trials) * load * (1.0 - drop)
    return float(np.mean(values < 0.8 * 1000.0))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--trials', type=int, default=4000)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--cv', type=float, default=0.15)
    ap.add_argument('--reps', type=int, default=10)
    ap.add_argument('--nights', type=int, default=DEFAULTS['window'])
    ap.add_argument('--load-cv', type=float, default=0.15)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    opts = {}
    print(f'detector defaults: {DEFAULTS}')
    print(f'simulation: CV {args.cv:.0%}, {args.reps} reps/night, {args.nights} nights of history, '
          f'{args.trials} trials per figure\n')

    det_any, det = simulate(rng, args.trials, args.nights, args.reps, args.cv, 0, 0.20, False, opts)
    fa_any, fa = simulate(rng, args.trials, args.nights, args.reps, args.cv, 0, 0.0, False, opts)
    nv_det, nv_fa = naive(rng, args.trials, args.cv, 0, 0.20), naive(rng, args.trials, args.cv, 0, 0)
    goal = det >= 0.95 and fa <= 0.01
    print('steady machine (only within-night noise):')
    print(f'  detector : 20 % drop flagged on first night {det:6.1%}   false regression alarms '
          f'{fa:6.2%} (any flag incl. improvements {fa_any:5.2%})'
          f'   goal (>=95 %, <=1 %) {"MET" if goal else "NOT MET"}')
    print(f'  fixed -20 % threshold, single run: drop caught {nv_det:6.1%}   false alarms {nv_fa:6.2%}\n')

    print(f'load varies night to night (shared factor, CV {args.load_cv:.0%}):')
    for label, eff in (('absolute bandwidth', False), ('efficiency vs fio baseline', True)):
        _, d = simulate(rng, args.trials, args.nights, args.reps, args.cv, args.load_cv, 0.20, eff, opts)
        f_any, f = simulate(rng, args.trials, args.nights, args.reps, args.cv, args.load_cv, 0.0, eff, opts)
        print(f'  {label:27s}: drop flagged {d:6.1%}   false regression alarms {f:6.2%} '
              f'(any flag {f_any:5.2%})')
    nv_det = naive(rng, args.trials, args.cv, args.load_cv, 0.20)
    nv_fa = naive(rng, args.trials, args.cv, args.load_cv, 0)
    print(f'  {"fixed -20 %, single run":27s}: drop caught  {nv_det:6.1%}   false alarms {nv_fa:6.2%}')
    return 0 if goal else 1


if __name__ == '__main__':
    sys.exit(main())
