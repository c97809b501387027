"""Acceptances as the verdict applies them: which series a record names (``matches``), the
records of the results trees a command reads (``for_args``), and the findings they mark. The
verdict judges an accepted series from its accepted night on, from the night the acceptance was
recorded (postprocess/detect/levels.py attach_acceptances)."""
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
    """Active acceptances of the results trees behind ``args.perflogs`` (none with --db only)."""
    seen, out = set(), []
    for p in getattr(args, 'perflogs', None) or []:
        results = store.results_of(p)
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
