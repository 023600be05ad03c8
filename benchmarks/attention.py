"""Benchmark: GATConv through the fused attention kernels (pyg_sar, one process) vs plain PyG.

Both run forward + backward of a GATConv (``heads`` heads, ``64 // heads`` channels each, concat,
self-loops) on a random graph with 10 in-edges per node on average, float32. Ours is the same
module after ``pyg_sar.convert`` on a one-rank ``DistGraph`` (P = 1, mode "sar"). Per case:

* time: median of ``--repeats`` forward+backward runs after one warm-up;
* saved: bytes saved for backward (``torch.autograd.graph.saved_tensors_hooks``, unique
  storages, the layer's input ``x`` excluded as it is shared by both);
* load: the machine's 1-minute load average (``os.getloadavg``) before and after the case, as
  the machine may be shared (figures taken under load are slower and noisier);
* peak: peak RSS growth of one run (``VmHWM`` after ``echo 5 > /proc/self/clear_refs``, minus
  ``VmRSS`` before), with glibc told to unmap large blocks on free (``MALLOC_MMAP_THRESHOLD_``)
  so that RSS follows live memory; the script re-executes itself with that set.

``--kernel-dtypes float32 bfloat16`` (opt-in) also times the fused op alone
(``pyg_sar.ops.gat_attention``, forward + backward, same graph and head shapes, float64 inputs
rounded to each dtype; bfloat16 is computed in float32 with float32 softmax state and returned in
bfloat16) in the same run, with the time ratio against float32 and the output's largest distance
from the float64 run (input and output rounding included).

Writes ``benchmarks/results/attention.json`` and prints a table::

    python benchmarks/attention.py [--edges 100000 1000000 4000000 --heads 1 4 8 --repeats 3]
        [--kernel-dtypes float32 bfloat16] [--no-layers]
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from procmem import MALLOC_ENV, reset_peak, status_kib  # benchmarks/procmem.py
from torch_geometric.nn import GATConv

import pyg_sar
from pyg_sar.graph import Block, DistGraph

RESULTS = Path(__file__).resolve().parent / "results" / "attention.json"
IN_CHANNELS = 64
AVG_DEGREE = 10


def random_graph(num_edges: int, seed: int = 0):
    """(edge_index without self-loops, the same graph as a one-rank DistGraph)."""
    n = max(num_edges // AVG_DEGREE, 2)
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, n, (num_edges,), generator=g)
    dst = torch.randint(0, n, (num_edges,), generator=g)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    order = torch.argsort(dst * n + src)
    src, dst = src[order], dst[order]
    deg = torch.bincount(dst, minlength=n)
    rowptr = torch.zeros(n + 1, dtype=torch.long)
    rowptr[1:] = deg.cumsum(0)
    block = Block(0, rowptr, src, n, 0, deg)
    graph = DistGraph(0, 1, [0, n], [block], [torch.zeros(0, dtype=torch.long)], deg)
    return torch.stack([src, dst]), graph, n


def measure(model, x, edge_index, repeats: int) -> dict:
    def run():
        out = model(x, edge_index)
        out.sum().backward()

    run()  # warm-up (and the one-time self-loop view of the DistGraph)
    times = []
    for _ in range(repeats):
        model.zero_grad(set_to_none=True)
        x.grad = None
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    # bytes saved for backward: unique storages, x excluded
    seen: dict[int, int] = {}
    skip = x.untyped_storage().data_ptr()

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr != skip:
            seen[ptr] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(x, edge_index)
    saved = sum(seen.values())
    out.sum().backward()
    del out
    model.zero_grad(set_to_none=True)
    x.grad = None
    before = status_kib("VmRSS")
    reset_peak()
    run()
    peak = (status_kib("VmHWM") - before) * 1024
    return {"time_s": statistics.median(times), "times_s": times, "saved_bytes": saved,
            "peak_rss_bytes": peak}


def measure_kernel(graph, n: int, heads: int, dtypes: list[str], repeats: int) -> dict:
    """forward + backward of ``pyg_sar.ops.gat_attention`` alone, per dtype (median time) and its
    output's largest distance from the float64 result (inputs rounded to each dtype)."""
    block = graph.blocks[0]
    rowptr, col = block.rowptr, block.col
    channels = 64 // heads
    g = torch.Generator().manual_seed(3)
    base = [torch.randn(n, heads, channels, generator=g, dtype=torch.float64),
            torch.randn(n, heads, generator=g, dtype=torch.float64),
            torch.randn(n, heads, generator=g, dtype=torch.float64)]
    exact = None
    out: dict = {}
    for name in ["float64", *dtypes]:
        dtype = getattr(torch, name)
        inputs = [t.to(dtype).requires_grad_() for t in base]

        def run(inputs=inputs):
            res = pyg_sar.ops.gat_attention(rowptr, col, *inputs)
            res.sum().backward()
            return res

        res = run().detach()
        if name == "float64":
            exact = res
            continue
        times = []
        for _ in range(repeats):
            for t in inputs:
                t.grad = None
            t0 = time.perf_counter()
            run()
            times.append(time.perf_counter() - t0)
        out[name] = {"time_s": statistics.median(times), "times_s": times,
                     "max_abs_err_vs_float64": (res.double() - exact).abs().max().item()}
    if "float32" in out:
        for row in out.values():
            row["time_ratio_vs_float32"] = row["time_s"] / out["float32"]["time_s"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", type=int, nargs="+", default=[100_000, 1_000_000, 4_000_000])
    parser.add_argument("--heads", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--kernel-dtypes", nargs="+", default=[],
                        choices=["float32", "float64", "bfloat16", "float16"])
    parser.add_argument("--no-layers", action="store_true",
                        help="skip the GATConv comparison (with --kernel-dtypes: kernels only)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if any(os.environ.get(k) != v for k, v in MALLOC_ENV.items()):
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **MALLOC_ENV})
    if not pyg_sar.ops.native_available():
        raise SystemExit("benchmarks/attention.py: pyg_sar._C is not built (pip install -e .)")

    cases = []
    header = (f"{'edges':>9} {'heads':>5} | {'PyG s':>7} {'ours s':>7} {'speedup':>7} | "
              f"{'PyG saved MB':>12} {'ours saved MB':>13} {'ratio':>6} | "
              f"{'PyG peak MB':>11} {'ours peak MB':>12} | load")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, float32, "
          f"in={IN_CHANNELS}, out=64 (concat), median of {args.repeats}")
    print(header)
    for num_edges in args.edges:
        edge_index, graph, n = random_graph(num_edges)
        x = torch.randn(n, IN_CHANNELS, generator=torch.Generator().manual_seed(1))
        x.requires_grad_()
        for heads in args.heads:
            load_before = os.getloadavg()[0]
            if args.kernel_dtypes:
                kern = measure_kernel(graph, n, heads, args.kernel_dtypes, args.repeats)
                print(f"{num_edges:>9} {heads:>5} | kernel alone: " + ", ".join(
                    f"{k} {v['time_s']:.3f} s ({v.get('time_ratio_vs_float32', 1.0):.2f}x "
                    f"float32, err {v['max_abs_err_vs_float64']:.1e})" for k, v in kern.items()),
                    flush=True)
                if args.no_layers:
                    cases.append({"edges": num_edges, "nodes": n, "heads": heads,
                                  "channels_per_head": 64 // heads, "kernel": kern,
                                  "load_avg_1min": [load_before, os.getloadavg()[0]]})
                    continue
            torch.manual_seed(0)
            ref = GATConv(IN_CHANNELS, 64 // heads, heads=heads)
            ours = pyg_sar.convert(copy.deepcopy(ref), pyg_sar.SARConfig(mode="sar"))
            pyg = measure(ref, x, edge_index, args.repeats)
            fused = measure(ours, x, graph, args.repeats)
            case = {"edges": int(edge_index.shape[1]), "nodes": n, "heads": heads,
                    "channels_per_head": 64 // heads, "pyg": pyg, "ours": fused,
                    "speedup": pyg["time_s"] / fused["time_s"],
                    "saved_ratio": pyg["saved_bytes"] / max(fused["saved_bytes"], 1),
                    "load_avg_1min": [load_before, os.getloadavg()[0]]}
            if args.kernel_dtypes:
                case["kernel"] = kern
            cases.append(case)
            mb = 1 / 2**20
            print(f"{case['edges']:>9} {heads:>5} | {pyg['time_s']:>7.3f} {fused['time_s']:>7.3f} "
                  f"{case['speedup']:>6.2f}x | {pyg['saved_bytes'] * mb:>12.1f} "
                  f"{fused['saved_bytes'] * mb:>13.1f} {case['saved_ratio']:>5.1f}x | "
                  f"{pyg['peak_rss_bytes'] * mb:>11.1f} {fused['peak_rss_bytes'] * mb:>12.1f} | "
                  f"{case['load_avg_1min'][0]:.1f}-{case['load_avg_1min'][1]:.1f}",
                  flush=True)
        del edge_index, graph, x
    result = {"benchmark": "attention", "torch": torch.__version__,
              "threads": torch.get_num_threads(), "machine": platform.machine(),
              "processor": platform.processor(), "dtype": "float32",
              "kernel_dtypes": args.kernel_dtypes, "layers": not args.no_layers,
              "in_channels": IN_CHANNELS, "avg_degree": AVG_DEGREE, "repeats": args.repeats,
              "cases": cases}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=args.out.parent, suffix=".tmp",
                                     delete=False) as f:
        json.dump(result, f, indent=1)
    os.chmod(f.name, 0o644)
    os.replace(f.name, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
