"""Acceptances as the verdict applies them: which series a record names (``matches``), the
records of the results trees a history query reads (``for_query``), and the findings they mark. The
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


def for_query(query):
    """Active acceptances of the results trees behind a HistoryQuery: the parent of its store
    (<results>/store), of each perflogs root (its nearest ``perflogs`` directory) and of its DB
    (<results>/reframe.db)."""
    trees = [os.path.dirname(os.path.abspath(query.store.rstrip(os.sep)))] if query.store else []
    trees += [store.results_of(p) for p in query.perflogs]
    if query.db:
        trees.append(os.path.dirname(os.path.abspath(query.db)))
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
