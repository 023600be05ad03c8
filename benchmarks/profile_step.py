"""Where does a training step's time go? torch.profiler over one step, per rank.

    python benchmarks/profile_step.py --model sage --mode sar --world-size 1 \
        [--nodes 60000 --edges 550000]

Prints the top operators by self CPU time of rank 0 and writes
``benchmarks/results/profile_<model>_<mode>_p<P>.json`` (the top rows and the step times).
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from procmem import MALLOC_ENV  # noqa: E402 (benchmarks/procmem.py)

import pyg_sar  # noqa: E402


def rank_profile(ctx, parts: str, model: str, mode: str, repeats: int = 5,
                 top: int = 25) -> dict:
    """Warm up, time ``repeats`` steps, then profile one more."""
    sys.path.insert(0, str(HERE))
    from suite import build_model
    part = pyg_sar.load_partition(parts, ctx.rank)
    x, y, mask = part.x, part.y, part.train_mask
    torch.manual_seed(0)
    net = build_model(model, x.shape[1], int(part.meta["num_classes"]))
    if mode == "pyg":
        graph = part.global_edge_index()
    else:
        pyg_sar.convert(net, pyg_sar.SARConfig(mode=mode))
        graph = part.graph
    opt = torch.optim.Adam(net.parameters(), lr=0.01)

    def step() -> None:
        opt.zero_grad()
        pyg_sar.nn.functional.cross_entropy(net(x, graph), y, mask).backward()
        pyg_sar.all_reduce_gradients(net)
        opt.step()

    step()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        step()
    avg = prof.key_averages()
    rows = sorted(avg, key=lambda e: e.self_cpu_time_total, reverse=True)[:top]
    table = [{"name": e.key, "self_ms": e.self_cpu_time_total / 1e3,
              "total_ms": e.cpu_time_total / 1e3, "calls": e.count} for e in rows]
    return {"rank": ctx.rank, "step_s": statistics.median(times), "times_s": times,
            "top": table}


def main(argv: list[str] | None = None) -> int:
    from pyg_sar.datasets import sbm
    from pyg_sar.testing import run_on_ranks

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="sage", choices=("sage", "gat"))
    p.add_argument("--mode", default="sar", choices=("sar", "sa", "halo", "pyg"))
    p.add_argument("--world-size", type=int, default=1)
    p.add_argument("--nodes", type=int, default=60_000)
    p.add_argument("--edges", type=int, default=550_000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--tag", default="")
    p.add_argument("--work", default="/tmp/pyg_sar_bench")
    args = p.parse_args(argv)
    parts = Path(args.work) / f"prof-{args.nodes}-{args.edges}-{args.world_size}"
    if not (parts / "meta.json").exists():
        data = sbm(num_nodes=args.nodes, num_edges=args.edges, num_classes=16, homophily=0.2,
                   seed=0)
        pyg_sar.partition_graph(data, args.world_size, parts, method="metis", overwrite=True,
                                balance="nodes")  # as the results were made
    res = run_on_ranks(f"{Path(__file__).resolve()}:rank_profile", args.world_size,
                       kwargs=dict(parts=str(parts), model=args.model, mode=args.mode,
                                   repeats=args.repeats), timeout=3600,
                       env={**MALLOC_ENV, "OMP_NUM_THREADS": "1"})
    r0 = res[0]
    print(f"step median {r0['step_s']:.3f} s  {' '.join(f'{t:.3f}' for t in r0['times_s'])}")
    for e in r0["top"]:
        print(f"{e['self_ms']:9.1f} ms self {e['total_ms']:9.1f} ms total "
              f"{e['calls']:6d} calls  {e['name']}")
    out = HERE / "results" / f"profile_{args.model}_{args.mode}_p{args.world_size}{args.tag}.json"
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps({"args": vars(args), "ranks": res}, indent=1))
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
