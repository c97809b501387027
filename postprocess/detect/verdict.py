"""Tonight's verdict for ci/nightly.sh: detect's findings about what this run ran, and the
confirmation re-run of tonight's far nights.

* ``scope_tonight``: a series finding counts when its check passed in tonight's ReFrame report
  and the finding is its latest night; a many-series finding counts for the partitions tonight
  used.
* ``rerun_targets``: the checks behind tonight's *far* findings that are not red yet (a far night
  whose re-run reads low too, fio steady, is a step on its own: postprocess/detect/rules.py); for
  a group, up to six of the members that fell most. ``rerun_runs``: how many whole runs of them.
* ``confirm``: detect again, with tonight's re-run as data (its perflogs stay in the run directory,
  never in the history); the night's verdict is that second judgement.
"""
import datetime

from postprocess.common.findings import group_keys, is_many
from postprocess.detect.levels import is_baseline, is_rate

MAX_GROUP_RERUN = 6         # members re-run to confirm a group's far night
RED = 'regression'


def _ran(report, field=None):
    """{(system, partition, environ, check): hash} of the checks that passed in report.json
    (``field``: that field of each case instead of its hash)."""
    out = {}
    for run in report.get('runs', []):
        for case in run.get('testcases', []):
            if case.get('result') == 'pass':
                name = case.get('display_name') or case.get('name')
                out[(case.get('system'), case.get('partition'), case.get('environ'), name)] = \
                    case.get(field) if field else (case.get('hashcode') or case.get('hash'))
    return out


def scope_tonight(findings, report):
    """The findings about tonight's run, the latest night of each series or group."""
    ran = _ran(report)
    partitions = {(k[0], k[1]) for k in ran}
    latest = {}
    for f in findings:
        if is_many(f):
            if (f['system'], f['partition']) not in partitions:
                continue
        elif (f['system'], f['partition'], f['environ'], f['check']) not in ran:
            continue
        key = (f['system'], f['partition'], f['environ'], f['check'], f['params'], f['phase'])
        if key not in latest or f['night'] >= latest[key]['night']:
            latest[key] = f
    return sorted(latest.values(), key=lambda f: (not is_many(f), f['check'], f['params'],
                                                  f['phase']))


def wants_rerun(f):
    """A far night that a confirmation could make a step: not red already, not an improvement,
    not excused by a busy filesystem, not yet re-run."""
    return (f.get('far') and f['status'] in ('noisy', 'degraded') and not f.get('filesystem_busy')
            and f.get('confirmation') is None)


def rerun_targets(findings, report):
    """ReFrame ``-n`` selectors (``/<hash>``) of the checks to re-run, sorted, without repeats."""
    ran = _ran(report)
    return sorted(f'/{ran[k]}' for k in _rerun_keys(findings) if ran.get(k))


def rerun_runs(findings, report, repetitions):
    """How many whole runs of the re-run checks give each at least ``repetitions`` repetitions
    (each repetition where it sat tonight: iobench's first repetitions of a process run slower
    than its later ones, so ten in one process would not be tonight's measurement again)."""
    repeat = _ran(report, 'repeat')
    per_run = [repeat.get(k) for k in _rerun_keys(findings)]
    per_run = [r for r in per_run if isinstance(r, int) and r > 0]
    return max(1, -(-repetitions // min(per_run))) if per_run else 1


def _rerun_keys(findings):
    chosen = set()
    for f in findings:
        if not wants_rerun(f):
            continue
        if is_many(f):
            members = [g for g in findings if not is_many(g) and g['phase'] == f['phase']
                       and (g['system'], g['partition']) == (f['system'], f['partition'])
                       and not is_baseline(g['params']) and not is_rate(g['params'])
                       and (not f['params'] or f['params'] in group_keys(g['params'], g['check']))
                       and _on_basis(g, f) and g.get('change') is not None]
            members.sort(key=lambda g: g['change'])          # the members that fell most
            chosen.update(_key(g) for g in members[:MAX_GROUP_RERUN])
        else:
            chosen.add(_key(f))
    return chosen


def _on_basis(g, f):
    bound = f.get('factor_min_seconds')
    return bound is None or (g.get('phase_seconds') or 0.0) >= bound


def _key(f):
    return (f['system'], f['partition'], f['environ'], f['check'])


def confirm(tonight, again):
    """Tonight's findings as judged again with the re-run (``again``: detect's findings of that
    second judgement): each finding that wanted a re-run takes the second judgement's status and
    ``confirmation`` (``confirmed``, ``not reproduced``, ``filesystem busy``, or ``not re-run``
    when the re-run did not measure it)."""
    index = {_fkey(g): g for g in again}
    out = []
    for f in tonight:
        g = index.get(_fkey(f))
        if wants_rerun(f):
            if g is None or g.get('confirmation') is None:
                f = dict(f, confirmation='not re-run')
            else:       # the second judgement, with what the first one read of the night
                f = dict(g, **{k: f[k] for k in ('why', 'machine') if k in f})
        out.append(f)
    return out


def _fkey(f):
    return (f['system'], f['partition'], f['environ'], f['check'], f['params'], f['phase'],
            f['night'])


def summary(findings, stage):
    """The verdict document written to <run>/post/verdict.json (docs/CONTRACT.md)."""
    regressions = [f for f in findings if f['status'] == RED]

    def count(status):
        return sum(f['status'] == status for f in findings)
    return {
        'schema': 'ioregress-verdict/2',
        'written': datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'),
        'confirmation': stage,
        'status': RED if regressions else 'ok',
        'exit': 3 if regressions else 0,
        'regressions': len(regressions),
        'degraded': count('degraded'),
        'noisy': count('noisy'),
        'improvements': count('improvement'),
        'findings': [f for f in findings if f['status'] not in ('ok', 'insufficient history')],
        'judged': len(findings),
    }
