/* report_start.js - the HTML report's first drawing, and what the views
 * show for the tests to read back (see report.js). */
drawTable();
drawFlame();
drawTimeline();
/* what the views show, read back by the tests (tests/py/test_export_html_view.py) and by anyone scripting the page */
window.ulmaReport = {
  flame: function (id) {
    var d = drawn[id];
    var look = d && lookOf(d.tr); /* [label, x, y, width, found by the search, weight: ns or bytes] */
    return d ? d.list.map(function (b) { return [look.text(d.tr, b[3]), b[0], b[1], b[2], look.found(d.tr, b[3]),
                                                  d.tr.t[b[3]]]; }) : [];
  },
  timeline: function () {
    return {v0: v0, v1: v1, frames: tlDrawn.frames, found: tlDrawn.found, clipped: tlDrawn.clipped,
            height: tl.clientHeight, lanes: lanes.filter(function (l) { return l.t; }).map(function (l) {
              return [threadName(l.t), l.t.open, l.rows, l.t.pid, l.y - tlwrap.scrollTop]; })};
  }
};
performance.mark("ulma-ready"); /* bench/html.py reads it */
document.body.setAttribute("data-ready", "yes");
