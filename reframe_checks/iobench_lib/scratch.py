"""Scratch hygiene: the marker file in every run directory, and the sweep that removes run
directories a killed job left behind.

Every iobench run directory gets MARKER right after `mkdir` (base.py's prerun), before any data;
postrun lists what is left in it (LEFTOVER, for sanity) and removes the directory. A job killed
at its time limit never reaches postrun, so ci/nightly.sh starts with the sweep:

    python3 reframe_checks/iobench_lib/scratch.py --older-than-hours 12 ROOT...

removes each directory under ROOT (up to MAX_DEPTH levels down: scratch roots and the stage
trees of earlier runs) that holds MARKER with our signature and whose marker is older than the
bound (a nightly still running keeps its directories). ADIOS2 `.bp` directories and whatever
else is inside go with it; nothing without the marker is ever touched. Standard library only:
no ReFrame import, so the nightly runs it before ReFrame starts.
"""
import argparse
import os
import shutil
import sys
import time

MARKER = '.ioregress-run'
SIGNATURE = 'ioregress run directory'
LEFTOVER = 'run-dir-leftover.txt'
MAX_DEPTH = 8


def marker_text(test_name):
    return f'{SIGNATURE}: {test_name}; removed by postrun or by the next nightly sweep'


def _is_ours(marker):
    try:
        with open(marker, errors='replace') as fp:
            return fp.read(len(SIGNATURE)) == SIGNATURE
    except OSError:
        return False


def sweep(roots, older_than_s, now=None, dry_run=False):
    """Remove marked run directories older than `older_than_s` under `roots`; returns
    (removed, kept_young) lists of paths. A root that does not exist is skipped."""
    now = time.time() if now is None else now
    removed, young = [], []
    for root in dict.fromkeys(os.path.abspath(r) for r in roots):   # partitions share scratch
        base_depth = root.rstrip(os.sep).count(os.sep)
        for dirpath, dirnames, filenames in os.walk(root):
            marker = os.path.join(dirpath, MARKER)
            if MARKER in filenames and _is_ours(marker):
                dirnames[:] = []                  # the whole directory is one run's: no descent
                try:
                    age = now - os.lstat(marker).st_mtime
                except OSError:
                    continue
                if age < older_than_s:
                    young.append(dirpath)
                    continue
                if not dry_run:
                    shutil.rmtree(dirpath, ignore_errors=True)
                removed.append(dirpath)
            elif dirpath.count(os.sep) - base_depth >= MAX_DEPTH:
                dirnames[:] = []
            else:
                dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
    return removed, young


def main(argv=None):
    ap = argparse.ArgumentParser(description='Remove ioregress run directories (marked with '
                                 f'{MARKER}) older than a bound.')
    ap.add_argument('--older-than-hours', type=float, required=True)
    ap.add_argument('--dry-run', action='store_true')
    ap.add_argument('roots', nargs='*')
    args = ap.parse_args(argv)
    if args.older_than_hours < 0:
        print(f'scratch sweep: error: bad --older-than-hours {args.older_than_hours} (>= 0)',
              file=sys.stderr)
        return 2
    removed, young = sweep([r for r in args.roots if r], args.older_than_hours * 3600,
                           dry_run=args.dry_run)
    for path in removed:
        print(f'scratch sweep: {"would remove" if args.dry_run else "removed"} {path}')
    print(f'scratch sweep: {len(removed)} run director{"y" if len(removed) == 1 else "ies"} '
          f'older than {args.older_than_hours:g} h removed, {len(young)} younger kept '
          f'({" ".join(args.roots) or "no roots"})')
    return 0


if __name__ == '__main__':
    sys.exit(main())
