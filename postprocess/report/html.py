"""The report page: verdict first, then every series grouped by check, then the figures.

Rendered from Jinja2 templates (templates/, autoescaped) into one self-contained file: CSS, the
filter script and Bokeh's library are inline, so it opens from file:// with no server or network.
"""
import datetime
import os

import jinja2
from markupsafe import Markup

from postprocess.common import atomic
from postprocess.common.findings import is_many, many_label
from postprocess.common.units import value_unit
from postprocess.report import verdict as vd
from postprocess.report.interactive import sparkline
from postprocess.why import text as why_text
from postprocess.why.state import text as why_state_text

TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'templates')
LABEL = {'regression': 'regression', 'system': 'system-wide', 'stack': 'I/O stack',
         'group': 'group', 'failed': 'failed', 'degraded': 'degraded', 'noisy': 'noisy night'}
SPARK_NIGHTS = 30


def _env():
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                             autoescape=jinja2.select_autoescape(['html']),
                             trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    env.filters['fmt'] = lambda v, spec: '' if v is None else format(v, spec)
    return env


def _rel(path, outdir):
    return os.path.relpath(path, outdir).replace(os.sep, '/')


class SeriesInfo:
    """Per (key..., phase): night medians for the sparkline and where its history plot is."""

    def __init__(self, medians=None, anchors=None, pngs=None):
        self.medians = medians or {}     # (key..., phase) -> [night median, ...] oldest first
        self.anchors = anchors or {}     # (key..., phase) -> '#h-...' (interactive figure)
        self.pngs = pngs or {}           # (key..., phase) -> href of the PNG

    def spark(self, sk, flagged):
        return Markup(sparkline(self.medians.get(sk, [])[-SPARK_NIGHTS:], flagged))

    def history_href(self, sk):
        return ('#' + self.anchors[sk]) if sk in self.anchors else self.pngs.get(sk)


LINKS = {  # (long label, short label for table rows, tooltip)
    'history': ('history', 'history', 'night-by-night history of this series'),
    'page': ('Darshan log', 'Darshan', 'Darshan page of the newest log of this check'),
    'diff_prev': ('diff vs last good', 'diff', 'Darshan diff against the last good run'),
}


def _links(sk, info, darshan, short=False):
    """[(label, href, tooltip)]: history plot, Darshan log page, Darshan diff (when known)."""
    hrefs = {'history': info.history_href(sk)}
    hrefs.update(darshan.get(sk[:5]) if darshan else {})
    links = [[LINKS[k][1 if short else 0], hrefs[k], LINKS[k][2]] for k in LINKS if hrefs.get(k)]
    critical = hrefs.get('critical')
    for link in links:
        if link[1] == hrefs.get('page') and critical:
            link[0] += f' ({critical} critical)'
            link[2] += f': Drishti reports {critical} critical issue(s)'
    return [tuple(link) for link in links]


def attention_lines(attention, info, darshan):
    lines = []
    for a in attention:
        sk = vd.finding_key(a) + (a.get('phase', ''),)
        flagged = a['kind'] != 'failed'
        if not flagged:   # a failure's phase is ReFrame's (sanity...): show the write history
            sk = sk[:5] + ('write',)
        what = vd.short_params(a.get('params', ''), a['check']) if a.get('params') else a['check']
        # the change is against the expected level when the detector gives one (issue 11)
        check, median, history_median = vd.check_class(a['check']), a.get('median'), \
            a.get('expected_median', a.get('history_median'))
        scale, unit = value_unit(a.get('params'))
        if is_many(a):       # medians of a change of many series are ratios, not MiB/s
            check = f'{a["system"]}:{a["partition"]}'
            what = many_label(a)
            median = history_median = None
        lines.append({
            'kind': a['kind'], 'label': LABEL[a['kind']], 'check': check,
            'what': what, 'phase': a.get('phase', ''), 'change': a.get('change'),
            'median': _scaled(median, scale), 'history_median': _scaled(history_median, scale),
            'unit': unit, 'since': a.get('since'), 'reason': a.get('reason'),
            'where': (f'{a["system"]}: {vd.partition_sizes(a)} +{a["environ"]}'
                      if vd.partition_sizes(a) else f'{a["system"]}:{a["partition"]}+{a["environ"]}'),
            'spark': info.spark(sk, flagged), 'links': _links(sk, info, darshan),
            'why': why_text.page_lines(a)})     # postprocess/why: what changed, acceptance
    return lines


def _scaled(value, scale):
    return None if value is None else value * scale


def groups(rest, info, darshan, efficiency):
    """Everything not in the attention list, grouped by check class, flagged rows first."""
    out = {}
    for f in rest:
        sk = vd.finding_key(f) + (f['phase'],)
        cls = vd.check_class(f['check'])
        scale, unit = value_unit(f['params'])
        row = {'status': f['status'], 'params': vd.short_params(f['params'], f['check']),
               'full': f'{f["check"]} [{f["params"]}]', 'phase': f['phase'], 'night': f['night'],
               'where': f'{f["system"]}:{f["partition"]}+{f["environ"]}',
               'median': _scaled(f.get('median'), scale), 'unit': unit,
               'history_median': _scaled(f.get('expected_median', f.get('history_median')),
                                         scale),
               'change': f.get('change'), 'z': f.get('z'), 'n': f.get('n'),
               'detectable': f.get('detectable'),
               'outliers': ', '.join(map(str, f.get('outliers') or [])),
               'efficiency': (efficiency or {}).get(sk),
               'machine': why_state_text(f.get('machine') or {}),    # postprocess/why/state.py
               'spark': info.spark(sk, f['status'] in vd.FLAGGED),
               'links': _links(sk, info, darshan, short=True)}
        out.setdefault(cls, []).append(row)
    result = []
    for cls in sorted(out):
        rows = sorted(out[cls], key=lambda r: (r['status'] not in vd.FLAGGED, r['params'],
                                               r['phase']))
        result.append({'name': cls, 'rows': rows,
                       'flagged': sum(r['status'] in vd.FLAGGED for r in rows)})
    return result


def write_report(path, sections, findings, notes, darshan_index=None, title='ioregress report',
                 efficiency=None, verdict=None, info=None, darshan_links=None, interactive=None,
                 extra_sections=None, accepted=None, failed_steps=None, what_ran=''):
    """``sections``: [(heading, [png paths])]; ``findings``: detect findings (latest per series);
    ``verdict``: verdict.build(...) (default: built from ``findings`` alone); ``interactive``:
    (bokeh js, script, [(anchor, title, div)]). Written atomically to ``path``."""
    outdir = os.path.dirname(os.path.abspath(path))
    verdict = verdict or vd.build(findings)
    info = info or SeriesInfo()
    js, script, plots = interactive or ('', '', [])
    counts = verdict['counts']
    young = bool(findings) and all(f['status'] == 'insufficient history' for f in findings)
    # a first night (no verdict possible yet): what ran and how the libraries compare come before
    # the tables, the figures drawn for it (library bars first, then bandwidth against ranks)
    first = [(_rel(p, outdir), os.path.basename(p)) for h, files in sections
             if h.startswith(('Library', 'Bandwidth')) for p in files] if young else []
    first.sort(key=lambda f: not f[1].startswith('libraries'))
    page = _env().get_template('index.html').render(
        title=title,
        generated=f'{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}',
        counts=counts, has_cases=sum(counts.values()) > 0,
        young=young, first_figures=first[:4], what_ran=what_ran,
        failed_steps=failed_steps or [],
        # the verdict judges against a usual level (its change is relative to it): 'usual' as in the terminal
        ref_label='usual' if any('expected_median' in f for f in findings) else 'history',
        attention=attention_lines(verdict['attention'], info, darshan_links),
        not_red=attention_lines(verdict.get('notes', []), info, darshan_links),
        improvements=len(verdict['improvements']), skipped=verdict['skipped'],
        reach=verdict.get('reach', ''), reach_groups=verdict.get('reach_groups', ''),
        groups=groups(verdict['rest'], info, darshan_links, efficiency),
        darshan_index=_rel(darshan_index, outdir) if darshan_index else None,
        notes=notes, extra_sections=extra_sections or [], accepted=accepted or [],
        sections=[(h, [(_rel(p, outdir), os.path.basename(p)) for p in files])
                  for h, files in sections],
        bokeh_js=Markup(js), bokeh_script=Markup(script),
        plots=[(a, t, Markup(d)) for a, t, d in plots],
        css=Markup(open(os.path.join(TEMPLATES, 'report.css'), encoding='utf-8').read()),
        filter_js=Markup(open(os.path.join(TEMPLATES, 'filter.js'), encoding='utf-8').read()))
    atomic.write_text(path, page)
    return path
