"""LabelPropagation (and CorrectAndSmooth, which runs two of them) over a DistGraph.

PyG's ``LabelPropagation.forward`` does two things that depend on the whole graph:

* integer labels become one-hot vectors with ``y.max() + 1`` classes: on one rank's part the
  largest label may be missing, so the converted forward encodes them with the number of
  classes of the whole graph (the largest label on any rank, plus one), then runs PyG's own
  forward;
* without edge weights the graph is normalised with ``gcn_norm`` (no self-loops), only
  ``if isinstance(edge_index, Tensor)``: :func:`gcn_norm_if_unweighted` does it over the
  DistGraph; given edge weights are used as they are, as in PyG.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Optional

import torch
from torch import Tensor
from torch_geometric.nn.conv import MessagePassing
from torch_geometric.utils import one_hot

from pyg_sar.core.reduce import global_max
from pyg_sar.core.views import GraphView
from pyg_sar.graph import DistGraph
from pyg_sar.nn.adapters.families import Prepare, gcn_norm, stored


def num_classes(graph: DistGraph, labels: Tensor) -> int:
    """The number of classes of integer ``labels`` over all ranks (largest label + 1)."""
    with torch.no_grad():
        peak = global_max(graph, labels.view(-1).to(torch.float64))
    return 0 if torch.isinf(peak) else int(peak) + 1


def label_propagation_forward(self, y: Tensor, edge_index, mask: Optional[Tensor] = None,
                              edge_weight: Optional[Tensor] = None,
                              post_step: Optional[Callable[[Tensor], Tensor]] = None
                              ) -> Tensor:
    """``LabelPropagation.forward``: integer labels one-hot encoded with the whole graph's
    number of classes over a DistGraph; the rest is PyG's forward."""
    if isinstance(edge_index, DistGraph) and y.dtype == torch.long and y.size(0) == y.numel():
        y = one_hot(y.view(-1), num_classes=num_classes(edge_index, y))
    return self._sar_base.forward(self, y, edge_index, mask, edge_weight, post_step)


def gcn_norm_if_unweighted(weight_arg: str = "edge_weight") -> Prepare:
    """``gcn_norm`` without self-loops when propagate gets no ``weight_arg``; given weights
    are used unchanged (LabelPropagation).

    PyG calls ``gcn_norm`` there without a dtype, so the weights are of the default dtype
    (float32 unless changed) whatever the labels' dtype; so are these.
    """
    normalise = gcn_norm(True, False, False, weight_arg)

    def prepare(layer: MessagePassing, graph: DistGraph,
                kwargs: dict) -> tuple[GraphView, dict]:
        if kwargs.get(weight_arg) is not None:
            return stored(layer, graph, kwargs)
        dtype = torch.get_default_dtype()

        def build() -> tuple[GraphView, Tensor]:
            ones = torch.ones(graph.num_edges, dtype=dtype, device=graph.device)
            view, out = normalise(layer, graph, {weight_arg: ones})
            return view, out[weight_arg]
        view, norm = graph.cached(("gcn_norm_unweighted", dtype), build)
        return view, {**kwargs, weight_arg: norm}
    return prepare
