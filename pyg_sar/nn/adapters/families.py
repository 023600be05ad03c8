"""Graph preprocessing that PyG layers do in ``forward`` for a Tensor ``edge_index``, done exactly
over a :class:`~pyg_sar.graph.DistGraph`.

PyG layers add self-loops or normalise (``add_self_loops``, ``gcn_norm``, ...) only
``if isinstance(edge_index, Tensor)``; a DistGraph is not one, so the layer skips the step and
the converted ``propagate`` must do it. Each function here is one *family* of such steps; the
registry (:mod:`pyg_sar.nn.conversion.registry`) says which family a verified class belongs to and
with which of its attributes. A ``Prepare`` function takes the layer, the graph and propagate's
keyword arguments and returns the view to propagate over and the (possibly changed) arguments.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Optional, Union

import torch
from torch import Tensor
from torch_geometric.nn.conv import MessagePassing

from pyg_sar.core.halo import halo_offsets, with_halo
from pyg_sar.core.views import (
    GraphView,
    added_loop_view,
    existing_loop_index,
    self_loop_view,
    stored_view,
)
from pyg_sar.graph import DistGraph

Prepare = Callable[[MessagePassing, DistGraph, dict], tuple[GraphView, dict]]
# A layer option: the name of a layer attribute, or a constant.
Option = Union[str, bool, float]


def option(layer: MessagePassing, value: Option):
    """The value of a registry option for ``layer`` (an attribute name or a constant)."""
    return getattr(layer, value) if isinstance(value, str) else value


def stored(layer: MessagePassing, graph: DistGraph, kwargs: dict) -> tuple[GraphView, dict]:
    """No preprocessing: the graph as stored."""
    return stored_view(graph), kwargs


def self_loops(enabled: Option = True, edge_args: tuple[str, ...] = (),
               fill: float = 0.0) -> Prepare:
    """``remove_self_loops`` + ``add_self_loops``: exactly one self-loop per node.

    ``edge_args`` names edge tensors carried into view order, the loops filled with ``fill``.
    """
    def prepare(layer: MessagePassing, graph: DistGraph, kwargs: dict):
        if not option(layer, enabled):
            return stored_view(graph), kwargs
        view = self_loop_view(graph)
        out = dict(kwargs)
        for name in edge_args:
            value = kwargs.get(name)
            if isinstance(value, Tensor):
                _check_edge_rows(layer, name, value, graph)
                loops = value.new_full((graph.num_nodes, *value.shape[1:]), fill)
                out[name] = view.edge_tensor(value, loop_value=loops)
        return view, out
    return prepare


def added_self_loops(combine_root: str, weight_arg: str) -> Prepare:
    """``add_self_loops`` (existing loops kept, added ones of weight 1) when the layer's
    ``combine_root`` attribute is ``'self_loop'`` (SimpleConv)."""
    def prepare(layer: MessagePassing, graph: DistGraph, kwargs: dict):
        if getattr(layer, combine_root) != "self_loop":
            return stored_view(graph), kwargs
        view = added_loop_view(graph)
        out = dict(kwargs)
        weight = kwargs.get(weight_arg)
        if isinstance(weight, Tensor):
            _check_edge_rows(layer, weight_arg, weight, graph)
            out[weight_arg] = view.edge_tensor(
                weight, loop_value=weight.new_ones((graph.num_nodes, *weight.shape[1:])))
        return view, out
    return prepare


def _check_edge_rows(layer: MessagePassing, name: str, value: Tensor, graph: DistGraph) -> None:
    if value.shape[0] != graph.num_edges:
        raise ValueError(f"pyg_sar: {type(layer).__name__} got {name} with {value.shape[0]} "
                         f"rows, expected {graph.num_edges} (the rank's stored edges, in the "
                         f"order of LocalPartition.edge_attr)")


def gcn_norm(normalize: Option = True, add_loops: Option = True, improved: Option = False,
             weight_arg: str = "edge_weight") -> Prepare:
    r"""PyG's ``gcn_norm``: :math:`D^{-1/2} (A + \hat{I}) D^{-1/2}` with self-loops of weight 1
    (2 when ``improved``) added where missing (``add_remaining_self_loops``; a node's existing
    loop keeps its weight). The degrees are in-degrees of the destination, and the source's
    factor comes from its owner (one halo exchange of an N x 1 vector, cached for unweighted
    graphs). Differentiable in the edge weights.
    """
    def prepare(layer: MessagePassing, graph: DistGraph, kwargs: dict):
        loops = bool(option(layer, add_loops))
        if not option(layer, normalize):
            return stored_view(graph), kwargs
        if graph.is_bipartite:
            raise ValueError(
                f"pyg_sar: {type(layer).__name__} normalises by the degrees of both ends of an "
                f"edge (gcn_norm), which PyG defines for one node set only; this graph is "
                f"bipartite (an edge type between two node types): use normalize=False or a "
                f"layer made for bipartite graphs (SAGEConv, GraphConv, GATConv, ...)")
        fill = 2.0 if option(layer, improved) else 1.0
        weight: Optional[Tensor] = kwargs.get(weight_arg)
        dtype = weight.dtype if weight is not None else _float_dtype(kwargs)
        if weight is not None:
            _check_edge_rows(layer, weight_arg, weight, graph)
            view, norm = _gcn_norm(graph, weight, loops, fill, dtype)
        else:  # structure only: computed once per graph and dtype
            view, norm = graph.cached(("gcn_norm", loops, fill, dtype),
                                      lambda: _gcn_norm(graph, None, loops, fill, dtype))
        out = dict(kwargs)
        out[weight_arg] = norm
        return view, out
    return prepare


def _float_dtype(kwargs: dict) -> torch.dtype:
    for value in kwargs.values():
        for t in (value if isinstance(value, (tuple, list)) else (value,)):
            if isinstance(t, Tensor) and t.is_floating_point():
                return t.dtype
    return torch.get_default_dtype()


def _gcn_norm(graph: DistGraph, weight: Optional[Tensor], loops: bool, fill: float,
              dtype: torch.dtype) -> tuple[GraphView, Tensor]:
    view = self_loop_view(graph) if loops else stored_view(graph)
    w = weight if weight is not None else torch.ones(graph.num_edges, dtype=dtype,
                                                      device=graph.device)
    if loops:
        existing = existing_loop_index(graph)
        loop_w = torch.where(existing >= 0, w.index_select(0, existing.clamp(min=0)),
                             torch.full_like(existing, fill, dtype=w.dtype))
        w = view.edge_tensor(w, loop_value=loop_w)
    rows = torch.cat([b.row for b in view.blocks])
    # Degrees, their powers and the products in at least float32 (bf16 / f16 weights: a
    # bf16 running sum stops counting at 256), the weights returned in the weights' dtype as
    # PyG's gcn_norm returns them.
    wide = wide_dtype(w.dtype)
    w_wide = w.to(wide)
    deg = torch.zeros(graph.num_nodes, dtype=wide, device=w.device).index_add(0, rows, w_wide)
    dinv = deg.pow(-0.5).masked_fill(deg == 0, 0.0)
    dinv_ext = with_halo(graph, dinv.view(-1, 1)).view(-1)
    cols = view.edge_index(halo_offsets(graph))[0]  # sources in [local; halo] numbering
    norm = dinv_ext.index_select(0, cols) * w_wide * dinv.index_select(0, rows)
    return view, norm.to(w.dtype)


def wide_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype a degree or normalisation statistic of ``dtype`` values is computed in:
    float32 for bfloat16 / float16, the dtype itself for float32 / float64."""
    return torch.promote_types(dtype, torch.float32)


def cluster_gcn_forward(self, x: Tensor, edge_index) -> Tensor:
    """ClusterGCNConv's forward over a DistGraph: its preprocessing indexes ``edge_index``
    without a type check, so the converted class runs this instead (the normalisation is
    :func:`cluster_gcn_norm`, the rest as PyG: ``lin_out(propagate) + lin_root(x)``)."""
    if not isinstance(edge_index, DistGraph):
        return self._sar_base.forward(self, x, edge_index)
    out = self.propagate(edge_index, x=x, edge_weight=None)
    return self.lin_out(out) + self.lin_root(x)


def cluster_gcn_norm(layer: MessagePassing, graph: DistGraph,
                     kwargs: dict) -> tuple[GraphView, dict]:
    """ClusterGCNConv: self-loops, weight ``1 / in-degree``, plus ``diag_lambda / in-degree``
    on each node's loop. As in PyG, the weights are in the default dtype (PyG's ``degree``)
    and the message promotes them."""
    view = self_loop_view(graph) if layer.add_self_loops else stored_view(graph)

    def build() -> Tensor:
        deg_inv = 1.0 / view.in_degree.clamp(min=1).to(torch.get_default_dtype())
        rows = torch.cat([b.row for b in view.blocks])
        w = deg_inv.index_select(0, rows)
        local = view.blocks[graph.rank]
        is_loop = torch.zeros_like(w, dtype=torch.bool)
        is_loop[local.edge_slice] = local.row == local.col
        return w, is_loop
    w, is_loop = graph.cached(("cluster_gcn_norm", layer.add_self_loops), build)
    # The same float operations as PyG's ``edge_weight[row == col] += diag_lambda * deg_inv``.
    w = torch.where(is_loop, w + layer.diag_lambda * w, w)
    out = dict(kwargs)
    out["edge_weight"] = w
    return view, out
