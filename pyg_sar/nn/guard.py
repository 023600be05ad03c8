"""A check, before every call of a PyG layer, that a DistGraph only reaches converted layers.

Why it exists: a :class:`~pyg_sar.graph.DistGraph` passed to a layer that
:func:`pyg_sar.convert` never converted reaches PyG's own ``propagate``, which fails with PyG's
generic complaint about ``edge_index`` and no word of pyg_sar. Since PyG raises before any
pyg_sar code runs, the check has to run before the layer's ``forward``: a global module forward
pre-hook (``torch.nn.modules.module.register_module_forward_pre_hook``), installed once, when
the first DistGraph is created, so a process that never builds one pays nothing. PyG itself is
not modified.

The hook costs one ``isinstance`` per module call and a scan of the arguments for
MessagePassing layers only. It raises a ``ValueError`` (the type of PyG's own complaint)

* for an unconverted MessagePassing layer given a DistGraph (as a positional argument, which
  is what a global pre-hook sees): the fix is ``pyg_sar.convert(model)``;
* for a converted layer given a graph with edge values (``data.adj_t``) that it would ignore:
  :func:`pyg_sar.nn.values.check_layer` (the same check runs again in the converted
  ``propagate``, for layers called through ``forward`` directly).
"""
from __future__ import annotations

from typing import Any, Optional

import torch

_HANDLE: Optional[Any] = None
_TYPES: tuple = ()  # (MessagePassing, DistGraph, SARLayer), resolved at install


def install() -> None:
    """Install the pre-hook (idempotent; cheap after the first call)."""
    global _HANDLE, _TYPES
    if _HANDLE is None:
        from torch_geometric.nn.conv import MessagePassing

        from pyg_sar.graph import DistGraph
        from pyg_sar.nn.converted import SARLayer
        _TYPES = (MessagePassing, DistGraph, SARLayer)
        _HANDLE = torch.nn.modules.module.register_module_forward_pre_hook(_check_call)


def uninstall() -> None:
    """Remove the pre-hook (tests; the next DistGraph installs it again)."""
    global _HANDLE
    if _HANDLE is not None:
        _HANDLE.remove()
        _HANDLE = None


def _check_call(module: torch.nn.Module, args: tuple) -> None:
    message_passing, dist_graph, sar_layer = _TYPES
    if not isinstance(module, message_passing):
        return None
    graph = next((a for a in args if isinstance(a, dist_graph)), None)
    if graph is None:
        return None
    if not isinstance(module, sar_layer):
        raise ValueError(
            f"pyg_sar: {type(module).__name__} was given a pyg_sar DistGraph but is not "
            f"converted: call pyg_sar.convert(model) on the model before calling it with the "
            f"partition's graph (data.edge_index of a PartitionData)")
    if graph.edge_values is not None:
        from pyg_sar.nn.values import check_layer
        check_layer(module)
    return None
