"""``partition_graph``: split a PyG ``Data`` into ``P`` per-rank parts on disk.

**Heterogeneous graphs** (``HeteroData``).
``partition_graph`` of a PyG ``HeteroData``: all node types partitioned together, written in
the heterogeneous partition format (:mod:`pyg_sar.partition.format`).
"""
from __future__ import annotations

import copy
import json
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from pyg_sar.partition import format as fmt
from pyg_sar.partition.assign import (
    Balance,
    assign_hetero_parts,
    assign_parts,
    partitioner_of,
    resolve_balance,
)
from pyg_sar.partition.finite import check_finite
from pyg_sar.partition.format import META_FILE, validate_meta
from pyg_sar.partition.hetero_input import HeteroInput, read_hetero
from pyg_sar.partition.layout import EdgeTypeLayout, Layout, TypeNumbering
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

# Keys that must be node-level / edge-level: a wrong row count is an error, not a guess.
NODE_KEYS = ("x", "y", "train_mask", "val_mask", "test_mask", "pos", "node_type")
EDGE_KEYS = ("edge_attr", "edge_weight", "edge_type")


@dataclass
class PartitionReport:
    """What :func:`write_partition` did: sizes, cut, halo, balance (max / mean of nodes,
    in-edges and halo rows over the parts) and the time of every phase; :meth:`summary` prints
    it."""

    path: Path
    method: str
    num_nodes: int
    num_edges: int
    part_num_nodes: list[int]
    part_num_edges: list[int]
    edge_cut: int
    recv_rows: list[int]  # halo size of every rank: rows it receives in total
    timings: dict[str, float] = field(default_factory=dict)
    # meta.json's "balance" block (see balance_summary); None for reports built without one.
    balance: dict | None = None

    def summary(self) -> str:
        cut_pct = 100.0 * self.edge_cut / max(self.num_edges, 1)
        t = self.timings
        b = self.balance or {}

        def ratio(key: str) -> str:
            stats = b.get(key)
            return f" (max/mean {stats['max_over_mean']:.3f})" if stats else ""

        lines = [
            (f"partitioned {self.num_nodes} nodes / {self.num_edges} edges into "
             f"{len(self.part_num_nodes)} parts ({self.method}) -> {self.path}"),
            f"  nodes per part: {self.part_num_nodes}{ratio('nodes')}",
            f"  in-edges per part: {self.part_num_edges}{ratio('in_edges')}",
            f"  edge cut: {self.edge_cut} ({cut_pct:.2f}% of edges)",
            f"  halo rows per part: {self.recv_rows}{ratio('halo_rows')}",
        ]
        if b:
            ubvec = "" if b["ubvec"] is None else f", ubvec {b['ubvec']}"
            lines.insert(1, f"  balanced by {b['by']} ({b['partitioner']}{ubvec})")
        if b and b["lower_bound_in_edges"] > 1.0:
            lines.append(f"  in-edges max/mean cannot go below "
                         f"{b['lower_bound_in_edges']:.3f} (max in-degree * P / E)")
        lines.append("  time: " + ", ".join(f"{k} {v:.2f} s" for k, v in t.items()))
        return "\n".join(lines)


def _edge_index_numpy(data: Any, num_nodes: int) -> np.ndarray:
    edge_index = getattr(data, "edge_index", None)
    if edge_index is None:
        raise ValueError("data has no 'edge_index' (partitioning needs a [2, num_edges] "
                         "edge_index tensor)")
    if isinstance(edge_index, np.ndarray):
        edge_index = torch.from_numpy(edge_index)
    if not isinstance(edge_index, Tensor):
        raise ValueError(f"edge_index must be a tensor (got {type(edge_index).__name__})")
    if edge_index.is_floating_point() or edge_index.is_complex() or \
            edge_index.dtype == torch.bool:
        raise ValueError(f"edge_index must be an integer tensor (got dtype {edge_index.dtype})")
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"edge_index must have shape [2, num_edges] "
                         f"(got {list(edge_index.shape)})")
    array = np.ascontiguousarray(edge_index.detach().cpu().numpy(), dtype=np.int64)
    if array.size:
        low, high = int(array.min()), int(array.max())
        if low < 0 or high >= num_nodes:
            bad = low if low < 0 else high
            col = int(np.argmax((array == bad).any(axis=0)))
            raise ValueError(f"edge_index contains node id {bad} (edge {col}), outside "
                             f"[0, num_nodes={num_nodes})")
    return array


def _adj_t_edges(adj_t: Any) -> tuple[Tensor, Tensor | None, int]:
    """``(edge_index [2, E] as (source, destination), values [E] or None, size)`` of a sparse
    ``adj_t`` (``adj_t[i, j]`` is the edge ``j -> i``): a torch_sparse ``SparseTensor`` or a
    torch sparse COO / CSR / CSC tensor."""
    if hasattr(adj_t, "storage") and hasattr(adj_t, "coo"):  # torch_sparse.SparseTensor
        dst, src, values = adj_t.coo()
        rows, cols = adj_t.sparse_sizes()
    elif isinstance(adj_t, Tensor) and adj_t.layout == torch.sparse_coo:
        adj_t = adj_t.coalesce()  # duplicate entries sum, as the matrix means
        (dst, src), values = adj_t.indices(), adj_t.values()
        rows, cols = adj_t.shape[:2]
    elif isinstance(adj_t, Tensor) and adj_t.layout in (torch.sparse_csr, torch.sparse_csc):
        csr = adj_t.layout == torch.sparse_csr
        ptr = adj_t.crow_indices() if csr else adj_t.ccol_indices()
        idx = adj_t.col_indices() if csr else adj_t.row_indices()
        own = torch.repeat_interleave(torch.arange(ptr.numel() - 1, device=ptr.device),
                                      ptr[1:] - ptr[:-1])
        dst, src = (own, idx) if csr else (idx, own)
        values = adj_t.values()
        rows, cols = adj_t.shape[:2]
    else:
        layout = f" of layout {adj_t.layout}" if isinstance(adj_t, Tensor) else ""
        raise ValueError(f"adj_t must be a torch_sparse SparseTensor or a torch sparse "
                         f"COO/CSR/CSC tensor (got {type(adj_t).__name__}{layout})")
    if rows != cols:
        raise ValueError(f"adj_t must be square (num_nodes x num_nodes), got {rows} x {cols}")
    if values is not None and values.dim() != 1:
        raise ValueError(f"adj_t has values of shape {list(values.shape)}; only one value per "
                         f"edge is supported (pass edge_index with edge_attr for edge "
                         f"features)")
    edge_index = torch.stack([src.to(torch.long), dst.to(torch.long)])
    return edge_index, values, int(rows)


def _from_adj_t(data: Any) -> tuple[Any, dict | None]:
    """``data`` with its sparse ``adj_t`` turned into ``edge_index`` (and its values into
    ``edge_weight``), and the ``adj_t`` entry of ``meta.json``; ``(data, None)`` without one.

    Values that are all 1 (torch's sparse tensors always hold values; ``T.ToSparseTensor()``
    of an unweighted graph gives ones) describe the graph without values."""
    adj_t = getattr(data, "adj_t", None) if hasattr(data, "keys") and "adj_t" in data.keys() \
        else None
    if adj_t is None:
        return data, None
    edge_index, values, size = _adj_t_edges(adj_t)
    if values is not None and not values.is_floating_point() and \
            not values.is_complex():
        values = values.to(torch.get_default_dtype())
    if values is not None and bool((values == 1).all()):
        values = None
    out = copy.copy(data)
    del out.adj_t
    given = getattr(data, "edge_index", None)
    if given is not None and not (isinstance(given, Tensor) and given.shape == edge_index.shape
                                  and bool((given.to(edge_index.device) == edge_index).all())):
        raise ValueError("data has both 'adj_t' and an 'edge_index' that is not adj_t's edges "
                         "in adj_t's order (row-major, adj_t[i, j] being the edge j -> i); "
                         "remove one of them (T.ToSparseTensor() removes edge_index by "
                         "default)")
    out.edge_index = edge_index
    if "num_nodes" in data.keys() and data.num_nodes != size:
        raise ValueError(f"data.num_nodes={data.num_nodes} but adj_t is {size} x {size}")
    out.num_nodes = size
    if values is not None:
        weight = getattr(data, "edge_weight", None)
        if weight is not None and not (isinstance(weight, Tensor)
                                       and weight.shape == values.shape
                                       and torch.equal(weight.to(values), values)):
            raise ValueError("data has both 'adj_t' with values and an 'edge_weight' that "
                             "differs from them; the values are stored as edge_weight, so "
                             "remove one of them")
        out.edge_weight = values
    return out, {"values": "edge_weight" if values is not None else None}


def _check_node_rows(data: Any, num_nodes: int) -> None:
    """The standard node tensors all have ``num_nodes`` rows."""
    rows = {}
    for key in NODE_KEYS:
        value = getattr(data, key, None)
        if isinstance(value, Tensor):
            rows[key] = value.size(0) if value.dim() else None
    if any(r != num_nodes for r in rows.values()):
        # PyG infers num_nodes from x, so list every count: a short x makes the others look off.
        raise ValueError(f"node tensors disagree on the number of nodes (num_nodes="
                         f"{num_nodes}): " + ", ".join(f"'{k}' has {r} rows"
                                                        for k, r in rows.items()))


def _split_tensors(data: Any, num_nodes: int, num_edges: int
                   ) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """Node-level and edge-level tensors of ``data`` (by name first, then by row count)."""
    node, edge = {}, {}
    for key in sorted(data.keys()):
        value = data[key]
        if key == "edge_index" or not isinstance(value, Tensor):
            continue
        if not fmt.KEY_PATTERN.fullmatch(key):
            raise ValueError(f"tensor attribute name {key!r} cannot be stored (use letters, "
                             f"digits and '_')")
        rows = value.size(0) if value.dim() > 0 else None
        if key in NODE_KEYS:
            if rows != num_nodes:
                raise ValueError(f"node tensor '{key}' has {rows} rows, expected "
                                 f"num_nodes={num_nodes}")
            node[key] = value
        elif key in EDGE_KEYS or key.startswith("edge_"):
            if rows != num_edges:
                raise ValueError(f"edge tensor '{key}' has {rows} rows, expected "
                                 f"num_edges={num_edges}")
            edge[key] = value
        elif rows == num_nodes:
            node[key] = value
        elif rows == num_edges:
            edge[key] = value
        else:
            warnings.warn(f"partition_graph: attribute '{key}' (shape {list(value.shape)}) is "
                          f"neither node- nor edge-level and is not stored", stacklevel=3)
    return node, edge


def write_partition(data: Any, num_parts: int, out_dir: str | Path, method: str = "metis",
                    seed: int = 0, overwrite: bool = False, on_nonfinite: str = "warn", *,
                    balance: Balance | None = None,
                    ubvec: Sequence[float] | None = None,
                    progress: Callable[[str], None] | None = None) -> PartitionReport:
    """:func:`partition_graph` returning a :class:`PartitionReport` (sizes, cut, balance,
    timings); a ``HeteroData`` gets a
    :class:`~pyg_sar.partition.writer.HeteroPartitionReport`.

    ``progress``, if given, is called with one line as each phase of a homogeneous graph
    starts (assigning the nodes to parts, laying the parts out, writing them): the CLI prints
    them, since METIS on a large graph takes minutes."""
    from pyg_sar.partition.hetero_input import is_hetero
    if is_hetero(data):
        checked_arguments(num_parts, method, seed, on_nonfinite, balance, ubvec)
        if balance == "edges" or ubvec is not None:
            raise ValueError(f"a HeteroData is partitioned with its per-type node rebalance "
                             f"(every part holds floor or ceil of N_t / P nodes of every type "
                             f"t), which cannot also balance in-edges: balance={balance!r}, "
                             f"ubvec={ubvec!r} are not supported for it (pass balance=None "
                             f"or 'nodes')")
        return write_hetero_partition(data, num_parts, out_dir, method, seed, overwrite,
                                      on_nonfinite)
    t_start = time.perf_counter()
    out_dir = Path(out_dir)
    num_parts, seed = checked_arguments(num_parts, method, seed, on_nonfinite, balance, ubvec)
    balance = resolve_balance(method, balance, num_parts)
    data, adj_t_meta = _from_adj_t(data)
    num_nodes = data.num_nodes
    if num_nodes is None or num_nodes < 1:
        raise ValueError(f"data must have at least one node (got num_nodes={num_nodes})")
    if not 1 <= num_parts <= num_nodes:
        raise ValueError(f"num_parts must be in [1, num_nodes={num_nodes}] (got {num_parts})")
    check_out_dir(out_dir, overwrite)
    _check_node_rows(data, num_nodes)
    edge_index = _edge_index_numpy(data, num_nodes)
    num_edges = int(edge_index.shape[1])
    node_data, edge_data = _split_tensors(data, num_nodes, num_edges)
    check_finite({**node_data, **edge_data}, on_nonfinite, "partition_graph")
    timings = {"validate": time.perf_counter() - t_start}

    say = progress or (lambda line: None)
    t = time.perf_counter()
    routine = partitioner_of(method, num_parts) if num_parts > 1 else method
    say(f"assigning {num_nodes:,} nodes ({num_edges:,} edges) to {num_parts} part(s) with "
        f"{routine} (balance: {balance})")
    parts = assign_parts(edge_index, num_nodes, num_parts, method, seed, balance, ubvec)
    timings["assign"] = time.perf_counter() - t
    say(f"assigned in {timings['assign']:.1f} s; laying out the parts")
    t = time.perf_counter()
    layout = Layout(edge_index, parts, num_parts)
    del parts, edge_index
    timings["layout"] = time.perf_counter() - t

    t = time.perf_counter()
    say(f"writing {num_parts} parts to {out_dir}")
    partitioning = {"by": balance, "partitioner": partitioner_of(method, num_parts),
                    "ubvec": None if ubvec is None else [float(u) for u in ubvec]}
    with staged_dir(out_dir, overwrite) as tmp:
        meta = _write_parts(tmp, layout, node_data, edge_data, method, seed,
                            _num_classes(data, node_data.get("y")), adj_t_meta, partitioning)
    timings["write"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - t_start
    return report_from_meta(out_dir, meta, timings)


def report_from_meta(path: Path, meta: dict, timings: dict[str, float]) -> PartitionReport:
    """The :class:`PartitionReport` of a homogeneous partition whose ``meta.json`` is
    ``meta``."""
    return PartitionReport(
        path=path, method=meta["method"], num_nodes=meta["num_nodes"],
        num_edges=meta["num_edges"], part_num_nodes=meta["part_num_nodes"],
        part_num_edges=meta["part_num_edges"], edge_cut=meta["edge_cut"],
        recv_rows=[sum(p["recv_counts"]) for p in meta["parts"]], timings=timings,
        balance=meta.get("balance"))


def _stats(values: Sequence[int]) -> dict:
    """``{"max": int, "mean": float, "max_over_mean": float}`` (1.0 when all are 0)."""
    top = max(int(v) for v in values)
    mean = sum(int(v) for v in values) / len(values)
    return {"max": top, "mean": float(mean), "max_over_mean": top / mean if mean else 1.0}


def balance_summary(by: str, partitioner: str, ubvec: Sequence[float] | None,
                    part_nodes: Sequence[int], part_in_edges: Sequence[int],
                    halo_rows: Sequence[int], send_rows: Sequence[int],
                    max_in_degree: int) -> dict:
    """``meta.json``'s ``"balance"`` block: how the parts were balanced and how even they came
    out.

    Args:
        by: ``"nodes"`` or ``"edges"``: what the partitioner balanced.
        partitioner: the routine (``"metis-recursive"``, ``"metis-kway"``, ``"random"``,
            ``"contiguous"``, ...).
        ubvec: the tolerance asked for (max/mean of nodes and in-edges), or ``None``.
        part_nodes, part_in_edges, halo_rows, send_rows: per part: nodes owned, edges stored
            (in-edges of the owned nodes), rows received and rows sent per layer.
        max_in_degree: the largest in-degree of a node; ``max_in_degree * P / E`` is the lowest
            in-edges max/mean any node partition can reach (``lower_bound_in_edges``).
    """
    num_parts, num_edges = len(part_nodes), sum(int(e) for e in part_in_edges)
    return {
        "by": by, "partitioner": partitioner,
        "ubvec": None if ubvec is None else [float(u) for u in ubvec],
        "lower_bound_in_edges": (float(max_in_degree) * num_parts / num_edges
                                 if num_edges else 0.0),
        "nodes": _stats(part_nodes), "in_edges": _stats(part_in_edges),
        "halo_rows": _stats(halo_rows), "send_rows": _stats(send_rows),
    }


def build_meta(*, node_offsets: Sequence[int], num_edges: int, parts_info: list[dict],
               files: dict[str, str], num_features: int, num_classes: int | None, method: str,
               seed: int, node_keys: dict[str, dict], edge_keys: dict[str, dict],
               partitioning: dict, max_in_degree: int, adj_t: dict | None = None) -> dict:
    """The ``meta.json`` of a homogeneous partition, from what its writer knows; sizes, cut
    and the ``balance`` block are derived from ``parts_info``. Not yet validated.

    Args:
        node_offsets: ``P + 1`` rising offsets: rank ``r`` owns new ids
            ``[node_offsets[r], node_offsets[r + 1])``.
        num_edges: ``E``.
        parts_info: per rank ``{"block_num_edges", "recv_counts", "send_counts"}`` (lists of
            ``P`` ints).
        files: relative file name -> SHA-256 of every file written.
        num_features, num_classes, method, seed: as recorded in ``meta.json``.
        node_keys, edge_keys: tensor name -> ``{"dtype", "storage_dtype", "shape"}``.
        partitioning: ``{"by": "nodes" | "edges", "partitioner": str, "ubvec": list | None}``.
        max_in_degree: the largest in-degree (for ``balance.lower_bound_in_edges``).
        adj_t: the ``adj_t`` entry, if the input was a sparse ``adj_t``.
    """
    offsets = [int(o) for o in node_offsets]
    part_nodes = [b - a for a, b in zip(offsets[:-1], offsets[1:])]
    part_edges = [sum(int(c) for c in info["block_num_edges"]) for info in parts_info]
    local = [int(info["block_num_edges"][r]) for r, info in enumerate(parts_info)]
    meta = {
        "format_version": fmt.HOMOGENEOUS_FORMAT_VERSION,
        "num_parts": len(parts_info),
        "num_nodes": offsets[-1],
        "num_edges": int(num_edges),
        "node_offsets": offsets,
        "part_num_nodes": part_nodes,
        "part_num_edges": part_edges,
        "edge_cut": sum(part_edges) - sum(local),
        "num_features": int(num_features),
        "num_classes": num_classes,
        "method": method,
        "seed": seed,
        "node_keys": node_keys,
        "edge_keys": edge_keys,
        "parts": parts_info,
        "files": dict(sorted(files.items())),
        "balance": balance_summary(
            partitioning["by"], partitioning["partitioner"], partitioning.get("ubvec"),
            part_nodes, part_edges, [sum(p["recv_counts"]) for p in parts_info],
            [sum(p["send_counts"]) for p in parts_info], max_in_degree),
    }
    if adj_t is not None:
        meta["adj_t"] = adj_t
    return meta


def write_meta(tmp: Path, meta: dict) -> None:
    """Validate ``meta`` and write it as ``tmp/meta.json`` (atomically)."""
    fmt.validate_meta(meta, tmp / fmt.META_FILE)  # never write what the loader would refuse
    text = json.dumps(meta, indent=1, sort_keys=True) + "\n"
    write_file_atomic(tmp / fmt.META_FILE, text.encode())


def _write_parts(tmp: Path, layout: Layout, node_data: dict[str, Tensor],
                 edge_data: dict[str, Tensor], method: str, seed: int,
                 num_classes: int | None, adj_t: dict | None = None,
                 partitioning: dict | None = None) -> dict:
    files: dict[str, str] = {}

    def save(rel: str, array: np.ndarray) -> None:
        files[rel] = save_npy(tmp / rel, array)

    save(fmt.NODE_MAP_FILE, layout.new_of_old)
    parts_info = []
    for r in range(layout.num_parts):
        (tmp / fmt.part_dir(r) / "node").mkdir(parents=True)
        (tmp / fmt.part_dir(r) / "edge").mkdir()
        arrays = layout.rank_arrays(r)
        structure = {"node_ids": arrays.node_ids, "in_degree": arrays.in_degree,
                     "rowptr": arrays.rowptr, "col": arrays.col, "edge_ids": arrays.edge_perm,
                     "recv_node_ids": arrays.recv_node_ids,
                     "recv_in_degree": arrays.recv_in_degree, "send_idx": arrays.send_idx}
        for name in fmt.STRUCTURE_FILES:
            save(fmt.structure_file(r, name), structure[name])
        node_index = torch.from_numpy(arrays.node_ids)
        for key, value in node_data.items():
            save(fmt.node_file(r, key), to_storage(value[node_index.to(value.device)]))
        edge_index = torch.from_numpy(arrays.edge_perm)
        for key, value in edge_data.items():
            save(fmt.edge_file(r, key), to_storage(value[edge_index.to(value.device)]))
        parts_info.append({"block_num_edges": arrays.block_num_edges,
                           "recv_counts": arrays.recv_counts, "send_counts": arrays.send_counts})
        del arrays, structure, node_index, edge_index

    x = node_data.get("x")
    if partitioning is None:
        partitioning = {"by": "nodes", "partitioner": partitioner_of(method, layout.num_parts),
                        "ubvec": None}
    meta = build_meta(
        node_offsets=layout.node_offsets, num_edges=layout.num_edges, parts_info=parts_info,
        files=files,
        num_features=int(x.size(1)) if x is not None and x.dim() == 2 else
        (1 if x is not None else 0),
        num_classes=num_classes, method=method, seed=seed,
        node_keys={k: _key_spec(v) for k, v in node_data.items()},
        edge_keys={k: _key_spec(v) for k, v in edge_data.items()},
        partitioning=partitioning,
        max_in_degree=int(layout.in_degree.max()) if layout.num_nodes else 0, adj_t=adj_t)
    write_meta(tmp, meta)
    return meta


# ------------------------------------------------------------ heterogeneous graphs (HeteroData)
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

    Node types are partitioned together (:mod:`pyg_sar.partition.assign`: METIS on the
    homogeneous view, then balanced per node type); every node type is renumbered so that rank
    ``r`` owns a contiguous range of its ids; every edge type's edges are stored on the rank
    owning their destination, as the blocks of a bipartite DistGraph
    (:mod:`pyg_sar.partition.layout`).
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
        save(fmt.node_map_file(i), numbering[name].new_of_old)
    edge_parts: list[list[dict]] = [[] for _ in layouts]
    for r in range(num_parts):
        for i, name in enumerate(inp.node_types):
            node_ids = numbering[name].node_ids(r)
            save(fmt.ntype_file(r, i, "node_ids"), node_ids)
            index = torch.from_numpy(node_ids)
            for key, value in inp.node_data[name].items():
                save(fmt.ntype_data_file(r, i, key), to_storage(value[index.to(value.device)]))
        for j, (et, layout) in enumerate(zip(inp.edge_types, layouts)):
            arrays = layout.rank_arrays(r)
            for file in fmt.ETYPE_STRUCTURE_FILES:
                save(fmt.etype_file(r, j, file), getattr(arrays, file))
            index = torch.from_numpy(arrays.edge_ids)
            for key, value in inp.edge_data[et].items():
                save(fmt.etype_data_file(r, j, key), to_storage(value[index.to(value.device)]))
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
        "format_version": fmt.HETERO_FORMAT_VERSION,
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
