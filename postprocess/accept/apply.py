"""Acceptances as the verdict applies them: which series a record names (``matches``), the
records of the results trees a command reads (``for_args``), and the findings they mark. The
verdict judges an accepted series from its accepted night on, from the night the acceptance was
recorded (postprocess/detect/levels.py attach_acceptances)."""
import os
import re

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
    """Active acceptances of the results trees behind the history arguments: the parent of
    ``--store`` (<results>/store), of each ``--perflogs`` (its nearest ``perflogs`` directory) and
    of ``--db`` (<results>/reframe.db)."""
    trees = [os.path.dirname(os.path.abspath(args.store.rstrip(os.sep)))] \
        if getattr(args, 'store', None) else []
    trees += [store.results_of(p) for p in getattr(args, 'perflogs', None) or []]
    if getattr(args, 'db', None):
        trees.append(os.path.dirname(os.path.abspath(args.db)))
    seen, out = set(), []
    for results in trees:
        if results in seen:
            continue
        seen.add(results)
        out += store.active(store.load(results))
    return out


def mark(findings, acceptances):
    """Give findings of accepted series (on or after ``since``) an ``accepted`` member."""
    for f in findings:
        for rec in acceptances:
            if f.get('night', '') >= rec['since'] and matches(
                    rec, f['system'], f['partition'], f['check'], f.get('params', '')):
                f['accepted'] = {k: rec.get(k) for k in ('id', 'since', 'reason', 'by', 'at')}
    return findings
