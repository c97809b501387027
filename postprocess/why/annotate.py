"""The ``why`` of each flagged finding: what differs between the last good night and its `since`.

For a series finding, the runs of that series; for a `system` finding, every run of its
partition. The last good night is the latest night before `since` on which the series (the
partition) ran. ``why`` (docs/CONTRACT.md §4):

    {"last_good": "2026-01-04", "since": "2026-01-05",
     "changed": ["HDF5 1.10.8 → 1.12.3"],          # provenance that differs (why/provenance.py)
     "machine": {"before": {"load": 0.4, "used": 41}, "after": {...}},
     "machine_text": "load 0.4 → 7.9, filesystem 41 → 97 % full",
     "notes": ["Lustre 2.15.4 upgrade"],           # site notes recorded on the since night
     "line": "changed since the last good night (2026-01-04): HDF5 1.10.8 → 1.12.3"}
"""
from postprocess.history.store import assign_sessions
from postprocess.why import provenance

FLAGGED = ('regression', 'improvement', 'unconfirmed')
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


def _matches(run, f):
    if f.get('scope') == 'system' or f.get('check') == SYSTEM:
        return True
    return (run['environ'], run['check'], run['params']) == (f['environ'], f['check'], f['params'])


def explain(f, by_night):
    """The ``why`` dict of one finding (None when it has no `since` or no earlier night)."""
    since = f.get('since') or (f.get('night') if f.get('status') in FLAGGED else None)
    if not since:
        return None
    nights = {n: [r for r in runs if _matches(r, f)] for n, runs in by_night.items()}
    nights = {n: rs for n, rs in nights.items() if rs}
    before = [n for n in nights if n < since]
    if not before or since not in nights:
        return None
    good = max(before)
    old = [r['provenance'] for r in nights[good]]
    new = [r['provenance'] for r in nights[since]]
    out = {'last_good': good, 'since': since, 'changed': provenance.changes(old, new),
           'machine': {'before': provenance.state(old), 'after': provenance.state(new)},
           'notes': provenance.notes(new)}
    out['machine_text'] = provenance.state_text(out['machine']['before'], out['machine']['after'])
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
    index = index_runs(list(runs))
    for f in flagged:
        why = explain(f, index.get((f['system'], f['partition']), {}))
        if why:
            f['why'] = why
    return findings


def add_why_from_args(findings, args):
    """detect's hook: the history arguments' run records (with provenance) -> ``why``."""
    if not any(f.get('status') in FLAGGED for f in findings):
        return findings
    from postprocess.history import inputs
    held = len(inputs.PENDING)          # the history's warnings were given once already
    runs = inputs.load_runs(args)
    del inputs.PENDING[held:]
    return add_why(findings, runs)
