"""Checks of a converted heterogeneous model's call: ``model(x_dict, edge_index_dict, ...)``.

A heterogeneous model (``to_hetero(model, metadata)``, ``HeteroConv``) runs each edge type's
conv over that type's bipartite :class:`~pyg_sar.graph.DistGraph`; the aggregation across edge
types is local per destination node, so nothing else changes. Two mistakes would otherwise
surface as a bare ``KeyError`` deep inside generated code, or not at all (``HeteroConv``
silently skips an edge type its input lacks): a model whose edge types are not the
partition's, and a node type's tensor whose row count is not the rank's number of nodes of
that type. :func:`check_hetero_call` (run before every call of a converted model) refuses
both, naming the type and the values.
"""
from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.nn.conv import MessagePassing

from pyg_sar.graph import DistGraph

EdgeType = tuple[str, str, str]


def model_edge_types(model: torch.nn.Module) -> set[EdgeType]:
    """The edge types a heterogeneous model has convs for: the keys of ``HeteroConv.convs`` and
    of the per-edge-type module dicts ``to_hetero`` makes (``'src__rel__dst'``)."""
    out: set[EdgeType] = set()
    for module in model.modules():
        if not isinstance(module, torch.nn.ModuleDict):
            continue
        for key, child in module.items():
            if not isinstance(child, MessagePassing):
                continue
            if isinstance(key, tuple) and len(key) == 3:
                out.add(tuple(str(k) for k in key))
            elif isinstance(key, str) and len(key.split("__")) == 3:
                out.add(tuple(key.split("__")))
    return out


def _graph_dicts(values) -> list[dict]:
    return [v for v in values if isinstance(v, dict) and v
            and any(isinstance(g, DistGraph) for g in v.values())
            and all(isinstance(k, tuple) and len(k) == 3 for k in v)]


def _node_dicts(values) -> list[dict]:
    return [v for v in values if isinstance(v, dict) and v
            and all(isinstance(k, str) for k in v)
            and all(isinstance(t, Tensor) and t.dim() > 0 for t in v.values())]


def check_hetero_call(model: torch.nn.Module, args: tuple, kwargs: dict) -> None:
    """Refuse a call whose edge types miss some of the model's, or whose node tensors'
    row counts disagree with the graphs' (see the module docstring)."""
    values = (*args, *kwargs.values())
    graph_dicts = _graph_dicts(values)
    if not graph_dicts:
        return
    graphs = graph_dicts[0]
    wanted = model_edge_types(model)
    missing = sorted(wanted - set(graphs))
    if missing:
        raise ValueError(f"pyg_sar: the model has convs for edge types {missing} that the "
                         f"partition's edge_index_dict lacks (it holds {sorted(graphs)}): "
                         f"the model's metadata does not match the partition's")
    for x_dict in _node_dicts(values):
        for edge_type, g in graphs.items():
            if not isinstance(g, DistGraph):
                continue
            src, _, dst = edge_type
            for node_type, rows, role in ((src, g.num_src_nodes, "source"),
                                          (dst, g.num_nodes, "destination")):
                t = x_dict.get(node_type)
                if t is not None and t.shape[0] != rows:
                    raise ValueError(
                        f"pyg_sar: node type {node_type!r} has {t.shape[0]} rows in the "
                        f"model's input, but rank {g.rank} holds {rows} nodes of it (the "
                        f"{role} type of edge type {edge_type}); give each node type its "
                        f"partition's rows (part.x_dict)")
