"""What the I/O did differently, where both nights have Darshan logs: one sentence from the
existing diff (postprocess/darshan/triage.py) and the Drishti insights that appeared or vanished.

A run's log is ``<outputdir>/<darshan.log>`` from its provenance (``machine.outputdir``,
reframe_checks/iobench_lib/machine.py; ``darshan.log``, iobench_lib/darshan.py); the newest run
with a readable log stands for its night. Costs PyDarshan and Drishti on two logs per flagged
finding (a second or two each), never for a green night.
"""
import os

MAX_PARTS = 3
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


def _newest_log(runs):
    for run in sorted(runs, key=lambda r: r['time'], reverse=True):
        path = log_of(run)
        if path:
            return path
    return None


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


def sentence(changes):
    """One sentence from triage.diff_facts' changes (biggest first), or None when none."""
    by = {c['counter']: c for c in changes}
    parts = []
    for op, counter in (('write', 'POSIX_WRITES'), ('read', 'POSIX_READS')):
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
    for c in changes:
        if len(parts) >= MAX_PARTS:
            break
        if c['kind'] in ('Lustre layout', 'sync', 'slowest-rank time', 'bandwidth') \
                and not any(c['counter'] in p for p in parts):
            a, b = c['a'], c['b']
            fmt = (lambda v: f'{v:.3g}') if isinstance(a, float) or isinstance(b, float) \
                else str
            parts.append(f'{c["counter"]} {fmt(a) if a is not None else "-"} → '
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


def explain(old_runs, new_runs):
    """{'io', 'insights_appeared', 'insights_vanished', 'darshan_logs'} or {} (no two logs)."""
    old, new = _newest_log(old_runs), _newest_log(new_runs)
    if not old or not new:
        return {}
    from postprocess.darshan.facts import DarshanLogError
    from postprocess.darshan.triage import diff_logs
    out = {'darshan_logs': [old, new]}
    try:
        out['io'] = sentence(diff_logs(old, new)) or 'no Darshan counter that explains I/O changed'
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
