"""Exchange time through pyg_sar's MPI communicator vs blocking mpi4py calls, P = 2.

    python benchmarks/comm_wait.py                      # one host (MPICH shared memory)
    python benchmarks/comm_wait.py --netns              # two network-namespace hosts (TCP)
    python benchmarks/comm_wait.py --out benchmarks/results/comm_wait.json

MPICH moves a large message only inside MPI calls (no progress thread), so how a rank waits
for a request decides how fast data moves: the communicator's ``Work.wait`` is measured
against mpi4py's blocking call on the same bytes (the best the library can do in one call):
point-to-point (isend/irecv vs ``Sendrecv``), all-to-all (``all_to_all_single``, halo mode and
sampling, vs ``Alltoallv``) and all-reduce (gradient buckets, vs ``Allreduce``). Non-blocking
collectives advance one step of their schedule per ``MPI_Test``, so they show the waiting
strategy most. Median of ``--repeats`` after a warm-up; one thread per rank.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

SIZES = [65_536, 1 << 20, 16 << 20, 64 << 20]


def _cases(comm, world, MPI, peer, send, recv, floats) -> dict:
    """Each operation as ``(ours, blocking mpi4py)`` callables."""
    half = send.numel() // 2
    counts, displs = [half, half], [0, half]
    def p2p():
        for w in (comm.irecv(recv, peer, tag=7), comm.isend(send, peer, tag=7)):
            w.wait()
    return {
        "p2p": (p2p, lambda: world.Sendrecv([send.numpy(), MPI.BYTE], dest=peer, sendtag=8,
                                            recvbuf=[recv.numpy(), MPI.BYTE], source=peer,
                                            recvtag=8)),
        "all_to_all": (lambda: comm.all_to_all_single(recv, send),
                       lambda: world.Alltoallv([send.numpy(), (counts, displs), MPI.BYTE],
                                               [recv.numpy(), (counts, displs), MPI.BYTE])),
        "all_reduce": (lambda: comm.all_reduce(floats),
                       lambda: world.Allreduce(MPI.IN_PLACE, [floats.numpy(), MPI.FLOAT],
                                               MPI.SUM)),
    }


def worker(repeats: int, out: str) -> None:
    import torch
    from mpi4py import MPI

    import pyg_sar
    ctx = pyg_sar.init(backend="mpi")
    comm = ctx.comm
    peer = 1 - ctx.rank
    rows = []
    def timed(fn) -> float:
        comm.barrier()
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t

    world = MPI.COMM_WORLD
    for size in SIZES:
        send = torch.full((size,), ctx.rank + 1, dtype=torch.uint8)
        recv = torch.empty(size, dtype=torch.uint8)
        floats = torch.ones(size // 4, dtype=torch.float32)
        cases = _cases(comm, world, MPI, peer, send, recv, floats)
        for name, (ours, raw) in cases.items():
            times = {"ours": [], "raw": []}
            for rep in range(repeats + 1):  # the first round warms up
                t_ours, t_raw = timed(ours), timed(raw)
                if rep:
                    times["ours"].append(t_ours)
                    times["raw"].append(t_raw)
            for how, ts in times.items():
                worst = max(comm.allgather_object(statistics.median(ts)))
                rows.append(dict(bytes=size, op=name, how=how, median_s=worst,
                                 gbit_s=size * 8 / worst / 1e9))
    if ctx.rank == 0:
        Path(out).write_text(json.dumps(rows))


def table(res: dict) -> str:
    lines = [f"{res['where']}; {res['machine']}; median of {res['repeats']} after a warm-up",
             "", "| operation | bytes per rank | pyg_sar (Work.wait) | blocking mpi4py call "
             "| ratio |", "|---|---|---|---|---|"]
    by = {(r["op"], r["bytes"], r["how"]): r for r in res["rows"]}
    for op in dict.fromkeys(r["op"] for r in res["rows"]):
        for size in sorted({r["bytes"] for r in res["rows"] if r["op"] == op}):
            ours, raw = by[(op, size, "ours")], by[(op, size, "raw")]
            lines.append(f"| {op} | {size / 2**20:.2f} MiB | {ours['median_s'] * 1e3:.2f} ms | "
                         f"{raw['median_s'] * 1e3:.2f} ms | "
                         f"{ours['median_s'] / raw['median_s']:.2f}x |")
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--netns", action="store_true", help="the two ranks on namespace hosts")
    p.add_argument("--out", default=None)
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args.repeats, args.worker)
        return
    from pyg_sar.testing.launcher import find_mpiexec
    from pyg_sar.testing.netns import MPI_ENV, NetnsHosts
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        result = str(Path(tmp) / "rows.json")
        argv = [sys.executable, __file__, "--repeats", str(args.repeats), "--worker", result]
        if args.netns:
            with NetnsHosts(2) as hosts:
                subprocess.run(hosts.mpiexec_command(argv), env={**env, **MPI_ENV},
                               check=True, timeout=1200)
            where = "2 namespace hosts, TCP over a veth link (unlimited)"
        else:
            subprocess.run([find_mpiexec(), "-n", "2", *argv], env=env, check=True,
                           timeout=1200)
            where = "one host, MPICH shared memory"
        rows = json.loads(Path(result).read_text())
    import torch
    res = dict(where=where, machine=f"{os.cpu_count()} CPU cores, {platform.machine()}, torch "
               f"{torch.__version__}, load average {os.getloadavg()[0]:.1f}", rows=rows,
               repeats=args.repeats)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        tmp_out = Path(args.out).with_suffix(".tmp")
        tmp_out.write_text(json.dumps(res, indent=1))
        os.replace(tmp_out, args.out)
    print(table(res))


if __name__ == "__main__":
    main()
