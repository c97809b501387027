"""Run records as numpy columns: one row per run record, repetitions and perf values as CSR
arrays (``rep_ptr``/``perf_ptr``), strings coded through a string table. The ingest cache
(cache.py) stores these columns; History (store.py) is built from them."""
import datetime

import numpy as np

from postprocess.history.perflog import parse_params

STR_FIELDS = ('system', 'partition', 'environ', 'check', 'params', 'jobid', 'result', 'reframe')
PERF_FIELDS = ('value', 'ref', 'lower', 'upper')
INT_ARRAYS = ('offset', 'lineno', 'tzoff', 'rep_ptr', 'rep_phase', 'perf_ptr', 'perf_name',
              'perf_unit') + STR_FIELDS
FLOAT_ARRAYS = ('time', 'rep_bytes', 'rep_secs') + tuple(f'perf_{f}' for f in PERF_FIELDS)


def _nan(value):
    return np.nan if value is None else value


def columns_from_records(records, strings):
    """Run records (perflog.parse_line dicts) -> column dict; strings coded through ``strings``."""
    code = strings.setdefault
    cols = {f: [code(r[f], len(strings)) for r in records] for f in STR_FIELDS}
    cols['time'] = [r['time'].timestamp() for r in records]
    cols['tzoff'] = [int(r['time'].utcoffset().total_seconds()) for r in records]
    cols['offset'] = [r['offset'] for r in records]
    cols['lineno'] = [int(r['source'].rsplit(':', 1)[1]) for r in records]
    rep_ptr, rep_phase, rep_bytes, rep_secs = [0], [], [], []
    perf_ptr, perf_name, perf_unit = [0], [], []
    perf_vals = {f: [] for f in PERF_FIELDS}
    for r in records:
        for phase, reps in r['reps'].items():
            rep_phase += [code(phase, len(strings))] * len(reps)
            rep_bytes += [b for b, _ in reps]
            rep_secs += [s for _, s in reps]
        rep_ptr.append(len(rep_bytes))
        for name, perf in r['perf'].items():
            perf_name.append(code(name, len(strings)))
            perf_unit.append(code(perf['unit'] or '', len(strings)))
            for f in PERF_FIELDS:
                perf_vals[f].append(_nan(perf[f]))
        perf_ptr.append(len(perf_name))
    cols.update(rep_ptr=rep_ptr, rep_phase=rep_phase, rep_bytes=rep_bytes, rep_secs=rep_secs,
                perf_ptr=perf_ptr, perf_name=perf_name, perf_unit=perf_unit)
    cols.update({f'perf_{f}': v for f, v in perf_vals.items()})
    return {k: np.asarray(v, dtype=np.int64 if k in INT_ARRAYS else np.float64)
            for k, v in cols.items()}


def concat(chunks):
    """Concatenate column dicts that share one string coding (CSR pointers shifted)."""
    chunks = [c for c in chunks if c is not None]
    if len(chunks) > 1:
        chunks = [c for c in chunks if c['time'].size] or chunks[:1]
    if not chunks:
        return columns_from_records([], {})
    if len(chunks) == 1:
        return chunks[0]
    out = {}
    for key in chunks[0]:
        if key in ('rep_ptr', 'perf_ptr'):
            parts, base = [np.zeros(1, np.int64)], 0
            for c in chunks:
                parts.append(c[key][1:] + base)
                base += int(c[key][-1])
            out[key] = np.concatenate(parts)
        else:
            out[key] = np.concatenate([c[key] for c in chunks])
    return out


def recode(cols, mapping):
    """Re-code a chunk's string codes from its own table to the shared one (``mapping``)."""
    cols = dict(cols)
    for key in STR_FIELDS + ('rep_phase', 'perf_name', 'perf_unit'):
        cols[key] = recode_codes(cols[key], mapping)
    return cols


CSR = (('rep_ptr', ('rep_phase', 'rep_bytes', 'rep_secs')),
       ('perf_ptr', ('perf_name', 'perf_unit') + tuple(f'perf_{f}' for f in PERF_FIELDS)))


def take(cols, idx):
    """Columns of the runs ``idx`` (in that order), their repetitions and perf values with them."""
    n = cols['time'].size
    members = {m for _, ms in CSR for m in ms}
    out = {k: v[idx] for k, v in cols.items() if k not in members and k not in dict(CSR)}
    assert all(cols[k].size == n for k in out)
    for ptr, keys in CSR:
        p = cols[ptr]
        counts = (p[1:] - p[:-1])[idx]
        starts = p[:-1][idx]
        rows = (np.repeat(starts - np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
                + np.arange(int(counts.sum())))
        for key in keys:
            out[key] = cols[key][rows]
        out[ptr] = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    return out


def recode_codes(codes, mapping):
    return mapping[codes] if codes.size else np.asarray(codes, np.int64)


class RunTable:
    """Run records as columns (see module docstring); ``strings[code]`` decodes string columns."""

    def __init__(self, cols, strings):
        self.cols, self.strings = cols, strings

    def __len__(self):
        return int(self.cols['time'].size)

    def str_col(self, field):
        return np.asarray(self.strings, dtype=object)[self.cols[field]] if len(self) else \
            np.zeros(0, dtype=object)

    def select(self, mask):
        """A new table with the rows where ``mask`` is true, ordered by time (stable)."""
        idx = np.flatnonzero(mask)
        idx = idx[np.argsort(self.cols['time'][idx], kind='stable')]
        return RunTable(take(self.cols, idx), self.strings)

    def days(self):
        """Local completion date of every run as 'YYYY-MM-DD' strings (the perflog's own zone)."""
        day = np.floor((self.cols['time'] + self.cols['tzoff']) / 86400).astype('int64')
        return day.astype('datetime64[D]').astype(str)


class RunView:
    """Read-only sequence of run-record dicts built on demand from a RunTable (what
    ``History.runs`` holds for a table: 10^6 dicts would not fit the memory goal)."""

    def __init__(self, table, sessions, session_of_run):
        self.table, self.sessions, self.session_of_run = table, sessions, session_of_run
        self._params = {}

    def __len__(self):
        return len(self.table)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        c, s = self.table.cols, self.table.strings
        i = int(i)
        zone = datetime.timezone(datetime.timedelta(seconds=int(c['tzoff'][i])))
        run = {f: s[c[f][i]] for f in STR_FIELDS}
        pcode = int(c['params'][i])
        if pcode not in self._params:
            self._params[pcode] = parse_params(s[pcode])
        reps = {}
        for j in range(c['rep_ptr'][i], c['rep_ptr'][i + 1]):
            reps.setdefault(s[c['rep_phase'][j]], []).append(
                (float(c['rep_bytes'][j]), float(c['rep_secs'][j])))
        perf = {}
        for j in range(c['perf_ptr'][i], c['perf_ptr'][i + 1]):
            vals = {f: float(c[f'perf_{f}'][j]) for f in PERF_FIELDS}
            perf[s[c['perf_name'][j]]] = dict(
                {f: (None if np.isnan(v) else v) for f, v in vals.items()},
                unit=s[c['perf_unit'][j]])
        session = self.sessions[self.session_of_run[i]]
        run.update(time=datetime.datetime.fromtimestamp(float(c['time'][i]), zone),
                   param_dict=self._params[pcode], reps=reps, perf=perf, provenance={},
                   session=session['id'], session_start=session['start'],
                   source=f'line {int(c["lineno"][i])}', offset=int(c['offset'][i]))
        return run
