"""Columnar perflog table and its incremental cache: a nightly parses only what was appended.

``load_table(roots, cache_dir)`` returns a ``RunTable`` (numpy columns, one row per run record;
repetitions and perf values as CSR arrays). With a cache directory, each perflog file's columns are
kept in ``<cache_dir>/<dev>-<inode>.npz`` with the byte offset parsed up to; the next load reads
only the bytes after it. A file is re-read from the start when its identity no longer matches:
smaller than the offset (truncated), or the first or last 4 KiB before the offset changed
(rewritten). ReFrame's rotation renames ``X.log`` to ``X.log.h<N>``: same inode, so the cache
follows the rename, and the new ``X.log`` is a new file. A cache file that cannot be read or is
inconsistent is rebuilt, never trusted; one that cannot be written costs speed, not the run.

The cache keeps what history, detection and reports use; the provenance JSON stays in the perflog
(``perflog.read_perflogs`` gives it).
"""
import datetime
import hashlib
import json
import os

import numpy as np

from postprocess.common import atomic
from postprocess.history.perflog import Diagnostics, parse_params, scan_perflog, walk_perflogs

VERSION = 1
HASH_SPAN = 4096
STR_FIELDS = ('system', 'partition', 'environ', 'check', 'params', 'jobid', 'result', 'reframe')
PERF_FIELDS = ('value', 'ref', 'lower', 'upper')
INT_ARRAYS = ('offset', 'lineno', 'tzoff', 'rep_ptr', 'rep_phase', 'perf_ptr', 'perf_name',
              'perf_unit') + STR_FIELDS
FLOAT_ARRAYS = ('time', 'rep_bytes', 'rep_secs') + tuple(f'perf_{f}' for f in PERF_FIELDS)


class CacheDamaged(Exception):
    pass


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


def _recode(cols, local_strings, strings):
    """Re-code a chunk's string codes from its own table to the shared ``strings``."""
    mapping = np.array([strings.setdefault(s, len(strings)) for s in local_strings] or [0],
                       dtype=np.int64)
    cols = dict(cols)
    for key in STR_FIELDS + ('rep_phase', 'perf_name', 'perf_unit'):
        cols[key] = mapping[cols[key]] if cols[key].size else cols[key]
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


def _hash(fp, lo, hi):
    fp.seek(lo)
    return hashlib.sha256(fp.read(max(0, hi - lo))).hexdigest()


def _fingerprint(path, offset):
    with open(path, 'rb') as fp:
        return _hash(fp, 0, min(HASH_SPAN, offset)), _hash(fp, max(0, offset - HASH_SPAN), offset)


def _load_cached(cache_file, ident, size, path):
    """(meta, cols, strings, diag) from a cache file that still matches ``path``, else None.
    Raises CacheDamaged for a file that exists but cannot be trusted."""
    if not os.path.exists(cache_file):
        return None
    with open(cache_file, 'rb') as fp:
        if fp.read(4) != b'PK\x03\x04':
            raise CacheDamaged('not an .npz file')
    try:
        with np.load(cache_file, allow_pickle=False) as npz:
            meta = json.loads(bytes(npz['meta']).decode('utf-8'))
            cols = {k: npz[k] for k in INT_ARRAYS + FLOAT_ARRAYS}
            strings = [str(s) for s in npz['strings']]
            diag = [str(s) for s in npz['diag']]
    except Exception as err:        # noqa: BLE001 -- any unreadable cache is rebuilt
        raise CacheDamaged(f'{type(err).__name__}: {str(err)[:120]}') from None
    _validate(meta, cols, strings)
    if meta['ident'] != list(ident) or meta['offset'] > size:
        return None                 # another file now, or truncated: re-read from the start
    if list(_fingerprint(path, meta['offset'])) != [meta['head'], meta['tail']]:
        return None                 # rewritten in place
    return meta, cols, strings, diag


def _validate(meta, cols, strings):
    if meta.get('version') != VERSION:
        raise CacheDamaged(f"version {meta.get('version')!r}")
    n = cols['time'].size
    for key in STR_FIELDS + ('tzoff', 'offset', 'lineno'):
        if cols[key].size != n:
            raise CacheDamaged(f'column {key} has {cols[key].size} rows, not {n}')
    for ptr, members in (('rep_ptr', ('rep_phase', 'rep_bytes', 'rep_secs')),
                         ('perf_ptr', ('perf_name', 'perf_unit') +
                          tuple(f'perf_{f}' for f in PERF_FIELDS))):
        p = cols[ptr]
        if p.size != n + 1 or p[0] != 0 or np.any(np.diff(p) < 0):
            raise CacheDamaged(f'bad {ptr}')
        for key in members:
            if cols[key].size != p[-1]:
                raise CacheDamaged(f'column {key} has {cols[key].size} rows, not {p[-1]}')
    for key in STR_FIELDS + ('rep_phase', 'perf_name', 'perf_unit'):
        if cols[key].size and (cols[key].min() < 0 or cols[key].max() >= len(strings)):
            raise CacheDamaged(f'column {key} codes out of range')
    if len(set(strings)) != len(strings):
        raise CacheDamaged('string table has duplicates')
    if np.any(np.diff(cols['offset']) <= 0):
        raise CacheDamaged('line offsets not increasing')


def _save(cache_file, meta, cols, strings, diag):
    with atomic.atomic_path(cache_file) as tmp:
        with open(tmp, 'wb') as fp:
            np.savez(fp, meta=np.frombuffer(json.dumps(meta).encode('utf-8'), dtype=np.uint8),
                     strings=np.array(strings, dtype=str), diag=np.array(diag, dtype=str),
                     **cols)


def read_file(path, diag, cache_dir=None, warn=None):
    """Columns of one perflog file and its string table: (cols, strings), appended-only parse
    when ``cache_dir`` holds a matching cache."""
    st = os.stat(path)
    ident = (st.st_dev, st.st_ino)
    cache_file = os.path.join(cache_dir, f'{ident[0]}-{ident[1]}.npz') if cache_dir else None
    cached = None
    if cache_file:
        try:
            cached = _load_cached(cache_file, ident, st.st_size, path)
        except CacheDamaged as err:
            if warn:
                warn(f"ingest cache '{cache_file}' damaged ({err}): rebuilt from '{path}'")
        except OSError as err:
            if warn:
                warn(f"ingest cache '{cache_file}' unreadable ({err.strerror}): re-reading '{path}'")
    if cached is None:
        start, lineno, layout, old_cols, strings, old_diag = 0, 0, None, None, [], []
    else:
        meta, old_cols, strings, old_diag = cached
        start, lineno, layout = meta['offset'], meta['lineno'], _layout(meta['layout'])
    new_diag = Diagnostics()
    table = {s: i for i, s in enumerate(strings)}
    chunks = [old_cols]
    _, (end, end_lineno, end_layout) = scan_perflog(
        path, new_diag, start, lineno, layout, provenance=False,
        sink=lambda records: chunks.append(columns_from_records(records, table)))
    cols = concat(chunks)
    strings = list(table)
    # A last line without its newline may still be being written: used now, cached next time.
    partial = cols['offset'] >= end
    tail = take(cols, np.flatnonzero(partial)) if partial.any() else None
    if tail is not None:
        cols = take(cols, np.flatnonzero(~partial))
    tail_prefix = f'{path}:{end_lineno + 1}:'
    # cached without the path (the file may be renamed by rotation): '<line>: <text>'
    kept_diag = [m[len(path) + 1:] for m in new_diag
                 if m.startswith(f'{path}:') and not m.startswith(tail_prefix)]
    file_diag = old_diag + kept_diag
    complete = end != start
    if cache_file and (cached is None or complete):
        meta = {'version': VERSION, 'ident': list(ident), 'path': os.path.abspath(path),
                'offset': end, 'lineno': end_lineno,
                'layout': [list(end_layout[0]), list(end_layout[1])] if end_layout else None}
        meta['head'], meta['tail'] = _fingerprint(path, end)
        try:
            _save(cache_file, meta, cols, strings, file_diag)
        except OSError as err:
            if warn:
                warn(f"ingest cache not written ('{cache_file}': {err.strerror})")
    if tail is not None:
        cols = concat([cols, tail])
    diag.extend([f'{path}:{m}' for m in file_diag] +
                [m for m in new_diag if m.startswith(tail_prefix) or not m.startswith(f'{path}:')])
    return cols, strings


def _layout(value):
    return None if value is None else (value[0], value[1])


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


def load_table(roots, diag, cache_dir=None, this_run=None, warn=None, skipped=None):
    """RunTable of every perflog under ``roots`` minus the lines of nightly runs that did not
    complete (``skipped`` gets their count); sorted by completion time."""
    strings, chunks, keep_masks = {}, [], []
    for path, ranges in walk_perflogs(roots, diag, this_run):
        try:
            cols, local = read_file(path, diag, cache_dir, warn)
        except OSError as err:
            diag.add(path, f'cannot read: {err.strerror}')
            continue
        cols = _recode(cols, local, strings)
        chunks.append(cols)
        keep_masks.append(_keep_mask(path, cols['offset'], ranges))
    cols = concat(chunks)
    keep = np.concatenate(keep_masks) if keep_masks else np.zeros(0, bool)
    if skipped is not None:
        skipped.append(int((~keep).sum()))
    return RunTable(cols, list(strings)).select(keep)


def _keep_mask(path, offsets, ranges):
    keep = np.ones(offsets.size, dtype=bool)
    if not ranges:
        return keep
    st = os.stat(path)
    ident = (st.st_dev, st.st_ino)
    for lo, hi in ranges.get(ident, ()):
        keep &= ~((offsets >= lo) & (offsets < (np.inf if hi is None else hi)))
    for known, _ in ranges.get('new-since', ()):
        if ident not in known:
            keep[:] = False
    return keep


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
