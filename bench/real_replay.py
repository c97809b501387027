"""Real-night replay of the nightly verdict: `ci/nightly.sh --tag quick` on `local`, one run after
another into one results tree, each re-dated to its own night, then two nights with iobench made
~20 % slower by tests/support/iofault.c (fio untouched). Prints, per night, the exit status and what was red,
and per scenario the counts that judge the verdict (issue 18, docs/verdicts.md).

Scenarios (tests/support/nights.py FAULTS): write (every iobench write and sync +25 % time, paid in kind:
a quarter of the bytes again), hdf5 (only writes to HDF5 files, +35 %: sized by what it
realizes), read (every iobench read), meta (every create/open/stat/unlink/close of iobench's
files +25 % of its own time, a create's paid in kind; MDEmptyFiles is the check whose time that
is).

The clean nights are shared: one results tree runs nights 1..N-2 clean; each scenario then runs its
two slowed nights on its own copy of the perflogs at that point (the verdict is causal: a night is
judged from the nights before it only, so the clean nights' verdicts are the same for every
scenario, and the machine's drift and bursts on them are real). The short replay (--short M) copies
the tree after night M-2 and runs nights M-1, M slowed (write), as a site's first ten days would.
Each run (--runs) starts a fresh results tree.

    python3 -m bench.real_replay --nights 14 --short 10 --runs 2 --out /tmp/replay --json FILE
    python3 -m bench.real_replay --summarize FILE      # the tables again from a saved JSON
    python3 -m bench.real_replay --effects OUT/run1    # what the faults did to the measurements

A night of the quick suite takes ~40-90 s here (plus a confirmation re-run when something is
flagged); 14 nights x 2 runs with 4 scenarios and the short replay: 44 nightly runs, ~1 h.
"""
import argparse
import json
import math
import os
import statistics
import shutil
import sys
import time
from pathlib import Path

from tests.support import nights

SCENARIOS = ('write', 'hdf5', 'read', 'meta')
JUDGED_FROM = 3          # clean nights judged: those with >= 3 nights of history (night 4 on)
META_CHECKS = ('MDFiles', 'MDDatasets', 'MDEmptyFiles')   # the metadata checks (metadata.py)


def red_findings(v):
    return [f for f in (v or {}).get('findings', []) if f.get('status') == 'regression']


def describe(f):
    scope = f.get('scope', 'series')
    what = f.get('params') if scope == 'group' else (scope if scope in ('stack', 'system')
                                                     else f"{f['check']}")
    change = '' if f.get('change') is None else f' {f["change"]:+.0%}'
    return f"{scope}:{what} {f.get('phase', '')}{change} since {f.get('since')}"


def names_right(scenario, found):
    """Does a red night name the fault? (the right finding, not just any red)."""
    if scenario == 'write':
        return any(f.get('scope') in ('stack', 'system') and f['phase'] == 'write' for f in found)
    if scenario == 'hdf5':
        return any(f.get('scope') == 'group' and f.get('params') == 'backend=hdf5'
                   and f['phase'] == 'write' for f in found) or (bool(found) and all('backend=hdf5' in f.get('params', '')
                                                           for f in found))
    if scenario == 'read':
        return any(f['phase'] == 'read' for f in found)
    if scenario == 'meta':      # a metadata check's series, or their family's group finding
        return any(f.get('check', '').startswith(META_CHECKS)
                   or (f.get('scope') == 'group' and f.get('params', '').startswith(
                       tuple(f'check={c}' for c in META_CHECKS))) for f in found)
    return False


def right_findings(scenario, found):
    return [f for f in found if names_right(scenario, [f])]


def branch(src, dst, perflogs=True, runs=None):
    """A scenario's own results tree from the shared one: its perflogs, and the earlier runs'
    verdicts (detect --runs remembers unconfirmed flags); ``runs``: only the first N runs'."""
    if perflogs:
        shutil.copytree(src / 'perflogs', dst / 'perflogs')
    for verdict in sorted((src / 'runs').glob('*/post/verdict.json'))[:runs]:
        if (dst / 'runs' / verdict.parent.parent.name).exists():
            continue
        target = dst / 'runs' / verdict.parent.parent.name / 'post'
        target.mkdir(parents=True)
        shutil.copy2(verdict, target / 'verdict.json')
        shutil.copy2(verdict.parent.parent / 'COMPLETE', target.parent / 'COMPLETE')


def recover(clean_tree):
    """The clean nights of an earlier, interrupted replay, from its run directories."""
    recs = []
    for i, run in enumerate(sorted(p for p in (clean_tree / 'runs').iterdir() if p.is_dir())):
        status = (run / 'COMPLETE').read_text().split()
        verdict = run / 'post' / 'verdict.json'
        recs.append(slim({'night': nights.night_of(i), 'exit': int(status[2]), 'seconds': None,
                          'verdict': json.loads(verdict.read_text()) if verdict.exists() else None,
                          'out': ''}))
    return recs


def replay(out, n_nights, short, scenarios, lib, log, save, resume=False):
    """One fresh results tree: the shared clean nights, then each scenario's slowed nights.
    ``resume``: the clean nights of an earlier run of this tree are kept, the scenarios run again
    (a short replay's branch must still be untouched)."""
    clean_tree = out / 'clean'
    branch_at = {n_nights - 2: list(scenarios)}
    if short:
        branch_at.setdefault(short - 2, []).append('short')
    records = {'clean': []}
    if resume:
        records['clean'] = recover(clean_tree)
        if len(records['clean']) != n_nights - 2 or (short and (out / 'short' / 'latest').exists()):
            raise SystemExit(f'real_replay: error: cannot resume {out}: '
                             f"{len(records['clean'])} clean nights, short branch used")
        for scen in scenarios:
            shutil.rmtree(out / scen, ignore_errors=True)
            branch(clean_tree, out / scen)
        if short:       # its perflogs were copied after night short-2; its verdicts up to there
            branch(clean_tree, out / 'short', perflogs=False, runs=short - 2)
        log(f"  nights 1-{n_nights - 2} clean: kept, exit "
            + ' '.join(str(r['exit']) for r in records['clean']))
    else:
        for i in range(n_nights - 2):
            rec = nights.run_night(clean_tree, i, lib=lib)
            records['clean'].append(slim(rec))
            log(f"  night {i + 1:2d} clean       exit {rec['exit']} {rec['seconds']:5.0f} s  "
                + '; '.join(describe(f) for f in red_findings(rec['verdict'])))
            save(records)
            for scen in branch_at.get(i + 1, []):
                branch(clean_tree, out / scen)
    for scen in list(scenarios) + (['short'] if short else []):
        fault = 'write' if scen == 'short' else scen
        first = (short if scen == 'short' else n_nights) - 2
        records[scen] = []
        for i in (first, first + 1):
            rec = nights.run_night(out / scen, i, fault=fault, lib=lib)
            records[scen].append(slim(rec))
            log(f"  night {i + 1:2d} {scen:6s} slow exit {rec['exit']} {rec['seconds']:5.0f} s  "
                + '; '.join(describe(f) for f in red_findings(rec['verdict'])))
            save(records)
    return records


def slim(rec):
    v = rec['verdict'] or {}
    keep = ('scope', 'group', 'check', 'params', 'phase', 'status', 'change', 'since', 'night',
            'confirmation', 'fio_change', 'members', 'moved', 'history_nights')
    return {'night': rec['night'], 'exit': rec['exit'], 'seconds': rec['seconds'],
            'findings': [{k: f.get(k) for k in keep if k in f} for f in v.get('findings', [])],
            'out': rec['out'][-1500:]}


def is_red(rec):
    """The night's verdict was red: exit 3, or a confirmed regression under exit 1 (a check that
    failed -- a reference bound, a sanity error -- takes the night's status first, ci/nightly.sh)."""
    return rec['exit'] == 3 or any(f['status'] == 'regression' for f in rec['findings'])


def score(all_runs, n_nights, short):
    """Per scenario: red clean nights (judged ones), slowed nights red / named right / since right."""
    rows = []
    for r, records in enumerate(all_runs, 1):
        clean = records['clean'][JUDGED_FROM:]
        for scen, recs in records.items():
            if scen == 'clean':
                continue
            fault = 'write' if scen == 'short' else scen
            judged = clean[:short - 2 - JUDGED_FROM] if scen == 'short' else clean
            red_clean = [c['night'] for c in judged if is_red(c)]
            first_slow = recs[0]['night']
            slow = []
            for rec in recs:
                found = [f for f in rec['findings'] if f['status'] == 'regression']
                right = right_findings(fault, found)
                slow.append({'night': rec['night'], 'red': is_red(rec),
                             'right': is_red(rec) and bool(right),
                             'since_ok': bool(right) and all(f.get('since') == first_slow
                                                             for f in right)})
            rows.append({'run': r, 'scenario': scen, 'judged_clean': len(judged),
                         'red_clean': red_clean, 'slowed': slow})
    return rows


def print_table(rows, out=print):
    out('| run | scenario | judged clean nights | red clean nights | slowed nights red | '
        'named right | since = first slowed night |')
    out('|---|---|---|---|---|---|---|')
    for row in rows:
        s = row['slowed']
        out(f"| {row['run']} | {row['scenario']} | {row['judged_clean']} | "
            f"{len(row['red_clean'])} {('(' + ', '.join(row['red_clean']) + ')') if row['red_clean'] else ''} | "
            f"{sum(x['red'] for x in s)}/{len(s)} | {sum(x['right'] for x in s)}/{len(s)} | "
            f"{sum(x['since_ok'] for x in s)}/{len(s)} |")


def night_levels(logs):
    """(check, params, phase) -> {date: log of the median repetition's bandwidth} of a perflog
    tree (fio left out)."""
    from postprocess.history.perflog import read_perflogs
    levels = {}
    for r in read_perflogs(logs)[0]:
        if 'backend=fio' in r['params'] or not r['reps']:
            continue
        for phase, reps in r['reps'].items():
            bw = sorted(b / s for b, s in reps if s > 0)
            if bw:
                levels.setdefault((r['check'], r['params'], phase), {})[r['time'].date()] = \
                    math.log(bw[len(bw) // 2])
    return levels


def pct(log_change):
    return f'{math.expm1(log_change):+.0%}'


def effects(run_dir, n_nights, out=print):
    """What each fault did to the measurements of a replayed run (its scenarios' perflogs): per
    phase, the common change of the faulted series (HDF5's for ``hdf5``, the metadata-bound
    empty-file series for ``meta``: the median over series of
    each one's change) on the slowed nights against the clean nights 4..N-2, beside the clean
    nights' spread (SD of a series' nightly level, median over series; SD of the common change).
    A fault is only findable when its change stands out of that spread."""
    out('| scenario | phase | series | common change, slowed nights | clean SD: series / common |')
    out('|---|---|---|---|---|')
    clean = slice(JUDGED_FROM, n_nights - 2)
    levels = {}
    for scenario in SCENARIOS:
        logs = Path(run_dir) / scenario / 'perflogs'
        if not logs.exists():
            continue
        levels[scenario] = night_levels(logs)
        for phase in ('write', 'read'):
            rows = []
            for (check, params, ph), by in levels[scenario].items():
                days = sorted(by)
                if ph == phase and len(days) == n_nights and faulted(scenario, params):
                    base = statistics.median(by[d] for d in days[clean])
                    rows.append([by[d] - base for d in days])
            if not rows:
                continue
            factor = [statistics.median(col) for col in zip(*rows)]
            out(f'| {scenario} | {phase} | {len(rows)} | {pct(factor[-2])}, {pct(factor[-1])} | '
                f'{statistics.median(statistics.pstdev(r[clean]) for r in rows):.0%} / '
                f'{statistics.pstdev(factor[clean]):.0%} |')
    if 'write' in levels and 'hdf5' in levels:
        write_fault_size(levels['write'], levels['hdf5'], out)


def write_fault_size(slowed, control, out=print):
    """The write fault's size in the suite, free of the machine's drift: each series' write level
    under the fault (``slowed``: the write scenario's night_levels) against the same series on the
    same nights in the hdf5 scenario (``control``), where only HDF5's files are slowed (its two
    slowed nights run right after the write scenario's)."""
    from postprocess.history.perflog import parse_params
    by_backend = {}
    for key, by in slowed.items():
        if key[2] != 'write' or 'backend=hdf5' in key[1] or key not in control:
            continue
        backend = parse_params(key[1]).get('backend')
        for day in sorted(by)[-2:]:
            if day in control[key]:
                by_backend.setdefault(backend, []).append(by[day] - control[key][day])
    every = [x for xs in by_backend.values() for x in xs]
    if every:
        med = lambda xs: pct(statistics.median(xs))  # noqa: E731
        out(f'write fault against the same nights unfaulted (hdf5 scenario, its other series): '
            f'{med(every)} over {len(every)} series-nights ('
            + ', '.join(f'{b} {med(xs)}' for b, xs in sorted(by_backend.items())) + ')')


def faulted(scenario, params):
    """Is this series what the scenario's fault is about (for --effects)?"""
    if scenario == 'hdf5':
        return 'backend=hdf5' in params
    if scenario == 'meta':
        return 'filesize=0' in params.split(',')
    return True


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--nights', type=int, default=14)
    ap.add_argument('--short', type=int, default=10, help='also a short replay of M nights (0: none)')
    ap.add_argument('--runs', type=int, default=2)
    ap.add_argument('--scenarios', default=','.join(SCENARIOS))
    ap.add_argument('--out', default='/tmp/ioregress-replay')
    ap.add_argument('--json', help='write every night and the scores here')
    ap.add_argument('--summarize', metavar='JSON', help='print the tables of a saved replay')
    ap.add_argument('--effects', metavar='RUN_DIR',
                    help="what each fault did to a replayed run's measurements (OUT/runN)")
    ap.add_argument('--resume', action='store_true',
                    help="keep the clean nights already in --out's trees, run the scenarios again")
    ap.add_argument('--scratch', metavar='DIR',
                    help='data files here ($IOREGRESS_SCRATCH), e.g. a journaled filesystem (docs/local-fs.md)')
    args = ap.parse_args(argv)
    if args.summarize:
        doc = json.loads(Path(args.summarize).read_text())
        print_table(score(doc['runs'], doc['nights'], doc['short']))
        return 0
    if args.effects:
        effects(args.effects, args.nights)
        return 0
    scenarios = [s for s in args.scenarios.split(',') if s]
    bad = [s for s in scenarios if s not in SCENARIOS]
    if bad or args.nights < JUDGED_FROM + 3 or (args.short and not JUDGED_FROM + 3 <= args.short <= args.nights):
        print(f"real_replay: error: bad scenario or night count '{bad or args.nights}'", file=sys.stderr)
        return 2
    if args.scratch and not (Path(args.scratch).is_dir() and os.access(args.scratch, os.W_OK)):
        print(f"real_replay: error: --scratch is not a writable directory '{args.scratch}'", file=sys.stderr)
        return 2
    if args.scratch:
        os.environ['IOREGRESS_SCRATCH'] = str(Path(args.scratch).resolve())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lib = nights.build_fault_lib(out)
    doc = {'nights': args.nights, 'short': args.short, 'scenarios': scenarios, 'runs': [],
           'started': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
           'scratch': nights.describe_fs(os.environ.get('IOREGRESS_SCRATCH') or str(out))}
    print(f"data files on {doc['scratch']}", flush=True)
    def save(records):
        if args.json:
            Path(args.json).write_text(json.dumps(dict(doc, runs=doc['runs'] + [records]), indent=1))
    for r in range(1, args.runs + 1):
        tree = out / f'run{r}'
        if not args.resume:
            shutil.rmtree(tree, ignore_errors=True)
        print(f'run {r}: {tree}', flush=True)
        doc['runs'].append(replay(tree, args.nights, args.short, scenarios, lib,
                                  lambda s: print(s, flush=True), save, args.resume))
    doc['finished'] = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1))
    print_table(score(doc['runs'], args.nights, args.short))
    for r in range(1, args.runs + 1):
        effects(out / f'run{r}', args.nights)
    return 0


if __name__ == '__main__':
    sys.exit(main())
