"""``propagate`` of converted layers over a :class:`~pyg_sar.graph.DistGraph`.

It runs the layer's own ``message`` block by block through the
SAR engine (modes ``sar``/``sa``) or fetches the whole halo and runs PyG's propagate on it
(mode ``halo``). Arguments with source role (``x_j``, ...) are what crosses the network;
destination (``x_i``) and edge tensors stay local.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Optional

from torch import Tensor
from torch_geometric.nn.conv import MessagePassing

from pyg_sar.config import SARConfig
from pyg_sar.core.combine import CombineRule, SoftmaxRule, make_rule
from pyg_sar.core.dst_chunks import ChunkedPropagation, dst_chunk_propagate
from pyg_sar.core.halo import halo_offsets, with_halo
from pyg_sar.core.sar import BlockProgram, LinearMessage, Propagation, sar_propagate
from pyg_sar.core.views import BipartiteLoopsError, GraphView, ViewBlock
from pyg_sar.graph import DistGraph
from pyg_sar.nn.adapters.aggregation import StatsAggregation
from pyg_sar.nn.adapters.families import option
from pyg_sar.nn.conversion.custom_aggregate import CustomAggregateProgram
from pyg_sar.nn.conversion.edge_data import check_edge_data
from pyg_sar.nn.conversion.registry import NODES_IN_DIM_0
from pyg_sar.nn.conversion.wire import layer_wire
from pyg_sar.nn.layers import (
    CUSTOM,
    PER_DESTINATION,
    LayerSpec,
    UnsupportedLayerError,
    hooks_reason,
    message_passing_hooks,
    node_tensor,
)

_SPECIAL = {"index", "ptr", "dim_size", "size_i", "size_j", "edge_index_i", "edge_index_j",
            "size", "edge_index", "adj_t"}


class LayerProgram:
    """Computes one block's messages with the layer's own ``message``."""

    def __init__(self, layer: MessagePassing, plan: list[tuple[str, str, Any]],
                 linear: Optional[LinearMessage]) -> None:
        self.layer, self.plan, self.linear = layer, plan, linear

    def messages(self, block: ViewBlock, src, dst, edge, message=None) -> Tensor:
        kwargs: dict[str, Any] = {}
        for name, role, ref in self.plan:
            if role == "src":
                kwargs[name] = src[ref].index_select(0, block.col)
            elif role == "dst":
                kwargs[name] = dst[ref].index_select(0, block.row)
            elif role == "edge":
                kwargs[name] = edge[ref]
            elif role == "const":
                kwargs[name] = ref
            else:
                kwargs[name] = _special(name, block)
        return (message or self.layer.message)(**kwargs)


class SoftmaxAggregationProgram:
    """PyG's SoftmaxAggregation as attention: score ``t * m``, value ``m`` per channel."""

    linear = None

    def __init__(self, inner: LayerProgram, module) -> None:
        self.inner, self.module = inner, module

    def messages(self, block: ViewBlock, src, dst, edge):
        msgs = self.inner.messages(block, src, dst, edge)
        if msgs.dim() != 2:
            raise ValueError(f"pyg_sar: SoftmaxAggregation needs 2-D messages (got shape "
                             f"{tuple(msgs.shape)})")
        t = self.module.t
        if isinstance(t, Tensor) and self.module.channels != 1:
            t = t.view(-1, self.module.channels)
        scores = msgs if not isinstance(t, Tensor) and t == 1 else msgs * t
        return scores, msgs.unsqueeze(-1), None


def _special(name: str, block: ViewBlock) -> Any:
    num_dst = block.rowptr.numel() - 1
    if name in ("index", "edge_index_i"):
        return block.row
    if name == "edge_index_j":
        return block.col
    if name in ("dim_size", "size_i"):
        return num_dst
    if name == "size_j":
        return block.num_src
    if name == "ptr":
        return None
    raise ValueError(f"pyg_sar: message argument {name!r} is not supported over a DistGraph")


def _check_rows(t: Tensor, layer: MessagePassing, name: str, rows: int,
                role: Optional[str] = None) -> Tensor:
    if t.dim() == 0:
        raise ValueError(f"pyg_sar: {type(layer).__name__} argument {name!r} is a scalar; "
                         f"propagate needs one row per node")
    if layer.node_dim % t.dim() != 0:  # e.g. a [stacks, nodes, channels] tensor (ARMAConv)
        raise UnsupportedLayerError(
            f"pyg_sar: {type(layer).__name__} propagates argument {name!r} of shape "
            f"{tuple(t.shape)} with its nodes in dimension {layer.node_dim % t.dim()} "
            f"(node_dim={layer.node_dim}); {NODES_IN_DIM_0}")
    if t.shape[0] != rows:
        what = "the rank's local nodes" if role is None else (
            f"the rank's local nodes of the {role} node set")
        raise ValueError(f"pyg_sar: {type(layer).__name__} argument {name!r} has {t.shape[0]} "
                         f"rows, expected {rows} ({what})")
    return t


def _plan(layer: MessagePassing, view: GraphView, kwargs: dict):
    """Split the message's arguments into source, destination, edge and constant inputs."""
    plan, src, dst, edge = [], [], [], []
    src_of: dict[str, int] = {}
    dst_of: dict[str, int] = {}
    n_src, n_dst = view.graph.num_src_nodes, view.graph.num_nodes
    for name in layer.inspector.get_param_names("message"):
        if name in _SPECIAL:
            plan.append((name, "special", None))
        elif name.endswith("_j") or name.endswith("_i"):
            base, is_src = name[:-2], name.endswith("_j")
            if base not in kwargs:
                raise ValueError(f"pyg_sar: {type(layer).__name__}.message needs {name!r} but "
                                 f"propagate got no {base!r}")
            table, store = (src_of, src) if is_src else (dst_of, dst)
            if base not in table:
                t = node_tensor(kwargs[base], 0 if is_src else 1)
                table[base] = len(store)
                store.append(_check_rows(t, layer, base, n_src if is_src else n_dst,
                                         "source" if is_src else "destination"))
            plan.append((name, "src" if is_src else "dst", table[base]))
        else:
            value = kwargs.get(name)
            if (not isinstance(value, Tensor) or value.dim() == 0
                    or value.shape[0] not in (view.num_edges, view.graph.num_edges)
                    or _layer_state(layer, value)):
                plan.append((name, "const", value))
            elif value.shape[0] == view.num_edges:
                plan.append((name, "edge", len(edge)))
                edge.append(value)
            else:
                raise ValueError(f"pyg_sar: {type(layer).__name__} edge argument {name!r} is in "
                                 f"stored edge order but the layer propagates over a view with "
                                 f"self-loops")
    return plan, src, dst, edge


def _layer_state(layer: MessagePassing, value: Tensor) -> bool:
    """Whether ``value`` is one of the layer's own parameters or buffers: never per-edge data,
    whatever its length (a rank may hold as many edges as a parameter has rows), so passed
    whole, as PyG does. Asked only of tensors as long as the edges."""
    return any(value is t for t in (*layer.parameters(), *layer.buffers()))


def _own_table_rows(layer: MessagePassing, graph: DistGraph, kwargs: dict,
                    name: str) -> dict:
    """``kwargs`` with the propagate argument ``name``, a table with one row per node of the
    whole graph (LINKX's ``SparseLinear`` weight: ``A @ W``), cut to the rank's own nodes'
    rows, ``table[graph.node_ids]`` (original ids, the ids the model was built for): the
    engine fetches the sources' rows from their owners, and their gradients go back to the
    owners' rows of the table (a replicated parameter, summed over ranks like any other)."""
    table = kwargs.get(name)
    if not isinstance(table, Tensor):
        return kwargs
    cls = type(layer).__name__
    if graph.node_ids is None:
        raise ValueError(f"pyg_sar: {cls} indexes its {name} by node id, but this DistGraph "
                         f"has no node_ids (original ids); load it with "
                         f"pyg_sar.load_partition")
    if table.shape[0] != graph.num_global_nodes:
        raise ValueError(f"pyg_sar: {cls} has a {name} for {table.shape[0]} nodes, but the "
                         f"graph has {graph.num_global_nodes}")
    rows = table.index_select(0, graph.node_ids.to(table.device))
    return {**kwargs, name: rows}


def _propagate_stacked(layer: MessagePassing, graph: DistGraph, size, kwargs: dict) -> Tensor:
    """The propagate of a stack ``x`` ``[K, n, F]`` (PyG's ``node_dim=-2``, ARMAConv's
    ``num_stacks``) as ``[n, K * F]``: the engine exchanges node rows in dimension 0, and the
    adapter declared the message linear and row-wise (``Adapter.stacked_rows``), so the
    stacks side by side in the channels give the same numbers."""
    x = kwargs["x"]
    k, n, f = x.shape
    flat = x.transpose(0, 1).reshape(n, k * f)
    out = dist_propagate(layer, graph, size, {**kwargs, "x": flat})
    return out.reshape(n, k, -1).transpose(0, 1)


def dist_propagate(layer: MessagePassing, graph: DistGraph, size, kwargs: dict) -> Tensor:
    """``layer.propagate`` of a converted layer over a DistGraph (see the module docstring)."""
    config: SARConfig = layer._sar_config
    spec: LayerSpec = layer._sar_spec
    if spec.adapter is not None and spec.adapter.stacked_rows:
        x = kwargs.get("x")
        if isinstance(x, Tensor) and x.dim() == 3:
            return _propagate_stacked(layer, graph, size, kwargs)
    if spec.adapter is not None and spec.adapter.node_table is not None:
        kwargs = _own_table_rows(layer, graph, kwargs, spec.adapter.node_table)
    hooks = message_passing_hooks(layer)
    if hooks:  # registered after convert
        raise ValueError(f"pyg_sar: {type(layer).__name__}: {hooks_reason(hooks)}")
    expected = (graph.num_src_nodes, graph.num_nodes)
    if size is not None and tuple(size) != expected:
        raise ValueError(f"pyg_sar: propagate with size={tuple(size)} over a DistGraph whose "
                         f"rank holds {expected[0]} source and {expected[1]} destination nodes "
                         f"(size must be {expected}; a bipartite propagate needs a bipartite "
                         f"DistGraph, one edge type of a heterogeneous partition)")
    if graph.edge_values is not None:  # data.adj_t: its values are the edge weights
        from pyg_sar.nn.conversion.values import with_edge_values
        kwargs = with_edge_values(layer, graph, kwargs)
    if not (spec.attention and layer.inspector.implements("edge_update")):
        # (GAT's edge data went through its edge_updater, checked there; its ``alpha`` here
        # is the engine's own.)
        check_edge_data(layer, graph, kwargs)
    if spec.attention:
        from pyg_sar.nn.adapters.attention import attention_propagate, attention_view
        if config.mode != "halo":
            return attention_propagate(layer, graph, kwargs, config)
        return _halo_propagate(layer, attention_view(layer, graph), kwargs)
    view, kwargs = prepare_view(layer, spec, graph, kwargs)
    custom = spec.adapter.aggregate if spec.aggr == CUSTOM else None
    if config.mode == "halo":
        out = None if custom is None else custom.halo(layer, view, kwargs)
        return _halo_propagate(layer, view, kwargs) if out is None else out
    if spec.aggr == PER_DESTINATION or (spec.adapter is not None
                                        and option(layer, spec.adapter.per_destination)):
        return _updated(layer, _by_destination(layer, view, kwargs, config))
    plan, src, dst, edge = _plan(layer, view, kwargs)
    linear = None
    if spec.linear and config.use_kernels:
        weight = None
        if spec.weight_arg is not None and kwargs.get(spec.weight_arg) is not None:
            weight = next(ref for name, role, ref in plan if name == spec.weight_arg)
        # PyG's message x_j * weight promotes to the wider dtype; the kernel computes in x's.
        if weight is None or edge[weight].dtype == src[0].dtype:
            linear = LinearMessage(src=0, weight=weight)
    params = [] if linear is not None else [p for p in layer.parameters() if p.requires_grad]
    combine = _combine(layer, spec, view, kwargs, LayerProgram(layer, plan, linear), edge,
                       custom)
    prop = Propagation(view, combine.program, combine.rule, config.mode, config.pipeline_depth,
                       replay_rng=layer.training, wire=layer_wire(layer))
    return _updated(layer, combine.finish(sar_propagate(prop, src, dst, combine.edge, params)))


def _updated(layer: MessagePassing, out: Tensor) -> Tensor:
    """The layer's own ``update`` of the aggregate, where the class defines one."""
    return layer.update(out) if type(layer).update is not MessagePassing.update else out


class DestinationProgram:
    """One destination chunk's output: the layer's own ``message`` over the chunk's edges,
    then its own ``aggregate`` (PyG's code), with every in-edge of the chunk's nodes at once."""

    def __init__(self, layer: MessagePassing, messages: LayerProgram) -> None:
        self.layer, self.messages = layer, messages

    def chunk(self, block: ViewBlock, src, dst, edge) -> Tensor:
        msgs = self.messages.messages(block, src, dst, edge)
        return self.layer.aggregate(msgs, index=block.row, ptr=None,
                                    dim_size=block.rowptr.numel() - 1)


def _by_destination(layer: MessagePassing, view: GraphView, kwargs: dict,
                    config: SARConfig) -> Tensor:
    """Propagate of a layer that normalises over each node's in-edges inside ``message``
    (PyG's ``softmax`` over ``index``): destination chunks, each with all its in-edges
    (:mod:`pyg_sar.core.dst_chunks`), so PyG's ``message`` and ``aggregate`` run unchanged."""
    plan, src, dst, edge = _plan(layer, view, kwargs)
    params = [p for p in layer.parameters() if p.requires_grad]
    prop = ChunkedPropagation(view, DestinationProgram(layer, LayerProgram(layer, plan, None)),
                              config.mode, replay_rng=layer.training, wire=layer_wire(layer))
    return dst_chunk_propagate(prop, src, dst, edge, params)


@dataclass
class _Combine:
    """How one layer's messages are combined across blocks: the program that computes a
    block's messages, the rule that folds them, the edge tensors the program reads, and what
    turns the rule's result into the layer's aggregate."""

    program: BlockProgram
    rule: CombineRule
    edge: list
    finish: Callable[[Tensor], Tensor] = lambda out: out


def _combine(layer: MessagePassing, spec: LayerSpec, view: GraphView, kwargs: dict,
             program: LayerProgram, edge: list, custom) -> _Combine:
    """The one place that maps a layer's aggregation (its class's own ``aggregate``, a softmax
    / statistics aggregation module, or a basic reduction) to the engine's program and
    combine rule. (A layer that normalises inside ``message`` runs by destination chunks
    instead: :func:`_by_destination`.)"""
    if custom is not None:  # the class's own aggregate as a combine rule (custom_aggregate)
        aggregation = custom.build(layer, view, kwargs)
        return _Combine(CustomAggregateProgram(program, aggregation, len(edge)),
                        aggregation.rule, edge + aggregation.edge)
    if spec.aggr == "softmax_aggr":
        module = layer.aggr_module
        return _Combine(SoftmaxAggregationProgram(program, module),
                        SoftmaxRule(semi_grad=module.semi_grad and not module.learn), edge,
                        lambda out: out.squeeze(-1))
    if spec.aggr == "stats":  # PNA's degree scalers, var, std, MultiAggregation
        stats = StatsAggregation(layer.aggr_module, view.in_degree)
        return _Combine(program, stats.rule(), edge, stats.after)
    return _Combine(program, make_rule(spec.aggr, view.in_degree), edge)


def prepare_view(layer: MessagePassing, spec: LayerSpec, graph: DistGraph, kwargs: dict):
    """The layer family's preprocessing (:attr:`LayerSpec.prepare`), with a refusal of
    self-loops on a bipartite graph naming the layer."""
    try:
        return spec.prepare(layer, graph, kwargs)
    except BipartiteLoopsError as err:
        raise ValueError(f"pyg_sar: {type(layer).__name__} adds {err}") from None


def _halo_propagate(layer: MessagePassing, view: GraphView, kwargs: dict) -> Tensor:
    """Vanilla baseline: fetch every remote source row once, run PyG's own propagate."""
    graph = view.graph
    offsets = halo_offsets(graph)
    edge_index = graph.cached_for(view, ("halo_edge_index",), lambda: view.edge_index(offsets))
    num_ext = graph.num_src_nodes + sum(graph.recv_counts)
    # Only tensors read with source role (``x_j``) need the halo rows. Ordered (not a set):
    # every rank must issue its collectives in the same order.
    bases = list(dict.fromkeys(name[:-2] for name in layer.inspector.get_param_names("message")
                               if name.endswith("_j")))
    new_kwargs = dict(kwargs)
    wire, fetched = layer_wire(layer), 0
    for base in bases:
        data = kwargs.get(base)
        src, dst = node_tensor(data, 0), node_tensor(data, 1)
        if isinstance(src, Tensor):
            _check_rows(src, layer, base, graph.num_src_nodes, "source")
            # ``fetched``: the tensor's index among the source tensors, as in modes sar/sa
            new_kwargs[base] = (with_halo(graph, src, wire, fetched), dst)
            fetched += 1
    return layer._sar_base.propagate(layer, edge_index, size=(num_ext, graph.num_nodes),
                                     **new_kwargs)
