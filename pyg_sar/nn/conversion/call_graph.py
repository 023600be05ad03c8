"""The DistGraph of the current call of a converted module whose forward pyg_sar replaced
(:mod:`pyg_sar.nn.module_forwards` binds it; the replacement forwards of
:mod:`pyg_sar.nn.adapters.attention_modules` and :mod:`pyg_sar.nn.global_attention` read it)."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

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


_UNSET = object()


@contextlib.contextmanager
def for_this_call(module: torch.nn.Module, key: str, value: Any) -> Iterator[None]:
    """``module.__dict__[key] = value`` for the duration of one call (the :data:`GRAPH` a
    converted module finds, or a module's ``forward``), then what was there before."""
    before = module.__dict__.get(key, _UNSET)
    module.__dict__[key] = value
    try:
        yield
    finally:
        if before is _UNSET:
            module.__dict__.pop(key, None)
        else:
            module.__dict__[key] = before
