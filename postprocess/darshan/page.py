"""The HTML of the Darshan index: one table, sortable and filterable with inline JS, no server.

Every value shown comes from logs, file names and run reports, so every one is HTML-escaped
(``html.escape(..., quote=True)``) and link targets are percent-encoded relative paths.
"""
import html
import time
import urllib.parse

COLUMNS = (  # key, header, numeric
    ('system', 'system', False), ('partition', 'partition', False), ('environ', 'environ', False),
    ('check', 'check', False), ('params', 'parameters', False), ('date', 'date', False),
    ('iobench_write', 'iobench write MiB/s', True), ('iobench_read', 'iobench read MiB/s', True),
    ('darshan_bw', 'Darshan MiB/s', True), ('reframe_result', 'ReFrame', False),
    ('verdict', 'Darshan checks', False),
)

_SCRIPT = r"""
const table = document.getElementById('runs');
const body = table.tBodies[0];
let sortCol = -1, sortDir = 1;
function cellValue(row, i) {
  const td = row.cells[i];
  return td.dataset.v !== undefined ? td.dataset.v : td.textContent;
}
function sortBy(i, numeric) {
  sortDir = (sortCol === i) ? -sortDir : 1; sortCol = i;
  const rows = Array.from(body.rows);
  rows.sort((a, b) => {
    let x = cellValue(a, i), y = cellValue(b, i);
    if (numeric) { x = x === '' ? -Infinity : parseFloat(x); y = y === '' ? -Infinity : parseFloat(y);
                   return (x - y) * sortDir; }
    return x.localeCompare(y) * sortDir;
  });
  rows.forEach(r => body.appendChild(r));
  document.querySelectorAll('th .arrow').forEach(s => s.textContent = '');
  table.tHead.rows[0].cells[i].querySelector('.arrow').textContent = sortDir > 0 ? ' \u25b2' : ' \u25bc';
}
function applyFilter() {
  const words = document.getElementById('filter').value.toLowerCase().split(/\s+/).filter(Boolean);
  const verdict = document.getElementById('verdict').value;
  let shown = 0;
  for (const row of body.rows) {
    const text = row.textContent.toLowerCase();
    const ok = words.every(w => text.includes(w)) && (!verdict || row.dataset.verdict === verdict);
    row.style.display = ok ? '' : 'none';
    if (ok) shown++;
  }
  document.getElementById('shown').textContent = shown;
}
document.getElementById('filter').addEventListener('input', applyFilter);
document.getElementById('verdict').addEventListener('change', applyFilter);
applyFilter();
"""

_STYLE = """
body{font-family:sans-serif;margin:1.2em}table{border-collapse:collapse;font-size:90%}
th,td{border:1px solid #ccc;padding:3px 6px;vertical-align:top}th{background:#eee;cursor:pointer;white-space:nowrap}
td.n{text-align:right;font-family:monospace}tr.pass td.v{background:#e3f6e3}tr.fail td.v{background:#fbe0e0}
tr.error td.v{background:#f8d0d0}tr.na td.v{background:#f2f2f2}.msg{color:#700;font-size:90%}
td.v{min-width:16em;max-width:30em}td.p{max-width:16em;word-break:break-all;font-size:90%}
.log{color:#555;font-size:85%;font-family:monospace}
"""


def _e(value):
    return html.escape('' if value is None else str(value), quote=True)


def _href(rel):
    return _e(urllib.parse.quote(rel))


def _num(v):
    return ('', '') if v is None else (f'{v:.6g}', f'{v:.1f}')


def _row(r):
    cells = []
    for key, _, numeric in COLUMNS:
        v = r.get(key)
        if numeric:
            raw, shown = _num(v)
            cells.append(f'<td class="n" data-v="{raw}">{shown}</td>')
        elif key == 'verdict':
            links = []
            if r.get('summary'):
                links.append(f'<a href="{_href(r["summary"])}">summary</a>')
            if r.get('diff'):
                links.append(f'<a href="{_href(r["diff"])}">diff with previous</a>')
            msg = f'<div class="msg">{_e(r.get("message"))}</div>' if r.get('message') else ''
            cells.append(f'<td class="v" data-v="{_e(v)}"><b>{_e(v)}</b> {" | ".join(links)}{msg}</td>')
        elif key == 'check':
            cells.append(f'<td>{_e(v)}<div class="log">{_e(r.get("rel"))}</div></td>')
        elif key == 'params':
            cells.append(f'<td class="p">{_e(v)}</td>')
        else:
            cells.append(f'<td>{_e(v)}</td>')
    cls = {'n/a': 'na'}.get(r.get('verdict'), r.get('verdict') or 'na')
    return f'<tr class="{_e(cls)}" data-verdict="{_e(r.get("verdict"))}">{"".join(cells)}</tr>'


def render(rows, root):
    counts = {}
    for r in rows:
        counts[r.get('verdict')] = counts.get(r.get('verdict'), 0) + 1
    heads = ''.join(f'<th onclick="sortBy({i}, {str(num).lower()})">{_e(title)}<span class="arrow"></span></th>'
                    for i, (_, title, num) in enumerate(COLUMNS))
    options = ''.join(f'<option value="{_e(v)}">{_e(v)} ({n})</option>' for v, n in sorted(
        counts.items(), key=lambda kv: str(kv[0])))
    body = '\n'.join(_row(r) for r in sorted(rows, key=lambda r: (r.get('date') or '', r.get('rel') or ''),
                                               reverse=True))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>ioregress Darshan index</title>
<style>{_STYLE}</style></head><body>
<h1>Darshan logs of ioregress runs</h1>
<p>{len(rows)} logs under <code>{_e(root)}</code>, built {_e(time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime()))}.
Bandwidths in MiB/s (2<sup>20</sup> B/s): iobench's median over repetitions (barrier to barrier) and
Darshan's aggregate over the data files (bytes / slowest rank's I/O time, both phases).
Click a column heading to sort.</p>
<p><label>Filter: <input id="filter" size="40" placeholder="words, e.g. hdf5 collective"></label>
<label>Darshan checks: <select id="verdict"><option value="">all</option>{options}</select></label>
showing <span id="shown">?</span> of {len(rows)}</p>
<table id="runs"><thead><tr>{heads}</tr></thead><tbody>
{body}
</tbody></table>
<script>{_SCRIPT}</script>
</body></html>
"""
