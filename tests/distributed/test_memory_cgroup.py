"""Memory cgroups (``pyg_sar.testing.cgroup.MemoryCgroup``), the limit a process reads of its own
(``pyg_sar.distributed.memory.cgroup_limit``), and the witness naming a rank that the kernel's OOM
killer ended. Real cgroups, small limits (256 MiB): skipped where cgroups are not writable."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pyg_sar.distributed import memory
from pyg_sar.distributed.witness_link import Witness
from pyg_sar.testing.cgroup import MemoryCgroup, parse_size, unavailable_reason

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 256 << 20
HANG_S = 60.0
needs_cgroups = pytest.mark.skipif(unavailable_reason() is not None,
                                   reason=f"memory cgroups unavailable: {unavailable_reason()}")


@pytest.mark.parametrize("size, want", [(3 << 30, 3 << 30), ("3G", 3 << 30), ("512M", 512 << 20),
                                        ("1.5GiB", 3 << 29), ("2048k", 2 << 20)])
def test_parse_size(size, want):
    assert parse_size(size) == want


@pytest.mark.parametrize("size", ["3 potatoes", "-1G", "", 1000, True, None, 1.5e9])
def test_parse_size_refuses(size):
    with pytest.raises(ValueError, match="memory size"):
        parse_size(size)


def test_bad_name_refused_before_anything_is_made():
    with pytest.raises(ValueError, match="name"):
        MemoryCgroup("a/b", "1G")


def test_no_controller_is_a_runtime_error_naming_the_path(tmp_path):
    with pytest.raises(RuntimeError, match=str(tmp_path)):
        MemoryCgroup("x", "1G", root=tmp_path)


def _in_cgroup(cg: MemoryCgroup, code: str, *args: str) -> subprocess.CompletedProcess:
    """``python -c code args`` as a member of ``cg`` from its first instruction."""
    return subprocess.run(
        ["sh", "-c", f'echo $$ > {cg.procs_file} && exec "$@"', "_", sys.executable, "-c",
         textwrap.dedent(code), *args], capture_output=True, text=True, timeout=HANG_S,
        cwd=ROOT)


@needs_cgroups
def test_limit_peak_and_oom_kill_counted():
    with MemoryCgroup("pyg_sar-test", LIMIT) as cg:
        assert cg.path.is_dir() and cg.oom_kills() == 0
        seen = _in_cgroup(cg, """
            import json
            from pyg_sar.distributed.memory import cgroup_limit
            lim = cgroup_limit()
            print(json.dumps([lim.limit_bytes, lim.cgroup, lim.own, lim.oom_kills()]))
            """)
        assert seen.returncode == 0, seen.stderr
        assert json.loads(seen.stdout) == [LIMIT, str(cg.path), str(cg.path), 0]
        small = cg.peak()
        assert 0 < small < LIMIT
        # 64 MiB held, then 2x the limit: the OOM killer ends it with SIGKILL, counted.
        out = _in_cgroup(cg, """
            import sys
            held = bytearray(64 << 20)
            print("held", flush=True)
            more = bytearray(2 * int(sys.argv[1]))
            print("never")
            """, str(LIMIT))
        assert out.returncode == -9, (out.returncode, out.stderr)
        assert out.stdout.split() == ["held"]
        assert cg.oom_kills() == 1
        assert 64 << 20 < cg.peak() <= LIMIT
        assert cg.pids() == []
        path = cg.path
    assert not path.exists()


@needs_cgroups
def test_close_kills_members_and_removes_the_cgroup():
    cg = MemoryCgroup("pyg_sar-test", LIMIT)
    proc = subprocess.Popen(["sleep", "600"])
    try:
        cg.add(proc.pid)
        assert cg.pids() == [proc.pid]
        cg.close()
        assert proc.wait(timeout=HANG_S) == -9
        assert not cg.path.exists()
        cg.close()  # idempotent
        with pytest.raises(RuntimeError, match="already removed"):
            cg.add(proc.pid)
    finally:
        proc.kill()
        cg.close()


RANK0 = """
import json, sys
from pyg_sar.distributed.witness_link import Witness
peer, out, how = sys.argv[1], sys.argv[2], sys.argv[3]
with open(out, "wb") as err:
    w = Witness(0, options={"cleanup_s": 600.0}, stderr=err)
w.send({"hub": ["127.0.0.1", int(sys.argv[5])]})  # a failure hub on "another host"
w.send({"op": "all_to_all"})
w.link({0: w.token, 1: peer}, timeout=60)
print(w.token, flush=True)
sys.stdin.readline()  # rank 1 has linked
if how == "oom":
    hog = bytearray(4 * int(sys.argv[4]))
import os, signal
os.kill(os.getpid(), signal.SIGKILL)
"""


@needs_cgroups
@pytest.mark.parametrize("how", ["oom", "sigkill"])
def test_witness_names_an_oom_kill(how, tmp_path):
    """Rank 0 (a process in a 256 MiB cgroup, its witness too) allocates past the limit; rank 1
    (this process, its witness outside) ends after it. Rank 0's witness says the OOM killer
    ended it, naming the host, limit and cgroup; rank 1's repeats the cause; and rank 0's failure
    hub (this process here; on another host in a job) is told the same, so that it can relay it
    to ranks that no witness of this host reaches. A plain SIGKILL in the same cgroup is told
    as before."""
    hub = socket.create_server(("127.0.0.1", 0))
    hub.settimeout(HANG_S)
    with hub, MemoryCgroup("pyg_sar-test", LIMIT) as cg:
        w1 = Witness(1, options={"cleanup_s": 600.0}, stderr=subprocess.PIPE)
        out0 = tmp_path / "witness0.err"
        rank0 = subprocess.Popen(
            ["sh", "-c", f'echo $$ > {cg.procs_file} && exec "$@"', "_", sys.executable, "-c",
             RANK0, w1.token, str(out0), how, str(LIMIT), str(hub.getsockname()[1])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT, text=True)
        token0 = rank0.stdout.readline().strip()
        assert token0, "rank 0 did not start"
        w1.link({0: token0, 1: w1.token}, timeout=HANG_S)
        w1.send({"op": "irecv from rank 0"})
        rank0.stdin.write("go\n")
        rank0.stdin.flush()
        assert rank0.wait(timeout=HANG_S) == -9
        assert cg.oom_kills() == (1 if how == "oom" else 0)
        conn, _ = hub.accept()
        with conn, conn.makefile("r") as lines:
            why = json.loads(lines.readline())
        w1.close(clean=False)
        _, err1 = w1.process.communicate(timeout=HANG_S)
        for _ in range(int(HANG_S / 0.05)):  # rank 0's witness has its own session
            if not cg.pids():
                break
            time.sleep(0.05)
        said0, said1 = out0.read_text().strip(), err1.decode().strip()
    host = memory.hostname()
    if how == "oom":
        limit = f"memory limit 0.25 GiB of cgroup {cg.path}"
        assert said0 == (f"pyg_sar: rank 0 on host {host} was killed by the kernel's OOM killer "
                         f"({limit}) in all_to_all")
        assert said1 == (f"pyg_sar: rank 1 stops: rank 0 failed in all_to_all: killed by the "
                         f"kernel's OOM killer on host {host} ({limit})")
        assert why == {"type": "why", "rank": 0, "op": "all_to_all",
                       "error": f"killed by the kernel's OOM killer on host {host} ({limit})"}
    else:
        killed = "its process exited or was killed (connection closed without a clean shutdown)"
        assert said0 == f"pyg_sar: rank 0 failed in all_to_all: {killed}"
        assert said1 == f"pyg_sar: rank 1 stops: rank 0 failed in all_to_all: {killed}"
        assert why == {"type": "why", "rank": 0, "op": "all_to_all", "error": killed}
