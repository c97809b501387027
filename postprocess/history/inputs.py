"""Where history comes from and which part of it is used: a HistoryQuery (history/query.py) read.

History comes from the results store (``--store``, history/store.py), and, for a site without one
yet or a one-off look, from perflogs (``--perflogs``) and ReFrame's results DB (``--db``). All of
them become store rows (the perflogs' and the DB's through history/parse.py), one SQL relation
that the selection (system, dates, the last N nights) and History are made from. A run found in
two sources counts once (the store's, then the DB's, then a perflog's). Warnings about the
input are returned with what was read, for the command to print after its work.
"""
import os

from postprocess.common.errors import UsageError
from postprocess.common.names import check_name
from postprocess.history import engine, parse, perflog, reports, store

MAX_WARNINGS = 30
COMPLETE, INCOMPLETE = 'COMPLETE', 'INCOMPLETE'     # a nightly run directory's marks


def check(query):
    """Usage errors common to every history command (one line each, exit 2)."""
    store_dir = query.store
    if not query.perflogs and not query.db and not store_dir:
        raise UsageError('give --perflogs DIR, --db FILE and/or --store DIR')
    if query.system is not None:
        check_name('system', query.system)
    for path in list(query.perflogs) + ([query.db] if query.db else []):
        if not os.path.exists(path):
            raise UsageError(f"no such file or directory '{path}'")
        if not os.access(path, os.R_OK):
            raise UsageError(f"cannot read '{path}': permission denied")
    if query.db and not os.path.isfile(query.db):
        raise UsageError(f"not a file: --db '{query.db}'")
    if store_dir and os.path.exists(store_dir) and not os.path.isdir(store_dir):
        raise UsageError(f"not a directory: --store '{store_dir}'")
    if query.date_from and query.date_to and query.date_from > query.date_to:
        raise UsageError(f"--from '{query.date_from}' is after --to '{query.date_to}'")
    if query.this_run and not os.path.isdir(query.this_run):
        raise UsageError(f"no such run directory: --this-run '{query.this_run}'")


def diag_warnings(diag):
    """The warning lines of a reading's diagnostics (the first MAX_WARNINGS, then a count). A
    command prints them after its work: one that fails says so in one line, not after 30 lines
    of warnings."""
    out = [f'warning: {message}' for message in diag[:MAX_WARNINGS]]
    if len(diag) > MAX_WARNINGS:
        out.append(f'warning: ... and {len(diag) - MAX_WARNINGS} more problems like these')
    return out


def _no_lines(query, diag=()):
    """Input that holds no perflog line at all is an error, not an empty success."""
    where = ', '.join(f"'{p}'" for p in query.perflogs)
    files = [f for p in query.perflogs for f in perflog.find_perflogs(p)]
    if not files:
        return UsageError(f'no perflog files (*.log, *.log.h<N>) in {where}')
    first = f'; first problem: {diag[0]}' if diag else ''
    return UsageError(f'no perflog line with a measurement in {where} ({len(files)} files{first})')


def _empty_selection(query, systems):
    what = [f"system '{query.system}'"] if query.system else []
    if query.date_from or query.date_to:
        what.append(f"dates {query.date_from or '...'}..{query.date_to or '...'}")
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


def this_run_rows(run_dir, warnings):
    """case_rows of the asking nightly's report.json ([] when there is none yet, a line on
    ``warnings`` when it cannot be read)."""
    path = os.path.join(run_dir, 'report.json')
    try:
        return reports.read_report(path)
    except (OSError, ValueError) as err:
        warnings.append(f"warning: this run's report '{path}' not read ({err})")
        return []


def source_rows(query, diag, warnings):
    """A table of the engine with store rows of the non-store sources (perflogs, DB, this run),
    a run found in several counted once; None when there is none. Notes go on ``warnings``."""
    parsed = source_parsed(query, diag, warnings)
    if parsed is None:
        return None
    rows = engine.temp_name('source_rows')
    engine.connect().execute(f'CREATE TEMP TABLE {rows} AS {store.rows_sql(*parsed, "")}')
    return rows


def source_parsed(query, diag, warnings):
    """(runs, repetitions) parsed from the non-store sources (history/parse.py), as
    ``source_rows``; import writes them as the store's two tables, never made rows."""
    con = engine.connect()
    texts = []          # (table, priority)
    if query.db:
        rows = db_rows(query.db)
        if not rows and not query.perflogs and not query.store:
            raise UsageError(f"no runs in the ReFrame results database '{query.db}'")
        incomplete = _incomplete_dirs(rows, query.this_run)
        if incomplete:
            rows = [r for r in rows if r['session_dir'] not in incomplete]
            warnings.append(f'note: {len(incomplete)} results-DB sessions of nightly runs that did '
                           f'not complete (no COMPLETE in their run directory) not counted')
        texts.append((reports.text_table(rows), 1))
    if query.this_run and query.store:
        texts.append((reports.text_table(this_run_rows(query.this_run, warnings)), 0))
    if query.perflogs:
        texts.append((perflog.text_runs(query.perflogs, diag), 2))
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
    # the texts are read: their memory goes back to the engine (at 10^6 lines, kept, they
    # push an import past its memory limit into spilling)
    for table in {union, *(t for t, _ in texts)}:
        con.execute(f'DROP TABLE {table}')
    if query.perflogs and not con.execute(f'SELECT count(*) FROM {runs}').fetchone()[0] \
            and not query.db and not query.store:
        raise _no_lines(query, diag)
    return runs, reps


def selected_rows(query, last_nights=None):
    """(a table of the engine: the store rows the query selects (see module doc), warnings)."""
    check(query)
    con = engine.connect()
    diag = perflog.Diagnostics()
    warnings = []
    extra = source_rows(query, diag, warnings)
    parts = []
    paths = store.files(query.store) if query.store else []
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
        if query.store and not query.perflogs and not query.db:
            raise UsageError(f"no history in the store '{query.store}' (no Parquet file yet: "
                             f"`python -m postprocess import` makes one from perflogs)")
        parts.append(store.empty_rows_sql())
    every = engine.temp_name('all_rows')
    con.execute(f'CREATE TEMP VIEW {every} AS ' + ' UNION ALL BY NAME '.join(parts))
    chosen = engine.temp_name('chosen_rows')
    cond = row_filter(query)
    if not con.execute(f'SELECT count(*) FROM {every}').fetchone()[0]:
        raise UsageError('no runs in the history')
    if not con.execute(f'SELECT count(*) FROM {every} WHERE {cond}').fetchone()[0]:
        systems = [s for (s,) in con.execute(f'SELECT DISTINCT system FROM {every}').fetchall()]
        raise _empty_selection(query, systems)
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
    # after the usage errors: those stay one line
    return chosen, warnings + diag_warnings(diag)


def row_filter(query):
    """SQL condition on store rows: --system, and the run's local completion date in
    [--from, --to]."""
    where = []
    if query.system:
        where.append(f'system = {engine.quote(query.system)}')
    day = 'CAST(local_ts(epoch(time), utc_offset) AS DATE)'
    if query.date_from:
        where.append(f"{day} >= DATE {engine.quote(query.date_from)}")
    if query.date_to:
        where.append(f"{day} <= DATE {engine.quote(query.date_to)}")
    return ' AND '.join(where) or 'true'


def load_history(query, last_nights=None):
    """(the History the query selects, its warnings). ``last_nights``: only each system's last
    N nights (whole sessions: a session's night is its start's): what a nightly judges and
    shows, without reading years of repetitions."""
    rows, warnings = selected_rows(query, last_nights)
    return store.history_of_rows(rows), warnings


def load_runs(query):
    """(run records the query selects (with provenance), oldest first; warnings)."""
    history, warnings = load_history(query)
    return list(history.runs), warnings
