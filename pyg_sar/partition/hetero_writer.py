"""``partition_graph`` of a PyG ``HeteroData``: all node types partitioned together, written in
the heterogeneous partition format (:mod:`pyg_sar.partition.hetero_format`)."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from pyg_sar.partition import hetero_format as hfmt
from pyg_sar.partition.finite import check_finite
from pyg_sar.partition.format import META_FILE, validate_meta
from pyg_sar.partition.hetero_assign import assign_hetero_parts
from pyg_sar.partition.hetero_input import HeteroInput, read_hetero
from pyg_sar.partition.hetero_layout import EdgeTypeLayout, TypeNumbering
from pyg_sar.partition.storage import (
    check_out_dir,
    save_npy,
    staged_dir,
    to_storage,
    write_file_atomic,
)
from pyg_sar.partition.write_common import checked_arguments
from pyg_sar.partition.write_common import key_spec as _key_spec
from pyg_sar.partition.write_common import num_classes as _num_classes


@dataclass
class HeteroPartitionReport:
    """What :func:`write_hetero_partition` did: per type sizes, cuts, halos and timings."""

    path: Path
    method: str
    part_num_nodes: dict[str, list[int]]
    part_num_edges: dict[tuple[str, str, str], list[int]]
    edge_cut: dict[tuple[str, str, str], int]
    recv_rows: dict[tuple[str, str, str], list[int]]
    timings: dict[str, float] = field(default_factory=dict)

    def summary(self) -> str:
        P = len(next(iter(self.part_num_nodes.values())))
        lines = [f"partitioned a heterogeneous graph ({len(self.part_num_nodes)} node types, "
                 f"{len(self.part_num_edges)} edge types) into {P} parts ({self.method}) -> "
                 f"{self.path}"]
        for t, counts in self.part_num_nodes.items():
            lines.append(f"  nodes of {t!r} per part: {counts}")
        for et, counts in self.part_num_edges.items():
            total = max(sum(counts), 1)
            lines.append(f"  edges of {et} per part: {counts}, cut {self.edge_cut[et]} "
                         f"({100.0 * self.edge_cut[et] / total:.2f}%), halo rows "
                         f"{self.recv_rows[et]}")
        lines.append("  time: " + ", ".join(f"{k} {v:.2f} s" for k, v in self.timings.items()))
        return "\n".join(lines)


def write_hetero_partition(data: Any, num_parts: int, out_dir: str | Path,
                           method: str = "metis", seed: int = 0, overwrite: bool = False,
                           on_nonfinite: str = "warn") -> HeteroPartitionReport:
    """:func:`pyg_sar.partition_graph` of a ``HeteroData``, returning a report.

    Node types are partitioned together (:mod:`pyg_sar.partition.hetero_assign`: METIS on the
    homogeneous view, then balanced per node type); every node type is renumbered so that rank
    ``r`` owns a contiguous range of its ids; every edge type's edges are stored on the rank
    owning their destination, as the blocks of a bipartite DistGraph
    (:mod:`pyg_sar.partition.hetero_layout`).
    """
    t_start = time.perf_counter()
    out_dir = Path(out_dir)
    num_parts, seed = checked_arguments(num_parts, method, seed, on_nonfinite)
    inp = read_hetero(data)
    total = sum(inp.num_nodes.values())
    if not 1 <= num_parts <= max(total, 1) or total == 0:
        raise ValueError(f"num_parts must be in [1, total number of nodes={total}] (got "
                         f"{num_parts})")
    check_out_dir(out_dir, overwrite)
    for t in inp.node_types:
        check_finite({f"{t}.{k}": v for k, v in inp.node_data[t].items()}, on_nonfinite,
                     "partition_graph")
    for et in inp.edge_types:
        check_finite({f"{et}.{k}": v for k, v in inp.edge_data[et].items()}, on_nonfinite,
                     "partition_graph")
    timings = {"validate": time.perf_counter() - t_start}

    t = time.perf_counter()
    index = {name: i for i, name in enumerate(inp.node_types)}
    parts = assign_hetero_parts(
        [inp.num_nodes[n] for n in inp.node_types],
        [(index[et[0]], index[et[2]], inp.edge_index[et]) for et in inp.edge_types],
        num_parts, method, seed)
    timings["assign"] = time.perf_counter() - t

    t = time.perf_counter()
    numbering = {n: TypeNumbering(p, num_parts) for n, p in zip(inp.node_types, parts)}
    total_in = {n: np.zeros(inp.num_nodes[n], dtype=np.int64) for n in inp.node_types}
    for et in inp.edge_types:
        dst = numbering[et[2]]
        total_in[et[2]] += np.bincount(dst.new_of_old[inp.edge_index[et][1]],
                                       minlength=dst.num_nodes)
    layouts = [EdgeTypeLayout(inp.edge_index[et], numbering[et[0]], numbering[et[2]],
                              num_parts, total_in[et[0]]) for et in inp.edge_types]
    timings["layout"] = time.perf_counter() - t

    t = time.perf_counter()
    with staged_dir(out_dir, overwrite) as tmp:
        meta = _write(tmp, inp, numbering, layouts, num_parts, method, seed)
    timings["write"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - t_start
    h = meta["hetero"]
    return HeteroPartitionReport(
        path=out_dir, method=method,
        part_num_nodes={n["name"]: list(np.diff(n["node_offsets"]).tolist())
                        for n in h["node_types"]},
        part_num_edges={et: e["part_num_edges"] for et, e in zip(inp.edge_types,
                                                                  h["edge_types"])},
        edge_cut={et: e["edge_cut"] for et, e in zip(inp.edge_types, h["edge_types"])},
        recv_rows={et: [sum(p["recv_counts"]) for p in e["parts"]]
                   for et, e in zip(inp.edge_types, h["edge_types"])},
        timings=timings)


def _num_features(x: Tensor | None) -> int:
    if x is None:
        return 0
    return int(x.size(1)) if x.dim() == 2 else 1


def _write(tmp: Path, inp: HeteroInput, numbering: dict[str, TypeNumbering],
           layouts: list[EdgeTypeLayout], num_parts: int, method: str, seed: int) -> dict:
    files: dict[str, str] = {}

    def save(rel: str, array: np.ndarray) -> None:
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        files[rel] = save_npy(tmp / rel, array)

    for i, name in enumerate(inp.node_types):
        save(hfmt.node_map_file(i), numbering[name].new_of_old)
    edge_parts: list[list[dict]] = [[] for _ in layouts]
    for r in range(num_parts):
        for i, name in enumerate(inp.node_types):
            node_ids = numbering[name].node_ids(r)
            save(hfmt.ntype_file(r, i, "node_ids"), node_ids)
            index = torch.from_numpy(node_ids)
            for key, value in inp.node_data[name].items():
                save(hfmt.ntype_data_file(r, i, key), to_storage(value[index.to(value.device)]))
        for j, (et, layout) in enumerate(zip(inp.edge_types, layouts)):
            arrays = layout.rank_arrays(r)
            for file in hfmt.ETYPE_STRUCTURE_FILES:
                save(hfmt.etype_file(r, j, file), getattr(arrays, file))
            index = torch.from_numpy(arrays.edge_ids)
            for key, value in inp.edge_data[et].items():
                save(hfmt.etype_data_file(r, j, key), to_storage(value[index.to(value.device)]))
            edge_parts[j].append({"block_num_edges": arrays.block_num_edges,
                                  "recv_counts": arrays.recv_counts,
                                  "send_counts": arrays.send_counts})
    node_types = []
    for name in inp.node_types:
        tensors = inp.node_data[name]
        node_types.append({
            "name": name, "num_nodes": inp.num_nodes[name],
            "node_offsets": [int(o) for o in numbering[name].offsets],
            "node_keys": {k: _key_spec(v) for k, v in tensors.items()},
            "num_features": _num_features(tensors.get("x")),
            "num_classes": _num_classes(_NoAttrs(), tensors.get("y")),
        })
    edge_types = []
    for j, (et, layout) in enumerate(zip(inp.edge_types, layouts)):
        edge_types.append({
            "src": et[0], "rel": et[1], "dst": et[2], "num_edges": layout.num_edges,
            "part_num_edges": [int(e) for e in layout.block_counts.sum(axis=1)],
            "edge_cut": layout.edge_cut,
            "edge_keys": {k: _key_spec(v) for k, v in inp.edge_data[et].items()},
            "parts": edge_parts[j],
        })
    meta = {
        "format_version": hfmt.HETERO_FORMAT_VERSION,
        "num_parts": num_parts,
        "method": method,
        "seed": seed,
        "hetero": {"node_types": node_types, "edge_types": edge_types},
        "files": dict(sorted(files.items())),
    }
    validate_meta(meta, tmp / META_FILE)  # never write what the loader would refuse
    text = json.dumps(meta, indent=1, sort_keys=True) + "\n"
    write_file_atomic(tmp / META_FILE, text.encode())
    return meta


class _NoAttrs:
    """Stands for a data object without a ``num_classes`` attribute."""
