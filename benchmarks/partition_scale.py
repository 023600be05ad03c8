"""Time and peak memory of partitioning a 1M-node / 20M-edge R-MAT graph with METIS.

For every part count the whole partition step (validation, METIS, layout, writing the folder) is
timed, and its peak RSS is read from ``VmHWM`` after resetting it with ``clear_refs`` once the
graph has been generated (so generation does not count; the input graph held in memory does).

    nice python benchmarks/partition_scale.py [--num-nodes 1000000] [--num-edges 20000000]
                                              [--parts 4 8] [--out benchmarks/results/...]
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Data

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from procmem import reset_peak, status_kib  # noqa: E402 (benchmarks/procmem.py)

from pyg_sar.partition import write_partition  # noqa: E402


def _rmat_torch(num_nodes: int, num_edges: int, num_features: int, seed: int) -> Data:
    """Fallback R-MAT (a, b, c = 0.57, 0.19, 0.19) without pyg_sar.datasets."""
    gen = torch.Generator().manual_seed(seed)
    scale = max(1, (num_nodes - 1).bit_length())
    src = torch.zeros(num_edges, dtype=torch.long)
    dst = torch.zeros(num_edges, dtype=torch.long)
    for _ in range(scale):
        u = torch.rand(num_edges, generator=gen)
        src = src * 2 + (u >= 0.76).long()                      # quadrants c, d
        dst = dst * 2 + (((u >= 0.57) & (u < 0.76)) | (u >= 0.95)).long()  # quadrants b, d
    edge_index = torch.stack([src % num_nodes, dst % num_nodes])
    return Data(x=torch.randn(num_nodes, num_features, generator=gen), edge_index=edge_index,
                y=torch.randint(0, 8, (num_nodes,), generator=gen), num_nodes=num_nodes)


def generate(num_nodes: int, num_edges: int, seed: int) -> tuple[Data, str]:
    try:
        from pyg_sar.datasets import rmat
    except ImportError:
        return _rmat_torch(num_nodes, num_edges, 16, seed), "benchmark fallback (torch)"
    if not callable(rmat):  # the package __init__ is not there yet: the submodule was imported
        rmat = rmat.rmat
    return rmat(num_nodes, num_edges, num_features=16, seed=seed), "pyg_sar.datasets.rmat"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-nodes", type=int, default=1_000_000)
    parser.add_argument("--num-edges", type=int, default=20_000_000)
    parser.add_argument("--parts", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--method", default="metis")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scratch", default=str(ROOT / "benchmarks" / "results" / "tmp"))
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" /
                                             "partition_scale.json"))
    args = parser.parse_args()

    t = time.perf_counter()
    data, source = generate(args.num_nodes, args.num_edges, args.seed)
    gen_time = time.perf_counter() - t
    print(f"generated {data.num_nodes} nodes / {data.num_edges} edges with {source} "
          f"in {gen_time:.1f} s", flush=True)

    runs = []
    scratch = Path(args.scratch)
    for num_parts in args.parts:
        out = scratch / f"partition_scale_p{num_parts}"
        shutil.rmtree(out, ignore_errors=True)
        gc.collect()
        reset_peak()
        rss_before = status_kib("VmRSS")
        t = time.perf_counter()
        report = write_partition(data, num_parts, out, method=args.method, seed=args.seed)
        total = time.perf_counter() - t
        peak = status_kib("VmHWM")
        disk = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
        run = {
            "num_parts": num_parts,
            "time_s": round(total, 3),
            "phase_s": {k: round(v, 3) for k, v in report.timings.items()},
            "peak_rss_gib": round(peak / 2 ** 20, 3),
            "rss_before_gib": round(rss_before / 2 ** 20, 3),
            "peak_increase_gib": round((peak - rss_before) / 2 ** 20, 3),
            "edge_cut": report.edge_cut,
            "edge_cut_fraction": round(report.edge_cut / max(report.num_edges, 1), 4),
            "part_num_nodes": report.part_num_nodes,
            "part_num_edges": report.part_num_edges,
            "halo_rows": report.recv_rows,
            "disk_gib": round(disk / 2 ** 30, 3),
        }
        runs.append(run)
        print(report.summary(), flush=True)
        print(f"  peak RSS {run['peak_rss_gib']} GiB (graph held before: "
              f"{run['rss_before_gib']} GiB), folder {run['disk_gib']} GiB", flush=True)
        shutil.rmtree(out, ignore_errors=True)

    result = {
        "benchmark": "partition_scale",
        "graph": {"generator": source, "num_nodes": int(data.num_nodes),
                  "num_edges": int(data.num_edges), "requested_edges": args.num_edges,
                  "generation_s": round(gen_time, 2)},
        "method": args.method,
        "seed": args.seed,
        "runs": runs,
        "env": {"python": platform.python_version(), "torch": torch.__version__,
                "numpy": np.__version__, "cpus": os.cpu_count(),
                "nice": os.nice(0)},
        "notes": "time_s and peak RSS cover write_partition only (validation, METIS, layout, "
                 "writing + fsync); VmHWM reset via /proc/self/clear_refs after generation.",
    }
    out_json = Path(args.out)
    out_json.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_json.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    os.replace(tmp, out_json)
    print(f"wrote {out_json}")


if __name__ == "__main__":
    main()
