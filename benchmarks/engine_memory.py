"""Memory per rank of one training step: SAR vs SA vs halo vs single-process PyG.

For every world size P and mode this launches P real processes (mpiexec) on a partition of the
dense SBM (most of the graph is in every rank's halo) and measures, per rank:

* bytes saved for backward (``torch.autograd.graph.saved_tensors_hooks``, unique storages),
* peak RSS growth during one training step (``VmHWM`` after ``echo 5 > /proc/self/clear_refs``,
  glibc told to unmap large blocks on free so that RSS follows live memory),
* step time (median of the measured steps after warm-up; oversubscribed ranks on a small
  machine make this noisy, so it is reported but not the point of this script).

Usage::

    python benchmarks/engine_memory.py --world-sizes 1 2 4 --model sage
    python benchmarks/engine_memory.py --quick       # small graph, seconds

Results go to ``benchmarks/results/engine_memory_<model>.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

import pyg_sar

RESULTS = Path(__file__).resolve().parent / "results"
# A fixed mmap threshold makes glibc return every large block to the OS when it is freed, so
# RSS follows live memory instead of the allocator's cache of earlier steps.
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": "131072", "MALLOC_TRIM_THRESHOLD_": "131072"}


def _status_kb(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{key} not found in /proc/self/status")


def _reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")


def build_model(name: str, in_channels: int, classes: int, hidden: int, heads: int,
                layers: int) -> torch.nn.Module:
    """3-layer GraphSAGE or GAT with batch norm between layers, as in the SAR paper."""
    from torch_geometric.nn import GAT, GraphSAGE
    if name == "sage":
        return GraphSAGE(in_channels, hidden, layers, classes, norm="batch_norm")
    return GAT(in_channels, hidden * heads, layers, classes, heads=heads, norm="batch_norm")


def rank_step(ctx, parts: str, model: str, mode: str, hidden: int, heads: int, layers: int,
              warmup: int, repeats: int) -> dict:
    """Runs on every rank: warm up, then measure saved bytes, peak RSS growth and step time."""
    part = pyg_sar.load_partition(parts, ctx.rank)
    torch.manual_seed(0)
    net = build_model(model, part.x.shape[1], int(part.meta["num_classes"]), hidden, heads,
                      layers)
    if mode == "pyg":  # the plain single-process PyG reference (P = 1 only)
        if ctx.world_size != 1:
            raise ValueError("mode 'pyg' runs on one rank only")
        graph = part.global_edge_index()
    else:
        pyg_sar.convert(net, pyg_sar.SARConfig(mode=mode))
        pyg_sar.broadcast_parameters(net)
        graph = part.graph
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    x, y, mask = part.x, part.y, part.train_mask

    def step() -> None:
        opt.zero_grad()
        out = net(x, graph)
        loss = pyg_sar.nn.functional.cross_entropy(out, y, mask)
        loss.backward()
        pyg_sar.all_reduce_gradients(net)
        opt.step()

    for _ in range(warmup):
        step()
    # Bytes saved for backward: unique storages packed during one forward.
    storages: dict[int, int] = {}

    def pack(t: torch.Tensor, storages=storages) -> torch.Tensor:
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    opt.zero_grad()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = net(x, graph)
    pyg_sar.nn.functional.cross_entropy(out, y, mask).backward()
    del out
    saved = sum(storages.values())

    times, growth = [], []
    for _ in range(repeats):
        ctx.comm.barrier()
        _reset_peak()
        base = _status_kb("VmRSS")
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
        growth.append((_status_kb("VmHWM") - base) / 1024)
    return {"rank": ctx.rank, "saved_mb": saved / 2**20, "peak_growth_mb": max(growth),
            "step_s": statistics.median(times), "step_times_s": times,
            "num_nodes": part.num_nodes, "halo_rows": sum(part.graph.recv_counts),
            "threads": torch.get_num_threads()}


def main(argv: list[str] | None = None) -> int:
    from pyg_sar.datasets import sbm, sbm_dense
    from pyg_sar.testing import run_on_ranks

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--world-sizes", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--modes", nargs="+", default=["sar", "sa", "halo"])
    p.add_argument("--model", choices=("sage", "gat"), default="sage")
    p.add_argument("--hidden", type=int, default=None, help="default 256 (sage), 32 (gat)")
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="small SBM, for a smoke run")
    p.add_argument("--work", default="/tmp/pyg_sar_bench")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    hidden = args.hidden or (256 if args.model == "sage" else 32)

    data = (sbm(num_nodes=6000, num_edges=60_000, num_classes=8, homophily=0.2, seed=0)
            if args.quick else sbm_dense())
    graph_desc = f"SBM {data.num_nodes} nodes, {data.num_edges} edges"
    rows = []
    for world in args.world_sizes:
        parts = Path(args.work) / f"{'quick' if args.quick else 'dense'}-{world}"
        if not (parts / "meta.json").exists():
            pyg_sar.partition_graph(data, world, parts, method="metis", overwrite=True)
        modes = list(args.modes) + (["pyg"] if world == 1 else [])
        for mode in modes:
            kwargs = dict(parts=str(parts), model=args.model, mode=mode, hidden=hidden,
                          heads=args.heads, layers=args.layers, warmup=args.warmup,
                          repeats=args.repeats)
            res = run_on_ranks(f"{Path(__file__).resolve()}:rank_step", world, kwargs=kwargs,
                               timeout=3600, env=MALLOC_ENV)
            row = {"world_size": world, "mode": mode, "ranks": res,
                   "max_saved_mb": max(r["saved_mb"] for r in res),
                   "max_peak_growth_mb": max(r["peak_growth_mb"] for r in res),
                   "max_step_s": max(r["step_s"] for r in res)}
            rows.append(row)
            print(f"P={world} {mode:5s} saved/rank {row['max_saved_mb']:9.1f} MB  "
                  f"peak growth/rank {row['max_peak_growth_mb']:9.1f} MB  "
                  f"step {row['max_step_s']:7.2f} s", flush=True)
    out = Path(args.out) if args.out else RESULTS / f"engine_memory_{args.model}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps({"graph": graph_desc, "model": args.model, "hidden": hidden,
                               "heads": args.heads, "layers": args.layers,
                               "cpu_count": os.cpu_count(), "rows": rows}, indent=1))
    os.replace(tmp, out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
