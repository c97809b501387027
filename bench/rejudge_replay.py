"""Judge the saved nights of a real replay (bench/real_replay.py --out DIR) again, with detect's
options changed: what a setting would have flagged on real nights, without 90 minutes of new ones.

For each scenario tree of each run (DIR/runN/<scenario>/perflogs) it judges every night as
`postprocess detect --all-nights` does (the same History, the same detect), with the options given
to that call, and prints per scenario the first stage of the verdict: the
judged clean nights flagged (night >= 4), and on the two slowed nights whether anything was flagged
and whether a flag names the fault (real_replay.names_right). Only the first stage: the
confirmation re-run exists only for the nights the replay's own settings flagged, so a changed
setting's new flags cannot be confirmed or refuted here (a real replay does that); the flags the
replay's re-runs refuted on earlier nights are read from its run directories, as the nightly's
`detect --runs` reads them.

    python3 -m bench.rejudge_replay /tmp/r10 --set alpha_system=0.05 --set alpha_system=0.1
"""
import argparse
from pathlib import Path

from bench import real_replay
from postprocess.detect.cli import past_unconfirmed
from postprocess.detect.options import DEFAULTS
from postprocess.detect.suite import detect
from postprocess.history import inputs


def flags_by_night(tree, options):
    """[(night label, [flagged findings])] of every night of ``tree``, oldest first: the History
    `postprocess detect --perflogs TREE/perflogs --system local --all-nights` reads, judged by
    detect with ``options`` (keyword options of detect/suite.py, never the module's defaults)."""
    ap = argparse.ArgumentParser()
    inputs.add_history_args(ap)
    history = inputs.load_history(ap.parse_args(['--perflogs', str(tree / 'perflogs'),
                                                 '--system', 'local']))
    # the flags the replay's own re-runs refuted, as the nightly's `detect --runs` reads them
    findings = detect(history, unconfirmed=past_unconfirmed(str(tree / 'runs')), **options)
    nights = sorted({f['night'] for f in findings})
    return [(n, [f for f in findings if f['night'] == n and f['status'] == 'regression'])
            for n in nights]


def rejudge(run_dir, options):
    """One row per scenario of one replayed run: clean nights flagged, slowed nights flagged and
    named right (first stage)."""
    rows = []
    for tree in sorted(p for p in run_dir.iterdir() if (p / 'perflogs').is_dir()):
        if tree.name == 'clean':
            continue
        fault = 'write' if tree.name == 'short' else tree.name
        nights = flags_by_night(tree, options)
        clean, slowed = nights[real_replay.JUDGED_FROM:-2], nights[-2:]
        rows.append({'scenario': tree.name, 'judged_clean': len(clean),
                     'clean_flagged': [(i + real_replay.JUDGED_FROM + 1, [real_replay.describe(f)
                                                                         for f in fl])
                                       for i, (_, fl) in enumerate(clean) if fl],
                     'slowed': [(bool(fl), bool(real_replay.right_findings(fault, fl)),
                                 [real_replay.describe(f) for f in fl]) for _, fl in slowed]})
    return rows


def parse_set(text):
    key, _, value = text.partition('=')
    if key not in DEFAULTS or not value:
        raise argparse.ArgumentTypeError(f"not a detect option: '{text}' (options: {sorted(DEFAULTS)})")
    return {key: type(DEFAULTS[key])(value)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('replay', type=Path, help='a real replay --out directory (holding run1, run2...)')
    ap.add_argument('--set', type=parse_set, action='append', default=[], metavar='OPTION=VALUE',
                    help='a detect option; each --set is judged on its own (and the defaults first)')
    a = ap.parse_args(argv)
    runs = sorted(p for p in a.replay.glob('run*') if p.is_dir())
    if not runs:
        ap.error(f"no run directories (run1, run2...) in '{a.replay}'")
    print('| setting | run | scenario | clean nights flagged | slowed nights flagged | named right | '
          'flags |')
    print('|---|---|---|---|---|---|---|')
    for options in [{}] + a.set:
        label = ', '.join(f'{k}={v}' for k, v in options.items()) or 'defaults'
        for run in runs:
            for row in rejudge(run, options):
                s = row['slowed']
                clean = ', '.join(f'night {n}: ' + '; '.join(d) for n, d in row['clean_flagged'])
                print(f"| {label} | {run.name} | {row['scenario']} | "
                      f"{len(row['clean_flagged'])} of {row['judged_clean']} | "
                      f"{sum(x[0] for x in s)}/2 | {sum(x[1] for x in s)}/2 | "
                      f"{clean + ' / ' if clean else ''}{' | '.join('; '.join(x[2]) or 'ok' for x in s)} |",
                      flush=True)


if __name__ == '__main__':
    main()
