"""Site notes (``ci/nightly.sh --note``) by night, for markers on the history plots.

A note rides in every perflog line of its run (``iob_provenance.machine.note``,
reframe_checks/iobench_lib/machine.py). The columnar history does not keep provenance, so the
perflogs are scanned here: a file without the bytes ``"note":`` is skipped unread; only files
that hold a note are parsed.
"""
import bisect

from postprocess.history.perflog import Diagnostics, line_filter, read_perflog, walk_perflogs

MARK = b'"note":'


def _has_note(path):
    with open(path, 'rb') as fp:
        tail = b''
        while True:
            chunk = fp.read(1 << 20)
            if not chunk:
                return False
            if MARK in tail + chunk:
                return True
            tail = chunk[-len(MARK):]


def note_runs(roots, system=None, this_run=None):
    """[(system, partition, completion time, note)] of the runs that recorded a note."""
    out, diag = [], Diagnostics()
    for path, ranges in walk_perflogs(roots, diag, this_run):
        try:
            if not _has_note(path):
                continue
        except OSError:
            continue
        for r in read_perflog(path, diag, keep=line_filter(path, ranges)):
            prov = r.get('provenance')
            machine = prov.get('machine') if isinstance(prov, dict) else None
            note = machine.get('note') if isinstance(machine, dict) else None
            if note and (system is None or r['system'] == system):
                out.append((r['system'], r['partition'], r['time'], str(note)))
    return out


def by_night(history, runs):
    """{(system, partition): {night: 'note; other note'}}: each note on the night of the history
    session its run belongs to (the latest session of its partition started before it)."""
    starts = {}
    for s in history.sessions:
        where = s['id'].rsplit('@', 1)[0]
        starts.setdefault(where, []).append((s['start'], s['night']))
    for lst in starts.values():
        lst.sort(key=lambda x: x[0])
    out = {}
    for system, partition, when, note in runs:
        lst = starts.get(f'{system}:{partition}')
        if not lst:
            continue
        i = bisect.bisect_right([t for t, _ in lst], when) - 1
        if i < 0:
            continue
        nights = out.setdefault((system, partition), {})
        old = nights.get(lst[i][1])
        if old is None:
            nights[lst[i][1]] = note
        elif note not in old.split('; '):
            nights[lst[i][1]] = f'{old}; {note}'
    return out


def for_args(args, history):
    """The history arguments' notes by night ({} with --db only)."""
    if not getattr(args, 'perflogs', None):
        return {}
    return by_night(history, note_runs(args.perflogs, args.system,
                                       getattr(args, 'this_run', None)))
