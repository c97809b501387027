"""Shared command-line inputs: where history comes from and which part of it to use."""
import datetime
import os
import sqlite3
import sys

import numpy as np

from postprocess.common.errors import InputFault, UsageError
from postprocess.common.names import check_name
from postprocess.history.store import History, filter_runs, merge_runs, read_results_db
from postprocess.history.perflog import Diagnostics, find_perflogs, read_perflogs

MAX_WARNINGS = 30


def add_history_args(parser, system_required=False):
    parser.add_argument('--perflogs', action='append', default=[], metavar='DIR',
                        help='perflog directory or file (repeatable); *.log and rotated *.log.h<N>')
    parser.add_argument('--db', metavar='FILE', help="ReFrame results DB (storage.enable, sqlite)")
    parser.add_argument('--system', required=system_required, help='only runs of this system')
    parser.add_argument('--from', dest='date_from', type=iso_date, metavar='YYYY-MM-DD')
    parser.add_argument('--to', dest='date_to', type=iso_date, metavar='YYYY-MM-DD')
    parser.add_argument('--cache', metavar='DIR', default=os.environ.get('IOREGRESS_CACHE') or None,
                        help='incremental ingest cache directory: parse only what was appended '
                             '(default: $IOREGRESS_CACHE; none)')
    parser.add_argument('--this-run', metavar='RUN_DIR',
                        default=os.environ.get('IOREGRESS_THIS_RUN') or None,
                        help='the nightly run directory asking: its perflog lines count although it '
                             'is not marked COMPLETE yet (default: $IOREGRESS_THIS_RUN)')


def iso_date(text):
    try:
        return datetime.date.fromisoformat(text).isoformat()
    except ValueError:
        import argparse
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): '{text}'") from None


def check_args(args):
    """Usage errors common to every history command (one line each, exit 2)."""
    if not args.perflogs and not args.db:
        raise UsageError('give --perflogs DIR and/or --db FILE')
    if args.system is not None:
        check_name('system', args.system)
    for path in args.perflogs + ([args.db] if args.db else []):
        if not os.path.exists(path):
            raise UsageError(f"no such file or directory '{path}'")
        if not os.access(path, os.R_OK):
            raise UsageError(f"cannot read '{path}': permission denied")
    if args.db and not os.path.isfile(args.db):
        raise UsageError(f"not a file: --db '{args.db}'")
    if args.date_from and args.date_to and args.date_from > args.date_to:
        raise UsageError(f"--from '{args.date_from}' is after --to '{args.date_to}'")
    if args.this_run and not os.path.isdir(args.this_run):
        raise UsageError(f"no such run directory: --this-run '{args.this_run}'")


def _no_lines(args, skipped=0, diag=()):
    """Input that holds no perflog line at all is an error, not an empty success."""
    where = ', '.join(f"'{p}'" for p in args.perflogs)
    files = [f for p in args.perflogs for f in find_perflogs(p)]
    if not files:
        return UsageError(f'no perflog files (*.log, *.log.h<N>) in {where}')
    if skipped:
        return UsageError(f'no perflog line of a completed run in {where} ({skipped} lines of '
                          f'nightly runs that did not complete left out)')
    first = f'; first problem: {diag[0]}' if diag else ''
    return UsageError(f'no perflog line with a measurement in {where} ({len(files)} files{first})')


# Warnings about input lines wait here until the command has done its work (postprocess/cli.py
# prints them then): a command that fails says so in one line, not after 30 lines of warnings.
PENDING = []


def flush_warnings(stream=None):
    stream = stream or sys.stderr
    for line in PENDING:
        print(line, file=stream)
    PENDING.clear()


def _report(diag, skipped):
    PENDING.extend(f'warning: {message}' for message in diag[:MAX_WARNINGS])
    if len(diag) > MAX_WARNINGS:
        PENDING.append(f'warning: ... and {len(diag) - MAX_WARNINGS} more problems like these')
    if skipped:
        PENDING.append(f'note: {skipped} perflog lines of nightly runs that did not complete (no '
                       f'COMPLETE in their run directory) not counted')


def _empty_selection(args, systems):
    what = [f"system '{args.system}'"] if args.system else []
    if args.date_from or args.date_to:
        what.append(f"dates {args.date_from or '...'}..{args.date_to or '...'}")
    known = ', '.join(sorted(systems)[:10])
    return UsageError(f"no runs of {' and '.join(what) or 'the selection'} in the history "
                      f"(systems there: {known})")


def read_db(path, diag):
    """Runs of a ReFrame results DB; a file that is not one is an error, not an empty history."""
    try:
        conn = sqlite3.connect(f'file:{path}?mode=ro', uri=True)
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if 'sessions' not in tables:
                raise UsageError(f"not a ReFrame results database (no 'sessions' table): '{path}'")
            check = conn.execute('PRAGMA quick_check').fetchone()
            if not check or check[0] != 'ok':
                raise InputFault(f"damaged ReFrame results database '{path}': "
                                 f"{check[0] if check else 'integrity check gave nothing'}")
        finally:
            conn.close()
    except sqlite3.DatabaseError as err:
        if 'malformed' in str(err):
            raise InputFault(f"damaged ReFrame results database '{path}': {err}") from None
        raise UsageError(f"not a readable ReFrame results database '{path}': {err}") from None
    db_diag = Diagnostics()
    runs, _ = read_results_db(path, db_diag)
    if any('cannot read results DB' in m for m in db_diag):
        raise InputFault(f"damaged ReFrame results database '{path}': {db_diag[0]}")
    diag.extend(db_diag)
    return runs


def _incomplete_sessions(db_runs, this_run):
    """Run directories of DB sessions that are nightly runs without COMPLETE (killed while
    postprocessing, or still running), except ``this_run``: not history, as their perflog lines."""
    from postprocess.history.nightly_runs import COMPLETE, INCOMPLETE
    this = os.path.realpath(this_run) if this_run else None
    out = set()
    for where in {r['session_dir'] for r in db_runs if r.get('session_dir')}:
        if (os.path.exists(os.path.join(where, INCOMPLETE))
                and not os.path.exists(os.path.join(where, COMPLETE))
                and os.path.realpath(where) != this):
            out.add(where)
    return out


def load_runs(args):
    """Run records selected by the history arguments; diagnostics printed to stderr."""
    check_args(args)
    diag, skipped = Diagnostics(), []
    runs, _ = (read_perflogs(args.perflogs, diag, this_run=args.this_run, skipped=skipped)
               if args.perflogs else ([], diag))
    if args.db:
        db_runs = read_db(args.db, diag)
        incomplete = _incomplete_sessions(db_runs, args.this_run)
        if incomplete:
            db_runs = [r for r in db_runs if r['session_dir'] not in incomplete]
            PENDING.append(f'note: {len(incomplete)} results-DB sessions of nightly runs that did '
                           f'not complete (no COMPLETE in their run directory) not counted')
        runs = merge_runs(db_runs, runs)
    if not runs and args.perflogs and not args.db:
        raise _no_lines(args, len(skipped), diag)
    if not runs:
        raise UsageError(f"no runs in the ReFrame results database '{args.db}'")
    selected = filter_runs(runs, args.system, args.date_from, args.date_to)
    if not selected:
        raise _empty_selection(args, {r['system'] for r in runs})
    _report(diag, len(skipped))         # after the usage errors: those stay one line
    return selected


def load_history(args, last_nights=None):
    """The History the arguments select. Perflogs alone go through the columnar table (and the
    incremental cache with --cache); with --db, through run records merged with the DB's.
    ``last_nights``: only each system's last N nights (whole sessions): what a nightly judges and
    shows, without copying years of repetitions (a window of N nights gives the same History as
    the whole one cut to those nights)."""
    if args.db:
        return History(load_runs(args))
    from postprocess.history.cache import scan_perflogs
    from postprocess.history.store import last_nights_mask
    check_args(args)
    diag, skipped = Diagnostics(), []
    cache_dir = args.cache
    if cache_dir:
        try:
            os.makedirs(cache_dir, exist_ok=True)
        except OSError as err:
            PENDING.append(f"warning: ingest cache not used ('{cache_dir}': {err.strerror})")
            cache_dir = None
    found = scan_perflogs(args.perflogs, diag, cache_dir, this_run=args.this_run,
                          warn=lambda m: PENDING.append(f'warning: {m}'), skipped=skipped)
    skipped = skipped[0] if skipped else 0
    if not found.keep.any():
        raise _no_lines(args, skipped, diag)
    index = found.index
    mask = found.keep.copy()
    if args.system:
        code = index.strings.index(args.system) if args.system in index.strings else -1
        mask &= index.cols['system'] == code
    if args.date_from or args.date_to:
        days = index.days()
        if args.date_from:
            mask &= days >= args.date_from
        if args.date_to:
            mask &= days <= args.date_to
    if not mask.any():
        systems = np.unique(index.cols['system'][found.keep])
        raise _empty_selection(args, {index.strings[c] for c in systems})
    if last_nights:
        mask &= last_nights_mask(index, mask, last_nights)
    _report(diag, skipped)              # after the usage errors: those stay one line
    return History.from_table(found.take(mask))
