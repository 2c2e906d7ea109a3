"""The terminal summary aligns its columns by display width: a CJK
character, an emoji or a fullwidth letter takes two columns, a combining
accent none (src/analysis/display_width.h).  Widths are checked with
Python's own Unicode database (unicodedata.east_asian_width and the
combining classes), not with ulma's table."""
import unicodedata

from conftest import program_path


def columns(text):
    w = 0
    for c in text:
        if unicodedata.combining(c) or unicodedata.category(c) in ("Mn", "Me", "Cf"):
            continue
        w += 2 if unicodedata.east_asian_width(c) in "WF" else 1
    return w


def test_function_column_aligned_by_width(run_ulma, tmp_path):
    prog = program_path("wide_names.py")
    proc = run_ulma(["run", "--no-live", "-o", str(tmp_path / "w.trace"), prog])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.decode("utf-8").splitlines()
    header = next(line for line in lines if line.lstrip().startswith("calls"))
    name_col = columns(header[: header.index("function")])
    file_col = columns(header[: header.index("file:line")])
    rows = [line for line in lines if line.endswith("wide_names.py:17")]
    assert len(rows) == 6, lines
    starts = {}
    for row in rows:
        i = row.rindex(" ") + 1  # the file, which holds no space
        starts[row] = columns(row[:i])
        assert columns(row[:name_col]) == name_col  # numbers are ASCII: names start under "function"
    short = [row for row in rows if "..." not in row]
    assert len(short) == 5
    assert {starts[row] for row in short} == {file_col}, starts
    # the long name is cut at 60 columns (59 when a wide character would straddle), "..." included
    cut = next(row for row in rows if "..." in row)
    name = cut[: cut.index("...") + 3]
    assert 59 <= columns(name) - name_col <= 60, (columns(name), name_col)
    assert cut[len(name)] == " "
