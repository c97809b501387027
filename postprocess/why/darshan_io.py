"""What the I/O did differently, where both nights have Darshan logs: one sentence from the
existing diff (postprocess/darshan/triage.py) and the Drishti insights that appeared or vanished.

A run's log is ``<outputdir>/<darshan.log>`` from its provenance (``machine.outputdir``,
reframe_checks/iobench_lib/machine.py; ``darshan.log``, iobench_lib/darshan.py); the newest run
with a readable log stands for its night (for a finding about many series, the newest whose
series has a log on both nights: like is compared with like). Costs PyDarshan and Drishti on two
logs per flagged finding (a second or two each), never for a green night.
"""
import os

MAX_PARTS = 3
# each operation's time per layer, top first (triage.flatten's counters: sums over ranks)
LAYERS = {op: (('HDF5', f'H5D_F_{op.upper()}_TIME'), ('MPI-IO', f'MPIIO_F_{op.upper()}_TIME'),
               ('POSIX', f'POSIX_F_{op.upper()}_TIME')) for op in ('write', 'read')}
LABEL = {'slowest_rank_write_s': 'slowest rank write time (s)',
         'slowest_rank_read_s': 'slowest rank read time (s)'}
# Drishti levels that an engineer acts on (info insights are not news)
LEVELS = ('critical', 'warning')


def log_of(run):
    prov = run.get('provenance') if isinstance(run.get('provenance'), dict) else {}
    darshan = prov.get('darshan') if isinstance(prov.get('darshan'), dict) else {}
    machine = prov.get('machine') if isinstance(prov.get('machine'), dict) else {}
    name, where = darshan.get('log'), machine.get('outputdir')
    if not name or name == 'no darshan log' or not where:
        return None
    path = os.path.join(where, name)
    return path if os.path.isfile(path) else None


def _series(run):
    return run.get('environ'), run.get('check'), run.get('params')


def _log_pair(old_runs, new_runs):
    """(old log, new log) of one series: the newest run with a log on the new night whose series
    also has a log on the old night (a finding about many series compares like with like)."""
    old = {}
    for run in sorted(old_runs, key=lambda r: r['time']):
        path = log_of(run)
        if path:
            old[_series(run)] = path
    for run in sorted(new_runs, key=lambda r: r['time'], reverse=True):
        path = log_of(run)
        if path and _series(run) in old:
            return old[_series(run)], path
    return None, None


def _ratio(a, b):
    if not a:
        return 'new'
    r = b / a
    return f'{r:.3g}× more' if r >= 1 else f'{1 / r:.3g}× fewer'


def _hist_mode(changes, prefix):
    """The request-size bin holding most requests after the change, e.g. '100K_1M'."""
    bins = {c['counter'][len(prefix):]: c['b'] for c in changes
            if c['counter'].startswith(prefix) and isinstance(c['b'], (int, float))}
    return max(bins, key=bins.get) if bins and max(bins.values()) > 0 else None


def _secs(v):
    return f'{v:.3g} s'


def layer_part(by, op):
    """Where an operation's added (or saved) time went, from each layer's time summed over ranks:
    'write time (all ranks) HDF5 0.18 → 12.1 s, MPI-IO 0.26 → 0.12 s, POSIX 0.30 → 0.09 s: the
    added time is inside HDF5, above MPI-IO'. Darshan times a call at every layer it wraps, so a
    layer's own share of a change is its change minus the change of the layer below it. None when
    fewer than two layers were timed or the top layer's time moved by less than a fifth."""
    layers = [(name, by[counter]) for name, counter in LAYERS[op] if counter in by
              and all(isinstance(by[counter][k], (int, float)) for k in ('a', 'b'))]
    if len(layers) < 2:
        return None
    top_a, top_b = layers[0][1]['a'], layers[0][1]['b']
    grew = top_b - top_a
    if abs(grew) < 0.2 * max(top_a, top_b, 1e-9):
        return None
    deltas = [c['b'] - c['a'] for _, c in layers]
    own = [d - (deltas[i + 1] if i + 1 < len(deltas) else 0.0) for i, d in enumerate(deltas)]
    i = max(range(len(own)), key=lambda j: own[j] if grew > 0 else -own[j])
    times = ', '.join(f'{name} {_secs(c["a"])} → {_secs(c["b"])}' for name, c in layers)
    text = f'{op} time (all ranks) {times}'
    if abs(own[i]) >= 0.5 * abs(grew):
        name = layers[i][0]
        where = (f'inside {name}, above {layers[i + 1][0]}' if i + 1 < len(layers)
                 else f'in the {name} calls themselves: the filesystem or its client')
        text += f': the {"added" if grew > 0 else "saved"} time is {where}'
    return text


def sentence(changes, phase=None):
    """One sentence from triage.diff_facts' changes (biggest first), or None when none; with the
    finding's ``phase``, that operation's layer times and requests come first."""
    by = {c['counter']: c for c in changes}
    parts = []
    if phase in LAYERS:
        part = layer_part(by, phase)
        if part:
            parts.append(part)
    requests = (('write', 'POSIX_WRITES'), ('read', 'POSIX_READS'))
    for op, counter in requests[::-1] if phase == 'read' else requests:
        c = by.get(counter)
        if c and isinstance(c['a'], (int, float)) and isinstance(c['b'], (int, float)):
            part = f'{_ratio(c["a"], c["b"])} {op} requests ({c["a"]:g} → {c["b"]:g})'
            mode = _hist_mode(changes, f'POSIX_SIZE_{op.upper()}_')
            if mode:
                part += f', most {mode.replace("_", "–")} bytes'
            parts.append(part)
    for op in ('WRITES', 'READS'):
        c = by.get(f'MPIIO_COLL_{op}')
        if c and c['a'] and not c['b']:
            parts.append(f'no collective MPI-IO {op.lower()}')
        elif c and not c['a'] and c['b']:
            parts.append(f'collective MPI-IO {op.lower()} appeared')
    other = {'write': 'read', 'read': 'write'}.get(phase)
    for c in changes:
        if len(parts) >= MAX_PARTS:
            break
        label = f'{c["module"]} {LABEL.get(c["counter"], c["counter"])}'
        if c['kind'] in ('Lustre layout', 'sync', 'slowest-rank time', 'bandwidth') \
                and not (other and other in label.lower()) and not any(label in p for p in parts):
            a, b = c['a'], c['b']
            fmt = (lambda v: f'{v:.3g}') if isinstance(a, float) or isinstance(b, float) \
                else str
            parts.append(f'{label} {fmt(a) if a is not None else "-"} → '
                         f'{fmt(b) if b is not None else "-"}')
    return '; '.join(parts[:MAX_PARTS]) or None


def _clip(text, limit=140):
    text = ' '.join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + '…'


def _insights(log):
    from postprocess.darshan import insights
    from postprocess.darshan.results import result_beside
    doc = insights.drishti_insights(log)
    found = insights.annotate(doc, result_beside(log))
    return {f'{i["code"]} ({i["level"]}): {_clip(i["issue"])}' for i in found
            if i['level'] in LEVELS and not i.get('expected')}, doc.get('error')


def explain(old_runs, new_runs, phase=None):
    """{'io', 'insights_appeared', 'insights_vanished', 'darshan_logs'} or {} (no two logs);
    ``phase``: the finding's (write/read), whose layer times lead the sentence."""
    old, new = _log_pair(old_runs, new_runs)
    if not old or not new:
        return {}
    from contract.darshan_facts import DarshanLogError
    from postprocess.darshan.triage import diff_logs
    out = {'darshan_logs': [old, new]}
    try:
        out['io'] = sentence(diff_logs(old, new), phase) or 'no Darshan counter that explains I/O changed'
    except (DarshanLogError, OSError, ValueError) as err:
        out['io_error'] = f'{type(err).__name__}: {err}'
        return out
    before, err_a = _insights(old)
    after, err_b = _insights(new)
    if err_a or err_b:
        out['insights_error'] = err_a or err_b
    out['insights_appeared'] = sorted(after - before)
    out['insights_vanished'] = sorted(before - after)
    return out
