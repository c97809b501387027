"""The verdict on a year of real nights of production file systems, beside a fixed threshold and
Apache Otava (issue 44; docs/verdicts.md).

    python3 -m bench.production_replay [--data ../shared/data/tokio-abc] [--perflogs DIR]
                                       [--no-baselines] [--bounds] [--png FILE]
                                       [--set NAME=VALUE ...]

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

import numpy as np

from bench import production_baselines as baselines
from bench import production_score as score
from bench import production_tokio as tokio

ACCEPT_AFTER = 7
DATA = os.path.join(os.path.dirname(__file__), '..', '..', 'shared', 'data', 'tokio-abc')


def load(perflogs):
    from postprocess.history import inputs
    from postprocess.history.query import HistoryQuery
    history, warnings = inputs.load_history(HistoryQuery(perflogs=(perflogs,)))
    for line in warnings:
        print(line, file=sys.stderr)
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


def judge_partition(history, system, partition, options, accepted=None):
    """Every night's findings of one platform, acceptances made as a site would (appended to
    ``accepted`` when given)."""
    from postprocess.detect.judging import judge
    made = accepted
    acceptances, done, start = [], set(), None
    findings = []
    while True:
        new = [f for f in judge(history, acceptances, settings=options, nights_from=start).findings
               if f['system'] == system and f['partition'] == partition]
        findings = [f for f in findings if start is None or f['night'] < start] + new
        nights = sorted({f['night'] for f in findings})
        # red nights of a change count from its first, also those judged before the last restart
        # (a site accepts every change red for 7 nights, not one and then 7 more nights of others)
        counts, accepted = {}, None
        for f in sorted((f for f in findings if f['status'] == 'regression'),
                        key=lambda f: f['night']):
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
            if made is not None:
                made.extend(acceptances)
            return findings
        f, at = accepted
        done.add(_change_id(f))
        acceptances.append(_acceptance(f, at))
        start = at


def platforms(history):
    return sorted({k[:2] for k in history.keys})


def score_ioregress(history, findings_of, accepted_of=None):
    """{platform: scores} of the verdict's findings (``accepted_of``: {platform: acceptances})."""
    from postprocess.accept.apply import matches
    from postprocess.common.findings import group_keys
    from postprocess.detect import levels as levels_mod
    out = {}
    systems = levels_mod.build(history)
    for (system, partition), findings in findings_of.items():
        nights, levels = systems[system]
        series = {}
        for lv in levels:
            if lv.partition == partition:
                s = series[lv.key] = score.Series(lv.key, [nights[t] for t in lv.t], lv.y)
                s.accepted = sorted(a['at'] for a in (accepted_of or {}).get((system, partition), ())
                                    if matches(a, system, partition, lv.key[3], lv.key[4]))
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


def roc_point(scores):
    """{platform or 'all': (share of degradations shown within 7 nights, share of the series-nights
    outside every degradation shown)} (shown: red or degraded)."""
    out, tot = {}, [0, 0, 0, 0]
    for platform, s in sorted(scores.items()):
        parts = (s['caught'], s['regions'], s['outside_shown'], s['outside'])
        out[platform] = (parts[0] / max(parts[1], 1), parts[2] / max(parts[3], 1))
        tot = [t + p for t, p in zip(tot, parts)]
    out['all'] = (tot[0] / max(tot[1], 1), tot[2] / max(tot[3], 1))
    return out


def roc_table(points):
    """points: {method: roc_point}."""
    platforms = [p for p in next(iter(points.values())) if p != 'all'] + ['all']
    head = ''.join(f'{(p if p == "all" else p[1]):>18s}' for p in platforms)
    lines = ['degradations shown within 7 nights / other series-nights shown',
             f'  {"":34s}{head}']
    for method, pts in points.items():
        lines.append(f'  {method:34s}' + ''.join(
            f'{100 * pts[p][0]:8.0f}% /{100 * pts[p][1]:5.1f}%' for p in platforms))
    return '\n'.join(lines)


def roc_png(points, path):
    """The methods' pooled points (and per platform, small) in one figure."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=100)
    for i, (method, pts) in enumerate(points.items()):
        colour = f'C{i}'
        for platform, (tpr, fpr) in pts.items():
            if platform != 'all':
                ax.plot(100 * fpr, 100 * tpr, 'o', color=colour, alpha=0.35, ms=4)
        tpr, fpr = pts['all']
        ax.plot(100 * fpr, 100 * tpr, 'o', color=colour, ms=9, label=method)
    ax.axhline(80, color='grey', lw=0.6, ls=':')
    ax.axvline(3, color='grey', lw=0.6, ls=':')
    ax.set_xscale('symlog', linthresh=1)
    ax.set_xlabel('series-nights outside every degradation shown (%)')
    ax.set_ylabel('degradations shown within 7 nights (%)')
    ax.set_ylim(0, 105)
    ax.legend(fontsize=7, loc='lower right')
    ax.set_title('TOKIO-ABC, four file systems (large: pooled)', fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def step_list(scores):
    """Every step of the bench (production_score.steps) with the verdict's statuses on its ten
    nights, and the nights inside lasting steps shown ``ok`` after their third low night."""
    lines = ['steps (R red, d degraded, n noisy, o ok, i insufficient history, . not judged); '
             'lasting: * (red by its third low night: yes/LATE)']
    ok, nights, lasting, in_time = 0, 0, 0, 0
    for (system, partition), s in sorted(scores.items()):
        for row in s['step_rows']:
            check = row['key'][4].split(',')[1].split('=')[1] if ',' in row['key'][4] else row['key'][3]
            mark = ''
            if row['lasting']:
                lasting += 1
                in_time += row['red_by_third']
                ok += row['ok_after']
                nights += row['nights_after']
                mark = (' * yes' if row['red_by_third'] else ' * LATE') + \
                    f', ok after: {row["ok_after"]} of {row["nights_after"]}'
            lines.append(f'  {system}:{partition:9s} {check:26s} {row["onset"]} '
                         f'{100 * row["size"]:+4.0f}%  {row["statuses"]:10s}{mark}')
    lines.append(f'  lasting steps red by their third low night: {in_time} of {lasting}; their nights '
                 f'shown ok after it (until accepted): {ok} of {nights}')
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
    from postprocess.detect.options import parse
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--data', default=DATA, help='the TOKIO-ABC directory (default: %(default)s)')
    p.add_argument('--perflogs', help='judge this perflog tree instead of TOKIO-ABC')
    p.add_argument('--no-baselines', action='store_true', help='only the verdict')
    p.add_argument('--bounds', action='store_true',
                   help='also what rules on the last 1-3 nights alone could reach on steps')
    p.add_argument('--png', metavar='FILE',
                   help='draw every method\'s degradation point in one figure (with baselines)')
    p.add_argument('--set', action='append', default=[], metavar='NAME=VALUE',
                   help='a detection setting (postprocess/detect/options.py)')
    args = p.parse_args(argv)
    options = parse(args.set)
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        perflogs = args.perflogs
        if not perflogs:
            perflogs, n = tokio.write_perflogs(args.data, tmp)
            print(f'TOKIO-ABC: {n} perflog lines ({time.time() - t0:.0f} s)')
        history = load(perflogs)
        findings, accepted = {}, {}
        for system, partition in platforms(history):
            # ReFrame's layout, perflogs/<system>/<partition>/: each platform judged on its own
            own = os.path.join(perflogs, system, partition)
            part = load(own) if os.path.isdir(own) else history
            accepted[(system, partition)] = []
            findings[(system, partition)] = judge_partition(part, system, partition, options,
                                                            accepted[(system, partition)])
        ours = score_ioregress(history, findings, accepted)
        print(table('ioregress (first stage)', ours))
        print(f'  ({time.time() - t0:.0f} s)')
        print(step_list(ours))
        points = {'ioregress': roc_point(ours)}
        if not args.no_baselines:
            for name, method in (('fixed threshold (-20 % vs the median of 14 nights)',
                                  baselines.fixed),
                                 ('Apache Otava (E-divisive, p 0.001, defaults)', baselines.otava),
                                 ('3 of the last 3 nights 30 % low', baselines.three_of_three),
                                 ('2 of the last 2 nights 30 % low', baselines.two_of_two)):
                theirs = score_baseline(history, method)
                print(table(name, theirs))
                points[name.split(' (')[0]] = roc_point(theirs)
        print(roc_table(points))
        if args.png:
            roc_png(points, args.png)
            print(f'figure: {args.png}')
        if args.bounds:
            print(bounds(history))
    print(f'{time.time() - t0:.0f} s in all')
    return 0


if __name__ == '__main__':
    sys.exit(main())
