"""What each level of a results tree could see, night by night: the `detectable` fall of every
judged level (docs/reach.md), summed up over the nights of one or more trees.

A tree is a results directory as ci/nightly.sh leaves it (RESULTS/perflogs, RESULTS/runs), a
site's own or a replay's (bench/real_replay.py: DIR/runN/clean). Every night is judged as
`postprocess detect --all-nights` does, with the flags its re-runs refuted read from RESULTS/runs.
Printed: one Markdown row per level (the I/O stack's factor per phase, each group, the metadata
rates, and the median over the night's bandwidth series), with the nights counted, the median and
the 10-90 % range of its figure.

    python3 -m bench.reach /tmp/r30/run1/clean /tmp/r30/run2/clean --from 6
    python3 -m bench.reach /tmp/r30/run*/hdf5 --from 13 --each 'HDF5 checks, write'
"""
import argparse
import collections
import statistics
import sys
from pathlib import Path

from postprocess.common.findings import group_label
from postprocess.detect.cli import past_unconfirmed
from postprocess.detect.suite import detect
from postprocess.history import inputs
from postprocess.report.reach import level_kind


def level_name(f):
    """The row a finding's figure counts in, or None (fio, contrasts)."""
    kind = level_kind(f)
    if kind == 'stack':
        return f'the I/O stack, {f["phase"]}'
    if kind == 'group':
        return f'{group_label(f)}, {f["phase"]}'
    if kind == 'rates':
        return f'{f["check"].split(" ", 1)[0]} rate, {f["phase"]}'
    return kind


def reach_by_level(tree, system, first):
    """{level: [figure per night]} of one tree, nights from the ``first``-th on (1-based)."""
    ap = argparse.ArgumentParser()
    inputs.add_history_args(ap)
    history = inputs.load_history(ap.parse_args(['--perflogs', str(tree / 'perflogs'),
                                                 '--system', system]))
    findings = detect(history, unconfirmed=past_unconfirmed(str(tree / 'runs')))
    number = {n: i + 1 for i, n in enumerate(sorted({f['night'] for f in findings}))}
    out, series = collections.defaultdict(list), collections.defaultdict(list)
    for f in findings:
        name = level_name(f)
        if name is None or f.get('detectable') is None or number[f['night']] < first:
            continue
        (series[f['night']] if name == 'series' else out[name]).append(f['detectable'])
    out['one bandwidth series (the night\'s median)'] = [statistics.median(v)
                                                        for v in series.values()]
    return out, findings, number


def each(tree, findings, number, first, wanted):
    """One line per night and level whose name holds ``wanted``: its change, figure and status."""
    for f in findings:
        name = level_name(f)
        i = number[f['night']]
        if name and wanted in name and i >= first and f.get('change') is not None:
            seen = 'n/a' if f.get('detectable') is None else f'{f["detectable"]:+.0%}'
            print(f'{tree} night {i:2d} {name}: change {f["change"]:+.0%}, sees {seen}, '
                  f'{f["status"]}')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('trees', nargs='+', type=Path, help='results directories (perflogs/, runs/)')
    ap.add_argument('--system', default='local')
    ap.add_argument('--from', dest='first', type=int, default=6, metavar='N',
                    help='count nights from the Nth on (default 6: a history of five)')
    ap.add_argument('--each', metavar='TEXT',
                    help="also list each night of the levels whose name holds TEXT, with its "
                         "change and status (e.g. 'HDF5 checks, write')")
    args = ap.parse_args()
    for tree in args.trees:
        if not (tree / 'perflogs').is_dir():
            ap.error(f"no perflogs directory in '{tree}'")
    rows = collections.defaultdict(list)
    for tree in args.trees:
        levels, findings, number = reach_by_level(tree, args.system, args.first)
        for name, figures in levels.items():
            rows[name] += figures
        if args.each:
            each(tree, findings, number, args.first, args.each)
    print('| level | nights | median | 10-90 % of nights |\n|---|---|---|---|')
    for name in sorted(rows):
        v = sorted(-x for x in rows[name])
        if v:
            print(f'| {name} | {len(v)} | {statistics.median(v):.0%} | '
                  f'{v[int(0.1 * (len(v) - 1))]:.0%}-{v[int(0.9 * (len(v) - 1))]:.0%} |')
    return 0


if __name__ == '__main__':
    sys.exit(main())
