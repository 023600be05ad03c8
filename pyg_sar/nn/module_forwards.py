"""PyG modules that are not message-passing layers but whose ``forward`` pyg_sar replaces.

Some PyG modules compute over every node of the graph outside any ``MessagePassing`` layer
(SGFormer's and Polynormer's global attention, GPSConv's attention block): run on one rank's
rows, PyG's forward would attend to that rank's nodes only. :data:`pyg_sar.nn.conversion.registry.
MODULE_FORWARDS` maps such a class (its full path, ``module.__qualname__``) to a replacement
forward, and :func:`pyg_sar.convert` gives every instance a generated subclass
(:func:`convert_module_forwards`) whose ``forward``

* runs the registered function when the call is over a :class:`~pyg_sar.graph.DistGraph`:
  one among its arguments (e.g. ``edge_index``), or else the graph the converted model was
  called with (bound to the module for that call, :func:`bind_graph`), which is how a module
  whose forward takes no graph (``SGFormerAttention(x, mask)``) finds it
  (:func:`graph_of`);
* runs PyG's own ``forward`` otherwise (a plain ``edge_index``: one process, the whole graph),
  except in a distributed run (:func:`pyg_sar.init` made a context of several ranks), where a
  call without a graph raises a ``RuntimeError`` instead of attending to one rank's rows.

The registered function has the signature of the class's ``forward`` (the module first) and
returns what PyG's does, for this rank's rows; it may read ``module._sar_config`` (the
model's :class:`~pyg_sar.SARConfig`, e.g. its mode) and ``module._sar_name`` (the module's
name in the model, e.g. a traffic-ledger label), both set by ``convert``. The class keeps
the PyG class's name, ``repr``, parameters and ``state_dict``; it pickles and deep-copies
(``torch.save(model)``) through its PyG class, without the bound graph. A user's subclass of
a registered class is converted the same way if it keeps the registered ``forward``; one that
overrides ``forward`` is refused by ``convert`` (the replacement would skip its code) unless
listed in ``SARConfig.trusted_layers``.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Optional

import torch

from pyg_sar.graph import DistGraph
from pyg_sar.nn.conversion.call_graph import GRAPH, for_this_call, graph_of
from pyg_sar.nn.grad_sync import graph_candidates

if TYPE_CHECKING:
    from pyg_sar.config import SARConfig

CONFIG = "_sar_config"  # the model's SARConfig, set by convert
_CLASSES: dict[tuple[type, Callable], type] = {}


def class_path(cls: type) -> str:
    """``module.qualname`` of a class: the key of :data:`registry.MODULE_FORWARDS`."""
    return f"{cls.__module__}.{cls.__qualname__}"


def registered_base(cls: type, forwards: dict[str, Callable]
                    ) -> tuple[Optional[type], Optional[Callable], bool]:
    """The class of ``cls``'s MRO registered in ``forwards`` (``cls`` itself, or the PyG
    class a user's subclass derives from), its replacement forward, and whether a class on
    the way overrides ``forward`` (the replacement would then skip the user's code)."""
    cls = getattr(cls, "_sar_base", cls)
    for klass in cls.__mro__:
        forward = forwards.get(class_path(klass))
        if forward is not None:
            between = cls.__mro__[:cls.__mro__.index(klass)]
            return klass, forward, any("forward" in k.__dict__ for k in between)
    return None, None, False


def find_graph(args: tuple, kwargs: dict) -> Optional[DistGraph]:
    """The :class:`DistGraph` among a call's arguments (or in a dict of them, or held by a
    partition passed whole), looked for where :func:`~pyg_sar.nn.grad_sync.
    find_context` looks; ``None`` if there is none."""
    return next((g for g in graph_candidates(args, kwargs) if isinstance(g, DistGraph)), None)


def bind_graph(model: torch.nn.Module, graph: Optional[DistGraph]) -> None:
    """Bind ``graph`` (or ``None``: unbind) to every module of ``model`` with a replaced
    forward; the converted model does it before each call with the DistGraph it is given."""
    for module in model.modules():
        if getattr(type(module), "_sar_module_forward", None) is not None:
            module.__dict__[GRAPH] = graph


def _forward(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
    graph = find_graph(args, kwargs)
    if graph is None:
        graph = self.__dict__.get(GRAPH)
    if graph is None:
        from pyg_sar.distributed.context import get_context
        context = get_context()
        if context is not None and context.world_size > 1:
            raise RuntimeError(
                f"pyg_sar: {type(self).__name__} was called without a DistGraph in a run of "
                f"{context.world_size} ranks: its forward spans every node of the graph; call "
                f"the converted model with the rank's DistGraph as its edge_index")
        return type(self)._sar_base.forward(self, *args, **kwargs)
    with for_this_call(self, GRAPH, graph):
        return type(self)._sar_module_forward(self, *args, **kwargs)


def _reduce_ex(self: torch.nn.Module, protocol: int) -> tuple:
    # The generated class cannot be found by name: pickle (and deepcopy) its PyG class, whose
    # registered forward is looked up again, and the state without the bound graph.
    return _new_converted, (type(self)._sar_base,), _getstate(self)


def _getstate(self: torch.nn.Module) -> dict:
    state = dict(self.__dict__)
    state.pop(GRAPH, None)
    config = state.get(CONFIG)
    if config is not None and callable(config.compression):
        # A per-layer compression rule may be a closure; these modules compress nothing.
        state[CONFIG] = dataclasses.replace(config, compression=None)
    return state


def _new_converted(base: type) -> torch.nn.Module:
    """An empty converted module of PyG class ``base`` (unpickling; its state is set next)."""
    from pyg_sar.nn.conversion.registry import MODULE_FORWARDS
    forward = registered_base(base, MODULE_FORWARDS)[1]
    if forward is None:
        raise RuntimeError(f"pyg_sar: cannot unpickle a converted {class_path(base)}: this "
                           f"pyg_sar has no replacement forward for it "
                           f"(pyg_sar.nn.conversion.registry.MODULE_FORWARDS)")
    cls = converted_module_class(base, forward)
    return cls.__new__(cls)


def converted_module_class(base: type, forward: Callable) -> type:
    """The subclass of ``base`` whose ``forward`` runs ``forward`` over a DistGraph (and
    ``base.forward`` otherwise); generated once per class and function."""
    key = (base, forward)
    cls = _CLASSES.get(key)
    if cls is None:
        cls = type(base.__name__, (base,), {
            "__module__": __name__, "__qualname__": base.__qualname__,
            "__doc__": f"{base.__name__} converted by pyg_sar.convert (see {__name__}).",
            "_sar_base": base, "_sar_module_forward": staticmethod(forward),
            "forward": _forward, "__reduce_ex__": _reduce_ex, "__getstate__": _getstate})
        _CLASSES[key] = cls
    return cls


def convert_module_forwards(model: torch.nn.Module, forwards: dict[str, Callable],
                            config: Optional[SARConfig] = None) -> list[torch.nn.Module]:
    """Give every module of ``model`` whose PyG class (or a class it derives from without
    overriding ``forward``) is a key of ``forwards`` (full class path) its converted class
    (a subclass of its own class), and set ``module._sar_config`` (``config``: its forward may
    read the mode) and ``module._sar_name`` (its name in ``model``, a traffic-ledger label);
    returns those modules. A second call only updates the configuration."""
    done = []
    for name, module in model.named_modules():
        base = getattr(type(module), "_sar_base", type(module))
        forward = registered_base(base, forwards)[1]
        if forward is None or registered_base(base, forwards)[2]:
            continue  # an overridden forward is refused by convert (or trusted as it is)
        module.__class__ = converted_module_class(base, forward)
        module.__dict__[CONFIG] = config
        module.__dict__["_sar_name"] = name or base.__name__
        done.append(module)
    return done


__all__ = ["bind_graph", "class_path", "convert_module_forwards", "converted_module_class",
           "find_graph", "graph_of", "registered_base"]
