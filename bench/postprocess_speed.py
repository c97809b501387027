"""Benchmark: years of history through the nightly postprocess, the results store (DuckDB, Parquet)
and the code before it side by side in one run.

Goals (issue 47), on the 2-core machine, 10^6 perflog lines: `import` <= 20 s; cold full report
(from the store) <= 20 s; warm nightly (detect + report, 4 nights added) <= 3 s; peak memory
<= 1.5 GiB. Not a test: run by hand and read the figures.

Every step runs as its own `python -m postprocess` process (as ci/nightly.sh runs them), timed by
wall clock and CPU, with its peak resident memory (wait4). The old code is this repository at
--old (default: main with the verdict of issue 44, before the store: the same detector), unpacked
with `git archive` into the work directory and run from there (`python -m` imports from its
working directory first), with the perflogs and its ingest cache, as it had them.

The perflog is SYNTHETIC (contract layout of configs/settings.py): 200 keys (4 backend/modes x 5 rank
counts x 2 sizes x 5 stripes) x N nights, 5 repetitions per phase, plus a fio baseline line per
night; the warm step adds 4 more nights (804 lines): appended to the perflogs for the old code,
imported as one more file of the store for the new. The warm report is given detect's JSON, as
ci/nightly.sh's report finds it in the run directory.

Usage: python3 -m bench.postprocess_speed [--lines 1000000] [--keep DIR] [--old REF]
"""
import argparse
import datetime
import os
import shutil
import sys
import tempfile
import time

import numpy as np

from contract import perflog

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = perflog.header(('write_bw', 'read_bw'))
IOS = ['posix:fpp', 'mpiio:independent', 'mpiio:collective', 'hdf5:collective']
RANKS, SIZES = [2, 4, 8, 16, 32], [32, 64]
STRIPES = ['default', 'c1-S1M', 'c4-S1M', 'c4-S4M', 'c8-S4M']
KEYS = [(io, r, s, st) for io in IOS for r in RANKS for s in SIZES for st in STRIPES]
NBYTES = 16777216
START = datetime.datetime(2020, 1, 1, 1, 0)
GIB = 2 ** 30


def write_nights(path, first, count, rng, header):
    """Append ``count`` nights starting at night ``first``; returns the number of lines."""
    os.makedirs(os.path.join(path, 'speed', 'p1'), exist_ok=True)
    out, base_out = ([HEADER] if header else []), ([HEADER] if header else [])
    for night in range(first, first + count):
        day = START + datetime.timedelta(days=night)
        secs = NBYTES / (rng.lognormal(np.log(900), 0.15, (2, 5)) * 2 ** 20)
        base_out.append(_line(day, 'BaselineFio', 'backend=fio,bs=1M,mode=seq,pattern=fio,ranks=1,'
                              'size=64MiB,stripe=default', secs))
        all_secs = NBYTES / (rng.lognormal(np.log(300), 0.15, (len(KEYS), 2, 5)) * 2 ** 20)
        for i, (io, ranks, size, stripe) in enumerate(KEYS):
            backend, mode = io.split(':')
            params = (f'backend={backend},mode={mode},pattern=benchio,ranks={ranks},size={size},'
                      f'stripe={stripe}')
            name = f'BenchIO %size={size} %ranks={ranks} %stripe={stripe} %io={io}'
            out.append(_line(day + datetime.timedelta(seconds=10 * i), name, params, all_secs[i]))
    for name, lines in (('BenchIO.log', out), ('BaselineFio.log', base_out)):
        with open(os.path.join(path, 'speed', 'p1', name), 'a') as fp:
            fp.write('\n'.join(lines) + '\n')
    return count * (len(KEYS) + 1)


def _line(when, name, params, secs):
    reps = ';'.join(f'{p}=' + ','.join(f'{NBYTES}:{float(s)!r}' for s in secs[j])
                    for j, p in enumerate(perflog.PHASES))
    med = [float(np.median(NBYTES / secs[j] / 2 ** 20)) for j in range(2)]
    return (f'{when:%Y-%m-%dT%H:%M:%S}+0000|reframe 4.10.4|{name}|speed|p1|mpi-gnu|{params}|1|pass|'
            f'{reps}|{{"synthetic":true}}|write_bw={med[0]}|MiB/s|0|None|None|'
            f'read_bw={med[1]}|MiB/s|0|None|None')


OLD_REF = '997a64a'          # main with the verdict (issue 44), before the results store


def timed(label, args, old_dir=None):
    """Run ``python -m postprocess ...`` under wait4 (wall, CPU, peak memory); with
    ``old_dir``, the old code unpacked there."""
    argv = [sys.executable] + args
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.chdir(REPO)
        env = dict(os.environ)
        for var in ('IOREGRESS_STORE', 'IOREGRESS_THIS_RUN', 'IOREGRESS_CACHE'):
            env.pop(var, None)
        if old_dir:         # `python -m` imports from its working directory first
            os.chdir(old_dir)
        os.execve(sys.executable, argv, env)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    rss = usage.ru_maxrss * 1024
    print(f'  {label:52s} {wall:7.1f} s wall {cpu:7.1f} s CPU  peak {rss / GIB:5.2f} GiB'
          f'  exit {code}', flush=True)
    return wall, rss, code


def old_code(ref, into):
    """This repository's postprocess/ at ``ref``, unpacked into ``into``."""
    import subprocess
    os.makedirs(into, exist_ok=True)
    archive = subprocess.run(['git', '-C', REPO, 'archive', ref, 'postprocess'], check=True,
                             capture_output=True).stdout
    subprocess.run(['tar', '-x', '-C', into], input=archive, check=True)
    return into


def verdict(label, value, goal, unit='s'):
    ok = value <= goal
    print(f'{label} {value:.1f} {unit} (goal <= {goal:g} {unit}: {"MET" if ok else "NOT MET"})')
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--lines', type=int, default=1000000)
    ap.add_argument('--keep', metavar='DIR', help='work in DIR and keep it (reuses its perflogs)')
    ap.add_argument('--old', default=OLD_REF, metavar='REF', help=f'old code (default {OLD_REF})')
    args = ap.parse_args()
    tmp = args.keep or tempfile.mkdtemp(prefix='ioregress-speed-')
    perflogs, new_nights = os.path.join(tmp, 'perflogs'), os.path.join(tmp, 'new-nights')
    store, cache = os.path.join(tmp, 'store'), os.path.join(tmp, 'cache')
    try:
        nights = max(1, args.lines // (len(KEYS) + 1))
        rng = np.random.default_rng(3)
        t0 = time.perf_counter()
        if not os.path.isdir(perflogs):
            write_nights(perflogs, 0, nights, rng, header=True)
        lines = nights * (len(KEYS) + 1)
        for d in (store, cache, new_nights, os.path.join(tmp, 'old')):
            shutil.rmtree(d, ignore_errors=True)
        old = old_code(args.old, os.path.join(tmp, 'old'))
        work = os.path.join(tmp, 'work')
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(perflogs, os.path.join(work, 'perflogs'))     # the old code appends here
        os.sync()       # the setup's 600 MB out to disk now, not during the first timed step
        print(f'{lines} perflog lines ({len(KEYS)} keys x {nights} nights + baselines; generated '
              f'in {time.perf_counter() - t0:.0f} s, not counted); {os.cpu_count()} CPUs, load '
              f'average {os.getloadavg()[0]:.1f} (machine shared with other work: compare ratios)')
        pp = ['-m', 'postprocess']
        sys_args = ['--system', 'speed']
        new_hist = ['--store', store] + sys_args
        old_hist = ['--perflogs', os.path.join(work, 'perflogs'), '--cache', cache] + sys_args
        out = lambda name: os.path.join(tmp, name)      # noqa: E731
        print('cold:')
        imp = timed('store: import (perflogs -> Parquet)', pp + ['import', '--perflogs', perflogs,
                                                               '--store', store])
        cold = timed('store: report (history + detect + figures + HTML)',
                     pp + ['report'] + new_hist + ['-o', out('report-new')])
        old_cold = timed(f'old {args.old}: report (parse + cache + detect + ...)',
                         pp + ['report'] + old_hist + ['-o', out('report-old')], old)
        added = write_nights(new_nights, nights, 4, np.random.default_rng(4), header=True)
        write_nights(os.path.join(work, 'perflogs'), nights, 4, np.random.default_rng(4),
                     header=False)
        print(f'warm ({added} lines = 4 nights added):')
        timed('store: import of the 4 nights (one more file)',
              pp + ['import', '--perflogs', new_nights, '--store', store])
        det = timed('store: detect', pp + ['detect'] + new_hist + ['--json', out('det-new.json')])
        rep = timed('store: report (reusing detect --json)', pp + ['report'] + new_hist + [
            '-o', out('report-new'), '--findings', out('det-new.json')])
        old_det = timed(f'old {args.old}: detect', pp + ['detect'] + old_hist +
                        ['--json', out('det-old.json')], old)
        old_rep = timed(f'old {args.old}: report (reusing detect --json)', pp + ['report'] +
                        old_hist + ['-o', out('report-old'), '--findings', out('det-old.json')], old)
        warm, old_warm = det[0] + rep[0], old_det[0] + old_rep[0]
        peak = max(r[1] for r in (imp, cold, det, rep))
        print(f'old code: cold report {old_cold[0]:.1f} s, warm detect + report {old_warm:.1f} s, '
              f'peak {max(r[1] for r in (old_cold, old_det, old_rep)) / GIB:.2f} GiB')
        ok = all([verdict('import', imp[0], 20), verdict('cold full report', cold[0], 20),
                  verdict(f'warm detect {det[0]:.1f} s + report {rep[0]:.1f} s =', warm, 3),
                  verdict('peak memory', peak / GIB, 1.5, 'GiB')])
        print(f'ratios (old / store, same run): cold report {old_cold[0] / cold[0]:.1f}x, warm '
              f'{old_warm / warm:.1f}x')
        return 0 if ok and cold[2] == 0 and rep[2] == 0 and imp[2] == 0 else 1
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
