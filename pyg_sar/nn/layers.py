"""What the engine must know about PyG layer classes: aggregation, linear messages, preparation.

This is the only place (with :mod:`pyg_sar.nn.propagate`) that knows PyG layer classes.
``inspect_layer`` decides at conversion time whether a layer can be run exactly and raises,
naming the reason, when it cannot.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Optional

import torch
from torch import Tensor
from torch_geometric.nn import aggr as pyg_aggr
from torch_geometric.nn.conv import (
    EdgeConv,
    GATConv,
    GATv2Conv,
    GCNConv,
    GINConv,
    GINEConv,
    GraphConv,
    MessagePassing,
    SAGEConv,
    TransformerConv,
)

from pyg_sar.core.halo import halo_offsets, with_halo
from pyg_sar.core.views import GraphView, existing_loop_index, self_loop_view, stored_view
from pyg_sar.graph import DistGraph

_AGGREGATIONS = {
    pyg_aggr.SumAggregation: "sum",
    pyg_aggr.MeanAggregation: "mean",
    pyg_aggr.MaxAggregation: "max",
    pyg_aggr.MinAggregation: "min",
    pyg_aggr.SoftmaxAggregation: "softmax_aggr",
}

# Message functions that return x_j, or x_j scaled by the named edge weight: the fused path.
_LINEAR_MESSAGES: dict[Callable, Optional[str]] = {
    MessagePassing.message: None,
    SAGEConv.message: None,
    GINConv.message: None,
    GCNConv.message: "edge_weight",
    GraphConv.message: "edge_weight",
}

# Attention layers: their softmax spans all of a node's in-edges (online softmax over blocks).
ATTENTION = (GATConv, GATv2Conv, TransformerConv)

Prepare = Callable[[MessagePassing, DistGraph, dict], tuple[GraphView, dict]]


class UnsupportedLayerError(ValueError):
    """A layer that cannot be run exactly over a partitioned graph."""


@dataclass(frozen=True)
class LayerSpec:
    """How the engine runs one converted layer."""

    aggr: str
    linear: bool  # message is x_j or x_j * weight
    weight_arg: Optional[str]  # the name of that weight in propagate's kwargs
    prepare: Prepare
    attention: bool = False


def _plain(layer: MessagePassing, graph: DistGraph, kwargs: dict) -> tuple[GraphView, dict]:
    return stored_view(graph), kwargs


def _gcn(layer: GCNConv, graph: DistGraph, kwargs: dict) -> tuple[GraphView, dict]:
    """GCN normalisation D^-1/2 (A + I) D^-1/2 with the source degrees fetched from their owners."""
    if not layer.normalize:
        return stored_view(graph), kwargs
    weight = kwargs.get("edge_weight")
    x = kwargs["x"]

    def build():
        view = self_loop_view(graph) if layer.add_self_loops else stored_view(graph)
        w = weight
        if w is None:
            w = torch.ones(graph.num_edges, dtype=x.dtype, device=x.device)
        if layer.add_self_loops:
            fill = 2.0 if layer.improved else 1.0
            loops = existing_loop_index(graph)
            loop_w = torch.where(loops >= 0, w.index_select(0, loops.clamp(min=0)),
                                 torch.full_like(loops, fill, dtype=w.dtype))
            w = view.edge_tensor(w, loop_value=loop_w)
        rows = torch.cat([b.row for b in view.blocks])
        deg = torch.zeros(graph.num_nodes, dtype=w.dtype, device=w.device).index_add(0, rows, w)
        dinv = deg.pow(-0.5).masked_fill(deg == 0, 0.0)
        dinv_ext = with_halo(graph, dinv.view(-1, 1)).view(-1)
        # Source of every view edge in [local; halo] numbering (what with_halo returned).
        cols = view.edge_index(halo_offsets(graph))[0]
        norm = dinv_ext.index_select(0, cols) * w * dinv.index_select(0, rows)
        return view, norm

    if weight is None:  # structure-only: computed once per graph and dtype
        view, norm = graph.cached(("gcn_norm", layer.add_self_loops, layer.improved, x.dtype),
                                  build)
    else:
        view, norm = build()
    out = dict(kwargs)
    out["edge_weight"] = norm
    return view, out


def _aggr_name(layer: MessagePassing, where: str) -> str:
    if type(layer).aggregate is not MessagePassing.aggregate:
        raise UnsupportedLayerError(
            f"{where}: {type(layer).__name__} overrides aggregate(); a custom aggregation "
            f"cannot be combined across partitions exactly")
    module = layer.aggr_module
    name = _AGGREGATIONS.get(type(module))
    if name is None:
        raise UnsupportedLayerError(
            f"{where}: {type(layer).__name__} uses aggregation {type(module).__name__}, which "
            f"is not decomposable across partitions (supported: sum, mean, max, min, softmax)")
    return name


def inspect_layer(layer: MessagePassing, where: str) -> LayerSpec:
    """The :class:`LayerSpec` of ``layer``; raises :class:`UnsupportedLayerError` if inexact."""
    if getattr(layer, "decomposed_layers", 1) > 1:
        raise UnsupportedLayerError(f"{where}: decomposed_layers > 1 is not supported")
    if layer.flow != "source_to_target":
        raise UnsupportedLayerError(f"{where}: flow={layer.flow!r} is not supported "
                                    f"(edges are stored on their destination's rank)")
    update = type(layer).update
    if update is not MessagePassing.update and layer.inspector.get_param_names("update"):
        raise UnsupportedLayerError(f"{where}: {type(layer).__name__}.update() takes extra "
                                    f"arguments, which are not supported")
    if isinstance(layer, ATTENTION):
        if type(layer).message not in (GATConv.message, GATv2Conv.message,
                                       TransformerConv.message):
            raise UnsupportedLayerError(f"{where}: {type(layer).__name__} overrides the "
                                        f"attention message, which the engine cannot follow")
        return LayerSpec("softmax", False, None, _plain, attention=True)
    aggr = _aggr_name(layer, where)
    message = type(layer).message
    linear = message in _LINEAR_MESSAGES and aggr in ("sum", "mean")
    weight_arg = _LINEAR_MESSAGES.get(message)
    prepare: Prepare = _gcn if isinstance(layer, GCNConv) else _plain
    return LayerSpec(aggr, linear, weight_arg, prepare)


SUPPORTED_LAYERS = (SAGEConv, GCNConv, GraphConv, GINConv, GINEConv, EdgeConv, *ATTENTION)


def node_tensor(data: Any, role: int) -> Optional[Tensor]:
    """The source (``role=0``) or destination (``role=1``) part of a propagate argument."""
    if isinstance(data, (tuple, list)):
        return data[role]
    return data
