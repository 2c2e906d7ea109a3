/* report_timeline.js - the HTML report's timeline: processes with their
 * threads, frames by depth over time, a time axis, zoom and pan (see
 * report.js for how the page's scripts fit together). */
/* ---- timeline: processes with their threads, frames by depth over time ---- */
(function () { /* starts from deltas (export_html.c) */
  TH.forEach(function (t) {
    var at = 0, md = 0;
    for (var k = 0; k < t.s.length; k++) {
      at += t.s[k]; t.s[k] = at; t.e[k] += at;
      if (t.d[k] > md) md = t.d[k];
    }
    at = 0;
    for (k = 0; k < t.i.length; k++) { at += t.i[k]; t.i[k] = at; }
    t.maxDepth = md;
    var busy = 0;
    for (k = 0; k < t.s.length; k++) if (t.d[k] === 0) busy += t.e[k] - t.s[k];
    t.busy = busy;
  });
})();
var LROW = 12, AXIS = 22, PHEAD = 18, THEAD = 15, VIEW_H = 620;
/* the view opens on the window exported (all of the trace unless --from, --to) */
var HOME0 = D.window[0], HOME1 = Math.max(D.window[1], HOME0 + 10);
var v0 = HOME0, v1 = HOME1, lanes = [], tlDrawn = null;
/* processes in the data's order, each with its threads; the busiest lanes open at first */
var groups = D.processes.map(function (p) { return {pid: p.pid, open: true, threads: []}; });
TH.forEach(function (t, k) {
  for (var g = 0; g < groups.length; g++) if (groups[g].pid === t.pid) { groups[g].threads.push(k); break; }
  t.open = true;
});
if (TH.length > 12) {
  var byBusy = TH.map(function (t, k) { return k; }).sort(function (a, b) { return TH[b].busy - TH[a].busy; });
  byBusy.forEach(function (k, r) { TH[k].open = r < 8; });
}
function layout() {
  var y = AXIS;
  lanes = [];
  groups.forEach(function (g) {
    if (groups.length > 1 || D.processes.length > 1) { lanes.push({y: y, group: g, h: PHEAD}); y += PHEAD; }
    if (!g.open) return;
    g.threads.forEach(function (k) {
      var t = TH[k], rows = t.open ? t.maxDepth + 1 : 1;
      lanes.push({y: y, t: t, k: k, rows: rows, h: THEAD + rows * LROW + 4});
      y += THEAD + rows * LROW + 4;
    });
  });
  return y;
}
var tlwrap = $("tlwrap"), tl = $("timeline");
function niceStep(span, px) {
  var raw = span / Math.max(px / 90, 1), p = Math.pow(10, Math.floor(Math.log(raw) / Math.LN10));
  return raw / p < 2 ? 2 * p : raw / p < 5 ? 5 * p : 10 * p;
}
function drawTimeline() {
  var height = layout(), viewH = Math.min(height, VIEW_H);
  $("tlspace").style.height = Math.max(height - viewH, 0) + "px";
  var c = fit(tl, viewH), g = c.g, W = c.w, sc = W / (v1 - v0), top = tlwrap.scrollTop;
  tlDrawn = {frames: 0, found: 0, clipped: []};
  lanes.forEach(function (l) {
    var y0 = l.y - top;
    if (y0 > viewH || y0 + l.h < AXIS) return;
    g.save(); g.beginPath(); g.rect(0, AXIS, W, viewH - AXIS); g.clip();
    if (l.group) {
      g.fillStyle = "#e8eef2"; g.fillRect(0, y0, W, PHEAD - 2);
      g.fillStyle = "#123"; g.font = "bold 11px system-ui,sans-serif";
      g.fillText((l.group.open ? "\u25be " : "\u25b8 ") + procName(l.group.pid) + " \u2014 " + l.group.threads.length +
        (l.group.threads.length === 1 ? " thread" : " threads"), 4, y0 + PHEAD / 2);
      g.font = "11px system-ui,sans-serif"; g.restore();
      return;
    }
    var t = l.t;
    g.fillStyle = "#333";
    g.fillText((t.open ? "\u25be " : "\u25b8 ") + threadName(t) + "  " + ns(t.last - t.first) +
      (t.open ? "" : "  (collapsed: click to open)"), 12, y0 + 7);
    g.fillStyle = "#f3f3f3";
    g.fillRect((t.first - v0) * sc, y0 + THEAD, (t.last - t.first) * sc, l.rows * LROW);
    for (var k = 0; k < t.s.length; k++) {
      if (t.s[k] > v1) break; /* in start order */
      if (t.e[k] < v0 || t.d[k] >= l.rows) continue;
      var x = (t.s[k] - v0) * sc, w = (t.e[k] - t.s[k]) * sc;
      if (w < 0.3) continue;
      var found = matches(t.f[k]);
      box(g, x, y0 + THEAD + t.d[k] * LROW, w, LROW, hue(t.f[k]), F[t.f[k]][0], found, W);
      tlDrawn.frames++; tlDrawn.found += found ? 1 : 0;
      if (x < 0 && x + w > 30 && tlDrawn.clipped.length < 100) tlDrawn.clipped.push([F[t.f[k]][0], y0 + THEAD + t.d[k] * LROW]);
    }
    g.fillStyle = "#c00";
    for (k = 0; k < t.i.length; k++) {
      if (t.i[k] < v0 || t.i[k] > v1) continue;
      var xi = (t.i[k] - v0) * sc;
      g.fillRect(xi - 0.75, y0 + THEAD - 4, 1.5, l.rows * LROW + 4);
      g.beginPath(); g.moveTo(xi - 4, y0 + THEAD - 6); g.lineTo(xi + 4, y0 + THEAD - 6); g.lineTo(xi, y0 + THEAD); g.fill();
    }
    g.restore();
  });
  /* the time axis, over the lanes */
  g.fillStyle = "#fff"; g.fillRect(0, 0, W, AXIS);
  g.strokeStyle = "#999"; g.fillStyle = "#444"; g.lineWidth = 1;
  g.beginPath(); g.moveTo(0, AXIS - 0.5); g.lineTo(W, AXIS - 0.5); g.stroke();
  var step = niceStep(v1 - v0, W);
  for (var at = Math.ceil(v0 / step) * step; at <= v1; at += step) {
    var xa = Math.round((at - v0) * sc) + 0.5;
    g.beginPath(); g.moveTo(xa, AXIS - 6); g.lineTo(xa, AXIS); g.stroke();
    g.strokeStyle = "rgba(0,0,0,0.06)"; g.beginPath(); g.moveTo(xa, AXIS); g.lineTo(xa, viewH); g.stroke();
    g.strokeStyle = "#999";
    g.fillText(ns(at), xa + 3, AXIS / 2 - 2);
  }
  tl.setAttribute("data-view", Math.round(v0) + "-" + Math.round(v1));
  note();
}
function note() {
  var t = "ctrl or shift + wheel to zoom (the plain wheel scrolls), drag to pan, double-click a frame to zoom to it," +
    " click a lane's name to open or close it";
  if (D.min_span_ns > 0)
    t += "; frames under " + ns(D.min_span_ns) + " are not in this report: for them, export this window with " +
      "ulma export TRACE --format html --from " + Math.floor(v0) + "ns --to " + Math.ceil(v1) + "ns -o OUT.html";
  if (D.instants_left_out) t += "; " + D.instants_left_out + " instants past the first ones not drawn";
  if (D.threads_left_out) t += "; " + D.threads_left_out + " more threads not drawn";
  $("tlnote").textContent = t;
}
function zoom(factor, at) {
  var span = (v1 - v0) * factor, full = Math.max(D.duration_ns, 1);
  span = Math.min(Math.max(span, 10), full);
  var mid = at === undefined ? (v0 + v1) / 2 : at;
  var frac = (mid - v0) / (v1 - v0);
  v0 = mid - span * frac; v1 = v0 + span;
  if (v0 < 0) { v1 -= v0; v0 = 0; }
  if (v1 > full) { v0 -= v1 - full; v1 = full; }
  drawTimeline();
}
var dragX = null, dragged = false;
function timeAt(ev) {
  var r = tl.getBoundingClientRect();
  return v0 + (ev.clientX - r.left) / r.width * (v1 - v0);
}
/* the plain wheel is the page's: only ctrl or shift + wheel zoom */
tl.addEventListener("wheel", function (ev) {
  if (!ev.ctrlKey && !ev.shiftKey) return;
  ev.preventDefault();
  var d = ev.deltaY || ev.deltaX;
  zoom(d < 0 ? 0.8 : 1.25, timeAt(ev));
}, {passive: false});
tlwrap.addEventListener("scroll", function () { drawTimeline(); });
tl.addEventListener("mousedown", function (ev) { dragX = ev.clientX; dragged = false; });
window.addEventListener("mouseup", function () { dragX = null; });
/* what is under the pointer: [lane, frame index or -1, instant index or -1, on its name] */
function under(ev) {
  var r = tl.getBoundingClientRect(), y = ev.clientY - r.top + tlwrap.scrollTop, t = timeAt(ev);
  if (ev.clientY - r.top < AXIS) return null;
  for (var k = 0; k < lanes.length; k++) {
    var l = lanes[k];
    if (y < l.y || y >= l.y + l.h) continue;
    if (l.group || y < l.y + THEAD - 6) return [l, -1, -1, true]; /* a header: the lane's name */
    var th = l.t, near = 4 / r.width * (v1 - v0);
    if (y < l.y + THEAD)
      for (var q = 0; q < th.i.length; q++) if (Math.abs(th.i[q] - t) <= near) return [l, -1, q];
    var d = Math.floor((y - l.y - THEAD) / LROW);
    for (var j = 0; j < th.s.length && th.s[j] <= t; j++)
      if (th.d[j] === d && t <= th.e[j]) return [l, j, -1];
    return [l, -1, -1];
  }
  return null;
}
tl.addEventListener("mousemove", function (ev) {
  if (dragX !== null) {
    if (Math.abs(ev.clientX - dragX) > 2) dragged = true;
    var dt = (dragX - ev.clientX) / tl.getBoundingClientRect().width * (v1 - v0);
    dragX = ev.clientX; v0 += dt; v1 += dt; zoom(1); return;
  }
  var u = under(ev);
  if (!u || u[0].group) { hideTip(); return; }
  var th = u[0].t;
  if (u[2] >= 0) { showTip(ev, "instant " + th.in[u[2]] + "\nat " + ns(th.i[u[2]])); return; }
  if (u[1] >= 0) { showTip(ev, fullLabel(th.f[u[1]]) + "\n" + ns(th.e[u[1]] - th.s[u[1]]) + " at " + ns(th.s[u[1]])); return; }
  hideTip();
});
tl.addEventListener("click", function (ev) {
  if (dragged) return;
  var u = under(ev);
  if (!u) return;
  if (u[0].group) { u[0].group.open = !u[0].group.open; drawTimeline(); return; }
  if (u[3]) { u[0].t.open = !u[0].t.open; drawTimeline(); }
});
tl.addEventListener("dblclick", function (ev) {
  var u = under(ev);
  if (!u || u[1] < 0) return;
  var th = u[0].t, s = th.s[u[1]], e = th.e[u[1]], pad = (e - s) * 0.05;
  v0 = Math.max(s - pad, 0); v1 = Math.min(Math.max(e + pad, v0 + 10), Math.max(D.duration_ns, 1));
  drawTimeline();
});
tl.addEventListener("mouseleave", hideTip);
$("tlin").addEventListener("click", function () { zoom(0.5); });
$("tlout").addEventListener("click", function () { zoom(2); });
$("tlreset").addEventListener("click", function () { v0 = HOME0; v1 = HOME1; drawTimeline(); });
$("tlexpand").addEventListener("click", function () {
  TH.forEach(function (t) { t.open = true; }); groups.forEach(function (g) { g.open = true; }); drawTimeline();
});
$("tlcollapse").addEventListener("click", function () { TH.forEach(function (t) { t.open = false; }); drawTimeline(); });
window.addEventListener("resize", function () {
  drawFlame(); drawTimeline();
  if (selected >= 0) showDetail(selected, false);
});
