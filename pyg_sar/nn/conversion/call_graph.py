"""The DistGraph of the current call of a converted module whose forward pyg_sar replaced
(:mod:`pyg_sar.nn.module_forwards` binds it; the replacement forwards of
:mod:`pyg_sar.nn.adapters.attention_modules` and :mod:`pyg_sar.nn.global_attention` read it)."""
from __future__ import annotations

import torch

from pyg_sar.graph import DistGraph

GRAPH = "_sar_graph"  # the DistGraph of the current call (runtime state, never pickled)


def graph_of(module: torch.nn.Module) -> DistGraph:
    """The DistGraph of the current call of a converted module (for registered forwards
    whose arguments carry no graph)."""
    graph = module.__dict__.get(GRAPH)
    if graph is None:
        raise RuntimeError(f"pyg_sar: {type(module).__name__} has no DistGraph for this call: "
                           f"call the converted model with the rank's DistGraph as its "
                           f"edge_index")
    return graph
