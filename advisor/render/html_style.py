"""The report's stylesheet and its one small script (sortable tables), inlined into the page."""

from __future__ import annotations

STYLE = """
:root { --fg:#1d2430; --muted:#5b6472; --line:#dde2ea; --bg:#f6f7f9; --card:#fff;
  --err:#c0392b; --warn:#d68910; --note:#2e86c1; --ok:#1e8449; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
  color:var(--fg); background:var(--bg); }
header, main, footer { max-width:1000px; margin:0 auto; padding:0 20px; }
header { padding-top:20px; }
h1 { font-size:22px; margin:0; }
h2 { font-size:17px; margin:0 0 8px; }
h3 { font-size:15px; margin:8px 0; }
.sub { color:var(--muted); margin:2px 0 10px; word-break:break-all; }
section { background:var(--card); border:1px solid var(--line); border-radius:8px;
  padding:14px 16px; margin:14px 0; overflow-x:auto; }
.intro, .source { color:var(--muted); font-size:12.5px; margin:0 0 8px; }
.headline { font-size:15px; font-weight:600; padding:8px 12px; border-radius:6px;
  border-left:5px solid var(--note); background:#eef5fb; margin:8px 0; }
.headline.error, .headline.revert { border-color:var(--err); background:#fbeeee; }
.headline.warning, .headline.inconclusive { border-color:var(--warn); background:#fdf5e8; }
.headline.ok, .headline.keep { border-color:var(--ok); background:#eaf6ee; }
.next { margin:4px 0 8px; }
.tiles { display:flex; flex-wrap:wrap; gap:8px; margin:10px 0; }
.tile { background:var(--card); border:1px solid var(--line); border-radius:6px;
  padding:6px 10px; min-width:110px; }
.tile b { display:block; font-size:16px; }
.tile span { color:var(--muted); font-size:12px; }
table { border-collapse:collapse; width:100%; font-size:13px; }
th, td { border-bottom:1px solid var(--line); padding:4px 8px; text-align:left;
  vertical-align:top; }
th { background:#f0f2f5; font-weight:600; white-space:nowrap; }
table.sortable th { cursor:pointer; }
td.num { text-align:right; white-space:nowrap; font-variant-numeric:tabular-nums; }
tr.slow td { font-weight:600; }
.pill { display:inline-block; padding:0 7px; border-radius:9px; font-size:11.5px;
  color:#fff; background:var(--muted); }
.pill.error, .pill.reverted { background:var(--err); } .pill.warning { background:var(--warn); }
.pill.note, .pill.proposed { background:var(--note); }
.pill.kept, .pill.applied { background:var(--ok); }
.meter { display:inline-block; width:60px; height:8px; background:#eceff3; margin-right:6px;
  vertical-align:middle; } .meter i { display:block; height:100%; background:var(--err); }
.better { color:var(--ok); font-weight:600; } .worse { color:var(--err); font-weight:600; }
.missing, .note { color:var(--muted); } .warn { color:#8a5a00; }
code { font:12.5px ui-monospace,SFMono-Regular,Menlo,monospace; background:#f0f2f5;
  padding:0 3px; border-radius:3px; }
pre.diff { font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace; background:#fafbfc;
  border:1px solid var(--line); padding:8px; overflow-x:auto; }
pre.diff span { display:block; white-space:pre; }
pre.diff .add { color:#116329; background:#dafbe1; }
pre.diff .del { color:#82071e; background:#ffebe9; }
pre.diff .hunk { color:#6f42c1; } pre.diff .file { color:var(--muted); font-weight:600; }
dl { display:grid; grid-template-columns:max-content 1fr; gap:4px 12px; margin:8px 0; }
dt { font-weight:600; } dd { margin:0; }
svg.chart { display:block; max-width:100%; height:auto; }
svg .grid { stroke:#e6e9ee; } svg text { font-size:11px; fill:var(--fg); }
svg .tick { fill:var(--muted); text-anchor:middle; } svg .end { text-anchor:end; }
.legend { display:flex; flex-wrap:wrap; gap:4px 14px; margin:6px 0 0; font-size:12px; }
.key i { display:inline-block; width:11px; height:11px; margin-right:5px;
  vertical-align:-1px; border-radius:2px; }
details { margin-top:8px; } summary { cursor:pointer; color:var(--muted); }
footer { color:var(--muted); font-size:12px; padding:6px 20px 24px; word-break:break-all; }
@media print { section { break-inside:avoid; } body { background:#fff; } }
"""

# Click a header to sort its table; numbers sort by their data-v value when present.
SCRIPT = """
document.querySelectorAll('table.sortable').forEach(function (table) {
  table.querySelectorAll('th').forEach(function (th, column) {
    th.addEventListener('click', function () {
      var body = table.tBodies[0];
      var down = th.getAttribute('data-sort') !== 'down';
      th.setAttribute('data-sort', down ? 'down' : 'up');
      var key = function (row) {
        var cell = row.cells[column];
        var v = cell.getAttribute('data-v');
        var n = parseFloat(v === null ? cell.textContent : v);
        return isNaN(n) ? cell.textContent : n;
      };
      Array.prototype.slice.call(body.rows).sort(function (a, b) {
        var x = key(a), y = key(b);
        var c = (typeof x === 'number' && typeof y === 'number') ? x - y
          : String(x).localeCompare(String(y));
        return down ? -c : c;
      }).forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""
