"""``calibrate``: write configs/references/<system>.yaml from history."""
import os
import sys

from contract import reference_file
from postprocess.common.errors import UsageError
from postprocess.common.names import check_name
from postprocess.history import inputs
from postprocess.history.cli import add_history_args, print_warnings, query_of

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def register(subparsers):
    p = subparsers.add_parser('calibrate', help='references (median, tolerance from spread) from '
                                                'history -> configs/references/<system>.yaml')
    add_history_args(p, system_required=True)
    p.add_argument('--overwrite', action='store_true', help='replace hand-set entries too')
    p.add_argument('--vars', default='write_bw,read_bw', metavar='V1,V2',
                   help="perf variables to calibrate (default write_bw,read_bw; 'all' = every one)")
    p.add_argument('-o', '--output', help='reference file (default configs/references/<system>.yaml)')
    p.set_defaults(func=run)


def check_existing(path):
    """A reference file about to be merged into must be one the checks accept: the same validator
    as the checks (contract/reference_file.py, pure Python), one line naming the
    file and the key, nothing written."""
    if not os.path.exists(path):
        return
    if not os.path.isfile(path):
        raise UsageError(f"reference file is not a regular file: '{path}'")
    try:
        reference_file.load(path)
    except reference_file.ReferenceFileError as err:
        raise UsageError(f'malformed reference file {err}; not changed') from None


def run(args):
    from postprocess.references.calibrate import calibrate
    check_name('system', args.system)
    if not args.perflogs and not args.db and not args.store:
        raise UsageError('give --perflogs DIR, --db FILE and/or --store DIR')
    path = args.output or os.path.join(REPO, 'configs', 'references', f'{args.system}.yaml')
    variables = None if args.vars == 'all' else tuple(v for v in args.vars.split(',') if v)
    if variables is not None and not variables:
        raise UsageError(f"--vars names no variable: '{args.vars}'")
    check_existing(path)
    runs, warnings = inputs.load_runs(query_of(args))
    try:
        written, kept = calibrate(runs, path, args.system, overwrite=args.overwrite,
                                  warn=lambda m: print(f'warning: {m}', file=sys.stderr),
                                  date_from=args.date_from, date_to=args.date_to,
                                  variables=variables)
    except ValueError as err:
        print(f'calibrate: {err}; {path} not changed', file=sys.stderr)
        print_warnings(warnings)
        return 1
    print(f'{path}: {written} entries calibrated from {len(runs)} runs, {kept} hand-set kept')
    print_warnings(warnings)
    return 0
