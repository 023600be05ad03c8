"""Stress: memory stays flat over a long run, and init/shutdown cycles leak nothing.

    python benchmarks/stress.py                       # full: 300 epochs, P = 4, 50 cycles
    python benchmarks/stress.py --epochs 40 --cycles 10 --world-size 2   # quick look

Part 1 trains a converted GraphSAGE full-batch on a partitioned SBM graph under mpiexec and
records every rank's resident set size (VmRSS) after each epoch; after warm-up (the first
``--warmup`` epochs) the RSS of every rank must stay within 5 % of its post-warm-up value.
Part 2 runs ``--cycles`` rounds of ``pyg_sar.shutdown(); pyg_sar.init(); all_reduce`` in one
process per rank (mpi backend under mpiexec, gloo with plain processes) and records RSS, open
file descriptors and threads after each round: none may grow after the first rounds.
Writes ``benchmarks/results/stress.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = os.path.abspath(__file__)
sys.path.insert(0, str(Path(HERE).resolve().parents[1]))


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return -1


def long_run(ctx, parts: str, epochs: int) -> dict:
    """One rank of part 1: RSS (KiB) after every epoch."""
    import torch
    from torch_geometric.nn import GraphSAGE

    import pyg_sar
    from pyg_sar.nn.functional import cross_entropy
    part = pyg_sar.load_partition(parts, ctx.rank)
    torch.manual_seed(0)
    model = pyg_sar.convert(GraphSAGE(part.x.shape[1], 64, 2, int(part.meta["num_classes"]),
                                      dropout=0.5))
    pyg_sar.broadcast_parameters(model)
    torch.manual_seed(1 + ctx.rank)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    rss, times = [], []
    for _ in range(epochs):
        t = time.perf_counter()
        model.train()
        optimizer.zero_grad()
        loss = cross_entropy(model(part.x, part.graph), part.y, part.train_mask)
        loss.backward()
        pyg_sar.all_reduce_gradients(model)
        optimizer.step()
        model.eval()
        with torch.no_grad():
            model(part.x, part.graph)
        times.append(time.perf_counter() - t)
        rss.append(_status("VmRSS"))
    return {"rss_kib": rss, "epoch_s": times, "final_loss": float(loss)}


def _resources() -> dict:
    return {"rss_kib": _status("VmRSS"), "fds": len(os.listdir("/proc/self/fd")),
            "threads": _status("Threads")}


def init_cycles(ctx, cycles: int) -> list[dict]:
    """One rank of part 2: resources after each shutdown/init round."""
    import torch

    import pyg_sar
    backend, out = ctx.backend, []
    for _ in range(cycles):
        pyg_sar.shutdown()
        ctx = pyg_sar.init(backend=backend)
        t = torch.full((1000,), float(ctx.rank))
        ctx.comm.all_reduce(t)
        assert t[0] == sum(range(ctx.world_size))
        out.append(_resources())
    return out


def growth(series: list[float], warmup: int) -> float:
    """Relative growth of the series after ``warmup`` points: (max - base) / base."""
    tail = series[warmup:]
    base = tail[0]
    return (max(tail) - base) / base if base else 0.0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--world-size", type=int, default=4)
    p.add_argument("--epochs", type=int, default=300)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--cycles", type=int, default=50)
    p.add_argument("--nodes", type=int, default=20000)
    p.add_argument("--out", default=str(Path(HERE).parent / "results" / "stress.json"))
    args = p.parse_args(argv)

    from pyg_sar.datasets.synthetic_sbm import sbm
    from pyg_sar.partition import partition_graph
    from pyg_sar.testing import run_on_ranks
    report: dict = {"world_size": args.world_size, "epochs": args.epochs,
                    "warmup": args.warmup, "cycles": args.cycles}
    with tempfile.TemporaryDirectory() as tmp:
        data = sbm(num_nodes=args.nodes, seed=0)
        report["graph"] = {"nodes": int(data.num_nodes), "edges": int(data.num_edges)}
        parts = partition_graph(data, args.world_size, Path(tmp) / "parts", method="metis",
                                balance="nodes")  # as the results were made
        t = time.perf_counter()
        ranks = run_on_ranks(f"{HERE}:long_run", args.world_size, launcher="mpiexec",
                             kwargs={"parts": str(parts), "epochs": args.epochs}, timeout=7200)
        report["long_run_wall_s"] = round(time.perf_counter() - t, 1)
    report["long_run"] = [{
        "rank": r, "rss_mib_after_warmup": round(res["rss_kib"][args.warmup] / 1024, 1),
        "rss_mib_final": round(res["rss_kib"][-1] / 1024, 1),
        "rss_mib_max": round(max(res["rss_kib"][args.warmup:]) / 1024, 1),
        "growth_after_warmup": round(growth(res["rss_kib"], args.warmup), 4),
        "median_epoch_s": round(sorted(res["epoch_s"])[len(res["epoch_s"]) // 2], 4),
        "final_loss": round(res["final_loss"], 4)} for r, res in enumerate(ranks)]
    report["rss_flat_within_5pct"] = all(r["growth_after_warmup"] <= 0.05
                                         for r in report["long_run"])

    report["init_cycles"] = {}
    for launcher, backend in (("mpiexec", "mpi"), ("spawn", "gloo")):
        ranks = run_on_ranks(f"{HERE}:init_cycles", 2, launcher=launcher, backend=backend,
                             kwargs={"cycles": args.cycles}, timeout=1800)
        first = min(5, args.cycles - 1)
        report["init_cycles"][backend] = [{
            "rank": r,
            "fds": [res[first]["fds"], res[-1]["fds"]],
            "threads": [res[first]["threads"], res[-1]["threads"]],
            "rss_mib": [round(res[first]["rss_kib"] / 1024, 1),
                        round(res[-1]["rss_kib"] / 1024, 1)],
            "rss_growth_after_5": round(growth([x["rss_kib"] for x in res], first), 4),
        } for r, res in enumerate(ranks)]
    report["init_cycles_leak_free"] = all(
        c["fds"][1] <= c["fds"][0] and c["threads"][1] <= c["threads"][0]
        and c["rss_growth_after_5"] <= 0.05
        for per_backend in report["init_cycles"].values() for c in per_backend)

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = out.with_name(out.name + ".tmp")
    tmp_out.write_text(json.dumps(report, indent=1) + "\n")
    os.replace(tmp_out, out)
    print(json.dumps(report, indent=1))
    return 0 if report["rss_flat_within_5pct"] and report["init_cycles_leak_free"] else 1


if __name__ == "__main__":
    sys.exit(main())
