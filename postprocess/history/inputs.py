"""Shared command-line inputs: where history comes from and which part of it to use."""
import datetime
import os
import sys

from postprocess.common.errors import UsageError
from postprocess.history.store import History, filter_runs, merge_runs, read_results_db
from postprocess.history.perflog import Diagnostics, read_perflogs

MAX_WARNINGS = 30


def add_history_args(parser, system_required=False):
    parser.add_argument('--perflogs', action='append', default=[], metavar='DIR',
                        help='perflog directory or file (repeatable); *.log and rotated *.log.h<N>')
    parser.add_argument('--db', metavar='FILE', help="ReFrame results DB (storage.enable, sqlite)")
    parser.add_argument('--system', required=system_required, help='only runs of this system')
    parser.add_argument('--from', dest='date_from', type=iso_date, metavar='YYYY-MM-DD')
    parser.add_argument('--to', dest='date_to', type=iso_date, metavar='YYYY-MM-DD')


def iso_date(text):
    try:
        return datetime.date.fromisoformat(text).isoformat()
    except ValueError:
        import argparse
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): '{text}'") from None


def load_runs(args):
    """Run records selected by the history arguments; diagnostics printed to stderr."""
    if not args.perflogs and not args.db:
        raise UsageError('give --perflogs DIR and/or --db FILE')
    for path in args.perflogs + ([args.db] if args.db else []):
        if not os.path.exists(path):
            raise UsageError(f"no such file or directory '{path}'")
    if args.date_from and args.date_to and args.date_from > args.date_to:
        raise UsageError(f"--from '{args.date_from}' is after --to '{args.date_to}'")
    diag = Diagnostics()
    runs, _ = read_perflogs(args.perflogs, diag) if args.perflogs else ([], diag)
    if args.db:
        db_runs, _ = read_results_db(args.db, diag)
        runs = merge_runs(db_runs, runs)
    for message in diag[:MAX_WARNINGS]:
        print(f'warning: {message}', file=sys.stderr)
    if len(diag) > MAX_WARNINGS:
        print(f'warning: ... and {len(diag) - MAX_WARNINGS} more problems like these',
              file=sys.stderr)
    runs = filter_runs(runs, args.system, args.date_from, args.date_to)
    if not runs:
        print('warning: no runs found in the given history and range', file=sys.stderr)
    return runs


def load_history(args):
    return History(load_runs(args))
