"""C callables are named for what they are (docs/design.md, "Names of C
functions"): a classmethod or static method for the class that defines it
(`int.from_bytes`, `collections.OrderedDict.fromkeys`, not `type.fromkeys`),
a method for the type that defines it (`list.reverse` on a list subclass),
a type's `__new__` for that type, a module's function for its module.

programs/c_names.py traces only the calls its main() and run_thread() make
(an inline block), so every count below is exact; the JSON report is the
real one, `ulma report TRACE --format json`.
"""
import subprocess
import sys

import pytest

from conftest import TIMEOUT, base_env

QUALNAMES = sys.version_info >= (3, 11)  # ulma reports co_qualname where it exists

# c_kind of each C callable c_names.py calls (the JSON report's c_kind)
C_KINDS = {
    "int.from_bytes": "classmethod",
    "dict.fromkeys": "classmethod",
    "collections.OrderedDict.fromkeys": "classmethod",
    "bytes.fromhex": "classmethod",
    "datetime.datetime.now": "classmethod",
    "itertools.chain.from_iterable": "classmethod",
    "datetime.date.fromordinal": "classmethod",
    "str.maketrans": "classmethod",
    "object.__new__": "classmethod",
    "tuple.__new__": "classmethod",
    "list.reverse": "method",
    "type.mro": "method",
    "time.sleep": "function",
    "builtins.divmod": "function",
    "ignore_errors": "unbound",
}


def _expected_calls(calls):
    """CALLS of c_names.py with Python functions under the name ulma gives them
    on this version: the bare co_name before 3.11."""
    if QUALNAMES:
        return dict(calls)
    return {(name if name in C_KINDS else name.rsplit(".", 1)[-1]): n for name, n in calls.items()}


@pytest.fixture(scope="module")
def c_names(prog, report_json, tmp_path_factory):
    path = prog("c_names.py")
    trace = str(tmp_path_factory.mktemp("c_names") / "block.trace")
    proc = subprocess.run([sys.executable, path, "--inline", trace], stdin=subprocess.DEVNULL,
                          capture_output=True, env=base_env(), timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    data, _ = report_json(trace)
    sys.path.insert(0, str(prog("")))
    try:
        import c_names as module
    finally:
        sys.path.pop(0)
    return {"path": path, "data": data, "calls": _expected_calls(module.CALLS)}


def test_every_callable_under_its_name_with_its_exact_count(c_names):
    data = c_names["data"]
    assert data["lost"] == 0
    rows = {}
    for f in data["functions"]:
        if f["kind"] == "c" or f["file"] == c_names["path"]:
            assert f["name"] not in rows, "two rows named %r: %r, %r" % (f["name"], rows[f["name"]], f)
            rows[f["name"]] = f
    got = {name: rows[name]["calls"] if name in rows else None for name in c_names["calls"]}
    assert got == c_names["calls"], sorted(rows)


def test_classmethods_are_not_named_for_the_metaclass(c_names):
    """Before, a classmethod's self (the class) gave its owner as type(cls):
    type.from_bytes, and one type.fromkeys for dict's and OrderedDict's."""
    names = {f["name"] for f in c_names["data"]["functions"] if f["kind"] == "c"}
    assert {n for n in names if n.startswith("type.")} == {"type.mro"}, sorted(names)
    assert not {n for n in names if n.split(".")[0] in ("MyDict", "MyList")}, sorted(names)


def test_c_kind_says_what_the_callable_is(c_names):
    rows = {f["name"]: f for f in c_names["data"]["functions"]}
    got = {name: rows[name].get("c_kind") for name in C_KINDS if name in rows}
    assert got == C_KINDS
    for f in c_names["data"]["functions"]:
        if f["kind"] == "python":
            assert "c_kind" not in f, f
        else:
            assert f["c_kind"] in ("function", "method", "classmethod", "unbound"), f
