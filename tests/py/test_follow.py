"""Child processes join the session: forks, multiprocessing (fork, spawn,
forkserver) and Python subprocesses are traced into the same trace, with
exact call counts, while the program's output stays its own."""
import pytest


def test_children_of_every_kind_are_traced(prog, traced_json, run_python):
    path = prog("follow_children.py")
    untraced = run_python([path])
    data, proc = traced_json(path)
    assert proc.stdout == untraced.stdout
    assert b"child 2584 0" in proc.stdout
    assert data["lost"] == 0
    rows = {f["name"]: f["calls"] for f in data["functions"] if f["file"] == path}
    assert rows["work"] == 30
    assert rows["child_main"] == 1
    assert rows["fib"] == 8361
    # main + 2 workers per pool + the forkserver + the subprocess, at least
    assert data["processes"] >= 8, data["processes"]
    pids = {t["pid"] for t in data["thread_list"]}
    assert len(pids) == data["processes"]


ENV_DUMP = "import os, json; print(json.dumps(dict(os.environ), sort_keys=True))"


def _environ(run, argv, tmp_path):
    script = tmp_path / "dump_env.py"
    script.write_text(ENV_DUMP)
    proc = run(argv + [str(script)], cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    import json

    return json.loads(proc.stdout)


def test_environment_gains_only_the_session_path(run_ulma, run_python, tmp_path):
    """The one visible difference: ULMA_SESSION_PATH, for children to join."""
    untraced = _environ(run_python, [], tmp_path)
    traced = _environ(run_ulma, ["run", "--summary", "none", "-o", str(tmp_path / "t.trace")], tmp_path)
    assert set(traced) - set(untraced) == {"ULMA_SESSION_PATH"}
    assert traced["ULMA_SESSION_PATH"].startswith("/proc/")
    del traced["ULMA_SESSION_PATH"]
    assert traced == untraced


def test_no_follow_leaves_the_environment_untouched(run_ulma, run_python, tmp_path):
    untraced = _environ(run_python, [], tmp_path)
    traced = _environ(run_ulma, ["run", "--no-follow", "--summary", "none", "-o", str(tmp_path / "t.trace")],
                      tmp_path)
    assert traced == untraced


def test_no_follow_traces_the_program_but_not_its_subprocesses(prog, run_ulma, report_json, tmp_path):
    trace = str(tmp_path / "nf.trace")
    proc = run_ulma(["run", "--lossless", "--no-follow", "--summary", "none", "-o", trace,
                     prog("follow_children.py")])
    assert proc.returncode == 0, proc.stderr
    data, _ = report_json(trace)
    rows = {f["name"]: f["calls"] for f in data["functions"] if f["file"] == prog("follow_children.py")}
    assert "child_main" not in rows  # ran in a subprocess, untraced
    assert rows["work"] >= 10  # the fork pool's workers are followed all the same


def test_processes_are_named_by_their_command(prog, run_ulma, report_json, tmp_path):
    """Each process is named by its command line, read when it first wrote:
    the summary's process table, the JSON report, the Chrome trace's
    process names and the speedscope lanes all say which process is which."""
    import json

    path = prog("follow_children.py")
    trace = str(tmp_path / "named.trace")
    proc = run_ulma(["run", "--lossless", "-o", trace, path])
    assert proc.returncode == 0, proc.stderr
    data, _ = report_json(trace)
    commands = {}
    for t in data["thread_list"]:
        assert "command" in t, t  # every process here lives long enough to be read
        commands.setdefault(t["pid"], t["command"])
    program = data["thread_list"][0]["pid"]
    assert commands[program] == "follow_children.py", commands
    named = sorted(commands.values())
    assert "follow_children.py child" in named, named  # the subprocess
    assert any(c.startswith("-c from multiprocessing.spawn import spawn_main") for c in named), named
    assert any(c.startswith("-c from multiprocessing.forkserver import main") for c in named), named
    assert named.count("follow_children.py") >= 3, named  # the program and its 2 fork workers
    # the summary's process table ends with the command
    table = [line.split() for line in proc.stderr.decode().splitlines() if line.strip().startswith(str(program))]
    assert table and table[0][-1] == "follow_children.py", proc.stderr.decode()

    chrome = tmp_path / "named.json"
    assert run_ulma(["export", trace, "--format", "chrome", "-o", str(chrome)]).returncode == 0
    names = {e["pid"]: e["args"]["name"] for e in json.loads(chrome.read_text())["traceEvents"]
             if e.get("ph") == "M" and e["name"] == "process_name"}
    # the name alone: the viewers show the pid beside it (issue 18: not twice)
    assert names == commands, names

    ss = tmp_path / "named.speedscope.json"
    assert run_ulma(["export", trace, "--format", "speedscope", "-o", str(ss)]).returncode == 0
    lanes = [p["name"] for p in json.loads(ss.read_text())["profiles"]]
    assert "follow_children.py: MainThread %d (pid %d)" % (program, program) in lanes, lanes


def _without_process_chunks(src, dst):
    """Copy a trace without its PROCESS chunks (type 8), as ulma wrote it before them."""
    import struct

    data = open(src, "rb").read()
    out, pos = [data[:16]], 16
    while pos + 12 <= len(data):
        ctype, length = struct.unpack_from("<II", data, pos)
        if ctype != 8:
            out.append(data[pos:pos + 12 + length])
        pos += 12 + length
    open(dst, "wb").write(b"".join(out))


def test_a_trace_without_process_names_names_the_program_by_its_command(prog, run_ulma, tmp_path):
    """Traces from before PROCESS chunks: the program (META has no pid for `ulma run`,
    so the first thread's) keeps its session command in every exporter, the others
    their pid."""
    import json

    path = prog("follow_children.py")
    full, old = str(tmp_path / "full.trace"), str(tmp_path / "old.trace")
    assert run_ulma(["run", "--summary", "none", "-o", full, path]).returncode == 0
    _without_process_chunks(full, old)
    chrome, ss = tmp_path / "old.json", tmp_path / "old.speedscope.json"
    assert run_ulma(["export", old, "--format", "chrome", "-o", str(chrome)]).returncode == 0
    assert run_ulma(["export", old, "--format", "speedscope", "-o", str(ss)]).returncode == 0
    # a process with no name gets no process_name: the viewers show its pid
    names = {e["pid"]: e["args"]["name"] for e in json.loads(chrome.read_text())["traceEvents"]
             if e.get("ph") == "M" and e["name"] == "process_name"}
    assert list(names.values()) == [path], names
    program_pid = next(iter(names))
    lanes = [p["name"] for p in json.loads(ss.read_text())["profiles"]]
    assert "%s: MainThread %d (pid %d)" % (path, program_pid, program_pid) in lanes, lanes


def test_the_session_behind_the_path_is_mode_0600(run_ulma, tmp_path):
    """docs/design.md: the memfd is mode 0600 (memfd_create makes it 0777).
    Opening /proc/<monitor>/fd/<n> checks that mode as well as whether the
    opener may ptrace the monitor (the same user, or root)."""
    script = tmp_path / "mode.py"
    script.write_text("import os, stat; print(oct(stat.S_IMODE(os.stat(os.environ['ULMA_SESSION_PATH']).st_mode)))")
    proc = run_ulma(["run", "--summary", "none", "-o", str(tmp_path / "t.trace"), str(script)])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"0o600\n"


def test_a_child_that_exits_at_once_is_named(prog, run_ulma, report_json, tmp_path):
    """A process whose whole traced life passes before the monitor looks
    (here the monitor is stopped meanwhile) is named all the same: it
    wrote its own command line into the session as it started tracing
    (before, the monitor read /proc/PID/cmdline when it first looked, and
    the child had to wait at its stop for that)."""
    trace = str(tmp_path / "at_once.trace")
    proc = run_ulma(["run", "--summary", "none", "-o", trace, prog("follow_exit_at_once.py")])
    assert proc.returncode == 0, proc.stderr
    child, code = map(int, proc.stdout.split())
    assert code == 0
    data, _ = report_json(trace)
    commands = {t["pid"]: t.get("command") for t in data["thread_list"]}
    assert commands.get(child) == "-c import sys; sys.exit(0) at-once", commands


@pytest.mark.parametrize("split", ["switches", "schedstat"])
def test_a_forked_child_leaving_by_os_exit_at_once_is_named(prog, run_ulma, report_json, tmp_path, split):
    """A forked child leaving by os._exit runs no stop, and is reaped before
    the monitor (stopped meanwhile) looks: its /proc/PID/cmdline is gone,
    but it wrote its name (its parent's command line, which it had) as its
    first thread attached, whatever splits the time."""
    trace = str(tmp_path / "fork_at_once.trace")
    proc = run_ulma(["run", "--summary", "none", "--split", split, "-o", trace, prog("follow_exit_at_once.py"),
                     "fork"])
    assert proc.returncode == 0, proc.stderr
    child, code = map(int, proc.stdout.split())
    assert code == 0
    data, _ = report_json(trace)
    commands = {t["pid"]: t.get("command") for t in data["thread_list"]}
    assert child in commands, commands  # it wrote before it left
    assert commands[child] == "follow_exit_at_once.py fork", commands
    assert all(commands.values()), commands  # every process named


@pytest.mark.parametrize("at_once", [False, True])
def test_a_chain_of_execs_is_named_by_its_last_program(prog, run_ulma, report_json, tmp_path, at_once):
    """A process that execs another Python program (which `python -c`
    execs again) is traced in each image and named by the program it runs
    last, the name `ps` shows; also when the whole chain ran while the
    monitor was stopped."""
    trace = str(tmp_path / "chain.trace")
    args = ["at-once"] if at_once else []
    proc = run_ulma(["run", "--summary", "none", "-o", trace, prog("follow_exec_chain.py")] + args)
    assert proc.returncode == 0, proc.stderr
    pid = int(proc.stdout.split()[0])
    data, _ = report_json(trace)
    threads = [t for t in data["thread_list"] if t["pid"] == pid]
    assert len(threads) == 3, data["thread_list"]  # each image's main thread wrote
    assert {t.get("command") for t in threads} == {"follow_exec_chain.py last" + "".join(" " + a for a in args)}, threads
    calls = {f["name"]: f["calls"] for f in data["functions"]}
    assert calls.get("step") == 2, calls  # the script's two images
