/* report.js - the HTML report's script (src/analysis/export_html.c writes
 * the data; cmake/embed_page.cmake embeds this file).
 *
 * It reads the data element with JSON.parse and never turns data into
 * markup: every name, path and source line reaches the page through
 * textContent, title properties or canvas fillText.  Everything it draws
 * comes from the aggregated data: the call tree (one subtree per thread,
 * merged here as the reader chooses), the function table with its time
 * split, and the decimated timeline.
 *
 * cmake/embed_page.cmake puts report.js, report_timeline.js, report_lines.js
 * and report_start.js in that order into one strict-mode function, so they
 * share its variables: this file holds the data, the helpers, the trees, the
 * flame graphs, the time split and the function table.
 */
var D = JSON.parse(document.getElementById("ulma-data").textContent);
var F = D.funcs; /* [name, file, line, kind (py, c, native, zone), calls, self_ns, total_ns] */
var FX = D.fx;   /* per row: [self cpu, runnable, blocked, gil, total cpu, runnable, blocked, gil,
                    self native, total native, self bytes, total bytes, self native bytes, self bytes held at the end] */
var $ = function (id) { return document.getElementById(id); };
var i;
function ns(v) {
  if (v >= 1e9) return (v / 1e9).toFixed(3) + " s";
  if (v >= 1e6) return (v / 1e6).toFixed(3) + " ms";
  if (v >= 1e3) return (v / 1e3).toFixed(1) + " \u00b5s";
  return Math.round(v) + " ns";
}
function bytes(v) {
  if (v >= 1073741824) return (v / 1073741824).toFixed(2) + " GiB";
  if (v >= 1048576) return (v / 1048576).toFixed(2) + " MiB";
  if (v >= 1024) return (v / 1024).toFixed(1) + " KiB";
  return v + " B";
}

/* ---- paths: relative to the program's directory, the library abbreviated ---- */
/* the program's directory: that of the busiest <module> outside the library */
function isLibrary(p) { return /\/lib\/python[0-9.]*\/|\/(site|dist)-packages\/|^<frozen /.test(p); }
var home = "";
(function () {
  var best = -1;
  for (var k = 0; k < F.length; k++)
    if (F[k][0] === "<module>" && F[k][1].charAt(0) === "/" && !isLibrary(F[k][1]) && F[k][6] > best) {
      best = F[k][6]; home = F[k][1].slice(0, F[k][1].lastIndexOf("/") + 1);
    }
})();
function shortPath(p) {
  var m = /\/(?:site|dist)-packages\/(.*)$/.exec(p);
  if (m) return "site-packages/" + m[1];
  m = /\/lib\/python[0-9.]+\/(.*)$/.exec(p);
  if (m) return "stdlib/" + m[1];
  if (home && p.indexOf(home) === 0) return p.slice(home.length);
  return p;
}
/* A function is a row [name, file, line, kind] (F's rows begin so; the memory view's frames are such rows).
 * A native function without debug information has file ~ and line 0, as C functions. */
function locatedRow(r) { return r[3] !== "c" && !(r[3] === "native" && r[1] === "~" && r[2] === 0); }
function whereRow(r) { return locatedRow(r) ? shortPath(r[1]) + ":" + r[2] : "~"; }
function tagOf(r) { return r[3] === "native" ? " [native]" : r[3] === "zone" ? " [zone]" : ""; }
function rowLabel(r) { return r[0] + tagOf(r) + (locatedRow(r) ? " (" + whereRow(r) + ")" : ""); }
function rowFullLabel(r) { return r[0] + tagOf(r) + (locatedRow(r) ? "\n" + r[1] + ":" + r[2] : ""); }
function located(i) { return locatedRow(F[i]); }
function where(i) { return whereRow(F[i]); }
function fullWhere(i) { return located(i) ? F[i][1] + ":" + F[i][2] : "~"; }
function label(i) { return rowLabel(F[i]); }
function fullLabel(i) { return rowFullLabel(F[i]); }

/* each kind its own hues: Python warm, C blue, native green, zones violet */
var KINDS = {py: ["Python", 0, 60, 75], c: ["C (builtins)", 200, 40, 55], native: ["native", 95, 50, 50],
             zone: ["zone", 265, 35, 60]};
function rowHue(r) {
  var s = r[0], h = 7, k = KINDS[r[3]] || KINDS.py;
  for (var j = 0; j < s.length; j++) h = (h * 31 + s.charCodeAt(j)) | 0;
  return "hsl(" + (k[1] + Math.abs(h) % k[2]) + "," + k[3] + "%," + (60 + Math.abs(h >> 8) % 12) + "%)";
}
var hues = [];
function hue(i) { return hues[i] || (hues[i] = rowHue(F[i])); }
Array.prototype.forEach.call(document.querySelectorAll(".legend"), function (el) {
  Object.keys(KINDS).forEach(function (kind) {
    var k = KINDS[kind], item = document.createElement("span"), sw = document.createElement("i");
    sw.style.background = "hsl(" + (k[1] + k[2] / 2) + "," + k[3] + "%,66%)";
    item.appendChild(sw); item.appendChild(document.createTextNode(k[0]));
    item.setAttribute("data-kind", kind);
    el.appendChild(item);
  });
  if (el.parentNode.parentNode.querySelector("#timeline")) {
    var tick = document.createElement("span"), sw = document.createElement("i");
    sw.style.background = "#c00"; sw.style.width = "2px";
    tick.appendChild(sw); tick.appendChild(document.createTextNode("instant")); el.appendChild(tick);
  }
});
var total = 0;
for (i = 0; i < F.length; i++) total += F[i][5];
$("title").textContent = D.title;
$("facts").textContent = (D.funcs_left_out ? F.length + D.funcs_left_out + " functions (" + F.length + " in this report), " :
  F.length + " functions, ") + D.events + " events" +
  (D.lost ? " (" + D.lost + " lost)" : "") + ", " + ns(D.duration_ns) + " traced" +
  (D.complete ? "" : " (trace cut short)") + ", " + D.threads.length +
  (D.threads.length === 1 ? " thread" : " threads") + (D.processes.length > 1 ? " in " + D.processes.length +
  " processes" : "") + "; " + D.times + (home ? "; paths relative to " + home : "");
document.title = "ulma: " + D.title;
var tip = $("tip");
function showTip(ev, text) {
  tip.textContent = text; tip.style.display = "block";
  tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - 300) + "px";
  tip.style.top = (ev.clientY + 14) + "px";
}
function hideTip() { tip.style.display = "none"; }
function fit(canvas, h) {
  var r = window.devicePixelRatio || 1, w = canvas.clientWidth || 800;
  canvas.width = w * r; canvas.height = h * r; canvas.style.height = h + "px";
  var g = canvas.getContext("2d"); g.setTransform(r, 0, 0, r, 0, 0);
  g.font = "11px system-ui,sans-serif"; g.textBaseline = "middle";
  return {g: g, w: w};
}
/* a frame: its label starts at the visible part's left edge (tx), so a frame begun left of the view keeps it */
function box(g, x, y, w, h, fill, text, strong, W) {
  g.fillStyle = fill; g.fillRect(x, y, Math.max(w - 0.5, 0.5), h - 1);
  if (strong) { g.strokeStyle = "#d00"; g.lineWidth = 2; g.strokeRect(x + 1, y + 1, w - 2, h - 3); }
  var x0 = Math.max(x, 0), x1 = Math.min(x + w, W === undefined ? x + w : W);
  if (x1 - x0 > 30) {
    g.save(); g.beginPath(); g.rect(x0, y, x1 - x0 - 2, h); g.clip();
    g.fillStyle = "#111"; g.fillText(text, x0 + 3, y + h / 2); g.restore();
  }
}
var query = "";
function matchesRow(r) {
  return query !== "" && (r[0].toLowerCase().indexOf(query) >= 0 || r[1].toLowerCase().indexOf(query) >= 0);
}
function matches(i) { return i >= 0 && matchesRow(F[i]); }
var ROW = 18;

/* ---- trees: the data's tree has a subtree per thread; views merge them ---- */
var T = D.tree, TH = D.threads;
/* a tree: f (row, -1 root), p (parent), t, s, c and kids (children, longest first) */
function newTree(rootT) { return {f: [-1], p: [-1], t: [rootT], s: [0], c: [0], key: [{}]}; }
function child(tr, parent, f) {
  var n = tr.key[parent][f];
  if (n === undefined) {
    n = tr.f.length; tr.key[parent][f] = n;
    tr.f.push(f); tr.p.push(parent); tr.t.push(0); tr.s.push(0); tr.c.push(0); tr.key.push({});
  }
  return n;
}
function finish(tr) {
  tr.kids = [];
  for (var n = 0; n < tr.f.length; n++) tr.kids.push([]);
  for (n = 1; n < tr.f.length; n++) tr.kids[tr.p[n]].push(n);
  tr.kids.forEach(function (k) { k.sort(function (a, b) { return tr.t[b] - tr.t[a]; }); });
  tr.depth = [0]; tr.maxDepth = 0;
  for (n = 1; n < tr.f.length; n++) {
    tr.depth.push(tr.depth[tr.p[n]] + 1);
    if (tr.depth[n] > tr.maxDepth) tr.maxDepth = tr.depth[n];
  }
  delete tr.key;
  return tr;
}
/* the threads for which want(thread row) holds, merged into one tree */
function scopeTree(want) {
  var tr = newTree(0), map = [0];
  for (var n = 1; n < T.f.length; n++) {
    if (T.f[n] <= -2) { /* a thread node */
      map[n] = want(-2 - T.f[n]) ? 0 : -1;
      if (map[n] === 0) tr.t[0] += T.t[n];
      continue;
    }
    var mp = map[T.p[n]];
    if (mp === -1) { map[n] = -1; continue; }
    var m = map[n] = child(tr, mp, T.f[n]);
    tr.t[m] += T.t[n]; tr.s[m] += T.s[n]; tr.c[m] += T.c[n];
  }
  return finish(tr);
}
/* bottom up: each node's self time along its path to the root, the function first (at most CAP levels) */
var CAP = 256;
function invertedTree(base) {
  var tr = newTree(0);
  for (var n = 1; n < base.f.length; n++) {
    if (base.s[n] <= 0) continue;
    tr.t[0] += base.s[n];
    var m = 0;
    for (var a = n, k = 0; a > 0 && k < CAP; a = base.p[a], k++) {
      m = child(tr, m, base.f[a]);
      tr.t[m] += base.s[n];
      if (a === n) { tr.c[m] += base.c[n]; tr.s[m] += base.s[n]; }
    }
  }
  return finish(tr);
}
/* the sandwich of function fn in base: up (its callers, fn at the root) and down (its callees) */
function sandwich(base, fn) {
  var up = newTree(0), down = newTree(0), map = [], within = new Uint8Array(base.f.length);
  /* within: below a frame of fn (parents come before children); an outermost frame of fn is not */
  for (var q = 1; q < base.f.length; q++)
    within[q] = base.p[q] > 0 && (within[base.p[q]] || base.f[base.p[q]] === fn) ? 1 : 0;
  for (var n = 1; n < base.f.length; n++) {
    var mp = map[base.p[n]];
    if (mp !== undefined && mp !== -1) { /* inside an outermost frame of fn */
      var m = map[n] = child(down, mp, base.f[n]);
      down.t[m] += base.t[n]; down.s[m] += base.s[n]; down.c[m] += base.c[n];
      continue;
    }
    map[n] = -1;
    if (base.f[n] !== fn || within[n]) continue;
    map[n] = 0;
    down.t[0] += base.t[n]; down.s[0] += base.s[n]; down.c[0] += base.c[n];
    up.t[0] += base.t[n]; up.c[0] += base.c[n];
    var u = 0;
    for (var a = base.p[n], k = 0; a > 0 && k < CAP; a = base.p[a], k++) {
      u = child(up, u, base.f[a]);
      up.t[u] += base.t[n];
    }
  }
  up.f[0] = down.f[0] = fn;
  return {up: finish(up), down: finish(down)};
}
/* callers and callees of fn in base: [row (-1: a thread's start), calls, ns] sorted by time */
function edges(base, fn) {
  var callers = {}, callees = {};
  function add(map, f, c, t) { var e = map[f] || (map[f] = [f, 0, 0]); e[1] += c; e[2] += t; }
  for (var n = 1; n < base.f.length; n++) {
    if (base.f[n] === fn) add(callers, base.p[n] > 0 ? base.f[base.p[n]] : -1, base.c[n], base.t[n]);
    if (base.p[n] > 0 && base.f[base.p[n]] === fn) add(callees, base.f[n], base.c[n], base.t[n]);
  }
  function sorted(map) { return Object.keys(map).map(function (k) { return map[k]; }).sort(function (a, b) { return b[2] - a[2]; }); }
  return {callers: sorted(callers), callees: sorted(callees)};
}

/* ---- flame graph: merged, per process or per thread; flame or inverted ---- */
var scopes = [["all threads, merged", function () { return true; }]];
D.processes.forEach(function (p) {
  if (D.processes.length > 1)
    scopes.push([procName(p.pid) + " (all its threads)", function (t) { return TH[t].pid === p.pid; }]);
});
TH.forEach(function (t, k) { scopes.push([threadName(t), function (x) { return x === k; }]); });
scopes.forEach(function (s, k) {
  var o = document.createElement("option");
  o.value = String(k); o.textContent = s[0];
  $("fgscope").appendChild(o);
});
function procName(pid) {
  for (var k = 0; k < D.processes.length; k++)
    if (D.processes[k].pid === pid && D.processes[k].name) return D.processes[k].name + " (pid " + pid + ")";
  return "process " + pid;
}
function threadName(t) {
  var n = t.name ? t.name : t.main ? "main thread" : "thread";
  return n + " " + t.tid + (D.processes.length > 1 ? " (pid " + t.pid + ")" : "");
}
var scope = 0, view = "flame", base = scopeTree(scopes[0][1]), shown = base, focus = 0, boxes = [];
function setView() {
  base = scopeTree(scopes[scope][1]);
  shown = view === "inverted" ? invertedTree(base) : base;
  focus = 0;
  drawFlame(); flameLines(0);
  if (selected >= 0) showDetail(selected, false);
}
$("fgscope").addEventListener("change", function () { scope = +this.value; setView(); });
Array.prototype.forEach.call($("fgview").children, function (b) {
  b.addEventListener("click", function () {
    view = b.getAttribute("data-view");
    Array.prototype.forEach.call($("fgview").children, function (x) { x.className = x === b ? "on" : ""; });
    setView();
  });
});
function nodeText(tr, n) {
  if (tr.f[n] >= 0) return label(tr.f[n]);
  return (tr === shown && view === "inverted" ? "all self time" : scopes[scope][0]) + " (" + ns(tr.t[0]) + ")";
}
var drawn = {}; /* per canvas: the tree and the boxes drawn last (ulmaReport) */
/* How a tree's nodes look: the time trees' (tr.f a row of F, t nanoseconds) unless the tree has its own
 * (tr.look: the memory view's, whose t is bytes): a node's label, colour, whether the search finds it, its tip. */
var timeLook = {text: nodeText, fill: function (tr, n) { return tr.f[n] < 0 ? "#ccc" : hue(tr.f[n]); },
                found: function (tr, n) { return matches(tr.f[n]); }, tip: nodeTip};
function lookOf(tr) { return tr.look || timeLook; }
/* an icicle of tr from node top, each node as wide as its t; up: drawn upward from the bottom.  Laid
 * out first, so that the canvas is as deep as the frames wide enough to see. */
var ICICLE_ROWS = 200; /* levels drawn below the focus: a deeper frame is a click away */
function drawIcicle(canvas, tr, top, up) {
  var list = [], chain = [], n, deepest = 0;
  for (n = top; n !== -1; n = n === 0 ? -1 : tr.p[n]) chain.unshift(n);
  if (chain.length > 8) chain = [chain[0]].concat(chain.slice(-7)); /* the root and the nearest ancestors */
  var W = canvas.clientWidth || 800;
  for (var k = 0; k < chain.length; k++) list.push([0, k, W, chain[k]]);
  var stack = [[top, 0, W, chain.length - 1]];
  while (stack.length) {
    var s = stack.pop(), x = s[1];
    var scale = tr.t[s[0]] > 0 ? s[2] / tr.t[s[0]] : 0;
    tr.kids[s[0]].forEach(function (ch) {
      var w = tr.t[ch] * scale;
      if (w >= 0.4 && s[3] + 1 < chain.length + ICICLE_ROWS) {
        list.push([x, s[3] + 1, w, ch]);
        stack.push([ch, x, w, s[3] + 1]);
      }
      x += w;
    });
  }
  list.forEach(function (b) { if (b[1] > deepest) deepest = b[1]; });
  var H = (deepest + 1) * ROW + 2, c = fit(canvas, H), g = c.g;
  drawn[canvas.id] = {tr: tr, list: list};
  var look = lookOf(tr);
  list.forEach(function (b) {
    b[1] = up ? H - 2 - (b[1] + 1) * ROW : b[1] * ROW;
    box(g, b[0], b[1], b[2], ROW, look.fill(tr, b[3]), look.text(tr, b[3]), look.found(tr, b[3]), c.w);
  });
  return list;
}
function drawFlame() { boxes = drawIcicle($("flame"), shown, focus, false); }
function hit(list, ev, canvas) {
  var r = canvas.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
  for (var k = list.length - 1; k >= 0; k--) {
    var b = list[k];
    if (x >= b[0] && x < b[0] + b[2] && y >= b[1] && y < b[1] + ROW) return b[3];
  }
  return -1;
}
function nodeTip(tr, n) {
  var t = tr.f[n] >= 0 ? fullLabel(tr.f[n]) : nodeText(tr, n);
  return t + "\ntotal " + ns(tr.t[n]) + " (" + (100 * tr.t[n] / Math.max(tr.t[0], 1)).toFixed(2) +
    "%), self " + ns(tr.s[n]) + ", calls " + tr.c[n];
}
function hoverIcicle(canvas, get) {
  canvas.addEventListener("mousemove", function (ev) {
    var v = get(), n = hit(v[1], ev, this);
    if (n < 0) { hideTip(); return; }
    showTip(ev, lookOf(v[0]).tip(v[0], n));
  });
  canvas.addEventListener("mouseleave", hideTip);
}
$("flame").addEventListener("click", function (ev) {
  var n = hit(boxes, ev, this);
  if (n >= 0) { focus = n; drawFlame(); flameLines(n); }
});
$("flame").addEventListener("dblclick", function (ev) {
  var n = hit(boxes, ev, this);
  if (n > 0 && shown.f[n] >= 0) showDetail(shown.f[n], true);
});
hoverIcicle($("flame"), function () { return [shown, boxes]; });
$("fgreset").addEventListener("click", function () { focus = 0; drawFlame(); flameLines(0); });

/* ---- the time split: seed 002's bar ---- */
var SPLIT = [["on-CPU", "#e53935"], ["waiting for a CPU", "#ffb300"], ["blocked", "#1e88e5"], ["GIL", "#8e24aa"]];
/* [on-CPU, runnable, blocked but not the GIL, GIL] of row i's self (0) or total (4) */
function parts(i, at) {
  var x = FX[i];
  if (!D.has.split) return [x[at] + x[at + 1] + x[at + 2], 0, 0, 0];
  return [x[at], x[at + 1], Math.max(x[at + 2] - x[at + 3], 0), x[at + 3]];
}
var maxTotal = 1;
for (i = 0; i < F.length; i++) if (F[i][6] > maxTotal) maxTotal = F[i][6];
(function () {
  var key = $("splitkey");
  (D.has.split ? SPLIT.slice(0, D.has.gil ? 4 : 3) : [["time", SPLIT[0][1]]]).forEach(function (s) {
    var sw = document.createElement("i"); sw.style.background = s[1];
    key.appendChild(sw); key.appendChild(document.createTextNode(s[0]));
  });
  key.appendChild(document.createTextNode("; self solid, callees pale"));
  if (D.has.native) {
    var sw = document.createElement("i"); sw.style.background = "#2e7d32"; sw.style.height = "3px";
    key.appendChild(sw); key.appendChild(document.createTextNode("native share (under the bar)"));
  }
})();
/* one bar: width total / the longest total; self's split solid, the callees' pale; native beneath */
function funcBar(i) {
  var bar = document.createElement("span"), inner = document.createElement("span");
  bar.className = "fbar";
  var tot = F[i][6], w = 100 * tot / maxTotal;
  inner.style.width = w.toFixed(3) + "%";
  var self = parts(i, 0), all = parts(i, 4), sum = 0, k;
  for (k = 0; k < 4; k++) sum += all[k];
  sum = Math.max(sum, self[0] + self[1] + self[2] + self[3], 1);
  [[self, ""], [all.map(function (v, k) { return Math.max(v - self[k], 0); }), "callee"]].forEach(function (p) {
    for (var k = 0; k < 4; k++) {
      if (p[0][k] <= 0) continue;
      var part = document.createElement("i");
      part.style.width = (100 * p[0][k] / sum).toFixed(3) + "%";
      part.style.background = SPLIT[k][1];
      if (p[1]) part.className = p[1];
      part.setAttribute("data-part", (p[1] ? "callees " : "self ") + SPLIT[k][0]);
      inner.appendChild(part);
    }
  });
  bar.appendChild(inner);
  if (FX[i][9] > 0 && tot > 0) {
    var nat = document.createElement("b");
    nat.style.width = (w * Math.min(FX[i][9] / tot, 1)).toFixed(3) + "%";
    nat.setAttribute("data-part", "native");
    bar.appendChild(nat);
  }
  bar.title = splitText(i);
  return bar;
}
function splitText(i) {
  var x = FX[i], t = fullLabel(i) + "\nself " + ns(F[i][5]) + ", total " + ns(F[i][6]);
  if (D.has.split) {
    var s = parts(i, 0), a = parts(i, 4);
    t += "\nself: on-CPU " + ns(s[0]) + ", waiting for a CPU " + ns(s[1]) + ", blocked " + ns(s[2] + s[3]) +
      (D.has.gil ? " (GIL " + ns(s[3]) + ")" : "") + "\ntotal: on-CPU " + ns(a[0]) + ", waiting for a CPU " +
      ns(a[1]) + ", blocked " + ns(a[2] + a[3]) + (D.has.gil ? " (GIL " + ns(a[3]) + ")" : "");
  }
  if (x[9] > 0) t += "\nnative: " + ns(x[8]) + " of self, " + ns(x[9]) + " of total";
  if (D.has.memory) t += "\nallocated: " + bytes(x[10]) + " itself (" + bytes(x[12]) + " native), " + bytes(x[11]) +
    " with callees; " + bytes(x[13]) + " of its own held at the end";
  return t;
}

/* ---- function table ---- */
var COLS = [["function", 0, "n"], ["file:line", 1, "path"], ["calls", 4], ["total", 6], ["self", 5],
            ["self %", 5], ["per call", -1], ["where the time went", 6, "n"]];
/* with --memory: what the function allocated itself, by Python's allocators and native code, what of it
   is still held at the end, and what it allocated with its callees */
if (D.has.memory) COLS.push(["own Python", -3], ["own native", -4], ["held at end", -5], ["allocated", -2]);
var sortCol = 4, sortDesc = true, LIMIT = 500, selected = -1; /* rows drawn: the rest by sorting or search */
function value(i, col) {
  var k = COLS[col][1];
  if (k === -1) return F[i][6] / Math.max(F[i][4], 1);
  if (k === -2) return FX[i][11];
  if (k === -3) return FX[i][10] - FX[i][12];
  if (k === -4) return FX[i][12];
  if (k === -5) return FX[i][13];
  if (k === 1) return where(i);
  return F[i][k];
}
COLS.forEach(function (c, k) {
  var th = document.createElement("th");
  th.textContent = c[0];
  if (c[2]) th.className = c[2];
  th.addEventListener("click", function () {
    if (sortCol === k) sortDesc = !sortDesc; else { sortCol = k; sortDesc = k > 1; }
    drawTable();
  });
  $("head").appendChild(th);
});
function drawTable() {
  var idx = [];
  for (var i = 0; i < F.length; i++) if (query === "" || matches(i)) idx.push(i);
  idx.sort(function (a, b) {
    var x = value(a, sortCol), y = value(b, sortCol);
    var r = x < y ? -1 : x > y ? 1 : a - b;
    return sortDesc ? -r : r;
  });
  var body = document.createElement("tbody");
  body.id = "rows";
  idx.slice(0, LIMIT).forEach(function (i) {
    var tr = document.createElement("tr");
    var cells = [F[i][0], where(i), F[i][4], ns(F[i][6]), ns(F[i][5]),
                 (100 * F[i][5] / Math.max(total, 1)).toFixed(2), ns(Math.round(F[i][6] / Math.max(F[i][4], 1)))];
    cells.forEach(function (v, k) {
      var td = document.createElement("td");
      td.textContent = String(v);
      if (COLS[k][2]) td.className = COLS[k][2];
      if (k === 1) td.title = fullWhere(i);
      tr.appendChild(td);
    });
    var td = document.createElement("td");
    td.className = "n"; td.appendChild(funcBar(i)); tr.appendChild(td);
    if (D.has.memory) {
      [[FX[i][10] - FX[i][12], "allocated by Python's allocators while it was on top"],
       [FX[i][12], "allocated by native code (malloc, mmap...) while it was on top"],
       [FX[i][13], "of what it allocated itself, still allocated at the end"],
       [FX[i][11], bytes(FX[i][10]) + " itself"]].forEach(function (c) {
        td = document.createElement("td");
        td.textContent = bytes(c[0]); td.title = c[1];
        tr.appendChild(td);
      });
    }
    tr.setAttribute("data-row", i);
    if (i === selected) tr.classList.add("sel");
    if (lineOf[i] !== undefined) { tr.classList.add("hasl"); tr.title = "click for its callers, callees and lines"; }
    tr.addEventListener("click", function () {
      showDetail(i, true);
      if (lineOf[i] !== undefined) showLines(lineOf[i], false);
    });
    body.appendChild(tr);
  });
  $("rows").replaceWith(body);
  $("count").textContent = idx.length + " of " + F.length + " functions" +
    (idx.length > LIMIT ? " (first " + LIMIT + " shown)" : "") + "; click one for its callers and callees";
  Array.prototype.forEach.call($("head").children, function (th, k) {
    th.textContent = COLS[k][0] + (k === sortCol ? (sortDesc ? " \u25bc" : " \u25b2") : "");
  });
}
if (D.funcs_left_out) $("funcnote").textContent = D.funcs_left_out + " more functions with shorter totals are " +
  "left out of this report (it keeps the " + F.length + " longest); their time is in their callers' self time";
$("search").addEventListener("input", function () {
  query = this.value.toLowerCase(); drawTable(); drawFlame(); drawTimeline();
  if (selected >= 0) showDetail(selected, false);
});

/* ---- callers, callees and the sandwich of the selected function ---- */
var sand = {up: null, down: null, upBoxes: [], downBoxes: []};
function showDetail(fn, scroll) {
  selected = fn;
  $("detail").hidden = false;
  $("dname").textContent = fullLabel(fn).replace("\n", " \u2014 ") + ": total " + ns(F[fn][6]) + ", self " +
    ns(F[fn][5]) + ", " + F[fn][4] + " calls (" + scopes[scope][0] + ")";
  var e = edges(base, fn);
  [["callers", e.callers], ["callees", e.callees]].forEach(function (x) {
    var body = document.createElement("tbody");
    x[1].forEach(function (r) {
      var tr = document.createElement("tr");
      cell(tr, r[0] >= 0 ? label(r[0]) : "(start of the thread)", "n");
      cell(tr, String(r[1])); cell(tr, ns(r[2]));
      if (r[0] >= 0) {
        tr.title = fullLabel(r[0]);
        tr.addEventListener("click", function () { showDetail(r[0], false); });
      }
      body.appendChild(tr);
    });
    if (!x[1].length) { var tr = document.createElement("tr"); cell(tr, "none", "n"); body.appendChild(tr); }
    $(x[0]).querySelector("tbody").replaceWith(body);
  });
  var s = sandwich(base, fn);
  sand.up = s.up; sand.down = s.down;
  sand.upBoxes = drawIcicle($("sandup"), s.up, 0, true);
  sand.downBoxes = drawIcicle($("sanddown"), s.down, 0, false);
  $("dlines").hidden = lineOf[fn] === undefined;
  $("dlines").onclick = function () { showLines(lineOf[fn], true); };
  Array.prototype.forEach.call($("rows").children, function (tr) {
    tr.classList.toggle("sel", +tr.getAttribute("data-row") === fn);
  });
  if (scroll) $("detail").scrollIntoView();
}
hoverIcicle($("sandup"), function () { return [sand.up, sand.upBoxes]; });
hoverIcicle($("sanddown"), function () { return [sand.down, sand.downBoxes]; });
[["sandup", "upBoxes", "up"], ["sanddown", "downBoxes", "down"]].forEach(function (s) {
  $(s[0]).addEventListener("click", function (ev) {
    var n = hit(sand[s[1]], ev, this);
    if (n > 0 && sand[s[2]].f[n] >= 0) showDetail(sand[s[2]].f[n], false);
  });
});
$("dclose").addEventListener("click", function () { $("detail").hidden = true; selected = -1; drawTable(); });
