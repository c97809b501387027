"""The tidy history table: one row per repetition and phase of every run.

Rows are keyed by system, partition, environ, check and iob_params (the regression key), the run's
completion time, its session and night; they hold raw bytes and seconds and the bandwidth derived
from them (MiB/s = 2^20 bytes/s). Keys, sessions (history/sessions.py), the rows' order and the
baselines are SQL over two relations, runs and repetitions, whatever they come from (the results
store, perflogs, ReFrame's results DB or run records); the columns come back as numpy arrays for
the statistics; ``rows()`` gives plain dicts for small outputs.

Baseline: runs whose iob_params say ``backend=fio`` (reframe_checks/baseline_fio.py) measure the
storage itself in the same session; every other run's repetitions also get an efficiency, bandwidth
divided by the median baseline bandwidth of the same session and phase: the baseline at the run's
own rank count where the session has one (``shape_matched``), else the session's smallest-rank
baseline, a load normaliser only.
"""
import datetime

import numpy as np

from contract.perflog import PHASES
from postprocess.history import engine, sessions

MiB = float(2 ** 20)
KEY_FIELDS = ('system', 'partition', 'environ', 'check', 'params')
BASELINE_BACKEND = 'fio'
PHASE_CASE = "CASE phase " + ' '.join(f"WHEN '{p}' THEN {i}" for i, p in enumerate(PHASES)) + ' END'


def param_sql(params, name):
    """SQL: the value of ``name`` in an iob_params column ('' when absent)."""
    return (f"coalesce(trim(regexp_extract({params}, '(?:^|,)\\s*{name}\\s*=([^,]*)', 1)), '')")


# keys, sessions and repetition rows of runs {runs} and repetitions {reps}
KEYS_SQL = """
SELECT system, partition, environ, "check", params, min(run_id) AS first
FROM {runs} GROUP BY ALL ORDER BY first
"""

SESSIONS_LIST_SQL = """
SELECT session, arg_min(session_start, run_id) AS st, arg_min(session_tzoff, run_id) AS stz,
       arg_min(night, run_id)::VARCHAR AS night, min(run_id) AS first
FROM {sess} GROUP BY session ORDER BY first
"""

ROWS_SQL = """
WITH k AS (SELECT *, row_number() OVER (ORDER BY first) - 1 AS key,
                  {backend} = '{base}' AS is_base,
                  CASE WHEN regexp_matches({ranks}, '^[0-9]+$') THEN CAST({ranks} AS BIGINT)
                       ELSE -1 END AS ranks
           FROM ({keys})),
s AS (SELECT session, row_number() OVER (ORDER BY first) - 1 AS sid FROM ({slist})),
r AS (SELECT r.run_id, k.key, s.sid, r.t, x.night, k.is_base, k.ranks
      FROM {runs} r JOIN k USING (system, partition, environ, "check", params)
      JOIN {sess} x USING (run_id) JOIN s ON s.session = x.session),
rows AS (
  SELECT r.run_id AS run, r.key, {phase} AS phase, p.rep, p.bytes, p.seconds, r.sid AS session,
         r.t AS time, p.bytes / p.seconds / {mib} AS bw_MiBps, r.is_base, r.ranks
  FROM {reps} p JOIN r USING (run_id) WHERE p.phase IN {phases}),
base AS (
  SELECT session, phase, ranks, median(bw_MiBps) AS med FROM rows WHERE is_base GROUP BY ALL),
fallback AS (
  SELECT session, phase, arg_min(med, ranks) AS med FROM base GROUP BY ALL)
SELECT rows.* EXCLUDE (is_base, ranks),
       CASE WHEN is_base THEN NULL ELSE bw_MiBps / coalesce(b.med, f.med) END AS efficiency,
       b.med IS NOT NULL AND NOT is_base AS shape_matched,
       is_base, rows.ranks
FROM rows LEFT JOIN base b USING (session, phase, ranks) LEFT JOIN fallback f USING (session, phase)
ORDER BY run, phase, rep
"""


class History:
    """Column-wise repetition table (see module docstring). ``History(run_records)`` builds one
    from run records (perflog.read_perflogs, the results DB, a test's runs); ``from_relations``
    from tables of the engine (the results store, perflogs)."""

    def __init__(self, runs):
        sessions.assign_sessions(runs)
        con = engine.connect()
        name, reps = engine.temp_name('hist_runs'), engine.temp_name('hist_reps')
        cols = sessions.record_columns(runs)
        for f in ('environ', 'check', 'params'):
            cols[f] = np.array([r[f] for r in runs], dtype=object)
        cols['session'] = np.array([r['session'] for r in runs], dtype=object)
        cols['session_start'] = np.array([r['session_start'].timestamp() for r in runs],
                                         dtype=np.float64)
        cols['session_tzoff'] = np.array([int(r['session_start'].utcoffset().total_seconds())
                                          for r in runs], dtype=np.int32)
        con.register(name, cols)
        rep_cols = {n: [] for n in ('run_id', 'phase', 'rep', 'bytes', 'seconds')}
        for i, run in enumerate(runs):
            for phase in PHASES:
                values = run['reps'].get(phase) or []
                rep_cols['run_id'] += [i] * len(values)
                rep_cols['phase'] += [phase] * len(values)
                rep_cols['rep'] += range(len(values))
                rep_cols['bytes'] += [b for b, _ in values]
                rep_cols['seconds'] += [s for _, s in values]
        con.register(reps, {'run_id': np.asarray(rep_cols['run_id'], dtype=np.int64),
                            'phase': np.asarray(rep_cols['phase'], dtype=object),
                            'rep': np.asarray(rep_cols['rep'], dtype=np.int32),
                            'bytes': np.asarray(rep_cols['bytes'], dtype=np.float64),
                            'seconds': np.asarray(rep_cols['seconds'], dtype=np.float64)})
        self._load(name, reps, runs)
        con.unregister(name)
        con.unregister(reps)

    @classmethod
    def from_relations(cls, runs_rel, reps_rel, run_view):
        """The History of runs relation ``runs_rel`` (run_id numbering the runs from 0, key
        fields, t, tzoff, session, session_start, session_tzoff) and repetitions ``reps_rel``
        (run_id, phase, rep, bytes, seconds); ``run_view(run_ids, sessions)`` gives ``runs``."""
        self = cls.__new__(cls)
        self._load(runs_rel, reps_rel, run_view)
        return self

    def _load(self, runs_rel, reps_rel, runs):
        con = engine.connect()
        self._groups = {}
        self._baseline_var = {}
        sess = engine.temp_name('hist_sessions')
        con.execute(f'CREATE TEMP TABLE {sess} AS {sessions.sql(runs_rel)}')
        keys_sql = KEYS_SQL.format(runs=runs_rel)
        slist_sql = SESSIONS_LIST_SQL.format(sess=sess)
        self.keys = [tuple(k[:5]) for k in con.execute(keys_sql).fetchall()]
        self.sessions = []
        cache = {}
        for ident, st, stz, night, _ in con.execute(slist_sql).fetchall():
            start = cache.setdefault((st, stz), sessions.aware(st, stz))
            self.sessions.append({'id': ident, 'start': start, 'night': night})
        got = con.execute(ROWS_SQL.format(
            keys=keys_sql, slist=slist_sql, runs=runs_rel, sess=sess, reps=reps_rel,
            phase=PHASE_CASE, mib=MiB, base=BASELINE_BACKEND,
            backend=param_sql('params', 'backend'), ranks=param_sql('params', 'ranks'),
            phases='(' + ', '.join(f"'{p}'" for p in PHASES) + ')')).fetchnumpy()
        ints = ('key', 'run', 'phase', 'rep', 'session')
        self.col = {n: np.asarray(got[n], dtype=np.int64 if n in ints else np.float64)
                    for n in ints + ('bytes', 'seconds', 'bw_MiBps', 'time')}
        self.col['efficiency'] = np.asarray(
            np.ma.filled(np.ma.asarray(got['efficiency'], dtype=np.float64), np.nan))
        self.col['shape_matched'] = np.asarray(got['shape_matched'], dtype=bool)
        self._is_base = np.asarray(got['is_base'], dtype=bool)
        self._ranks = np.asarray(got['ranks'], dtype=np.int64)
        self.run_key = np.asarray(con.execute(
            f'WITH k AS (SELECT *, row_number() OVER (ORDER BY first) - 1 AS key FROM ({keys_sql})) '
            f'SELECT k.key FROM {runs_rel} JOIN k USING (system, partition, environ, "check", '
            f'params) ORDER BY run_id').fetchnumpy()['key'], dtype=np.int64)
        if callable(runs):
            sess_of_run = con.execute(
                f'SELECT s.session FROM {sess} s ORDER BY run_id').fetchnumpy()['session']
            sid = {s['id']: i for i, s in enumerate(self.sessions)}
            runs = runs(np.array([sid[str(s)] for s in sess_of_run], dtype=np.int64),
                        self.sessions)
        self.runs = runs
        con.execute(f'DROP TABLE {sess}')

    def __len__(self):
        return len(self.col['key'])

    def baseline_var(self, session_id, phase_id):
        """Variance of log(baseline median) of a session and phase (0 when unknown): of the
        session's smallest-rank baseline, computed once when asked (most sessions of years are
        never asked, and scipy costs 0.8 s to load)."""
        slot = (int(session_id), int(phase_id))
        if slot not in self._baseline_var:
            mine = self._is_base & (self.col['session'] == slot[0]) & (self.col['phase'] == slot[1])
            value = 0.0
            if mine.any():
                low = mine & (self._ranks == self._ranks[mine].min())
                from postprocess.common.stats import median_log_var
                value = median_log_var(self.col['bw_MiBps'][low])
            self._baseline_var[slot] = value
        return self._baseline_var[slot]

    def key_dict(self, kid):
        return dict(zip(KEY_FIELDS, self.keys[kid]))

    def groups(self, value='bw_MiBps'):
        """{(key_id, phase): [(session_id, values array), ...] ordered by session start}."""
        if value not in self._groups:
            self._groups[value] = self._make_groups(value)
        return self._groups[value]

    def _make_groups(self, value):
        """Rows ordered by key, phase, session start (then session), one slice per (key, phase,
        session), in row order within it; the values stay numpy."""
        out = {}
        vals = self.col[value]
        idx = np.flatnonzero(np.isfinite(vals))
        if not idx.size:
            return out
        start = np.array([s['start'].timestamp() for s in self.sessions], dtype=np.float64)
        key, phase, sess = self.col['key'][idx], self.col['phase'][idx], self.col['session'][idx]
        order = np.lexsort((idx, sess, start[sess], phase, key))
        idx, key, phase, sess = idx[order], key[order], phase[order], sess[order]
        cut, heads, _ = slices(key, phase, sess)
        for h, part in zip(heads.tolist(), np.split(vals[idx], cut)):
            out.setdefault((int(key[h]), int(phase[h])), []).append((int(sess[h]), part))
        return out

    def reference_bands(self):
        """{(key_id, phase): (low, high or None, ref)} from each key's latest perflog reference
        (the latest run of the key decides: without a reference there, no band)."""
        kids = np.asarray(self.run_key)
        uniq, first_from_end = np.unique(kids[::-1], return_index=True)
        bands = {}
        for kid, run_id in zip(uniq.tolist(), (kids.size - 1 - first_from_end).tolist()):
            run = self.runs[run_id]
            for phase in PHASES:
                perf = run['perf'].get(f'{phase}_bw') or {}
                ref = perf.get('ref')
                if ref:
                    lower, upper = perf.get('lower'), perf.get('upper')
                    bands[(kid, phase)] = (ref * (1 + lower) if lower is not None else 0.0,
                                           ref * (1 + upper) if upper is not None else None, ref)
        return bands

    def rows(self, limit=None):
        """Plain dict rows (tidy table) for printing or CSV."""
        out = []
        n = len(self) if limit is None else min(limit, len(self))
        for i in range(n):
            run = self.runs[self.col['run'][i]]
            row = self.key_dict(self.col['key'][i])
            row.update(time=run['time'].isoformat(),
                       night=self.sessions[self.col['session'][i]]['night'],
                       session=run['session'], phase=PHASES[self.col['phase'][i]],
                       rep=int(self.col['rep'][i]), bytes=int(self.col['bytes'][i]),
                       seconds=float(self.col['seconds'][i]),
                       bw_MiBps=float(self.col['bw_MiBps'][i]),
                       efficiency=float(self.col['efficiency'][i]), result=run['result'])
            out.append(row)
        return out


def slices(*cols):
    """(cuts, first, last): where sorted columns change together, as np.split's cut points and
    each slice's first and last index."""
    change = np.zeros(len(cols[0]) - 1, dtype=bool)
    for c in cols:
        change |= np.diff(c) != 0
    cut = np.flatnonzero(change) + 1
    return cut, np.concatenate([[0], cut]), np.concatenate([cut, [len(cols[0])]]) - 1


def filter_runs(runs, system=None, date_from=None, date_to=None):
    """Runs of ``system`` whose completion date is within [date_from, date_to] (ISO dates)."""
    out = []
    for run in runs:
        day = run['time'].date().isoformat()
        if system and run['system'] != system:
            continue
        if (date_from and day < date_from) or (date_to and day > date_to):
            continue
        out.append(run)
    return out


def merge_runs(*lists):
    """Union of run lists; a run seen in two sources is kept once (the first list's)."""
    seen, merged = set(), []
    for runs in lists:
        for run in runs:
            ident = (run['system'], run['partition'], run['environ'], run['check'],
                     run['jobid'], int(run['time'].timestamp()))
            if ident not in seen:
                seen.add(ident)
                merged.append(run)
    merged.sort(key=lambda r: r['time'])
    return merged


def utc(t):
    return datetime.datetime.fromtimestamp(float(t), datetime.timezone.utc)
