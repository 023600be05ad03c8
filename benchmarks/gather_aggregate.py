"""Micro-benchmark: fused ``pyg_sar.ops.gather_aggregate`` vs PyG's gather + scatter path.

Both run forward + backward (gradient of ``x``) of ``out = REDUCE_e w_e * x[src_e]`` on a random
graph (default 100k nodes, 1M edges). The PyG path is what ``MessagePassing`` does without
torch-sparse: ``x_j = x.index_select(0, src); scatter(x_j * w, dst, reduce=...)``, which builds
E x F tensors. Reported per case: the median time of ``--repeats`` runs after one warm-up, and the
peak memory growth of a run (``VmHWM`` from /proc/self/status after
``echo 5 > /proc/self/clear_refs``, minus ``VmRSS`` before the run).
``--dtypes float32 bfloat16`` also times bfloat16 rows and weights (the fused kernel sums them in
float32 and returns bfloat16; PyG's path runs its ops in bfloat16) in the same run, with the
bfloat16 / float32 time ratio of each path and each output's distance from a float64 result.
Writes benchmarks/results/gather_aggregate.json.

    python benchmarks/gather_aggregate.py [--nodes 100000 --edges 1000000 --feats 64 256]
        [--dtypes float32 bfloat16]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import torch
from procmem import reset_peak, status_kib  # benchmarks/procmem.py
from torch_geometric.utils import scatter

from pyg_sar.ops import gather_aggregate, native_available

RESULTS = Path(__file__).resolve().parent / "results" / "gather_aggregate.json"




def random_graph(num_nodes: int, num_edges: int, seed: int) -> tuple[torch.Tensor, ...]:
    """Uniform random edges, sorted by destination: (rowptr, col, src, dst)."""
    g = torch.Generator().manual_seed(seed)
    dst = torch.randint(0, num_nodes, (num_edges,), generator=g).sort().values
    src = torch.randint(0, num_nodes, (num_edges,), generator=g)
    rowptr = torch.searchsorted(dst, torch.arange(num_nodes + 1))
    return rowptr, src, src, dst


def run_fused(rowptr, col, x, w, reduce):
    out = gather_aggregate(rowptr, col, x, w, reduce)
    out.backward(torch.ones_like(out))
    return out


def run_pyg(dst, src, x, w, reduce):
    x_j = x.index_select(0, src)
    out = scatter(x_j * w.view(-1, 1), dst, dim=0, dim_size=x.size(0), reduce=reduce)
    out.backward(torch.ones_like(out))
    return out


def measure(fn, args, x, repeats: int) -> dict:
    fn(*args)  # warm-up
    times, peaks = [], []
    for _ in range(repeats):
        x.grad = None
        before = status_kib("VmRSS")
        reset_peak()
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
        peaks.append((status_kib("VmHWM") - before) / 1024.0)
    return {"time_s": statistics.median(times), "times_s": times,
            "peak_growth_mib": statistics.median(peaks), "peak_growth_mib_all": peaks}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=100_000)
    p.add_argument("--edges", type=int, default=1_000_000)
    p.add_argument("--feats", type=int, nargs="+", default=[64, 256])
    p.add_argument("--reduces", nargs="+", default=["sum", "max"])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, nargs="+", default=[1, os.cpu_count() or 1])
    p.add_argument("--dtypes", nargs="+", default=["float32"],
                   choices=["float32", "float64", "bfloat16", "float16"])
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args()
    if not native_available():
        raise SystemExit("the native library pyg_sar._C is not built: pip install -e . "
                         "--no-build-isolation")

    rowptr, col, src, dst = random_graph(args.nodes, args.edges, seed=0)
    w = torch.rand(args.edges, generator=torch.Generator().manual_seed(1)) + 0.5
    rows = []
    for threads in dict.fromkeys(args.threads):
        torch.set_num_threads(threads)
        for feat, dtype_name in [(f, d) for f in args.feats for d in args.dtypes]:
            dtype = getattr(torch, dtype_name)
            x = torch.randn(args.nodes, feat, generator=torch.Generator().manual_seed(2))
            x = x.to(dtype).requires_grad_()
            wd = w.to(dtype)
            for reduce in args.reduces:
                fused = measure(run_fused, (rowptr, col, x, wd, reduce), x, args.repeats)
                grad_fused = x.grad.clone()
                pyg = measure(run_pyg, (dst, src, x, wd, reduce), x, args.repeats)
                with torch.no_grad():
                    ours = gather_aggregate(rowptr, col, x, wd, reduce)
                    theirs = scatter(x[src] * wd.view(-1, 1), dst, 0, dim_size=args.nodes,
                                     reduce=reduce)
                    exact = scatter(x.double()[src] * wd.double().view(-1, 1), dst, 0,
                                    dim_size=args.nodes, reduce=reduce)
                    diff = (ours.double() - theirs.double()).abs().max().item()
                    err = {"fused": (ours.double() - exact).abs().max().item(),
                           "pyg": (theirs.double() - exact).abs().max().item()}
                grad_diff = (grad_fused.double() - x.grad.double()).abs().max().item()
                row = {"threads": threads, "feat": feat, "reduce": reduce, "dtype": dtype_name,
                       "fused": fused, "pyg": pyg, "max_abs_err_vs_float64_out": err,
                       "speedup": pyg["time_s"] / fused["time_s"],
                       # a ratio only where the fused growth is above measurement noise
                       "memory_ratio": (pyg["peak_growth_mib"] / fused["peak_growth_mib"]
                                        if fused["peak_growth_mib"] >= 1.0 else None),
                       "max_abs_diff_out": diff, "max_abs_diff_grad_x": grad_diff}
                rows.append(row)
                ratio = row["memory_ratio"]
                ratio_txt = f"{ratio:.1f}x" if ratio is not None else "n/a"
                print(f"threads={threads:2d} F={feat:4d} {dtype_name:8s} {reduce:4s} | fused "
                      f"{fused['time_s']:.3f} s {fused['peak_growth_mib']:8.1f} MiB | pyg "
                      f"{pyg['time_s']:.3f} s {pyg['peak_growth_mib']:8.1f} MiB | speedup "
                      f"{row['speedup']:.2f}x, memory ratio {ratio_txt} | max diff out "
                      f"{diff:.1e}, grad {grad_diff:.1e}", flush=True)
            del x

    # bfloat16 / float16 columns: time ratio against float32 of the same case and run
    base = {(r["threads"], r["feat"], r["reduce"]): r for r in rows if r["dtype"] == "float32"}
    for r in rows:
        ref = base.get((r["threads"], r["feat"], r["reduce"]))
        if ref is not None and r["dtype"] != "float32":
            r["time_ratio_vs_float32"] = {k: r[k]["time_s"] / ref[k]["time_s"]
                                          for k in ("fused", "pyg")}
            print(f"threads={r['threads']:2d} F={r['feat']:4d} {r['reduce']:4s} {r['dtype']} / "
                  f"float32 time: fused {r['time_ratio_vs_float32']['fused']:.2f}, pyg "
                  f"{r['time_ratio_vs_float32']['pyg']:.2f}")

    result = {"benchmark": "gather_aggregate", "nodes": args.nodes, "edges": args.edges,
              "repeats": args.repeats, "torch": torch.__version__, "machine": platform.machine(),
              "cpu_count": os.cpu_count(),
              "dtypes": args.dtypes,
              "note": "forward + backward (grad of x, weights constant); time = median; memory = "
                      "median peak RSS growth of one run (VmHWM after clear_refs minus VmRSS); "
                      "bfloat16/float16: rows and weights in that dtype, the fused kernel "
                      "accumulating in float32",
              "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=args.out.parent, delete=False, suffix=".tmp") as f:
        json.dump(result, f, indent=1)
    os.replace(f.name, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
