"""Validation of a PyG ``HeteroData`` before it is partitioned (``writer.write_hetero_partition``).

Turns the ``HeteroData`` into plain per-type pieces (:class:`HeteroInput`) and refuses, with a
``ValueError`` naming the type and the value, everything the partition could not represent
faithfully: a node type whose tensors disagree on the number of nodes, an edge type whose node
types are missing, edge ids outside their source / destination type's range, tensors that are
neither node- nor edge-level, names that are not strings.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from pyg_sar.partition import format as fmt

EdgeType = tuple[str, str, str]


@dataclass
class HeteroInput:
    """A validated ``HeteroData`` in plain pieces (all in the data's type order).

    Attributes:
        node_types: node type names.
        edge_types: ``(src, rel, dst)`` triples.
        num_nodes: number of nodes of every node type.
        node_data: per node type, its node-level tensors by key (rows = that type's nodes).
        edge_index: per edge type, ``int64 [2, E]`` numpy edges (row 0 source ids of the
            source type, row 1 destination ids of the destination type).
        edge_data: per edge type, its edge-level tensors by key (rows = that type's edges).
    """

    node_types: list[str]
    edge_types: list[EdgeType]
    num_nodes: dict[str, int]
    node_data: dict[str, dict[str, Tensor]]
    edge_index: dict[EdgeType, np.ndarray]
    edge_data: dict[EdgeType, dict[str, Tensor]]


def is_hetero(data: Any) -> bool:
    """Whether ``data`` is a ``torch_geometric.data.HeteroData``."""
    from torch_geometric.data import HeteroData
    return isinstance(data, HeteroData)


def _check_key(key: str, where: str) -> None:
    if not fmt.KEY_PATTERN.fullmatch(key):
        raise ValueError(f"{where}: tensor attribute name {key!r} cannot be stored (use "
                         f"letters, digits and '_')")


def _num_nodes(node_type: str, store: Any) -> int:
    """The node count of ``store``, refusing tensors that disagree on it."""
    rows = {k: (v.size(0) if v.dim() else None) for k, v in store.items()
            if isinstance(v, Tensor)}
    given = store["num_nodes"] if "num_nodes" in store else None
    if given is not None and (not isinstance(given, (int, np.integer))
                              or isinstance(given, bool) or given < 0):
        raise ValueError(f"node type {node_type!r}: num_nodes must be a non-negative integer "
                         f"(got {given!r})")
    counts = set(rows.values()) | ({int(given)} if given is not None else set())
    if len(counts) > 1 or None in counts:
        listed = ([f"num_nodes={given}"] if given is not None else []) + \
            [f"'{k}' has {r} rows" for k, r in rows.items()]
        raise ValueError(f"node type {node_type!r}: node tensors disagree on the number of "
                         f"nodes: " + ", ".join(listed))
    if not counts:
        raise ValueError(f"node type {node_type!r} has neither tensors nor num_nodes: set "
                         f"data[{node_type!r}].num_nodes")
    return counts.pop()


def _edge_array(edge_type: EdgeType, store: Any, num_src: int, num_dst: int) -> np.ndarray:
    edge_index = store["edge_index"] if "edge_index" in store else None
    if "adj_t" in store:
        raise ValueError(f"edge type {edge_type}: a sparse adj_t is not supported for "
                         f"heterogeneous graphs; give the edge type's edge_index instead")
    if edge_index is None:
        raise ValueError(f"edge type {edge_type} has no 'edge_index' (partitioning needs a "
                         f"[2, num_edges] edge_index tensor per edge type)")
    if not isinstance(edge_index, Tensor):
        raise ValueError(f"edge type {edge_type}: edge_index must be a tensor (got "
                         f"{type(edge_index).__name__})")
    if edge_index.is_floating_point() or edge_index.is_complex() or \
            edge_index.dtype == torch.bool:
        raise ValueError(f"edge type {edge_type}: edge_index must be an integer tensor (got "
                         f"dtype {edge_index.dtype})")
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"edge type {edge_type}: edge_index must have shape [2, num_edges] "
                         f"(got {list(edge_index.shape)})")
    array = np.ascontiguousarray(edge_index.detach().cpu().numpy(), dtype=np.int64)
    for row, (what, node_type, high) in enumerate((("source", edge_type[0], num_src),
                                                   ("destination", edge_type[2], num_dst))):
        ids = array[row]
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= high):
            bad = int(ids.min()) if int(ids.min()) < 0 else int(ids.max())
            col = int(np.argmax(ids == bad))
            raise ValueError(f"edge type {edge_type}: {what} node id {bad} (edge {col}) is "
                             f"outside [0, {high}), the nodes of type {node_type!r}")
    return array


def _edge_tensors(edge_type: EdgeType, store: Any, num_edges: int) -> dict[str, Tensor]:
    out = {}
    for key in sorted(store.keys()):
        value = store[key]
        if key in ("edge_index", "adj_t") or not isinstance(value, Tensor):
            continue
        _check_key(key, f"edge type {edge_type}")
        rows = value.size(0) if value.dim() else None
        if rows != num_edges:
            raise ValueError(f"edge type {edge_type}: edge tensor '{key}' has {rows} rows, "
                             f"expected num_edges={num_edges}")
        out[key] = value
    return out


def read_hetero(data: Any) -> HeteroInput:
    """Validate ``data`` (a ``HeteroData``) and split it into :class:`HeteroInput`.

    Raises:
        ValueError: naming the node / edge type and the value at fault.
    """
    node_types = list(data.node_types)
    edge_types = [tuple(et) for et in data.edge_types]
    if not node_types:
        raise ValueError("the HeteroData has no node types")
    for t in node_types:
        if not isinstance(t, str) or not t:
            raise ValueError(f"node type names must be non-empty strings (got {t!r})")
    num_nodes = {t: _num_nodes(t, data[t]) for t in node_types}
    node_data = {}
    for t in node_types:
        tensors = {}
        for key in sorted(data[t].keys()):
            value = data[t][key]
            if isinstance(value, Tensor):
                _check_key(key, f"node type {t!r}")
                tensors[key] = value
        node_data[t] = tensors
    edge_index, edge_data = {}, {}
    for et in edge_types:
        if len(et) != 3 or not all(isinstance(p, str) for p in et):
            raise ValueError(f"edge types must be (src, rel, dst) triples of strings "
                             f"(got {et!r})")
        missing = [t for t in (et[0], et[2]) if t not in num_nodes]
        if missing:
            raise ValueError(f"edge type {et}: node type {missing[0]!r} is missing from the "
                             f"HeteroData (node types: {node_types}); give it its nodes, "
                             f"e.g. data[{missing[0]!r}].num_nodes = N")
        edges = _edge_array(et, data[et], num_nodes[et[0]], num_nodes[et[2]])
        edge_index[et] = edges
        edge_data[et] = _edge_tensors(et, data[et], int(edges.shape[1]))
    return HeteroInput(node_types, edge_types, num_nodes, node_data, edge_index, edge_data)
