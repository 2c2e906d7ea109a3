"""Ground truth for tests/py/test_lines_hits.py: run lines_prog.main()
untraced under line_profiler, with every function of lines_prog.MEASURED
added, and write {"name line": hits} (name: the function's bare name) as
JSON to argv[1]."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lines_prog  # noqa: E402
from line_profiler import LineProfiler  # noqa: E402

profiler = LineProfiler(*lines_prog.MEASURED)
profiler.runcall(lines_prog.main)
hits = {}
for (_, _, name), rows in profiler.get_stats().timings.items():
    for line, count, _ in rows:
        hits["%s %d" % (name, line)] = count
with open(sys.argv[1], "w") as f:
    json.dump(hits, f)
