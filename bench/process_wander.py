"""How much a check's figure moves from one iobench process to the next, against how much it moves
from one round (a night's worth) of processes to the next: the figure behind a check's
`processes` (reframe_checks/iobench_lib/processes.py; MDEmptyFiles runs 8).

Each round launches --processes iobench runs back to back, each in its own new directory under
--dir (as a nightly's run directory is), then sleeps --gap seconds. Per phase it prints the sd (of
log) of a process's median between processes of one round, the sd of the round's own level
(variance components: what more processes cannot average away) and the sd of a round's mean of
P processes: the wander a night's measurement would have with `processes = P`.

    python bench/process_wander.py --dir /mnt/jprobe --rounds 8 --processes 4
    python bench/process_wander.py --dir /lustre/scratch/me -- --pattern benchio --size 64

After `--`: iobench's own options (default MDEmptyFiles' shape: posix fpp mdfiles, 5000 empty
files per rank, 5 repetitions). Needs an iobench build (--iobench, default build/iobench).
"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / 'reframe_checks'))
from iobench_lib.results import MD_PHASE  # noqa: E402  (the metadata phase a phase times)

MDEMPTY = ['--backend', 'posix', '--mode', 'fpp', '--pattern', 'mdfiles', '--size', '5000',
           '--param', 'filesize=0', '--repeat', '5']


def level(doc, phase):
    """A run's figure of one phase: the median over its repetitions of ops/s (metadata) or MiB/s."""
    vals = [r['metadata'][MD_PHASE[phase]]['ops_per_s'] if 'metadata' in r else r[phase]['bw_MiBps']
            for r in doc['repetitions'] if r.get(phase)]
    return statistics.median(vals)


def components(table):
    """(process sd, round sd, sd of a round's mean) of log figures, table[round][process]."""
    logs = [[math.log(v) for v in row] for row in table]
    p = len(logs[0])
    within = statistics.mean(statistics.variance(row) for row in logs)
    means = [statistics.mean(row) for row in logs]
    between = max(statistics.variance(means) - within / p, 0.0)
    return math.sqrt(within), math.sqrt(between), statistics.stdev(means)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--dir', required=True, help='where the runs write (the filesystem to judge)')
    ap.add_argument('--rounds', type=int, default=8)
    ap.add_argument('--processes', type=int, default=4)
    ap.add_argument('--ranks', type=int, default=2)
    ap.add_argument('--gap', type=float, default=20.0, help='seconds between rounds')
    ap.add_argument('--iobench', default=str(REPO / 'build' / 'iobench'))
    ap.add_argument('--mpirun', default='mpirun --oversubscribe')
    ap.add_argument('iobench_args', nargs='*', help='after --: iobench options')
    a = ap.parse_args(argv)
    for name in ('rounds', 'processes'):
        if getattr(a, name) < 2:
            ap.error(f'--{name} must be at least 2: {getattr(a, name)}')
    if not os.path.isdir(a.dir):
        ap.error(f'--dir is not a directory: {a.dir}')
    if not os.access(a.iobench, os.X_OK):
        ap.error(f'--iobench is not an executable: {a.iobench}')
    args = a.iobench_args or MDEMPTY
    table = {'write': [], 'read': []}
    work = tempfile.mkdtemp(prefix='wander-')
    for r in range(a.rounds):
        row = {'write': [], 'read': []}
        for p in range(a.processes):
            run_dir = tempfile.mkdtemp(prefix=f'ioregress-wander-{r}-{p}-', dir=a.dir)
            out = os.path.join(work, f'r{r}p{p}.json')
            cmd = a.mpirun.split() + ['-np', str(a.ranks), a.iobench] + args + [
                '--dir', run_dir, '--phase', 'both', '--verify', '--json', out]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            shutil.rmtree(run_dir, ignore_errors=True)
            if proc.returncode != 0:
                sys.exit(f'process_wander: iobench failed (exit {proc.returncode}): '
                         f'{proc.stderr.strip().splitlines()[-1:]}')
            with open(out) as fp:
                doc = json.load(fp)
            for phase in row:
                row[phase].append(level(doc, phase))
        for phase in row:
            table[phase].append(row[phase])
        print(f'round {r + 1}: ' + '  '.join(f'{ph} ' + ' '.join(f'{v:.4g}' for v in row[ph])
                                           for ph in row), flush=True)
        if r + 1 < a.rounds:
            time.sleep(a.gap)
    shutil.rmtree(work, ignore_errors=True)
    print(f'\n{a.rounds} rounds x {a.processes} processes, {" ".join(args)}')
    print('| phase | between processes (sd) | between rounds (sd) | a round\'s mean of '
          f'{a.processes} (sd) |\n|---|---|---|---|')
    for phase, rows in table.items():
        proc_sd, round_sd, mean_sd = components(rows)
        print(f'| {phase} | {proc_sd:.3f} | {round_sd:.3f} | {mean_sd:.3f} |')


if __name__ == '__main__':
    main()
