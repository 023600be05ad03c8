"""Without the atexit shutdown hook, gloo aborts about one run in ten to three at interpreter
exit ("terminate called without an active exception"). 30 minimal 2-rank gloo jobs (no PyG
import) must all exit 0 with no "terminate" in stderr."""
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

RUNS = 30
PARALLEL_JOBS = 2  # jobs in flight at once (each has 2 ranks)
ROOT = str(Path(__file__).resolve().parents[2])
RANK_CODE = """
import torch, pyg_sar
ctx = pyg_sar.init(backend="gloo", timeout=60)
t = torch.ones(4)
ctx.comm.all_reduce(t)
peer = 1 - ctx.rank
buf = torch.empty(3)
recv = ctx.comm.irecv(buf, peer, tag=1)
ctx.comm.isend(torch.full((3,), float(ctx.rank)), peer, tag=1).wait()
recv.wait()
assert t[0] == 2 and buf[0] == peer and "torch_geometric" not in __import__("sys").modules
"""


def _start_job() -> list[subprocess.Popen]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for rank in range(2):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "OMPI_"))}
        env.update(RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), LOCAL_RANK=str(rank), OMP_NUM_THREADS="1",
                   PYTHONPATH=os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p))
        procs.append(subprocess.Popen([sys.executable, "-c", RANK_CODE], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    return procs


def test_30_gloo_runs_exit_cleanly():
    start = time.monotonic()
    failures, done, running = [], 0, []
    while done < RUNS:
        while len(running) < PARALLEL_JOBS and done + len(running) < RUNS:
            running.append(_start_job())
        job = running.pop(0)
        for rank, p in enumerate(job):
            _, err = p.communicate(timeout=120)
            if p.returncode != 0 or "terminate" in err:
                failures.append(f"run {done} rank {rank}: exit {p.returncode}: {err[-500:]}")
        done += 1
    print(f"\n{RUNS} 2-rank gloo runs: {time.monotonic() - start:.1f} s wall")
    assert not failures, "\n".join(failures)
