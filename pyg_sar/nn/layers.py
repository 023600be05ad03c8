"""Whether a layer can run exactly over a partitioned graph, and how: :func:`inspect_layer`.

Per-class knowledge lives in :mod:`pyg_sar.nn.conversion.registry`; this module applies it, plus the
checks every layer must pass (aggregation, flow, update arguments), and raises
:class:`UnsupportedLayerError`, naming the layer, its class and the reason, for anything else.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from torch import Tensor
from torch_geometric.nn import aggr as pyg_aggr
from torch_geometric.nn.conv import MessagePassing

from pyg_sar.nn.adapters import aggregation
from pyg_sar.nn.adapters.families import Prepare
from pyg_sar.nn.conversion import registry

_AGGREGATIONS = {
    pyg_aggr.SumAggregation: "sum",
    pyg_aggr.MeanAggregation: "mean",
    pyg_aggr.MaxAggregation: "max",
    pyg_aggr.MinAggregation: "min",
    pyg_aggr.SoftmaxAggregation: "softmax_aggr",
}


# LayerSpec.aggr of a layer aggregated by its adapter's own rule (registry Adapter.aggregate).
CUSTOM = "custom"
# LayerSpec.aggr of a layer run by destination chunks (pyg_sar.core.dst_chunks), whose every
# chunk has all the in-edges of its nodes: an aggregation module that per-node statistics
# cannot rebuild but whose value does not depend on the order of a node's messages (median,
# power mean, ...) or a trusted class's own ``aggregate()``, run as written.
PER_DESTINATION = "per_destination"


class UnsupportedLayerError(ValueError):
    """A layer that cannot be run exactly over a partitioned graph."""


@dataclass(frozen=True)
class LayerSpec:
    """How the engine runs one converted layer."""

    aggr: str
    linear: bool  # message is x_j or x_j * weight
    weight_arg: Optional[str]  # the name of that weight in propagate's kwargs
    prepare: Prepare
    attention: bool = False
    adapter: Optional[registry.Adapter] = None

    def __reduce_ex__(self, protocol: int) -> tuple:
        # prepare is the adapter's (a closure for most verified classes): pickled through it.
        if self.adapter is not None and self.prepare is self.adapter.prepare:
            return _spec_with_adapter_prepare, (self.aggr, self.linear, self.weight_arg,
                                                self.attention, self.adapter)
        return super().__reduce_ex__(protocol)


def _spec_with_adapter_prepare(aggr: str, linear: bool, weight_arg: Optional[str],
                               attention: bool, adapter: registry.Adapter) -> LayerSpec:
    return LayerSpec(aggr, linear, weight_arg, adapter.prepare, attention, adapter)


def _aggr_name(layer: MessagePassing, where: str) -> str:
    if _unconverted(type(layer)).aggregate is not MessagePassing.aggregate:
        return PER_DESTINATION  # the class's own aggregate() (trusted), whole neighbourhoods
    module = layer.aggr_module
    name = _AGGREGATIONS.get(type(module))
    if name is None:
        if aggregation.refusal(module) is None:
            return "stats"  # a function of per-node message statistics (nn.aggregation)
        reason = aggregation.order_refusal(module)
        if reason is not None:
            raise UnsupportedLayerError(
                f"{where}: {type(layer).__name__} uses aggregation {type(module).__name__}, "
                f"which is not exact over a partition: {reason}")
        return PER_DESTINATION
    return name


def inspect_layer(layer: MessagePassing, where: str,
                  trusted: tuple[type, ...] = (), basis: bool = False) -> LayerSpec:
    """The :class:`LayerSpec` of ``layer``; raises :class:`UnsupportedLayerError` if it cannot
    be shown to run exactly (see :mod:`pyg_sar.nn.conversion.registry`). ``basis``: a conv of
    ``to_hetero_with_bases``, whose PyG message hook convert replaces (not a refusal)."""
    cls = _unconverted(type(layer))
    name = f"{where} ({cls.__name__})"
    # A verified class whose own aggregate pyg_sar runs as a combine rule (registry
    # Adapter.aggregate), unless a subclass overrides that aggregate again.
    _, verified, overridden = registry.verified_adapter(cls)
    custom = (verified is not None and verified.aggregate is not None
              and "aggregate" not in overridden)
    aggr = CUSTOM if custom else _aggr_name(layer, name)
    adapter = _adapter(layer, name, trusted)
    if adapter.refuse is not None:
        reason = adapter.refuse(layer)
        if reason is not None:
            raise UnsupportedLayerError(f"{name}: {reason}")
    if "propagate" in vars(layer) or "edge_updater" in vars(layer):
        raise UnsupportedLayerError(f"{name}: the layer has an instance-level propagate "
                                    f"(explain mode or decomposed_layers), which pyg_sar "
                                    f"cannot follow")
    hooks = message_passing_hooks(layer, basis=basis)
    if hooks:
        raise UnsupportedLayerError(f"{name}: {hooks_reason(hooks)}")
    if getattr(layer, "decomposed_layers", 1) > 1:
        raise UnsupportedLayerError(f"{name}: decomposed_layers > 1 is not supported")
    if layer.flow != "source_to_target":
        raise UnsupportedLayerError(f"{name}: flow={layer.flow!r} is not supported "
                                    f"(edges are stored on their destination's rank)")
    update = cls.update
    if update is not MessagePassing.update and layer.inspector.get_param_names("update"):
        raise UnsupportedLayerError(f"{name}: {cls.__name__}.update() takes extra "
                                    f"arguments, which are not supported")
    if adapter.kind == registry.ATTENTION:
        return LayerSpec("softmax", False, None, adapter.prepare, attention=True,
                         adapter=adapter)
    linear = adapter.linear_weight is not None and aggr in ("sum", "mean")
    weight_arg = adapter.linear_weight or None
    return LayerSpec(aggr, linear, weight_arg, adapter.prepare, adapter=adapter)


# PyG's per-layer hook tables of the per-edge steps (``register_message_forward_hook`` and
# friends). Propagate hooks see the whole call (graph, arguments, output) and run over a
# DistGraph as over an edge_index (:class:`pyg_sar.nn.conversion.converted.SARLayer`).
_PYG_HOOK_TABLES = ("_message_forward_pre_hooks", "_message_forward_hooks",
                    "_aggregate_forward_pre_hooks", "_aggregate_forward_hooks",
                    "_message_and_aggregate_forward_pre_hooks",
                    "_message_and_aggregate_forward_hooks",
                    "_edge_update_forward_pre_hooks", "_edge_update_forward_hooks")


def message_passing_hooks(layer: MessagePassing, basis: bool = False) -> list[str]:
    """The names of PyG's hook tables of ``layer`` that hold hooks of a per-edge step
    (message, aggregate, message_and_aggregate, edge-update hooks; propagate hooks and torch's
    module hooks run as usual). ``basis``: ``to_hetero_with_bases``'s own message hook, which
    :func:`pyg_sar.nn.adapters.hetero_bases.prepare_bases` replaces, does not count."""
    from torch_geometric.nn import to_hetero_with_bases_transformer as thb
    return [t for t in _PYG_HOOK_TABLES
            if any(not (basis and h is thb.hook) for h in getattr(layer, t, {}).values())]


def hooks_reason(tables: list[str]) -> str:
    """Why a layer with PyG message-passing hooks is refused."""
    names = ", ".join(t.strip("_").replace("_hooks", "") for t in tables)
    return (f"it has PyG message-passing hooks ({names} hooks), which see a whole graph's "
            f"messages or aggregation: pyg_sar computes a layer's messages block by block "
            f"(one source rank at a time) and would not run them; propagate hooks are supported "
            f"(to_hetero_with_bases's message hook is replaced at convert)")


def _unconverted(cls: type) -> type:
    """The class a layer had before :func:`pyg_sar.convert` (converting again is allowed)."""
    return getattr(cls, "_sar_base", cls)


def _adapter(layer: MessagePassing, name: str, trusted: tuple[type, ...]) -> registry.Adapter:
    cls = _unconverted(type(layer))
    structural = registry.structural_refusal(cls)
    if structural is not None:
        raise UnsupportedLayerError(f"{name}: {structural}")
    base, adapter, overridden = registry.verified_adapter(cls)
    if adapter is not None and not issubclass(cls, trusted):
        # Verified by content, on any torch_geometric release (pyg_sar.nn.fingerprints).
        from pyg_sar.nn.conversion import fingerprint_check as fingerprints
        changed = fingerprints.refusal(base)
        if changed is not None:
            raise UnsupportedLayerError(f"{name}: {changed}")
    if adapter is not None:
        if overridden and not issubclass(cls, trusted):
            raise UnsupportedLayerError(
                f"{name}: it overrides {', '.join(overridden)} of {base.__name__}, which "
                f"pyg_sar verified as PyG defines it; list the class in "
                f"SARConfig(trusted_layers=...) to run it anyway")
        return adapter
    if issubclass(cls, trusted):
        return registry.Adapter("trusted", linear_weight=""
                                if cls.message is MessagePassing.message else None,
                                per_destination=registry.runs_per_destination(cls, layer))
    if cls.__module__.startswith("torch_geometric"):
        reason = registry.REFUSED.get(cls.__name__, "it is not among the layers pyg_sar has "
                                      "verified to run exactly over a partitioned graph")
        raise UnsupportedLayerError(f"{name}: {reason} (see docs/supported_layers.md; "
                                    f"SARConfig(trusted_layers=...) overrides)")
    foreign = [k.__name__ for k in cls.__mro__[1:]
               if k.__module__.startswith("torch_geometric") and k is not MessagePassing
               and issubclass(k, MessagePassing)]
    if foreign:
        raise UnsupportedLayerError(f"{name}: it derives from {foreign[0]}, which pyg_sar has "
                                    f"not verified; SARConfig(trusted_layers=...) overrides")
    violation = registry.static_rule_violation(cls, layer)
    if violation is not None:
        raise UnsupportedLayerError(f"{name}: {violation}; list the class in "
                                    f"SARConfig(trusted_layers=...) if it is exact anyway")
    # PyG's default message (x_j) is linear: the fused kernel applies.
    return registry.Adapter("user", linear_weight="" if cls.message is MessagePassing.message
                            else None,
                            per_destination=registry.runs_per_destination(cls, layer))


def node_tensor(data: Any, role: int) -> Optional[Tensor]:
    """The source (``role=0``) or destination (``role=1``) part of a propagate argument."""
    if isinstance(data, (tuple, list)):
        return data[role]
    return data
