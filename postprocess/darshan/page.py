"""The HTML of the Darshan index, the per-log pages and the diffs: Jinja2 templates in templates/.

Every value shown comes from logs, file names and run reports, so the environment autoescapes
everything; link targets go through the ``urlencode`` filter. Pages are self-contained (inline
CSS and JS, no network) and open from file://.
"""
import os
import time

import jinja2

_HERE = os.path.dirname(os.path.abspath(__file__))
ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(_HERE, 'templates')),
                         autoescape=True, trim_blocks=True, lstrip_blocks=True,
                         undefined=jinja2.StrictUndefined)
LEVEL_ORDER = ('critical', 'warning', 'info', 'ok')
BANDS = {'flagged': 'for failed Darshan checks and failed ReFrame runs',
         'all': 'for every log', 'none': 'for no log (already made ones are kept)'}


def _num(v, fmt='{:.1f}'):
    return '' if v is None else fmt.format(v)


ENV.filters['num'] = _num
ENV.filters['href'] = lambda rel, up='': up + jinja2.filters.do_urlencode(rel)


def render(name, **ctx):
    return ENV.get_template(name).render(**ctx)


def _sort_counts(c, kind):
    """Sort key of an insight column: unexplained first, expected ones break ties."""
    return c[kind] + c[kind + '_expected'] / 1000


def render_index(rows, root, mode, empty_reasons=()):
    """``empty_reasons``: [(why no log, runs)] shown when there is no log (index.capture_reasons)."""
    counts = {}
    for r in rows:
        counts[r['verdict']] = counts.get(r['verdict'], 0) + 1
    ordered = sorted(rows, key=lambda r: (r.get('date') or '', r.get('rel') or ''), reverse=True)
    return render('index.html', rows=ordered, root=root, counts=sorted(counts.items()),
                  built=time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime()),
                  summaries=BANDS[mode], sort_counts=_sort_counts, empty_reasons=list(empty_reasons),
                  capture_doc=os.path.join(os.path.dirname(os.path.dirname(_HERE)), 'docs',
                                           'darshan-capture.md'),
                  with_critical=sum(1 for r in rows if r['insight_counts']['critical']))


def render_log(row, mode):
    """The log's own page; no build time in it, so a warm rerun leaves it untouched."""
    by_level = {lv: [i for i in row['insights'] if i['level'] == lv] for lv in LEVEL_ORDER}
    summary_cmd = None
    if not row.get('summary') and row.get('facts_key'):
        summary_cmd = f'python -m darshan summary {row["log"]} --output summaries/{row["sha"]}.html'
    return render('log.html', row=row, by_level=by_level, summary_cmd=summary_cmd, summaries=BANDS[mode])


def json_rows(rows):
    """index.json: what other pages link by (hrefs relative to the index)."""
    keep = ('system', 'partition', 'environ', 'check', 'params', 'verdict', 'message', 'reframe_result',
            'iobench_write', 'iobench_read', 'darshan_bw', 'page', 'summary', 'sha')
    out = []
    for r in rows:
        doc = {k: r.get(k) for k in keep}
        c = r['insight_counts']
        doc.update(time=r.get('date'), log=r['rel'], diff_prev=r.get('diff_prev'),
                   critical=c['critical'], warnings=c['warnings'], critical_expected=c['critical_expected'],
                   warnings_expected=c['warnings_expected'], insights_error=c['error'])
        out.append(doc)
    return out
