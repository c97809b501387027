"""Shared command-line inputs: where history comes from and which part of it to use.

History comes from the results store (``--store``, history/store.py), and, for a site without one
yet or a one-off look, from perflogs (``--perflogs``) and ReFrame's results DB (``--db``). All of
them become store rows (the perflogs' and the DB's through history/parse.py), one SQL relation
that the selection (system, dates, the last N nights) and History are made from. A run found in
two sources counts once (the store's, then the DB's, then a perflog's).
"""
import datetime
import os
import sys

import ioregress_env
from postprocess.common.errors import UsageError
from postprocess.common.names import check_name
from postprocess.history import engine, parse, perflog, reports, store

MAX_WARNINGS = 30
COMPLETE, INCOMPLETE = 'COMPLETE', 'INCOMPLETE'     # a nightly run directory's marks


def add_history_args(parser, system_required=False):
    parser.add_argument('--store', metavar='DIR', default=ioregress_env.get('IOREGRESS_STORE'),
                        help='results store: <results>/store (default: $IOREGRESS_STORE)')
    parser.add_argument('--perflogs', action='append', default=[], metavar='DIR',
                        help='perflog directory or file (repeatable); *.log and rotated *.log.h<N>')
    parser.add_argument('--db', metavar='FILE', help="ReFrame results DB (storage.enable, sqlite)")
    parser.add_argument('--system', required=system_required, help='only runs of this system')
    parser.add_argument('--from', dest='date_from', type=iso_date, metavar='YYYY-MM-DD')
    parser.add_argument('--to', dest='date_to', type=iso_date, metavar='YYYY-MM-DD')
    parser.add_argument('--this-run', metavar='RUN_DIR',
                        default=ioregress_env.get('IOREGRESS_THIS_RUN'),
                        help="the nightly run directory asking: its report.json's runs count "
                             'with the store although not in it yet (default: $IOREGRESS_THIS_RUN)')


def iso_date(text):
    try:
        return datetime.date.fromisoformat(text).isoformat()
    except ValueError:
        import argparse
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): '{text}'") from None


def check_args(args):
    """Usage errors common to every history command (one line each, exit 2)."""
    store_dir = getattr(args, 'store', None)
    if not args.perflogs and not args.db and not store_dir:
        raise UsageError('give --perflogs DIR, --db FILE and/or --store DIR')
    if args.system is not None:
        check_name('system', args.system)
    for path in args.perflogs + ([args.db] if args.db else []):
        if not os.path.exists(path):
            raise UsageError(f"no such file or directory '{path}'")
        if not os.access(path, os.R_OK):
            raise UsageError(f"cannot read '{path}': permission denied")
    if args.db and not os.path.isfile(args.db):
        raise UsageError(f"not a file: --db '{args.db}'")
    if store_dir and os.path.exists(store_dir) and not os.path.isdir(store_dir):
        raise UsageError(f"not a directory: --store '{store_dir}'")
    if args.date_from and args.date_to and args.date_from > args.date_to:
        raise UsageError(f"--from '{args.date_from}' is after --to '{args.date_to}'")
    if args.this_run and not os.path.isdir(args.this_run):
        raise UsageError(f"no such run directory: --this-run '{args.this_run}'")


# Warnings about input lines wait here until the command has done its work (common/command.py
# prints them then): a command that fails says so in one line, not after 30 lines of warnings.
PENDING = []


def flush_warnings(stream=None):
    stream = stream or sys.stderr
    for line in PENDING:
        print(line, file=stream)
    PENDING.clear()


def _report(diag):
    PENDING.extend(f'warning: {message}' for message in diag[:MAX_WARNINGS])
    if len(diag) > MAX_WARNINGS:
        PENDING.append(f'warning: ... and {len(diag) - MAX_WARNINGS} more problems like these')


def _no_lines(args, diag=()):
    """Input that holds no perflog line at all is an error, not an empty success."""
    where = ', '.join(f"'{p}'" for p in args.perflogs)
    files = [f for p in args.perflogs for f in perflog.find_perflogs(p)]
    if not files:
        return UsageError(f'no perflog files (*.log, *.log.h<N>) in {where}')
    first = f'; first problem: {diag[0]}' if diag else ''
    return UsageError(f'no perflog line with a measurement in {where} ({len(files)} files{first})')


def _empty_selection(args, systems):
    what = [f"system '{args.system}'"] if args.system else []
    if args.date_from or args.date_to:
        what.append(f"dates {args.date_from or '...'}..{args.date_to or '...'}")
    known = ', '.join(sorted(systems)[:10])
    return UsageError(f"no runs of {' and '.join(what) or 'the selection'} in the history "
                      f"(systems there: {known})")


def _incomplete_dirs(rows, this_run):
    """Run directories (a session's --prefix) of nightly runs without COMPLETE (killed while
    postprocessing, or still running), except ``this_run``: their sessions are not history."""
    this = os.path.realpath(this_run) if this_run else None
    out = set()
    for where in {r['session_dir'] for r in rows if r.get('session_dir')}:
        if (os.path.exists(os.path.join(where, INCOMPLETE))
                and not os.path.exists(os.path.join(where, COMPLETE))
                and os.path.realpath(where) != this):
            out.add(where)
    return out


def db_rows(path):
    """case_rows of every session of the results DB but those of incomplete nightly runs."""
    rows = [r for s in reports.read_results_db(path) for r in reports.case_rows(s, path)]
    return rows


def this_run_rows(run_dir):
    """case_rows of the asking nightly's report.json ([] when there is none yet)."""
    path = os.path.join(run_dir, 'report.json')
    try:
        return reports.read_report(path)
    except (OSError, ValueError) as err:
        PENDING.append(f"warning: this run's report '{path}' not read ({err})")
        return []


def source_rows(args, diag, this_run=True, kind='TABLE'):
    """A table of the engine with store rows of the non-store sources (perflogs, DB, this run),
    a run found in several counted once; None when there is none. ``kind='VIEW'``: a view, for
    a caller that reads the rows once (import: 10^7 rows streamed to Parquet, not kept)."""
    con = engine.connect()
    texts = []          # (table, priority)
    if args.db:
        rows = db_rows(args.db)
        if not rows and not args.perflogs and not getattr(args, 'store', None):
            raise UsageError(f"no runs in the ReFrame results database '{args.db}'")
        incomplete = _incomplete_dirs(rows, args.this_run)
        if incomplete:
            rows = [r for r in rows if r['session_dir'] not in incomplete]
            PENDING.append(f'note: {len(incomplete)} results-DB sessions of nightly runs that did '
                           f'not complete (no COMPLETE in their run directory) not counted')
        texts.append((reports.text_table(rows), 1))
    if this_run and args.this_run and getattr(args, 'store', None):
        texts.append((reports.text_table(this_run_rows(args.this_run)), 0))
    if args.perflogs:
        texts.append((perflog.text_runs(args.perflogs, diag), 2))
    if not texts:
        return None
    if len(texts) == 1:
        union = texts[0][0]
    else:               # numbered source after source; a run in two sources counted once
        union = engine.temp_name('source_text')
        cols = ', '.join(engine.ident(n) for n, _ in parse.TEXT_COLUMNS if n != 'run_id')
        parts = ' UNION ALL '.join(
            f'SELECT {cols}, {prio} AS prio, run_id + {i} * {1 << 40} AS run_id FROM {t}'
            for i, (t, prio) in enumerate(texts))
        con.execute(f'''CREATE TEMP TABLE {union} AS SELECT * EXCLUDE (prio) FROM ({parts})
            QUALIFY bad IS NOT NULL OR row_number() OVER (
                PARTITION BY system, partition, environ, "check", jobid, floor(t)
                ORDER BY prio, run_id) = 1''')
    runs, reps = parse.parse(union)
    diag.extend(parse.diagnostics(union, runs))
    if args.perflogs and not con.execute(f'SELECT count(*) FROM {runs}').fetchone()[0] \
            and not args.db and not getattr(args, 'store', None):
        raise _no_lines(args, diag)
    rows = engine.temp_name('source_rows')
    con.execute(f'CREATE TEMP {kind} {rows} AS {store.rows_sql(runs, reps, "")}')
    return rows


def selected_rows(args, last_nights=None):
    """A table of the engine: the store rows the history arguments select (see module doc)."""
    check_args(args)
    con = engine.connect()
    diag = perflog.Diagnostics()
    extra = source_rows(args, diag)
    parts = []
    paths = store.files(args.store) if getattr(args, 'store', None) else []
    if paths:
        parts.append(f'SELECT * FROM {store.scan_sql(paths)}')
    if extra:
        if paths:       # a run the store holds already counts once (the store's)
            parts.append(f'SELECT * FROM {extra} e WHERE NOT EXISTS (SELECT 1 FROM '
                         f'{store.scan_sql(paths)} s WHERE s.system = e.system AND '
                         f's.partition = e.partition AND s.environ = e.environ AND '
                         f's."check" = e."check" AND s.jobid = e.jobid AND '
                         f'floor(epoch(s.time)) = floor(epoch(e.time)))')
        else:
            parts.append(f'SELECT * FROM {extra}')
    if not parts:
        if getattr(args, 'store', None) and not args.perflogs and not args.db:
            raise UsageError(f"no history in the store '{args.store}' (no Parquet file yet: "
                             f"`python -m postprocess import` makes one from perflogs)")
        parts.append(store.empty_rows_sql())
    every = engine.temp_name('all_rows')
    con.execute(f'CREATE TEMP VIEW {every} AS ' + ' UNION ALL BY NAME '.join(parts))
    chosen = engine.temp_name('chosen_rows')
    cond = row_filter(args)
    if not con.execute(f'SELECT count(*) FROM {every}').fetchone()[0]:
        raise UsageError('no runs in the history')
    if not con.execute(f'SELECT count(*) FROM {every} WHERE {cond}').fetchone()[0]:
        systems = [s for (s,) in con.execute(f'SELECT DISTINCT system FROM {every}').fetchall()]
        raise _empty_selection(args, systems)
    if last_nights:
        # each system's first night kept (none: a system without a measured night), then the rows
        # by literal bounds: they reach the Parquet reader, which skips the row groups of older
        # nights (a join with the bounds would read every row)
        cuts = con.execute(f'''
            SELECT system, min(night) FILTER (WHERE measured AND k <= {int(last_nights)})::VARCHAR
            FROM (SELECT *, row_number() OVER (PARTITION BY system, measured ORDER BY night DESC) AS k
                  FROM (SELECT system, night, bool_or(phase IS NOT NULL) AS measured
                        FROM {every} WHERE {cond} GROUP BY ALL))
            GROUP BY system''').fetchall()
        recent = ' OR '.join(f'system = {engine.quote(sys_)}' + (
            f' AND night >= DATE {engine.quote(cut)}' if cut else '') for sys_, cut in cuts)
        if all(cut for _, cut in cuts):     # one bound for all: the reader's simplest filter
            recent = f'({recent}) AND night >= DATE {engine.quote(min(c for _, c in cuts))}'
        con.execute(f'CREATE TEMP TABLE {chosen} AS SELECT * FROM {every} WHERE {cond} '
                    f'AND ({recent})')
    else:
        con.execute(f'CREATE TEMP TABLE {chosen} AS SELECT * FROM {every} WHERE {cond}')
    _report(diag)               # after the usage errors: those stay one line
    return chosen


def row_filter(args):
    """SQL condition on store rows: --system, and the run's local completion date in
    [--from, --to]."""
    where = []
    if args.system:
        where.append(f'system = {engine.quote(args.system)}')
    day = 'CAST(local_ts(epoch(time), utc_offset) AS DATE)'
    if args.date_from:
        where.append(f"{day} >= DATE {engine.quote(args.date_from)}")
    if args.date_to:
        where.append(f"{day} <= DATE {engine.quote(args.date_to)}")
    return ' AND '.join(where) or 'true'


def load_history(args, last_nights=None):
    """The History the arguments select. ``last_nights``: only each system's last N nights
    (whole sessions: a session's night is its start's): what a nightly judges and shows,
    without reading years of repetitions."""
    return store.history_of_rows(selected_rows(args, last_nights))


def load_runs(args):
    """Run records selected by the history arguments (with provenance), oldest first."""
    return list(load_history(args).runs)
