"""Layers whose own ``aggregate`` is a function of per-node message statistics, run as combine
rules across blocks.

A verified class whose ``aggregate`` PyG overrides names one of these in its registry entry
(:attr:`pyg_sar.nn.registry.Adapter.aggregate`); :func:`pyg_sar.nn.propagate.dist_propagate`
then folds the block's messages with the rule built here instead of the layer's aggregation
module. Every in-edge of a node is stored on its owner, so per-node counts (degrees, edges per
relation) are local and exact.

* :data:`EG`: EGConv's aggregators (``sum``, ``mean``, ``symnorm``, ``var``, ``std``, ``max``,
  ``min``) in one :class:`~pyg_sar.core.combine.StatsRule` over the messages ``[x_j]`` and
  ``[symnorm_weight * x_j]`` stacked (``[E, 2, C]``, the second only with ``symnorm``): sums
  always, sums of squares for var/std, extremes when asked; the output stacks the aggregators
  in order as PyG's ``aggregate`` does (``std`` = ``clamp(var, 1e-5).sqrt()``, EGConv's own
  formula; ``max`` / ``min`` 0 on a node without in-edges, ties share the gradient).

In mode ``halo`` PyG's own propagate and ``aggregate`` run over the rank's edges with the
fetched rows (exact: a node's in-edges are all local).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

import torch
from torch import Tensor
from torch_geometric.nn.conv import MessagePassing

from pyg_sar.core.combine import StatsRule
from pyg_sar.core.views import GraphView, ViewBlock
from pyg_sar.graph import DistGraph
from pyg_sar.nn import families

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
        return families.self_loops("add_self_loops")(layer, graph, kwargs)

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
