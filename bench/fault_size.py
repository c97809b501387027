"""What the replay's faults do to the measurements, side by side: iobench runs with no fault and
with a fault (bench/nights.py FAULTS, bench/iofault.c) alternate, and the median ratio of the
faulted phase time to the clean one is printed per phase (1.25: the phase took 25 % longer, a rate
or bandwidth -20 %).

tests/test_iofault.py asserts what a fault charges; this measures what the phases took. They
differ where a delay is absorbed: a create's delay slept after the call fills the time the other
rank waits for the directory's lock anyway (docs/replays-runs16-21.md, run 19), a write's the time
the other rank's data have the disk to themselves (docs/replays-runs22.md); both pay in kind now.

    python bench/fault_size.py                       # meta on MDEmptyFiles' shape, 6 pairs
    python bench/fault_size.py --fault read --rounds 4
    python bench/fault_size.py --lib OLD.so          # another build of the library
    python bench/fault_size.py --fault write --backend hdf5 --mode independent
    python bench/fault_size.py --fault hdf5 --backend hdf5 --mode collective --factor 0.4
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nights  # noqa: E402  (bench/nights.py)

# (iobench arguments, the phases to time: name -> seconds of one repetition)
SHAPES = {
    'meta': (['--pattern', 'mdfiles', '--size', '5000', '--param', 'filesize=0'],   # MDEmptyFiles
             {'create': lambda r: r['metadata']['create']['total_s'],
              'open+close': lambda r: r['metadata']['read']['total_s']}),
    'write': (['--pattern', 'benchio', '--size', '256'],                 # the quick BenchIO
              {'write': lambda r: r['write']['total_s']}),
    'read': (['--pattern', 'benchio', '--size', '256'],
             {'read': lambda r: r['read']['total_s']}),
}
SHAPES['hdf5'] = SHAPES['write']       # the write fault on HDF5 files only: --backend hdf5


def phase_times(iobench, scratch, args, timed, env, backend='posix', mode='fpp'):
    with tempfile.TemporaryDirectory(dir=scratch) as d:
        out = Path(d) / 'r.json'
        subprocess.run(['mpirun', '--oversubscribe', '-np', '2']
                       + [a for k, v in env.items() for a in ('-x', f'{k}={v}')]
                       + [iobench, '--backend', backend, '--mode', mode, '--dir', d,
                          '--phase', 'both', '--repeat', '5', '--quiet', '--json', str(out)]
                       + args, check=True)
        reps = json.loads(out.read_text())['repetitions']
        return {name: statistics.median(f(r) for r in reps) for name, f in timed.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--fault', choices=sorted(SHAPES), default='meta')
    ap.add_argument('--rounds', type=int, default=6, help='clean/faulted pairs (default 6)')
    ap.add_argument('--lib', help='a built fault library (default: build bench/iofault.c)')
    ap.add_argument('--backend', default='posix', help="iobench's backend (default posix)")
    ap.add_argument('--mode', default='fpp', help="the backend's mode (default fpp)")
    ap.add_argument('--factor', help="IOFAULT_FACTOR instead of the replay's (bench/nights.py)")
    ap.add_argument('--iobench', default=str(nights.REPO / 'build' / 'iobench'))
    ap.add_argument('--scratch', default=tempfile.gettempdir(), help='where the files go')
    a = ap.parse_args(argv)
    os.environ.update(OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1')
    with tempfile.TemporaryDirectory() as tmp:
        lib = a.lib or str(nights.build_fault_lib(Path(tmp)))
        args, timed = SHAPES[a.fault]
        fault_env = dict(nights.FAULTS[a.fault], LD_PRELOAD=lib)
        if a.factor:
            fault_env['IOFAULT_FACTOR'] = a.factor
        ratios = {name: [] for name in timed}
        for _ in range(a.rounds):           # alternating: the machine's drift hits both sides
            clean = phase_times(a.iobench, a.scratch, args, timed, {}, a.backend, a.mode)
            slow = phase_times(a.iobench, a.scratch, args, timed, fault_env, a.backend, a.mode)
            for name in timed:
                ratios[name].append(slow[name] / clean[name])
    for name, rs in ratios.items():
        print(f"{a.fault} fault, {a.backend}/{a.mode} {name} phase time x{statistics.median(rs):.2f} "
              f"(pairs {' '.join(f'{r:.2f}' for r in rs)})")


if __name__ == '__main__':
    main()
