"""Check a PyG ``HeteroData`` for what pyg_sar needs; every error names the node or edge type
and the offending value."""
from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.data import HeteroData

MASKS = ("train_mask", "val_mask", "test_mask")
NODE_KEYS = ("x", "y", *MASKS, "year")


def _is_int(t: Tensor) -> bool:
    return not (t.dtype.is_floating_point or t.is_complex() or t.dtype == torch.bool)


def _num_nodes(data: HeteroData, node_type: str, where: str) -> int:
    """The node count of ``node_type``: ``num_nodes`` if set, else the rows of its tensors;
    all of them must agree."""
    store = data[node_type]
    counts: dict[str, int] = {}
    explicit = store.get("num_nodes") if "num_nodes" in store else None
    if explicit is not None:
        if isinstance(explicit, bool) or not isinstance(explicit, int) or explicit < 0:
            raise ValueError(f"{where}: node type {node_type!r}: num_nodes must be an integer "
                             f">= 0 (got {explicit!r})")
        counts["num_nodes"] = explicit
    for key in NODE_KEYS:
        value = store.get(key)
        if value is None:
            continue
        if not isinstance(value, Tensor) or value.dim() == 0:
            got = tuple(value.shape) if isinstance(value, Tensor) else type(value).__name__
            raise ValueError(f"{where}: node type {node_type!r}: {key} must be a tensor with "
                             f"one row per node (got {got})")
        counts[key] = value.size(0)
    if not counts:
        raise ValueError(f"{where}: node type {node_type!r} has neither tensors nor num_nodes "
                         f"(set data[{node_type!r}].num_nodes)")
    if len(set(counts.values())) > 1:
        detail = ", ".join(f"{k} {v}" for k, v in counts.items())
        raise ValueError(f"{where}: node type {node_type!r}: its tensors disagree on the number "
                         f"of nodes ({detail})")
    return next(iter(counts.values()))


def check_hetero(data: HeteroData, where: str = "check_hetero") -> dict[str, int]:
    """Validate a ``HeteroData`` for partitioning and node classification.

    Checks, per node type: every node-level tensor (``x``, ``y``, the masks, ``year``) and
    ``num_nodes`` agree on the node count; ``x`` is 2-D and real; ``y`` is an integer
    ``[N]`` (or ``[N, 1]``) tensor whose negative entries (unlabelled nodes) are in no mask;
    masks are boolean. Per edge type ``(src, rel, dst)``: both node types exist;
    ``edge_index`` is an integer ``[2, E]`` tensor with source ids in ``[0, N_src)`` and
    destination ids in ``[0, N_dst)``; ``edge_attr`` / ``edge_weight`` have one row per edge.

    Args:
        data: the graph.
        where: prefix of the error messages (the caller's name).

    Returns:
        The number of nodes of each node type.

    Raises:
        ValueError: naming the node or edge type, the attribute and the value.
    """
    if not isinstance(data, HeteroData):
        raise ValueError(f"{where}: expected a torch_geometric.data.HeteroData (got "
                         f"{type(data).__name__})")
    if not data.node_types:
        raise ValueError(f"{where}: the HeteroData has no node types")
    sizes = {t: _num_nodes(data, t, where) for t in data.node_types}
    for t in data.node_types:
        store = data[t]
        x = store.get("x")
        if x is not None and (x.dim() != 2 or x.is_complex() or x.dtype == torch.bool):
            raise ValueError(f"{where}: node type {t!r}: x must be a 2-D real tensor "
                             f"[num_nodes, num_features] (got shape {tuple(x.shape)}, "
                             f"dtype {x.dtype})")
        y = store.get("y")
        if y is not None:
            if not _is_int(y) or not (y.dim() == 1 or (y.dim() == 2 and y.size(1) == 1)):
                raise ValueError(f"{where}: node type {t!r}: y must hold integer class labels "
                                 f"of shape [N] (got shape {tuple(y.shape)}, dtype {y.dtype})")
        for name in MASKS:
            mask = store.get(name)
            if mask is None:
                continue
            if mask.dtype != torch.bool or mask.dim() != 1:
                raise ValueError(f"{where}: node type {t!r}: {name} must be a bool tensor [N] "
                                 f"(got shape {tuple(mask.shape)}, dtype {mask.dtype})")
            if y is None:
                raise ValueError(f"{where}: node type {t!r} has {name} but no y")
            bad = mask & (y.view(-1) < 0)
            if bool(bad.any()):
                node = int(bad.nonzero()[0])
                raise ValueError(f"{where}: node type {t!r}: {name} holds node {node} whose "
                                 f"label is {int(y.view(-1)[node])} (unlabelled)")
    for edge_type in data.edge_types:
        src, rel, dst = edge_type
        for role, node_type in (("source", src), ("destination", dst)):
            if node_type not in sizes:
                raise ValueError(f"{where}: edge type {edge_type}: its {role} node type "
                                 f"{node_type!r} is missing (node types: {list(sizes)})")
        store = data[edge_type]
        edge_index = store.get("edge_index")
        if not isinstance(edge_index, Tensor):
            raise ValueError(f"{where}: edge type {edge_type} has no edge_index")
        if not _is_int(edge_index) or edge_index.dim() != 2 or edge_index.size(0) != 2:
            raise ValueError(f"{where}: edge type {edge_type}: edge_index must be an integer "
                             f"[2, E] tensor (got shape {tuple(edge_index.shape)}, dtype "
                             f"{edge_index.dtype})")
        num_edges = edge_index.size(1)
        for row, role, node_type in ((0, "source", src), (1, "destination", dst)):
            if num_edges == 0:
                break
            ids = edge_index[row]
            lo, hi = int(ids.min()), int(ids.max())
            if lo < 0 or hi >= sizes[node_type]:
                value = lo if lo < 0 else hi
                raise ValueError(f"{where}: edge type {edge_type}: {role} id {value} is out of "
                                 f"range for node type {node_type!r} ({sizes[node_type]} "
                                 f"nodes)")
        for key in ("edge_attr", "edge_weight"):
            value = store.get(key)
            if value is not None and (not isinstance(value, Tensor) or value.dim() == 0
                                      or value.size(0) != num_edges):
                got = tuple(value.shape) if isinstance(value, Tensor) else type(value).__name__
                raise ValueError(f"{where}: edge type {edge_type}: {key} must have one row per "
                                 f"edge ({num_edges}) (got {got})")
    return sizes
