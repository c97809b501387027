// Sort by a column (click its heading again to reverse) and filter rows by words, verdict, insights.
const table = document.getElementById('runs');
const body = table.tBodies[0];
let sortCol = -1, sortDir = 1;
function cellValue(row, i) {
  const td = row.cells[i];
  return td.dataset.v !== undefined ? td.dataset.v : td.textContent.trim();
}
function sortBy(button) {
  const i = Number(button.dataset.col), numeric = button.hasAttribute('data-num');
  sortDir = (sortCol === i) ? -sortDir : (numeric ? -1 : 1); sortCol = i;   // numbers: largest first
  const rows = Array.from(body.rows);
  rows.sort((a, b) => {
    let x = cellValue(a, i), y = cellValue(b, i);
    if (numeric) {
      x = x === '' ? -Infinity : parseFloat(x); y = y === '' ? -Infinity : parseFloat(y);
      return x === y ? 0 : (x < y ? -sortDir : sortDir);
    }
    return x.localeCompare(y) * sortDir;
  });
  rows.forEach(r => body.appendChild(r));
  document.querySelectorAll('#runs th .arrow').forEach(s => s.textContent = '');
  button.querySelector('.arrow').textContent = sortDir > 0 ? ' \u25b2' : ' \u25bc';
}
function applyFilter() {
  const words = document.getElementById('filter').value.toLowerCase().split(/\s+/).filter(Boolean);
  const verdict = document.getElementById('verdict').value;
  const insight = document.getElementById('insight').value;
  let shown = 0;
  for (const row of body.rows) {
    const text = row.textContent.toLowerCase();
    const crit = Number(row.dataset.critical), warn = Number(row.dataset.warnings);
    const ok = words.every(w => text.includes(w)) && (!verdict || row.dataset.verdict === verdict) &&
      (!insight || (insight === 'critical' && crit > 0) || (insight === 'warnings' && warn > 0) ||
       (insight === 'clean' && crit === 0 && warn === 0));
    row.hidden = !ok;
    if (ok) shown++;
  }
  document.getElementById('shown').textContent = shown;
}
document.querySelectorAll('#runs th button').forEach(b => b.addEventListener('click', () => sortBy(b)));
for (const id of ['filter', 'verdict', 'insight']) {
  document.getElementById(id).addEventListener(id === 'filter' ? 'input' : 'change', applyFilter);
}
applyFilter();
