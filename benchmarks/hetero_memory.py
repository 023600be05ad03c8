"""Heterogeneous memory benchmark: memory per rank vs P for R-GCN (and HGT) on an OGB-MAG-shaped
graph, modes sar and halo, against single-process PyG; JSON and PNG plots.

    python benchmarks/hetero_memory.py                          # P = 1, 2, 4 (a few minutes)
    python benchmarks/hetero_memory.py --num-papers 2000 --out /tmp/h.json   # a smoke run
    python benchmarks/hetero_memory.py --plot-only benchmarks/results/hetero_memory.json

The graph is :func:`pyg_sar.datasets.mag_like` with the reverse edge types (as PyG's OGB-MAG
examples use it); author / institution / field-of-study nodes, which have no features (as in
ogbn-mag), get the mean features of their paper (or author) neighbours. It is partitioned with
METIS once per P. Every P is one ``mpiexec -n P`` launch running every model and mode in turn
(:func:`rank_hetero`), measured exactly as the homogeneous suite measures
(``benchmarks/suite.py``): per rank, the peak RSS growth during a training step (``VmHWM``
reset before the step; glibc returns freed blocks to the OS), the bytes saved for backward, the
median epoch time over ``--repeats`` steps after ``--warmup`` steps, the engine's traffic; the
summary keeps the max over ranks. ``pyg`` is plain PyG on the whole ``HeteroData`` in one
process (P = 1 only). A model that :func:`pyg_sar.convert` refuses is recorded in
``failures`` with the reason. Results: ``benchmarks/results/hetero_memory.json`` and
``benchmarks/results/plots/hetero_memory_{memory,epoch_time}.png``.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))

import run as suite_run  # noqa: E402 (benchmarks/run.py: RANK_ENV, _summarise, plot)
from suite import _measure, _saved_bytes, training_step  # noqa: E402 (the suite's method)

import pyg_sar  # noqa: E402
from pyg_sar.files import atomic_write  # noqa: E402

RESULTS = HERE / "results"
MODELS = ["rgcn", "hgt"]
MODES = ["sar", "halo", "pyg"]
HIDDEN = 64


def fill_features(data):
    """Node types without ``x`` get the mean ``x`` of their neighbours of a type that has one."""
    from torch_geometric.utils import scatter
    while missing := [t for t in data.node_types if "x" not in data[t]]:
        reach = [et for et in data.edge_types if et[2] in missing and "x" in data[et[0]]]
        if not reach:
            raise ValueError(f"no features reach node types {missing}")
        for src, rel, dst in reach:
            if "x" not in data[dst]:
                ei = data[src, rel, dst].edge_index
                data[dst].x = scatter(data[src].x[ei[0]], ei[1], dim=0,
                                      dim_size=data[dst].num_nodes, reduce="mean")
    return data


def make_graph(num_papers: int):
    """The benchmark's HeteroData (mag_like with reverse edges, features on every type)."""
    from pyg_sar.datasets import mag_like
    return fill_features(mag_like(num_papers, seed=0, add_reverse_edges=True))


def describe(data) -> dict:
    return {"num_nodes": {t: int(data[t].num_nodes) for t in data.node_types},
            "num_edges": {"__".join(et): int(data[et].num_edges) for et in data.edge_types},
            "num_features": int(data["paper"].x.size(-1)),
            "num_classes": int(data["paper"].y.max()) + 1}


class RGCN(torch.nn.Module):
    """Two RGCNConv layers (hidden 64) on the typed homogeneous graph."""

    def __init__(self, in_channels: int, out_channels: int, num_relations: int) -> None:
        super().__init__()
        from torch_geometric.nn import RGCNConv
        self.conv1 = RGCNConv(in_channels, HIDDEN, num_relations)
        self.conv2 = RGCNConv(HIDDEN, out_channels, num_relations)

    def forward(self, x, edge_index, edge_type):
        return self.conv2(self.conv1(x, edge_index, edge_type).relu(), edge_index, edge_type)


class HGT(torch.nn.Module):
    """HeteroDictLinear to 64, two HGTConv layers (2 heads), a linear head on papers."""

    def __init__(self, in_channels: int, out_channels: int, metadata) -> None:
        super().__init__()
        from torch_geometric.nn import HeteroDictLinear, HGTConv
        self.lin = HeteroDictLinear(in_channels, HIDDEN, types=metadata[0])
        self.conv1 = HGTConv(HIDDEN, HIDDEN, metadata, heads=2)
        self.conv2 = HGTConv(HIDDEN, HIDDEN, metadata, heads=2)
        self.out = torch.nn.Linear(HIDDEN, out_channels)

    def forward(self, x_dict, edge_index_dict):
        x_dict = {t: v.relu() for t, v in self.lin(x_dict).items()}
        x_dict = {t: v.relu() for t, v in self.conv1(x_dict, edge_index_dict).items()}
        return self.out(self.conv2(x_dict, edge_index_dict)["paper"])


def _whole_graph(part):
    """The whole graph as a PyG HeteroData in the P = 1 part's local order."""
    from torch_geometric.data import HeteroData
    if part.world_size != 1:
        raise ValueError(f"the PyG reference runs on one process (world size {part.world_size})")
    data = HeteroData()
    inv = {}
    for t in part.node_types:
        ids = part.node_ids_dict[t]
        inv[t] = torch.empty_like(ids)
        inv[t][ids] = torch.arange(ids.numel())
        for k, v in part.node_data_dict[t].items():
            data[t][k] = v
        data[t].num_nodes = ids.numel()
    for et in part.edge_types:
        ei = part.global_edge_index(et)
        data[et].edge_index = torch.stack([inv[et[0]][ei[0]], inv[et[2]][ei[1]]])
    return data


def _model_and_inputs(model: str, graph, classes: int):
    """(module, inputs, rows of the paper type in the output) for a part or a HeteroData."""
    num_features = graph.x_dict["paper"].size(-1)
    if model == "hgt":
        net = HGT(num_features, classes, graph.metadata())
        return net, (graph.x_dict, graph.edge_index_dict), None
    net = RGCN(num_features, classes, len(graph.edge_types))
    if isinstance(graph, pyg_sar.HeteroPartition):
        edge_index, node_type, edge_type = graph.to_homogeneous()
    else:
        homo = graph.to_homogeneous(node_attrs=[], edge_attrs=[])
        edge_index, node_type, edge_type = homo.edge_index, homo.node_type, homo.edge_type
    x = torch.cat([graph.x_dict[t] for t in graph.node_types])
    return net, (x, edge_index, edge_type), node_type == graph.node_types.index("paper")


def rank_hetero(ctx, parts: str, models: list[str], modes: list[str], warmup: int = 1,
                repeats: int = 5) -> dict:
    """Runs on every rank: measure every (model, mode) on this rank's part. Returns
    ``{"rows": [...], "refused": [{"model", "mode", "error"}]}``."""
    part = pyg_sar.load_partition(parts, ctx.rank)
    classes = next(t["num_classes"] for t in part.meta["hetero"]["node_types"]
                   if t["name"] == "paper")
    y, mask = part.y_dict["paper"], part.train_mask_dict["paper"]
    comm = ctx.comm
    rows, refused = [], []
    for model in models:
        for mode in modes:
            if mode == "pyg" and ctx.world_size != 1:
                continue  # the plain single-process reference exists at P = 1 only
            graph = _whole_graph(part) if mode == "pyg" else part
            torch.manual_seed(0)
            net, inputs, rows_of = _model_and_inputs(model, graph, classes)
            if mode != "pyg":
                try:
                    pyg_sar.convert(net, pyg_sar.SARConfig(mode=mode))
                except (pyg_sar.UnsupportedLayerError, ValueError) as err:
                    refused.append({"model": model, "mode": mode,
                                    "error": f"{type(err).__name__}: {err}"})
                    continue
                pyg_sar.broadcast_parameters(net)
            opt = torch.optim.Adam(net.parameters(), lr=0.01)
            grad_bytes = sum(p.numel() * p.element_size() for p in net.parameters())

            def loss_of(out, rows_of=rows_of):
                return pyg_sar.nn.functional.cross_entropy(
                    out if rows_of is None else out[rows_of], y, mask)

            step = training_step(net, lambda net=net, inputs=inputs: net(*inputs), loss_of,
                                 opt, comm)

            for _ in range(warmup):
                step()
            opt.zero_grad()
            saved = _saved_bytes(lambda net=net, inputs=inputs: net(*inputs), loss_of)
            row = _measure(step, comm.barrier, repeats)
            row.update(model=model, mode=mode, rank=ctx.rank, saved_mb=saved / 2**20,
                       allreduce_bytes=grad_bytes if ctx.world_size > 1 else 0,
                       num_nodes=sum(part.num_nodes_dict.values()),
                       threads=torch.get_num_threads())
            rows.append(row)
            del net, opt, inputs, graph
            gc.collect()
    return {"rows": rows, "refused": refused}


def measure(num_papers: int, worlds: list[int], models: list[str], modes: list[str],
            warmup: int, repeats: int, work: Path, out: Path, timeout: float = 3600) -> dict:
    """Partition, launch every (P, model), write ``out`` (after every launch) and return it."""
    from pyg_sar.testing import run_on_ranks
    from pyg_sar.testing.launcher import RankFailure
    data = make_graph(num_papers)
    workload = f"mag_like_{num_papers}"
    result = {"benchmark": "hetero_memory", "suite": f"heterogeneous, mag-like {num_papers:,}",
              "machine": {"cpu_count": os.cpu_count(),
                          "processor": platform.processor() or platform.machine(),
                          "torch": torch.__version__, "python": platform.python_version()},
              "threads_per_rank": 1, "warmup": warmup, "repeats": repeats,
              "graph": {"workload": workload, "num_papers": num_papers, **describe(data)},
              "models": {"rgcn": f"2 x RGCNConv (hidden {HIDDEN}) on the typed homogeneous graph",
                         "hgt": f"HeteroDictLinear + 2 x HGTConv (hidden {HIDDEN}, 2 heads) + "
                                "Linear"},
              "rows": [], "summary": [], "failures": []}
    start = time.perf_counter()
    for world in worlds:
        parts = work / f"{workload}-{world}"
        pyg_sar.partition_graph(data, world, parts, method="metis", overwrite=True)
        kwargs = dict(parts=str(parts), models=models, modes=modes, warmup=warmup,
                      repeats=repeats)
        try:  # one launch per P: the ~3 s start-up of a rank is paid once
            res = run_on_ranks(f"{HERE / 'hetero_memory.py'}:rank_hetero", world,
                               kwargs=kwargs, timeout=timeout, env=suite_run.RANK_ENV)
        except RankFailure as exc:
            msg = str(exc).strip().splitlines()
            err = next((m for m in reversed(msg) if "Error" in m), msg[-1])
            result["failures"].append({"world_size": world, "model": "all", "mode": "all",
                                       "error": err})
            print(f"P={world}: FAILED: {err}", flush=True)
            res = []
        for rank_res in res:
            for r in rank_res["rows"]:
                r.update(workload=workload, world_size=world)
                result["rows"].append(r)
        for f in res[0]["refused"] if res else []:  # every rank refuses alike; rank 0's reason
            result["failures"].append({"world_size": world, **f})
            print(f"P={world} {f['model']} {f['mode']}: refused: {f['error']}", flush=True)
        result["summary"] = suite_run._summarise(result["rows"])
        for s in result["summary"]:
            if s["world_size"] == world:
                print(f"P={world} {s['model']:4s} {s['mode']:4s} mem {s['peak_growth_mb']:8.1f} "
                      f"MB saved {s['saved_mb']:8.1f} MB epoch {s['epoch_s']:7.3f} s "
                      f"sent {s['bytes_sent_mb']:7.1f} MB", flush=True)
        atomic_write(out, json.dumps(result, indent=1))
    result["wall_s"] = time.perf_counter() - start
    atomic_write(out, json.dumps(result, indent=1))
    return result


def table(result: dict) -> str:
    """A Markdown table of the summary: peak RSS growth / saved for backward / epoch time."""
    lines = ["| model | P | mode | peak RSS growth / rank | saved for backward / rank | "
             "epoch time (median) | sent per epoch / rank |", "|---|---|---|---|---|---|---|"]
    order = {"pyg": 0, "sar": 1, "sa": 2, "halo": 3}
    for s in sorted(result["summary"], key=lambda s: (s["model"], s["world_size"],
                                                      order.get(s["mode"], 9))):
        mode = "plain PyG (1 process)" if s["mode"] == "pyg" else s["mode"]
        sent = "—" if s["world_size"] == 1 else f"{s['bytes_sent_mb']:,.1f} MB"
        lines.append(f"| {s['model']} | {s['world_size']} | {mode} | "
                     f"{s['peak_growth_mb']:,.0f} MB | {s['saved_mb']:,.0f} MB | "
                     f"{s['epoch_s']:.2f} s | {sent} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--num-papers", type=int, default=40_000)
    p.add_argument("--world-sizes", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--models", nargs="+", default=MODELS, choices=MODELS)
    p.add_argument("--modes", nargs="+", default=MODES, choices=MODES)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--work", default="/tmp/pyg_sar_bench_hetero")
    p.add_argument("--out", default=str(RESULTS / "hetero_memory.json"))
    p.add_argument("--no-plot", action="store_true")
    p.add_argument("--plot-only", metavar="JSON")
    args = p.parse_args(argv)
    if args.plot_only:
        result = json.loads(Path(args.plot_only).read_text())
    else:
        if args.repeats < 3:
            raise ValueError(f"--repeats must be >= 3 (a median; got {args.repeats})")
        if args.num_papers < 1:
            raise ValueError(f"--num-papers must be >= 1 (got {args.num_papers})")
        out = Path(args.out)
        result = measure(args.num_papers, args.world_sizes, args.models, args.modes,
                         args.warmup, args.repeats, Path(args.work), out)
        print(f"wrote {out}")
        print(table(result))
    if not args.no_plot and result["summary"]:
        stem = Path(args.plot_only or args.out).stem
        print("\n".join(suite_run.plot(result, RESULTS / "plots", stem)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
