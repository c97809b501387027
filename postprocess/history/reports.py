"""ReFrame reports as text runs (history/parse.py): a run's ``report.json`` and the sessions of
ReFrame's results DB, read through ReFrame's own storage API
(``reframe.frontend.reporting.storage.StorageBackend``, the one `reframe --list-stored-sessions`
uses), not its private SQLite schema.

Each test case that reached its performance stage and carries ``iob_params`` is one text run:
``iob_params``, ``iob_reps`` and ``iob_provenance`` as logged, its perf values, and the session
(ReFrame's UUID, its start with the zone of ``time_start``).
"""
import datetime
import json
import os
import re
import sqlite3
import tempfile

import numpy as np

from postprocess.common.errors import InputFault, UsageError
from postprocess.history import engine, parse

_ZONE = re.compile(r'([+-])(\d\d):?(\d\d)$')


def _zone_of(text):
    """Seconds east of UTC of a ReFrame time stamp such as '20261128T234929+0100' (0 if none)."""
    match = _ZONE.search(text or '')
    if not match:
        return 0
    sign = -1 if match.group(1) == '-' else 1
    return sign * (int(match.group(2)) * 3600 + int(match.group(3)) * 60)


def _number(value):
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if np.isfinite(value) else None


def case_rows(report, source):
    """[text run dict] of one ReFrame report (a session)."""
    info = report.get('session_info') or {}
    uuid = info.get('uuid')
    tz = _zone_of(info.get('time_start'))
    start = info.get('time_start_unix')
    out = []
    for run_index, run in enumerate(report.get('runs') or []):
        for test_index, case in enumerate(run.get('testcases') or []):
            if not case.get('iob_params') or case.get('job_completion_time_unix') is None:
                continue            # not one of our checks, or it never ran
            if not case.get('perfvalues'):
                continue            # failed before its performance stage
            perf = []
            for name, vals in (case.get('perfvalues') or {}).items():
                value, ref, lower, upper, unit = (list(vals) + [None] * 5)[:5]
                perf.append({'name': name.split(':')[-1], 'text': str(value),
                             'value': _number(value), 'unit': unit or '', 'ref': _number(ref),
                             'lower': _number(lower), 'upper': _number(upper)})
            out.append({
                'source': f'{source}:{uuid}:{run_index}:{case.get("name")}', 'bad': None,
                't': float(case['job_completion_time_unix']), 'tzoff': tz,
                'system': case.get('system') or '', 'partition': case.get('partition') or '',
                'environ': case.get('environ') or '', 'check': case.get('name') or '',
                'params': case['iob_params'], 'jobid': str(case.get('jobid') or ''),
                'result': case.get('result') or '', 'reframe': f'reframe {info.get("version", "")}',
                'reps_text': case.get('iob_reps') or '',
                'prov_text': case.get('iob_provenance') or '', 'perf': perf,
                'session': uuid, 'session_start': float(start) if uuid and start else None,
                'session_tzoff': tz if uuid and start else None,
                'testcase': f'{uuid}:{run_index}:{test_index}' if uuid else None,
                'session_dir': os.path.dirname(info.get('prefix_output') or '')})
    return out


def text_table(rows):
    """A text-runs table of the engine from case_rows() dicts (run_id in order given)."""
    con = engine.connect()
    name = engine.temp_name('report_text')
    cols = ', '.join(f'{engine.ident(n)} {t}' for n, t in parse.TEXT_COLUMNS)
    con.execute(f'CREATE TEMP TABLE {name} ({cols})')
    if rows:
        frame = {n: np.array([r.get(n) for r in rows], dtype=object)
                 for n, _ in parse.TEXT_COLUMNS if n not in ('run_id', 'perf')}
        frame['run_id'] = np.arange(len(rows), dtype=np.int64)
        frame['perf'] = np.array([json.dumps(r['perf']) for r in rows], dtype=object)
        view = engine.temp_name('report_frame')
        con.register(view, frame)
        names = [n for n, _ in parse.TEXT_COLUMNS]
        select = ', '.join(f'CAST({engine.ident(n)} AS {t})' if n != 'perf' else
                           f'CAST(json({engine.ident(n)}) AS {t})' for n, t in parse.TEXT_COLUMNS)
        con.execute(f'INSERT INTO {name} ({", ".join(map(engine.ident, names))}) '
                    f'SELECT {select} FROM {view}')
        con.unregister(view)
    return name


def read_report(path):
    """case_rows() of a run's report.json (a missing or unreadable one: none, said by caller)."""
    with open(path, encoding='utf-8') as fp:
        report = json.load(fp)
    return case_rows(report, path) if isinstance(report, dict) else []


def _check_db_file(path):
    """A file that is not a SQLite database, or a damaged one, is named before ReFrame opens it
    (ReFrame would create its lock file and indexes first)."""
    try:
        conn = sqlite3.connect(f'file:{path}?mode=ro', uri=True)
        try:
            check = conn.execute('PRAGMA quick_check').fetchone()
        finally:
            conn.close()
    except sqlite3.DatabaseError as err:
        if 'malformed' in str(err):
            raise InputFault(f"damaged ReFrame results database '{path}': {err}") from None
        raise UsageError(f"not a readable ReFrame results database '{path}': {err}") from None
    if not check or check[0] != 'ok':
        raise InputFault(f"damaged ReFrame results database '{path}': "
                         f"{check[0] if check else 'integrity check gave nothing'}")


def read_results_db(path):
    """Every session of ReFrame's results DB at ``path`` (decoded reports), oldest first, read
    with ReFrame's storage API. ReFrame keeps a lock file beside the DB it reads: the DB is
    opened through a link in a private directory so that none lands beside the site's."""
    _check_db_file(path)
    from reframe.core import config, runtime
    from reframe.frontend.reporting.storage import StorageBackend
    from reframe.frontend.reporting.utility import QuerySelectorTestcase
    with tempfile.TemporaryDirectory(prefix='ioregress-rfdb-') as tmp:
        link = os.path.join(tmp, 'results.db')
        os.symlink(os.path.abspath(path), link)
        if runtime._runtime_context is None:
            site = config.load_config()
            site.select_subconfig('generic')
            runtime.init_runtime(site)
        runtime.runtime().site_config.add_sticky_option('storage/sqlite_db_file', link)
        try:
            backend = StorageBackend.default()
            end = datetime.datetime.now().timestamp() + 10 * 365 * 86400
            sessions = backend.fetch_sessions(QuerySelectorTestcase(time_period=(0, end)))
        except sqlite3.DatabaseError as err:
            raise UsageError(f"not a ReFrame results database '{path}': {err}") from None
        except Exception as err:        # noqa: BLE001 -- ReFrame's own errors, one line
            raise UsageError(f"not a ReFrame results database '{path}': "
                             f"{type(err).__name__}: {err}") from None
        finally:
            runtime.runtime().site_config.remove_sticky_option('storage/sqlite_db_file')
    sessions.sort(key=lambda s: (s.get('session_info') or {}).get('time_start_unix') or 0)
    return sessions


def records(rows):
    """Run records (history/parse.py records) of case_rows() dicts."""
    runs, reps = parse.parse(text_table(rows))
    return parse.records(runs, reps)


def db_records(path):
    """Run records of every session of ReFrame's results DB at ``path``."""
    return records([r for s in read_results_db(path) for r in case_rows(s, path)])
