"""The gate's page: one self-contained HTML file in the report's style (its CSS inline).

Per check and phase the verdict, B/A, its interval and the pairs as points on a log axis (the
tolerance band shaded, 1 marked, the interval as a bar); for a bisection each part's mix the same
way and its share of B's change. No script and no network: it opens from file://.
"""
import datetime
import importlib.resources
import math
import os

import jinja2
from markupsafe import Markup

from postprocess.common import atomic
from gate import summary

TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'templates')
# the report's stylesheet, from the installed postprocess package: the page looks like the report
REPORT_CSS = importlib.resources.files('postprocess.report') / 'templates' / 'report.css'
W, H, PAD = 340, 30, 8


def strip(ratios, lo, hi, tolerance, span):
    """SVG: the pair ratios as points, the interval as a bar, 1 +- tolerance shaded."""
    a, b = span

    def x(v):
        return PAD + (math.log(v) - a) / (b - a) * (W - 2 * PAD)

    parts = [f'<svg class="strip" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" '
             f'aria-label="pair ratios">',
             f'<rect x="{x(1 - tolerance):.1f}" y="2" width="{x(1 + tolerance) - x(1 - tolerance):.1f}" '
             f'height="{H - 4}" fill="#e8f5e9"/>',
             f'<line x1="{x(1):.1f}" x2="{x(1):.1f}" y1="1" y2="{H - 1}" stroke="#9e9e9e"/>']
    if lo is not None:
        parts.append(f'<rect class="ci" x="{x(lo):.1f}" y="{H / 2 - 3:.1f}" '
                     f'width="{max(x(hi) - x(lo), 1.5):.1f}" height="6" fill="#90caf9"/>')
    for i, r in enumerate(ratios):
        y = H / 2 + (i % 3 - 1) * 6
        parts.append(f'<circle class="pair" cx="{x(r):.1f}" cy="{y:.1f}" r="3" fill="#1565c0" '
                     f'fill-opacity=".75"><title>{r:.3f}</title></circle>')
    parts.append('</svg>')
    return Markup(''.join(parts))


def _span(rows, tolerance):
    vals = [1 - 2 * tolerance, 1 + 2 * tolerance]
    for r in rows:
        vals += [x / a for a, x in r.get('pairs') or []] + [v for v in (r.get('lo'), r.get('hi'))
                                                             if v is not None]
    lo, hi = math.log(min(vals)), math.log(max(vals))
    pad = (hi - lo) * 0.05
    return lo - pad, hi + pad


def _row(r, tolerance, span):
    ratios = [x / a for a, x in r.get('pairs') or []]
    return {'status': r['status'], 'label': summary.LABEL[r['status']],
            'css': r['status'].replace(' ', '-'), 'check': r['check'], 'phase': r['phase'],
            'ratio': r.get('ratio'), 'interval': summary.interval(r), 'n': r.get('n', 0),
            'a': r.get('a_median'), 'b': r.get('b_median'), 'unit': r.get('unit') or '',
            'why': summary.why(r),
            'strip': strip(ratios, r.get('lo'), r.get('hi'), tolerance, span)}


def write(path, doc):
    tol = doc['tolerance']
    results = doc.get('results') or []
    bis = doc.get('bisect') or {}
    mix_rows = [dict(r, mix=m['label']) for st in bis.get('stages', []) for m in st['mixes']
                for r in m['results']]
    span = _span(results + mix_rows, tol)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                             autoescape=jinja2.select_autoescape(['html']),
                             trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined)
    env.filters['fmt'] = lambda v, spec: '' if v is None else format(v, spec)
    css = REPORT_CSS.read_text(encoding='utf-8')
    order = sorted(results, key=lambda r: (r['status'] == 'same', r['check'], r['phase']))
    shares = {(s['part'], s['check'], s['phase']): s['share'] for s in bis.get('shares', [])}
    html = env.get_template('gate.html').render(
        title=f'ioregress gate: {doc["a"]["name"]} vs {doc["b"]["name"]} on {doc["system"]}',
        generated=f'{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}',
        doc=doc, verdict=summary.VERDICT[doc['exit']], ok=doc['exit'] == 0,
        rule=summary.rule(doc),
        rows=[_row(r, tol, span) for r in order],
        bisect=bis, named={n['part'] for n in bis.get('named', [])},
        mixes=[dict(_row(r, tol, span), mix=r['mix'],
                    share=shares.get((r['mix'][2:], r['check'], r['phase']))
                    if r['mix'].startswith('A+') else None)
               for r in mix_rows],
        css=Markup(css))
    atomic.write_text(path, html)
    return path
