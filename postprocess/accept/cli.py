"""``accept``: record that a change is the new normal; ``--list``, ``--undo`` (accept/store.py).

    python -m postprocess accept --system S [--partition P] [--check REGEX]... --since NIGHT \\
                                 --reason "..." [--results DIR]
    python -m postprocess accept --list [--system S] [--results DIR]
    python -m postprocess accept --undo ID --reason "..." [--results DIR]
"""
import os
import re

import ioregress_env
from postprocess.common.errors import UsageError
from postprocess.history.cli import iso_date, print_warnings


def register(subparsers):
    p = subparsers.add_parser('accept', help='accept a change as the new normal: the verdict '
                                             're-baselines the series from that night '
                                             '(--list, --undo)')
    p.add_argument('--results', metavar='DIR',
                   default=ioregress_env.get('IOREGRESS_RESULTS_ROOT') or 'results',
                   help='results tree holding perflogs/ (default: $IOREGRESS_RESULTS_ROOT, '
                        'else ./results)')
    p.add_argument('--system', help='system whose series are accepted')
    p.add_argument('--partition', help='only this partition (default: every partition)')
    p.add_argument('--check', action='append', default=[], metavar='REGEX',
                   help='only series whose "<check> <iob_params>" matches (repeatable; '
                        'default: every series of the system)')
    p.add_argument('--since', type=iso_date, metavar='YYYY-MM-DD',
                   help='the night the change began (the finding\'s since)')
    p.add_argument('--reason', help='why this is the new normal (shown on the page)')
    what = p.add_mutually_exclusive_group()
    what.add_argument('--list', action='store_true', help='list the acceptances in force')
    what.add_argument('--undo', metavar='ID', help='withdraw an acceptance (appends an undo)')
    p.set_defaults(func=run)


def _history_args(results):
    """Where the results tree's history is: its store, else (before the first import) its
    perflogs."""
    from postprocess.history import store
    if store.files(os.path.join(results, 'store')):
        return {'store': os.path.join(results, 'store'), 'perflogs': []}
    perflogs = os.path.join(results, 'perflogs')
    if not os.path.isdir(perflogs):
        raise UsageError(f"no results store and no perflogs directory in the results tree "
                         f"'{results}'")
    return {'store': None, 'perflogs': (perflogs,)}


def _series_on(results, system, since):
    """(keys of the system's series on the night ``since`` (a usage error if it has none),
    warnings)."""
    from postprocess.history import inputs
    from postprocess.history.query import HistoryQuery
    query = HistoryQuery(system=system, date_from=since, date_to=since, **_history_args(results))
    history, warnings = inputs.load_history(query)
    return [history.keys[kid] for kid in sorted({int(k) for k in history.col['key']})], warnings


def run(args):
    from postprocess.accept import apply, store
    results = args.results
    if not os.path.isdir(results):
        raise UsageError(f"no such results directory '{results}'")
    records = store.load(results)
    if args.list:
        shown = [r for r in store.active(records) if not args.system or r['system'] == args.system]
        for rec in shown:
            print(store.describe(rec))
        print(f'{len(shown)} acceptance(s) in force ({store.path_of(results)})')
        return 0
    if not args.reason or not args.reason.strip():
        raise UsageError('--reason "..." is required (it is shown with the acceptance)')
    if args.undo:
        if args.undo not in {r['id'] for r in store.active(records)}:
            raise UsageError(f"no acceptance in force with id '{args.undo}' (see accept --list)")
        store.append(results, {'action': 'undo', 'id': args.undo, 'reason': args.reason.strip()})
        print(f'undone: {args.undo}; the verdict judges those series with their whole history '
              f'again')
        return 0
    if not args.system or not args.since:
        raise UsageError('accept needs --system NAME and --since YYYY-MM-DD (or --list / --undo)')
    for regex in args.check:
        try:
            re.compile(regex)
        except re.error as err:
            raise UsageError(f"bad --check regular expression '{regex}': {err}") from None
    rec = {'action': 'accept', 'system': args.system, 'partition': args.partition,
           'checks': args.check, 'since': args.since, 'reason': args.reason.strip()}
    on_night, warnings = _series_on(results, args.system, args.since)
    keys = [k for k in on_night if apply.matches(rec, k[0], k[1], k[3], k[4])]
    if not keys:
        raise UsageError(f"no series of '{args.system}' on {args.since} matches "
                         f"{' '.join(args.check) or 'the partition'}")
    rec = store.append(results, rec)
    print(f'accepted {rec["id"]}: {len(keys)} series of {args.system} re-baselined from '
          f'{args.since} ({rec["reason"]})')
    print_warnings(warnings)
    return 0
