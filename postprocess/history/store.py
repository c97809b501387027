"""The results store: every repetition of every completed night as Parquet files (docs/CONTRACT.md
section 6), read and written with DuckDB.

    <results>/store/system=<system>/year=<YYYY>/<run>.runs.parquet   a nightly run: one row a run
    <results>/store/system=<system>/year=<YYYY>/<run>.reps.parquet   its repetitions (narrow)
    <results>/store/system=<system>/year=<YYYY>/import-<id>.{runs,reps}.parquet   what `import` wrote

The run table holds each run once: key, session, night, perf values, provenance flattened into
columns (and whole, as JSON); the repetition table only (write_id, seq, phase, rep, bytes,
seconds), so an import writes 10^7 narrow rows, not 10^7 of ~40 columns. Readers see store rows
(``scan_sql``: one per repetition and phase, a run without any: one row, phase NULL), and files of
the one-table layout of 0.1.0 as they are. A file is written once, under a temporary name in its
directory, then renamed: many writers at once write at once, only their renames take turns (a
writer's pair of files lands together), and a reader sees a file whole or not at all.
``run_rows_sql`` makes run rows from parsed runs (history/parse.py), whatever they came from.
"""
import contextlib
import datetime
import hashlib
import json
import os
import uuid

import numpy as np

from contract.perflog import parse_params
from postprocess.history import engine, sessions
from postprocess.history.table import (BASELINE_BACKEND, KEY_FIELDS, History,  # noqa: F401
                                       MiB, filter_runs, merge_runs)
from postprocess.history.sessions import SESSION_GAP, assign_sessions  # noqa: F401

FILES = '{store}/system=*/year=*/*.parquet'

# a MAP from entries whose keys may repeat: the last one wins (as a dict would)
_LAST = "list_filter({e}, (x, i) -> NOT list_contains(list_transform({e}[i + 1:], y -> y.key), x.key))"

# one row per run: its key, parameters, session, night, perf values and provenance
RUN_ROWS_SQL = r"""
WITH s AS ({sessions}),
e AS (
  SELECT r.*, s.session AS sess, s.session_start AS sess_start, s.session_tzoff AS sess_tzoff,
         s.night,
         list_transform(r.perf, x -> {{'key': x.name, 'value': struct_pack(value := x.value,
                        unit := x.unit, ref := x.ref, lower := x.lower, upper := x.upper)}})
           AS perf_e,
         r.provenance::JSON AS prov
  FROM {runs} r JOIN s USING (run_id))
SELECT run_id, system, partition, environ, "check", params,
       to_timestamp(t) AS time, tzoff AS utc_offset,
       sess AS session, to_timestamp(sess_start) AS session_start,
       sess_tzoff AS session_utc_offset, night, year(night) AS year,
       {run} AS run, coalesce(testcase, source) AS testcase, run_id AS seq, jobid, result, reframe,
       to_json(map_from_entries({perf_last}))::VARCHAR AS perf,
       TRY_CAST(json_extract(prov, '$.library_versions') AS MAP(VARCHAR, VARCHAR))
         AS library_versions,
       json_extract_string(prov, '$.stripe') AS stripe,
       json_extract(prov, '$.lustre.layout')::VARCHAR AS stripe_layout,
       json_extract(prov, '$.hints_requested')::VARCHAR AS hints_requested,
       json_extract(prov, '$.hints_in_effect')::VARCHAR AS hints_in_effect,
       json_extract_string(prov, '$.fs_type') AS fs_type,
       json_extract_string(prov, '$.sync_method') AS sync_method,
       json_extract_string(prov, '$.cache_defeat') AS cache_defeat,
       TRY_CAST(json_extract_string(prov, '$.nodes') AS INTEGER) AS nodes,
       json_extract_string(prov, '$.command') AS command,
       TRY_CAST(json_extract_string(prov, '$.machine.load[0]') AS DOUBLE) AS load_1m,
       TRY_CAST(rtrim(json_extract_string(prov, '$.machine.df.used'), '%') AS INTEGER) AS fs_used_pct,
       TRY_CAST(rtrim(json_extract_string(prov, '$.machine.lfs_df.used'), '%') AS INTEGER)
         AS lfs_used_pct,
       TRY_CAST(json_extract_string(prov, '$.machine.other_jobs') AS INTEGER) AS other_jobs,
       json_extract_string(prov, '$.machine.kernel') AS kernel,
       json_extract_string(prov, '$.machine.note') AS note,
       provenance
FROM e
"""

# the columns of a store row (a run's columns around its repetition's), in the order of section 6
RUN_HEAD = ('system', 'partition', 'environ', 'check', 'params', 'time', 'utc_offset', 'session',
            'session_start', 'session_utc_offset', 'night', 'year', 'run', 'testcase', 'seq',
            'jobid', 'result', 'reframe')
RUN_TAIL = ('perf', 'library_versions', 'stripe', 'stripe_layout', 'hints_requested',
            'hints_in_effect', 'fs_type', 'sync_method', 'cache_defeat', 'nodes', 'command',
            'load_1m', 'fs_used_pct', 'lfs_used_pct', 'other_jobs', 'kernel', 'note', 'provenance')


def wide_columns(r, p):
    """The select list of store rows from a run relation ``r`` and its repetitions ``p``."""
    head = ', '.join(f'{r}.{engine.ident(c)}' for c in RUN_HEAD)
    tail = ', '.join(f'{r}.{engine.ident(c)}' for c in RUN_TAIL)
    return (f'{head}, {p}.phase, {p}.rep, {p}.bytes, {p}.seconds, '
            f'{p}.bytes / {p}.seconds / {MiB} AS bw_MiBps, {tail}')


# what History and the run records need of store rows: one row per run, one per repetition
RUNS_OF_ROWS_SQL = """
SELECT row_number() OVER (ORDER BY t, seq, testcase) - 1 AS run_id, *
FROM (SELECT testcase, any_value(system) AS system, any_value(partition) AS partition,
             any_value(environ) AS environ, any_value("check") AS "check",
             any_value(params) AS params, epoch(any_value(time)) AS t,
             any_value(utc_offset) AS tzoff, any_value(session) AS session,
             epoch(any_value(session_start)) AS session_start,
             any_value(session_utc_offset) AS session_tzoff, any_value(jobid) AS jobid,
             any_value(result) AS result, any_value(reframe) AS reframe,
             any_value(run) AS run, min(seq) AS seq
      FROM {rows} GROUP BY testcase)
"""


def run_rows_sql(runs, run_name):
    """SELECT of run rows (with the parse's ``run_id``) from parsed runs (history/parse.py)."""
    return RUN_ROWS_SQL.format(sessions=sessions.sql(runs), runs=runs, run=engine.quote(run_name),
                               perf_last=_LAST.format(e='perf_e'))


def rows_sql(runs, reps, run_name):
    """SELECT of store rows from parsed runs and repetitions (history/parse.py)."""
    return (f'WITH r AS MATERIALIZED ({run_rows_sql(runs, run_name)}) '
            f'SELECT {wide_columns("r", "p")} FROM r LEFT JOIN {reps} p USING (run_id)')


RUNS, REPS = '.runs.parquet', '.reps.parquet'


def files(store):
    """The store's Parquet files (none for a store that does not exist yet): run and repetition
    tables, and files of the one-table layout before 0.x (still read, see ``scan_sql``)."""
    import glob
    return sorted(glob.glob(FILES.format(store=glob.escape(os.fspath(store)))))


def _kinds(paths):
    runs = [p for p in paths if p.endswith(RUNS)]
    reps = [p for p in paths if p.endswith(REPS)]
    return runs, reps, [p for p in paths if not p.endswith((RUNS, REPS))]


def _read(paths):
    listed = ', '.join(engine.quote(p) for p in paths)
    return f'read_parquet([{listed}], hive_partitioning = false, union_by_name = true)'


def scan_sql(paths):
    """A FROM item of store rows (one per repetition and phase, section 6) from these files: each
    run's row joined to its repetitions, and the rows of one-table files as they are."""
    runs, reps, wide = _kinds(paths)
    parts = [f'SELECT * FROM {_read(wide)}'] if wide else []
    if runs:
        p = _read(reps) if reps else ('(SELECT NULL::UUID AS write_id, NULL::BIGINT AS seq, '
                                      'NULL::VARCHAR AS phase, NULL::INTEGER AS rep, '
                                      'NULL::DOUBLE AS bytes, NULL::DOUBLE AS seconds LIMIT 0)')
        parts.append(f'SELECT {wide_columns("r", "p")} FROM {_read(runs)} r LEFT JOIN {p} p '
                     f'ON p.write_id = r.write_id AND p.seq = r.seq')
    return '(' + ' UNION ALL BY NAME '.join(parts) + ')'


def runs_scan_sql(paths):
    """A FROM item with the run columns of these files (of a one-table file: once a repetition)."""
    runs, _, wide = _kinds(paths)
    return '(' + ' UNION ALL BY NAME '.join(
        f'SELECT * FROM {_read(x)}' for x in (runs, wide) if x) + ')'


def write(runs, reps, store, name, con=None):
    """Write run rows (a relation of ``run_rows_sql``'s columns) and their repetitions (run_id,
    phase, rep, bytes, seconds) into the store: per system and year,
    ``system=<s>/year=<y>/<name>.runs.parquet`` and ``<name>.reps.parquet``, joined by
    (write_id, seq). Each file is written under a temporary name beside it and renamed, the
    repetitions first: a reader never sees a run whose repetitions are still to come, and a
    run table replaced meanwhile only loses its repetitions for that moment (a new write_id).
    Writers take turns for their renames (``_placing``): the last one's pair stands whole.
    A file of that name already there is replaced whole, and the one-table file ``<name>.parquet``
    this writer made before is removed (its rows are rewritten). Returns (the paths, how many
    repetitions)."""
    con = con or engine.connect()
    write_id = engine.quote(str(uuid.uuid4()))
    tmp = os.path.join(store, f'.incoming-{uuid.uuid4().hex}')
    os.makedirs(tmp)
    try:
        # zstd level 1: as small as the default level 3 here, and the run table is written faster
        part = ("COMPRESSION zstd, COMPRESSION_LEVEL 1, PARTITION_BY (system, year), "
                "FILENAME_PATTERN 'part_{i}'")
        nreps = con.execute(
            f"COPY (SELECT x.system, x.year, {write_id}::UUID AS write_id, x.seq, p.phase, "
            f"p.rep, p.bytes, p.seconds FROM {reps} p JOIN {runs} x USING (run_id)) "
            f"TO {engine.quote(os.path.join(tmp, 'reps'))} (FORMAT parquet, "
            f"{part}, WRITE_PARTITION_COLUMNS false)").fetchone()[0]
        con.execute(f"COPY (SELECT * EXCLUDE (run_id), {write_id}::UUID AS write_id FROM {runs}) "
                    f"TO {engine.quote(os.path.join(tmp, 'runs'))} (FORMAT parquet, "
                    f"{part}, WRITE_PARTITION_COLUMNS true)")
        with _placing(store):
            out = _place(os.path.join(tmp, 'reps'), store, name, REPS)
            out += _place(os.path.join(tmp, 'runs'), store, name, RUNS)
            for old in glob_old(store, name):
                os.remove(old)
        return sorted(out), nreps
    finally:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def _placing(store):
    """Hold the store while a writer renames its pair of files into place: two writers of one
    name (two nightlies importing the same perflogs at once) interleaving their renames would
    leave one's run table beside the other's repetitions, and those runs without any. An flock
    on the store directory; where the file system has none (Lustre mounted without -o flock),
    the renames go on unheld."""
    import errno
    import fcntl
    fd = os.open(store, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as err:
            if err.errno not in (errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOLCK, errno.EINVAL):
                raise
        yield
    finally:
        os.close(fd)        # releases the lock


def glob_old(store, name):
    """This writer's files of the one-table layout."""
    import glob
    return glob.glob(os.path.join(glob.escape(os.fspath(store)), 'system=*', 'year=*',
                                  glob.escape(name) + '.parquet'))


def _place(tmp, store, name, ext):
    """Rename what COPY wrote under ``tmp`` to its place in the store; returns the paths."""
    out = []
    for dirpath, _, names in os.walk(tmp):
        for n in names:
            target_dir = os.path.join(store, os.path.relpath(dirpath, tmp))
            os.makedirs(target_dir, exist_ok=True)
            suffix = '' if n == 'part_0.parquet' else '-' + n[len('part_'):-len('.parquet')]
            target = os.path.join(target_dir, f'{name}{suffix}{ext}')
            staged = os.path.join(target_dir, f'.{name}{suffix}{ext}.{uuid.uuid4().hex}.tmp')
            os.replace(os.path.join(dirpath, n), staged)     # same directory tree: a rename
            with open(staged, 'rb') as fp:
                os.fsync(fp.fileno())
            os.replace(staged, target)
            out.append(target)
    return out


def source_id(*paths):
    """A short stable name for what an import read (same sources: same file names, so importing
    them again replaces what they gave last time instead of adding it twice)."""
    text = '\n'.join(sorted(os.path.realpath(p) for p in paths))
    return hashlib.sha1(text.encode()).hexdigest()[:12]


class RunView:
    """Read-only sequence of run-record dicts built on demand from a runs table of the engine
    (what ``History.runs`` holds for store rows: 10^6 dicts would not fit the memory goal). Perf
    values and provenance are fetched for a block of runs when first asked."""

    BLOCK = 4096

    def __init__(self, runs_table, rows_table, session_of_run, history_sessions):
        con = engine.connect()
        self.table, self.rows = runs_table, rows_table
        self.cols = con.execute(f'SELECT * FROM {runs_table} ORDER BY run_id').fetchnumpy()
        self.sessions, self.session_of_run = history_sessions, session_of_run
        self._blocks = {}
        self._params = {}

    def __len__(self):
        return len(self.cols['run_id'])

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def _block(self, i):
        b = i // self.BLOCK
        if b not in self._blocks:
            con = engine.connect()
            lo, hi = b * self.BLOCK, (b + 1) * self.BLOCK
            got = con.execute(
                f'SELECT x.run_id, any_value(r.perf) AS perf, '
                f'any_value(r.provenance) AS provenance, '
                f'list(struct_pack(phase := r.phase, b := r.bytes, s := r.seconds) '
                f'ORDER BY r.phase, r.rep) FILTER (WHERE r.phase IS NOT NULL) AS reps '
                f'FROM {self.table} x JOIN {self.rows} r USING (testcase) '
                f'WHERE x.run_id >= {lo} AND x.run_id < {hi} GROUP BY x.run_id').fetchall()
            self._blocks[b] = {run_id: (perf, prov, reps) for run_id, perf, prov, reps in got}
        return self._blocks[b][i]

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        i = int(i)
        c = self.cols
        perf_text, prov_text, rep_list = self._block(i)
        reps = {}
        for item in rep_list or []:
            reps.setdefault(item['phase'], []).append((item['b'], item['s']))
        params = str(c['params'][i])
        if params not in self._params:
            self._params[params] = parse_params(params)
        perf = {}
        for name, v in (json.loads(perf_text) or {}).items() if perf_text else ():
            perf[name] = {k: v.get(k) for k in ('value', 'unit', 'ref', 'lower', 'upper')}
        session = self.sessions[self.session_of_run[i]]
        zone = sessions.zone(c['tzoff'][i])
        return {f: str(c[f][i]) for f in KEY_FIELDS + ('jobid', 'result', 'reframe')} | {
            'time': datetime.datetime.fromtimestamp(float(c['t'][i]), zone),
            'param_dict': self._params[params], 'reps': reps, 'perf': perf,
            'provenance': json.loads(prov_text) if prov_text else {},
            'session': session['id'], 'session_start': session['start'],
            'source': str(c['testcase'][i]), 'run': str(c['run'][i])}


def history_of_rows(rows):
    """The History of store rows (a table or view of the engine with the store's columns)."""
    con = engine.connect()
    runs = engine.temp_name('store_runs')
    reps = engine.temp_name('store_reps')
    con.execute(f'CREATE TEMP TABLE {runs} AS {RUNS_OF_ROWS_SQL.format(rows=rows)}')
    con.execute(f'CREATE TEMP TABLE {reps} AS SELECT x.run_id, r.phase, r.rep, r.bytes, r.seconds '
                f'FROM {rows} r JOIN {runs} x USING (testcase) WHERE r.phase IS NOT NULL')
    history = History.from_relations(
        runs, reps, lambda sess_of_run, hs: RunView(runs, rows, sess_of_run, hs))
    history.rows_table = rows
    return history


def empty_rows_sql():
    """A SELECT with the store's columns and no row (the shape of an empty history)."""
    con = engine.connect()
    from postprocess.history import parse
    text = engine.temp_name('empty_text')
    cols = ', '.join(f'NULL::{t} AS {engine.ident(n)}' for n, t in parse.TEXT_COLUMNS)
    con.execute(f'CREATE OR REPLACE TEMP TABLE {text} AS SELECT {cols} LIMIT 0')
    runs, reps = parse.parse(text)
    return rows_sql(runs, reps, '')


def runs_of_nights(history, nights):
    """Run records (with provenance) of the history's sessions on ``nights``: only those are
    made dicts, so a nightly's cost does not grow with the history (why/annotate.py, state.py)."""
    nights = set(nights)
    wanted = [i for i, s in enumerate(history.sessions) if s['night'] in nights]
    runs = history.runs
    of_run = getattr(runs, 'session_of_run', None)
    if of_run is not None:
        return [runs[int(i)] for i in np.flatnonzero(np.isin(of_run, wanted))]
    ids = {history.sessions[i]['id'] for i in wanted}
    return [r for r in runs if r.get('session') in ids]
