"""``calibrate``: write configs/references/<system>.yaml from history."""
import os
import sys

from postprocess.history import inputs

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def register(subparsers):
    p = subparsers.add_parser('calibrate', help='references (median, tolerance from spread) from '
                                                'history -> configs/references/<system>.yaml')
    inputs.add_history_args(p, system_required=True)
    p.add_argument('--overwrite', action='store_true', help='replace hand-set entries too')
    p.add_argument('--vars', default='write_bw,read_bw', metavar='V1,V2',
                   help="perf variables to calibrate (default write_bw,read_bw; 'all' = every one)")
    p.add_argument('-o', '--output', help='reference file (default configs/references/<system>.yaml)')
    p.set_defaults(func=run)


def run(args):
    from postprocess.references.calibrate import calibrate
    from postprocess.common.errors import UsageError
    if not args.perflogs and not args.db:
        raise UsageError('give --perflogs DIR and/or --db FILE')
    path = args.output or os.path.join(REPO, 'configs', 'references', f'{args.system}.yaml')
    runs = inputs.load_runs(args)
    try:
        written, kept = calibrate(runs, path, args.system, overwrite=args.overwrite,
                                  warn=lambda m: print(f'warning: {m}', file=sys.stderr),
                                  date_from=args.date_from, date_to=args.date_to,
                                  variables=None if args.vars == 'all' else
                                  tuple(v for v in args.vars.split(',') if v))
    except ValueError as err:
        print(f'calibrate: {err}; {path} not changed', file=sys.stderr)
        return 1
    print(f'{path}: {written} entries calibrated from {len(runs)} runs, {kept} hand-set kept')
    return 0
