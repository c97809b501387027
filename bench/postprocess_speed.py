"""Benchmark: years of perflog history through the nightly postprocess, cold and warm.

Goals (issue 14), on the 2-core machine: 10^6 perflog lines -> cold full report <= 120 s; warm
nightly postprocess (detect + report after one night's ~800 new lines, incremental ingest cache)
<= 10 s; peak memory <= 4 GiB. Not a test: run by hand and read the figures.

Every step runs as its own `python -m postprocess` process (as ci/nightly.sh runs them), timed by
wall clock and CPU, with its peak resident memory (wait4). Ingest alone (perflogs -> History) is
timed the same way, so the figures say which part dominates.

The perflog is SYNTHETIC (contract layout of configs/settings.py): 200 keys (4 backend/modes x 5 rank
counts x 2 sizes x 5 stripes) x N nights, 5 repetitions per phase, plus a fio baseline line per
night; the warm step appends 4 more nights (804 lines). The warm report is given detect's JSON, as
ci/nightly.sh's report finds it in the run directory.

Usage: python3 -m bench.postprocess_speed [--lines 1000000] [--keep DIR]
"""
import argparse
import datetime
import os
import shutil
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXED = ('job_completion_time|reframe version|name|system|partition|environ|iob_params|jobid|'
         'result|iob_reps|iob_provenance')
PERF = '|'.join(f'{v}_var={v}_value|{v}_unit|{v}_ref|{v}_lower_thres|{v}_upper_thres'
                for v in ('write_bw', 'read_bw'))
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
    out, base_out = ([f'{FIXED}|{PERF}'] if header else []), ([f'{FIXED}|{PERF}'] if header else [])
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
                    for j, p in enumerate(('write', 'read')))
    med = [float(np.median(NBYTES / secs[j] / 2 ** 20)) for j in range(2)]
    return (f'{when:%Y-%m-%dT%H:%M:%S}+0000|reframe 4.10.4|{name}|speed|p1|mpi-gnu|{params}|1|pass|'
            f'{reps}|{{"synthetic":true}}|write_bw={med[0]}|MiB/s|0|None|None|'
            f'read_bw={med[1]}|MiB/s|0|None|None')


INGEST = ('import sys; from postprocess.cli import build_parser; from postprocess.history import '
          'inputs; n = int(sys.argv.pop(1)) or None; '
          'a = build_parser().parse_args(["detect"] + sys.argv[1:]); '
          'h = inputs.load_history(a, last_nights=n); print(len(h), "repetition rows")')
# verdict --confirm-perflogs: the history the re-run is judged against, as run records
CONFIRM = ('import sys; from postprocess.cli import build_parser; from postprocess.history import '
           'inputs; from postprocess.detect.options import DEFAULTS; '
           'a = build_parser().parse_args(["detect"] + sys.argv[1:]); '
           'runs = list(inputs.load_history(a, last_nights=DEFAULTS["horizon"]).runs); '
           'print(len(runs), "run records")')
REPORT_NIGHTS = 120     # report --history-nights default: what a report with findings loads


def timed(label, args):
    """Run ``python -m postprocess ...`` (or the ingest probe) under /usr/bin/time-like wait4."""
    argv = [sys.executable] + args
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.chdir(REPO)
        os.execv(sys.executable, argv)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    rss = usage.ru_maxrss * 1024
    print(f'  {label:44s} {wall:7.1f} s wall {cpu:7.1f} s CPU  peak {rss / GIB:5.2f} GiB'
          f'  exit {code}', flush=True)
    return wall, rss, code


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--lines', type=int, default=1000000)
    ap.add_argument('--keep', metavar='DIR', help='work in DIR and keep it (reuses its perflogs)')
    args = ap.parse_args()
    tmp = args.keep or tempfile.mkdtemp(prefix='ioregress-speed-')
    perflogs, cache = os.path.join(tmp, 'perflogs'), os.path.join(tmp, 'cache')
    try:
        nights = max(1, args.lines // (len(KEYS) + 1))
        rng = np.random.default_rng(3)
        t0 = time.perf_counter()
        if not os.path.isdir(perflogs):
            write_nights(perflogs, 0, nights, rng, header=True)
        lines = nights * (len(KEYS) + 1)
        shutil.rmtree(cache, ignore_errors=True)
        print(f'{lines} perflog lines ({len(KEYS)} keys x {nights} nights + baselines; generated '
              f'in {time.perf_counter() - t0:.0f} s, not counted); {os.cpu_count()} CPUs, load '
              f'average {os.getloadavg()[0]:.1f} (machine shared with other work: compare ratios)')
        pp = ['-m', 'postprocess']
        hist = ['--perflogs', perflogs, '--system', 'speed', '--cache', cache]
        print('cold (no cache):')
        ingest_cold = timed('ingest -> History (writes the cache)', ['-c', INGEST, '0'] + hist)
        shutil.rmtree(cache, ignore_errors=True)
        cold = timed('report (ingest + detect + figures + HTML)',
                     pp + ['report'] + hist + ['-o', os.path.join(tmp, 'report')])
        added = write_nights(perflogs, nights, 4, np.random.default_rng(4), header=False)
        print(f'warm (cache present, {added} lines appended = 4 nights):')
        ingest_warm = timed('ingest -> History (whole history)', ['-c', INGEST, '0'] + hist)
        ingest_window = timed(f'ingest -> History (last {REPORT_NIGHTS} nights)',
                              ['-c', INGEST, str(REPORT_NIGHTS)] + hist)
        det = timed('detect', pp + ['detect'] + hist + ['--json', os.path.join(tmp, 'det.json')])
        conf = timed('verdict: history for a confirmation re-run', ['-c', CONFIRM] + hist)
        # as ci/nightly.sh: its report finds detect's JSON in the run (report --run) and reuses it
        rep = timed('report (reusing detect --json)', pp + ['report'] + hist + [
            '-o', os.path.join(tmp, 'report'), '--findings', os.path.join(tmp, 'det.json')])
        warm = det[0] + rep[0]
        peak = max(r[1] for r in (ingest_cold, cold, ingest_warm, det, conf, rep))
        print(f'cold full report {cold[0]:.1f} s (goal <= 120 s: {"MET" if cold[0] <= 120 else "NOT MET"}); '
              f'warm detect + report {warm:.1f} s (goal <= 10 s: {"MET" if warm <= 10 else "NOT MET"}); '
              f'peak memory {peak / GIB:.2f} GiB (goal <= 4 GiB: {"MET" if peak <= 4 * GIB else "NOT MET"})')
        print(f'ingest share: cold {ingest_cold[0] / cold[0]:.0%} of the report; warm, detect and '
              f'report each load only their nights ({ingest_window[0]:.1f} s for {REPORT_NIGHTS}; '
              f'the whole history would take {ingest_warm[0]:.1f} s)')
        ok = cold[0] <= 120 and warm <= 10 and peak <= 4 * GIB and cold[2] == 0 and rep[2] == 0
        return 0 if ok else 1
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
