"""Site notes (``ci/nightly.sh --note``) by night, for markers on the history plots.

A note rides in every run's provenance (``iob_provenance.machine.note``,
reframe_checks/iobench_lib/machine.py), which the results store keeps as its ``note`` column: one
query of the rows the history was selected from.
"""
import bisect

from postprocess.history import engine, sessions


def note_runs(rows):
    """[(system, partition, completion time, note)] of the runs that recorded a note, from store
    rows (a table of the engine)."""
    got = engine.connect().execute(
        f'SELECT system, partition, epoch(any_value(time)), any_value(utc_offset), '
        f'any_value(note) FROM {rows} WHERE note IS NOT NULL AND note <> \'\' '
        f'GROUP BY testcase, system, partition ORDER BY 3').fetchall()
    return [(system, partition, sessions.aware(t, tz), str(note))
            for system, partition, t, tz, note in got]


def by_night(history, runs):
    """{(system, partition): {night: 'note; other note'}}: each note on the night of the history
    session its run belongs to (the latest session of its partition started before it)."""
    starts = {}
    run_key, run_sess = history.run_key, getattr(history.runs, 'session_of_run', None)
    if run_sess is None:
        ids = {s['id']: i for i, s in enumerate(history.sessions)}
        run_sess = [ids.get(r['session']) for r in history.runs]
    seen = set()
    for kid, sid in zip(run_key, run_sess):
        key = history.keys[kid]
        if sid is None or (key[:2], sid) in seen:
            continue
        seen.add((key[:2], sid))
        s = history.sessions[sid]
        starts.setdefault(f'{key[0]}:{key[1]}', []).append((s['start'], s['night']))
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


def for_history(history):
    """The notes of the history's runs by night."""
    rows = getattr(history, 'rows_table', None)
    return by_night(history, note_runs(rows)) if rows else {}
