"""What two slowed nights can show: the power of the stack-factor test against a machine whose
level wanders, as a model (not the detector), to read real replays by (docs/verdicts.md).

Model: the checks' common write level wanders N(0, s) from night to night (s is measured on a
replay's clean nights: `python3 -m bench.real_replay --effects DIR/runN`); 12 clean nights of history;
a fault of -19 % (tests/support/iofault.c's write fault on POSIX, MPI-IO and HDF5 phases, measured by
tests/test_iofault.py) on nights 13 and 14. Night 13 is tested alone, night 14 pooled with 13, by
a one-sided t on the history's mean and spread at Holm's first step of ``alpha_system`` over the
write and read factors; a flag is red when an independent re-run of the same size, sharing a part
rho of that night's state, passes at ``alpha_confirm``. Printed: the chance that both slowed
nights are red in both runs of a pair, and the factor's false red nights per run (9 clean nights
x 2 factors). The detector's own test adds a floor and robust levels, so it is at most this strong.

    python3 -m bench.factor_power [--wander 0.05,0.06,0.07,0.08] [--trials 200000]
"""
import argparse

import numpy as np
from scipy import stats

FAULT, HISTORY, CLEAN_TESTS = np.log(0.81), 12, 18


def power(rng, s, rho, alpha_system, alpha_confirm, trials):
    hist = rng.normal(0, s, (trials, HISTORY))
    level, sd = hist.mean(axis=1), hist.std(axis=1, ddof=1)
    cut, cut_confirm = (stats.t.ppf(alpha_system / 2, HISTORY - 1),
                        stats.t.ppf(alpha_confirm, HISTORY - 1))
    one = sd * np.sqrt(1 + 1 / HISTORY)

    def rerun(night, mean):
        return mean + rho * (night - mean) + np.sqrt(1 - rho ** 2) * rng.normal(0, s, trials)

    n13, n14 = rng.normal(FAULT, s, trials), rng.normal(FAULT, s, trials)
    red13 = ((n13 - level) / one < cut) & ((rerun(n13, FAULT) - level) / one < cut_confirm)
    pooled = ((n13 + n14) / 2 - level) / (sd * np.sqrt(0.5 + 1 / HISTORY))
    red14 = (pooled < cut) & ((rerun(n14, FAULT) - level) / one < cut_confirm)
    clean = rng.normal(0, s, trials)
    false = ((clean - level) / one < cut) & ((rerun(clean, 0.0) - level) / one < cut_confirm)
    return float((red13 & red14).mean()) ** 2, CLEAN_TESTS * float(false.mean())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--wander', default='0.05,0.06,0.07,0.08',
                    help='night-to-night SDs of the common level (fractions), comma-separated')
    ap.add_argument('--trials', type=int, default=200000)
    ap.add_argument('--seed', type=int, default=1)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    print('| wander | alpha_system / alpha_confirm | rho | both slowed nights red in both runs '
          '| false red factor nights per run |')
    print('|---|---|---|---|---|')
    for s in (float(x) for x in a.wander.split(',')):
        for alphas in ((0.02, 0.02), (0.05, 0.02), (0.05, 0.05), (0.1, 0.1)):
            for rho in (0.0, 0.5):
                pair, false = power(rng, s, rho, *alphas, a.trials)
                print(f'| {s:.0%} | {alphas[0]} / {alphas[1]} | {rho} | {pair:.0%} | {false:.2f} |')


if __name__ == '__main__':
    main()
