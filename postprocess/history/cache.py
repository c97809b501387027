"""Incremental ingest cache of the perflog columns (columns.py): a nightly parses only what was
appended, and reads years of history as memory maps.

``scan_perflogs(roots, ..., cache_dir)`` gives a ``PerflogColumns``: every file's column chunks and
a small index of all runs; ``take(mask)`` copies only the selected runs (``load_table`` takes all).
With a cache directory, each perflog file's columns are kept as uncompressed ``.npz`` segments:
``<dev>-<inode>.npz`` from byte 0, then ``<dev>-<inode>+<start>.npz`` for each later append, each
with the byte offset parsed up to and SHA-256 of the first and last 4 KiB before it. A file is
re-read from the start (or from the last segment it still matches) when it is smaller than a
segment's end (truncated) or a hash changed (rewritten). ReFrame's rotation renames ``X.log`` to
``X.log.h<N>``: same inode, so the cache follows the rename, and the new ``X.log`` is a new file.
A cache file that cannot be read or is inconsistent is rebuilt, never trusted; one that cannot be
written costs speed, not the run. MAX_SEGMENTS appends are compacted into one file.

The cache keeps what history, detection and reports use; the provenance JSON stays in the perflog
(``perflog.read_perflogs`` gives it).
"""
import contextlib
import glob
import hashlib
import json
import os
import struct
import zipfile

import numpy as np

from postprocess.common import atomic
from postprocess.history.columns import (FLOAT_ARRAYS, INT_ARRAYS, PERF_FIELDS, STR_FIELDS,
                                         RunTable, columns_from_records, concat, recode,
                                         recode_codes, take)
from postprocess.history.perflog import Diagnostics, scan_perflog, walk_perflogs

VERSION = 2
HASH_SPAN = 4096
MAX_SEGMENTS = 32          # appended segments before they are compacted into one file


class CacheDamaged(Exception):
    pass


class CacheOutdated(CacheDamaged):
    """Written by another version of this code: rebuilt without a warning."""


def _hash(fp, lo, hi):
    fp.seek(lo)
    return hashlib.sha256(fp.read(max(0, hi - lo))).hexdigest()


def _fingerprint(path, offset):
    with open(path, 'rb') as fp:
        return _hash(fp, 0, min(HASH_SPAN, offset)), _hash(fp, max(0, offset - HASH_SPAN), offset)


def _read_segment(cache_file):
    """(meta, cols, strings, diag) of one cache file; CacheDamaged (naming it) if it cannot be
    trusted."""
    try:
        return _read_segment_of(cache_file)
    except CacheDamaged as err:
        raise type(err)(f"'{cache_file}': {err}") from None


def _read_segment_of(cache_file):
    with open(cache_file, 'rb') as fp:
        if fp.read(4) != b'PK\x03\x04':
            raise CacheDamaged('not an .npz file')
    try:
        with np.load(cache_file, allow_pickle=False) as npz:
            meta = json.loads(bytes(npz['meta']).decode('utf-8'))
            strings = [str(s) for s in npz['strings']]
            diag = [str(s) for s in npz['diag']]
        cols = _map_members(cache_file, INT_ARRAYS + FLOAT_ARRAYS)
    except Exception as err:        # noqa: BLE001 -- any unreadable cache is rebuilt
        raise CacheDamaged(f'{type(err).__name__}: {str(err)[:120]}') from None
    if not isinstance(meta, dict):
        raise CacheDamaged('meta is not a mapping')
    _validate(meta, cols, strings)
    return meta, cols, strings, diag


def _load_chain(stem, ident, size, path):
    """The cached segments [(meta, cols, strings, diag)] of ``path`` from its first byte on, each
    starting where the one before ended; [] when nothing cached matches the file any more.
    Raises CacheDamaged for a file that exists but cannot be trusted."""
    if not os.path.exists(stem + '.npz'):
        return []
    chain = [_read_segment(stem + '.npz')]
    if chain[0][0]['ident'] != list(ident) or chain[0][0]['start'] != 0:
        return []
    while True:
        prev = chain[-1][0]
        nxt = f'{stem}+{prev["offset"]}.npz'
        if len(chain) > MAX_SEGMENTS or not os.path.exists(nxt):
            break
        seg = _read_segment(nxt)
        if seg[0]['start'] != prev['offset'] or seg[0].get('prev_tail') != prev['tail'] \
                or seg[0]['ident'] != list(ident):
            break                   # left over from an earlier cache of this file: not ours
        chain.append(seg)
    while chain:                    # the longest prefix the file still holds
        meta = chain[-1][0]
        if meta['offset'] <= size and \
                list(_fingerprint(path, meta['offset'])) == [meta['head'], meta['tail']]:
            return chain
        chain.pop()                 # truncated or rewritten after this segment
    return []


def _map_members(npz_path, names):
    """The .npy members of an uncompressed .npz (np.savez) as read-only memory maps: a nightly
    touches only the pages of the rows it selects (the last nights), not years of history."""
    out = {}
    with zipfile.ZipFile(npz_path) as zf, open(npz_path, 'rb') as fp:
        for name in names:
            info = zf.getinfo(f'{name}.npy')
            if info.compress_type != zipfile.ZIP_STORED:
                raise CacheDamaged(f'member {name} is compressed')
            fp.seek(info.header_offset)
            local = fp.read(30)
            if local[:4] != b'PK\x03\x04':
                raise CacheDamaged(f'bad local header of {name}')
            name_len, extra_len = struct.unpack('<HH', local[26:30])
            fp.seek(info.header_offset + 30 + name_len + extra_len)
            version = np.lib.format.read_magic(fp)
            readers = {(1, 0): np.lib.format.read_array_header_1_0,
                       (2, 0): np.lib.format.read_array_header_2_0}
            if version not in readers:
                raise CacheDamaged(f'member {name}: .npy version {version}')
            shape, fortran, dtype = readers[version](fp)
            if fortran or len(shape) != 1 or dtype.hasobject:
                raise CacheDamaged(f'member {name}: unexpected layout')
            out[name] = (np.memmap(npz_path, dtype=dtype, mode='r', offset=fp.tell(), shape=shape)
                         if shape[0] else np.zeros(0, dtype))
    return out


def _validate(meta, cols, strings):
    if meta.get('version') != VERSION:
        raise CacheOutdated(f"version {meta.get('version')!r}")
    missing = {'ident', 'start', 'offset', 'lineno', 'layout', 'head', 'tail'} - set(meta)
    if missing:
        raise CacheDamaged(f'meta lacks {sorted(missing)}')
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
    if n and (cols['offset'][0] < meta['start'] or cols['offset'][-1] >= meta['offset']):
        raise CacheDamaged('line offsets outside the bytes it caches')


def _save(cache_file, meta, cols, strings, diag):
    with atomic.atomic_path(cache_file) as tmp:
        with open(tmp, 'wb') as fp:
            np.savez(fp, meta=np.frombuffer(json.dumps(meta).encode('utf-8'), dtype=np.uint8),
                     strings=np.array(strings, dtype=str), diag=np.array(diag, dtype=str),
                     **cols)


def read_file(path, diag, cache_dir=None, warn=None):
    """Chunks [(cols, strings)] of one perflog file, oldest first, each coded through its own
    string table: the cached segments (memory-mapped) and what was appended since, parsed now
    and cached as one more segment."""
    st = os.stat(path)
    ident = (st.st_dev, st.st_ino)
    stem = os.path.join(cache_dir, f'{ident[0]}-{ident[1]}') if cache_dir else None
    chain = []
    if stem:
        try:
            chain = _load_chain(stem, ident, st.st_size, path)
        except CacheOutdated:
            pass
        except CacheDamaged as err:
            if warn:
                warn(f"ingest cache damaged ({err}): rebuilt from '{path}'")
        except OSError as err:
            if warn:
                warn(f"ingest cache '{stem}.npz' unreadable ({err.strerror}): re-reading '{path}'")
    start, lineno, layout = 0, 0, None
    if chain:
        last = chain[-1][0]
        start, lineno, layout = last['offset'], last['lineno'], _layout(last['layout'])
    new_diag = Diagnostics()
    table, chunks = {}, []
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
    if stem and (not chain or end != start):
        meta = {'version': VERSION, 'ident': list(ident), 'path': os.path.abspath(path),
                'start': start, 'offset': end, 'lineno': end_lineno,
                'prev_tail': chain[-1][0]['tail'] if chain else None,
                'layout': [list(end_layout[0]), list(end_layout[1])] if end_layout else None}
        meta['head'], meta['tail'] = _fingerprint(path, end)
        try:
            _store(stem, chain, meta, cols, strings, kept_diag)
        except OSError as err:
            if warn:
                warn(f"ingest cache not written ('{stem}.npz': {err.strerror})")
    out = [(c, s) for _, c, s, _ in chain] + [(cols, strings)]
    if tail is not None:
        out.append((tail, strings))
    diag.extend([f'{path}:{m}' for _, _, _, d in chain for m in d] +
                [f'{path}:{m}' for m in kept_diag] +
                [m for m in new_diag if m.startswith(tail_prefix) or not m.startswith(f'{path}:')])
    return out


def _store(stem, chain, meta, cols, strings, diag):
    """Cache the newly parsed part: one more segment, or, with no usable chain or too long a one,
    everything as a new first segment (old segments then removed)."""
    if chain and len(chain) < MAX_SEGMENTS:
        _save(f'{stem}+{meta["start"]}.npz', meta, cols, strings, diag)
        return
    if chain:               # compact: one file again (a copy of everything, once a month)
        table = {}
        parts = [recode(c, _mapping(s, table)) for _, c, s, _ in chain]
        cols = concat(parts + [recode(cols, _mapping(strings, table))])
        strings = list(table)
        diag = [m for _, _, _, d in chain for m in d] + diag
        meta = dict(meta, start=0, prev_tail=None)
    _save(stem + '.npz', meta, cols, strings, diag)
    for old in glob.glob(glob.escape(stem) + '+*.npz'):
        with contextlib.suppress(OSError):
            os.unlink(old)      # not chained to the new first segment: never read again


def _mapping(local, table):
    return np.array([table.setdefault(x, len(table)) for x in local] or [0], dtype=np.int64)


def _layout(value):
    return None if value is None else (value[0], value[1])


RUN_INDEX = ('time', 'tzoff', 'system', 'partition')


class PerflogColumns:
    """Every perflog's columns (memory-mapped from the cache where possible) and a small index of
    all runs (``index``: a RunTable of RUN_INDEX plus ``reps``, repetitions per run, in the shared
    string coding; ``keep``: runs of completed nightlies). ``take(mask)`` copies only the selected
    runs: selecting the last nights first keeps years of history out of memory."""

    def __init__(self, files, strings, keep):
        self.files, self.strings, self.keep = files, strings, keep
        parts = [{k: (recode_codes(c[k], m) if k in STR_FIELDS else c[k]) for k in RUN_INDEX}
                 for c, _, m in files]
        index = concat_plain(parts, RUN_INDEX)
        index['reps'] = np.concatenate([np.diff(c['rep_ptr']) for c, _, _ in files]) \
            if files else np.zeros(0, np.int64)
        self.index = RunTable(index, strings)

    def take(self, mask):
        """RunTable of the runs where ``mask`` is true, ordered by completion time (stable)."""
        chunks, start = [], 0
        for cols, _, mapping in self.files:
            n = cols['time'].size
            idx = np.flatnonzero(mask[start:start + n])
            start += n
            if idx.size:
                chunks.append(recode(take(cols, idx), mapping))
        table = RunTable(concat(chunks), self.strings)
        order = np.argsort(table.cols['time'], kind='stable')
        if np.any(order != np.arange(order.size)):
            table = RunTable(take(table.cols, order), self.strings)
        return table


def concat_plain(parts, keys):
    return {k: (np.concatenate([np.asarray(p[k]) for p in parts]) if parts
                else np.zeros(0, np.float64 if k == 'time' else np.int64)) for k in keys}


def scan_perflogs(roots, diag, cache_dir=None, this_run=None, warn=None, skipped=None):
    """PerflogColumns of every perflog under ``roots``; ``keep`` leaves out the lines of nightly
    runs that did not complete (``skipped`` gets their count)."""
    strings, files, keep_masks = {}, [], []
    for path, ranges in walk_perflogs(roots, diag, this_run):
        try:
            chunks = read_file(path, diag, cache_dir, warn)
        except OSError as err:
            diag.add(path, f'cannot read: {err.strerror}')
            continue
        for cols, local in chunks:
            files.append((cols, local, _mapping(local, strings)))
            keep_masks.append(_keep_mask(path, cols['offset'], ranges))
    keep = np.concatenate(keep_masks) if keep_masks else np.zeros(0, bool)
    if skipped is not None:
        skipped.append(int((~keep).sum()))
    return PerflogColumns(files, list(strings), keep)


def load_table(roots, diag, cache_dir=None, this_run=None, warn=None, skipped=None):
    """RunTable of every perflog under ``roots`` minus the lines of nightly runs that did not
    complete (``skipped`` gets their count); sorted by completion time."""
    found = scan_perflogs(roots, diag, cache_dir, this_run, warn, skipped)
    return found.take(found.keep)


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


