"""Suite replay of the nightly verdict (issue 11): simulated suites written as real ReFrame perflogs
and judged by the real CLI, night by night, with the confirmation re-run of the flags.

Each trial: 200 checks x write/read + the fio baseline (401 x 2 series), 13 nights; 10 checks lose
20 % of write bandwidth from night 11; nights 11-13 are judged exactly as ci/nightly.sh does:

    python -m postprocess detect --perflogs DIR --system sim --all-nights --json all.json
      (detect is causal: its night N is what `detect --to N`, the nightly of night N, reports)
    python -m postprocess verdict --detect detect.json --report report.json --json v.json --rerun-list L
    (flags) a fresh draw of the flagged checks, 10 repetitions, same night state -> confirm/ perflogs
    python -m postprocess verdict ... --confirm-perflogs confirm/ --perflogs DIR --system sim

(``--to NIGHT`` gives the confirmation the history as it stood that night.)

Scenarios (lognormal noise, CV of the repetitions):
  a  independent noise CV 15 %, 10 repetitions
  b  a night factor shared by all series and fio (CV 15 %), within-night CV 10 %, 10 repetitions
  c  the quick suite: 5 repetitions, CV 15 %
  d  as a, and the whole partition and fio -20 % from night 11 (writes and reads)
  e  heavy tails: as a, and a neighbour's burst: 2 % of repetitions x U(0.3, 0.7), and 0.5 % of
     series-nights a whole night x 0.6 (gone at the re-run)
  f  states: as a, and an OST rebuild: a third of nights (nights 1-13, at random) every series and
     fio x 0.75, still on at the re-run
  g  real nights: within CV 5 %, each series drifting (random walk, 2 % a night), half of them
     with a night-to-night spread of 8 % of their own, night 1 a first run (everything x 1.6)
  h  the I/O stack: as a, and every check but fio -20 % (write and read) from night 11: one
     `stack` finding, not one per series
  i  a first week that settles: as a, and every check but fio -15 % from night 4 (write and
     read; run 13.2's read level after three first nights): never a `stack` finding on 11-13

Printed per scenario: judged nights with any false series regression (before / after confirmation),
nights with a `system` finding where nothing moved, the share of the 10 drops flagged on night 11,
within two and within three nights, how often `since` names night 11, and (d) the nights reported
as one `system` write finding. Goals: docs/verdicts.md.

Usage: python3 -m bench.detection [--trials 30] [--scenarios abcdefghi] [--seed 1] [--jobs 2]
(about 10 s per trial and scenario on one core)
"""
import argparse
import concurrent.futures
import datetime
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
FIXED = ['job_completion_time', 'reframe version', 'name', 'system', 'partition', 'environ',
         'iob_params', 'jobid', 'result', 'iob_reps', 'iob_provenance']
NIGHTS, JUDGED, DROP_NIGHT, N_CHECKS, N_DROPS, BYTES = 13, (11, 12, 13), 11, 200, 10, 16777216
FIO = 'BaselineFio'
SCENARIOS = {
    'a': dict(cv=0.15, reps=10),
    'b': dict(cv=0.10, reps=10, night_cv=0.15),
    'c': dict(cv=0.15, reps=5),
    'd': dict(cv=0.15, reps=10, partition_drop=0.20),
    'e': dict(cv=0.15, reps=10, rep_burst=0.02, night_burst=0.005),
    'f': dict(cv=0.15, reps=10, state_share=1 / 3, state_factor=0.75),
    # real nights (issue 18): each series drifts (random walk) and has a night-to-night spread of
    # its own larger than the repetitions' (half of the series), night 1 is a first run after a
    # boot (everything 1.6x faster)
    'g': dict(cv=0.05, reps=10, drift=0.02, night_tau=0.08, first_run=1.6),
    # a change of the I/O stack, not the filesystem: every check -20 %, fio steady, from night 11
    'h': dict(cv=0.15, reps=10, stack_drop=0.20),
    # the machine settles in the first week: every check -15 % from night 4 and for good
    'i': dict(cv=0.15, reps=10, settle_drop=0.15, settle_night=4),
}
HEADER = '|'.join(FIXED + ['write_bw_var=write_bw_value|write_bw_unit|write_bw_ref|'
                           'write_bw_lower_thres|write_bw_upper_thres'])


def lognormal(rng, cv, size):
    return np.exp(rng.normal(0.0, math.sqrt(math.log1p(cv * cv)), size))


def night_date(n):
    return (datetime.date(2026, 1, 1) + datetime.timedelta(days=n - 1)).isoformat()


class Suite:
    """The true state of one simulated suite: per check medians, drops, night factors."""

    def __init__(self, rng, sc):
        self.rng, self.sc = rng, sc
        self.names = [FIO] + [f'Sim %id={i:03d}' for i in range(N_CHECKS)]
        self.params = ['backend=fio,bs=1M,mode=seq,pattern=fio,ranks=1,size=64MiB,stripe=default'] + \
            [f'backend=posix,mode=fpp,pattern=benchio,ranks=2,size={64 + i},stripe=default'
             for i in range(N_CHECKS)]
        self.median = {p: np.exp(rng.uniform(np.log(100), np.log(3000), len(self.names)))
                       for p in ('write', 'read')}
        self.dropped = set(rng.choice(np.arange(1, len(self.names)), N_DROPS, replace=False))
        self.factor = (lognormal(rng, sc['night_cv'], NIGHTS + 1) if sc.get('night_cv')
                       else np.ones(NIGHTS + 1))
        if sc.get('state_share'):
            self.factor *= np.where(rng.random(NIGHTS + 1) < sc['state_share'],
                                    sc['state_factor'], 1.0)
        if sc.get('partition_drop'):
            self.factor[DROP_NIGHT:] *= 1.0 - sc['partition_drop']
        if sc.get('first_run'):
            self.factor[1] *= sc['first_run']
        n = len(self.names)
        # per series and night: a drift (random walk) and a night-to-night spread of its own
        walk = np.cumsum(rng.normal(0.0, sc.get('drift', 0.0), (n, NIGHTS + 1)), axis=1)
        tau = np.where(rng.random(n) < 0.5, sc.get('night_tau', 0.0), 0.0)
        self.series_night = {p: np.exp(walk + rng.normal(0.0, 1.0, (n, NIGHTS + 1)) * tau[:, None])
                             for p in ('write', 'read')}

    def draw(self, night, check, phase, reps, burst=True):
        sc, rng = self.sc, self.rng
        v = (self.median[phase][check] * self.factor[night] * self.series_night[phase][check, night]
             * lognormal(rng, sc['cv'], reps))
        if sc.get('stack_drop') and check != 0 and night >= DROP_NIGHT:
            v *= 1.0 - sc['stack_drop']
        if sc.get('settle_drop') and check != 0 and night >= sc['settle_night']:
            v *= 1.0 - sc['settle_drop']
        if phase == 'write' and check in self.dropped and night >= DROP_NIGHT:
            v *= 0.8
        if burst and sc.get('rep_burst'):
            hit = rng.random(reps) < sc['rep_burst']
            v[hit] *= rng.uniform(0.3, 0.7, hit.sum())
        if burst and sc.get('night_burst') and rng.random() < sc['night_burst']:
            v *= 0.6
        return v

    def lines(self, night, checks, reps, stamp_offset=0):
        when = datetime.datetime.fromisoformat(night_date(night) + 'T02:00:00+00:00')
        out = []
        for j, i in enumerate(checks):
            vals = {p: self.draw(night, i, p, reps, burst=stamp_offset == 0)
                    for p in ('write', 'read')}
            rep_text = ';'.join(f'{p}=' + ','.join(f'{BYTES}:{float(BYTES / (bw * 2 ** 20))!r}' for bw in v)
                                for p, v in vals.items())
            t = when + datetime.timedelta(seconds=stamp_offset + 5 * j)
            out.append('|'.join([t.strftime('%Y-%m-%dT%H:%M:%S+0000'), 'reframe 4.10.4',
                                 self.names[i], 'sim', 'default', 'gnu', self.params[i],
                                 str(1000 + j), 'pass', rep_text, '{}',
                                 f'write_bw={float(np.median(vals["write"]))}', 'MiB/s', '0',
                                 'None', 'None']))
        return out


def cli(*args):
    proc = subprocess.run([sys.executable, '-m', 'postprocess', *args], cwd=REPO,
                          capture_output=True, text=True)
    # detect: 1 = regressions found; verdict: 3 = red night; anything on stderr else is a fault
    if proc.returncode not in (0, 1, 3) or 'error' in proc.stderr:
        raise RuntimeError(f'{args[0]} failed ({proc.returncode}): {proc.stderr[-500:]}')
    return proc


def report_json(suite, path):
    cases = [{'system': 'sim', 'partition': 'default', 'environ': 'gnu', 'display_name': n,
              'name': n, 'result': 'pass', 'hashcode': f'{i:08x}'}
             for i, n in enumerate(suite.names)]
    with open(path, 'w') as fp:
        json.dump({'runs': [{'testcases': cases}]}, fp)


def trial(args):
    """One suite, nights 11-13 judged: a dict of counts."""
    key, seed, reps_confirm = args
    sc = SCENARIOS[key]
    rng = np.random.default_rng(seed)
    suite = Suite(rng, sc)
    out = {'false_nights': 0, 'false_nights_confirmed': 0, 'system_false': 0, 'system_hit': 0,
           'series_regressions_d': 0, 'caught': {}, 'caught_before': {}, 'since_right': 0,
           'since_total': 0}
    with tempfile.TemporaryDirectory(prefix='ioregress-replay-') as tmp:
        logdir = os.path.join(tmp, 'perflogs', 'sim', 'default')
        os.makedirs(logdir)
        with open(os.path.join(logdir, 'Sim.log'), 'w') as fp:
            fp.write(HEADER + '\n')
            for night in range(1, NIGHTS + 1):
                fp.write('\n'.join(suite.lines(night, range(len(suite.names)), sc['reps'])) + '\n')
        report = os.path.join(tmp, 'report.json')
        report_json(suite, report)
        every = os.path.join(tmp, 'all.json')
        cli('detect', '--perflogs', os.path.join(tmp, 'perflogs'), '--system', 'sim',
            '--all-nights', '--json', every)
        findings = json.load(open(every))
        for night in JUDGED:
            det, ver = os.path.join(tmp, f'd{night}.json'), os.path.join(tmp, f'v{night}.json')
            rerun = os.path.join(tmp, f'r{night}.txt')
            # detect is causal (tests/test_verdicts.py): night N of --all-nights is what
            # `detect --to N` (the nightly of night N) reports
            with open(det, 'w') as fp:
                json.dump([f for f in findings if f['night'] <= night_date(night)], fp)
            v = cli('verdict', '--detect', det, '--report', report, '--json', ver,
                    '--rerun-list', rerun)
            doc = json.load(open(ver))
            before = doc['findings']
            if v.returncode == 3:
                chosen = [int(line.strip()[1:], 16) for line in open(rerun) if line.strip()]
                cdir = os.path.join(tmp, f'confirm{night}', 'sim', 'default')
                os.makedirs(cdir)
                with open(os.path.join(cdir, 'Sim.log'), 'w') as fp:
                    fp.write(HEADER + '\n' + '\n'.join(
                        suite.lines(night, chosen, reps_confirm, stamp_offset=7200)) + '\n')
                cli('verdict', '--detect', det, '--report', report, '--json', ver,
                    '--confirm-perflogs', os.path.join(tmp, f'confirm{night}'),
                    '--perflogs', os.path.join(tmp, 'perflogs'), '--system', 'sim',
                    '--to', night_date(night))
                doc = json.load(open(ver))
            _score(suite, night, key, before, doc['findings'], out)
    return key, out


def _score(suite, night, key, before, after, out):
    index = {(n, p): i for i, (n, p) in enumerate(zip(suite.names, suite.params))}

    def false_series(findings):
        bad = []
        for f in findings:
            if f['scope'] != 'series' or f['status'] != 'regression':
                continue
            if f['check'] == FIO and key in ('d', 'f'):
                continue    # fio is judged on its own level: where it moved, its flag is right
            i = index[(f['check'], f['params'])]
            if not (f['phase'] == 'write' and i in suite.dropped and night >= DROP_NIGHT):
                bad.append(f)
        return bad
    out['false_nights'] += bool(false_series(before))
    out['false_nights_confirmed'] += bool(false_series(after))
    systems = [f for f in after if f['scope'] in ('system', 'stack')
               and f['status'] in ('regression', 'improvement')]
    moved = key in ('d', 'h') and night >= DROP_NIGHT
    if moved:
        right = 'system' if key == 'd' else 'stack'
        out['system_hit'] += any(f['phase'] == 'write' and f['status'] == 'regression'
                                 and f['scope'] == right for f in systems)
        out['series_regressions_d'] += sum(f['scope'] == 'series' and f['status'] == 'regression'
                                           for f in after)
    elif key != 'f':
        out['system_false'] += bool(systems)
    else:
        out['system_false'] += bool(systems)     # f: the rebuild nights (reported, see docs)
    for f in before:
        if f['scope'] == 'series' and f['status'] == 'regression' and f['phase'] == 'write':
            i = index[(f['check'], f['params'])]
            if i in suite.dropped:
                out['caught_before'].setdefault(int(i), night)
    for f in after:
        if f['scope'] == 'series' and f['status'] == 'regression' and f['phase'] == 'write':
            i = index[(f['check'], f['params'])]
            if i in suite.dropped:
                out['caught'].setdefault(int(i), night)
                if night == min(out['caught'][int(i)], night) and f.get('since'):
                    out['since_total'] += 1
                    out['since_right'] += f['since'] == night_date(DROP_NIGHT)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--trials', type=int, default=30)
    ap.add_argument('--scenarios', default='abcdefghi')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--confirm-reps', type=int, default=10)
    args = ap.parse_args()
    bad = set(args.scenarios) - set(SCENARIOS)
    if bad or args.trials < 1:
        print(f'detection.py: error: unknown scenario(s) {sorted(bad)} or --trials < 1',
              file=sys.stderr)
        return 2
    work = [(k, args.seed * 100003 + 7919 * t + ord(k), args.confirm_reps)
            for k in args.scenarios for t in range(args.trials)]
    totals = {k: [] for k in args.scenarios}
    with concurrent.futures.ProcessPoolExecutor(args.jobs) as pool:
        for key, out in pool.map(trial, work):
            totals[key].append(out)
    nj = len(JUDGED)
    print(f'suite replay: {N_CHECKS} checks x write/read + fio, {NIGHTS} nights, {N_DROPS} checks '
          f'-20 % write from night {DROP_NIGHT}, nights {JUDGED[0]}-{JUDGED[-1]} judged; '
          f'{args.trials} trials per scenario (seed {args.seed})')
    for key in args.scenarios:
        res = totals[key]
        nights = len(res) * nj
        fn = sum(r['false_nights'] for r in res)
        fc = sum(r['false_nights_confirmed'] for r in res)
        sysf = sum(r['system_false'] for r in res)
        drops = len(res) * N_DROPS
        by, by0 = ([sum(sum(1 for n in r[c].values() if n <= JUDGED[0] + d) for r in res) / drops
                    for d in range(nj)] for c in ('caught', 'caught_before'))
        since = sum(r['since_right'] for r in res), sum(r['since_total'] for r in res)
        line = (f'({key}) {SCENARIOS[key]}\n    nights with a false series regression: '
                f'{fn}/{nights} before confirmation, {fc}/{nights} after;  '
                f'system findings where nothing moved: {sysf}/{nights}\n'
                f'    drops flagged: night 1 {by[0]:.0%}, within two {by[1]:.0%}, within three '
                f'{by[2]:.0%} (before confirmation {by0[0]:.0%}, {by0[1]:.0%}, {by0[2]:.0%});'
                f'  since = night {DROP_NIGHT}: {since[0]}/{since[1]}')
        if key in ('d', 'h'):
            hit = sum(r['system_hit'] for r in res)
            sr = sum(r['series_regressions_d'] for r in res)
            scope = 'system' if key == 'd' else 'stack'
            line += (f'\n    one {scope} write finding on {hit}/{nights} nights '
                     f'({hit / nights:.0%}); series regressions on those nights: {sr}')
        if key == 'f':
            line += '  (f: system findings here are the rebuild nights, see docs/verdicts.md)'
        print(line, flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
