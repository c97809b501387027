"""``gate --plan`` and the first lines of every gate: how many pairs each check needs to tell the
effect, and about how long that takes, before the window is spent.

The spread of a check and phase (sd of its log pair ratios, 1.4826 x MAD) comes from, in order:
  1. earlier gates of this system with the same selection (<results>/gates/*/gate.json): the
     median of their spreads, and the median seconds of their slots;
  2. the nightlies in the results store (<results>/store, history/store.py): consecutive runs of
     one check, environment and phase taken as pairs (drift between nights included, so this
     overstates a gate's spread rather than understates it);
  3. a pilot (``--plan`` only): ``--pilot`` pairs of A and B run now.
From a spread the sequential rule's own arithmetic (sequential.plan: the chance a pair falls
below the boundary at a change of -effect, and the exact chance its count has crossed by n pairs)
gives the pairs by which a change of -effect is called slower 9 times in 10.
"""
import glob
import json
import math
import os
import re
import statistics

from gate import pairs as stats
from gate import sequential

#: the cap of --pairs auto when nothing is known of the spread (about 20 min a check here)
DEFAULT_CAP = 40
#: the cap never goes below this (the sequence's first decision needs 7 pairs at 90 %) nor above
CAP_RANGE = (12, 400)


def from_gates(results_dir, system, select):
    """({(check, phase): [spread per earlier gate]}, [slot seconds]) of earlier gates."""
    spreads, seconds = {}, []
    for path in sorted(glob.glob(os.path.join(results_dir, 'gates', '*', 'gate.json'))):
        try:
            with open(path) as fp:
                doc = json.load(fp)
        except (OSError, ValueError):
            continue
        if doc.get('system') != system or doc.get('select') != select:
            continue
        for r in doc.get('results') or []:
            ratios = [x / a for a, x in r.get('pairs') or [] if a > 0 and x > 0]
            sd = stats.log_spread(ratios) if len(ratios) >= 3 else None
            if sd:
                spreads.setdefault((r['check'], r['phase']), []).append(sd)
        seconds += [s['seconds'] for s in doc.get('slots') or [] if s.get('label') != 'warm-up']
    return spreads, seconds


def from_store(results_dir, system, names):
    """{(check, phase): spread} from the store's nightlies of checks a --name regex matches."""
    from postprocess.history import engine, store
    files = store.files(os.path.join(results_dir, 'store'))
    if not files or not names:
        return {}
    con = engine.connect()
    rows = con.execute(
        f'SELECT "check" || \' @\' || system || \':\' || partition, environ, phase, testcase, '
        f'epoch(min(time)) AS t, median(bw_MiBps) AS bw FROM {store.scan_sql(files)} '
        f'WHERE system = ? AND phase IS NOT NULL AND bw_MiBps > 0 GROUP BY ALL ORDER BY t',
        [system.split(':')[0]]).fetchall()
    series = {}
    for check, environ, phase, _, _, bw in rows:
        name = check.split(' @')[0]
        if any(re.search(n, name) or re.search(n, name.replace(' ', '')) for n in names):
            series.setdefault((check, environ, phase), []).append(math.log(bw))
    out = {}
    for (check, _, phase), logs in series.items():
        diffs = [b - a for a, b in zip(logs, logs[1:])]
        if len(diffs) >= 3:
            mid = statistics.median(diffs)
            out.setdefault((check, phase), []).append(
                stats.MAD_NORMAL * statistics.median(abs(d - mid) for d in diffs))
    return out


def known(results_dir, system, select, names):
    """{(check, phase): (spread, where from)} and the median slot seconds (None if unknown)."""
    gates, seconds = from_gates(results_dir, system, select)
    out = {k: (statistics.median(v), f'{len(v)} earlier gate(s)') for k, v in gates.items()}
    try:
        nights = from_store(results_dir, system, names)
    except Exception as err:        # a store this code cannot read is no plan, not a crash
        nights = {}
        out[('-', '-')] = (None, f'results store unreadable: {err}')
    for k, v in nights.items():
        out.setdefault(k, (statistics.median(v), 'nightlies in the results store'))
    return out, (statistics.median(seconds) if seconds else None)


def from_pilot(results):
    """{(check, phase): (spread, 'pilot of n pairs')} of a pilot's judged results: the larger of
    the robust and the plain sd of the log ratios (the MAD of a few pairs can be near zero by
    chance, when three of them happen to agree)."""
    out = {}
    for r in results:
        ratios = [x / a for a, x in r.get('pairs') or [] if a > 0 and x > 0]
        sd = max(stats.log_spread(ratios), statistics.stdev(math.log(x) for x in ratios)) \
            if len(ratios) >= 3 else None
        if sd:
            out[(r['check'], r['phase'])] = (sd, f'pilot of {len(ratios)} pairs')
    return out


def rows(spreads, tolerance, effect, level):
    """One plan per check and phase: spread, where from, pairs (9 in 10), mean pairs, same."""
    out = []
    for (check, phase), (sd, where) in sorted(spreads.items()):
        if sd is None:
            continue
        p = sequential.plan(sd, tolerance, effect, level)
        out.append({'check': check, 'phase': phase, 'sd': sd, 'from': where, **p})
    return out


def cap(plans, given=None):
    """Pairs --pairs auto runs at most: --max-pairs if given, else the plan's cap of its hardest
    check and phase (where 39 gates in 40 at -effect have said slower), else DEFAULT_CAP."""
    if given:
        return given
    need = [p['cap'] or CAP_RANGE[1] for p in plans]
    return min(max(max(need), CAP_RANGE[0]), CAP_RANGE[1]) if need else DEFAULT_CAP


def lines(plans, tolerance, effect, level, seconds, slots_per_pair=2):
    out = [f'plan: pairs to call a -{effect:.0%} change slower 9 times in 10 (tolerance '
           f'{tolerance:g}, level {level:.0%}; sequential rule, docs/gate.md)']
    if not plans:
        return out + ['plan: no spread known for these checks (no earlier gate of this '
                      'selection, no nightly in the results store): --plan runs a pilot']
    for p in plans:
        pairs = p['pairs'] or '>400'
        took = ''
        if seconds and p['pairs']:
            took = f', about {_minutes(p["pairs"] * slots_per_pair * seconds)} at most, ' \
                   f'{_minutes(p["mean"] * slots_per_pair * seconds)} on average'
        out.append(f'plan: {p["check"]} {p["phase"]}: sd {p["sd"]:.3f} ({p["from"]}): '
                   f'{pairs} pairs (mean {p["mean"]:.0f}, 39 in 40 by {p["cap"] or ">400"}), '
                   f'"same" by {p["same_pairs"] or ">400"}{took}')
    return out


def _minutes(secs):
    return f'{secs / 60:.0f} min' if secs >= 90 else f'{secs:.0f} s'
