"""Attention layers whose softmax lives in ``edge_update`` (GATConv, GATv2Conv) over a DistGraph.

(Layers whose softmax is inside ``message``, TransformerConv among them, run the layer's own
message and aggregate by destination chunks: :mod:`pyg_sar.core.dst_chunks`.)

Their softmax spans all in-edges of a node, which are spread over several blocks, so the engine
runs them with the online-softmax rule (:class:`pyg_sar.core.combine.SoftmaxRule`): each block
yields raw scores, values and the attention-dropout multipliers; nothing per edge outlives its
block. The per-class score functions below restate PyG's ``edge_update`` / ``message`` of each
layer up to (not including) the softmax; the tests compare them with PyG on the whole graph.

For GAT and GATv2 the layer's ``edge_updater`` is replaced by one that returns a
:class:`DeferredScores` holding its inputs; ``propagate`` then computes the scores block by
block. In halo mode the original ``edge_updater``/``propagate`` run on local + halo rows; the
edge updater binds the call's compressor and hands its wire to ``propagate``
(:func:`pyg_sar.nn.conversion.wire.hold_wire`), so one forward binds once and each source tensor
crosses once (GATv2's ``x_l``, read by both, is fetched by the edge updater and reused), with the
same keys as modes ``sar``/``sa``.

Compression (``SARConfig.compression``) applies to the feature rows (``x``, GATv2's ``x_l``);
GAT's attention logits ``alpha_src`` (``[H]`` a row) never go through the channel codec, in
every mode and path (:data:`LOGITS`, :meth:`pyg_sar.core.exchange.Wire.codec_of`): it would zero
whole heads' logits, which changes the attention weights instead of adding noise to a feature.
They cross raw, or cast to the compressor's ``logit_dtype`` (bfloat16 in the ``auto`` preset)
while its codec is lossy (:meth:`pyg_sar.compression.BoundCodec.logit_dtype_of`).

With ``SARConfig.use_kernels`` (the default), GATConv and GATv2Conv in modes ``sar``/``sa`` run
the fused attention kernels instead (:mod:`pyg_sar.core.fused_attention`): one kernel call per
block, no per-edge tensor built or kept, attention dropout from a counter-based generator keyed
by (seed, global source id, global destination id, head), so its mask does not depend on P.
The plain-torch path above stays the fallback (``use_kernels=False``, a dtype the build's
kernels lack (:func:`pyg_sar.core.fused_attention.fused_dtype`), or no native kernel for the
device).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.nn.conv import GATConv, GATv2Conv, MessagePassing

from pyg_sar.config import SARConfig
from pyg_sar.core.combine import SoftmaxRule
from pyg_sar.core.exchange import Wire
from pyg_sar.core.fused_attention import FusedAttention, fused_attention, fused_dtype
from pyg_sar.core.halo import halo_offsets, with_halo
from pyg_sar.core.sar import Propagation, sar_propagate
from pyg_sar.core.views import GraphView, ViewBlock, self_loop_view, stored_view
from pyg_sar.graph import DistGraph
from pyg_sar.nn.conversion.edge_data import check_edge_data
from pyg_sar.nn.conversion.wire import hold_wire, layer_wire
from pyg_sar.ops._gat_attention import fused_attention_available

# Source tensors of a GAT/GATv2 propagate, in every mode and path: x (GATv2's x_l) 0, GAT's
# alpha_src 1. The logits skip the codec (raw, or cast: see the module docstring).
X, ALPHA = 0, 1
LOGITS = frozenset({ALPHA})


def attention_wire(layer: MessagePassing) -> Wire:
    """The wire of one GAT/GATv2 layer call (logits past the codec)."""
    return layer_wire(layer, exact=LOGITS if isinstance(layer, GATConv) else ())


@dataclass
class DeferredScores:
    """What ``edge_updater`` was called with; the scores are computed inside propagate."""

    view: GraphView
    kwargs: dict


def attention_view(layer: MessagePassing, graph: DistGraph) -> GraphView:
    if isinstance(layer, (GATConv, GATv2Conv)) and layer.add_self_loops:
        if graph.is_bipartite:
            raise ValueError(
                f"pyg_sar: {type(layer).__name__}(add_self_loops=True) over a bipartite graph "
                f"(an edge type between two node types): a source and a destination node with "
                f"the same id are unrelated, so there are no self-loops to add; construct it "
                f"with add_self_loops=False (as PyG's to_hetero / HeteroConv need)")
        return self_loop_view(graph)
    return stored_view(graph)


def _loop_attr(layer: MessagePassing, view: GraphView, edge_attr: Tensor) -> Tensor:
    """Edge attribute of each added self-loop, as PyG's ``add_self_loops(fill_value=...)``."""
    graph = view.graph
    local = graph.blocks[graph.rank]
    fill = layer.fill_value
    shape = (graph.num_nodes, *edge_attr.shape[1:])
    if isinstance(fill, (int, float)):
        return edge_attr.new_full(shape, float(fill))
    if isinstance(fill, Tensor):
        return fill.to(edge_attr).expand(shape)
    if fill in ("mean", "add", "sum"):
        total = edge_attr.new_zeros(shape)
        count = edge_attr.new_zeros(graph.num_nodes)
        for b in graph.blocks:
            attr = edge_attr[b.edge_slice]
            keep = b.row != b.col if b is local else torch.ones_like(b.row, dtype=torch.bool)
            total.index_add_(0, b.row[keep], attr[keep])
            count.index_add_(0, b.row[keep], torch.ones_like(count[b.row[keep]]))
        if fill == "mean":
            total = total / count.clamp(min=1).view(-1, *([1] * (total.dim() - 1)))
        return total
    raise ValueError(f"pyg_sar: {type(layer).__name__}(fill_value={fill!r}) is not supported "
                     f"over a DistGraph (supported: a number, a tensor, 'mean', 'add', 'sum')")


def _view_edge_attr(layer: MessagePassing, view: GraphView,
                    edge_attr: Optional[Tensor]) -> Optional[Tensor]:
    if edge_attr is None or view.stored_index is None:
        return edge_attr
    if edge_attr.shape[0] != view.graph.num_edges:
        raise ValueError(f"pyg_sar: {type(layer).__name__} got edge_attr with "
                         f"{edge_attr.shape[0]} rows, expected {view.graph.num_edges} (the "
                         f"rank's stored edges, in the order of LocalPartition.edge_attr)")
    return view.edge_tensor(edge_attr, loop_value=_loop_attr(layer, view, edge_attr))


def _dropout(layer: MessagePassing, scores: Tensor) -> Optional[Tensor]:
    if not layer.training or layer.dropout == 0:
        return None
    return F.dropout(torch.ones_like(scores), p=layer.dropout, training=True)


def _edge_features(lin: Optional[torch.nn.Module], edge_attr: Tensor, heads: int,
                   channels: int) -> Tensor:
    if edge_attr.dim() == 1:
        edge_attr = edge_attr.view(-1, 1)
    return lin(edge_attr).view(-1, heads, channels)


class GATProgram:
    """GATConv: ``s = leaky_relu(a_src[j] + a_dst[i] (+ a_edge))``, value ``x_src[j]``.

    Inputs: src ``[x_src (N, H, C), alpha_src (N, H)]``, dst ``[alpha_dst]``, edge
    ``[edge_attr]`` (optional).
    """

    linear = None

    def __init__(self, layer: GATConv, with_edges: bool) -> None:
        self.layer, self.with_edges = layer, with_edges

    def messages(self, block: ViewBlock, src, dst, edge):
        layer = self.layer
        scores = src[1].index_select(0, block.col) + dst[0].index_select(0, block.row)
        if self.with_edges and layer.lin_edge is not None:
            ea = _edge_features(layer.lin_edge, edge[0], layer.heads, layer.out_channels)
            scores = scores + (ea * layer.att_edge).sum(dim=-1)
        scores = F.leaky_relu(scores, layer.negative_slope)
        return scores, src[0].index_select(0, block.col), _dropout(layer, scores)


class GATv2Program:
    """GATv2Conv: ``s = att . leaky_relu(x_l[j] + x_r[i] (+ W_e e))``, value ``x_l[j]``."""

    linear = None

    def __init__(self, layer: GATv2Conv, with_edges: bool) -> None:
        self.layer, self.with_edges = layer, with_edges

    def messages(self, block: ViewBlock, src, dst, edge):
        layer = self.layer
        x_j = src[0].index_select(0, block.col)
        x = x_j + dst[0].index_select(0, block.row)
        if self.with_edges:
            x = x + _edge_features(layer.lin_edge, edge[0], layer.heads, layer.out_channels)
        x = F.leaky_relu(x, layer.negative_slope)
        scores = (x * layer.att).sum(dim=-1)
        return scores, x_j, _dropout(layer, scores)


def _pair(data: Any, role: int) -> Optional[Tensor]:
    return data[role] if isinstance(data, (tuple, list)) else data


def dist_edge_updater(layer: MessagePassing, graph: DistGraph, size, kwargs: dict):
    """``layer.edge_updater`` of a converted GAT/GATv2 layer over a DistGraph."""
    check_edge_data(layer, graph, kwargs)
    view = attention_view(layer, graph)
    kwargs = dict(kwargs)
    kwargs["edge_attr"] = _view_edge_attr(layer, view, kwargs.get("edge_attr"))
    if layer._sar_config.mode != "halo":
        return DeferredScores(view, kwargs)
    # Halo mode: PyG's own edge_updater on [local; halo] rows, one per-edge tensor back.
    # Tensor indices as in the fused kernels' source tensors. The wire (bound once) goes on
    # to this call's propagate, which reuses its halo rows (GATv2's x_l).
    wire = attention_wire(layer)
    hold_wire(layer, wire)
    for name, tensor in (("alpha", ALPHA), ("x", X)):
        if name in kwargs:
            src, dst = _pair(kwargs[name], 0), _pair(kwargs[name], 1)
            kwargs[name] = (with_halo(graph, src, wire, tensor), dst)
    ext = graph.cached_for(view, ("halo_edge_index",),
                           lambda: view.edge_index(halo_offsets(graph)))
    num_ext = graph.num_src_nodes + sum(graph.recv_counts)
    return layer._sar_base.edge_updater(layer, ext, size=(num_ext, graph.num_nodes), **kwargs)


def _fused_inputs(layer: MessagePassing, kwargs: dict) -> Optional[dict]:
    """The fused kernels' inputs for a GAT/GATv2 propagate, or None if they do not apply."""
    deferred = kwargs.get("alpha")
    if not isinstance(deferred, DeferredScores):
        return None
    ekw = deferred.kwargs
    edge_attr = ekw.get("edge_attr")
    heads, channels = layer.heads, layer.out_channels
    if isinstance(layer, GATConv):
        x_src = _pair(kwargs["x"], 0)
        a_src, a_dst = ekw["alpha"]
        inputs = dict(kind="gat", x_src=x_src, a_src=a_src, dst=a_dst, att=None)
        if edge_attr is not None and layer.lin_edge is not None:
            w = layer.lin_edge.weight  # [H * C, D]; lin_edge has no bias in GATConv
            inputs["w_edge"] = (w.view(heads, channels, -1)
                                * layer.att_edge.view(heads, channels, 1)).sum(1)
        else:
            edge_attr = None
    else:
        x_l, x_r = ekw["x"]
        inputs = dict(kind="gatv2", x_src=x_l, a_src=None, dst=x_r,
                      att=layer.att.view(heads, channels))
        if edge_attr is not None:
            if layer.lin_edge is None or layer.lin_edge.bias is not None:
                return None
            inputs["w_edge"] = layer.lin_edge.weight
    if edge_attr is not None:
        inputs["edge_attr"] = edge_attr.view(-1, 1) if edge_attr.dim() == 1 else edge_attr
    tensors = [t for t in (inputs["x_src"], inputs["a_src"], inputs["dst"], inputs["att"],
                           inputs.get("edge_attr"), inputs.get("w_edge")) if t is not None]
    # mixed dtypes (autocast) run in their promotion; bf16 / f16 where the build has them
    if (inputs["dst"] is None or inputs["x_src"].dim() != 3
            or not fused_attention_available(inputs["x_src"].device)
            or fused_dtype(tensors, inputs["x_src"].device) is None):
        return None
    inputs["view"] = deferred.view
    return inputs


def fused_attention_propagate(layer: MessagePassing, inputs: dict, config: SARConfig) -> Tensor:
    """GAT/GATv2 propagate through the fused kernels (see the module docstring)."""
    dropout = float(layer.dropout) if layer.training else 0.0
    # one seed per call from torch's generator: torch.manual_seed makes the mask reproducible
    seed = int(torch.randint(0, 2**62, (1,)).item()) if dropout > 0 else 0
    spec = FusedAttention(inputs["view"], inputs["kind"], layer.heads, layer.out_channels,
                          float(layer.negative_slope), dropout, seed, config.mode,
                          config.pipeline_depth, attention_wire(layer))
    return fused_attention(spec, inputs["x_src"], inputs["a_src"], inputs["dst"], inputs["att"],
                           inputs.get("edge_attr"), inputs.get("w_edge"))


def attention_propagate(layer: MessagePassing, graph: DistGraph, kwargs: dict,
                        config: SARConfig) -> Tensor:
    """Propagate of an attention layer in mode ``sar``/``sa`` (online softmax over blocks)."""
    if config.use_kernels:
        inputs = _fused_inputs(layer, kwargs)
        if inputs is not None:
            return fused_attention_propagate(layer, inputs, config)
    params = [p for p in layer.parameters() if p.requires_grad]
    deferred = kwargs.get("alpha")
    if not isinstance(deferred, DeferredScores):
        raise RuntimeError(f"pyg_sar: {type(layer).__name__}.propagate expected the scores "
                           f"of its converted edge_updater (got {type(deferred)})")
    view, ekw = deferred.view, deferred.kwargs
    edge_attr = ekw.get("edge_attr")
    if isinstance(layer, GATConv):
        alpha_src, alpha_dst = ekw["alpha"]
        x_src = _pair(kwargs["x"], 0)
        src, dst = [x_src, alpha_src], [alpha_dst]
        program = GATProgram(layer, edge_attr is not None)
    else:
        x_l, x_r = ekw["x"]
        src, dst = [x_l], [x_r]
        program = GATv2Program(layer, edge_attr is not None)
    edge = [edge_attr] if edge_attr is not None else []
    prop = Propagation(view, program, SoftmaxRule(), config.mode, config.pipeline_depth,
                       replay_rng=layer.training, wire=attention_wire(layer))
    return sar_propagate(prop, src, dst, edge, params)
