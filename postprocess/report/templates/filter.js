// Filter the series tables: every word typed must occur in a row's text; groups without a
// visible row are hidden, groups with one are opened while a filter is active.
(function () {
  var box = document.getElementById('filter');
  if (!box) { return; }
  var flagged = document.getElementById('only-flagged');
  var shown = document.getElementById('shown');
  var groups = Array.prototype.slice.call(document.querySelectorAll('details.group'));
  var initiallyOpen = groups.map(function (g) { return g.open; });
  var FLAGS = ['regression', 'improvement', 'degraded', 'noisy'];
  function apply() {
    var words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
    var active = words.length > 0 || flagged.checked;
    var total = 0, visible = 0;
    groups.forEach(function (g, i) {
      var n = 0;
      g.querySelectorAll('tr.row').forEach(function (tr) {
        var text = tr.getAttribute('data-text').toLowerCase();
        var ok = words.every(function (w) { return text.indexOf(w) >= 0; }) &&
                 (!flagged.checked || FLAGS.indexOf(tr.getAttribute('data-status')) >= 0);
        tr.hidden = !ok;
        total += 1;
        if (ok) { n += 1; }
      });
      visible += n;
      g.hidden = n === 0;
      g.open = active ? n > 0 : initiallyOpen[i];
    });
    shown.textContent = active ? visible + ' of ' + total + ' series shown' : total + ' series';
  }
  box.addEventListener('input', apply);
  flagged.addEventListener('change', apply);
  apply();
})();
