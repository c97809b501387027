"""The tidy history table: one row per repetition and phase of every run.

Rows are keyed by system, partition, environ, check and iob_params (the regression key), the run's
completion time, its session and night; they hold raw bytes and seconds and the bandwidth derived
from them (MiB/s = 2^20 bytes/s). Stored column-wise in numpy arrays so 10^5 perflog lines (10^6
repetition rows) stay fast; ``rows()`` gives plain dicts for small outputs.

Sessions: the ReFrame results DB knows each run's session; perflog lines do not, so runs of one
system:partition whose completion times are less than ``SESSION_GAP`` apart form one session
(a nightly run that crosses midnight stays one session). A session's night is the date it started.

Baseline: runs whose iob_params say ``backend=fio`` (reframe_checks/baseline_fio.py) measure the
storage itself in the same session; every other run's repetitions also get an efficiency, bandwidth
divided by the median baseline bandwidth of the same session and phase.
"""
import collections
import datetime
import json
import os
import sqlite3

import numpy as np

from postprocess.history.perflog import PHASES, Diagnostics, parse_params, parse_reps

MiB = float(2 ** 20)
SESSION_GAP = datetime.timedelta(hours=3)
KEY_FIELDS = ('system', 'partition', 'environ', 'check', 'params')
BASELINE_BACKEND = 'fio'


def is_baseline(run):
    return run['param_dict'].get('backend') == BASELINE_BACKEND


def assign_sessions(runs):
    """Give every run without a session (perflog runs) one by time gaps per system:partition."""
    last = {}
    for run in sorted(runs, key=lambda r: r['time']):
        if run['session']:
            continue
        where = (run['system'], run['partition'])
        prev = last.get(where)          # (session id, its start, the previous run's time)
        if prev is None or run['time'] - prev[2] > SESSION_GAP:
            prev = (f'{where[0]}:{where[1]}@{run["time"].isoformat()}', run['time'], None)
        last[where] = (prev[0], prev[1], run['time'])
        run['session'] = prev[0]
        run['session_start'] = prev[1]


def read_results_db(path, diag=None):
    """Run records from ReFrame's results DB (``storage.enable``; sqlite, schema 1.0 of 4.10)."""
    diag = Diagnostics() if diag is None else diag
    runs = []
    try:
        conn = sqlite3.connect(f'file:{path}?mode=ro', uri=True)
        blobs = conn.execute('SELECT uuid, session_start_unix, json_blob FROM sessions '
                             'ORDER BY session_start_unix').fetchall()
        conn.close()
    except sqlite3.Error as err:
        diag.add(path, f'cannot read results DB: {err}')
        return runs, diag
    for uuid, start, blob in blobs:
        try:
            report = json.loads(blob)
        except ValueError:
            diag.add(f'{path}:{uuid}', 'session JSON unreadable (skipped)')
            continue
        start = datetime.datetime.fromtimestamp(start, datetime.timezone.utc)
        # the session's --prefix: a nightly's run directory (ci/nightly.sh), for its COMPLETE mark
        output = (report.get('session_info') or {}).get('prefix_output') or ''
        session_dir = os.path.dirname(output) if output else ''
        for run_index, run in enumerate(report.get('runs', [])):
            for case in run.get('testcases', []):
                where = f'{path}:{uuid}:{run_index}:{case.get("name")}'
                record = _db_case(case, uuid, start, where, diag)
                if record is not None:
                    record['session_dir'] = session_dir
                    runs.append(record)
    runs.sort(key=lambda r: r['time'])
    return runs, diag


def _db_case(case, uuid, start, where, diag):
    if not case.get('iob_params') or case.get('job_completion_time_unix') is None:
        return None                 # not one of our checks, or it never ran
    if not case.get('perfvalues'):
        return None                 # failed before its performance stage: no perflog line either
    try:
        params = parse_params(case['iob_params'])
    except ValueError as err:
        diag.add(where, f'{err} (skipped)')
        return None
    try:
        provenance = json.loads(case.get('iob_provenance') or '{}')
    except ValueError:
        provenance = {'raw': case.get('iob_provenance')}
    perf = {}
    for name, vals in (case.get('perfvalues') or {}).items():
        value, ref, lower, upper, unit = (list(vals) + [None] * 5)[:5]
        perf[name.split(':')[-1]] = {'value': value, 'unit': unit, 'ref': ref,
                                     'lower': lower, 'upper': upper}
    return {
        'time': datetime.datetime.fromtimestamp(case['job_completion_time_unix'],
                                                datetime.timezone.utc),
        'system': case.get('system', ''), 'partition': case.get('partition', ''),
        'environ': case.get('environ', ''), 'check': case.get('name', ''),
        'params': case['iob_params'], 'param_dict': params, 'jobid': str(case.get('jobid', '')),
        'result': case.get('result', ''), 'reps': parse_reps(case.get('iob_reps') or '', where, diag),
        'provenance': provenance, 'perf': perf, 'reframe': '', 'session': uuid,
        'session_start': start, 'source': where,
    }


def merge_runs(*lists):
    """Union of run lists; a run seen in both the DB and a perflog is kept once (the DB's)."""
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


def sessions_of(where, times):
    """Session of every run (runs of one ``where`` code less than SESSION_GAP apart, as
    assign_sessions), numbered in order of their first run, and each session's first run."""
    n = times.size
    order = np.lexsort((times, where))
    new = np.ones(n, dtype=bool)
    if n > 1:
        new[1:] = (np.diff(where[order]) != 0) | \
                  (np.diff(times[order]) > SESSION_GAP.total_seconds())
    sess_sorted = np.cumsum(new) - 1
    first_run = order[new]
    rank = np.empty(first_run.size, dtype=np.int64)
    rank[np.argsort(first_run, kind='stable')] = np.arange(first_run.size)
    session_of_run = np.empty(n, dtype=np.int64)
    session_of_run[order] = rank[sess_sorted]
    return session_of_run, np.sort(first_run)


def last_nights_mask(index, mask, nights):
    """Runs of each system's last ``nights`` nights (sessions' start dates, counting only nights
    with a repetition) among the runs where ``mask`` is true; whole sessions, so the History of
    the selection has the same sessions as the whole one's. ``index``: a RunTable with time,
    tzoff, system, partition and reps (repetitions per run)."""
    c = index.cols
    idx = np.flatnonzero(mask)
    out = np.zeros(mask.size, dtype=bool)
    if not idx.size:
        return out
    system = c['system'][idx]
    where = system * (len(index.strings) + 1) + c['partition'][idx]
    session, first = sessions_of(where, c['time'][idx])
    night = np.floor((c['time'][idx][first] + c['tzoff'][idx][first]) / 86400).astype(np.int64)
    measured = np.bincount(session, weights=c['reps'][idx], minlength=first.size) > 0
    keep_session = np.zeros(first.size, dtype=bool)
    sess_system = system[first]
    for code in np.unique(sess_system):
        mine = sess_system == code
        days = np.unique(night[mine & measured])
        keep_session |= (mine & (night >= days[-nights])) if days.size >= nights else mine
    out[idx] = keep_session[session]
    return out


class History:
    """Column-wise repetition table built from run records (see module docstring)."""

    def __init__(self, runs):
        assign_sessions(runs)
        self.runs = runs
        self._groups = {}
        self.keys, key_index = [], {}
        self.sessions, session_index = [], {}
        cols = {n: [] for n in ('key', 'run', 'phase', 'rep', 'bytes', 'seconds', 'session')}
        for run_id, run in enumerate(runs):
            key = tuple(run[f] for f in KEY_FIELDS)
            kid = key_index.setdefault(key, len(self.keys))
            if kid == len(self.keys):
                self.keys.append(key)
            sid = session_index.setdefault(run['session'], len(self.sessions))
            if sid == len(self.sessions):
                self.sessions.append({'id': run['session'], 'start': run['session_start'],
                                      'night': run['session_start'].date().isoformat()})
            for phase_id, phase in enumerate(PHASES):
                reps = run['reps'].get(phase)
                if not reps:
                    continue
                n = len(reps)
                cols['key'] += [kid] * n
                cols['run'] += [run_id] * n
                cols['phase'] += [phase_id] * n
                cols['rep'] += range(n)
                cols['bytes'] += [b for b, _ in reps]
                cols['seconds'] += [t for _, t in reps]
                cols['session'] += [sid] * n
        self.run_key = np.array([key_index[tuple(r[f] for f in KEY_FIELDS)] for r in runs],
                                dtype=np.int64)
        run_times = np.array([r['time'].timestamp() for r in runs], dtype=np.float64)
        self._finish(cols, run_times)

    @classmethod
    def from_table(cls, table):
        """The same table built from a columnar ``cache.RunTable`` (time-sorted, perflog runs):
        10^6 runs without 10^6 dicts; ``runs`` is then a ``cache.RunView``."""
        from postprocess.history.columns import RunView
        self = cls.__new__(cls)
        self._groups = {}
        c, strings = table.cols, table.strings
        n = len(table)
        times = c['time']
        session_of_run, first_run = sessions_of(c['system'] * (len(strings) + 1) + c['partition'],
                                                times)
        self.sessions = []
        for row in first_run:
            row = int(row)
            zone = datetime.timezone(datetime.timedelta(seconds=int(c['tzoff'][row])))
            start = datetime.datetime.fromtimestamp(float(times[row]), zone)
            ident = f'{strings[c["system"][row]]}:{strings[c["partition"][row]]}@{start.isoformat()}'
            self.sessions.append({'id': ident, 'start': start, 'night': start.date().isoformat()})
        # keys in order of first appearance
        key_codes = np.stack([c[f] for f in KEY_FIELDS], axis=1) if n else np.zeros((0, 5), int)
        uniq, first, key_of_run = np.unique(key_codes, axis=0, return_index=True,
                                            return_inverse=True)
        key_of_run = key_of_run.reshape(-1)
        rank = np.empty(first.size, dtype=np.int64)
        rank[np.argsort(first, kind='stable')] = np.arange(first.size)
        self.keys = [None] * first.size
        for u, codes in enumerate(uniq):
            self.keys[rank[u]] = tuple(strings[int(x)] for x in codes)
        key_of_run = rank[key_of_run] if n else key_of_run
        self.run_key = key_of_run
        # repetition rows of the known phases, ordered by run, phase, repetition
        phase_code = {strings.index(p) if p in strings else -1: i for i, p in enumerate(PHASES)}
        phase_map = np.full(len(strings) + 1, -1, dtype=np.int64)
        for code, i in phase_code.items():
            if code >= 0:
                phase_map[code] = i
        counts = np.diff(c['rep_ptr'])
        rep_run = np.repeat(np.arange(n), counts)
        rep_phase = phase_map[c['rep_phase']] if c['rep_phase'].size else c['rep_phase']
        known = rep_phase >= 0
        rep_run, rep_phase = rep_run[known], rep_phase[known]
        rep_bytes, rep_secs = c['rep_bytes'][known], c['rep_secs'][known]
        slot = rep_run * len(PHASES) + rep_phase
        if slot.size and np.any(slot[1:] < slot[:-1]):     # iob_reps lists read before write
            order = np.argsort(slot, kind='stable')        # stable: repetitions keep their order
            rep_run, rep_phase, slot = rep_run[order], rep_phase[order], slot[order]
        else:
            order = slice(None)
        starts = np.flatnonzero(np.r_[True, slot[1:] != slot[:-1]]) if slot.size else slot
        rep_index = np.arange(slot.size) - np.repeat(starts, np.diff(np.r_[starts, slot.size]))
        cols = {'key': key_of_run[rep_run], 'run': rep_run, 'phase': rep_phase, 'rep': rep_index,
                'bytes': rep_bytes[order], 'seconds': rep_secs[order],
                'session': session_of_run[rep_run]}
        self.runs = RunView(table, self.sessions, session_of_run)
        self._finish(cols, times)
        return self

    def _finish(self, cols, run_times):
        ints = ('key', 'run', 'phase', 'rep', 'session')
        self.col = {n: np.asarray(v, dtype=np.int64 if n in ints else np.float64)
                    for n, v in cols.items()}
        self.col['bw_MiBps'] = self.col['bytes'] / self.col['seconds'] / MiB
        self.col['time'] = run_times[self.col['run']] if len(run_times) else np.zeros(0)
        self.col['efficiency'] = self._efficiency()

    def __len__(self):
        return len(self.col['key'])

    def _efficiency(self):
        """Bandwidth / median baseline bandwidth of the same session and phase (NaN if none):
        the baseline at the run's own rank count where the session has one (shape_matched
        True), else the session's smallest-rank baseline, a load normaliser only."""
        eff = np.full(len(self), np.nan)
        self.col['shape_matched'] = np.zeros(len(self), dtype=bool)
        self._baseline_var = {}
        params = [parse_params(k[4]) for k in self.keys]
        baseline_keys = [i for i, p in enumerate(params) if p.get('backend') == BASELINE_BACKEND]
        if not len(self) or not baseline_keys:
            return eff
        key_ranks = np.array([int(p['ranks']) if p.get('ranks', '').isdigit() else -1
                              for p in params], dtype=np.int64)
        is_base = np.isin(self.col['key'], baseline_keys)
        nphase = len(PHASES)
        slot = self.col['session'] * nphase + self.col['phase']
        ranks = key_ranks[self.col['key']]
        chunks = collections.defaultdict(list)      # (slot, ranks) -> baseline bandwidths
        for s, r, bw in zip(slot[is_base], ranks[is_base], self.col['bw_MiBps'][is_base]):
            chunks[(int(s), int(r))].append(bw)
        matched, fallback = {}, {}
        for (s, r), vals in sorted(chunks.items()):
            matched[(s, r)] = np.median(vals)
            if s not in fallback:                   # smallest rank count first (sorted)
                fallback[s] = matched[(s, r)]
                self._baseline_var[s] = np.asarray(vals)   # its variance when asked (baseline_var)
        pairs = slot * (int(ranks.max()) + 2) + ranks + 1
        uniq, inverse = np.unique(pairs, return_inverse=True)
        ref = np.full(len(uniq), np.nan)
        hit = np.zeros(len(uniq), dtype=bool)
        for j, p in enumerate(uniq):
            s, r = divmod(int(p), int(ranks.max()) + 2)
            key = (s, r - 1)
            hit[j] = key in matched
            ref[j] = matched[key] if hit[j] else fallback.get(s, np.nan)
        eff = self.col['bw_MiBps'] / ref[inverse]
        self.col['shape_matched'] = hit[inverse] & ~is_base
        eff[is_base] = np.nan
        return eff

    def baseline_var(self, session_id, phase_id):
        """Variance of log(baseline median) of a session and phase (0 when unknown)."""
        slot = session_id * len(PHASES) + phase_id
        value = self._baseline_var.get(slot, 0.0)
        if not isinstance(value, float):            # computed once, on demand: most sessions of
            from postprocess.common.stats import median_log_var     # years are never asked (and
            value = self._baseline_var[slot] = median_log_var(value)  # scipy costs 0.8 s to load)
        return value

    def key_dict(self, kid):
        return dict(zip(KEY_FIELDS, self.keys[kid]))

    def groups(self, value='bw_MiBps'):
        """{(key_id, phase): [(session_id, values array), ...] ordered by session start}."""
        if value not in self._groups:
            self._groups[value] = self._make_groups(value)
        return self._groups[value]

    def _make_groups(self, value):
        out = {}
        if not len(self):
            return out
        key, phase, sess = self.col['key'], self.col['phase'], self.col['session']
        vals = self.col[value]
        order = np.lexsort((sess, phase, key))
        triples = np.stack([key[order], phase[order], sess[order]], axis=1)
        change = np.flatnonzero(np.any(np.diff(triples, axis=0) != 0, axis=1)) + 1
        for idx in np.split(order, change):
            k, p, s = int(key[idx[0]]), int(phase[idx[0]]), int(sess[idx[0]])
            v = vals[idx]
            v = v[np.isfinite(v)]
            if v.size:
                out.setdefault((k, p), []).append((s, v))
        for lst in out.values():
            lst.sort(key=lambda item: self.sessions[item[0]]['start'])
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
            row.update(time=run['time'].isoformat(), night=self.sessions[self.col['session'][i]]['night'],
                       session=run['session'], phase=PHASES[self.col['phase'][i]],
                       rep=int(self.col['rep'][i]), bytes=int(self.col['bytes'][i]),
                       seconds=float(self.col['seconds'][i]),
                       bw_MiBps=float(self.col['bw_MiBps'][i]),
                       efficiency=float(self.col['efficiency'][i]), result=run['result'])
            out.append(row)
        return out


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
