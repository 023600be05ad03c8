"""The benchmark suite: memory per rank vs P, epoch time, bytes sent; SAR vs SA vs halo vs
single-process PyG vs single-process DGL; a memory-bandwidth probe; JSON and PNG plots.

    python benchmarks/run.py --quick     # small graphs, P = 1, 2, 4 (a few minutes)
    python benchmarks/run.py --full      # dense SBM 120k/1.1M, R-MAT, 1M nodes; P = 1, 2, 4, 8
    python benchmarks/run.py --plot-only benchmarks/results/suite_quick.json

Every (workload, P) is one ``mpiexec -n P`` launch (``benchmarks/suite.py:rank_suite``) running
all models and modes; DGL (if importable) runs in its own one-process launch. Results go to
``benchmarks/results/suite_<quick|full>.json`` and ``benchmarks/results/plots/<json stem>_*.png``.
Ranks run one thread each; with P > cores the ranks share cores, so times are oversubscribed
(memory figures are not affected).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from procmem import MALLOC_ENV  # noqa: E402 (benchmarks/procmem.py)

import pyg_sar  # noqa: E402
from pyg_sar.files import atomic_write  # noqa: E402

RESULTS = HERE / "results"
# glibc returns every freed large block to the OS, so RSS follows live memory.
RANK_ENV = {**MALLOC_ENV, "OMP_NUM_THREADS": "1", "DGLBACKEND": "pytorch"}
MODES = ["sar", "sa", "halo", "pyg"]
MODELS = ["sage", "gat", "transformer"]
DEFAULT_MODELS = ["sage", "gat"]


def workloads(suite: str) -> dict:
    """name -> (description, factory) of the suite's graphs."""
    from pyg_sar.datasets import rmat, sbm, sbm_dense
    if suite == "quick":
        return {
            "sbm_dense_small": ("dense SBM, 6,000 nodes, 60,000 edges (80% across communities)",
                                lambda: sbm(num_nodes=6000, num_edges=60_000, num_classes=8,
                                            homophily=0.2, seed=0)),
            "rmat_small": ("R-MAT, 16,384 nodes, 131,072 edges requested",
                           lambda: rmat(16_384, 131_072, seed=0)),
        }
    return {
        "sbm_dense": ("dense SBM, 120,000 nodes, 1,100,000 edges (80% across communities)",
                      sbm_dense),
        "rmat": ("R-MAT, 262,144 nodes, 2,097,152 edges requested",
                 lambda: rmat(262_144, 2_097_152, seed=0)),
        "rmat_1m": ("R-MAT, 1,000,000 nodes, 5,000,000 edges requested",
                    lambda: rmat(1_000_000, 5_000_000, seed=0)),
    }


def _partition(name: str, factory, world: int, work: Path, cache: dict) -> Path:
    parts = work / f"{name}-{world}"
    if not (parts / "meta.json").exists():
        if name not in cache:
            cache[name] = factory()
        pyg_sar.partition_graph(cache[name], world, parts, method="metis", overwrite=True,
                                balance="nodes")  # as the results were made
    return parts


def bandwidth_probe(size_mb: int = 512, repeats: int = 5) -> dict:
    """Memory bandwidth of a large tensor copy (read + write bytes / s), one thread."""
    torch.set_num_threads(1)
    n = size_mb * 2**20 // 4
    src = torch.randn(n)
    dst = torch.empty_like(src)
    dst.copy_(src)  # fault the pages in
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        dst.copy_(src)
        times.append(time.perf_counter() - t)
    best, med = min(times), statistics.median(times)
    moved = 2 * n * 4
    return {"size_mb": size_mb, "times_s": times, "best_gbs": moved / best / 1e9,
            "median_gbs": moved / med / 1e9}


def kernel_bandwidth(nodes: int = 200_000, edges: int = 2_000_000, feats: int = 256,
                     repeats: int = 5) -> dict:
    """Achieved bytes/s of the fused gather-aggregate (forward sum, one thread).

    Counted traffic is the minimum the kernel must move: every gathered row once per edge
    (E x F x 4 bytes: random rows, the dominant term), the column index (E x 8), the row
    pointer ((N + 1) x 8) and the output (N x F x 4)."""
    from pyg_sar.core.kernels import block_sum
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    dst = torch.randint(0, nodes, (edges,), generator=g).sort().values
    col = torch.randint(0, nodes, (edges,), generator=g)
    rowptr = torch.searchsorted(dst, torch.arange(nodes + 1))
    x = torch.randn(nodes, feats, generator=g)
    block_sum(rowptr, col, x, None)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        block_sum(rowptr, col, x, None)
        times.append(time.perf_counter() - t)
    moved = edges * feats * 4 + edges * 8 + (nodes + 1) * 8 + nodes * feats * 4
    med = statistics.median(times)
    return {"nodes": nodes, "edges": edges, "feats": feats, "times_s": times,
            "bytes_moved": moved, "median_gbs": moved / med / 1e9,
            "best_gbs": moved / min(times) / 1e9,
            "native": importlib.util.find_spec("pyg_sar._C") is not None}


def _summarise(rows: list[dict]) -> list[dict]:
    """One line per (workload, P, model, mode): the max over ranks (the machine to size)."""
    keys = {}
    for r in rows:
        keys.setdefault((r["workload"], r["world_size"], r["model"], r["mode"]), []).append(r)
    out = []
    for (wl, world, model, mode), rs in sorted(keys.items()):
        out.append({
            "workload": wl, "world_size": world, "model": model, "mode": mode,
            "peak_growth_mb": max(r["peak_growth_mb"] for r in rs),
            "saved_mb": max(r["saved_mb"] for r in rs),
            "epoch_s": max(r["epoch_s"] for r in rs),
            "comm_wait_s": max(r["comm_wait_s"] for r in rs),
            "allreduce_s": max(r["allreduce_s"] for r in rs),
            "compute_s": max(r["compute_s"] for r in rs),
            "bytes_sent_mb": max(r["bytes_sent"] for r in rs) / 2**20,
            "bytes_recv_mb": max(r["bytes_recv"] for r in rs) / 2**20,
            "allreduce_mb": max(r["allreduce_bytes"] for r in rs) / 2**20,
        })
    return out


def plot(result: dict, out_dir: Path, prefix: str) -> list[str]:
    """memory per rank vs P (one panel per workload x model, a line per mode) and epoch time."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    summary = result["summary"]
    panels = sorted({(s["workload"], s["model"]) for s in summary})
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for metric, label, fname in (("peak_growth_mb", "peak RSS growth per rank (MB)", "memory"),
                                 ("epoch_s", "epoch time, slowest rank (s)", "epoch_time")):
        ncols = 2 if len(panels) == 4 else min(len(panels), 3)
        nrows = -(-len(panels) // ncols)
        fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols, 3.4 * nrows + 0.4),
                                 squeeze=False)
        for ax in axes.flat[len(panels):]:
            ax.set_visible(False)
        for ax, (wl, model) in zip(axes.flat, panels):
            rows = [s for s in summary if s["workload"] == wl and s["model"] == model]
            for mode, style, color in (("sar", "o-", "C0"), ("sa", "s--", "C1"),
                                       ("halo", "^-.", "C2"), ("pyg", "x", "k"),
                                       ("dgl", "*", "r")):
                pts = sorted((s["world_size"], s[metric]) for s in rows if s["mode"] == mode)
                if not pts:
                    continue
                name = {"pyg": "PyG (1 process)", "dgl": "DGL (1 process)"}.get(mode, mode)
                ax.plot([p for p, _ in pts], [v for _, v in pts], style, color=color,
                        label=name, markersize=9 if mode in ("pyg", "dgl") else 5)
            if metric == "peak_growth_mb":
                ideal = [s for s in rows if s["mode"] == "sar" and s["world_size"] == 1]
                if ideal:
                    ps = sorted({s["world_size"] for s in rows})
                    ax.plot(ps, [ideal[0][metric] / p for p in ps], ":", color="grey",
                            label="sar P=1 / P")
            ax.set_xscale("log", base=2)
            ax.set_xticks(sorted({s["world_size"] for s in rows}))
            ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
            ax.set_title(f"{wl}, {model}", fontsize=9)
            ax.set_xlabel("P (processes)")
            ax.set_ylabel(label, fontsize=8)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
        note = "" if metric != "epoch_s" else " (2 shared cores: P > 2 oversubscribed)"
        fig.suptitle(f"{result['suite']} suite: {label}{note}", fontsize=10)
        fig.tight_layout()
        path = out_dir / f"{prefix}_{fname}.png"
        tmp = path.with_name(path.stem + ".tmp.png")
        fig.savefig(tmp, dpi=110)
        plt.close(fig)
        os.replace(tmp, path)
        written.append(str(path.relative_to(HERE.parent)))
    return written


def main(argv: list[str] | None = None) -> int:
    from pyg_sar.testing import run_on_ranks
    from pyg_sar.testing.launcher import RankFailure

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--quick", action="store_true")
    g.add_argument("--full", action="store_true")
    g.add_argument("--plot-only", metavar="JSON")
    p.add_argument("--world-sizes", type=int, nargs="+", default=None)
    p.add_argument("--workloads", nargs="+", default=None)
    p.add_argument("--models", nargs="+", default=DEFAULT_MODELS, choices=MODELS)
    p.add_argument("--modes", nargs="+", default=MODES, choices=MODES)
    p.add_argument("--no-dgl", action="store_true")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--work", default="/tmp/pyg_sar_bench")
    p.add_argument("--out", default=None)
    p.add_argument("--merge", action="store_true",
                   help="keep the rows of an existing result file for other (workload, P)")
    args = p.parse_args(argv)
    if args.repeats < 5:
        raise ValueError(f"--repeats must be >= 5 (median of >= 5 epochs; got {args.repeats})")
    if args.plot_only:
        result = json.loads(Path(args.plot_only).read_text())
        print("\n".join(plot(result, RESULTS / "plots", Path(args.plot_only).stem)))
        return 0

    suite = "quick" if args.quick else "full"
    worlds = args.world_sizes or ([1, 2, 4] if args.quick else [1, 2, 4, 8])
    loads = workloads(suite)
    names = args.workloads or list(loads)
    for n in names:
        if n not in loads:
            raise ValueError(f"unknown workload {n!r} for the {suite} suite (have {list(loads)})")
    have_dgl = importlib.util.find_spec("dgl") is not None and not args.no_dgl
    out = Path(args.out) if args.out else RESULTS / f"suite_{suite}.json"
    result = {"suite": suite, "machine": {"cpu_count": os.cpu_count(),
                                          "processor": platform.processor() or platform.machine(),
                                          "torch": torch.__version__,
                                          "python": platform.python_version()},
              "threads_per_rank": 1, "warmup": args.warmup, "repeats": args.repeats,
              "workloads": {n: loads[n][0] for n in names}, "rows": [], "summary": [],
              "failures": [],
              "dgl": "measured" if have_dgl else "dgl not importable: skipped"}
    if args.merge and out.exists():
        old = json.loads(out.read_text())
        # Rows of the (workload, P, model, mode) measured now are replaced; the rest are kept.
        modes = set(args.modes) | ({"dgl"} if have_dgl else set())
        redo = {(n, w, m, mode) for n in names for w in worlds for m in args.models
                for mode in modes}
        result["rows"] = [r for r in old["rows"]
                          if (r["workload"], r["world_size"], r["model"], r["mode"]) not in redo]
        result["workloads"] = {**old.get("workloads", {}), **result["workloads"]}
        result["failures"] = [f for f in old.get("failures", [])
                              if not any((f["workload"], f["world_size"], m, mode) in redo
                                         for m in f["models"] for mode in modes)]
        result["summary"] = _summarise(result["rows"])
    print("bandwidth probe ...", flush=True)
    result["bandwidth"] = bandwidth_probe()
    result["kernel"] = kernel_bandwidth()
    result["kernel"]["fraction_of_copy_bw"] = (result["kernel"]["median_gbs"]
                                               / result["bandwidth"]["median_gbs"])
    print(f"copy {result['bandwidth']['median_gbs']:.2f} GB/s, gather-aggregate "
          f"{result['kernel']['median_gbs']:.2f} GB/s "
          f"({100 * result['kernel']['fraction_of_copy_bw']:.0f}%)", flush=True)

    cache: dict = {}
    target = f"{HERE / 'suite.py'}:rank_suite"
    start = time.perf_counter()
    for name in names:
        desc, factory = loads[name]
        for world in worlds:
            parts = _partition(name, factory, world, Path(args.work), cache)
            # One launch per model, so that a failing model does not take the other with it.
            launches = [(target, world, model, {"modes": args.modes}) for model in args.models]
            if world == 1 and have_dgl:
                launches.append((f"{HERE / 'suite.py'}:dgl_rank", 1, "all", {}))
            for tgt, ranks, model, extra in launches:
                # DGL's peer runs the models it has (sage, gat)
                models = ([m for m in args.models if m in DEFAULT_MODELS] if model == "all"
                          else [model])
                kwargs = dict(parts=str(parts), models=models, warmup=args.warmup,
                              repeats=args.repeats, **extra)
                try:
                    res = run_on_ranks(tgt, ranks, kwargs=kwargs, timeout=7200, env=RANK_ENV)
                except RankFailure as exc:
                    msg = str(exc).strip().splitlines()
                    err = next((m for m in reversed(msg) if "Error" in m), msg[-1])
                    result["failures"].append({"workload": name, "world_size": world,
                                               "models": models, "target": tgt.split(":")[-1],
                                               "error": err})
                    print(f"{name} P={world} {models}: FAILED: {err}", flush=True)
                    continue
                for rank_rows in res:
                    for r in rank_rows:
                        r.update(workload=name, world_size=world)
                        result["rows"].append(r)
            result["summary"] = _summarise(result["rows"])
            for s in result["summary"]:
                if s["workload"] == name and s["world_size"] == world:
                    print(f"{name:16s} P={world} {s['model']:4s} {s['mode']:4s} "
                          f"mem {s['peak_growth_mb']:8.1f} MB saved {s['saved_mb']:8.1f} MB "
                          f"epoch {s['epoch_s']:7.3f} s (comm {s['comm_wait_s']:.3f} + "
                          f"allreduce {s['allreduce_s']:.3f}) sent {s['bytes_sent_mb']:7.1f} MB",
                          flush=True)
            atomic_write(out, json.dumps(result, indent=1))  # keep partial results of a long run
    result["wall_s"] = time.perf_counter() - start
    atomic_write(out, json.dumps(result, indent=1))
    print(f"wrote {out}")
    print("\n".join(plot(result, RESULTS / "plots", out.stem)))  # plots named after the JSON
    return 0


if __name__ == "__main__":
    sys.exit(main())
