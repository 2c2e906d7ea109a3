"""Two MPI ranks on two "hosts" (docs/mpi.md): network namespaces made by
the test, joined by veth pairs to a bridge, each with its own host name
(a UTS namespace).  Open MPI starts one daemon per host through its rsh
launcher (the agent below enters the host's namespaces instead of ssh)
and the ranks talk over TCP between the namespaces.  Each rank's trace is
written where it ran; the merge must name both hosts and match every
message.  Needs root, iproute2 and unshare; skipped otherwise.
"""
import json
import os
import shutil
import subprocess

import pytest

from conftest import base_env

HERE = os.path.dirname(os.path.abspath(__file__))
MPI_PROGRAMS = os.path.join(HERE, "..", "mpi")
NET = "10.77.%d" % (os.getpid() % 200 + 10)

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0 or not all(shutil.which(t) for t in ("mpirun", "mpicc", "ip", "unshare")),
                       reason="needs root, Open MPI, iproute2 and unshare"),
    pytest.mark.once("C ranks under ulma run, and ulma merge: no Python involved"),
]

AGENT = """#!/bin/sh
# Open MPI's rsh agent: HOST CMD... runs CMD on the "host", a network namespace
host=$1; shift
case $host in %(net)s.1) ns=%(a)s ;; %(net)s.2) ns=%(b)s ;; *) echo "unknown host $host" >&2; exit 1 ;; esac
exec ip netns exec $ns unshare --uts sh -c "hostname $ns && $*"
"""


def sh(*argv):
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@pytest.fixture
def two_hosts(tmp_path):
    tag = "%d" % (os.getpid() % 100000)
    br, hosts = "ulbr" + tag, ["ulma-%s-%s" % (tag, h) for h in "ab"]
    made = []
    try:
        sh("ip", "link", "add", br, "type", "bridge")
        made.append(("link", br))
        sh("ip", "addr", "add", NET + ".254/24", "dev", br)
        sh("ip", "link", "set", br, "up")
        for i, ns in enumerate(hosts, 1):
            sh("ip", "netns", "add", ns)
            made.append(("netns", ns))
            outer, inner = "ul%s%so" % (tag, "ab"[i - 1]), "ul%s%si" % (tag, "ab"[i - 1])
            sh("ip", "link", "add", outer, "type", "veth", "peer", "name", inner)
            made.append(("link", outer))
            sh("ip", "link", "set", outer, "master", br)
            sh("ip", "link", "set", outer, "up")
            sh("ip", "link", "set", inner, "netns", ns)
            sh("ip", "-n", ns, "addr", "add", "%s.%d/24" % (NET, i), "dev", inner)
            sh("ip", "-n", ns, "link", "set", inner, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        agent = tmp_path / "agent.sh"
        agent.write_text(AGENT % {"net": NET, "a": hosts[0], "b": hosts[1]})
        agent.chmod(0o755)
        hostfile = tmp_path / "hosts"
        hostfile.write_text("%s.1 slots=1\n%s.2 slots=1\n" % (NET, NET))
        yield hosts, str(agent), str(hostfile)
    finally:
        for kind, name in reversed(made):
            subprocess.run(["ip", kind, "del", name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_ranks_on_two_hosts_over_tcp(two_hosts, tmp_path, ulma_bin):
    hosts, agent, hostfile = two_hosts
    prog = str(tmp_path / "pingpong")
    subprocess.run(["mpicc", "-O1", os.path.join(MPI_PROGRAMS, "pingpong.c"), "-o", prog], check=True)
    out = str(tmp_path / "traces")
    argv = ["mpirun", "--allow-run-as-root", "--hostfile", hostfile, "--mca", "plm_rsh_agent", agent,
            "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", NET + ".0/24",
            "--mca", "oob_tcp_if_include", NET + ".0/24", "-n", "2",
            ulma_bin, "run", "--no-live", "--summary", "none", "-o", out, prog]
    p = subprocess.run(argv, cwd=str(tmp_path), env=base_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    assert b"ranks 2" in p.stdout
    merged = str(tmp_path / "all.trace")
    m = subprocess.run([ulma_bin, "merge", out, "-o", merged], env=base_env(), stderr=subprocess.PIPE)
    assert m.returncode == 0, m.stderr.decode()
    rep = subprocess.run([ulma_bin, "report", merged, "--format", "json"], env=base_env(), stdout=subprocess.PIPE,
                         check=True)
    d = json.loads(rep.stdout)
    assert sorted(r["host"] for r in d["ranks"]) == sorted(hosts)
    msgs = [m for m in d["messages"] if m["tag"] in (7, 8) and m["comm"] == 0]
    assert len(msgs) == 20 and d["unmatched"] == []
    assert all(m["recv_ns"] > m["send_ns"] for m in d["messages"])
