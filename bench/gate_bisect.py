#!/usr/bin/env python3
"""The gate's figures on this machine: an injected slowdown named by --bisect, A/A never slower.

Bisection runs: stacks A and B differ in three parts, written as ReFrame environments into a
configuration beside the site's (configs/settings.py plus two environments derived from mpi-gnu):
  env OMPI_MCA_io      ompio -> romio321            (Open MPI's two MPI-IO implementations)
  hint cb_buffer_size  (none) -> 1048576            (extras 'mpiio_hints': every check gets it)
  env LD_PRELOAD       (none) -> iofault.c          (every iobench write and sync +FACTOR of its
                                                     own time: the injected slowdown)
Each run is `python -m gate --a A --b B --bisect`; it is right when the parts it names
are exactly {env LD_PRELOAD}. A/A runs are `gate --a mpi-gnu --b mpi-gnu`; their verdicts are
counted, and "slower" must never appear. The issue's bar: named in >= 9 of 10, A/A never slower.

With --what interact, B differs from A in the library, the phase it acts on (IOFAULT_PHASE) and
OMPI_MCA_io: the slowdown needs the first two at once, no single part's mix is slower, and the
bisection's second stage must name both as interacting.

Usage: python3 -m bench.gate_bisect [--runs 10] [--pairs 8|auto] [--effect 0.15] [--max-pairs N]
         [--plan] [--factor 0.18] [--name REGEX] [--what both|bisect|aa|interact]
         [--scratch DIR] [--out DIR] [-- REFRAME_ARGS]
--factor F slows every write by 1/(1 + F): 0.18 is -15 %, 0.43 is -30 %. Every gate goes to
OUT/gates/ and reads the earlier ones there for its plan (--history OUT); --plan runs
`gate --plan` before each bisection and prints it beside the pairs the bisection then ran.
Prints one line per run (exit, verdict and B/A with its interval per check and phase, the spread
of the pair ratios, the named parts with their mix's ratio) and the counts: the injected part
named alone in k of N runs, A/A "slower" in k of N runs, and what the spread asks for: the
median spread sd (1.4826 x MAD of the log pair ratios) and the pairs that resolve the injected
slowdown at that spread (pairs.pairs_needed). Every run's gate.json stays under --out.
--scratch puts the checks' data there ($IOREGRESS_SCRATCH, e.g. /dev/shm: the pairs then see
the machine's CPU noise, not the shared disk's).
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

from gate import pairs as gate_pairs

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CULPRIT = 'env LD_PRELOAD'
#: BenchIO, 128 MiB per rank on 2 ranks: phases of 0.2-0.5 s, bandwidth-bound (the quick suite's
#: shape the verdict's stack factor is judged on, docs/verdicts.md)
CHECK = 'BenchIO%size=256%ranks=2%stripe=default%io=posix:fpp'

CONFIG = '''\
# bench/gate_bisect.py: the site's configuration plus stacks A and B of the injected slowdown
import copy
import importlib.util

_spec = importlib.util.spec_from_file_location('ioregress_site', {site!r})
_site = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_site)
site_configuration = _site.site_configuration
_base = next(e for e in site_configuration['environments']
             if e['name'] == 'mpi-gnu' and 'local' in e.get('target_systems', []))
_fault = [['IOFAULT_PHASE', 'write'], ['IOFAULT_FACTOR', {factor!r}]]   # inert without the library
_a = dict(copy.deepcopy(_base), name='gate-fault-a',
          env_vars=[['OMPI_MCA_io', 'ompio']] + _fault)
_b = dict(copy.deepcopy(_base), name='gate-fault-b',
          env_vars=[['OMPI_MCA_io', 'romio321'], ['LD_PRELOAD', {lib!r}]] + _fault)
_b['extras'] = dict(_b.get('extras', {{}}), mpiio_hints={{'cb_buffer_size': '1048576'}})
# parts that act only together: the library and the phase it acts on (--what interact)
_a0 = dict(copy.deepcopy(_base), name='gate-fault-a0',
           env_vars=[['OMPI_MCA_io', 'ompio'], ['IOFAULT_FACTOR', {factor!r}]])
_i = dict(copy.deepcopy(_base), name='gate-fault-i',
          env_vars=[['OMPI_MCA_io', 'romio321'], ['LD_PRELOAD', {lib!r}]] + _fault)
site_configuration['environments'] = list(site_configuration['environments']) + [_a, _b, _a0, _i]
'''
INTERACTING = {'env IOFAULT_PHASE', 'env LD_PRELOAD'}


def build_fault_lib(directory):
    """tests/support/iofault.c compiled into DIRECTORY/libiofault.so (needs cc)."""
    lib = os.path.join(directory, 'libiofault.so')
    subprocess.run(['cc', '-shared', '-fPIC', '-O2', '-o', lib,
                    os.path.join(REPO, 'tests', 'support', 'iofault.c'), '-ldl'], check=True,
                   capture_output=True)
    return lib


def fault_config(directory, factor):
    """A ReFrame configuration with stacks gate-fault-a and gate-fault-b; returns its path."""
    lib = build_fault_lib(directory)
    path = os.path.join(directory, 'gate-fault-settings.py')
    with open(path, 'w') as fp:
        fp.write(CONFIG.format(site=os.path.join(REPO, 'configs', 'settings.py'), lib=str(lib),
                               factor=str(factor)))
    return path


def gate(out, a, b, pairs, name, config=None, bisect=False, reframe_args=(), scratch=None,
         extra=()):
    cmd = [sys.executable, '-m', 'gate', '--a', a, '--b', b, '--system', 'local',
           '--name', name, '--pairs', str(pairs), '--out', out, *extra]
    cmd += (['--config', config] if config else []) + (['--bisect'] if bisect else [])
    cmd += ['--', *reframe_args] if reframe_args else []
    started = time.time()
    env = dict(os.environ, **({'IOREGRESS_SCRATCH': scratch} if scratch else {}))
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    try:
        with open(os.path.join(out, 'gate.json')) as fp:
            doc = json.load(fp)
    except OSError:
        sys.exit(f'gate_bisect: the gate made no gate.json ({proc.returncode}): {proc.stderr[-800:]}')
    return proc.returncode, doc, time.time() - started


def spread(pairs):
    """sd of the log pair ratios, robust (1.4826 x MAD), or None for fewer than 2 pairs."""
    return gate_pairs.log_spread([b / a for a, b in pairs if a > 0 and b > 0])


def needed(sd, factor, tolerance=gate_pairs.TOLERANCE, level=gate_pairs.LEVEL):
    """Pairs whose interval separates a ratio of 1/(1 + factor) from the tolerance band at this
    spread (the gate's own formula, pairs.pairs_needed, fed a sample of that median and MAD)."""
    r = 1 / (1 + factor)
    d = sd / gate_pairs.MAD_NORMAL          # a MAD of d is a spread sd of sd
    return gate_pairs.pairs_needed([r * math.exp(-d), r, r * math.exp(d)], tolerance, level)


def _results(doc, spreads=None):
    out = []
    for r in doc['results']:
        sd = spread(r['pairs'])
        if spreads is not None and sd is not None:
            spreads.setdefault(r['phase'], []).append(sd)
        out.append(f'{r["phase"]}:{r["status"]} {r["ratio"] or 0:.3f}'
                   f'[{r["lo"] or 0:.3f},{r["hi"] or 0:.3f}] sd {sd or 0:.3f}')
    return ' '.join(out)


def _spread_line(what, spreads, factor):
    return '; '.join(f'{what} {phase}: median spread sd {statistics.median(v):.3f} (range '
                     f'{min(v):.3f}-{max(v):.3f}), pairs to resolve -{1 - 1 / (1 + factor):.0%}: '
                     f'{needed(statistics.median(v), factor) or ">1000"}'
                     for phase, v in sorted(spreads.items()))


def _named(doc):
    """{part: 'how, its mix's ratio'} of the parts the bisection named."""
    bis = doc.get('bisect') or {}
    ratio = {s['part']: s['ratio'] for s in bis.get('shares', [])}
    return {n['part']: n['how'] + (f', {ratio[n["part"]]:.3f}' if ratio.get(n['part']) else '')
            for n in bis.get('named', [])}


def _plan(out, a, config, extra):
    """`gate --plan` of the fault stacks: prints its lines."""
    cmd = [sys.executable, '-m', 'gate', '--a', 'gate-fault-a', '--b',
           'gate-fault-b', '--system', 'local', '--name', a.name, '--config', config, '--plan',
           '--out', out, *extra, '--', *a.reframe_args]
    env = dict(os.environ, **({'IOREGRESS_SCRATCH': a.scratch} if a.scratch else {}))
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        print(f'  {line}', flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--runs', type=int, default=10)
    ap.add_argument('--pairs', default='8', help='pairs per gate, or auto (sequential)')
    ap.add_argument('--effect', default='0.15', help="the gate's --effect (with --pairs auto)")
    ap.add_argument('--max-pairs', help="the gate's cap of --pairs auto")
    ap.add_argument('--plan', action='store_true', help='run `gate --plan` before each bisect '
                    '(spreads of the earlier gates under --out, else a pilot) and print it '
                    'beside the pairs the bisect then needed')
    ap.add_argument('--factor', type=float, default=0.18,
                    help='iofault: each write/sync +this of its own time (0.18: bandwidth /1.18 = -15 %%)')
    ap.add_argument('--name', default=CHECK, help='the check (ReFrame -n)')
    ap.add_argument('--what', choices=('both', 'bisect', 'aa', 'interact'), default='both',
                    help='interact: the fault needs two parts (library and phase) at once')
    ap.add_argument('--scratch', help='data directory of the checks ($IOREGRESS_SCRATCH)')
    ap.add_argument('--out', help='keep every run here (default: a temporary directory)')
    ap.add_argument('reframe_args', nargs='*')
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp(prefix='gate-bisect-')
    os.makedirs(os.path.join(out, 'gates'), exist_ok=True)
    # every gate here reads the earlier ones under out/gates for its plan
    extra = ['--effect', a.effect, '--history', out] + \
        (['--max-pairs', a.max_pairs] if a.max_pairs else [])
    where = os.path.join(out, 'gates')
    print(f'# {a.runs} runs each, {a.pairs} pairs, check {a.name}, fault factor {a.factor}, '
          f'data in {a.scratch or "the stage directory"}, out {out}, '
          f'{time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}', flush=True)
    right = slower = 0
    spreads, aa_spreads = {}, {}
    if a.what in ('both', 'bisect'):
        config = fault_config(out, a.factor)
        for i in range(a.runs):
            if a.plan:
                _plan(os.path.join(out, f'plan{i}'), a, config, extra)
            rc, doc, secs = gate(os.path.join(where, f'bisect{i}'), 'gate-fault-a',
                                 'gate-fault-b', a.pairs, a.name, config, True, a.reframe_args,
                                 a.scratch, extra)
            print(f'bisect {i}: pairs run: gate {doc.get("pairs_run")}, bisect stages '
                  + ', '.join(str(max([m.get('pairs', 0) for m in st['mixes']] or [0]))
                              for st in (doc.get('bisect') or {}).get('stages', [])), flush=True)
            named = _named(doc)
            ok = set(named) == {CULPRIT}
            right += ok
            print(f'bisect {i}: exit {rc} {_results(doc, spreads)} named '
                  f'{", ".join(f"{k} ({v})" for k, v in named.items()) or "-"} '
                  f'{"RIGHT" if ok else "WRONG"} ({secs:.0f} s)', flush=True)
        print(f'bisect: the injected part named alone in {right} of {a.runs} runs')
        print(_spread_line('B/A', spreads, a.factor))
    if a.what == 'interact':
        config = fault_config(out, a.factor)
        for i in range(a.runs):
            rc, doc, secs = gate(os.path.join(where, f'interact{i}'), 'gate-fault-a0',
                                 'gate-fault-i', a.pairs, a.name, config, True, a.reframe_args,
                                 a.scratch, extra)
            named = {n['part']: n['how'] for n in (doc.get('bisect') or {}).get('named', [])}
            ok = set(named) == INTERACTING
            right += ok
            print(f'interact {i}: exit {rc} {_results(doc)} named {named or "-"} '
                  f'{"RIGHT" if ok else "WRONG"} ({secs:.0f} s)', flush=True)
        print(f'interact: both parts named in {right} of {a.runs} runs')
    if a.what in ('both', 'aa'):
        counts = {}
        for i in range(a.runs):
            rc, doc, secs = gate(os.path.join(where, f'aa{i}'), 'mpi-gnu', 'mpi-gnu', a.pairs,
                                 a.name, reframe_args=a.reframe_args, scratch=a.scratch,
                                 extra=extra)
            for r in doc['results']:
                counts[r['status']] = counts.get(r['status'], 0) + 1
            slower += any(r['status'] == 'slower' for r in doc['results'])
            print(f'A/A {i}: exit {rc} {_results(doc, aa_spreads)} ({secs:.0f} s)', flush=True)
        print(f'A/A: "slower" in {slower} of {a.runs} runs; verdicts '
              + ', '.join(f'{k} {v}' for k, v in sorted(counts.items())))
        print(_spread_line('A/A', aa_spreads, a.factor))


if __name__ == '__main__':
    main()
