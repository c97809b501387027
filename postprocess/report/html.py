"""One static HTML page collecting the figures and the latest findings (no server, no JS)."""
import datetime
import html
import os

from postprocess.common import atomic

STATUS_COLOR = {'regression': '#f8d0d0', 'improvement': '#d5f0d5', 'insufficient history': '#eee'}


def _rel(path, outdir):
    return html.escape(os.path.relpath(path, outdir).replace(os.sep, '/'), quote=True)


def _fmt(value, spec):
    return '' if value is None else format(value, spec)


def findings_table(findings, efficiency=None):
    latest = {}
    for f in findings:
        latest[(f['system'], f['partition'], f['environ'], f['check'], f['params'], f['phase'])] = f
    rows = sorted(latest.values(), key=lambda f: (f['status'] != 'regression', f['check'],
                                                  f['params'], f['phase']))
    out = ['<table><tr><th>status</th><th>night</th><th>system:partition+environ</th>'
           '<th>check</th><th>parameters</th><th>phase</th><th>median MiB/s</th>'
           '<th>history median</th><th>change</th><th>z</th><th>reps</th><th>outliers</th>'
           '<th>efficiency vs fio</th></tr>']
    efficiency = efficiency or {}
    for f in rows:
        color = STATUS_COLOR.get(f['status'], '#fff')
        cells = [f['status'], f['night'], f'{f["system"]}:{f["partition"]}+{f["environ"]}',
                 f['check'], f['params'], f['phase'], _fmt(f['median'], '.4g'),
                 _fmt(f['history_median'], '.4g'), _fmt(f['change'], '+.1%'), _fmt(f['z'], '+.1f'),
                 str(f['n']), ', '.join(map(str, f['outliers'])),
                 _fmt(efficiency.get((f['system'], f['partition'], f['environ'], f['check'],
                                      f['params'], f['phase'])), '.3f')]
        out.append(f'<tr style="background:{color}">' +
                   ''.join(f'<td>{html.escape(str(c))}</td>' for c in cells) + '</tr>')
    out.append('</table>')
    return '\n'.join(out)


def write_report(path, sections, findings, notes, darshan_index=None, title='ioregress report',
                 efficiency=None):
    """``sections``: [(heading, [png paths])]; ``efficiency``: {(key..., phase): latest median
    bandwidth / same-session fio baseline median}. Written atomically to ``path``."""
    outdir = os.path.dirname(os.path.abspath(path))
    parts = [f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>',
             '<style>body{font-family:sans-serif;margin:1.5em} table{border-collapse:collapse;'
             'font-size:12px} td,th{border:1px solid #bbb;padding:2px 6px} img{max-width:48%;'
             'margin:4px;border:1px solid #ddd} .note{color:#a60}</style></head><body>',
             f'<h1>{html.escape(title)}</h1>',
             f'<p>Generated {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}. '
             'Bandwidth in MiB/s (2<sup>20</sup> bytes/s).</p>']
    if darshan_index:
        parts.append(f'<p><a href="{_rel(darshan_index, outdir)}">Darshan reports (index)</a></p>')
    for note in notes:
        parts.append(f'<p class="note">{html.escape(note)}</p>')
    parts.append('<h2>Latest night of every series</h2>')
    parts.append(findings_table(findings, efficiency) if findings else '<p>No runs.</p>')
    for heading, files in sections:
        parts.append(f'<h2>{html.escape(heading)}</h2>')
        if not files:
            parts.append('<p>No data for this figure.</p>')
        for png in files:
            parts.append(f'<a href="{_rel(png, outdir)}"><img src="{_rel(png, outdir)}" '
                         f'alt="{html.escape(os.path.basename(png), quote=True)}"></a>')
    parts.append('</body></html>\n')
    atomic.write_text(path, '\n'.join(parts))
    return path
