"""Blocks on both sides of the one-record limit (shm version 7): an
allocation smaller than 1024 bytes at a 16-byte aligned address is one
ALLOC_SMALL record, anything else MEM_SIZE and ALLOC (docs/memory.md).
bytes objects of sys.getsizeof 1023 and 1024 bytes (bytes have no free
list, and getsizeof is the allocator's size), N of each kept in their own
function, come back as exactly N blocks of those bytes in that function,
with the live summary and `ulma report` agreeing.  (The encoding's other
fallbacks and realloc are tests/unit/test_mem_record.c's.)"""
import json

N = 500
PROGRAM = """
import sys

def make_below(n):
    for i in range(n):  # into a list made before: the bytes are all the function keeps
        below[i] = bytes(SMALL)

def make_at(n):
    for i in range(n):
        at[i] = bytes(SMALL + 1)

SMALL = 1023 - sys.getsizeof(b"")
n = int(sys.argv[1])
below, at = [None] * n, [None] * n
make_below(n)
make_at(n)
print(sys.getsizeof(bytes(SMALL)), sys.getsizeof(bytes(SMALL + 1)))
"""


def leaks_in(data, name):
    """[blocks, bytes] still allocated at the end by Python's allocators, made in function name"""
    row = [0, 0]
    for leak in data["leaks"]:
        if leak["stack"] and leak["stack"][-1] == name:
            row[0] += leak["count"] - leak["native_count"]
            row[1] += leak["bytes"] - leak["native_bytes"]
    return row


def test_sizes_each_side_of_the_one_record_limit(run_ulma, report_json, tmp_path):
    script = tmp_path / "limit.py"
    script.write_text(PROGRAM)
    trace = str(tmp_path / "limit.trace")
    proc = run_ulma(["run", "--memory", "--no-c-calls", "--summary", "json", "-o", trace, str(script), str(N)])
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    below, at = (int(x) for x in proc.stdout.split())
    assert (below, at) == (1023, 1024)
    live = json.loads(proc.stderr)
    report, _ = report_json(trace)
    for data in (live, report):
        assert leaks_in(data, "make_below") == [N, N * 1023]
        assert leaks_in(data, "make_at") == [N, N * 1024]
        funcs = {f["name"]: f for f in data["functions"]}
        assert funcs["make_below"]["net_bytes"] == N * 1023
        assert funcs["make_at"]["net_bytes"] == N * 1024
