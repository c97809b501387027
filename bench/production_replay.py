"""The verdict on a year of real nights of production file systems, beside a fixed threshold and
Apache Otava (issue 44; docs/verdicts.md).

    python3 -m bench.production_replay [--data ../shared/data/tokio-abc] [--perflogs DIR]
                                       [--no-baselines] [--set NAME=VALUE ...]

TOKIO-ABC's daily IOR, HACC-IO, VPIC-IO and BD-CATS runs (bench/production_tokio.py) are written
as perflog lines, one series per file system and benchmark, one repetition a night; `--perflogs`
judges any perflog tree instead. Every night of every platform (a system's partition) is judged
by `detect` on the nights before it, as the nightly would: the first stage, no confirmation
re-run (none can be replayed). A change red for 7 nights is accepted from its start, as a site
would (`postprocess accept`), and the nights after it are judged again with that acceptance.
What is scored, and how: bench/production_score.py.
"""
import argparse
import os
import re
import sys
import tempfile
import time
import types

import numpy as np

from bench import production_baselines as baselines
from bench import production_score as score
from bench import production_tokio as tokio

ACCEPT_AFTER = 7
DATA = os.path.join(os.path.dirname(__file__), '..', '..', 'shared', 'data', 'tokio-abc')


def load(perflogs):
    from postprocess.history import inputs
    args = types.SimpleNamespace(perflogs=[perflogs], db=None, system=None, date_from=None,
                                 date_to=None, store=None, this_run=None)
    history = inputs.load_history(args)
    inputs.flush_warnings()
    return history


def _change_id(f):
    return (f['scope'], f['partition'], f['check'], f['params'], f['phase'], f['since'])


def _acceptance(f, at):
    """The record a site would write after 7 red nights of finding f (postprocess/accept/)."""
    if f['scope'] == 'series':
        checks = [f'^{re.escape(f["check"] + " " + f["params"])}$']
    elif f['scope'] == 'group':
        key, _, value = f['params'].partition('=')
        checks = ([f'(^|[ ,]){re.escape(f["params"])}(,|$)'] if key == 'backend'
                  else [f'^{re.escape(value)}( |$)'])
    else:
        checks = []                                 # the whole partition
    return {'action': 'accept', 'id': f'replay{abs(hash(_change_id(f))) % 10 ** 8}',
            'system': f['system'], 'partition': f['partition'], 'checks': checks,
            'since': f['since'], 'at': at, 'reason': 'red 7 nights (replay)'}


def judge_partition(history, system, partition, options):
    """Every night's findings of one platform, acceptances made as a site would."""
    from postprocess.accept.apply import matches
    from postprocess.detect.suite import detect
    acceptances, done, start = [], set(), None
    findings = []
    while True:
        new = [f for f in detect(history, acceptances=acceptances, matches=matches,
                                 nights_from=start, **options)
               if f['system'] == system and f['partition'] == partition]
        findings = [f for f in findings if start is None or f['night'] < start] + new
        nights = sorted({f['night'] for f in findings})
        counts, accepted = {}, None
        for f in sorted((f for f in new if f['status'] == 'regression'), key=lambda f: f['night']):
            cid = _change_id(f)
            if cid in done:
                continue
            counts[cid] = counts.get(cid, 0) + 1
            if counts[cid] >= ACCEPT_AFTER:
                later = [n for n in nights if n > f['night']]
                if later:
                    accepted = (f, later[0])
                break
        if accepted is None:
            return findings
        f, at = accepted
        done.add(_change_id(f))
        acceptances.append(_acceptance(f, at))
        start = at


def platforms(history):
    return sorted({k[:2] for k in history.keys})


def score_ioregress(history, findings_of):
    """{platform: scores} of the verdict's findings."""
    from postprocess.common.findings import group_keys
    from postprocess.detect import levels as levels_mod
    out = {}
    systems = levels_mod.build(history)
    for (system, partition), findings in findings_of.items():
        nights, levels = systems[system]
        series = {}
        for lv in levels:
            if lv.partition == partition:
                series[lv.key] = score.Series(lv.key, [nights[t] for t in lv.t], lv.y)
        by_night = {}
        red = {}
        for f in findings:
            if f['status'] == 'insufficient history':
                continue
            if f['status'] == 'regression':
                red.setdefault(f['night'], set()).add(int(np.datetime64(f['since'], 'D')
                                                          .astype(np.int64)))
            if f['scope'] == 'series':
                key = (f['system'], f['partition'], f['environ'], f['check'], f['params'],
                       f['phase'])
                if key in series:
                    series[key].status[f['night']] = f['status']
                    by_night.setdefault((f['night'], f['phase']), []).append((key, f))
        for f in findings:      # a group's fall shown is its fallen members'
            if f['scope'] == 'series' or f['status'] not in score.FLAG or f['change'] is None:
                continue
            for key, g in by_night.get((f['night'], f['phase']), ()):
                member = (f['scope'] != 'group' or f['params'] in group_keys(key[4], key[3]))
                fell = g.get('change') is not None and g['change'] <= f['change'] / 2
                if member and fell and series[key].status.get(f['night']) not in ('regression',):
                    series[key].status[f['night']] = f['status']
        out[(system, partition)] = score.platform_scores(list(series.values()), red)
    return out


def score_baseline(history, method):
    """{platform: scores} of a baseline verdict (production_baselines.py)."""
    from postprocess.detect import levels as levels_mod
    out, values, meta = {}, {}, {}
    for system, (nights, levels) in levels_mod.build(history).items():
        for lv in levels:
            values[lv.key] = lv.y
            meta[lv.key] = [nights[t] for t in lv.t]
    judged = baselines.judge_all(values, method)
    by_platform = {}
    for key, res in judged.items():
        s = score.Series(key, meta[key], values[key])
        for m, (is_red, since) in res.items():
            s.status[s.nights[m]] = 'regression' if is_red else 'ok'
            if is_red:
                by_platform.setdefault(key[:2], ({}, []))[0].setdefault(s.nights[m], set()).add(
                    (key, since))
        by_platform.setdefault(key[:2], ({}, []))[1].append(s)
    for platform, (red, series) in by_platform.items():
        # a baseline's change is its series' own: no grouping of changes across series
        red_days = {n: {hash(c) for c in cs} for n, cs in red.items()}
        out[platform] = score.platform_scores(series, red_days, group=False)
    return out


def table(name, scores):
    lines = [f'{name}',
             f'  {"platform":22s} {"nights":>6s} {"pages/30":>8s} {"red/30":>6s} '
             f'{"shown/30":>8s} {"degradations":>12s} {"chance n/o":>10s} {"delay":>5s} '
             f'{"red off-dip":>11s} {"steps":>7s}']
    tot = dict(regions=0, caught=0, chance=0.0, chance_onset=0.0, steps=0, steps_red=0)
    for (system, partition), s in sorted(scores.items()):
        j = s['judged']
        delay = f'{np.median(s["delays"]):.0f}' if s['delays'] else '-'
        lines.append(
            f'  {system + ":" + partition:22s} {j:6d} {score.per30(s["pages"], j):8.2f} '
            f'{score.per30(s["red"], j):6.2f} {score.per30(s["flagged"], j):8.2f} '
            f'{s["caught"]:5d} of {s["regions"]:3d} {s["chance"]:4.1f}/{s["chance_onset"]:4.1f} '
            f'{delay:>5s} {s["red_outside"]:11d} {s["steps_red"]:3d}/{s["steps"]:<3d}')
        for k in tot:
            tot[k] += s[k]
    lines.append(f'  all: degradations shown within 7 nights {tot["caught"]} of {tot["regions"]} '
                 f'(by chance {tot["chance"]:.1f} as nights, {tot["chance_onset"]:.1f} as runs); '
                 f'steps red within 3 nights {tot["steps_red"]} of {tot["steps"]}')
    return '\n'.join(lines)


def bounds(history):
    """What any verdict could reach on these series: production_score.run_rule_bound per platform
    (steps within 3 nights cost pages), and a flag on exactly the nights of every sustained
    degradation, known in hindsight (how far above chance such a flag can be)."""
    from postprocess.detect import levels as levels_mod
    by_platform, hindsight = {}, []
    for system, (nights, levels) in levels_mod.build(history).items():
        for lv in levels:
            s = score.Series(lv.key, [nights[t] for t in lv.t], lv.y)
            by_platform.setdefault((system, lv.partition), []).append((s.days, s.values))
            inside = np.zeros(len(s.days), dtype=bool)
            for a, b in score.sma_regions(s.days, s.values)[0]:
                inside |= (s.days >= a) & (s.days <= b)
            s.status = {n: 'degraded' if f else 'ok' for n, f in zip(s.nights, inside)}
            hindsight.append(score.platform_scores([s], {}))
    lines = ['bounds: rules on the last nights alone (a night 30 % below the median of the 14 '
             "before: the steps' own definition); onsets per 30 nights, steps red within 3 nights"]
    for nights, need in ((1, 1), (2, 2), (3, 2), (3, 3)):
        res = [score.run_rule_bound(s, nights=nights, need=need)
               for _, s in sorted(by_platform.items())]
        lines.append(f'  {need} of the last {nights}: onsets/30 '
                     f'{min(r[0] for r in res):.2f}-{max(r[0] for r in res):.2f}, steps '
                     f'{sum(r[1] for r in res)} of {sum(r[2] for r in res)}')
    caught, regions = sum(h['caught'] for h in hindsight), sum(h['regions'] for h in hindsight)
    chance = sum(h['chance'] for h in hindsight)
    lines.append(f'  degradations, flagged on exactly their nights (hindsight): {caught} of '
                 f'{regions}, by chance {chance:.1f} as nights ({caught / max(chance, 1e-9):.1f}x)')
    return '\n'.join(lines)


def main(argv=None):
    from postprocess.detect.cli import settings
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--data', default=DATA, help='the TOKIO-ABC directory (default: %(default)s)')
    p.add_argument('--perflogs', help='judge this perflog tree instead of TOKIO-ABC')
    p.add_argument('--no-baselines', action='store_true', help='only the verdict')
    p.add_argument('--bounds', action='store_true',
                   help='also what rules on the last 1-3 nights alone could reach on steps')
    p.add_argument('--set', action='append', default=[], metavar='NAME=VALUE',
                   help='a detection setting (postprocess/detect/options.py)')
    args = p.parse_args(argv)
    options = settings(args)
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        perflogs = args.perflogs
        if not perflogs:
            perflogs, n = tokio.write_perflogs(args.data, tmp)
            print(f'TOKIO-ABC: {n} perflog lines ({time.time() - t0:.0f} s)')
        history = load(perflogs)
        findings = {}
        for system, partition in platforms(history):
            # ReFrame's layout, perflogs/<system>/<partition>/: each platform judged on its own
            own = os.path.join(perflogs, system, partition)
            part = load(own) if os.path.isdir(own) else history
            findings[(system, partition)] = judge_partition(part, system, partition, options)
        print(table('ioregress (first stage)', score_ioregress(history, findings)))
        print(f'  ({time.time() - t0:.0f} s)')
        if not args.no_baselines:
            print(table('fixed threshold (-20 % vs the median of 14 nights)',
                        score_baseline(history, baselines.fixed)))
            print(table('Apache Otava (E-divisive, p 0.001, defaults)',
                        score_baseline(history, baselines.otava)))
        if args.bounds:
            print(bounds(history))
    print(f'{time.time() - t0:.0f} s in all')
    return 0


if __name__ == '__main__':
    sys.exit(main())
