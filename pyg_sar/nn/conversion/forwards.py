"""Forwards of verified PyG classes whose own ``forward`` cannot take a DistGraph as written.

Converted classes run PyG's ``forward`` wherever it can take a
:class:`~pyg_sar.graph.DistGraph`; the registry (:mod:`pyg_sar.nn.conversion.registry`) names one of
these only where it cannot, and each says why. In order of preference:

* :func:`pyg_forward`: PyG's own ``forward`` code with a few module-level names of its module
  replaced (e.g. RGCNConv's ``masked_edge_index``, which only knows Tensors and torch-sparse),
  so that its edge_index operations go to the exact ones a DistGraph supports
  (``graph[:, mask]``, ``graph[1]``; :meth:`~pyg_sar.graph.DistGraph.__getitem__`).
* :func:`without_attention_weights`: PyG's ``forward``, refusing ``return_attention_weights``
  over a DistGraph (PyG would return ``None`` for a graph that is neither a Tensor nor a
  SparseTensor; the weights of an online softmax are never materialised).
(SuperGATConv's restated ``forward`` and attention loss: :mod:`pyg_sar.nn.super_gat`.)
"""
from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable
from typing import Any, Optional

from torch import Tensor
from torch_geometric.nn.conv import MessagePassing

from pyg_sar.graph import DistGraph

# Stands for ``Tensor`` in ``isinstance(edge_index, Tensor)`` of a forward whose Tensor branch
# uses only edge_index operations a DistGraph runs exactly (or refuses with a TypeError).
TENSOR_OR_DIST_GRAPH = (Tensor, DistGraph)


def pyg_forward(cls: type, **names: Any) -> types.FunctionType:
    """``cls.forward`` (PyG's code, unchanged) with module-level ``names`` replaced.

    The copy has its own globals; PyG's module is never modified. Every replaced name must be
    one the forward reads, so a PyG release that renames it fails here, at import, not
    silently.
    """
    func = cls.__dict__["forward"]
    missing = sorted(set(names) - set(func.__code__.co_names))
    if missing:
        raise RuntimeError(f"pyg_sar: {cls.__qualname__}.forward does not read "
                           f"{', '.join(missing)} (torch_geometric changed?)")
    scope = dict(func.__globals__)
    scope.update(names)
    copy = types.FunctionType(func.__code__, scope, func.__name__, func.__defaults__,
                              func.__closure__)
    copy.__kwdefaults__ = func.__kwdefaults__
    copy.__qualname__ = func.__qualname__
    copy.__doc__ = (f"{cls.__name__}.forward as PyG defines it, with "
                    f"{', '.join(sorted(names))} DistGraph-aware (pyg_sar.nn.conversion.forwards).")
    return copy


def dist_masked_edge_index(pyg_masked_edge_index: Callable) -> Callable:
    """RGCNConv's ``masked_edge_index``, also taking a DistGraph (``graph[:, mask]``)."""
    def masked_edge_index(edge_index, edge_mask: Tensor):
        if isinstance(edge_index, DistGraph):
            return edge_index[:, edge_mask]
        return pyg_masked_edge_index(edge_index, edge_mask)
    return masked_edge_index


class AttentionNotKept:
    """What a converted layer's attention-weights attribute (e.g. ``RGATConv._alpha``) holds
    during a propagate over a DistGraph: the weights of a node's in-edges are never
    materialised for the whole rank at once."""

    def __repr__(self) -> str:
        return "<attention weights not kept over a DistGraph>"


ATTENTION_NOT_KEPT = AttentionNotKept()


@functools.cache
def _signature(cls: type) -> inspect.Signature:
    return inspect.signature(cls.forward)


def without_attention_weights(weights_attr: Optional[str] = None) -> Callable:
    """A forward that runs PyG's and refuses ``return_attention_weights`` over a DistGraph.

    Args:
        weights_attr: the attribute in which the class's ``message`` leaves the normalised
            weights and which its ``forward`` asserts after ``propagate`` (RGATConv's
            ``_alpha``). Over a DistGraph it holds :data:`ATTENTION_NOT_KEPT` before the
            forward; the message then writes the weights of the last chunk it computed.
    """
    def forward(self: MessagePassing, *args: Any, **kwargs: Any):
        base = self._sar_base
        try:
            bound = _signature(base).bind(self, *args, **kwargs).arguments
        except TypeError:  # PyG's forward reports the bad call itself
            bound = {}
        if isinstance(bound.get("edge_index"), DistGraph):
            if bound.get("return_attention_weights") is not None:
                raise ValueError(
                    f"pyg_sar: {base.__name__}(return_attention_weights=...) is not supported "
                    f"over a DistGraph: the attention weights of a node's in-edges are "
                    f"normalised across the blocks of the partition and never materialised "
                    f"(run the layer on a Tensor edge_index to inspect them)")
            if weights_attr is not None:
                setattr(self, weights_attr, ATTENTION_NOT_KEPT)
        return base.forward(self, *args, **kwargs)
    forward.__doc__ = ("PyG's forward; return_attention_weights is refused over a DistGraph "
                       "(pyg_sar.nn.conversion.forwards.without_attention_weights).")
    return forward


# ------------------------------------------------------------------ featureless R-GCN (x=None)
def featureless_node_ids(forward: Callable, cls_name: str) -> Callable:
    """``forward`` also taking ``x=None`` over a DistGraph (RGCNConv's featureless input: node
    ``i`` is the one-hot vector ``i``, so PyG takes ``torch.arange(in_channels)`` as ``x`` and
    indexes its weight by the source node's id).

    On a rank those ids are the whole graph's ids of its nodes, ``graph.node_ids``
    (``part.node_ids``; PyG's homogeneous ids on :meth:`pyg_sar.HeteroPartition.to_homogeneous`),
    which the engine exchanges like any node tensor; passing them is what PyG's ``arange`` does
    on the whole graph. A graph without ``node_ids``, a bipartite graph, or ``in_channels`` not
    the graph's node count (PyG would then give a different number of rows) is refused.
    """
    @functools.wraps(forward)
    def wrapped(self, x, edge_index, *args, **kwargs):
        if x is None and isinstance(edge_index, DistGraph):
            n = edge_index.num_global_nodes
            if edge_index.node_ids is None or edge_index.is_bipartite:
                raise ValueError(
                    f"pyg_sar: {cls_name}(x=None) (featureless) indexes its weight by node id, "
                    f"but the DistGraph has no node_ids or is bipartite; pass x = the global "
                    f"ids of the rank's nodes (int64) or features")
            if self.in_channels_l != n:
                raise ValueError(
                    f"pyg_sar: {cls_name}(x=None) (featureless) needs in_channels = the "
                    f"graph's number of nodes ({n}), got {self.in_channels_l}")
            x = edge_index.node_ids.to(self.weight.device)
        return forward(self, x, edge_index, *args, **kwargs)
    return wrapped
