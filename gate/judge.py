"""From slots to judgements: per check and phase, the pairs (A, X) of the same blocks, judged.

A check that failed in any slot of either side is ``failed`` (its pairs are not judged: a stack
that breaks a check is no figure to compare); one that ran under A but was skipped or absent
under X, or the reverse, cannot be told apart and says why.
"""
import statistics

from gate import pairs as stats
from gate import sequential


def arm(base, other, tolerance, level, side='B', only=None, effect=None):
    """[result per (check, phase)] of ``other`` against ``base`` (lists of slot records, one per
    block). ``only``: a set of (check, phase) to judge, the rest left out. ``effect``: judged by
    the sequential rule (``--pairs auto``, sequential.py) at that effect, else at a fixed n."""
    checks = sorted({c for rec in base + other for c in rec['checks']})
    out = []
    for check in checks:
        a_runs = [rec['checks'].get(check) for rec in base]
        x_runs = [rec['checks'].get(check) for rec in other]
        phases = sorted({p for r in a_runs + x_runs if r for p in r['phases']})
        if only is not None:
            phases = [p for p in phases if (check, p) in only]
            if not phases:
                continue
        problem = _problem(a_runs, x_runs, side)
        for phase in phases or ['-']:
            row = {'check': check, 'phase': phase,
                   'unit': next((r.get('unit') for r in a_runs + x_runs if r), None)}
            if problem:
                out.append(dict(row, **problem, n=0, pairs=[]))
                continue
            got = [(a['phases'][phase], x['phases'][phase]) for a, x in zip(a_runs, x_runs)
                   if a and x and phase in a['phases'] and phase in x['phases']
                   and a['phases'][phase] > 0]
            ratios = [x / a for a, x in got]
            verdict = stats.judge(ratios, tolerance, level) if effect is None else \
                sequential.judge(ratios, tolerance, effect, level)
            row.update(verdict, pairs=got,
                       a_median=_median([a for a, _ in got]), b_median=_median([x for _, x in got]))
            if len(got) < len(a_runs):
                row['reason'] = f'{len(a_runs) - len(got)} block(s) without this phase on both sides'
            out.append(row)
    return out


def _problem(a_runs, x_runs, side):
    for who, runs in (('A', a_runs), (side, x_runs)):
        bad = [r for r in runs if r and r['result'] == 'fail']
        if bad:
            return {'status': 'failed', 'reason': f'failed under {who} in {len(bad)} of '
                                                  f'{len(runs)} slots: {bad[0]["reason"]}'}
    for who, runs in (('A', a_runs), (side, x_runs)):
        missing = [r for r in runs if not r or r['result'] == 'skip']
        if missing:
            why = next((r['reason'] for r in missing if r), 'not run')
            return {'status': 'cannot tell', 'needed': None,
                    'reason': f'not run under {who} in {len(missing)} of {len(runs)} slots: {why}'}
    return None


def _median(values):
    return statistics.median(values) if values else None


def decided(results):
    """Whether every result is final: nothing left that more pairs could decide."""
    return all(r['status'] != 'cannot tell' or r.get('needed') is None and r.get('n') == 0
               for r in results) and bool(results)


def exit_status(results):
    return stats.exit_status([r['status'] for r in results])
