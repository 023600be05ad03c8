"""Node- vs edge-balanced partitions: balance, edge cut, halo and the slowest rank's step.

    python benchmarks/partition_balance.py --graphs rmat_262k --worlds 2 4 8      # one graph
    python benchmarks/partition_balance.py --report                              # md + plot

For every (graph, P, partitioner, balance) this partitions the graph with
``pyg_sar.partition_graph(..., balance=)`` and records, from the partition's ``meta.json``
balance block, the nodes / in-edges / halo rows / send rows per part (max, mean, max/mean),
the edge cut (and as a fraction of the edges) and the time to partition and write. For the
graphs in :data:`TRAIN` it then runs one launch of P ranks (backend gloo, so a rank waiting for
a peer sleeps instead of spinning; ``torch.set_num_threads(1)``) that trains a 3-layer
GraphSAGE 256 with batch norm (``benchmarks/suite.py``'s ``build_model`` and
``training_step``): 2 warm-up steps, then 5 measured; per rank the main thread's CPU time of a
step (``time.thread_time()``, median), the wall time, the peak RSS (``benchmarks/procmem.py``)
and the engine's bytes sent. The machine has 2 cores: at P = 4 and 8 the ranks share them, so
wall time is oversubscribed there and the CPU time of the slowest rank is the figure to read.

Results go to ``benchmarks/results/partition_balance.json`` (written after every run,
atomically, so an interrupted run keeps what it measured; existing entries are skipped unless
``--force``), ``.md`` and ``.png`` (``--report``).
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from procmem import MALLOC_ENV, reset_peak, status_kib  # noqa: E402

from pyg_sar.files import atomic_write  # noqa: E402

RESULTS = HERE / "results"
OUT = RESULTS / "partition_balance.json"
TRAIN = ("rmat_262k", "sbm_dense", "rmat_small")
BALANCES = ("nodes", "edges")
RANK_ENV = {**MALLOC_ENV, "OMP_NUM_THREADS": "1"}


def graphs() -> dict:
    """name -> (description, factory)."""
    from pyg_sar.datasets import rmat, sbm_dense
    return {
        "rmat_262k": ("R-MAT, 262,144 nodes, 2,097,152 edges requested (seed 0)",
                      lambda: rmat(262_144, 2_097_152, seed=0)),
        "sbm_dense": ("dense SBM, 120,000 nodes, 1,100,000 edges (80% across communities)",
                      sbm_dense),
        "rmat_small": ("R-MAT, 16,384 nodes, 131,072 edges requested (smoke test)",
                       lambda: rmat(16_384, 131_072, seed=0)),
        "rmat_20m": ("R-MAT, 1,000,000 nodes, 20M edges (/work/bench_data/rmat_20m)",
                     _rmat_20m),
    }


def _rmat_20m():
    """The on-disk 1M / 20M R-MAT graph of benchmarks/make_rmat_source.py as a ``Data``."""
    import numpy as np
    import torch
    from torch_geometric.data import Data
    src = Path(os.environ.get("RMAT_20M", "/work/bench_data/rmat_20m"))
    if not (src / "source.json").is_file():
        raise ValueError(f"rmat_20m: {src}/source.json not found (run "
                         "benchmarks/make_rmat_source.py first)")
    arrays = {k: torch.from_numpy(np.load(src / f"{k}.npy"))
              for k in ("edge_index", "x", "y", "train_mask", "val_mask", "test_mask")}
    return Data(**arrays, num_nodes=int(arrays["x"].shape[0]))


# --------------------------------------------------------------------------- per rank
def rank_step(ctx, parts: str, warmup: int = 2, repeats: int = 5) -> dict:
    """Runs on every rank: SAGE 3 x 256 (batch norm), mode sar, on this rank's part."""
    import torch
    from suite import build_model, training_step  # benchmarks/suite.py

    import pyg_sar
    torch.set_num_threads(1)
    gc.collect()
    rss_start = status_kib("VmRSS") / 1024
    part = pyg_sar.load_partition(parts, ctx.rank)
    gc.collect()
    rss_loaded = status_kib("VmRSS") / 1024
    x, y, mask = part.x, part.y, part.train_mask
    torch.manual_seed(0)
    net = build_model("sage", x.shape[1], int(part.meta["num_classes"]))
    pyg_sar.convert(net, pyg_sar.SARConfig(mode="sar"))
    pyg_sar.broadcast_parameters(net)
    opt = torch.optim.Adam(net.parameters(), lr=0.01)

    def loss_of(out):
        return pyg_sar.nn.functional.cross_entropy(out, y, mask)

    step = training_step(net, lambda: net(x, part.graph), loss_of, opt, ctx.comm)
    for _ in range(warmup):
        step()
    cpu, wall, growth, peak, sent = [], [], [], [], []
    for _ in range(repeats):
        ctx.comm.barrier()
        gc.collect()
        reset_peak()
        base = status_kib("VmRSS")
        c, t = time.thread_time(), time.perf_counter()
        info = step()
        wall.append(time.perf_counter() - t)
        cpu.append(time.thread_time() - c)
        hwm = status_kib("VmHWM")
        growth.append((hwm - base) / 1024)
        peak.append(hwm / 1024)
        sent.append(info["bytes_sent"])
    return {"rank": ctx.rank, "cpu_s": statistics.median(cpu), "cpu_all_s": cpu,
            "wall_s": statistics.median(wall), "wall_all_s": wall,
            "peak_rss_mb": max(peak), "peak_growth_mb": max(growth),
            "rss_start_mb": rss_start, "rss_loaded_mb": rss_loaded,
            "bytes_sent": statistics.median(sent), "num_nodes": part.num_nodes,
            "num_edges": part.num_edges, "halo_rows": sum(part.graph.recv_counts),
            "threads": torch.get_num_threads()}


# --------------------------------------------------------------------------- driver
def _load() -> dict:
    if OUT.exists():
        return json.loads(OUT.read_text())
    return {"graphs": {}, "runs": []}


def _save(res: dict) -> None:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(OUT, json.dumps(res, indent=1))


def _stats(meta: dict) -> dict:
    b = meta["balance"]
    cut, e = int(meta["edge_cut"]), int(meta["num_edges"])
    return {"partitioner": b["partitioner"], "ubvec": b.get("ubvec"),
            "lower_bound_in_edges": b.get("lower_bound_in_edges"),
            **{k: b[k] for k in ("nodes", "in_edges", "halo_rows", "send_rows")},
            "edge_cut": cut, "cut_fraction": cut / e if e else 0.0,
            "part_num_nodes": meta["part_num_nodes"], "part_num_edges": meta["part_num_edges"],
            "part_halo_rows": [sum(p["recv_counts"]) for p in meta["parts"]],
            "part_send_rows": [sum(p["send_counts"]) for p in meta["parts"]]}


def run(names: list[str], worlds: list[int], balances: list[str], work: Path, train: bool,
        force: bool, warmup: int, repeats: int, keep: bool) -> None:
    import shutil

    import pyg_sar
    from pyg_sar.testing import run_on_ranks
    res = _load()
    for name in names:
        desc, factory = graphs()[name]
        data = None
        for world in worlds:
            for balance in balances:
                key = dict(graph=name, P=world, method="metis", balance=balance)
                old = [r for r in res["runs"] if all(r.get(k) == v for k, v in key.items())]
                want_train = train and name in TRAIN
                if old and not force and (not want_train or "ranks" in old[0]):
                    print(f"{key}: have it", flush=True)
                    continue
                if data is None:
                    t = time.perf_counter()
                    data = factory()
                    res["graphs"][name] = {"description": desc,
                                           "num_nodes": int(data.num_nodes),
                                           "num_edges": int(data.edge_index.shape[1])}
                    print(f"{name}: built in {time.perf_counter() - t:.1f} s", flush=True)
                parts = work / f"{name}-metis-{balance}-{world}"
                t = time.perf_counter()
                pyg_sar.partition_graph(data, world, parts, method="metis", balance=balance,
                                        overwrite=True)
                row = {**key, "partition_s": time.perf_counter() - t}
                row.update(_stats(json.loads((parts / "meta.json").read_text())))
                print(f"{key}: partitioned in {row['partition_s']:.1f} s, in-edges max/mean "
                      f"{row['in_edges']['max_over_mean']:.3f}, cut {row['cut_fraction']:.3f}",
                      flush=True)
                if want_train:
                    t = time.perf_counter()
                    ranks = run_on_ranks(f"{HERE / 'partition_balance.py'}:rank_step", world,
                                         launcher="spawn", backend="gloo", timeout=540,
                                         env=RANK_ENV,
                                         kwargs=dict(parts=str(parts), warmup=warmup,
                                                     repeats=repeats))
                    cpu = [r["cpu_s"] for r in ranks]
                    row.update(ranks=ranks, launch_s=time.perf_counter() - t,
                               warmup=warmup, repeats=repeats,
                               step_cpu_max_s=max(cpu), step_cpu_mean_s=statistics.mean(cpu),
                               step_cpu_max_over_mean=max(cpu) / statistics.mean(cpu),
                               step_wall_s=max(r["wall_s"] for r in ranks))
                    print(f"  step cpu per rank {[round(c, 3) for c in cpu]}, wall "
                          f"{row['step_wall_s']:.2f} s", flush=True)
                res["runs"] = [r for r in res["runs"]
                               if not all(r.get(k) == v for k, v in key.items())] + [row]
                res["machine"] = (f"{os.cpu_count()} CPU cores; one thread per rank, backend "
                                  "gloo, spawned ranks")
                _save(res)
                if not keep:
                    shutil.rmtree(parts, ignore_errors=True)
        del data
        gc.collect()


# --------------------------------------------------------------------------- report
def _pair(res: dict, graph: str, world: int) -> tuple[dict | None, dict | None]:
    by = {r["balance"]: r for r in res["runs"]
          if r["graph"] == graph and r["P"] == world and r["method"] == "metis"}
    return by.get("nodes"), by.get("edges")


def markdown(res: dict) -> str:
    lines = ["# Node- vs edge-balanced METIS partitions (`benchmarks/partition_balance.py`)", "",
             f"Machine: {res.get('machine', '?')}. Balance `nodes`: METIS with one constraint "
             "(today's partition); `edges`: two constraints, vertex weights [1, in-degree]. "
             "max/mean per part of nodes, in-edges (edges a rank stores and aggregates), halo "
             "rows (rows a rank receives) and send rows; cut = edges whose endpoints lie on "
             "different ranks (fraction of all edges); partition time includes writing.", ""]
    for g, info in res["graphs"].items():
        lines += [f"## {g}: {info['description']} ({info['num_nodes']:,} nodes, "
                  f"{info['num_edges']:,} edges)", "",
                  "| P | balance | nodes max/mean | in-edges max / mean (max/mean) | "
                  "halo rows max / mean (max/mean) | send rows max/mean | cut | cut fraction | "
                  "partition s |", "|---|---|---|---|---|---|---|---|---|"]
        rows = sorted((r for r in res["runs"] if r["graph"] == g),
                      key=lambda r: (r["P"], r["balance"] != "nodes"))
        for r in rows:
            ie, hr = r["in_edges"], r["halo_rows"]
            lines.append(
                f"| {r['P']} | {r['balance']} | {r['nodes']['max_over_mean']:.3f} | "
                f"{ie['max']:,} / {ie['mean']:,.0f} ({ie['max_over_mean']:.3f}) | "
                f"{hr['max']:,} / {hr['mean']:,.0f} ({hr['max_over_mean']:.3f}) | "
                f"{r['send_rows']['max_over_mean']:.3f} | {r['edge_cut']:,} | "
                f"{r['cut_fraction']:.3f} | {r['partition_s']:.1f} |")
        trained = [r for r in rows if "ranks" in r]
        if trained:
            lines += ["", "Training step, SAGE 3 x 256 (batch norm), mode sar: main-thread CPU "
                      "time per rank (median of "
                      f"{trained[0]['repeats']} after {trained[0]['warmup']} warm-ups), the "
                      "slowest rank and max/mean over ranks; wall time of the slowest rank "
                      "(P > 2: ranks share 2 cores, wall time oversubscribed); peak RSS and "
                      "bytes sent of the largest rank.", "",
                      "| P | balance | CPU s per rank | slowest rank CPU s | max/mean | "
                      "wall s | peak RSS MB (max rank) | MB sent (max rank) |",
                      "|---|---|---|---|---|---|---|---|"]
            for r in trained:
                per = ", ".join(f"{x['cpu_s']:.2f}" for x in r["ranks"])
                lines.append(
                    f"| {r['P']} | {r['balance']} | {per} | {r['step_cpu_max_s']:.3f} | "
                    f"{r['step_cpu_max_over_mean']:.3f} | {r['step_wall_s']:.2f}"
                    + ("*" if r["P"] > 2 else "") + " | "
                    f"{max(x['peak_rss_mb'] for x in r['ranks']):,.0f} | "
                    f"{max(x['bytes_sent'] for x in r['ranks']) / 2**20:.1f} |")
        lines += ["", "Edges vs nodes (ratio edges / nodes):", "",
                  "| P | in-edges max/mean nodes -> edges | cut ratio | "
                  "goal (<= 1.10, cut <= 1.20) | slowest rank CPU s nodes -> edges | ratio |",
                  "|---|---|---|---|---|---|"]
        for world in sorted({r["P"] for r in rows}):
            n, e = _pair(res, g, world)
            if not (n and e):
                continue
            ratio = e["edge_cut"] / n["edge_cut"] if n["edge_cut"] else float("nan")
            bal = e["in_edges"]["max_over_mean"]
            goal = ("met" if bal <= 1.10 and ratio <= 1.20 else
                    "balance met, cut missed" if bal <= 1.10 else "missed")
            step = (f"{n['step_cpu_max_s']:.3f} -> {e['step_cpu_max_s']:.3f} | "
                    f"{e['step_cpu_max_s'] / n['step_cpu_max_s']:.3f}"
                    if "ranks" in n and "ranks" in e else "— | —")
            lines.append(f"| {world} | {n['in_edges']['max_over_mean']:.3f} -> {bal:.3f} | "
                         f"{ratio:.3f} | {goal} | {step} |")
        lines.append("")
    return "\n".join(lines)


def plot(res: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(res["graphs"])
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))
    for gi, g in enumerate(names):
        for bal, ls in (("nodes", "--"), ("edges", "-")):
            rows = sorted((r for r in res["runs"] if r["graph"] == g and r["balance"] == bal),
                          key=lambda r: r["P"])
            if not rows:
                continue
            ps = [r["P"] for r in rows]
            kw = dict(color=f"C{gi}", ls=ls, marker="o", label=f"{g} {bal}")
            axes[0].plot(ps, [r["in_edges"]["max_over_mean"] for r in rows], **kw)
            axes[1].plot(ps, [r["cut_fraction"] for r in rows], **kw)
            tr = [r for r in rows if "ranks" in r]
            if tr:
                axes[2].plot([r["P"] for r in tr], [r["step_cpu_max_s"] for r in tr], **kw)
    axes[0].axhline(1.10, color="k", lw=0.6, ls=":")
    for ax, title in zip(axes, ("in-edges max/mean per part (dotted: 1.10)",
                                "edge cut (fraction of edges)",
                                "slowest rank's step CPU time, s (SAGE 3 x 256)")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("P")
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].set_yscale("log")
    axes[0].legend(fontsize=7)
    fig.suptitle("METIS balance nodes (dashed) vs edges (solid)", fontsize=10)
    fig.tight_layout()
    tmp = path.with_name(path.stem + ".tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    global OUT
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--graphs", nargs="+", default=[])
    p.add_argument("--worlds", type=int, nargs="+", default=[2, 4, 8])
    p.add_argument("--balances", nargs="+", default=list(BALANCES), choices=BALANCES)
    p.add_argument("--no-train", action="store_true", help="partition statistics only")
    p.add_argument("--force", action="store_true", help="rerun entries already measured")
    p.add_argument("--keep", action="store_true", help="keep the partition folders")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--work", default="/tmp/pyg_sar_partition_balance")
    p.add_argument("--report", action="store_true", help="write the .md table and the plot")
    p.add_argument("--out", default=None, help="the JSON file (smoke tests: elsewhere)")
    args = p.parse_args(argv)
    if args.out is not None:
        OUT = Path(args.out)
    for g in args.graphs:
        if g not in graphs():
            raise ValueError(f"unknown graph {g!r} (have {list(graphs())})")
    if args.graphs:
        run(args.graphs, args.worlds, args.balances, Path(args.work), not args.no_train,
            args.force, args.warmup, args.repeats, args.keep)
    if args.report:
        res = _load()
        atomic_write(OUT.with_suffix(".md"), markdown(res))
        plot(res, OUT.with_suffix(".png"))
        print(markdown(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
