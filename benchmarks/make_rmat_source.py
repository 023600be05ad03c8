"""Write an R-MAT graph as an on-disk ``NpySource`` folder for the streaming partition writer.

The graph is ``pyg_sar.datasets.rmat`` with the parameters of ``benchmarks/partition_scale.py``
(Graph500's a, b, c = 0.57, 0.19, 0.19, 16 features, 8 classes, seed 0): 1M nodes / 20M edges
is the graph of ``partition_scale.json``; 5M nodes / 100M edges keeps its average degree.
The generator deduplicates globally and sorts, so it runs in one piece (not in chunks): its peak
is that of ``rmat`` (recorded with the time in ``generation.json`` inside the folder, which the
benchmark does not count). The folder::

    edge_index.npy   [2, E] (int64, or int32 with --index-dtype int32), memory-mappable
    x.npy            [N, 16] float32
    y.npy            [N] int64
    train_mask.npy, val_mask.npy, test_mask.npy   [N] bool
    source.json      {"format": "npy", "num_nodes": N, "num_edges": E, ...}

is written into a hidden sibling and renamed into place when complete.

    python benchmarks/make_rmat_source.py OUT_DIR [--num-nodes 5000000] [--num-edges 100000000]
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from procmem import status_kib  # noqa: E402 (benchmarks/procmem.py)

from pyg_sar.datasets import rmat  # noqa: E402
from pyg_sar.partition.storage import save_npy, staged_dir, write_file_atomic  # noqa: E402

NODE_KEYS = ("x", "y", "train_mask", "val_mask", "test_mask")


def make_source(out_dir: Path, num_nodes: int, num_edges: int, seed: int = 0,
                index_dtype: str = "int64", overwrite: bool = False) -> dict:
    """Generate the R-MAT graph and write it as an ``NpySource`` folder; return source.json."""
    if index_dtype not in ("int32", "int64"):
        raise ValueError(f"index_dtype must be 'int32' or 'int64' (got {index_dtype!r})")
    if index_dtype == "int32" and num_nodes >= 2 ** 31:
        raise ValueError(f"index_dtype int32 cannot hold node ids of {num_nodes} nodes")
    t = time.perf_counter()
    data = rmat(num_nodes, num_edges, num_features=16, seed=seed)
    gen_s = time.perf_counter() - t
    gen_hwm = status_kib("VmHWM")
    print(f"generated {data.num_nodes} nodes / {data.num_edges} edges in {gen_s:.1f} s "
          f"(VmHWM {gen_hwm / 2 ** 20:.2f} GiB)", flush=True)

    t = time.perf_counter()
    hashes = {}
    with staged_dir(out_dir, overwrite) as tmp:
        edge_index = data.edge_index.numpy()
        data.edge_index = None
        if index_dtype == "int32":
            edge_index = edge_index.astype(np.int32)
        hashes["edge_index.npy"] = save_npy(tmp / "edge_index.npy", edge_index)
        num_stored = int(edge_index.shape[1])
        del edge_index
        for key in NODE_KEYS:
            hashes[f"{key}.npy"] = save_npy(tmp / f"{key}.npy", data[key].numpy())
        meta = {
            "format": "npy",
            "num_nodes": int(num_nodes),
            "num_edges": num_stored,
            "node_tensors": list(NODE_KEYS),
            "generator": {"name": "pyg_sar.datasets.rmat", "num_nodes": num_nodes,
                          "requested_edges": num_edges, "a": 0.57, "b": 0.19, "c": 0.19,
                          "num_features": 16, "num_classes": 8, "seed": seed},
            "sha256": hashes,
        }
        write_file_atomic(tmp / "source.json", (json.dumps(meta, indent=2) + "\n").encode())
        write_s = time.perf_counter() - t
        stats = {"generation_s": round(gen_s, 2), "write_s": round(write_s, 2),
                 "generation_vmhwm_gib": round(gen_hwm / 2 ** 20, 3),
                 "vmhwm_gib": round(status_kib("VmHWM") / 2 ** 20, 3),
                 "python": platform.python_version(), "numpy": np.__version__}
        write_file_atomic(tmp / "generation.json", (json.dumps(stats, indent=2) + "\n").encode())
    print(f"wrote {out_dir} in {write_s:.1f} s: {json.dumps(stats)}", flush=True)
    return meta


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--num-nodes", type=int, default=5_000_000)
    parser.add_argument("--num-edges", type=int, default=100_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--index-dtype", choices=("int32", "int64"), default="int64")
    parser.add_argument("--overwrite", action="store_true")
    args = parser.parse_args()
    make_source(args.out_dir, args.num_nodes, args.num_edges, args.seed, args.index_dtype,
                args.overwrite)


if __name__ == "__main__":
    main()
