"""What tonight's verdict could see: the least fall that would have made tonight a step (detect's
``detectable``, postprocess/detect/rules.py: the far threshold a confirmation re-run must then
reproduce, or, on the third night of a run, the low threshold), told per kind of level, so a site
reads a quiet night for what it is: "nothing fell by more than this", not "nothing fell"."""
import statistics

from postprocess.common.findings import group_label, is_many
from postprocess.common.units import value_unit


def _pct(x):
    return f'{-x:.0%}'


def _span(values):
    lo, hi = max(values), min(values)       # falls: the least fall first
    return _pct(lo) if round(lo, 2) == round(hi, 2) else f'{_pct(lo)}-{_pct(hi)}'


def level_kind(f):
    """The kind of level a finding's figure tells: ``stack`` (a partition's common factor, either
    scope), ``group``, ``rates`` (metadata operation rates), ``series`` (a bandwidth series), or
    None (fio, the filesystem's reading and not a check of the stack)."""
    if f.get('scope') == 'group':
        return 'group'
    if is_many(f):
        return 'stack'
    params = str(f.get('params', ''))
    if 'backend=fio' in params:
        return None
    return 'series' if value_unit(params)[1] == 'MiB/s' else 'rates'


def reach(findings):
    """{kind: text} of the smallest fall each kind of level could flag on its latest night:
    ``stack`` per phase, ``groups`` (a library's or check family's checks, as a range),
    ``series`` (the median over the bandwidth series, with their count), ``rates`` (metadata
    operation rates); a kind without a judged level is left out."""
    out, stack = {}, {}
    figures = {'group': [], 'rates': [], 'series': []}
    for f in findings:
        d, kind = f.get('detectable'), level_kind(f)
        if d is None or kind is None:
            continue
        if kind == 'stack':
            stack[f['phase']] = d
        else:
            figures[kind].append(d)
    series, rates, groups = figures['series'], figures['rates'], figures['group']
    if stack:
        out['stack'] = ', '.join(f'{phase} {_pct(d)}' for phase, d in sorted(stack.items(),
                                                                              reverse=True))
    if groups:
        out['groups'] = _span(groups)
    if series:
        out['series'] = f'{_pct(statistics.median(series))} (median of {len(series)})'
    if rates:
        out['rates'] = _span(rates)
    return out


LABELS = (('stack', 'the I/O stack'), ('groups', 'a group (one library or check family)'),
          ('series', 'one series'), ('rates', 'metadata rates'))


def group_reach(findings):
    """Each group's own figure, for the page's tooltip: 'HDF5 checks write 22%, read 24%; ...'."""
    by = {}
    for f in findings:
        if f.get('scope') == 'group' and f.get('detectable') is not None:
            by.setdefault(group_label(f), []).append(f'{f["phase"]} {_pct(f["detectable"])}')
    return '; '.join(f'{name} {", ".join(sorted(v, reverse=True))}'
                     for name, v in sorted(by.items()))


def reach_line(findings):
    """One line for the terminal and the page, or '' when nothing was judged."""
    r = reach(findings)
    parts = [f'{label} {r[k]}' for k, label in LABELS if k in r]
    return ('tonight could see falls of at least: ' + '; '.join(parts)) if parts else ''
