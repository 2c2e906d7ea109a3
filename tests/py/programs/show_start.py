"""Prints, as its first act, what a program can see of how the interpreter
started it: sys.orig_argv (3.10+) and the modules already loaded."""
import json
import sys

print(json.dumps({"orig_argv": getattr(sys, "orig_argv", None), "argv": sys.argv,
                  "modules": sorted(m for m in sys.modules if m != "json" and not m.startswith("json."))}))
