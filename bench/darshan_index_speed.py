"""How long darshan-index takes for a results tree of N logs (benchmark, not a test).

    python bench/darshan_index_speed.py [N=200] [--unique] [--no-summaries] [--jobs J]

Builds a tree of N logs in a temp dir from the logs shipped in the PyDarshan wheel and the real
iobench captures in tests/fixtures/darshan (each in its own ReFrame-like output directory, the
iobench ones with their result.json), then times a cold build and a warm (cached) rebuild.
Copies share a checksum, so the cache computes each distinct log once; ``--unique`` appends a few
bytes to every copy (Darshan readers ignore bytes after the last region) so every log is new and
the cold build shows the per-log cost of a night of fresh runs.
"""
import argparse
import os
import pathlib
import shutil
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from postprocess.darshan import index as darshan_index  # noqa: E402


def sources():
    import darshan
    wheel = pathlib.Path(darshan.__file__).parent
    logs = sorted((wheel / 'examples' / 'example_logs').glob('*.darshan'))
    logs += sorted((wheel / 'tests' / 'input').glob('*.darshan'))
    fix = REPO / 'tests' / 'fixtures' / 'darshan'
    return [(p, None) for p in logs] + [(p, p.with_suffix('.json')) for p in sorted(fix.glob('iobench-*.darshan'))]


def make_tree(root, n, unique):
    src = sources()
    for i in range(n):
        log, result = src[i % len(src)]
        d = root / 'output' / 'local' / 'default' / 'mpi-gnu' / f'Run{i:04d}'
        d.mkdir(parents=True)
        shutil.copyfile(log, d / 'iobench.darshan')
        if unique:
            with open(d / 'iobench.darshan', 'ab') as fp:
                fp.write(f'copy{i:08d}'.encode())
        if result:
            shutil.copyfile(result, d / 'result.json')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('n', nargs='?', type=int, default=200)
    ap.add_argument('--unique', action='store_true')
    ap.add_argument('--no-summaries', action='store_true')
    ap.add_argument('--jobs', type=int, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix='darshan-index-bench-') as tmp:
        root, out = pathlib.Path(tmp) / 'results', pathlib.Path(tmp) / 'site'
        make_tree(root, args.n, args.unique)
        for label in ('cold', 'warm'):
            t0 = time.time()
            rows, _ = darshan_index.build_index(str(root), str(out), jobs=args.jobs,
                                                summaries=not args.no_summaries)
            secs = time.time() - t0
            distinct = len({r['sha'] for r in rows})
            print(f'{label}: {len(rows)} logs ({distinct} distinct) in {secs:.1f} s '
                  f'({secs / len(rows) * 1000:.0f} ms/log), jobs={args.jobs or os.cpu_count()}, '
                  f'summaries={"off" if args.no_summaries else "on"}')


if __name__ == '__main__':
    main()
