"""Acceptances applied to the history before detection: the accepted series forget their nights
before the accepted ``since`` (the verdict re-baselines from it), and their findings say so."""
import copy
import re

import numpy as np

from postprocess.accept import store


def _pattern(rec):
    return [re.compile(c) for c in rec.get('checks') or []]


def matches(rec, system, partition, check, params):
    if system != rec['system'] or (rec.get('partition') and partition != rec['partition']):
        return False
    pats = _pattern(rec)
    if not pats:
        return True
    if check == '*':                    # a `system` finding: only a whole-system acceptance
        return False
    text = f'{check} {params}'
    return any(p.search(text) for p in pats)


def for_args(args):
    """Active acceptances of the results trees behind ``args.perflogs`` (none with --db only)."""
    seen, out = set(), []
    for p in getattr(args, 'perflogs', None) or []:
        results = store.results_of(p)
        if results in seen:
            continue
        seen.add(results)
        out += store.active(store.load(results))
    return out


def rebaseline(history, acceptances):
    """The history without the repetitions of accepted series on nights before their ``since``
    (a shallow copy sharing keys and sessions; the history itself when nothing is dropped)."""
    if not acceptances or not len(history):
        return history
    drop = np.zeros(len(history), dtype=bool)
    key, sess = history.col['key'], history.col['session']
    nights = np.array([s['night'] for s in history.sessions])
    for rec in acceptances:
        kids = [i for i, k in enumerate(history.keys) if matches(rec, k[0], k[1], k[3], k[4])]
        if not kids:
            continue
        early = np.flatnonzero(nights < rec['since'])
        drop |= np.isin(key, kids) & np.isin(sess, early)
    if not drop.any():
        return history
    out = copy.copy(history)
    out.col = {name: values[~drop] for name, values in history.col.items()}
    out._groups = {}
    return out


def drop_runs(runs, acceptances):
    """The same for run records (the confirmation re-run's history): a list without them."""
    if not acceptances:
        return list(runs)
    out = []
    for r in runs:
        night = (r.get('session_start') or r['time']).date().isoformat()
        if any(night < rec['since'] and matches(rec, r['system'], r['partition'], r['check'],
                                                r['params']) for rec in acceptances):
            continue
        out.append(r)
    return out


def mark(findings, acceptances):
    """Give findings of accepted series (on or after ``since``) an ``accepted`` member."""
    for f in findings:
        for rec in acceptances:
            if f.get('night', '') >= rec['since'] and matches(
                    rec, f['system'], f['partition'], f['check'], f.get('params', '')):
                f['accepted'] = {k: rec.get(k) for k in ('id', 'since', 'reason', 'by', 'at')}
    return findings
