"""Nightly levels of every series of a history, with their re-runs and acceptances.

A series (system, partition, environ, check, params, phase) has one level per night it ran: the
Hodges-Lehmann location of its repetitions' log bandwidth that night (the median of one is the
value; a burst in one repetition cannot move it). A night is the sessions that started on one
date. Confirmation re-runs (ci/nightly.sh's ``$run/confirm/perflogs``) are the same measurements
taken again the same night: read as data, attributed to the night of the nightly session they
followed, never part of the history itself.
"""
import bisect
import datetime

import numpy as np

from contract.perflog import PHASES
from postprocess.common.stats import hodges_lehmann, hodges_lehmann_rows, median_rows
from postprocess.detect.rules import Level, trailing_medians
from postprocess.history.table import slices

BASELINE = 'backend=fio'


def is_baseline(params):
    """fio (reframe_checks/baseline_fio.py): the filesystem's own reading, not a check."""
    return BASELINE in str(params).split(',')


def is_rate(params):
    """Empty files (operations/s): a metadata server's rate, in no bandwidth group."""
    from postprocess.common.units import value_unit
    return value_unit(params)[1] != 'MiB/s'


class SeriesLevel(Level):
    """A series' levels, with what its findings tell: repetitions per night and their session."""

    def __init__(self, key, kid, phase_id, t, y, vals, sids, secs):
        super().__init__(t, y)
        self.key, self.kid, self.phase_id = key, kid, phase_id
        self.vals, self.sids = vals, sids
        self.secs = np.asarray(secs, dtype=np.float64)   # median phase time of each night, s
        self._secs_window = self._usual_secs = None        # seconds_at's, per window asked

    def seconds_at(self, m, window):
        """The phase's usual duration before night m (the median of its ``window`` nights before,
        tonight's when it has none): what tells a bandwidth-bound check, from its nights only."""
        if self._secs_window != window:
            # every night at once (groups ask per member and night, many groups per member)
            usual = trailing_medians(self.secs, window)
            self._usual_secs = np.where(np.isnan(usual), self.secs, usual)
            self._secs_window = window
        value = float(self._usual_secs[m])
        return value if np.isfinite(value) else None

    @property
    def system(self):
        return self.key[0]

    @property
    def partition(self):
        return self.key[1]

    @property
    def params(self):
        return self.key[4]

    @property
    def phase(self):
        return PHASES[self.phase_id]


def build(history, value='bw_MiBps'):
    """{system: (nights, [SeriesLevel])}: ``nights`` the system's night labels in order, each
    level's ``t`` indices into them. A night's level is over the repetitions of every session that
    started that night, in session order; all nights of all series at once (the columns sorted
    once, one array operation per repetition count: a nightly has ~10^5 nights to level)."""
    col = history.col
    vals = col[value]
    ok = np.flatnonzero(np.isfinite(vals) & (vals > 0))     # no time: inf, no value: NaN
    if not ok.size:
        return {}
    sess = history.sessions
    night_text = np.array([s['night'] for s in sess], dtype=object)
    labels, night_code = np.unique(night_text, return_inverse=True)
    start = np.array([s['start'].timestamp() for s in sess], dtype=np.float64)
    order = np.empty(len(sess), dtype=np.int64)        # sessions by start, then as listed
    order[np.lexsort((np.arange(len(sess)), start))] = np.arange(len(sess))
    sid = col['session'][ok]
    rows = ok[np.lexsort((ok, order[sid], night_code[sid], col['phase'][ok], col['key'][ok]))]
    key, phase, sid = col['key'][rows], col['phase'][rows], col['session'][rows]
    code = night_code[sid]
    cut, first, last = slices(key, phase, code)
    night_vals = np.split(vals[rows], cut)
    y = _per_size(np.log(vals[rows]), first, last, hodges_lehmann_rows)
    secs = _night_seconds(history, night_code, key[first], phase[first], code[first])
    systems = np.array([k[0] for k in history.keys], dtype=object)[key[first]]
    out = {}
    for system in dict.fromkeys(systems.tolist()):
        mine = code[first][systems == system]
        out[system] = ([str(labels[c]) for c in np.unique(mine)], [])
    t_of = {system: np.searchsorted(np.unique(code[first][systems == system]), code[first])
            for system in out}
    series = np.flatnonzero(np.concatenate([[True], (np.diff(key[first]) != 0) |
                                            (np.diff(phase[first]) != 0)]))
    for a, b in zip(series, np.append(series[1:], first.size)):
        kid, ph, system = int(key[first[a]]), int(phase[first[a]]), systems[a]
        out[system][1].append(SeriesLevel(
            history.keys[kid] + (PHASES[ph],), kid, ph, t_of[system][a:b], y[a:b],
            night_vals[a:b], sid[last[a:b]], secs[a:b]))
    return out


def _per_size(x, first, last, stat_rows):
    """stat_rows(2-D array) of every slice x[first[g]:last[g] + 1], rows of one size at once."""
    size = last - first + 1
    out = np.empty(size.size)
    for n in np.unique(size):
        g = np.flatnonzero(size == n)
        out[g] = stat_rows(x[first[g][:, None] + np.arange(n)])
    return out


def _night_seconds(history, night_code, key, phase, code):
    """The median phase time of each (key, phase, night code) asked: of every repetition with a
    time that night (NaN: none)."""
    col = history.col
    has = np.flatnonzero(np.isfinite(col['seconds']))
    if not has.size:
        return np.full(key.size, np.nan)
    k, p, c = col['key'][has], col['phase'][has], night_code[col['session'][has]]
    o = np.lexsort((c, p, k))
    k, p, c, s = k[o], p[o], c[o], col['seconds'][has][o]
    _, first, last = slices(k, p, c)
    med = _per_size(s, first, last, median_rows)
    span = int(c.max()) + 1
    found = (k[first] * len(PHASES) + p[first]) * span + c[first]
    want = (key * len(PHASES) + phase) * span + code
    at = np.searchsorted(found, want)
    at = np.minimum(at, found.size - 1)
    return np.where(found[at] == want, med[at], np.nan)


def attach_reruns(systems, reruns):
    """Give each level its nights' re-run levels: ``reruns`` {(system, partition, environ, check,
    params, phase): {night label: values}} (read_reruns)."""
    for nights, levels in systems.values():
        index = {n: i for i, n in enumerate(nights)}
        for lv in levels:
            for night, vals in reruns.get(lv.key, {}).items():
                t = index.get(night)
                if t is None:
                    continue
                m = int(np.searchsorted(lv.t, t))
                if m < len(lv.t) and lv.t[m] == t and vals.size:
                    lv.rerun[m] = hodges_lehmann(np.log(vals))


def attach_acceptances(systems, acceptances, matches):
    """Each level's acceptances in force (postprocess/accept/): [(since night index, the first
    night it applies to)], the latter the night of the acceptance's record (a night judged again
    sees only what had been accepted by then). ``matches(rec, system, partition, check, params)``."""
    for nights, levels in systems.values():
        for lv in levels:
            for rec in acceptances:
                if not matches(rec, lv.key[0], lv.key[1], lv.key[3], lv.key[4]):
                    continue
                since = bisect.bisect_left(nights, str(rec['since']))
                applies = bisect.bisect_left(nights, _date_of(rec.get('at')) or '')
                lv.accepted.append((since, applies))
                lv.accepted.sort()


def _date_of(stamp):
    if not stamp:
        return None
    try:
        return datetime.datetime.fromisoformat(str(stamp).replace('Z', '+00:00')).date().isoformat()
    except ValueError:
        return str(stamp)[:10]


def read_reruns(history, rerun_runs):
    """{series key + (phase,): {night: values}} of re-run records (perflog run dicts), each given
    the night of the latest nightly session of its system:partition that started before it."""
    starts = {}
    if len(history):
        pairs = np.unique(np.stack([history.col['session'], history.col['key']], axis=1), axis=0)
        for sid, kid in pairs.tolist():
            where = history.keys[kid][:2]
            s = history.sessions[sid]
            starts.setdefault(where, set()).add((s['start'], s['night']))
    starts = {k: sorted(v) for k, v in starts.items()}
    out = {}
    for run in rerun_runs:
        cands = starts.get((run['system'], run['partition']), [])
        i = bisect.bisect_right([s for s, _ in cands], run['time']) - 1
        if i < 0:
            continue
        night = cands[i][1]
        key = (run['system'], run['partition'], run['environ'], run['check'], run['params'])
        for phase, reps in run['reps'].items():
            bw = np.array([b / s / 2 ** 20 for b, s in reps if s > 0 and b > 0], dtype=float)
            if bw.size:
                slot = out.setdefault(key + (phase,), {})
                slot[night] = np.concatenate([slot[night], bw]) if night in slot else bw
    return out
