/* report_lines.js - the HTML report's counters and its Lines view, the
 * annotated source of the functions recorded with --lines (see report.js). */
/* ---- counters: figures and a sparkline each ---- */
function num(v) { return Math.abs(v) >= 1e6 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(3) : String(+v.toPrecision(6)); }
function spark(c) {
  var cv = document.createElement("canvas"), W = 200, H = 24, r = window.devicePixelRatio || 1;
  cv.width = W * r; cv.height = H * r; cv.style.width = W + "px"; cv.style.height = H + "px";
  var n = c.t.length, t0 = n ? c.t[0] : 0, span = n ? Math.max(c.t[n - 1] - t0, 1) : 1;
  var g = cv.getContext("2d"), lo = c.min, hi = c.max > c.min ? c.max : c.min + 1;
  g.setTransform(r, 0, 0, r, 0, 0); g.strokeStyle = "#2a6"; g.lineWidth = 1.2; g.beginPath();
  var py = 0;
  for (var k = 0; k < c.t.length; k++) {
    var x = (c.t[k] - t0) / span * (W - 2) + 1, y = H - 2 - (c.v[k] - lo) / (hi - lo) * (H - 4);
    if (k) { g.lineTo(x, py); g.lineTo(x, y); } else g.moveTo(x, y);
    py = y;
  }
  if (c.t.length) g.lineTo(W - 1, py);
  g.stroke();
  return cv;
}
if (D.counters.length) {
  $("ctrsec").hidden = false;
  D.counters.forEach(function (c) {
    var tr = document.createElement("tr");
    [c.name, c.pid, c.values + (c.not_finite ? " (+" + c.not_finite + " not finite)" : ""),
     num(c.min), num(c.max), num(c.last)].forEach(function (v, k) {
      var td = document.createElement("td");
      td.textContent = String(v);
      if (k === 0) td.className = "n";
      tr.appendChild(td);
    });
    var td = document.createElement("td");
    td.className = "n"; td.appendChild(spark(c)); tr.appendChild(td);
    $("ctrrows").appendChild(tr);
  });
  $("ctrnote").textContent = "each line steps from value to value, from the counter's first value to its last" +
    (D.counters_left_out ? "; " + D.counters_left_out + " values of further counters left out" : "");
}

/* ---- lines: annotated source of the functions recorded with --lines ---- */
var L = D.lines, lineOf = {}, lineSel = -1;
/* bidirectional controls would reorder the program text shown: made visible */
function plain(s) { return s.replace(/[\u202a-\u202e\u2066-\u2069]/g, "\ufffd"); }
function cell(tr, text, cls) {
  var td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  tr.appendChild(td);
  return td;
}
var LSPLIT = [["on-CPU", SPLIT[0][1], 3], ["runnable", SPLIT[1][1], 4], ["blocked", SPLIT[2][1], 5]];
function lineBar(r, max) {
  var bar = document.createElement("span"), inner = document.createElement("span");
  bar.className = "lbar";
  inner.style.width = (max > 0 ? 100 * r[2] / max : 0).toFixed(3) + "%";
  (L.split ? LSPLIT : [["time", "#5c6bc0", 2]]).forEach(function (s) {
    var part = document.createElement("i");
    part.style.width = (r[2] > 0 ? 100 * r[s[2]] / r[2] : 0).toFixed(3) + "%";
    part.style.background = s[1];
    part.setAttribute("data-part", s[0]);
    inner.appendChild(part);
  });
  bar.appendChild(inner);
  return bar;
}
function lineTip(r) {
  var t = "line " + r[0] + ": " + r[1] + (r[1] === 1 ? " hit, " : " hits, ") + ns(r[2]);
  if (L.split) t += "\non-CPU " + ns(r[3]) + ", runnable " + ns(r[4]) + ", blocked " + ns(r[5]) +
    (L.gil ? " (GIL " + ns(r[6]) + ")" : "");
  if (L.memory) t += "\nallocated " + bytes(r[10]) + " in " + r[11] + (r[11] === 1 ? " block" : " blocks");
  return t;
}
var lineCols = L && L.memory ? 6 : 5;
function lineRow(body, number, r, text, max) {
  var tr = document.createElement("tr");
  tr.setAttribute("data-line", number);
  cell(tr, String(number));
  if (r) {
    cell(tr, String(r[1])); cell(tr, ns(r[2]));
    cell(tr, r[1] ? ns(Math.round(r[2] / r[1])) : "-");
    cell(tr, r[7].toFixed(1));
    if (L.memory) cell(tr, r[11] ? bytes(r[10]) : "", "alloc");
    cell(tr, "", "n").appendChild(lineBar(r, max));
    tr.title = lineTip(r);
  } else {
    tr.className = "nohit";
    for (var k = 0; k < lineCols; k++) cell(tr, "");
  }
  cell(tr, text === null ? "" : plain(text), "src");
  body.appendChild(tr);
  if (!r) return;
  r[8].forEach(function (c) {
    var sub = document.createElement("tr");
    sub.className = "call";
    cell(sub, ""); cell(sub, ""); cell(sub, ns(c[3]));
    for (var k = 3; k <= lineCols; k++) cell(sub, "");
    cell(sub, "\u2192 " + c[1] + " (" + c[2] + (c[2] === 1 ? " call)" : " calls)"), "src");
    if (c[0] >= 0 && lineOf[c[0]] !== undefined) {
      sub.className = "call hasl"; sub.title = "click for its lines";
      sub.addEventListener("click", function () { showLines(lineOf[c[0]], false); $("linemain").scrollTop = 0; });
    }
    body.appendChild(sub);
  });
  if (r[9]) {
    var more = document.createElement("tr");
    more.className = "call";
    for (var k2 = 0; k2 <= lineCols; k2++) cell(more, "");
    cell(more, "\u2192 " + r[9] + " more functions", "src");
    body.appendChild(more);
  }
}
function notice(text) {
  var d = document.createElement("div");
  d.className = "notice"; d.textContent = text;
  $("linenotes").appendChild(d);
}
function showLines(k, scroll) {
  var f = L.funcs[k], max = 0, body = document.createElement("tbody"), byLine = {};
  lineSel = k;
  Array.prototype.forEach.call($("linefuncs").children, function (tr, j) { tr.className = j === k ? "sel" : ""; });
  $("linehead").textContent = f.name + " \u2014 " + shortPath(f.file) + ":" + f.line + " (" + f.calls +
    (f.calls === 1 ? " call, " : " calls, ") + ns(f.total_ns) + " in all)";
  $("linehead").title = f.file + ":" + f.line;
  $("linenotes").textContent = "";
  if (f.source === "none") notice("no copy of the source: lines by number");
  if (f.source === "left out") notice("source left out: the report holds at most " +
    Math.round(L.source_max / 1024) + " KB of source");
  if (f.changed) notice("the file changed while the program ran: the source shown may not be what ran");
  if (f.cut) notice("the copy of the file was cut short: lines past its end are shown by number");
  f.rows.forEach(function (r) { byLine[r[0]] = r; if (r[2] > max) max = r[2]; });
  body.id = "linerows";
  if (f.first !== undefined) {
    for (var j = 0; j < f.text.length; j++) lineRow(body, f.first + j, byLine[f.first + j] || null, f.text[j], max);
  } else {
    f.rows.forEach(function (r, j) { lineRow(body, r[0], r, f.text ? f.text[j] : null, max); });
  }
  $("linerows").replaceWith(body);
  if (scroll) $("linesec").scrollIntoView();
}
if (L) {
  $("linesec").hidden = false;
  if (L.memory) {
    var th = document.createElement("th");
    th.textContent = "allocated";
    $("linethead").insertBefore(th, $("linethead").children[5]);
  }
  L.funcs.forEach(function (f, k) {
    if (f.row >= 0 && lineOf[f.row] === undefined) lineOf[f.row] = k;
    var tr = document.createElement("tr");
    cell(tr, f.name + " (" + shortPath(f.file) + ":" + f.line + ")", "n").title = f.file + ":" + f.line;
    cell(tr, ns(f.total_ns));
    tr.addEventListener("click", function () { showLines(k, false); });
    $("linefuncs").appendChild(tr);
  });
  if (L.funcs_left_out) $("linemore").textContent = L.funcs_left_out + " more functions with lines not " +
    "shown: the report holds the longest ones, up to " + L.rows_max + " lines in all";
  var legend = document.querySelector(".slegend");
  (L.split ? LSPLIT : [["time", "#5c6bc0"]]).forEach(function (s) {
    var item = document.createElement("span"), sw = document.createElement("i");
    sw.style.background = s[1];
    item.appendChild(sw); item.appendChild(document.createTextNode(s[0]));
    legend.appendChild(item);
  });
  var wanted = /^#lines=(\d+)$/.exec(location.hash);
  showLines(wanted && +wanted[1] < L.funcs.length ? +wanted[1] : 0, false);
}
function flameLines(n) {
  var k = n > 0 && shown.f[n] >= 0 ? lineOf[shown.f[n]] : undefined, b = $("fglines");
  b.hidden = k === undefined;
  if (k === undefined) return;
  b.textContent = "lines of " + F[shown.f[n]][0];
  b.onclick = function () { showLines(k, true); };
}
