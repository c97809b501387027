"""The ``why`` of each flagged finding: what differs between the last good night and its `since`.

For a series finding, the runs of that series; for a `group` finding, the runs of its group's
checks (``backend=hdf5``); for a `stack` or `system` finding, every run of its partition. The last
good night is the latest night before `since` on which those runs ran. ``why`` (docs/CONTRACT.md §4):

    {"last_good": "2026-01-04", "since": "2026-01-05",
     "changed": ["HDF5 1.10.8 → 1.12.3"],          # provenance that differs (why/provenance.py)
     "machine": {"before": {"load": 0.4, "used": 41}, "after": {...}},
     "machine_text": "load 0.4 → 7.9, filesystem 41 → 97 % full",
     "notes": [{"night": "2026-01-05", "note": "Lustre 2.15.4 upgrade"}],   # since .. tonight
     "io": "4× more write requests ...",           # Darshan, when both nights have logs
     "insights_appeared": [...], "insights_vanished": [...], "darshan_logs": [old, new],
     "line": "changed since the last good night (2026-01-04): HDF5 1.10.8 → 1.12.3"}
"""
from postprocess.common.findings import MANY, group_keys
from postprocess.history.sessions import assign_sessions
from postprocess.why import provenance

# noisy too: a far night is noisy until its confirmation re-run makes it a regression, and the
# nightly's verdict keeps the why detect gave it (detect/verdict.py confirm)
FLAGGED = ('regression', 'improvement', 'degraded', 'noisy')
SYSTEM = '*'


def _night(run):
    return run['session_start'].date().isoformat()


def index_runs(runs):
    """{(system, partition): {night: [run, ...]}} with sessions assigned as History does."""
    runs = [r for r in runs if r.get('time') is not None]
    for r in runs:
        if r.get('session_start') is None:
            r['session'] = None
    assign_sessions(runs)
    out = {}
    for r in runs:
        out.setdefault((r['system'], r['partition']), {}).setdefault(_night(r), []).append(r)
    return out


def _runs_of(f):
    """Which runs are the finding's: ('group', params) for a group finding ('backend=hdf5'),
    ('partition',) for a stack or system finding, else ('series', environ, check, params)."""
    if f.get('scope') == 'group':
        return ('group', f['params'])
    if f.get('scope') in ('system', 'stack') or f.get('check') == SYSTEM:
        return ('partition',)
    return ('series', f['environ'], f['check'], f['params'])


def _series_of(run):
    return ('series', run['environ'], run['check'], run['params'])


def matches_finding(run, f):
    """Is ``run`` one of the finding's series? A group finding (``params`` 'backend=hdf5'): the
    runs of that group; a stack or system finding: every run of the partition."""
    which = _runs_of(f)
    if which[0] == 'group':
        return which[1] in group_keys(run['params'], run['check'])
    return which[0] == 'partition' or which == _series_of(run)


class FindingRuns:
    """{night: [run]} of a finding's series (``matches_finding``) in one partition's
    ``by_night``, each series and group sorted out once (a history judged night by night has a
    finding per series and night: filtering every run for each would grow as their product)."""

    def __init__(self, by_night):
        self.by_night, self.series, self.groups = by_night, None, {}

    def __call__(self, f):
        which = _runs_of(f)
        if which[0] == 'partition':
            return self.by_night
        if which[0] == 'group':
            if which not in self.groups:
                mine = {n: [r for r in runs if matches_finding(r, f)]
                        for n, runs in self.by_night.items()}
                self.groups[which] = {n: rs for n, rs in mine.items() if rs}
            return self.groups[which]
        if self.series is None:
            self.series = {}
            for n, runs in self.by_night.items():
                for r in runs:
                    self.series.setdefault(_series_of(r), {}).setdefault(n, []).append(r)
        return self.series.get(which, {})


def explain(f, runs_of):
    """The ``why`` dict of one finding (None when it has no `since` or no earlier night);
    ``runs_of``: the ``FindingRuns`` of its partition.

    The runs of every night from `since` to the finding's night are compared with the last good
    night's: `since` comes from change points over noisy levels and may be a night early, and a
    change that came after it still explains tonight (it is then named with its first night)."""
    since = f.get('since') or (f.get('night') if f.get('status') in FLAGGED else None)
    if not since:
        return None
    nights = runs_of(f)
    before = [n for n in nights if n < since]
    later = sorted(n for n in nights if since <= n <= max(since, f.get('night') or since))
    if not before or not later:
        return None
    good = max(before)
    old = [r['provenance'] for r in nights[good]]
    changed, notes = [], []
    for n in later:
        new = [r['provenance'] for r in nights[n]]
        for c in provenance.changes(old, new):
            if not any(c == k or k.startswith(c + ' (from ') for k in changed):
                changed.append(c if n == later[0] else f'{c} (from {n})')
        notes += [{'night': n, 'note': t} for t in provenance.notes(new)
                  if t not in (x['note'] for x in notes)]
    new = [r['provenance'] for r in nights[later[0]]]
    out = {'last_good': good, 'since': since, 'changed': changed,
           'machine': {'before': provenance.state(old), 'after': provenance.state(new)},
           'notes': notes}
    out['machine_text'] = provenance.state_text(out['machine']['before'], out['machine']['after'])
    from postprocess.why import darshan_io     # what the I/O did differently (both nights' logs)
    out.update(darshan_io.explain(nights[good], nights[later[-1]], f.get('phase')))
    out['line'] = line(out)
    return out


def line(why):
    what = '; '.join(why['changed']) if why['changed'] else 'nothing recorded differs'
    return f'changed since the last good night ({why["last_good"]}): {what}'


def add_why(findings, runs):
    """Give every flagged finding a ``why`` (in place); ``runs``: run records with provenance."""
    flagged = [f for f in findings if f.get('status') in FLAGGED]
    if not flagged:
        return findings
    index = {k: FindingRuns(v) for k, v in index_runs(list(runs)).items()}
    for f in flagged:
        why = explain(f, index.get((f['system'], f['partition']), FindingRuns({})))
        if why:
            f['why'] = why
    return findings


def add_why_from_history(findings, history):
    """detect's hook: run records (with provenance) of the nights each flagged finding needs --
    its last good night (from ``history``, the table detect judged) and `since` .. its night ->
    ``why``. Only those nights' runs are made records (history/store.py runs_of_nights)."""
    flagged = [f for f in findings if f.get('status') in FLAGGED]
    if not flagged:
        return findings
    from postprocess.history.store import runs_of_nights
    return add_why(findings, runs_of_nights(history, needed_nights(flagged, history)))


def needed_nights(flagged, history):
    """The nights ``explain`` compares: per finding, the latest night before `since` on which its
    series (its partition, for scope `system`) ran, and every night from `since` to its own."""
    nights = {}
    for (kid, _), lst in history.groups().items():
        key = history.keys[kid]
        nights.setdefault(key[:2], set()).update(history.sessions[s]['night'] for s, _ in lst)
        nights.setdefault(key, set()).update(history.sessions[s]['night'] for s, _ in lst)
    out = set()
    for f in flagged:
        since = f.get('since') or f['night']
        # a group's or the partition's nights: the partition's (a superset: explain() filters)
        system = f.get('scope') in MANY or f.get('check') == SYSTEM
        mine = nights.get((f['system'], f['partition']) if system else
                          (f['system'], f['partition'], f['environ'], f['check'], f['params']),
                          set())
        earlier = [n for n in mine if n < since]
        out.update(n for n in mine if since <= n <= f['night'])
        out.update([max(earlier)] if earlier else [])
        out.add(since)
    return out
