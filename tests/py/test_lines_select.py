"""Choosing code for line-level profiling (docs/lines.md, "Choosing
code"): `ulma run --lines PATTERN` with dotted names and globs (matched
against the qualified name, "module.qualname" and the module), file
globs (absolute, relative to the cwd, or a path's tail), and `all` (the
program's own files, not the standard library, site-packages or ulma).
A pattern that matches nothing is warned about; an empty one is refused;
code without a source file is chosen by name without harm; Python
processes the program starts read the same patterns."""
import os
import sys
import textwrap

import pytest

from lines_helpers import QUALNAMES, line_tables, name, run_lines

MAIN = """\
import json
import os
import subprocess
import sys

from pkg import mod_a, mod_b
from pkg.sub import deep


def local(n):
    t = 0
    for i in range(n):
        t += i
    return t


def dynamic():
    exec(compile("def made(n):\\n    return n + 1\\nmade(2)\\n", "<string>", "exec"), {})


if __name__ == "__main__":
    local(3)
    mod_a.alpha(2)
    mod_a.Box().size()
    mod_b.beta(2)
    deep.gamma(1)
    json.dumps({"a": [1, 2]})
    dynamic()
    try:
        from packaging.version import Version  # site-packages (pytest needs it)
        Version("1.2")
    except ImportError:
        pass
    if len(sys.argv) > 1:
        subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "child.py")], check=True)
"""

FILES = {
    "main.py": MAIN,
    "pkg/__init__.py": "def init_fn():\n    return 1\n",
    "pkg/mod_a.py": textwrap.dedent("""\
        def alpha(n):
            return [i for i in range(n)]


        class Box:
            def size(self):
                return 4
        """),
    "pkg/mod_b.py": "def beta(n):\n    x = n\n    return x * 2\n",
    "pkg/sub/__init__.py": "",
    "pkg/sub/deep.py": "def gamma(n):\n    return n - 1\n",
    "child.py": "def in_child():\n    return 5\n\n\nin_child()\n",
}


@pytest.fixture
def tree(tmp_path):
    for path, text in FILES.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    return tmp_path


def chosen(run_ulma, report_json, tree, patterns, cwd=None, args=()):
    data, proc = run_lines(run_ulma, report_json, tree / "t.trace", str(tree / "main.py"), patterns, cwd=cwd,
                           args=args)
    return line_tables(data), data, proc.stderr.decode(errors="replace")


@pytest.mark.parametrize("pattern", ["local", "__main__.local", "main.local", "lo*l", "*.local"])
def test_a_function_by_its_name(run_ulma, report_json, tree, pattern):
    tables, _, err = chosen(run_ulma, report_json, tree, [pattern])
    assert set(tables) == {"local"}, (pattern, set(tables))
    assert tables["local"] == {11: 1, 12: 4, 13: 3, 14: 1}
    assert "matched no function" not in err


def test_a_module_and_a_method(run_ulma, report_json, tree):
    # before 3.11 a code object knows its bare name only
    method = "Box.size" if QUALNAMES else "size"
    tables, _, _ = chosen(run_ulma, report_json, tree, ["pkg.mod_b", method, "pkg.sub.deep.gamma"])
    # the module's body runs too, at its import
    assert set(tables) == {"<module>", "beta", name("Box.size"), "gamma"}, set(tables)
    assert tables["beta"] == {2: 1, 3: 1}


def test_a_package_is_its_init(run_ulma, report_json, tree):
    tables, data, _ = chosen(run_ulma, report_json, tree, ["pkg"])
    files = {f["file"] for f in data["functions"] if "lines" in f}
    assert files == {str(tree / "pkg" / "__init__.py")}, files


def test_file_globs(run_ulma, report_json, tree):
    tables, data, _ = chosen(run_ulma, report_json, tree, ["pkg/mod_*.py"])
    files = {f["file"] for f in data["functions"] if "lines" in f}
    assert files == {str(tree / "pkg" / "mod_a.py"), str(tree / "pkg" / "mod_b.py")}, files
    # a path's tail, relative to the cwd, absolute
    for pattern, cwd in [("sub/deep.py", tree), ("./deep.py", tree / "pkg" / "sub"),
                         ("../sub/d*.py", tree / "pkg" / "sub"), (str(tree / "pkg" / "sub" / "d*.py"), None)]:
        tables, data, _ = chosen(run_ulma, report_json, tree, [pattern], cwd=cwd)
        files = {f["file"] for f in data["functions"] if "lines" in f}
        assert files == {str(tree / "pkg" / "sub" / "deep.py")}, (pattern, files)


def test_nested_comprehensions_come_with_their_function(run_ulma, report_json, tree):
    tables, _, _ = chosen(run_ulma, report_json, tree, ["alpha"])
    expected = {"alpha"} if sys.version_info >= (3, 12) else {"alpha", name("alpha.<locals>.<listcomp>")}
    assert set(tables) == expected, set(tables)


def test_all_is_the_programs_own_code(run_ulma, report_json, tree):
    _, data, _ = chosen(run_ulma, report_json, tree, ["all"])
    files = {f["file"] for f in data["functions"] if "lines" in f}
    own = {str(tree / path) for path in FILES if path != "child.py"}
    empty = str(tree / "pkg/sub/__init__.py")  # 3.12 reports a line 0 for an empty module
    assert own - {empty} <= files <= own, files ^ own
    ran = {f["file"] for f in data["functions"] if f["calls"]}
    assert any("json" in path for path in ran), "the standard library ran"


def test_a_pattern_that_matches_nothing_is_warned_about(run_ulma, report_json, tree):
    tables, _, err = chosen(run_ulma, report_json, tree, ["local", "no_such_function_zz"])
    assert set(tables) == {"local"}
    assert "ulma: warning: --lines 'no_such_function_zz' matched no function that ran" in err, err
    assert "'local'" not in err


def test_an_empty_pattern_is_refused(run_ulma, tree):
    proc = run_ulma(["run", "--no-live", "-o", str(tree / "t.trace"), "--lines", "", str(tree / "main.py")])
    assert proc.returncode != 0
    assert b"--lines takes a pattern" in proc.stderr, proc.stderr
    assert not os.path.exists(tree / "t.trace")


def test_lines_with_attachable_is_refused(run_ulma, tree):
    proc = run_ulma(["run", "--attachable", "--lines", "local", str(tree / "main.py")])
    assert proc.returncode != 0
    assert b"ulma record PID --lines" in proc.stderr, proc.stderr


def test_code_without_a_source_file(run_ulma, report_json, tree):
    tables, data, _ = chosen(run_ulma, report_json, tree, ["made", "dynamic"])
    assert tables["made"] == {2: 1}, tables
    assert [f["file"] for f in data["functions"] if f["name"] == "made"] == ["<string>"]


def test_started_processes_read_the_same_patterns(run_ulma, report_json, tree):
    _, data, _ = chosen(run_ulma, report_json, tree, ["in_child", "local"], args=["child"])
    tables = line_tables(data, str(tree / "child.py"))
    assert tables == {"in_child": {2: 1}}, tables
