"""Benchmark: 100 000 perflog lines through ingest, detection and the full report (plots + HTML).

Target (issue 7): under 60 s on the 2-core CI VM. Not a test: run by hand and read the figures.

The perflog is SYNTHETIC (written to a temporary directory in the contract layout of
configs/settings.py): 200 keys (4 backend/modes x 5 rank counts x 2 sizes x 5 stripes) x 500
nights, 5 repetitions per phase, plus a fio baseline line per night.

Usage: python bench/postprocess_speed.py [--lines 100000] [--keep DIR]
"""
import argparse
import datetime
import os
import shutil
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from postprocess.cli import main as cli_main  # noqa: E402
from postprocess.detect.series import detect  # noqa: E402
from postprocess.history.store import History  # noqa: E402
from postprocess.history.perflog import read_perflogs  # noqa: E402

FIXED = ('job_completion_time|reframe version|name|system|partition|environ|iob_params|jobid|'
         'result|iob_reps|iob_provenance')
PERF = '|'.join(f'{v}_var={v}_value|{v}_unit|{v}_ref|{v}_lower_thres|{v}_upper_thres'
                for v in ('write_bw', 'read_bw'))
IOS = ['posix:fpp', 'mpiio:independent', 'mpiio:collective', 'hdf5:collective']
RANKS, SIZES = [2, 4, 8, 16, 32], [32, 64]
STRIPES = ['default', 'c1-S1M', 'c4-S1M', 'c4-S4M', 'c8-S4M']
NBYTES = 16777216


def write_history(path, lines):
    keys = [(io, r, s, st) for io in IOS for r in RANKS for s in SIZES for st in STRIPES]
    nights = max(1, lines // (len(keys) + 1))
    rng = np.random.default_rng(3)
    start = datetime.datetime(2025, 1, 1, 1, 0)
    out, count = [f'{FIXED}|{PERF}'], 0
    base_out = [f'{FIXED}|{PERF}']
    for night in range(nights):
        day = start + datetime.timedelta(days=night)
        secs = NBYTES / (rng.lognormal(np.log(900), 0.15, (2, 5)) * 2 ** 20)
        base_out.append(_line(day, 'BaselineFio', 'backend=fio,bs=1M,mode=seq,pattern=fio,ranks=1,'
                              'size=64MiB,stripe=default', secs))
        all_secs = NBYTES / (rng.lognormal(np.log(300), 0.15, (len(keys), 2, 5)) * 2 ** 20)
        for i, (io, ranks, size, stripe) in enumerate(keys):
            backend, mode = io.split(':')
            params = (f'backend={backend},mode={mode},pattern=benchio,ranks={ranks},size={size},'
                      f'stripe={stripe}')
            name = f'BenchIO %size={size} %ranks={ranks} %stripe={stripe} %io={io}'
            out.append(_line(day + datetime.timedelta(seconds=10 * i), name, params, all_secs[i]))
            count += 1
    os.makedirs(os.path.join(path, 'speed', 'p1'), exist_ok=True)
    with open(os.path.join(path, 'speed', 'p1', 'BenchIO.log'), 'w') as fp:
        fp.write('\n'.join(out) + '\n')
    with open(os.path.join(path, 'speed', 'p1', 'BaselineFio.log'), 'w') as fp:
        fp.write('\n'.join(base_out) + '\n')
    return count + nights, nights, len(keys)


def _line(when, name, params, secs):
    reps = ';'.join(f'{p}=' + ','.join(f'{NBYTES}:{float(s)!r}' for s in secs[j])
                    for j, p in enumerate(('write', 'read')))
    med = [float(np.median(NBYTES / secs[j] / 2 ** 20)) for j in range(2)]
    return (f'{when:%Y-%m-%dT%H:%M:%S}+0000|reframe 4.10.4|{name}|speed|p1|mpi-gnu|{params}|1|pass|'
            f'{reps}|{{"synthetic":true}}|write_bw={med[0]}|MiB/s|0|None|None|'
            f'read_bw={med[1]}|MiB/s|0|None|None')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--lines', type=int, default=100000)
    ap.add_argument('--keep', metavar='DIR', help='write into DIR and keep it')
    args = ap.parse_args()
    tmp = args.keep or tempfile.mkdtemp(prefix='ioregress-speed-')
    try:
        t0 = time.perf_counter()
        lines, nights, keys = write_history(tmp, args.lines)
        print(f'generated {lines} perflog lines ({keys} keys x {nights} nights + baselines) '
              f'in {time.perf_counter() - t0:.1f} s (not counted)')
        t0 = time.perf_counter()
        runs, diag = read_perflogs(tmp)
        t1 = time.perf_counter()
        hist = History(runs)
        t2 = time.perf_counter()
        latest = detect(hist, latest_only=True)
        t3 = time.perf_counter()
        print(f'  parse {t1 - t0:5.1f} s   tidy table ({len(hist)} rows) {t2 - t1:5.1f} s   '
              f'detect latest nights ({len(latest)} series) {t3 - t2:5.1f} s')
        t0, c0 = time.perf_counter(), time.process_time()
        status = cli_main(['report', '--perflogs', tmp, '-o', os.path.join(tmp, 'report')])
        total, cpu = time.perf_counter() - t0, time.process_time() - c0
        figs = len(os.listdir(os.path.join(tmp, 'report', 'figures')))
        # CPU time too: on a shared machine wall time includes other people's load.
        print(f'full `python -m postprocess report` (ingest + detect + {figs} figures + HTML): '
              f'{total:.1f} s wall, {cpu:.1f} s CPU, load average {os.getloadavg()[0]:.1f}  '
              f'-> target < 60 s: {"MET" if total < 60 else "NOT MET"}')
        return 0 if status == 0 and total < 60 else 1
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
