"""Read ReFrame perflogs (docs/CONTRACT.md section 3) into run records.

ReFrame's filelog handler writes one ``|``-separated line per test run and a header line when it
creates the file; when the format changes it renames the old file to ``<name>.h<N>`` and starts a
new one with a new header. The header names the fields, so lines are mapped by the most recent
header seen (a header may also appear mid-file when logs are concatenated). Perf variables appear
in the header as ``<var>_var=<var>_value|<var>_unit|<var>_ref|<var>_lower_thres|<var>_upper_thres``
and in data lines as ``<var>=<value>|<unit>|<ref>|<lower>|<upper>``. Within one ReFrame session the
header is written once, though checks of one class may log different variables (a +gpfs read that
could not defeat the cache logs read_cache_defeated instead of read_bw): such a line's perf groups
are read from the line itself, since each names its variable.

A line that cannot be read is reported as ``file:line: reason`` and skipped; never fatal.
Files are read as bytes so every record knows the offset of its line (incremental cache, and the
byte ranges of nightly runs that did not complete).
"""
import datetime
import json
import math
import os
import re

from postprocess.history.nightly_runs import excluded_ranges, is_excluded

# Field names ReFrame writes in the header for the contract format (configs/settings.py); used when
# a file's lines come before any header (e.g. a header lost by hand editing).
CONTRACT_FIELDS = ['job_completion_time', 'reframe version', 'name', 'system', 'partition',
                   'environ', 'iob_params', 'jobid', 'result', 'iob_reps', 'iob_provenance']
PERF_SUFFIXES = ('unit', 'ref', 'lower_thres', 'upper_thres')
PHASES = ('write', 'read')
_PERF_HEAD = re.compile(r'^(\w+)_var=\1_value$')
_PERF_FIELD = re.compile(r'^\w+=')
_ROTATED = re.compile(r'\.log(\.h\d+)?$')


class Diagnostics(list):
    """Messages ``file:line: text`` about input that was skipped or only partly used."""

    def add(self, where, text):
        self.append(f'{where}: {text}')


def parse_time(text):
    """ReFrame's ``%Y-%m-%dT%H:%M:%S%z`` (also ``+00:00``; no zone = UTC) -> aware datetime."""
    text = text.strip()
    if len(text) < 19 or text[10] != 'T':
        return None
    try:
        value = datetime.datetime.fromisoformat(text)     # far faster than strptime
    except ValueError:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    return value


def parse_layout(fields):
    """Header fields -> (fixed field names, perf variable names), or None if not a header."""
    if not fields or fields[0] != 'job_completion_time':
        return None
    fixed, perfvars, i = [], [], 0
    while i < len(fields):
        match = _PERF_HEAD.match(fields[i])
        if match:
            perfvars.append(match.group(1))
            i += 1 + len(PERF_SUFFIXES)
        else:
            if perfvars:
                return None         # fixed fields after perf groups: not a layout we know
            fixed.append(fields[i])
            i += 1
    return fixed, perfvars


def parse_params(text):
    """``backend=mpiio,mode=collective,...`` -> dict (values kept as strings)."""
    params = {}
    for item in filter(None, text.split(',')):
        key, sep, value = item.partition('=')
        if not sep or not key:
            raise ValueError(f'iob_params item without key=value: {item!r}')
        params[key.strip()] = value.strip()
    return params


def parse_reps(text, where, diag):
    """``write=B:S,B:S;read=B:S`` -> {'write': [(bytes, seconds), ...], ...}; bad items skipped."""
    reps = {}
    for part in filter(None, text.strip().split(';')):
        phase, sep, items = part.partition('=')
        phase = phase.strip()
        if not sep or not phase:
            diag.add(where, f'iob_reps part without phase=...: {part!r} (skipped)')
            continue
        values = []
        for item in filter(None, items.split(',')):
            nbytes, _, secs = item.partition(':')
            try:
                nbytes, secs = float(nbytes), float(secs)
            except ValueError:
                diag.add(where, f'non-numeric repetition {phase}={item!r} (skipped)')
                continue
            if not (math.isfinite(nbytes) and math.isfinite(secs) and nbytes >= 0 and secs > 0):
                diag.add(where, f'impossible repetition {phase}={item!r} (skipped)')
                continue
            values.append((nbytes, secs))
        reps[phase] = values
    return reps


def _number(text):
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def parse_line(fields, layout, where, diag, provenance=True):
    """One data line -> run record dict, or None (reported) if it cannot be used."""
    fixed, perfvars = layout
    expected = len(fixed) + len(perfvars) * (1 + len(PERF_SUFFIXES))
    group = 1 + len(PERF_SUFFIXES)
    own = fields[len(fixed):]
    if len(fields) != expected and own and len(own) % group == 0 and \
            all(_PERF_FIELD.match(f) for f in own[::group]):    # other variables than the header's
        perfvars = [f.partition('=')[0] for f in own[::group]]
    elif len(fields) != expected:
        diag.add(where, f'expected {expected} fields, found {len(fields)} '
                        f'(partial or corrupt line, skipped)')
        return None
    row = dict(zip(fixed, fields))
    when = parse_time(row.get('job_completion_time', ''))
    if when is None:
        diag.add(where, f'bad job_completion_time {row.get("job_completion_time")!r} (skipped)')
        return None
    if row.get('iob_params', 'null') in ('null', 'None', ''):
        return None     # not a measurement (e.g. the build fixture's line): nothing to report
    try:
        params = parse_params(row.get('iob_params', ''))
    except ValueError as err:
        diag.add(where, f'{err} (skipped)')
        return None
    text = row.get('iob_provenance', '') if provenance else ''
    try:
        provenance = json.loads(text) if text else {}
    except ValueError:
        diag.add(where, 'iob_provenance is not JSON (kept as text)')
        provenance = {'raw': text}
    perf, pos = {}, len(fixed)
    for var in perfvars:
        name_value = fields[pos]
        name, _, value = name_value.partition('=')
        unit, ref, lower, upper = fields[pos + 1:pos + 1 + len(PERF_SUFFIXES)]
        number = _number(value)
        if number is None and value not in ('', 'None'):
            diag.add(where, f'non-numeric value {name}={value!r} (perf value ignored)')
        perf[name or var] = {'value': number, 'unit': unit, 'ref': _number(ref),
                             'lower': _number(lower), 'upper': _number(upper)}
        pos += 1 + len(PERF_SUFFIXES)
    reps = parse_reps(row.get('iob_reps', ''), where, diag)
    check = row.get('name', row.get('check_name', ''))
    return {
        'time': when, 'system': row.get('system', ''), 'partition': row.get('partition', ''),
        'environ': row.get('environ', ''), 'check': check, 'params': row.get('iob_params', ''),
        'param_dict': params, 'jobid': row.get('jobid', ''), 'result': row.get('result', ''),
        'reps': reps, 'provenance': provenance, 'perf': perf,
        'reframe': row.get('reframe version', ''), 'session': None, 'source': where,
    }


def read_perflog(path, diag, start=0, lineno=0, layout=None, keep=None, provenance=True):
    """All usable run records of one perflog file (rotated ``.h<N>`` files included by callers).

    Each record carries ``offset``, the byte offset of its line. ``start``/``lineno``/``layout``
    resume an earlier read (history/cache.py); ``keep(offset)`` False skips a line unparsed (lines
    of nightly runs that did not complete, history/nightly_runs.py). ``provenance`` False leaves
    the provenance JSON unparsed (the columnar cache does not keep it)."""
    return scan_perflog(path, diag, start, lineno, layout, keep, provenance)[0]


def scan_perflog(path, diag, start=0, lineno=0, layout=None, keep=None, provenance=True,
                 sink=None, batch=20000):
    """(records, state) where state = (offset after the last complete line, its line number,
    the layout in force there): enough to resume when more lines are appended. With ``sink``,
    records are handed to ``sink(list)`` every ``batch`` records instead (bounded memory)."""
    runs = []
    try:
        fp = open(path, 'rb')
    except OSError as err:
        diag.add(path, f'cannot read: {err.strerror}')
        return runs, (start, lineno, layout)
    offset = start
    state = (start, lineno, layout)
    with fp:
        if start:
            fp.seek(start)
        for raw in fp:
            lineno += 1
            line_offset, offset = offset, offset + len(raw)
            complete = raw.endswith(b'\n')
            line = raw.decode('utf-8', errors='replace').rstrip('\r\n')
            if line.strip():
                layout = _use_line(line, layout, f'{path}:{lineno}', line_offset, runs, diag, keep,
                                   provenance)
            if complete:
                state = (offset, lineno, layout)
            if sink is not None and len(runs) >= batch:
                sink(runs)
                runs = []
    if sink is not None:
        sink(runs)
        runs = []
    return runs, state


def _use_line(line, layout, where, offset, runs, diag, keep, provenance):
    """Parse one line into ``runs``; returns the layout in force after it."""
    fields = line.rstrip('|').split('|')
    new_layout = parse_layout(fields)
    if new_layout is not None:
        return new_layout
    if keep is not None and not keep(offset):
        return layout
    current = layout
    if current is None:
        # No header yet: assume the contract layout with as many perf groups as fit.
        extra = len(fields) - len(CONTRACT_FIELDS)
        if extra < 0 or extra % (1 + len(PERF_SUFFIXES)):
            diag.add(where, 'line before any header and not in the contract layout (skipped)')
            return layout
        nperf = extra // (1 + len(PERF_SUFFIXES))
        current = (CONTRACT_FIELDS, [f'perf{i}' for i in range(nperf)])
    run = parse_line(fields, current, where, diag, provenance)
    if run is not None:
        run['offset'] = offset
        runs.append(run)
    return layout


def find_perflogs(root):
    """Perflog files under ``root`` (a file or a directory tree): ``*.log`` and ``*.log.h<N>``."""
    root = os.fspath(root)
    if os.path.isfile(root):
        return [root]
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        found += [os.path.join(dirpath, f) for f in sorted(filenames) if _ROTATED.search(f)]
    return found


def read_perflogs(roots, diag=None, this_run=None, skipped=None):
    """Run records from every perflog under ``roots`` (files or directories), oldest first.

    Lines written by nightly runs that did not complete are skipped (history/nightly_runs.py;
    ``this_run`` is the asking nightly's own run directory); ``skipped`` (a list) gets their count."""
    diag = Diagnostics() if diag is None else diag
    runs = []
    for path, ranges in walk_perflogs(roots, diag, this_run):
        runs += read_perflog(path, diag, keep=line_filter(path, ranges, skipped))
    runs.sort(key=lambda r: r['time'])
    return runs, diag


def walk_perflogs(roots, diag, this_run=None):
    """(path, excluded byte ranges of its root) for every perflog under ``roots`` (a path or a
    list); a root that does not exist is a diagnostic."""
    if isinstance(roots, (str, os.PathLike)):
        roots = [roots]
    for root in roots:
        if not os.path.exists(root):
            diag.add(os.fspath(root), 'no such file or directory')
            continue
        ranges = excluded_ranges(root, this_run)
        for path in find_perflogs(root):
            yield path, ranges


def line_filter(path, ranges, skipped=None):
    """``keep(offset)`` for a file given the excluded byte ranges (None: keep every line)."""
    if not ranges:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    ident = (st.st_dev, st.st_ino)

    def keep(offset):
        if is_excluded(ranges, ident, offset):
            if skipped is not None:
                skipped.append(offset)
            return False
        return True
    return keep


def _days(nights):
    out = set()
    for n in nights:
        try:
            day = datetime.date.fromisoformat(n)
        except (TypeError, ValueError):
            continue
        out.update({day.isoformat().encode(), (day + datetime.timedelta(days=1)).isoformat()
                   .encode()})
    return out


def runs_of_nights(roots, nights, system=None, this_run=None):
    """Run records (with provenance) of the perflog lines completed on ``nights`` (+1 day, for a
    session that crossed midnight): a line's first ten bytes are its completion date, so only those
    lines are parsed and the cost does not grow with the history (why/annotate.py, why/state.py)."""
    days = _days(nights)
    runs, diag = [], Diagnostics()
    if not days:
        return runs
    for path, ranges in walk_perflogs(roots, diag, this_run):
        wanted, offset = set(), 0
        try:
            with open(path, 'rb') as fp:
                for raw in fp:
                    if raw[:10] in days:
                        wanted.add(offset)
                    offset += len(raw)
        except OSError:
            continue
        if not wanted:
            continue
        base = line_filter(path, ranges)
        runs += read_perflog(path, diag, keep=lambda o, w=wanted, b=base:
                             o in w and (b is None or b(o)))
    return [r for r in runs if system is None or r['system'] == system]
