"""Layers whose ``message`` normalises attention over a node's in-edges with PyG's ``softmax``.

``softmax(alpha, index, ptr, size_i)`` inside ``message`` sees one block of a node's in-edges
at a time over a DistGraph, so it would normalise per block. For the verified classes whose
message is linear in the normalised weights (``message(alpha) = alpha * v`` per head), the
engine runs the layer's own ``message`` with ``softmax`` replaced by a capture: it records the
raw scores and returns ones, so the message returns the values ``v`` (with any dropout of the
weights already in them). The online-softmax rule (:class:`pyg_sar.core.combine.SoftmaxRule`)
then combines scores and values across blocks exactly, as for GAT.

The replacement is made on a copy of the message function with its own globals (and of the
helper methods it calls, named by the registry), never on PyG's modules.
"""
from __future__ import annotations

import math
import types
from typing import Any, Optional

import torch
import torch_geometric.utils
from torch import Tensor
from torch_geometric.nn.conv import MessagePassing

from pyg_sar.core.views import ViewBlock


class SoftmaxCapture:
    """Stands in for ``torch_geometric.utils.softmax`` during one block's messages."""

    def __init__(self, layer_name: str, calls: int = 1) -> None:
        self.layer_name, self.calls = layer_name, calls
        self.recorded: list[Tensor] = []  # the scores of each call

    def __call__(self, src: Tensor, index: Optional[Tensor] = None, ptr=None,
                 num_nodes: Optional[int] = None, dim: int = 0) -> Tensor:
        if dim != 0:
            raise RuntimeError(f"pyg_sar: {self.layer_name}.message normalises over dim={dim}; "
                               f"only the edge dimension (0) is supported")
        if len(self.recorded) == self.calls:
            raise RuntimeError(f"pyg_sar: {self.layer_name}.message calls softmax more than "
                               f"{self.calls} time(s) per block, which pyg_sar cannot combine "
                               f"across blocks")
        self.recorded.append(src)
        return torch.ones_like(src)


class InDegreeCount:
    """Stands in for ``torch_geometric.utils.scatter`` where ``message`` counts a node's
    in-edges, ``scatter(ones, index, dim_size=size_i, reduce='sum')`` (RGATConv's scaled
    mods): over one block that counts the block's edges only; this returns the node's
    in-degree in the whole view, which is known locally."""

    def __init__(self, layer_name: str, in_degree: Tensor) -> None:
        self.layer_name, self.in_degree = layer_name, in_degree

    def __call__(self, src: Tensor, index: Tensor, dim: int = 0,
                 dim_size: Optional[int] = None, reduce: str = "sum") -> Tensor:
        if (reduce != "sum" or src.dim() != 1 or dim not in (0, -1)
                or dim_size != self.in_degree.numel() or not bool((src == 1).all())):
            raise RuntimeError(f"pyg_sar: {self.layer_name}.message calls scatter other than "
                               f"to count a node's in-edges (scatter(ones, index, "
                               f"dim_size=size_i, reduce='sum')), which would see one block")
        return self.in_degree.to(src.dtype)


def _with_softmax(func: types.FunctionType, capture: SoftmaxCapture,
                  degree: Optional[InDegreeCount] = None) -> types.FunctionType:
    if func.__globals__.get("softmax") is not torch_geometric.utils.softmax:
        raise RuntimeError(f"pyg_sar: {func.__qualname__} does not use PyG's softmax")
    scope = dict(func.__globals__)
    scope["softmax"] = capture
    if degree is not None:
        if scope.get("scatter") is not torch_geometric.utils.scatter:
            raise RuntimeError(f"pyg_sar: {func.__qualname__} does not use PyG's scatter")
        scope["scatter"] = degree
    copy = types.FunctionType(func.__code__, scope, func.__name__, func.__defaults__,
                              func.__closure__)
    copy.__kwdefaults__ = func.__kwdefaults__
    return copy


class _LayerView:
    """The layer as ``self`` for the copied methods: attribute reads go to the layer, except
    the helpers that were copied with the capture; writes stay here (e.g. ``self._alpha``)."""

    def __init__(self, layer: MessagePassing, helpers: dict[str, Any]) -> None:
        object.__setattr__(self, "_layer", layer)
        object.__setattr__(self, "_helpers", helpers)

    def __getattr__(self, name: str) -> Any:
        helpers = object.__getattribute__(self, "_helpers")
        if name in helpers:
            return types.MethodType(helpers[name], self)
        return getattr(object.__getattribute__(self, "_layer"), name)


def _regroup(layer_name: str, recorded: list[Tensor], group: Tensor) -> Tensor:
    """The scores of all edges from one softmax call per group, call ``g`` over the edges of
    group ``g`` in edge order (``softmax(alpha[group == g], index[group == g])``)."""
    masks = [group == g for g in range(len(recorded))]
    if (sum(int(m.sum()) for m in masks) != group.numel()
            or any(int(m.sum()) != r.shape[0] for m, r in zip(masks, recorded))):
        raise RuntimeError(f"pyg_sar: {layer_name}.message's softmax calls do not follow its "
                           f"edge groups (one call per group, in group order)")
    scores = recorded[0].new_empty((group.numel(), *recorded[0].shape[1:]))
    for mask, rec in zip(masks, recorded):
        scores[mask] = rec
    return scores


class SoftmaxInMessageProgram:
    """One block's ``(scores [E, H], values [E, H, C], None)`` from the layer's message;
    with ``groups`` (the edge argument naming each edge's group, the number of groups) the
    message calls softmax once per group and the group ids follow
    (:class:`~pyg_sar.core.combine.GroupedSoftmaxRule`)."""

    linear = None

    def __init__(self, inner, layer: MessagePassing, helpers: tuple[str, ...],
                 in_degree: Optional[Tensor] = None,
                 groups: Optional[tuple[str, int]] = None) -> None:
        self.inner, self.layer, self.helpers = inner, layer, helpers
        self.in_degree = in_degree  # given: message's scatter counts in-edges (InDegreeCount)
        self.groups = groups
        self.out_shape: Optional[tuple[int, ...]] = None

    def messages(self, block: ViewBlock, src, dst, edge):
        cls = getattr(type(self.layer), "_sar_base", type(self.layer))
        capture = SoftmaxCapture(cls.__name__, 1 if self.groups is None else self.groups[1])
        degree = (None if self.in_degree is None
                  else InDegreeCount(cls.__name__, self.in_degree))
        helpers = {name: _with_softmax(getattr(cls, name), capture) for name in self.helpers}
        message = _with_softmax(cls.message, capture, degree)
        view = _LayerView(self.layer, helpers)
        seen: dict[str, Tensor] = {}

        def run(**kw):
            if self.groups is not None:
                seen["group"] = kw[self.groups[0]]
            return message(view, **kw)
        msgs = self.inner.messages(block, src, dst, edge, message=run)
        if len(capture.recorded) != capture.calls:
            raise RuntimeError(f"pyg_sar: {cls.__name__}.message called softmax "
                               f"{len(capture.recorded)} time(s), expected {capture.calls}")
        scores = (capture.recorded[0] if self.groups is None
                  else _regroup(cls.__name__, capture.recorded, seen["group"]))
        num = msgs.shape[0]
        scores = scores.flatten(1) if scores.dim() > 1 else scores.unsqueeze(-1)
        self.out_shape = tuple(msgs.shape[1:])
        heads = scores.shape[1]
        width = math.prod(self.out_shape)
        if width % heads:
            raise RuntimeError(f"pyg_sar: {cls.__name__}.message returns {self.out_shape} per "
                               f"edge, which does not split into {heads} attention heads")
        values = msgs.reshape(num, heads, width // heads)
        if self.groups is not None:
            return scores, values, None, seen["group"]
        return scores, values, None

    def output(self, out: Tensor) -> Tensor:
        """The aggregated ``[N, H, C]`` back in the message's own shape."""
        if self.out_shape is None:
            return out
        return out.reshape(out.shape[0], *self.out_shape)
