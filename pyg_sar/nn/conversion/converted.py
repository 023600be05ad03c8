"""The classes of converted layers: one generated subclass per PyG class.

``pyg_sar.convert`` changes a layer's class from, say, ``GCNConv`` to a subclass of it and of
:class:`SARLayer`, generated once per class. The conversion is visible in the type
(``isinstance(layer, SARLayer)``, ``type(layer).__module__ == "pyg_sar.nn.conversion.converted"``)
while the name, ``repr``, parameters, ``state_dict`` and ``copy.deepcopy`` are those of the PyG
class. A converted layer still runs PyG's own code for a plain ``edge_index``; for a
:class:`~pyg_sar.graph.DistGraph` its ``propagate`` (and ``edge_updater`` for the GAT family)
runs the distributed engine.

Everything ``convert`` sets on a layer lives in one :class:`LayerState`,
``layer._sar_state`` (its spec, configuration, name, index and compressor); the names
``layer._sar_spec``, ``_sar_config``, ``_sar_name``, ``_sar_layer_index`` and
``_sar_compressor`` read and write its fields.

Converted layers pickle (``torch.save(model)``, ``pickle``, ``copy.deepcopy``): a layer is
rebuilt through :func:`converted_class` from its PyG class and its mixin, both importable by
name, and keeps its :class:`LayerState`; every other ``_sar_*`` attribute is state of a
running call (a held wire) and is dropped, to be made again by the next call.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Optional

import torch
from torch import Tensor

from pyg_sar.graph import DistGraph
from pyg_sar.nn.conversion.wire import release_held_wire

if TYPE_CHECKING:
    from pyg_sar.compression.interface import Compressor
    from pyg_sar.config import SARConfig
    from pyg_sar.nn.layers import LayerSpec

STATE = "_sar_state"
# What a converted layer keeps when it is pickled or copied; its other ``_sar_*`` attributes
# belong to a running call and are dropped.
# (``_sar_binds_norms``, ``_sar_grad_sync``: a model that is itself a converted layer carries
# convert's model state too; the gradient-sync state pickles without its runtime part.)
PERSISTENT = frozenset({STATE, "_sar_binds_norms", "_sar_grad_sync"})


@dataclasses.dataclass
class LayerState:
    """What :func:`pyg_sar.convert` sets on one converted message-passing layer.

    Attributes:
        spec: how the engine runs the layer (:func:`pyg_sar.nn.layers.inspect_layer`).
        config: the model's :class:`~pyg_sar.SARConfig`.
        name: the layer's name in the model (its label in the traffic ledger).
        index: its index among the model's message-passing layers (part of compression keys).
        compressor: its compressor (from ``config.compression``), or ``None``.
    """

    spec: Optional[LayerSpec] = None
    config: Optional[SARConfig] = None
    name: Optional[str] = None
    index: Optional[int] = None
    compressor: Optional[Compressor] = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        if self.config is not None and callable(self.config.compression):
            # A per-layer rule may be a closure (all_but_last); the compressor the rule chose
            # for this layer is kept in ``compressor``.
            state["config"] = dataclasses.replace(self.config, compression=None)
        return state


def _state_field(field: str) -> property:
    """``layer._sar_<name>``: a field of the layer's :class:`LayerState`."""
    def get(self: Any) -> Any:
        state = self.__dict__.get(STATE)
        if state is None:  # not configured yet: as a missing attribute
            raise AttributeError(f"{type(self).__name__} has no pyg_sar state yet")
        return getattr(state, field)

    def set(self: Any, value: Any) -> None:
        state = self.__dict__.get(STATE)
        if state is None:
            state = self.__dict__[STATE] = LayerState()
        setattr(state, field, value)
    return property(get, set, doc=f"``{STATE}.{field}`` (:class:`LayerState`).")


def refuse_plain_graph_in_training(layer: Any) -> None:
    """Refuse a plain ``edge_index`` given to a converted layer while training in a job of
    several ranks.

    Every rank would then run PyG on that graph (often the whole graph, handed over instead of
    the rank's part), and the gradients summed over ranks would count it once per rank:
    wrong by a factor, silently. Without gradients (evaluation under ``torch.no_grad()``)
    the output is PyG's and nothing is summed, so it runs.
    """
    if not torch.is_grad_enabled():
        return
    from pyg_sar.distributed.context import resolve_context
    context = resolve_context(None, create=False)
    if context is None or context.world_size == 1:
        return
    raise ValueError(
        f"pyg_sar: converted layer {type(layer).__name__} was given a plain edge_index (not a "
        f"DistGraph) while training on "
        f"{context.world_size} ranks: each rank would train on that whole graph and the "
        f"gradients summed over ranks would count it {context.world_size} times. Pass this "
        f"rank's part instead (data.edge_index of pyg_sar.distribute's result, or "
        f"part.graph of pyg_sar.load_partition); to run plain PyG on one rank, use "
        f"pyg_sar.unconvert(copy.deepcopy(model)), or evaluate under torch.no_grad()")


class SARLayer:
    """Mixin of every converted MessagePassing layer (first in the generated class's bases)."""

    _sar_base: type  # the class the layer had before conversion
    _sar_mixin: type  # SARLayer or SARAttentionLayer
    _sar_spec = _state_field("spec")
    _sar_config = _state_field("config")
    _sar_name = _state_field("name")
    _sar_layer_index = _state_field("index")
    _sar_compressor = _state_field("compressor")

    def __reduce_ex__(self, protocol: int) -> tuple:
        # The generated class cannot be found by name: pickle the recipe of its class (the PyG
        # class and the mixin, both importable) and the layer's state.
        cls = type(self)
        return _new_converted, (cls._sar_base, cls._sar_mixin), self.__getstate__()

    def __getstate__(self) -> dict:
        state = super().__getstate__()  # a copy of __dict__ (torch.nn.Module)
        for key in [k for k in state if k.startswith("_sar_") and k not in PERSISTENT]:
            del state[key]
        return state

    def propagate(self, edge_index: Any, size=None, **kwargs: Any) -> Tensor:
        if not isinstance(edge_index, DistGraph):
            refuse_plain_graph_in_training(self)
            return self._sar_base.propagate(self, edge_index, size=size, **kwargs)
        from pyg_sar.nn.conversion.propagate import dist_propagate
        # PyG's propagate hooks see the call as a whole, as in PyG's propagate.
        for hook in self._propagate_forward_pre_hooks.values():
            res = hook(self, (edge_index, size, kwargs))
            if res is not None:
                edge_index, size, kwargs = res
        out = dist_propagate(self, edge_index, size, kwargs)
        for hook in self._propagate_forward_hooks.values():
            res = hook(self, (edge_index, size, kwargs), out)
            if res is not None:
                out = res
        return out


class SARAttentionLayer(SARLayer):
    """Converted GAT-family layer: its ``edge_updater`` defers the scores to ``propagate``."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # In halo mode edge_updater hands its wire to propagate
        # (pyg_sar.nn.conversion.wire.hold_wire); whatever happens in between, the wire ends with
        # this call.
        try:
            return super().__call__(*args, **kwargs)
        finally:
            release_held_wire(self)

    def edge_updater(self, edge_index: Any, size=None, **kwargs: Any):
        if not isinstance(edge_index, DistGraph):
            return self._sar_base.edge_updater(self, edge_index, size=size, **kwargs)
        from pyg_sar.nn.adapters.attention import dist_edge_updater
        return dist_edge_updater(self, edge_index, size, kwargs)


_CLASSES: dict[tuple, type] = {}


def _new_converted(base: type, mixin: type) -> Any:
    """An empty layer of the converted class of ``base`` (unpickling; its state is set next).

    The class's ``forward`` and ``methods`` are the registry's for ``base``, as in
    :func:`pyg_sar.convert`."""
    from pyg_sar.nn.conversion.registry import verified_adapter
    adapter = verified_adapter(base)[1]
    cls = (converted_class(base, mixin) if adapter is None
           else converted_class(base, mixin, adapter.forward, adapter.methods))
    return cls.__new__(cls)


def converted_class(base: type, mixin: type, forward=None, methods=()) -> type:
    """The converted subclass of ``base`` (generated once per class and mixin); ``forward``
    and ``methods`` (``(name, function)`` pairs) replace the base's where the registry says."""
    key = (base, mixin, forward, tuple(methods))
    cls = _CLASSES.get(key)
    if cls is None:
        body: dict[str, Any] = {
            "__module__": __name__,
            "__qualname__": base.__qualname__,
            "__doc__": f"{base.__name__} converted by pyg_sar.convert (see {__name__}).",
            "_sar_base": base,
            "_sar_mixin": mixin,
        }
        # In the class itself, not only in the mixin: PyG's __setstate__ (deepcopy, pickle)
        # compiles a templated propagate onto any class whose own __dict__ lacks one, which
        # would replace the distributed propagate for every converted layer of that class.
        body["propagate"] = mixin.propagate
        if hasattr(mixin, "edge_updater"):
            body["edge_updater"] = mixin.edge_updater
        if forward is not None:
            body["forward"] = forward
        body.update(methods)
        cls = type(base.__name__, (mixin, base), body)
        _CLASSES[key] = cls
    return cls
