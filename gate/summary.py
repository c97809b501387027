"""The gate's answer for the terminal: one line per check and phase, the bisection, the verdict."""

VERDICT = {0: 'PASS: B is the same or faster on every check', 3: 'SLOWER', 4: 'CANNOT TELL',
           1: 'FAILED', 2: 'BAD USAGE'}
LABEL = {'same': 'same', 'faster': 'FASTER', 'slower': 'SLOWER', 'cannot tell': 'CANNOT TELL',
         'failed': 'FAILED'}


def _num(v, spec='.3f'):
    return '-' if v is None else format(v, spec)


def interval(r):
    return f'[{_num(r.get("lo"))}, {_num(r.get("hi"))}]' if r.get('lo') is not None else '[no interval]'


def why(r):
    """What a 'cannot tell' or 'failed' needs said."""
    if r['status'] == 'failed':
        return r.get('reason', '')
    if r['status'] != 'cannot tell':
        return ''
    text = r.get('reason') or ''
    needed = r.get('needed')
    if isinstance(needed, str):         # '>1000': the median sits on the tolerance's edge
        text = (text + '; ' if text else '') + f'{needed[1:]}+ pairs would be needed (the ' \
            'median sits at the edge of the tolerance)'
    elif needed:
        text = (text + '; ' if text else '') + f'about {needed} pairs would decide'
    elif r.get('n') and 'decided_at' in r:      # the sequential rule ran to its cap
        text = (text + '; ' if text else '') + f'not decided by the cap of {r["n"]} pairs ' \
            '(a change between the tolerance and the effect, or a spread beyond the plan)'
    return text


def result_line(r, width):
    ratios = ' '.join(f'{x / a:.2f}' for a, x in r.get('pairs') or [])
    line = (f'  {LABEL[r["status"]]:11s} {r["check"]:{width}s} {r["phase"]:5s} '
            f'{_num(r.get("ratio"))} {interval(r):16s} n={r.get("n", 0)}')
    extra = why(r)
    return line + (f'  {extra}' if extra else '') + (f'  pairs: {ratios}' if ratios else '')


def lines(doc):
    out = [f'gate {doc["system"]}: A {doc["a"]["name"]} vs B {doc["b"]["name"]}, ' + rule(doc)]
    results = doc.get('results') or []
    width = max([len(r['check']) for r in results] + [5])
    for r in sorted(results, key=lambda r: (r['status'] == 'same', r['check'], r['phase'])):
        out.append(result_line(r, width))
    out += bisect_lines(doc.get('bisect'))
    if doc.get('error'):
        out.append(f'error: {doc["error"]}')
    out.append(f'GATE: {VERDICT[doc["exit"]]} (exit {doc["exit"]})')
    return out


def rule(doc):
    """The rule the gate judged by, in one line."""
    if doc.get('rule') == 'sequential':
        return (f'pairs auto: {doc.get("pairs_run", 0)} run of at most {doc["max_pairs"]}, '
                f'{doc["level"]:.0%} confidence sequence of B/A; slower/faster beyond 1 +- '
                f'{doc["tolerance"]:g}, same = no change as large as {doc["effect"]:.0%}')
    return (f'{doc["pairs"]} pairs, same = {doc["level"]:.0%} interval of B/A within '
            f'1 +- {doc["tolerance"]:g}')


def bisect_lines(bis):
    if not bis:
        return []
    out = [f'bisect: {len(bis["parts"])} part(s) differ']
    out += [f'  part {p["label"]}' for p in bis['parts']]
    if bis.get('note'):
        out.append(f'  {bis["note"]}')
    for s in bis.get('shares', []):
        share = '' if s['share'] is None else f', {s["share"]:.0%} of B\'s change'
        out.append(f'  A+{s["part"]:28s} {s["check"]} {s["phase"]}: {_num(s["ratio"])} '
                   f'{interval(s)} {s["status"]}{share} (B {_num(s["b_ratio"])})')
    for stage in bis.get('stages', [])[1:]:
        for m in stage['mixes']:
            for r in m['results']:
                out.append(f'  {m["label"]:30s} {r["check"]} {r["phase"]}: {_num(r.get("ratio"))} '
                           f'{interval(r)} {r["status"]}')
    if bis.get('cannot_tell'):
        out.append(f'CULPRIT: cannot tell: {bis["cannot_tell"]}')
    elif bis.get('named'):
        out += [f'CULPRIT: {n["part"]} ({n["how"]})' for n in bis['named']]
    elif bis.get('stages'):
        out.append('CULPRIT: none named (no mix was surely slower than A carrying a third of '
                   'the change, nor B surely not slower without a part: more pairs, or see the '
                   'figures above)')
    return out
