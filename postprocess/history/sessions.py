"""Sessions, in SQL: the one place the session rule is written.

ReFrame's report (and its results DB) knows each run's session; a perflog line does not, so runs
of one system:partition whose completion times are less than ``SESSION_GAP`` apart form one
session (a nightly run that crosses midnight stays one session), named
``<system>:<partition>@<ISO start>``. A session's night is the local date it started.

``SESSIONS_SQL`` takes a relation of runs (run_id, system, partition, t, tzoff, session,
session_start, session_tzoff; times in Unix seconds, zone offsets in seconds) and gives every run
its session, start and night.
"""
import datetime

import numpy as np

from postprocess.history import engine

SESSION_GAP = datetime.timedelta(hours=3)



SESSIONS_SQL = r"""
WITH free AS (
  SELECT run_id, system, partition, t, tzoff,
         coalesce(t - lag(t) OVER w > {gap}, true) AS new
  FROM {runs} WHERE session IS NULL
  WINDOW w AS (PARTITION BY system, partition ORDER BY t, run_id)),
started AS (
  SELECT run_id, system, partition,
         last_value(CASE WHEN new THEN {{'t': t, 'tz': tzoff}} END IGNORE NULLS) OVER (
           PARTITION BY system, partition ORDER BY t, run_id ROWS UNBOUNDED PRECEDING) AS start
  FROM free),
given AS (
  SELECT r.run_id, coalesce(r.session, s.system || ':' || s.partition || '@'
                                       || iso_time(s.start.t, s.start.tz)) AS session,
         coalesce(r.session_start, s.start.t) AS session_start,
         coalesce(r.session_tzoff, s.start.tz, 0) AS session_tzoff
  FROM {runs} r LEFT JOIN started s USING (run_id))
SELECT run_id, session, session_start, session_tzoff,
       CAST(local_ts(session_start, session_tzoff) AS DATE) AS night
FROM given
"""


def sql(runs):
    """SELECT run_id, session, session_start, session_tzoff, night for the runs relation."""
    return SESSIONS_SQL.format(runs=runs, gap=SESSION_GAP.total_seconds())


def zone(seconds):
    return datetime.timezone(datetime.timedelta(seconds=int(seconds)))


def aware(t, tz):
    return datetime.datetime.fromtimestamp(float(t), zone(tz))


def record_columns(runs):
    """numpy columns of run records for SESSIONS_SQL (run_id = position in ``runs``)."""
    def offset(when):
        return int(when.utcoffset().total_seconds()) if when is not None and when.tzinfo else 0
    starts = [r.get('session_start') if r.get('session') else None for r in runs]
    return {
        'run_id': np.arange(len(runs), dtype=np.int64),
        'system': np.array([r['system'] for r in runs], dtype=object),
        'partition': np.array([r['partition'] for r in runs], dtype=object),
        't': np.array([r['time'].timestamp() for r in runs], dtype=np.float64),
        'tzoff': np.array([offset(r['time']) for r in runs], dtype=np.int32),
        'session': np.array([r.get('session') or None for r in runs], dtype=object),
        'session_start': np.array([s.timestamp() if s is not None else np.nan for s in starts],
                                  dtype=np.float64),
        'session_tzoff': np.array([offset(s) if s is not None else 0 for s in starts],
                                  dtype=np.int32),
    }


def assign_sessions(runs):
    """Give every run record its ``session`` and ``session_start`` (in place): those it has
    (the results DB's, a report's), the others by the time-gap rule of SESSIONS_SQL."""
    if not runs:
        return runs
    con = engine.connect()
    name = engine.temp_name('record_runs')
    cols = record_columns(runs)
    con.register(name, cols)
    view = engine.temp_name('record_runs_v')
    con.execute(f'CREATE TEMP VIEW {view} AS SELECT * REPLACE ('
                f'CASE WHEN isnan(session_start) THEN NULL ELSE session_start END AS session_start, '
                f'CASE WHEN isnan(session_start) THEN NULL ELSE session_tzoff END AS session_tzoff) '
                f'FROM {name}')
    got = con.execute(f'SELECT run_id, session, session_start, session_tzoff FROM ({sql(view)}) '
                      f'ORDER BY run_id').fetchnumpy()
    con.execute(f'DROP VIEW {view}')
    con.unregister(name)
    cache = {}
    for i, sess, st, stz in zip(got['run_id'], got['session'], got['session_start'],
                                got['session_tzoff']):
        run = runs[int(i)]
        if run.get('session') and run.get('session_start') is not None:
            continue
        run['session'] = str(sess)
        key = (float(st), int(stz))
        if key not in cache:
            cache[key] = aware(*key)
        run['session_start'] = cache[key]
    return runs
