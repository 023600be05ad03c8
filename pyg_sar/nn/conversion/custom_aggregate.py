"""Layers whose own ``aggregate`` is a function of per-node message statistics, run as combine
rules across blocks.

A verified class whose ``aggregate`` PyG overrides names one of these in its registry entry
(:attr:`pyg_sar.nn.conversion.registry.Adapter.aggregate`);
:func:`pyg_sar.nn.conversion.propagate.dist_propagate` then folds the block's messages with the rule
built here instead of the layer's aggregation module. Every in-edge of a node is stored on its
owner, so per-node counts (degrees, edges per relation) are local and exact.

* :data:`EG`: EGConv's aggregators (``sum``, ``mean``, ``symnorm``, ``var``, ``std``, ``max``,
  ``min``) in one :class:`~pyg_sar.core.combine.StatsRule` over the messages ``[x_j]`` and
  ``[symnorm_weight * x_j]`` stacked (``[E, 2, C]``, the second only with ``symnorm``): sums
  always, sums of squares for var/std, extremes when asked; the output stacks the aggregators
  in order as PyG's ``aggregate`` does (``std`` = ``clamp(var, 1e-5).sqrt()``, EGConv's own
  formula; ``max`` / ``min`` 0 on a node without in-edges, ties share the gradient). Without
  symnorm its graph has PyG's inferred self-loops (:func:`inferred_loop_view`).
* :data:`FAST_RGCN`: FastRGCNConv's mean = every message scaled by ``1 / (in-edges of its
  destination with its relation)``, then summed (:class:`~pyg_sar.core.combine.SumRule`).
  Featureless input (integer ``x``): PyG's message indexes the weight by the source's id in
  the whole graph (``edge_index_j``); over a partition that is the source's original id
  (:func:`pyg_sar.core.fused_attention.global_source_ids`, exchanged once per graph).


In mode ``halo`` PyG's own propagate and ``aggregate`` run over the rank's edges with the
fetched rows (exact: a node's in-edges are all local), except FastRGCN's featureless input,
whose message reads ``edge_index_j`` itself: it runs PyG's propagate over the rank's in-edges
with their sources' original ids (:meth:`FastRGCNAggregate.halo`).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

import torch
from torch import Tensor
from torch_geometric.nn.conv import MessagePassing

from pyg_sar.core.combine import StatsRule, SumRule
from pyg_sar.core.fused_attention import global_source_ids
from pyg_sar.core.halo import halo_offsets
from pyg_sar.core.reduce import global_max
from pyg_sar.core.views import (
    GraphView,
    ViewBlock,
    refuse_loops_on_bipartite,
    self_loop_view,
    stored_view,
)
from pyg_sar.graph import DistGraph
from pyg_sar.nn.adapters import families

# Messages of one block: (the layer's own messages (LayerProgram), block, src rows, dst
# tensors, the block's slices of the layer's edge tensors, of the aggregation's extra ones).
BlockMessages = Callable[[Any, ViewBlock, Sequence[Tensor], Sequence[Tensor], Sequence[Tensor],
                          Sequence[Tensor]], Any]


@dataclass
class Aggregation:
    """How one propagate call aggregates: the combine rule, extra edge tensors (view order,
    sliced per block like the layer's own) and the block's messages to fold."""

    rule: Any
    messages: BlockMessages
    edge: list[Tensor] = field(default_factory=list)


class CustomAggregate:
    """A class's aggregation run as a combine rule (subclasses: one per PyG class)."""

    def prepare(self, layer: MessagePassing, graph: DistGraph,
                kwargs: dict) -> tuple[GraphView, dict]:
        """The class's graph preprocessing (the registry entry's ``prepare``)."""
        return families.stored(layer, graph, kwargs)

    def build(self, layer: MessagePassing, view: GraphView, kwargs: dict) -> Aggregation:
        raise NotImplementedError

    def halo(self, layer: MessagePassing, view: GraphView, kwargs: dict) -> Optional[Tensor]:
        """Mode ``halo``'s propagate, or ``None`` for PyG's own over the halo (the default)."""
        return None


class CustomAggregateProgram:
    """The block program of a propagate with a :class:`CustomAggregate`: the layer's own
    messages (``inner``), given to the aggregation with the extra edge tensors from index
    ``first`` of the edge list on."""

    linear = None

    def __init__(self, inner, aggregation: Aggregation, first: int) -> None:
        self.inner, self.aggregation, self.first = inner, aggregation, first

    def messages(self, block: ViewBlock, src, dst, edge):
        return self.aggregation.messages(self.inner, block, src, dst, edge[:self.first],
                                         edge[self.first:])


# ----------------------------------------------------------------------------------- EGConv
EG_AGGREGATORS = ("sum", "mean", "symnorm", "var", "std", "max", "min")


class EGAggregate(CustomAggregate):
    """EGConv (see the module docstring)."""

    def prepare(self, layer, graph, kwargs):
        # PyG: gcn_norm(add_self_loops=...) when symnorm is among the aggregators (its graph
        # then feeds every aggregator), else add_remaining_self_loops when add_self_loops.
        if "symnorm" in layer.aggregators:
            return families.gcn_norm(True, "add_self_loops", weight_arg="symnorm_weight")(
                layer, graph, kwargs)
        if layer.add_self_loops:
            return inferred_loop_view(graph), kwargs
        return stored_view(graph), kwargs

    def build(self, layer, view, kwargs) -> Aggregation:
        aggrs = list(layer.aggregators)
        unknown = [a for a in aggrs if a not in EG_AGGREGATORS]
        if unknown:
            raise ValueError(f"pyg_sar: EGConv aggregator(s) {unknown} (known: {EG_AGGREGATORS})")
        sym = "symnorm" in aggrs
        plain = any(a != "symnorm" for a in aggrs)
        col = {"plain": 0, "symnorm": int(plain)}  # columns of the stacked messages
        stats = ["sum"]
        if {"var", "std"} & set(aggrs):
            stats.append("sumsq")
        stats += [a for a in ("max", "min") if a in aggrs]
        in_degree = view.in_degree
        extra = []
        if sym:
            weight = kwargs.get("symnorm_weight")
            if not isinstance(weight, Tensor) or weight.shape[0] != view.num_edges:
                raise ValueError("pyg_sar: EGConv(symnorm) needs its gcn_norm weights, one per "
                                 "edge of the view")
            extra.append(weight)

        def messages(inner, block, src, dst, edge, extra_edge):
            m = inner.messages(block, src, dst, edge)
            cols = [m] if plain else []
            if sym:  # PyG: inputs * symnorm_weight.view(-1, 1)
                cols.append(m * extra_edge[0].view(-1, 1))
            return torch.stack(cols, dim=1)

        def finish(values: dict) -> Tensor:
            s = values["sum"]
            deg = in_degree.clamp(min=1).to(s.dtype).view(-1, 1)
            outs = []
            for a in aggrs:
                if a == "symnorm":
                    outs.append(s[:, col["symnorm"]])
                elif a == "sum":
                    outs.append(s[:, 0])
                elif a == "mean":
                    outs.append(s[:, 0] / deg)
                elif a in ("var", "std"):
                    mean = s[:, 0] / deg
                    out = values["sumsq"][:, 0] / deg - mean * mean
                    outs.append(out.clamp(min=1e-5).sqrt() if a == "std" else out)
                else:  # max / min
                    outs.append(values[a][:, 0])
            return torch.stack(outs, dim=1) if len(outs) > 1 else outs[0]

        return Aggregation(StatsRule(stats, finish), messages, extra)


EG = EGAggregate()


def inferred_loop_view(graph: DistGraph) -> GraphView:
    """PyG's ``add_remaining_self_loops(edge_index)`` without ``num_nodes`` (EGConv without
    symnorm): the node count is inferred as ``edge_index.max() + 1``, so a node whose id is
    above every edge end (trailing isolated nodes) gets no self-loop. The largest id of an
    edge end is a global maximum over the ranks (collective, once per graph; a rank knows its
    nodes that end an edge: in-edges, local out-edges and its send lists). Ids are the original
    ones (``node_ids``), else the new ones."""
    refuse_loops_on_bipartite(graph)

    def build() -> GraphView:
        view = self_loop_view(graph)
        n, rank = graph.num_nodes, graph.rank
        ids = graph.node_ids if graph.node_ids is not None else (
            graph.node_offsets[rank] + torch.arange(n, device=graph.device))
        ends = graph.in_degree > 0
        ends[graph.blocks[rank].col] = True
        for idx in graph.send_idx:
            ends[idx] = True
        top = (ids[ends].max().to(torch.float64) if bool(ends.any()) else
               torch.tensor(float("-inf"), dtype=torch.float64, device=ids.device))
        top = global_max(graph, top)
        looped = ids.to(torch.float64) <= top
        if bool(looped.all()):
            return view
        return _drop_added_loops(view, ~looped)
    return graph.cached(("view", "inferred_self_loops"), build)


def _drop_added_loops(view: GraphView, unlooped: Tensor) -> GraphView:
    """``view`` (one self-loop per node) without the loops of the nodes ``unlooped`` (which
    have no other edge: their ids are above every edge end)."""
    graph, n = view.graph, view.graph.num_nodes
    local = view.blocks[graph.rank]
    keep = ~((local.row == local.col) & unlooped.index_select(0, local.row))
    row, col = local.row[keep], local.col[keep]
    rowptr = torch.zeros(n + 1, dtype=torch.long, device=row.device)
    rowptr[1:] = torch.cumsum(torch.bincount(row, minlength=n), 0)
    blocks, stored, start = [], [], 0
    for b in view.blocks:
        index = view.stored_index[b.edge_slice]
        if b.src_rank == graph.rank:
            blocks.append(ViewBlock(b.src_rank, rowptr, col, row, b.num_src, start))
            index = index[keep]
        else:
            blocks.append(ViewBlock(b.src_rank, b.rowptr, b.col, b.row, b.num_src, start))
        stored.append(index)
        start += int(index.numel())
    return GraphView(graph, blocks, torch.cat(stored), view.in_degree - unlooped.long())


# ----------------------------------------------------------------------------- FastRGCNConv
class FastRGCNAggregate(CustomAggregate):
    """FastRGCNConv (see the module docstring)."""

    def build(self, layer, view, kwargs) -> Aggregation:
        edge_type = _edge_type(layer, view, kwargs)
        ids = _source_ids(view.graph, kwargs)
        mean = layer.aggr == "mean"
        extra = [_relation_counts(view, edge_type, layer.num_relations)] if mean else []

        def messages(inner, block, src, dst, edge, extra_edge):
            message = None
            if ids is not None:  # PyG's edge_index_j: the source's id in the whole graph
                global_j = ids[block.src_rank].index_select(0, block.col)

                def message(**kw):
                    kw["edge_index_j"] = global_j
                    return layer.message(**kw)
            m = inner.messages(block, src, dst, edge, message)
            if mean:  # PyG: norm = 1 / clamp(count, 1) in the messages' dtype; norm * inputs
                norm = 1.0 / extra_edge[0].to(m.dtype).clamp(min=1.0)
                m = norm.view(-1, 1) * m
            return m

        return Aggregation(SumRule(False, view.in_degree), messages, extra)

    def halo(self, layer, view, kwargs) -> Optional[Tensor]:
        """Integer ``x``: PyG's propagate over the rank's in-edges, their sources numbered by
        original id (``x = arange(in_channels)`` as PyG's featureless forward), so that PyG's
        message reads the whole graph's ``edge_index_j``. ``None`` (float ``x``): PyG's
        propagate over the halo as for any layer."""
        graph = view.graph
        ids = _source_ids(graph, kwargs)
        if ids is None:
            return None
        edge_type = _edge_type(layer, view, kwargs)
        ext = view.edge_index(halo_offsets(graph))  # sources in [local rows; halo rows]
        rows = [ids[graph.rank]] + [ids[s] for s in range(graph.world_size) if s != graph.rank]
        edge_index = torch.stack([torch.cat(rows).index_select(0, ext[0]), ext[1]])
        num_in = layer.in_channels_l
        x = torch.arange(num_in, device=ext.device)
        return layer._sar_base.propagate(layer, edge_index, size=(num_in, graph.num_nodes),
                                         x=x, edge_type=edge_type)


def _edge_type(layer: MessagePassing, view: GraphView, kwargs: dict) -> Tensor:
    edge_type = kwargs.get("edge_type")
    if not isinstance(edge_type, Tensor) or tuple(edge_type.shape) != (view.num_edges,):
        got = tuple(edge_type.shape) if isinstance(edge_type, Tensor) else type(edge_type)
        raise ValueError(f"pyg_sar: {type(layer).__name__} needs edge_type with one entry per "
                         f"stored edge of the rank ({view.num_edges}), got {got}")
    if edge_type.numel() and (int(edge_type.min()) < 0
                              or int(edge_type.max()) >= layer.num_relations):
        raise ValueError(f"pyg_sar: {type(layer).__name__} got edge types in "
                         f"[{int(edge_type.min())}, {int(edge_type.max())}], outside "
                         f"[0, num_relations={layer.num_relations})")
    return edge_type


def _source_ids(graph: DistGraph, kwargs: dict) -> Optional[list[Tensor]]:
    """Original ids of every block's source rows when ``x`` holds node indices (PyG then
    indexes the weight by ``edge_index_j``), else ``None``. Collective (once per graph)."""
    x = kwargs.get("x")
    src = x[0] if isinstance(x, (tuple, list)) else x
    if not isinstance(src, Tensor) or torch.is_floating_point(src):
        return None
    if graph.node_ids is None or graph.is_bipartite:
        raise ValueError("pyg_sar: FastRGCNConv with node indices as x (featureless) indexes "
                         "its weight by each source's id in the whole graph, which this "
                         "DistGraph does not know (no node_ids, or bipartite); pass features")
    return global_source_ids(graph)


def _relation_counts(view: GraphView, edge_type: Tensor, num_relations: int) -> Tensor:
    """For every view edge, the number of in-edges of its destination with its relation
    (all local: a node's in-edges are stored on its owner)."""
    rows = torch.empty_like(edge_type)
    for b in view.blocks:
        rows[b.edge_slice] = b.row
    key = rows * num_relations + edge_type
    counts = torch.bincount(key, minlength=view.graph.num_nodes * num_relations)
    return counts.index_select(0, key)


FAST_RGCN = FastRGCNAggregate()
