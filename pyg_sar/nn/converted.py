"""The classes of converted layers: one generated subclass per PyG class.

``pyg_sar.convert`` changes a layer's class from, say, ``GCNConv`` to a subclass of it and of
:class:`SARLayer`, generated once per class. The conversion is visible in the type
(``isinstance(layer, SARLayer)``, ``type(layer).__module__ == "pyg_sar.nn.converted"``) while the
name, ``repr``, parameters, ``state_dict`` and ``copy.deepcopy`` are those of the PyG class.
A converted layer still runs PyG's own code for a plain ``edge_index``; for a
:class:`~pyg_sar.graph.DistGraph` its ``propagate`` (and ``edge_updater`` for the GAT family)
runs the distributed engine.
"""
from __future__ import annotations

from typing import Any

from torch import Tensor

from pyg_sar.graph import DistGraph
from pyg_sar.nn.wire import release_held_wire


class SARLayer:
    """Mixin of every converted MessagePassing layer (first in the generated class's bases)."""

    _sar_base: type  # the class the layer had before conversion

    def propagate(self, edge_index: Any, size=None, **kwargs: Any) -> Tensor:
        if not isinstance(edge_index, DistGraph):
            return self._sar_base.propagate(self, edge_index, size=size, **kwargs)
        from pyg_sar.nn.propagate import dist_propagate
        return dist_propagate(self, edge_index, size, kwargs)


class SARAttentionLayer(SARLayer):
    """Converted GAT-family layer: its ``edge_updater`` defers the scores to ``propagate``."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # In halo mode edge_updater hands its wire to propagate (pyg_sar.nn.wire.hold_wire);
        # whatever happens in between, the wire ends with this call.
        try:
            return super().__call__(*args, **kwargs)
        finally:
            release_held_wire(self)

    def edge_updater(self, edge_index: Any, size=None, **kwargs: Any):
        if not isinstance(edge_index, DistGraph):
            return self._sar_base.edge_updater(self, edge_index, size=size, **kwargs)
        from pyg_sar.nn.attention import dist_edge_updater
        return dist_edge_updater(self, edge_index, size, kwargs)


_CLASSES: dict[tuple, type] = {}


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
