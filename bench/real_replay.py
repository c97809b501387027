"""Real nights of this machine: `ci/nightly.sh --tag quick` on `local`, one run after another into
one results tree, each re-dated to its own night, then two nights with iobench made slower by
tests/support/iofault.c (fio untouched). Prints each night's exit status and what was red, and per
scenario what judges the verdict (issue 44, docs/verdicts.md):

- red clean nights (judged ones: `min_nights` of history);
- per slowed night: red and naming the fault, `since` the first slowed night, and the fault's
  size on the level it is about (that level's fall in the night's own detect.json) beside the
  reach the night printed for it (its `detectable`): a fault larger than 1.5 x its reach must be
  named;
- the whole tree judged again (`detect --all-nights --runs`): every night's statuses as the
  nightly said them (a verdict that is a function of the data).

Scenarios (bench/nights.py FAULTS): write (every iobench write and sync +25 % time, paid in
kind), hdf5 (only writes to HDF5 files, +35 %), read (every iobench read +30 %), meta (every
create/open/stat/unlink/close of iobench's files +25 %). The clean nights are shared: each
scenario runs its two slowed nights on its own copy of the tree at that point. The short replay
(--short M) copies the tree after night M-2 and slows nights M-1, M (write).

    python3 -m bench.real_replay --nights 14 --short 10 --runs 2 --out /tmp/replay --json FILE
    python3 -m bench.real_replay --summarize FILE      # the tables again from a saved JSON

A night of the quick suite takes ~1.5-2 min here (plus a re-run when a night is far).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import ioregress_env
from postprocess.detect.options import DEFAULTS
from bench import nights

SCENARIOS = ('write', 'hdf5', 'read', 'meta')
JUDGED_FROM = DEFAULTS['min_nights']      # clean nights with a judged level: night 6 on
META_CHECKS = ('MDFiles', 'MDDatasets', 'MDEmptyFiles')   # the metadata checks (metadata.py)
KEEP = ('scope', 'check', 'params', 'phase', 'partition', 'status', 'change', 'since', 'night',
        'confirmation', 'fio_change', 'members', 'moved', 'history_nights', 'detectable', 'far',
        'filesystem_busy')


def describe(f):
    scope = f.get('scope', 'series')
    what = f.get('params') if scope == 'group' else (scope if scope in ('stack', 'system')
                                                     else f"{f['check']}")
    change = '' if f.get('change') is None else f' {f["change"]:+.0%}'
    return f"{scope}:{what} {f.get('phase', '')}{change} since {f.get('since')}"


def names_right(scenario, f):
    """Is red finding f about the fault?"""
    if scenario == 'write':
        return f.get('scope') in ('stack', 'system') and f['phase'] == 'write'
    if scenario == 'hdf5':
        return f['phase'] == 'write' and (f.get('params') == 'backend=hdf5' or (
            f.get('scope') == 'series' and 'backend=hdf5' in f.get('params', '')))
    if scenario == 'read':
        return f['phase'] == 'read'
    if scenario == 'meta':
        return (f.get('check', '').startswith(META_CHECKS) or f.get('params', '').startswith(
            tuple(f'check={c}' for c in META_CHECKS)))
    return False


def fault_level(scenario, findings):
    """The first-stage finding of the level a fault is about: the partition's write (read) stack,
    HDF5's write group, MDEmptyFiles' slower rate."""
    def pick(pred):
        return [f for f in findings if pred(f) and f.get('change') is not None]
    if scenario in ('write', 'read'):
        got = pick(lambda f: f.get('scope') in ('stack', 'system') and f['phase'] == scenario)
    elif scenario == 'hdf5':
        got = pick(lambda f: f.get('scope') == 'group' and f.get('params') == 'backend=hdf5'
                   and f['phase'] == 'write')
    else:
        got = pick(lambda f: f.get('scope') == 'series' and f.get('check', '').startswith(
            'MDEmptyFiles'))
    return min(got, key=lambda f: f['change']) if got else None


def branch(src, dst, perflogs=True, runs=None):
    """A scenario's own results tree from the shared one: its perflogs, and the earlier runs'
    confirmation re-runs (data of their nights, detect --runs); ``runs``: only the first N."""
    if perflogs:
        shutil.copytree(src / 'perflogs', dst / 'perflogs')
        if (src / 'store').exists():        # the history the nightly reads (its perflogs' nights)
            shutil.copytree(src / 'store', dst / 'store')
    for run in sorted(p for p in (src / 'runs').iterdir() if p.is_dir())[:runs]:
        target = dst / 'runs' / run.name
        if target.exists():
            continue
        target.mkdir(parents=True)
        for name in ('COMPLETE',):
            if (run / name).exists():
                shutil.copy2(run / name, target / name)
        if (run / 'confirm' / 'perflogs').exists():
            shutil.copytree(run / 'confirm' / 'perflogs', target / 'confirm' / 'perflogs')


def slim(rec, scenario=None):
    v = rec['verdict'] or {}
    out = {'night': rec['night'], 'exit': rec['exit'], 'seconds': rec['seconds'],
           'findings': [{k: f.get(k) for k in KEEP if k in f} for f in v.get('findings', [])],
           'out': rec['out'][-1500:]}
    if scenario:
        level = fault_level(scenario, rec.get('detect') or [])
        out['level'] = level and {k: level.get(k) for k in KEEP if k in level}
    return out


def replay(out, n_nights, short, scenarios, lib, log, save):
    """One fresh results tree: the shared clean nights, then each scenario's slowed nights."""
    clean_tree = out / 'clean'
    branch_at = {n_nights - 2: list(scenarios)}
    if short:
        branch_at.setdefault(short - 2, []).append('short')
    records = {'clean': []}
    for i in range(n_nights - 2):
        rec = nights.run_night(clean_tree, i, lib=lib)
        records['clean'].append(slim(rec))
        log(f"  night {i + 1:2d} clean       exit {rec['exit']} {rec['seconds']:5.0f} s  "
            + '; '.join(describe(f) for f in records['clean'][-1]['findings']
                        if f['status'] == 'regression'))
        save(records)
        for scen in branch_at.get(i + 1, []):
            branch(clean_tree, out / scen)
    for scen in list(scenarios) + (['short'] if short else []):
        fault = 'write' if scen == 'short' else scen
        first = (short if scen == 'short' else n_nights) - 2
        records[scen] = []
        for i in (first, first + 1):
            rec = nights.run_night(out / scen, i, fault=fault, lib=lib)
            records[scen].append(slim(rec, fault))
            level = records[scen][-1]['level'] or {}
            log(f"  night {i + 1:2d} {scen:6s} slow exit {rec['exit']} {rec['seconds']:5.0f} s  "
                f"level {level.get('change')!s:.6} reach {level.get('detectable')!s:.6}  "
                + '; '.join(describe(f) for f in records[scen][-1]['findings']
                            if f['status'] == 'regression'))
            save(records)
    return records


def rejudge(tree):
    """Nights whose statuses differ when the tree is judged again in one pass (detect
    --all-nights --runs) from what its nightly said (verdict.json, else detect.json): [(night,
    series, said, now)]."""
    out = subprocess.run([sys.executable, '-m', 'postprocess', 'detect', '--perflogs',
                          str(tree / 'perflogs'), '--runs', str(tree / 'runs'), '--all-nights',
                          '--json', str(tree / 'rejudged.json')], capture_output=True, text=True,
                         env=nights.base_env())
    if out.returncode not in (0, 1):
        return [('-', 'detect failed', out.stderr[-300:], '')]
    again = {}
    for f in json.loads((tree / 'rejudged.json').read_text()):
        again[(f['night'], _key(f))] = f['status']
    diffs = []
    for run in sorted(p for p in (tree / 'runs').iterdir() if (p / 'post').is_dir()):
        said = {}
        for name in ('detect.json', 'verdict.json'):        # the verdict's word is the last
            path = run / 'post' / name
            if path.exists():
                doc = json.loads(path.read_text())
                for f in doc['findings'] if isinstance(doc, dict) else doc:
                    said[(f['night'], _key(f))] = f['status']
        for k, status in said.items():
            if again.get(k) != status:
                diffs.append((k[0], ' '.join(k[1]), status, again.get(k)))
    return diffs


def _key(f):
    return (f.get('partition', ''), f.get('environ', ''), f.get('check', ''), f.get('params', ''),
            f.get('phase', ''))


def is_red(rec):
    return rec['exit'] == 3 or any(f['status'] == 'regression' for f in rec['findings'])


def score(all_runs, short):
    """Per run and scenario: red clean nights, and each slowed night's figures."""
    rows = []
    for r, records in enumerate(all_runs, 1):
        clean = records['clean'][JUDGED_FROM:]
        for scen, recs in records.items():
            if scen == 'clean':
                continue
            fault = 'write' if scen == 'short' else scen
            judged = clean[:short - 2 - JUDGED_FROM] if scen == 'short' else clean
            slow = []
            for rec in recs:
                right = [f for f in rec['findings'] if f['status'] == 'regression'
                         and names_right(fault, f)]
                level = rec.get('level') or {}
                change, reach = level.get('change'), level.get('detectable')
                slow.append({'night': rec['night'], 'red': is_red(rec), 'named': bool(right),
                             'since_ok': bool(right) and all(f.get('since') == recs[0]['night']
                                                             for f in right),
                             'change': change, 'reach': reach,
                             'owed': change is not None and reach is not None
                             and change <= 1.5 * reach})
            rows.append({'run': r, 'scenario': scen, 'judged_clean': len(judged),
                         'red_clean': [c['night'] for c in judged if is_red(c)], 'slowed': slow})
    return rows


def _pct(x):
    return '-' if x is None else f'{x:+.0%}'


def print_table(rows, out=print):
    out('| run | scenario | red clean nights (judged) | slowed nights: named / owed (fall, reach) '
        '| since right |')
    out('|---|---|---|---|---|')
    for row in rows:
        s = row['slowed']
        each = ', '.join(f"{'named' if x['named'] else 'red' if x['red'] else 'not red'}"
                         f"{' (owed)' if x['owed'] else ''} ({_pct(x['change'])}, {_pct(x['reach'])})"
                         for x in s)
        out(f"| {row['run']} | {row['scenario']} | {len(row['red_clean'])} of "
            f"{row['judged_clean']}{(' (' + ', '.join(row['red_clean']) + ')') if row['red_clean'] else ''} "
            f"| {sum(x['named'] for x in s)}/{len(s)}, owed {sum(x['owed'] for x in s)}: {each} "
            f"| {sum(x['since_ok'] for x in s)}/{len(s)} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--nights', type=int, default=14)
    ap.add_argument('--short', type=int, default=10, help='also a short replay of M nights (0: none)')
    ap.add_argument('--runs', type=int, default=2)
    ap.add_argument('--scenarios', default=','.join(SCENARIOS))
    ap.add_argument('--out', default='/tmp/ioregress-replay')
    ap.add_argument('--json', help='write every night and the scores here')
    ap.add_argument('--summarize', metavar='JSON', help='print the tables of a saved replay')
    ap.add_argument('--scratch', metavar='DIR',
                    help='data files here ($IOREGRESS_SCRATCH), e.g. a journaled filesystem '
                         '(docs/local-fs.md)')
    args = ap.parse_args(argv)
    if args.summarize:
        doc = json.loads(Path(args.summarize).read_text())
        print_table(score(doc['runs'], doc['short']))
        return 0
    scenarios = [s for s in args.scenarios.split(',') if s]
    bad = [s for s in scenarios if s not in SCENARIOS]
    least = JUDGED_FROM + 3
    if bad or args.nights < least or (args.short and not least <= args.short <= args.nights):
        print(f"real_replay: error: bad scenario or night count '{bad or args.nights}'",
              file=sys.stderr)
        return 2
    if args.scratch and not (Path(args.scratch).is_dir() and os.access(args.scratch, os.W_OK)):
        print(f"real_replay: error: --scratch is not a writable directory '{args.scratch}'",
              file=sys.stderr)
        return 2
    if args.scratch:
        os.environ['IOREGRESS_SCRATCH'] = str(Path(args.scratch).resolve())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lib = nights.build_fault_lib(out)
    doc = {'nights': args.nights, 'short': args.short, 'scenarios': scenarios, 'runs': [],
           'rejudged': [], 'started': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
           'scratch': nights.describe_fs(ioregress_env.get('IOREGRESS_SCRATCH') or str(out))}
    print(f"data files on {doc['scratch']}", flush=True)

    def save(records):
        if args.json:
            Path(args.json).write_text(json.dumps(dict(doc, runs=doc['runs'] + [records]),
                                                  indent=1))
    for r in range(1, args.runs + 1):
        tree = out / f'run{r}'
        shutil.rmtree(tree, ignore_errors=True)
        print(f'run {r}: {tree}', flush=True)
        doc['runs'].append(replay(tree, args.nights, args.short, scenarios, lib,
                                  lambda s: print(s, flush=True), save))
        for sub in sorted(p for p in tree.iterdir() if (p / 'perflogs').is_dir()):
            diffs = rejudge(sub)
            doc['rejudged'].append({'run': r, 'tree': sub.name, 'differ': diffs[:20],
                                    'count': len(diffs)})
            print(f'  judged again, {sub.name}: {len(diffs)} statuses differ from the nightly\'s'
                  + ''.join(f'\n    {d}' for d in diffs[:5]), flush=True)
    doc['finished'] = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1))
    print_table(score(doc['runs'], args.short))
    return 0


if __name__ == '__main__':
    sys.exit(main())
