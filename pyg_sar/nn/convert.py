"""``pyg_sar.convert``: make an unchanged PyG model run distributed over a DistGraph."""
from __future__ import annotations

import types
from typing import Optional

import torch
from torch_geometric.nn import norm as pyg_norm
from torch_geometric.nn.conv import GATConv, GATv2Conv, MessagePassing, SAGEConv

from pyg_sar.config import SARConfig
from pyg_sar.nn.attention import dist_edge_updater
from pyg_sar.nn.layers import UnsupportedLayerError, inspect_layer
from pyg_sar.nn.norm import DistributedBatchNorm
from pyg_sar.nn.propagate import dist_propagate
from pyg_sar.nn.sage import sage_forward

# Norms whose statistics span the whole graph and have no distributed version yet.
_GRAPH_NORMS = tuple(getattr(pyg_norm, n) for n in (
    "GraphNorm", "InstanceNorm", "PairNorm", "DiffGroupNorm", "MeanSubtractionNorm",
    "GraphSizeNorm") if hasattr(pyg_norm, n))


def _check_norm(name: str, module: torch.nn.Module) -> None:
    if isinstance(module, _GRAPH_NORMS):
        raise UnsupportedLayerError(
            f"pyg_sar.convert: layer '{name}' ({type(module).__name__}) normalises over the "
            f"whole graph and has no distributed version")
    if isinstance(module, pyg_norm.LayerNorm) and module.mode != "node":
        raise UnsupportedLayerError(
            f"pyg_sar.convert: layer '{name}' (LayerNorm, mode={module.mode!r}) normalises "
            f"over the whole graph; use mode='node' or batch norm")


def convert(model: torch.nn.Module, config: Optional[SARConfig] = None) -> torch.nn.Module:
    """Convert ``model`` in place so that ``model(x, graph)`` runs over a :class:`DistGraph`.

    Every :class:`~torch_geometric.nn.conv.MessagePassing` layer gets a distributed
    ``propagate`` (it still accepts a plain ``edge_index``), and every batch norm becomes a
    :class:`~pyg_sar.nn.norm.DistributedBatchNorm` sharing its parameters. Layers that cannot
    be made exact are refused before anything is changed, with an error naming the layer and
    the reason. Calling it again only updates the configuration.

    Args:
        model: a PyG model (``torch_geometric.nn.models`` or a user module of PyG convs).
        config: engine settings (mode, pipeline depth); ``SARConfig()`` by default.

    Returns:
        the same ``model``.
    """
    config = config if config is not None else SARConfig()
    if not isinstance(config, SARConfig):
        raise TypeError(f"pyg_sar.convert: config must be a SARConfig (got {type(config)})")
    specs = {}
    for name, module in model.named_modules():
        where = f"pyg_sar.convert: layer '{name or type(model).__name__}'"
        if isinstance(module, MessagePassing):
            specs[name] = inspect_layer(module, where)
        _check_norm(name, module)

    for name, module in model.named_modules():
        if name in specs:
            if not hasattr(module, "_sar_original_propagate"):
                module._sar_original_propagate = module.propagate
                module.propagate = types.MethodType(dist_propagate, module)
                if isinstance(module, (GATConv, GATv2Conv)):
                    module._sar_original_edge_updater = module.edge_updater
                    module.edge_updater = types.MethodType(dist_edge_updater, module)
                if isinstance(module, SAGEConv):
                    module._sar_original_forward = module.forward
                    module.forward = types.MethodType(sage_forward, module)
            module._sar_spec = specs[name]
            module._sar_config = config
    _replace_batch_norms(model)
    return model


def _replace_batch_norms(module: torch.nn.Module) -> None:
    for child_name, child in module.named_children():
        if isinstance(child, torch.nn.BatchNorm1d) and not isinstance(child,
                                                                      DistributedBatchNorm):
            setattr(module, child_name, DistributedBatchNorm.from_batch_norm(child))
        else:
            _replace_batch_norms(child)
