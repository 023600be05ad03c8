"""``pyg_sar.convert``: make an unchanged PyG model run distributed over a DistGraph."""
from __future__ import annotations

import dataclasses
from typing import Optional

import torch
from torch_geometric.nn import HeteroBatchNorm
from torch_geometric.nn import norm as pyg_norm
from torch_geometric.nn.conv import MessagePassing

from pyg_sar.compression.interface import resolve
from pyg_sar.config import SARConfig
from pyg_sar.nn import grad_sync
from pyg_sar.nn.adapters.hetero import check_hetero_call
from pyg_sar.nn.adapters.hetero_bases import basis_convs as find_basis_convs
from pyg_sar.nn.adapters.hetero_bases import check_basis_conv, prepare_bases
from pyg_sar.nn.autoencoder import convert_autoencoders
from pyg_sar.nn.conversion import registry
from pyg_sar.nn.conversion.converted import LayerState, SARAttentionLayer, SARLayer, converted_class
from pyg_sar.nn.infomax import convert_infomax
from pyg_sar.nn.layers import UnsupportedLayerError, inspect_layer
from pyg_sar.nn.lightgcn import convert_lightgcn
from pyg_sar.nn.module_forwards import (
    bind_graph,
    convert_module_forwards,
    find_graph,
    registered_base,
)
from pyg_sar.nn.norm import DistributedBatchNorm, DistributedHeteroBatchNorm

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

    Every :class:`~torch_geometric.nn.conv.MessagePassing` layer becomes an instance of a
    generated subclass of its class (:mod:`pyg_sar.nn.conversion.converted`) whose ``propagate``
    also accepts a :class:`~pyg_sar.graph.DistGraph` (a plain ``edge_index`` still runs PyG's own
    code), and every batch norm becomes a :class:`~pyg_sar.nn.norm.DistributedBatchNorm`
    sharing its parameters, bound at every call of ``model`` to the context of the
    :class:`~pyg_sar.DistGraph` it is given. PyG modules whose work spans the whole graph
    outside message passing (SGFormer's and Polynormer's global attention) get a replaced
    ``forward`` (:data:`pyg_sar.nn.conversion.registry.MODULE_FORWARDS`,
    :mod:`pyg_sar.nn.module_forwards`) that runs exactly over a DistGraph, for one graph. Each
    message-passing layer gets its compressor from ``config.compression``
    (:func:`pyg_sar.compression.resolve`), its index among the model's message-passing layers (part
    of the compression keys) and its name (its label in the traffic ledger, ``comm.traffic``). A
    layer runs only if pyg_sar can show it is exact (:mod:`pyg_sar.nn.conversion.registry`); any
    other layer is refused before anything is changed, with an :class:`UnsupportedLayerError` naming
    the layer, its class and the reason. Calling it again only updates the configuration.

    The converted model also looks after its training step (:mod:`pyg_sar.nn.grad_sync`,
    each part a ``SARConfig`` field): it sums parameter gradients over ranks after every
    backward pass that reaches them, through ``forward`` or any other method
    (``sync_gradients``), copies rank 0's parameters and buffers here when the job's context
    exists, else on its first call over a DistGraph (``broadcast_parameters``), checks that
    parameters stay identical across ranks (``check_parameters_every``), and refuses a
    backward pass from a loss not reduced over ranks (``check_loss``; see
    :mod:`pyg_sar.nn.functional`). On several ranks ``convert`` is therefore collective:
    every rank converts the same model, in the same order.

    Args:
        model: a PyG model (``torch_geometric.nn.models`` or a user module of PyG convs).
        config: engine settings (mode, pipeline depth, trusted layers); ``SARConfig()`` by
            default.

    Returns:
        the same ``model``.
    """
    config = config if config is not None else SARConfig()
    if not isinstance(config, SARConfig):
        raise TypeError(f"pyg_sar.convert: config must be a SARConfig (got {type(config)})")
    specs = {}
    trusted = tuple(config.trusted_layers)
    # to_hetero_with_bases: typed graph of DistGraphs, per-edge-type weights in message.
    # Every check runs before anything changes (prepare_bases below): a refused convert
    # leaves the model as it was.
    basis_convs = {id(c) for c in find_basis_convs(model)}
    for name, module in model.named_modules():
        where = f"pyg_sar.convert: layer '{name or type(model).__name__}'"
        if isinstance(module, MessagePassing):
            specs[name] = inspect_layer(module, where, trusted,
                                        basis=id(module) in basis_convs)
            if id(module) in basis_convs:
                check_basis_conv(module, specs[name], where)
        else:
            _check_module(where, module, trusted)
        _check_norm(name, module)
    compressors = resolve(config.compression, list(specs))

    prepare_bases(model)  # the basis convs' message hook replaced, fx graphs patched
    layers = [(n, m) for n, m in model.named_modules() if n in specs]
    for index, (name, module) in enumerate(layers):
        spec = specs[name]
        if id(module) in basis_convs:  # its message is scaled: no fused x_j kernel
            spec = dataclasses.replace(spec, linear=False)
        if not isinstance(module, SARLayer):
            mixin = (SARAttentionLayer if spec.adapter.kind == registry.ATTENTION
                     and module.inspector.implements("edge_update") else SARLayer)
            module.__class__ = converted_class(type(module), mixin, spec.adapter.forward,
                                               spec.adapter.methods)
        module._sar_state = LayerState(spec, config, name or type(module).__name__, index,
                                       compressors[name])
    _replace_batch_norms(model)
    convert_lightgcn(model)  # sharded embedding table, pairs by gather (nn/lightgcn.py)
    convert_infomax(model)  # global summary, corruption, loss and test (nn/infomax.py)
    convert_autoencoders(model)  # GAE / VGAE / ARGA / ARGVA: global losses (nn/autoencoder.py)
    # Global attention and the like: forwards replaced (registry.MODULE_FORWARDS).
    convert_module_forwards(model, registry.MODULE_FORWARDS, config)
    if not getattr(model, "_sar_binds_norms", False):
        model.register_forward_pre_hook(_bind_norms_to_graph, with_kwargs=True)
        model._sar_binds_norms = True
    # Gradient sync, first-forward broadcast, drift and loss checks (model._sar_grad_sync).
    grad_sync.install(model, config, layers=[module for _, module in layers])
    return model


def _bind_norms_to_graph(model: torch.nn.Module, args: tuple, kwargs: dict) -> None:
    """Before each call of a converted model: its batch norms compute their statistics over
    the ranks of the DistGraph it is called with (its context; also when a partition is passed
    whole), not a process-wide one. A model that reads its graph from elsewhere (``model()``
    over a captured ``data``) leaves them unbound: they then use :func:`pyg_sar.init`'s
    context, the only one such a script has. A heterogeneous model's call is checked first
    (:func:`pyg_sar.nn.adapters.hetero.check_hetero_call`: edge types and node row counts). Modules
    whose forward pyg_sar replaces (:mod:`pyg_sar.nn.module_forwards`) get the call's
    DistGraph, or ``None``."""
    check_hetero_call(model, args, kwargs)  # a heterogeneous model's types and row counts
    graph = find_graph(args, kwargs)
    if graph is not None:
        _refuse_layers_added_after_convert(model)
    # Modules with a replaced forward that takes no graph (SGFormerAttention(x, mask)) run
    # over the DistGraph of this call (None: PyG's forward, module_forwards).
    bind_graph(model, graph)
    context = grad_sync.find_context(args, kwargs)
    if context is None:
        return
    for module in model.modules():
        if isinstance(module, (DistributedBatchNorm, DistributedHeteroBatchNorm)):
            module.bind(context)


def _refuse_layers_added_after_convert(model: torch.nn.Module) -> None:
    """``convert`` converts every MessagePassing layer of a model or refuses it, so a plain
    one found at call time was added afterwards: given the DistGraph, PyG's own ``propagate``
    would fail with its generic complaint about ``edge_index``. Name the layer and the fix
    instead (this check belongs to the converted model; nothing is hooked process-wide)."""
    for name, module in model.named_modules():
        if isinstance(module, MessagePassing) and not isinstance(module, SARLayer):
            raise ValueError(
                f"pyg_sar: layer '{name}' ({type(module).__name__}) of the converted model is "
                f"not converted (added after pyg_sar.convert): call pyg_sar.convert(model) "
                f"again before calling it with the partition's graph")


def _check_module(where: str, module: torch.nn.Module, trusted: tuple[type, ...]) -> None:
    """PyG modules that are not MessagePassing layers: only those known to pass ``edge_index``
    through unchanged (models, containers) or to never see it are allowed."""
    cls = type(module)
    if issubclass(cls, trusted):
        return
    base, _, overridden = registered_base(cls, registry.MODULE_FORWARDS)
    if overridden:  # pyg_sar's replacement of the PyG forward would skip the user's forward
        raise UnsupportedLayerError(
            f"{where} ({cls.__name__}): it derives from {base.__name__}, whose forward spans "
            f"every node of the graph and is replaced by pyg_sar "
            f"(registry.MODULE_FORWARDS), and overrides forward; derive without overriding "
            f"forward, or SARConfig(trusted_layers=...) to run it as it is")
    if base is not None and base is not cls:  # pyg_sar's forward replaces the PyG class's
        from pyg_sar.nn import fingerprints  # verified by content
        changed = fingerprints.refusal(base)
        if changed is not None:
            raise UnsupportedLayerError(f"{where} ({cls.__name__}): {changed}")
    if not cls.__module__.startswith("torch_geometric"):
        return
    reason = registry.module_refusal(module)
    if reason is not None:
        raise UnsupportedLayerError(f"{where} ({cls.__name__}): {reason}")


def _replace_batch_norms(module: torch.nn.Module) -> None:
    for child_name, child in module.named_children():
        if isinstance(child, torch.nn.BatchNorm1d) and not isinstance(child,
                                                                      DistributedBatchNorm):
            setattr(module, child_name, DistributedBatchNorm.from_batch_norm(child))
        elif isinstance(child, HeteroBatchNorm):
            DistributedHeteroBatchNorm.convert_in_place(child)
        else:
            _replace_batch_norms(child)
