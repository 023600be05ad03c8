"""Benchmark on a CUDA GPU: pyg_sar's fused kernels vs PyG on the same GPU and graph.

Graph: R-MAT (a, b, c, d = 0.57, 0.19, 0.19, 0.05; self-loops and duplicates removed),
``2**--scale`` nodes and about ``--edges`` edges, ``--channels`` features. Cases, each forward +
backward, in float32 and in bfloat16:

* ``op/sum``, ``op/mean``: ``pyg_sar.ops.gather_aggregate`` over the CSR graph (no E x F
  tensor) vs PyG's own message passing primitive, ``x[src]`` then
  ``torch_geometric.utils.scatter`` (bfloat16: both take bfloat16 rows; ours sums in float32);
* ``layer/sage``: ``SAGEConv(F, F, aggr="mean")`` converted by ``pyg_sar.convert`` on a
  one-rank DistGraph (fused gather-aggregate) vs the same PyG layer on ``edge_index``;
* ``layer/gat``: ``GATConv(F, F // 4, heads=4)`` converted (fused online-softmax attention
  kernels) vs PyG's GATConv. For layers, bfloat16 means ``torch.autocast("cuda", bfloat16)``
  around both.

Per case and side: median wall time of ``--repeats`` runs after ``--warmup`` runs (CUDA
synchronised before and after each run), peak GPU memory of one run above what was allocated
before it (``torch.cuda.max_memory_allocated``), and the largest difference of the output
from the other side's relative to its largest entry (both compute the same function).

    python benchmarks/gpu_kernels.py [--out gpu-results/gpu_kernels.json]

A case that fails (e.g. a dtype the build lacks) is recorded with its error and the script
exits with status 1 after writing the JSON. Without a CUDA GPU it exits with status 2 and says
why; ``--smoke`` runs a tiny graph on
whatever device there is (the CPU here) to check the script itself (tests/gpu).
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pyg_sar  # noqa: E402
from pyg_sar.graph import Block, DistGraph  # noqa: E402

RMAT = (0.57, 0.19, 0.19, 0.05)


def rmat_edges(scale: int, num_edges: int, seed: int = 0) -> torch.Tensor:
    """``[2, E]`` R-MAT edges on ``2**scale`` nodes: per bit, a quadrant with the RMAT
    probabilities; self-loops and duplicates removed, sorted by destination."""
    g = torch.Generator().manual_seed(seed)
    src = torch.zeros(num_edges, dtype=torch.int64)
    dst = torch.zeros(num_edges, dtype=torch.int64)
    cum = torch.tensor(RMAT).cumsum(0)
    for bit in range(scale):
        q = torch.searchsorted(cum, torch.rand(num_edges, generator=g), right=True).clamp(max=3)
        src |= (q // 2) << bit
        dst |= (q % 2) << bit
    n = 1 << scale
    perm = torch.randperm(n, generator=g)  # spread the hubs over the id range
    src, dst = perm[src], perm[dst]
    keep = src != dst
    key = torch.unique(dst[keep] * n + src[keep])
    return torch.stack([key % n, key // n])


def one_rank_graph(edge_index: torch.Tensor, n: int) -> tuple[DistGraph, torch.Tensor,
                                                               torch.Tensor]:
    """The graph as a one-rank DistGraph, and its CSR (rowptr, col) over destinations."""
    src, dst = edge_index
    deg = torch.bincount(dst, minlength=n)
    rowptr = torch.zeros(n + 1, dtype=torch.int64)
    rowptr[1:] = deg.cumsum(0)
    block = Block(0, rowptr, src, n, 0, deg)
    graph = DistGraph(0, 1, [0, n], [block], [torch.zeros(0, dtype=torch.int64)], deg)
    return graph, rowptr, src


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(run, device: torch.device, warmup: int, repeats: int) -> dict:
    """Median time of ``run()`` (forward + backward) and the peak memory of one run."""
    for _ in range(warmup):
        run()
    times = []
    for _ in range(repeats):
        _sync(device)
        t0 = time.perf_counter()
        run()
        _sync(device)
        times.append(time.perf_counter() - t0)
    peak = None
    if device.type == "cuda":
        _sync(device)
        base = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        run()
        _sync(device)
        peak = torch.cuda.max_memory_allocated(device) - base
    return {"time_s": statistics.median(times), "times_s": times, "peak_bytes": peak}


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach().float(), b.detach().float()
    return float((a - b).abs().max()) / max(float(b.abs().max()), 1e-30)


def op_case(reduce: str, dtype: torch.dtype, x: torch.Tensor, rowptr, col, edge_index,
            device, warmup, repeats) -> dict:
    """Fused gather-aggregate vs PyG's gather + scatter, forward + backward."""
    from torch_geometric.utils import scatter
    xs = x.to(dtype).detach().requires_grad_()
    n = rowptr.numel() - 1
    src, dst = edge_index

    def ours():
        return pyg_sar.ops.gather_aggregate(rowptr, col, xs, None, reduce)

    def pyg():
        return scatter(xs[src], dst, dim=0, dim_size=n, reduce=reduce)

    def runner(fn):
        def run():
            xs.grad = None
            fn().float().sum().backward()
        return run

    diff = _rel(ours(), pyg())
    return {"ours": measure(runner(ours), device, warmup, repeats),
            "pyg": measure(runner(pyg), device, warmup, repeats), "max_rel_diff": diff}


def layer_case(kind: str, dtype: torch.dtype, x: torch.Tensor, graph: DistGraph,
               edge_index: torch.Tensor, channels: int, device, warmup, repeats) -> dict:
    """A converted layer on the one-rank DistGraph vs the PyG layer on edge_index."""
    from torch_geometric.nn import GATConv, SAGEConv
    torch.manual_seed(0)
    ref = (SAGEConv(channels, channels, aggr="mean") if kind == "sage"
           else GATConv(channels, channels // 4, heads=4)).to(device)
    ours = pyg_sar.convert(copy.deepcopy(ref), pyg_sar.SARConfig(mode="sar", check_loss=False))
    xs = x.detach().requires_grad_()
    autocast = dtype == torch.bfloat16

    def forward(model, g):
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
            return model(xs, g)

    def runner(model, g):
        def run():
            model.zero_grad(set_to_none=True)
            xs.grad = None
            forward(model, g).float().sum().backward()
        return run

    diff = _rel(forward(ours, graph), forward(ref, edge_index))
    return {"ours": measure(runner(ours, graph), device, warmup, repeats),
            "pyg": measure(runner(ref, edge_index), device, warmup, repeats),
            "max_rel_diff": diff}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=17, help="2**scale nodes (default 17)")
    parser.add_argument("--edges", type=int, default=800_000,
                        help="R-MAT edges drawn before de-duplication (default 800000)")
    parser.add_argument("--channels", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"],
                        choices=["float32", "bfloat16"])
    parser.add_argument("--out", type=Path, default=None, help="write the JSON here too")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny graph, one repeat, any device (checks the script)")
    args = parser.parse_args(argv)

    if args.smoke:
        args.scale, args.edges, args.channels, args.warmup, args.repeats = 8, 2000, 16, 1, 1
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        if torch.version.cuda is None or not torch.cuda.is_available():
            why = ("this torch is CPU-only" if torch.version.cuda is None
                   else "torch.cuda.is_available() is False")
            print(f"benchmarks/gpu_kernels.py: needs a CUDA GPU ({why}); run it through "
                  f"`bash .ci/gpu` on a GPU machine (--smoke checks the script on a CPU)",
                  file=sys.stderr)
            return 2
        device = torch.device("cuda")
    if not pyg_sar.ops.native_available():
        print("benchmarks/gpu_kernels.py: pyg_sar._C is not built (bash .ci/gpu builds it)",
              file=sys.stderr)
        return 2
    if device.type == "cuda":
        from pyg_sar.testing.devices import missing_cuda_kernels
        missing = missing_cuda_kernels(("gather_aggregate", "gat_block_forward_"))
        if missing:
            print(f"benchmarks/gpu_kernels.py: pyg_sar._C has no CUDA kernel for {missing} "
                  f"(build it with CUDA: bash .ci/gpu)", file=sys.stderr)
            return 2

    edge_index = rmat_edges(args.scale, args.edges)
    n = 1 << args.scale
    graph, rowptr, col = one_rank_graph(edge_index, n)
    graph, rowptr, col = graph.to(device), rowptr.to(device), col.to(device)
    edge_index = edge_index.to(device)
    x = torch.randn(n, args.channels, generator=torch.Generator().manual_seed(1)).to(device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor()
    print(f"gpu_kernels: {name}, torch {torch.__version__}, {n} nodes, {edge_index.shape[1]} "
          f"edges, F={args.channels}, median of {args.repeats} after {args.warmup} warm-up",
          flush=True)
    cases = []
    header = (f"{'case':<11} {'dtype':<9} | {'PyG ms':>8} {'ours ms':>8} {'speedup':>7} | "
              f"{'PyG MB':>8} {'ours MB':>8} | diff")
    print(header)
    for dtype_name in args.dtypes:
        dtype = getattr(torch, dtype_name)
        for case in ("op/sum", "op/mean", "layer/sage", "layer/gat"):
            kind, what = case.split("/")
            try:
                if kind == "op":
                    res = op_case(what, dtype, x, rowptr, col, edge_index, device, args.warmup,
                                  args.repeats)
                else:
                    res = layer_case(what, dtype, x, graph, edge_index, args.channels, device,
                                     args.warmup, args.repeats)
            except (RuntimeError, ValueError) as e:  # e.g. a dtype the build lacks: recorded
                first = str(e).splitlines()[0] if str(e) else type(e).__name__
                cases.append({"case": case, "dtype": dtype_name,
                              "error": f"{type(e).__name__}: {first}"})
                print(f"{case:<11} {dtype_name:<9} | FAILED: {type(e).__name__}: {first}",
                      flush=True)
                continue
            res.update(case=case, dtype=dtype_name,
                       speedup=res["pyg"]["time_s"] / max(res["ours"]["time_s"], 1e-12))
            cases.append(res)

            def mb(v):
                return f"{v / 2**20:>8.1f}" if v is not None else f"{'-':>8}"

            print(f"{case:<11} {dtype_name:<9} | {res['pyg']['time_s'] * 1e3:>8.2f} "
                  f"{res['ours']['time_s'] * 1e3:>8.2f} {res['speedup']:>6.2f}x | "
                  f"{mb(res['pyg']['peak_bytes'])} {mb(res['ours']['peak_bytes'])} | "
                  f"{res['max_rel_diff']:.1e}", flush=True)
    result = {"benchmark": "gpu_kernels", "device": name, "device_type": device.type,
              "smoke": args.smoke, "torch": torch.__version__, "cuda": torch.version.cuda,
              "graph": {"generator": "rmat", "rmat": RMAT, "scale": args.scale, "nodes": n,
                        "edges": int(edge_index.shape[1]), "channels": args.channels},
              "warmup": args.warmup, "repeats": args.repeats, "cases": cases}
    text = json.dumps(result, indent=1)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.out.with_suffix(".tmp")
        tmp.write_text(text)
        os.replace(tmp, args.out)
        print(f"wrote {args.out}")
    failed = [f"{c['case']} {c['dtype']}" for c in cases if "error" in c]
    if failed:
        print(f"gpu_kernels: {len(failed)} case(s) failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
