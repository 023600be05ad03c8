"""Edge tensors a user passes to a converted layer, checked against the graph they are passed
with (used by :mod:`pyg_sar.nn.conversion.propagate` and :mod:`pyg_sar.nn.adapters.attention`)."""
from __future__ import annotations

from torch import Tensor
from torch_geometric.nn.conv import MessagePassing

from pyg_sar.graph import DistGraph


def check_edge_data(layer: MessagePassing, graph: DistGraph, kwargs: dict) -> None:
    """Refuse edge tensors over a graph whose edges no user tensor describes (a reversed
    graph): one of the rank's edge count would otherwise be taken as its edge data."""
    reason = getattr(graph, "edge_data_refused", None)
    if reason is None:
        return
    for name, value in kwargs.items():
        values = value.kwargs.values() if hasattr(value, "kwargs") else [value]
        for v in values:
            if isinstance(v, Tensor) and v.dim() > 0 and v.shape[0] == graph.num_edges:
                raise ValueError(f"pyg_sar: {type(layer).__name__} got {name!r} with one row "
                                 f"per edge; {reason}")
