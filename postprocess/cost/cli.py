"""``cost``: what a night of the suite asks of a site, per partition, from ReFrame's own listing.

    python -m postprocess cost --system NAME [--tag nightly] [--config FILE] [--results DIR] \\
                               [--confirm-repeat N] [--json FILE] [-- REFRAME_ARGS...]
"""
import os

import ioregress_env
from postprocess.common.errors import UsageError
from postprocess.cost.reframe_jobs import REPO


def register(subparsers):
    from postprocess.cost.estimate import KNOBS
    knobs = '; '.join(f'{k}: {v} ({where})' for k, v, where in KNOBS)
    p = subparsers.add_parser(
        'cost', help="what a night costs a site: jobs, node-hours, wall time, scratch, the "
                     "confirmation re-run, results growth (per partition, from ReFrame's listing)",
        description='Per partition of SYSTEM, from `reframe -lC` and `--describe` of the suite: '
                    'jobs, node-hours at the time limits, a wall-time bound, peak scratch, the '
                    'confirmation re-run, store rows per night. Knobs: ' + knobs)
    p.add_argument('--system', required=True, help='a system of the configuration (configs/systems/)')
    p.add_argument('--tag', default='nightly', choices=['quick', 'nightly'],
                   help='the suite ci/nightly.sh runs (default: nightly)')
    p.add_argument('--config', metavar='FILE', default=ioregress_env.get('IOREGRESS_CONFIG')
                   or os.path.join(REPO, 'configs', 'settings.py'),
                   help="ReFrame configuration (default: configs/settings.py, every "
                        "configs/systems/*.py; a site's file there is a system like the others)")
    p.add_argument('--results', metavar='DIR',
                   help="a results tree: also its latest completed night's real figures")
    p.add_argument('--confirm-repeat', type=int, metavar='N',
                   default=int(ioregress_env.get('IOREGRESS_CONFIRM_REPEAT')),
                   help='repetitions a confirmation re-run gathers (default: '
                        '$IOREGRESS_CONFIRM_REPEAT, else 10 as ci/nightly.sh; 0: none)')
    p.add_argument('--bandwidth', type=float, default=10.0, metavar='GIB_S',
                   help='file-system bandwidth the suite gets, for the expected wall time '
                        '(default: 10 GiB/s)')
    p.add_argument('--job-overhead', type=float, default=60.0, metavar='SECONDS',
                   help="a job's start, launch and cache defeat, for the expected wall time "
                        "(default: 60)")
    p.add_argument('--json', metavar='FILE', help='also write the figures as JSON')
    p.add_argument('reframe_args', nargs='*', metavar='-- REFRAME_ARGS',
                   help="more ReFrame options, as after nightly.sh's -- (e.g. -S time_limit=1h)")
    p.set_defaults(func=run)


def run(args):
    from postprocess.common.names import check_name
    from postprocess.cost import estimate, reframe_jobs
    check_name('system', args.system)
    if not os.path.isfile(args.config):
        raise UsageError(f"no ReFrame configuration file '{args.config}'")
    if args.confirm_repeat < 0:
        raise UsageError(f"--confirm-repeat must be 0 or more '{args.confirm_repeat}'")
    if not args.bandwidth > 0 or args.job_overhead < 0:
        raise UsageError(f"--bandwidth must be > 0 and --job-overhead >= 0 "
                         f"'{args.bandwidth}', '{args.job_overhead}'")
    if args.results and not os.path.isdir(args.results):
        raise UsageError(f"no results tree '{args.results}'")
    jobs, parts = reframe_jobs.jobs(os.path.abspath(args.config), args.system, args.tag,
                                    extra=args.reframe_args)
    rows = estimate.per_partition(jobs, parts, args.confirm_repeat, args.bandwidth,
                                  args.job_overhead)
    real = estimate.measured(args.results, args.system) if args.results else None
    print(f'{args.system}, {args.tag} suite (ReFrame -lC/--describe; node-hours and wall time '
          f'at the time limits: the most a night takes):')
    from postprocess.detect.verdict import MAX_GROUP_RERUN
    head = ('partition', 'jobs', 'nodes≤', 'node-h≤', 'wall≤', 'wall~', 'scratch≤', 'rows',
            f'confirm 1/{MAX_GROUP_RERUN} node-h≤')
    table = [head] + [(r['partition'], str(r['jobs']), str(r['largest_job_nodes']),
                       f"{r['node_hours']:.1f}", _hours(r['wall_s']), _hours(r['expected_wall_s']),
                       _size(r['scratch_bytes']),
                       str(r['rows']), f"{r['confirm_one_node_hours']:.1f}/"
                                       f"{r['confirm_group_node_hours']:.1f}") for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    for row in table:
        print('  ' + '  '.join(c.ljust(w) if i == 0 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(row, widths))))
    total = sum(r['node_hours'] for r in rows)
    wall = max(r['wall_s'] for r in rows)
    expected = max(r['expected_wall_s'] for r in rows)
    print(f'  all: {len(jobs)} jobs, {total:.1f} node-hours, wall time ≤ {_hours(wall)}, '
          f'expected {_hours(expected)} at {args.bandwidth:g} GiB/s and {args.job_overhead:g} s '
          f'a job (partitions side by side, no queue wait)')
    if expected > 8 * 3600:
        print("  note: over the GitLab job's 8 h limit (ci/gitlab-ci.yml timeout): raise it or "
              "split the suite by --name")
    if real:
        print(f"  measured, {real['run']}: wall {_hours(real['wall_s'] or 0)}, jobs' run time "
              f"{real['job_s'] / 3600:.2f} h, store {_size(real['store_bytes_per_night'] or 0)} "
              f"a night, run directory {_size(real['run_dir_bytes'])}")
    print('  knobs: ' + '; '.join(f'{k}: {v} ({w})' for k, v, w in estimate.KNOBS))
    if args.json:
        import json
        from postprocess.common.atomic import write_text
        write_text(args.json, json.dumps({'system': args.system, 'tag': args.tag,
                                          'partitions': rows, 'node_hours': total,
                                          'jobs': len(jobs), 'measured': real,
                                          'job_list': [dict(vars(j), node_hours=j.node_hours)
                                                       for j in jobs],
                                          'confirm_repeat': args.confirm_repeat}, indent=1))
    return 0


def _hours(seconds):
    return f'{int(seconds // 3600)}h{int(seconds % 3600 // 60):02d}'


def _size(n):
    for unit in ('B', 'KiB', 'MiB', 'GiB', 'TiB'):
        if n < 1024 or unit == 'TiB':
            return f'{n:.0f} {unit}' if unit == 'B' else f'{n:.1f} {unit}'
        n /= 1024
