r"""PyG aggregations that are functions of per-node message statistics, combined exactly across
blocks with :class:`~pyg_sar.core.combine.StatsRule`.

* ``SumAggregation``, ``MeanAggregation``: the sum (mean divides by the in-degree, clamped to 1
  as PyG's scatter mean);
* ``MaxAggregation``, ``MinAggregation``: the extremes (0 for a node without messages);
* ``VarAggregation``: ``E[x^2] - E[x]^2`` from the sums of messages and of their squares
  (``semi_grad``: no gradient through ``E[x^2]``, as PyG); ``StdAggregation``: PyG's
  ``sqrt(clamp(var, 1e-5))``, 0 where that is at most ``sqrt(1e-5)``;
* ``MultiAggregation`` (``mode='cat'``) of those: the outputs concatenated;
* ``DegreeScalerAggregation`` (PNA) over any of those: the aggregation, then each scaler
  (``identity``, ``amplification``, ``attenuation``, ``linear``, ``inverse_linear``) applied
  with the node's in-degree, which the DistGraph knows exactly. The scalers run after the
  distributed propagate, so their parameters (``train_norm=True``) get gradients from autograd.

Every in-edge of a node is stored on its owner, so the degree in these formulas is exact.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor
from torch_geometric.nn import aggr as pyg_aggr

from pyg_sar.core.combine import StatsRule

_STATS: dict[type, tuple[str, ...]] = {
    pyg_aggr.SumAggregation: ("sum",),
    pyg_aggr.MeanAggregation: ("sum",),
    pyg_aggr.MaxAggregation: ("max",),
    pyg_aggr.MinAggregation: ("min",),
    pyg_aggr.VarAggregation: ("sum", "sumsq"),
    pyg_aggr.StdAggregation: ("sum", "sumsq"),
}
SCALERS = ("identity", "amplification", "attenuation", "linear", "inverse_linear")
# Aggregations no per-node statistics rebuild but whose value does not depend on the order of
# a node's messages: they run as PyG wrote them by destination chunks, every chunk with all the
# in-edges of its nodes (pyg_sar.core.dst_chunks). LSTM, GRU, MLP, LCM and patch-transformer
# aggregations read the messages in edge order, which a partition does not keep.
ORDER_INVARIANT = (pyg_aggr.PowerMeanAggregation, pyg_aggr.MedianAggregation,
                   pyg_aggr.QuantileAggregation, pyg_aggr.MulAggregation,
                   pyg_aggr.VariancePreservingAggregation, pyg_aggr.AttentionalAggregation,
                   pyg_aggr.DeepSetsAggregation)


def refusal(module) -> Optional[str]:
    """Why ``module`` cannot be combined from message statistics, or ``None``."""
    if isinstance(module, pyg_aggr.DegreeScalerAggregation):
        unknown = [s for s in module.scaler if s not in SCALERS]
        if unknown:
            return f"DegreeScalerAggregation with scaler(s) {unknown} (known: {SCALERS})"
        return refusal(module.aggr)
    if isinstance(module, pyg_aggr.MultiAggregation):
        if module.mode != "cat":
            return (f"MultiAggregation(mode={module.mode!r}) combines its aggregations with "
                    f"learned modules pyg_sar has not verified (mode='cat' is supported)")
        for inner in module.aggrs:
            reason = refusal(inner)
            if reason is not None:
                return reason
        return None
    if type(module) in _STATS:
        return None
    return (f"{type(module).__name__} is not a function of per-node sums, sums of squares, "
            f"maxima and minima")


def order_refusal(module) -> Optional[str]:
    """Why ``module``, which per-node statistics do not rebuild, cannot run by destination
    chunks either (it depends on the order of a node's messages), or ``None``: one of
    :data:`ORDER_INVARIANT`, or a softmax, ``MultiAggregation`` or ``DegreeScalerAggregation``
    of such or of statistics (they combine per-node results, whatever their order)."""
    if isinstance(module, pyg_aggr.DegreeScalerAggregation):
        return order_refusal(module.aggr)
    if isinstance(module, pyg_aggr.MultiAggregation):
        return next((r for r in map(order_refusal, module.aggrs) if r is not None), None)
    if (isinstance(module, (*ORDER_INVARIANT, pyg_aggr.SoftmaxAggregation))
            or type(module) in _STATS):
        return None
    known = ", ".join(k.__name__ for k in ORDER_INVARIANT)
    return (f"{type(module).__name__} is not a function of per-node sums, sums of squares, "
            f"maxima and minima, nor one pyg_sar knows not to depend on the order of a node's "
            f"messages (a partition does not keep that order; supported besides the "
            f"statistics: {known})")


def _basic(module) -> list:
    if isinstance(module, pyg_aggr.DegreeScalerAggregation):
        return _basic(module.aggr)
    if isinstance(module, pyg_aggr.MultiAggregation):
        return [m for inner in module.aggrs for m in _basic(inner)]
    return [module]


def _count(in_degree: Tensor, like: Tensor) -> Tensor:
    return in_degree.clamp(min=1).to(like.dtype).view(-1, *([1] * (like.dim() - 1)))


def _variance(module, stats: dict, in_degree: Tensor) -> Tensor:
    s1 = stats["sum"]
    count = _count(in_degree, s1)
    mean = s1 / count
    mean2 = stats["sumsq"]
    if module.semi_grad:
        mean2 = mean2.detach()
    return mean2 / count - mean * mean


def _one(module, stats: dict, in_degree: Tensor) -> Tensor:
    kind = type(module)
    if kind is pyg_aggr.SumAggregation:
        return stats["sum"]
    if kind is pyg_aggr.MeanAggregation:
        return stats["sum"] / _count(in_degree, stats["sum"])
    if kind is pyg_aggr.MaxAggregation:
        return stats["max"]
    if kind is pyg_aggr.MinAggregation:
        return stats["min"]
    if kind is pyg_aggr.VarAggregation:
        return _variance(module, stats, in_degree)
    var = _variance(module.var_aggr, stats, in_degree)  # StdAggregation, as PyG computes it
    out = var.clamp(min=1e-5).sqrt()
    return out.masked_fill(out <= math.sqrt(1e-5), 0.0)


@dataclass
class StatsAggregation:
    """How a layer's aggregation module runs over blocks: a :class:`StatsRule` and what to
    apply to the propagate's result (the degree scalers)."""

    module: object
    in_degree: Tensor

    def rule(self) -> StatsRule:
        parts = _basic(self.module)
        stats = [s for part in parts for s in _STATS[type(part)]]

        def finish(values: dict) -> Tensor:
            outs = [_one(part, values, self.in_degree) for part in parts]
            return torch.cat(outs, dim=-1) if len(outs) > 1 else outs[0]
        return StatsRule(stats, finish)

    def after(self, out: Tensor) -> Tensor:
        """The degree scalers of a DegreeScalerAggregation (PyG's formulas), else ``out``."""
        module = self.module
        if not isinstance(module, pyg_aggr.DegreeScalerAggregation):
            return out
        deg = self.in_degree.to(out.dtype).view(-1, *([1] * (out.dim() - 1)))
        outs = [_scale(name, out, deg, module) for name in module.scaler]
        return torch.cat(outs, dim=-1) if len(outs) > 1 else outs[0]


def _scale(name: str, out: Tensor, deg: Tensor, module) -> Tensor:
    scalers: dict[str, Callable[[], Tensor]] = {
        "identity": lambda: out,
        "amplification": lambda: out * (torch.log(deg + 1) / module.avg_deg_log),
        "attenuation": lambda: out * (module.avg_deg_log / torch.log(deg.clamp(min=1) + 1)),
        "linear": lambda: out * (deg / module.avg_deg_lin),
        "inverse_linear": lambda: out * (module.avg_deg_lin / deg.clamp(min=1)),
    }
    if name not in scalers:
        raise ValueError(f"pyg_sar: unknown degree scaler {name!r} (known: {SCALERS})")
    return scalers[name]()
