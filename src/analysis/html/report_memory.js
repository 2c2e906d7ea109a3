/* report_memory.js - the HTML report's Memory view (a trace recorded with
 * --memory; see report.js): memory over time per process (the monitor's
 * counters: Python heap, native, RSS) drawn as SVG with the traced peak
 * marked, the stacks holding the peak and the leaks, each as a flame graph
 * whose widths are bytes (drawn by report.js's icicle, with a look of its
 * own) over the exact table, and the objects per type and per function
 * (3.13+).  Names reach the page as text only. */
var M = D.memory;
var MEMSERIES = [["heap", "Python heap", "#1e88e5", ""], ["native", "native", "#2e7d32", ""],
                 ["rss", "RSS", "#757575", "4 3"]];
function svgEl(tag, attrs) {
  var e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (var a in attrs) e.setAttribute(a, attrs[a]);
  return e;
}
function stackText(st) { return st.length ? st.join(" \u2192 ") : "(no frame)"; }
function groupRows(body, list, total) {
  var max = list.length ? list[0].bytes : 0;
  list.forEach(function (g) {
    var tr = document.createElement("tr");
    var td = cell(tr, "");
    var bar = document.createElement("span");
    bar.className = "mbar"; bar.style.width = (max ? 60 * g.bytes / max : 0).toFixed(1) + "px";
    td.appendChild(bar); td.appendChild(document.createTextNode(bytes(g.bytes)));
    td.title = g.bytes + " bytes, " + (total ? (100 * g.bytes / total).toFixed(1) : "0") + "%";
    tr.setAttribute("data-bytes", g.bytes);
    cell(tr, String(g.count));
    cell(tr, bytes(g.native));
    cell(tr, stackText(g.stack), "n");
    body.appendChild(tr);
  });
}
/* ---- the flame graphs of the stacks at the peak and at the end: t is bytes ---- */
/* a tree for drawIcicle from the data's (export_html_memory.c: f a frame, -1 the root, -2 other, -3 unknown) */
function memTree(x, rootText) {
  var tr = finish({f: x.f, p: x.p, t: x.b, c: x.c, nb: x.nb, st: x.s, rootText: rootText, look: memLook});
  tr.s = tr.t.map(function (t, n) { /* held with the frame on top: its bytes less its children's */
    return tr.kids[n].reduce(function (a, k) { return a - tr.t[k]; }, t);
  });
  return tr;
}
/* a frame: a row of the function table, or a function of its own ([name, file, line, kind]) */
function frameRow(f) { return typeof M.frames[f] === "number" ? F[M.frames[f]] : M.frames[f]; }
function memNodeText(tr, n) {
  var f = tr.f[n];
  if (f >= 0) return rowLabel(frameRow(f));
  if (f === -2) return "other: " + tr.st[n] + " smaller stack" + (tr.st[n] === 1 ? "" : "s");
  return f === -3 ? "?" : tr.rootText + " (" + bytes(tr.t[0]) + ")";
}
var memHues = [];
var memLook = {
  text: memNodeText,
  fill: function (tr, n) {
    var f = tr.f[n];
    return f >= 0 ? memHues[f] || (memHues[f] = rowHue(frameRow(f))) : f === -2 ? "#e0e0e0" : "#ccc";
  },
  found: function (tr, n) { return tr.f[n] >= 0 && matchesRow(frameRow(tr.f[n])); },
  tip: function (tr, n) {
    var f = tr.f[n];
    return (f >= 0 ? rowFullLabel(frameRow(f)) : memNodeText(tr, n)) + "\n" + bytes(tr.t[n]) + " (" + tr.t[n] +
      " bytes, " + (100 * tr.t[n] / Math.max(tr.t[0], 1)).toFixed(2) + "%) in " + tr.c[n] + " blocks, " +
      bytes(tr.nb[n]) + " of them native; " + bytes(tr.s[n]) + " with it on top";
  }
};
/* a zoomable flame graph on canvas id: a click zooms into a frame, the reset button back out */
function memFlame(id, resetId, tr) {
  var v = {tr: tr, focus: 0, boxes: []};
  v.draw = function () { v.boxes = drawIcicle($(id), tr, v.focus, false); };
  $(id).addEventListener("click", function (ev) {
    var n = hit(v.boxes, ev, this);
    if (n >= 0) { v.focus = n; v.draw(); }
  });
  $(resetId).addEventListener("click", function () { v.focus = 0; v.draw(); });
  hoverIcicle($(id), function () { return [tr, v.boxes]; });
  v.draw();
  return v;
}
function flameNote(x) {
  return "width is bytes; click a frame to zoom into it" + (x.other_stacks ? "; " + x.other_stacks +
    " smaller stacks holding " + bytes(x.other_bytes) + " are merged into \u201cother\u201d boxes" : "");
}

function drawMemChart(pid) {
  var svg = $("memchart"), W = Math.max(svg.clientWidth || 0, 400), H = 240, L = 70, R = 10, T = 14, B = 22;
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  svg.setAttribute("viewBox", "0 0 " + W + " " + H);
  var s = M.series.filter(function (x) { return x.pid === pid; })[0];
  var t1 = Math.max(D.duration_ns, 1), top = M.peak.pid === pid ? M.peak.bytes : 0;
  MEMSERIES.forEach(function (m) { if (s) s[m[0]].v.forEach(function (v) { if (v > top) top = v; }); });
  top = Math.max(top, 1);
  var X = function (t) { return L + (W - L - R) * Math.min(Math.max(t / t1, 0), 1); };
  var Y = function (v) { return T + (H - T - B) * (1 - v / top); };
  [0, 0.5, 1].forEach(function (f) {
    svg.appendChild(svgEl("line", {x1: L, x2: W - R, y1: Y(top * f), y2: Y(top * f), stroke: "#eee"}));
    var tx = svgEl("text", {x: L - 4, y: Y(top * f) + 4, "text-anchor": "end", "font-size": 11, fill: "#555"});
    tx.textContent = bytes(Math.round(top * f)); svg.appendChild(tx);
  });
  [[0, "start"], [t1, "end"]].forEach(function (e) {
    var tx = svgEl("text", {x: X(e[0]), y: H - 6, "text-anchor": e[1], "font-size": 11, fill: "#555"});
    tx.textContent = ns(e[0]); svg.appendChild(tx);
  });
  MEMSERIES.forEach(function (m) {
    var c = s && s[m[0]];
    if (!c || !c.t.length) return;
    var d = "M" + X(c.t[0]).toFixed(1) + " " + Y(c.v[0]).toFixed(1);
    for (var k = 1; k < c.t.length; k++)  /* a step: the value holds until the next */
      d += "H" + X(c.t[k]).toFixed(1) + "V" + Y(c.v[k]).toFixed(1);
    d += "H" + X(t1).toFixed(1);
    var path = svgEl("path", {d: d, fill: "none", stroke: m[2], "stroke-width": 1.5, "stroke-dasharray": m[3],
                              "data-series": m[0], "data-points": c.t.length, "data-max": Math.max.apply(null, c.v)});
    var title = svgEl("title", {});
    title.textContent = m[1] + ": " + c.t.length + " points, highest " + bytes(Math.max.apply(null, c.v)) +
      ", last " + bytes(c.v[c.v.length - 1]);
    path.appendChild(title);
    svg.appendChild(path);
  });
  if (M.peak.pid === pid && M.peak.bytes > 0) {
    var g = svgEl("g", {id: "mempeak", "data-bytes": M.peak.bytes, "data-at": M.peak.at, "data-pid": pid});
    g.appendChild(svgEl("line", {x1: X(M.peak.at), x2: X(M.peak.at), y1: T, y2: H - B, stroke: "#e53935",
                                 "stroke-dasharray": "3 2"}));
    g.appendChild(svgEl("circle", {cx: X(M.peak.at), cy: Y(M.peak.bytes), r: 4, fill: "#e53935"}));
    var tx = svgEl("text", {x: Math.min(X(M.peak.at) + 6, W - 180), y: T + 10, "font-size": 12, fill: "#c62828"});
    tx.textContent = "peak " + bytes(M.peak.bytes) + " at " + ns(M.peak.at);
    g.appendChild(tx);
    svg.appendChild(g);
  }
}
if (M) {
  $("memsec").hidden = false;
  var pids = M.series.map(function (x) { return x.pid; }).filter(function (p) { return p !== M.peak.pid; });
  if (M.peak.pid || !pids.length) pids.unshift(M.peak.pid); /* the peak's process first, and drawn first */
  pids.forEach(function (p) {
    var o = document.createElement("option");
    o.value = p; o.textContent = "pid " + p + (p === M.peak.pid ? " (the peak)" : "");
    $("memproc").appendChild(o);
  });
  $("memprocl").hidden = pids.length < 2;
  $("memproc").addEventListener("change", function () { drawMemChart(+this.value); });
  MEMSERIES.forEach(function (m) {
    var k = document.createElement("span"), sw = document.createElement("i");
    sw.style.background = m[2]; k.appendChild(sw); k.appendChild(document.createTextNode(m[1]));
    $("memkey").appendChild(k);
  });
  $("memfacts").textContent = (M.sample_bytes ? "sampled (one block every " + bytes(M.sample_bytes) +
    " on average; bytes are estimates): " : "") + M.alloc_count + " blocks allocated, " + bytes(M.alloc_bytes) +
    " (" + bytes(M.native_alloc_bytes) + " by native code); peak " + bytes(M.peak.bytes) + " at " + ns(M.peak.at) +
    " in pid " + M.peak.pid + "; " + bytes(M.leaks_bytes) + " still allocated at the end";
  if (M.peak.bytes || M.series.length) {
    drawMemChart(pids[0]);
    $("memnote").textContent = "the monitor's counters, written when they moved by 64 KiB or 1/64; the red mark " +
      "is the exact peak of the traced blocks (Python and native), which a counter may pass by up to one step" +
      (M.series_left_out ? "; " + M.series_left_out + " processes with lower memory are not charted" : "");
  } else {
    $("memchart").style.display = "none"; $("memprocl").hidden = true;
    $("memnote").textContent = "no allocation was recorded";
  }
  var memFlames = [];
  if (M.peak.stacks) {
    memFlames.push(memFlame("peakflame", "peakreset", memTree(M.peak_flame, "pid " + M.peak.pid + " at its peak")));
    $("peakflamenote").textContent = flameNote(M.peak_flame);
  } else {
    $("peakflame").style.display = "none"; $("peakreset").hidden = true;
  }
  memFlames.push(memFlame("leakflame", "leakreset", memTree(M.leak_flame, "still allocated at the end")));
  $("leakflamenote").textContent = flameNote(M.leak_flame);
  $("search").addEventListener("input", function () { memFlames.forEach(function (v) { v.draw(); }); });
  groupRows($("peakrows"), M.peak_stacks, M.peak_stacks_bytes);
  $("peaknote").textContent = M.peak.stacks ? M.peak_stacks.length + " stacks" +
    (M.peak_stacks_left_out ? " (" + M.peak_stacks_left_out + " smaller ones left out)" : "") + " held " +
    bytes(M.peak_stacks_bytes) + " in pid " + M.peak.pid + " at its peak" :
    "the stacks at the peak could not be found: the trace could not be read a second time";
  groupRows($("leakrows"), M.leaks, M.leaks_bytes);
  $("leaknote").textContent = M.leaks.length + " stacks" + (M.leaks_left_out ? " (" + M.leaks_left_out +
    " smaller ones left out)" : "") + ", " + bytes(M.leaks_bytes) + " in all";
  if (M.objects_counted) {
    $("objsec").hidden = false;
    M.objects.forEach(function (o) {
      var tr = document.createElement("tr");
      cell(tr, o[0], "n"); cell(tr, String(o[1])); cell(tr, String(o[2])); cell(tr, String(o[1] - o[2]));
      $("objrows").appendChild(tr);
    });
    $("objnote").textContent = M.objects_left_out ? M.objects_left_out + " more types left out" : "";
    M.func_objects.forEach(function (o) {
      var tr = document.createElement("tr");
      cell(tr, F[o[0]][0], "n").title = fullWhere(o[0]);
      cell(tr, o[1], "n"); cell(tr, String(o[2])); cell(tr, String(o[3]));
      $("fobjrows").appendChild(tr);
    });
    $("fobjnote").textContent = M.func_objects_left_out ? M.func_objects_left_out + " more rows left out" : "";
  }
}
