"""How long darshan-index takes for a nightly of N logs (benchmark, not a test).

    python3 -m bench.darshan_index_speed [N=400] [--summaries flagged|all|none] [--fail-every K=20]
                                        [--iobench-only] [--copies] [--jobs J]

Goal (issue #13): a 400-log nightly indexed with Drishti insights for every log and PyDarshan
summaries for the flagged and failed ones in <= 5 min on 2 cores; a warm rerun <= 5 s.

Builds a tree of N logs in a temp dir from the logs shipped in the PyDarshan wheel and the real
iobench captures in tests/fixtures/darshan (each in its own ReFrame-like output directory, the
iobench ones with their result.json). Every copy gets a few bytes appended (Darshan readers ignore
bytes after the last region) so every log is new, as in a night of fresh runs; ``--copies`` keeps
them identical (the cache then computes each distinct log once). After every K-th log the next
MPI-IO run claims the other mode in its result.json, so its Darshan checks fail as a flagged run's
would: 1 log in 20 by default. Then times a cold build and a warm (cached) rebuild.
"""
import argparse
import os
import pathlib
import shutil
import tempfile
import time

from postprocess.darshan import index as darshan_index

REPO = pathlib.Path(__file__).resolve().parents[1]


def sources(iobench_only=False):
    import darshan
    wheel = pathlib.Path(darshan.__file__).parent
    logs = [] if iobench_only else sorted((wheel / 'examples' / 'example_logs').glob('*.darshan'))
    logs += [] if iobench_only else sorted((wheel / 'tests' / 'input').glob('*.darshan'))
    fix = REPO / 'tests' / 'fixtures' / 'darshan'
    return [(p, None) for p in logs] + [(p, p.with_suffix('.json')) for p in sorted(fix.glob('iobench-*.darshan'))]


def make_tree(root, n, unique, fail_every, iobench_only):
    src, pending = sources(iobench_only), 0
    for i in range(n):
        log, result = src[i % len(src)]
        pending += bool(fail_every) and i % fail_every == 0
        d = root / 'output' / 'local' / 'default' / 'mpi-gnu' / f'Run{i:04d}'
        d.mkdir(parents=True)
        shutil.copyfile(log, d / 'iobench.darshan')
        if unique:
            with open(d / 'iobench.darshan', 'ab') as fp:
                fp.write(f'copy{i:08d}'.encode())
        if result:
            doc = result.read_text()
            if pending and 'mpiio-' in log.name:   # the next MPI-IO run after every K-th log
                pending -= 1
                swap = ('"mode":"collective"', '"mode":"independent"')
                doc = doc.replace(*swap) if swap[0] in doc else doc.replace(*reversed(swap))
            (d / 'result.json').write_text(doc)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('n', nargs='?', type=int, default=400)
    ap.add_argument('--summaries', choices=darshan_index.SUMMARY_MODES, default='flagged')
    ap.add_argument('--fail-every', type=int, default=20)
    ap.add_argument('--copies', action='store_true')
    ap.add_argument('--iobench-only', action='store_true',
                    help='only the iobench captures (a site nightly); default mixes in the wheel logs, '
                         'some of them large (sample-badost: 1000 files)')
    ap.add_argument('--jobs', type=int, default=None)
    args = ap.parse_args()
    jobs = args.jobs or os.cpu_count()
    print(f'darshan-index on {args.n} {"iobench " if args.iobench_only else ""}logs, jobs={jobs}, '
          f'summaries={args.summaries} '
          f'(machine shared with other work: read the figures as rough, compare ratios)')
    with tempfile.TemporaryDirectory(prefix='darshan-index-bench-') as tmp:
        root, out = pathlib.Path(tmp) / 'results', pathlib.Path(tmp) / 'site'
        make_tree(root, args.n, not args.copies, args.fail_every, args.iobench_only)
        for label in ('cold', 'warm'):
            t0 = time.time()
            cpu0 = os.times()
            rows, _ = darshan_index.build_index(
                str(root), str(out), jobs=jobs, summaries=args.summaries,
                progress=lambda m: print(f'  {time.time() - t0:6.1f} s  {m}'))
            secs = time.time() - t0
            cpu1 = os.times()
            cpu = sum(cpu1[:4]) - sum(cpu0[:4])   # this process and its children
            distinct = len({r['sha'] for r in rows})
            flagged = sum(1 for r in rows if r['verdict'] == 'fail' or r.get('reframe_result') == 'fail')
            insights = sum(1 for r in rows if r['insights'])
            summaries = sum(1 for r in rows if r['summary'])
            print(f'{label}: {len(rows)} logs ({distinct} distinct, {flagged} flagged/failed) in {secs:.1f} s '
                  f'wall, {cpu:.0f} s CPU ({secs / len(rows) * 1000:.0f} ms/log); Drishti insights for '
                  f'{insights}, summaries linked for {summaries}')
        goal_cold, goal_warm = 300, 5
        print(f'goal: cold <= {goal_cold} s, warm <= {goal_warm} s (400 logs, 2 cores)')


if __name__ == '__main__':
    main()
