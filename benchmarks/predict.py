"""Inference benchmark: memory per rank and wall time of ``pyg_sar.predict`` at P = 1, 2, 4
against plain PyG inference of the same model on the whole graph in one process.

    python benchmarks/predict.py                        # SBM 50k nodes / 1M edges, P = 1, 2, 4
    python benchmarks/predict.py --num-nodes 5000 --out /tmp/p.json      # a smoke run
    python benchmarks/predict.py --report-only           # table + plot from the JSON
    python benchmarks/predict.py --num-nodes 3000000 --world-sizes 2 4 --no-pyg \
        --out benchmarks/results/predict_3m.json         # a graph plain PyG cannot hold here

Workload: :func:`pyg_sar.datasets.sbm` (``--num-nodes``, average degree ``--avg-degree`` directed
edges per node, 64 features, 16 classes, seed 0), METIS partitions; model: PyG's
``GraphSAGE(64, 128, num_layers=2, out_channels=16)`` with the weights of ``torch.manual_seed(0)``
(float32), :func:`pyg_sar.convert` in its default mode (sar) on the ranks.

Every launch is a fresh set of processes, one thread each, glibc returning freed blocks to the
OS (``benchmarks/procmem.py``'s ``MALLOC_ENV``):

* ``pyg``: one process (P = 1) regenerates the graph and runs ``model(x, edge_index)`` under
  ``torch.no_grad()`` followed by ``np.save`` of the output (float32 ``[N, 16]``);
* ``gather`` / ``shared``: P ranks under ``mpiexec -n P`` (``pyg_sar.testing.run_on_ranks``) load
  their part and call ``pyg_sar.predict(model, part, out, storage=...)``.

Per call and rank: ``peak_growth_mb`` = VmHWM after the call (reset with ``clear_refs`` just
before it) minus VmRSS just before it (the loaded partition and model are the baseline, as the
whole graph and model are for ``pyg``); ``time_s`` = wall time of the call (``predict`` ends in
an agreement of every rank, so the ranks finish together). ``--warmup`` calls first, then
``--repeats`` measured; the summary keeps, per (P, storage), the median over the measured calls
of the max over ranks (memory and time). ``max_abs_diff``: the largest absolute difference between
the written array and plain PyG's, both in original node order. Ratios are against the ``pyg``
row of the same run.

The machine has 2 cores shared with other jobs: P = 4 oversubscribes them and every time is noisy
(memory figures are not affected). ``--no-pyg`` leaves out the plain PyG run, for a graph whose
whole-graph inference does not fit in the machine's memory; the outputs of the storages are then
compared with each other (``max_abs_diff`` against the first storage's). Results:
``benchmarks/results/predict.{json,md,png}`` (the plot only where matplotlib is importable), the
JSON rewritten atomically after every launch.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))

from procmem import MALLOC_ENV, reset_peak, status_kib  # noqa: E402 (benchmarks/procmem.py)

import pyg_sar  # noqa: E402
from pyg_sar.files import atomic_write  # noqa: E402

RESULTS = HERE / "results"
OUT = RESULTS / "predict.json"
RANK_ENV = {**MALLOC_ENV, "OMP_NUM_THREADS": "1"}
FEATURES, HIDDEN, CLASSES, LAYERS = 64, 128, 16, 2


def make_graph(num_nodes: int, avg_degree: float):
    from pyg_sar.datasets import sbm
    return sbm(num_nodes=num_nodes, num_classes=CLASSES, avg_degree=avg_degree,
               num_features=FEATURES, seed=0)


def make_model() -> torch.nn.Module:
    from torch_geometric.nn import GraphSAGE
    torch.manual_seed(0)
    return GraphSAGE(FEATURES, HIDDEN, num_layers=LAYERS, out_channels=CLASSES)


def _timed(call, barrier=None) -> dict:
    """Run ``call()`` once: wall time and peak RSS growth above the RSS just before it."""
    gc.collect()
    if barrier is not None:
        barrier()
    base = status_kib("VmRSS")
    reset_peak()
    start = time.perf_counter()
    call()
    seconds = time.perf_counter() - start
    peak = status_kib("VmHWM")
    return {"time_s": seconds, "peak_growth_mb": (peak - base) / 1024,
            "rss_before_mb": base / 1024}


def rank_pyg(ctx, num_nodes: int, avg_degree: float, out: str, warmup: int,
             repeats: int) -> dict:
    """One process: plain PyG on the whole graph, ``np.save`` of the output."""
    data = make_graph(num_nodes, avg_degree)
    model = make_model().eval()

    def call():
        with torch.no_grad():
            y = model(data.x, data.edge_index)
        np.save(out, y.numpy())

    runs = [_timed(call) for _ in range(warmup + repeats)][warmup:]
    return {"rank": ctx.rank, "runs": {"pyg": runs}, "threads": torch.get_num_threads(),
            "num_nodes": int(data.num_nodes)}


def rank_predict(ctx, parts: str, outs: dict, warmup: int, repeats: int) -> dict:
    """Every rank: ``pyg_sar.predict`` into ``outs[storage]`` for every storage."""
    part = pyg_sar.load_partition(parts, ctx.rank)
    model = pyg_sar.convert(make_model())
    runs = {}
    for storage, out in outs.items():
        def call(storage=storage, out=out):
            pyg_sar.predict(model, part, out, storage=storage)

        runs[storage] = [_timed(call, ctx.comm.barrier)
                         for _ in range(warmup + repeats)][warmup:]
    return {"rank": ctx.rank, "runs": runs, "threads": torch.get_num_threads(),
            "num_nodes": int(part.x.shape[0])}


def summarise(result: dict) -> list[dict]:
    """Per (P, mode): medians over the measured calls of the max over ranks; ratios vs pyg."""
    rows = []
    for launch in result["launches"]:
        for mode in launch["ranks"][0]["runs"]:
            per_call = list(zip(*(r["runs"][mode] for r in launch["ranks"])))
            mem = [max(c["peak_growth_mb"] for c in call) for call in per_call]
            sec = [max(c["time_s"] for c in call) for call in per_call]
            rows.append({"world_size": launch["world_size"], "mode": mode,
                         "peak_growth_mb": statistics.median(mem),
                         "peak_growth_mb_runs": mem,
                         "peak_growth_mb_per_rank": [
                             statistics.median(c["peak_growth_mb"] for c in r["runs"][mode])
                             for r in launch["ranks"]],
                         "rss_before_mb_per_rank": [r["runs"][mode][0]["rss_before_mb"]
                                                    for r in launch["ranks"]],
                         "nodes_per_rank": [r["num_nodes"] for r in launch["ranks"]],
                         "time_s": statistics.median(sec), "time_s_runs": sec,
                         "max_abs_diff": launch.get("max_abs_diff", {}).get(mode)})
    base = next((r for r in rows if r["mode"] == "pyg"), None)
    for r in rows:
        if base is not None:
            r["memory_vs_pyg"] = r["peak_growth_mb"] / base["peak_growth_mb"]
            r["time_vs_pyg"] = r["time_s"] / base["time_s"]
    return rows


def table(result: dict) -> str:
    g = result["graph"]
    lines = [f"# pyg_sar.predict vs plain PyG inference ({result['machine']['cpu_count']} "
             f"cores shared with other jobs, one thread per rank; P = 4 oversubscribed; times "
             f"noisy)", "",
             f"SBM {g['num_nodes']:,} nodes, {g['num_edges']:,} directed edges, "
             f"{g['num_features']} features; {result['model']}; median of {result['repeats']} "
             f"calls after {result['warmup']} warm-up; max over ranks.", "",
             "| P | mode | peak RSS growth / rank (MB) | vs PyG | time (s) | vs PyG | "
             f"max abs diff vs {'the first storage' if result.get('no_pyg') else 'PyG'} |",
             "|---|---|---|---|---|---|---|"]
    for s in result["summary"]:
        mode = "plain PyG (1 process)" if s["mode"] == "pyg" else f"predict, {s['mode']}"
        diff = "-" if s["max_abs_diff"] is None else f"{s['max_abs_diff']:.2e}"
        mem_ratio = f"{s['memory_vs_pyg']:.2f}" if "memory_vs_pyg" in s else "-"
        time_ratio = f"{s['time_vs_pyg']:.2f}" if "time_vs_pyg" in s else "-"
        lines.append(f"| {s['world_size']} | {mode} | {s['peak_growth_mb']:.1f} | "
                     f"{mem_ratio} | {s['time_s']:.2f} | {time_ratio} | {diff} |")
    if result.get("no_pyg"):
        lines.append(f"\nPlain PyG not run: {result['no_pyg']}.")
    for f in result.get("failures", []):
        lines.append(f"* FAILED P={f['world_size']}: {f['error']}")
    return "\n".join(lines) + "\n"


def plot(result: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(9.6, 3.6))
    summary = result["summary"]
    for ax, (metric, label) in zip(axes, (("peak_growth_mb", "peak RSS growth / rank (MB)"),
                                          ("time_s", "predict time, median (s)"))):
        for mode, style, color in (("gather", "o-", "C0"), ("shared", "s--", "C1"),
                                   ("pyg", "x", "k")):
            pts = sorted((s["world_size"], s[metric]) for s in summary if s["mode"] == mode)
            if pts:
                ax.plot([p for p, _ in pts], [v for _, v in pts], style, color=color,
                        label="plain PyG (1 process)" if mode == "pyg" else f"predict, {mode}",
                        markersize=9 if mode == "pyg" else 5)
        base = [s[metric] for s in summary if s["mode"] == "pyg"]
        worlds = sorted({s["world_size"] for s in summary})
        if base and metric == "peak_growth_mb":
            ax.plot(worlds, [base[0] / p for p in worlds], ":", color="grey", label="PyG / P")
        ax.set_xscale("log", base=2)
        ax.set_xticks(worlds)
        ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.set_xlabel("P (processes; P = 4 shares 2 cores)")
        ax.set_ylabel(label, fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    g = result["graph"]
    fig.suptitle(f"inference, SBM {g['num_nodes']:,} nodes / {g['num_edges']:,} edges, "
                 f"GraphSAGE 2 x {HIDDEN}", fontsize=10)
    fig.tight_layout()
    tmp = path.with_name(path.stem + ".tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, path)


def report(result: dict, out: Path) -> None:
    result["summary"] = summarise(result)
    atomic_write(out, json.dumps(result, indent=1))
    atomic_write(out.with_suffix(".md"), table(result))
    try:
        plot(result, out.with_suffix(".png"))
    except ImportError as exc:  # matplotlib is a benchmark-only dependency
        print(f"no plot: {exc}")


def main(argv: list[str] | None = None) -> int:
    from pyg_sar.testing import run_on_ranks
    from pyg_sar.testing.launcher import RankFailure

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--num-nodes", type=int, default=50_000)
    p.add_argument("--avg-degree", type=float, default=20.0)
    p.add_argument("--world-sizes", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--storages", nargs="+", default=["gather", "shared"],
                   choices=["gather", "shared"])
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--work", default="/tmp/pyg_sar_bench_predict")
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--report-only", action="store_true")
    p.add_argument("--no-pyg", action="store_true",
                   help="leave out plain PyG (a graph whose whole-graph inference does not fit)")
    args = p.parse_args(argv)
    out = Path(args.out)
    if args.report_only:
        report(json.loads(out.read_text()), out)
        print(table(json.loads(out.read_text())))
        return 0
    if args.repeats < 3:
        raise ValueError(f"--repeats must be >= 3 (a median; got {args.repeats})")
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    data = make_graph(args.num_nodes, args.avg_degree)
    result = {"benchmark": "predict",
              "machine": {"cpu_count": os.cpu_count(),
                          "processor": platform.processor() or platform.machine(),
                          "torch": torch.__version__, "python": platform.python_version(),
                          "note": "cores shared with other jobs: times are noisy"},
              "threads_per_rank": 1, "warmup": args.warmup, "repeats": args.repeats,
              "graph": {"generator": "pyg_sar.datasets.sbm", "num_nodes": int(data.num_nodes),
                        "num_edges": int(data.num_edges), "avg_degree": args.avg_degree,
                        "num_features": FEATURES, "num_classes": CLASSES, "seed": 0,
                        "partition": "metis"},
              "model": f"GraphSAGE({FEATURES}, {HIDDEN}, num_layers={LAYERS}, "
                       f"out_channels={CLASSES}), float32, seed 0",
              "launches": [], "summary": [], "failures": []}
    start = time.perf_counter()
    timeout = 1800
    ref_path = work / "pyg.npy"
    reference = None
    if args.no_pyg:
        result["no_pyg"] = ("left out with --no-pyg: its whole-graph inference does not fit in "
                            "the machine's memory")
    else:
        res = run_on_ranks(f"{HERE / 'predict.py'}:rank_pyg", 1, launcher="spawn",
                           timeout=timeout, env=RANK_ENV,
                           kwargs=dict(num_nodes=args.num_nodes, avg_degree=args.avg_degree,
                                       out=str(ref_path), warmup=args.warmup,
                                       repeats=args.repeats))
        reference = np.load(ref_path)
        result["launches"].append({"world_size": 1, "ranks": res})
        report(result, out)
        print(f"pyg: {[round(r['time_s'], 2) for r in res[0]['runs']['pyg']]} s, "
              f"{[round(r['peak_growth_mb'], 1) for r in res[0]['runs']['pyg']]} MB",
              flush=True)
    for world in args.world_sizes:
        parts = work / f"parts-{world}"
        pyg_sar.partition_graph(data, world, parts, method="metis", overwrite=True)
        outs = {s: str(work / f"predict-{world}-{s}.npy") for s in args.storages}
        try:
            res = run_on_ranks(f"{HERE / 'predict.py'}:rank_predict", world, timeout=timeout,
                               env=RANK_ENV, kwargs=dict(parts=str(parts), outs=outs,
                                                         warmup=args.warmup,
                                                         repeats=args.repeats))
        except RankFailure as exc:
            msg = str(exc).strip().splitlines()
            err = next((m for m in reversed(msg) if "Error" in m), msg[-1])
            result["failures"].append({"world_size": world, "error": err})
            print(f"P={world}: FAILED: {err}", flush=True)
            continue
        first = reference if reference is not None else np.load(next(iter(outs.values())))
        diff = {s: float(np.abs(np.load(path) - first).max()) for s, path in outs.items()}
        result["launches"].append({"world_size": world, "ranks": res, "max_abs_diff": diff})
        report(result, out)
        for s in result["summary"]:
            if s["world_size"] == world and s["mode"] != "pyg":
                print(f"P={world} {s['mode']:6s} mem/rank {s['peak_growth_mb']:8.1f} MB "
                      f"({s.get('memory_vs_pyg', float('nan')):.2f} x pyg) time "
                      f"{s['time_s']:6.2f} s ({s.get('time_vs_pyg', float('nan')):.2f} x pyg) "
                      f"max abs diff {s['max_abs_diff']:.2e}", flush=True)
    result["wall_s"] = time.perf_counter() - start
    report(result, out)
    print(f"wrote {out} ({result['wall_s']:.0f} s)")
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
