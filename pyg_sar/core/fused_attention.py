"""GAT / GATv2 propagate through the fused attention kernels, block by block over source ranks.

Forward: for step k = 0..P-1 the block of source rank ``(r + k) % P`` is folded into the online
softmax state ``(m, l, acc)`` by one kernel call (``pyg_sar::gat_block_forward_`` or
``gatv2_block_forward_``); its fetched rows are freed afterwards. Saved for backward: the inputs,
``out``, ``m`` and ``l`` (``O(N x heads)`` besides the inputs), never a per-edge tensor.

Backward (mode ``"sar"``): the same walk; each remote block's rows are fetched again and
``*_block_backward`` recomputes the attention from ``(m, l)`` and returns the gradients of the
fetched rows (sent back to their owners), of the destination inputs and of the edge term. Mode
``"sa"`` keeps the fetched rows instead of fetching them again. The backward kernels' second
pass walks each block grouped by source row (``gat_transpose``); that structure depends on the
graph only and is built once per view block and cached on the graph.

Edge features enter through one ``[E_block, D] @ [D, H]`` (GAT: ``lin_edge`` folded with
``att_edge``) or ``[E_block, D] @ [D, H*C]`` (GATv2) product per block, recomputed in backward;
the GATv2 edge term is ``E_block x H x C`` by its definition and lives for one block only.

Attention dropout is regenerated exactly in backward by the kernels' counter-based generator,
keyed by ``(seed, source id, destination id, head)``: ``seed`` is drawn from torch's default
generator once per forward call (so ``torch.manual_seed`` governs it and every layer call gets a
fresh one); the ids are the original node ids the graph carries (``DistGraph.node_ids``, set by
:func:`pyg_sar.load_partition`; else the partition's new ids ``node_offsets[rank] + local id``),
exchanged once through the ranks' send lists. With original ids and the same torch seed on all
ranks the mask does not depend on P or on the partitioning.

Precision: the kernels compute in one dtype, the promotion of all inputs' dtypes
(:func:`compute_dtype`; PyG's ``x_j * alpha`` promotes the same way). Under ``torch.autocast``
GAT's ``x`` is bfloat16 while its logits, computed with float32 parameters, are float32: the
rows cross the network in their own dtype and each block's rows are read in float32 (an exact
cast), so the attention is computed as PyG computes it under autocast, in float32. Inputs that
are all bfloat16 / float16 (``model.bfloat16()``) run the kernels in that dtype with a float32
``(m, l, acc)`` state where the build supports it (:func:`fused_dtype`); otherwise the caller
takes the plain-torch path, which accumulates in float32 too. The output has the compute
dtype; the edge term's product runs with autocast off (in the compute dtype), in forward and
backward alike, and every gradient is summed over blocks in float32 and returned in its
input's dtype.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import torch
from torch import Tensor

from pyg_sar.core.exchange import NO_WIRE, RowFetcher, Wire
from pyg_sar.core.precision import accumulate_dtype, is_low_precision
from pyg_sar.core.views import GraphView, ViewBlock
from pyg_sar.core.walk import BlockWalk
from pyg_sar.graph import DistGraph
from pyg_sar.ops import _gat_attention as ops


@dataclass(frozen=True)
class FusedAttention:
    """What one fused attention propagate needs besides its tensors.

    ``kind`` is ``"gat"`` (inputs: x_src ``[N, H, C]``, a_src ``[N, H]``, a_dst ``[N, H]``,
    w_edge ``[H, D]``) or ``"gatv2"`` (x_src, x_dst ``[N, H, C]``, att ``[H, C]``, w_edge
    ``[H * C, D]``); ``edge_attr`` is ``[E_view, D]`` in view edge order.
    """

    view: GraphView
    kind: str
    heads: int
    channels: int
    negative_slope: float
    dropout: float = 0.0
    seed: int = 0
    mode: str = "sar"
    pipeline_depth: Optional[int] = None  # None: see exchange.pipeline_depth
    wire: Wire = NO_WIRE  # traffic label and compression, fixed at forward time


_SOURCE_IDS_KEY = ("dropout_source_ids",)


def global_source_ids(graph: DistGraph) -> list[Tensor]:
    """Dropout id of every source row of every block (indexed by source rank).

    The ids of the local nodes (``DistGraph.node_ids``, else the new ids) are exchanged once over
    the ring (collective: every rank calls it in the same layer call), then cached on the graph.
    """
    def build() -> list[Tensor]:
        world, rank = graph.world_size, graph.rank
        own = None if graph.is_bipartite else graph.node_ids  # node_ids: destination type's
        if own is None:  # the source node set's new ids
            own = graph.source_offsets[rank] + torch.arange(graph.num_src_nodes,
                                                            device=graph.device)
        ids = [own.new_zeros(0)] * world
        ids[rank] = own
        if world > 1:
            fetcher = RowFetcher(graph, [own.view(-1, 1)], 0).start()
            for k in range(1, world):
                ids[(rank + k) % world] = fetcher.get(k)[0].view(-1)
        return ids
    return graph.cached(_SOURCE_IDS_KEY, build)


def _transposed(spec: FusedAttention, s: int) -> Tensor:
    """The source-grouped CSR of the view's block ``s`` for the backward kernels; it depends on
    the graph only, so it is built once and cached on the graph (keyed by the cached view)."""
    block = spec.view.blocks[s]
    return spec.view.graph.cached_for(
        spec.view, ("gat_transposed", s),
        lambda: ops.gat_transpose(block.rowptr, block.col, block.num_src))


_KERNEL_DTYPES = (torch.float32, torch.float64)
_low_ok: dict[tuple[str, torch.dtype], bool] = {}


def compute_dtype(tensors) -> torch.dtype:
    """The dtype the kernels compute in: the promotion of the given tensors' dtypes."""
    dtype = None
    for t in tensors:
        if t is not None:
            dtype = t.dtype if dtype is None else torch.promote_types(dtype, t.dtype)
    return dtype


def _kernels_take_low(dtype: torch.dtype, device: torch.device) -> bool:
    """Whether this build runs the attention ops on ``dtype`` inputs with a float32 state: one
    tiny GAT block through forward, finalize and backward, tried once per dtype and device
    (a build without the dtype raises its documented dtype error)."""
    key = (torch.device(device).type, dtype)
    if key not in _low_ok:
        rowptr = torch.tensor([0, 1], device=device)
        col = torch.zeros(1, dtype=torch.long, device=device)
        x = torch.ones((1, 1, 1), dtype=dtype, device=device)
        a = torch.zeros((1, 1), dtype=dtype, device=device)
        try:
            m, l, acc = _state(1, 1, 1, x)
            ops.gat_block_forward_(rowptr, col, x, a, a, None, m, l, acc)
            out = ops.gat_finalize(acc, l)
            grads = ops.gat_block_backward(out.to(out.dtype), out, m, l, rowptr, col, x, a, a,
                                           None)
            _low_ok[key] = float(out.flatten()[0]) == 1.0 and grads[0].dtype == dtype
        except (RuntimeError, ValueError):  # the op's dtype error (either kind)
            _low_ok[key] = False
    return _low_ok[key]


def fused_dtype(tensors, device: torch.device) -> Optional[torch.dtype]:
    """The compute dtype of the fused kernels for these inputs, or ``None`` if this build
    cannot run it (the caller then takes the plain-torch attention path). Mixed dtypes run
    in their promotion (see the module docstring); float32 / float64 always, bfloat16 /
    float16 where the build's kernels take them with a float32 state."""
    dtype = compute_dtype(tensors)
    if dtype in _KERNEL_DTYPES:
        return dtype
    if is_low_precision(dtype) and ops.fused_attention_available(device):
        return dtype if _kernels_take_low(dtype, device) else None
    return None


def _state(num_dst: int, heads: int, channels: int, like: Tensor):
    """Fresh ``(m, l, acc)`` in the accumulation dtype of ``like`` (float32 for bf16 / f16)."""
    wide = like.new_empty(0, dtype=accumulate_dtype(like.dtype))
    return ops.attention_state(num_dst, heads, channels, wide)


def _no_autocast(device: torch.device):
    return torch.autocast(torch.device(device).type, enabled=False)


def _edge_term(spec: FusedAttention, edge_attr: Optional[Tensor], w_edge: Optional[Tensor],
               block: ViewBlock) -> Optional[Tensor]:
    if edge_attr is None or w_edge is None:
        return None
    with _no_autocast(edge_attr.device):  # the same product in forward and backward
        term = edge_attr[block.edge_slice] @ w_edge.t()
    if spec.kind == "gatv2":
        term = term.view(-1, spec.heads, spec.channels)
    return term.contiguous()


def _rows(rows: list[Tensor], dtype: torch.dtype) -> list[Tensor]:
    """A block's source rows in the compute dtype (rows cross in their own dtype)."""
    return [r if r.dtype == dtype else r.to(dtype) for r in rows]


def _cast_all(dtype: torch.dtype, *tensors: Optional[Tensor]) -> list[Optional[Tensor]]:
    return [None if t is None else t.to(dtype).contiguous() for t in tensors]


def _grad_in(grad: Optional[Tensor], like: Optional[Tensor]) -> Optional[Tensor]:
    if grad is None or like is None or grad.dtype == like.dtype:
        return grad
    return grad.to(like.dtype)


class FusedAttentionFunction(torch.autograd.Function):
    """Distributed GAT/GATv2 propagate through the fused kernels; see the module docstring."""

    @staticmethod
    def forward(ctx: Any, spec: FusedAttention, x_src: Tensor, a_src: Optional[Tensor],
                dst: Tensor, att: Optional[Tensor], edge_attr: Optional[Tensor],
                w_edge: Optional[Tensor]) -> Tensor:
        g = spec.view.graph
        src = [t.contiguous() for t in (x_src, a_src) if t is not None]
        dtype = compute_dtype((x_src, a_src, dst, att, edge_attr, w_edge))
        dst_c, att_c, ea_c, w_c = _cast_all(dtype, dst, att, edge_attr, w_edge)
        ids = global_source_ids(g) if spec.dropout > 0 else None
        m, l, acc = _state(g.num_nodes, spec.heads, spec.channels, x_src.new_empty(0, dtype=dtype))
        walk = BlockWalk(spec.view, src, spec.mode, spec.pipeline_depth, spec.wire)
        for step in walk.forward():
            block = step.block
            if block.num_edges == 0:
                continue
            _block_forward(spec, block, _rows(step.rows, dtype), dst_c, att_c,
                           _edge_term(spec, ea_c, w_c, block), m, l, acc, ids, step.src_rank)
        kept = walk.kept
        out = ops.gat_finalize(acc, l)  # in the state's dtype; the backward reads it so
        ctx.spec, ctx.n_kept = spec, len(kept)
        ctx.save_for_backward(x_src, a_src, dst, att, edge_attr, w_edge, *kept, out, m, l)
        return out if out.dtype == dtype else out.to(dtype)

    @staticmethod
    def backward(ctx: Any, grad_out: Tensor):
        with _no_autocast(grad_out.device):  # backward's products in the compute dtype
            return _backward(ctx, grad_out)


def _backward(ctx: Any, grad_out: Tensor):
    spec: FusedAttention = ctx.spec
    saved = ctx.saved_tensors
    x_src, a_src, dst, att, edge_attr, w_edge = saved[:6]
    kept = saved[6:6 + ctx.n_kept]
    out, m, l = saved[6 + ctx.n_kept:]
    g = spec.view.graph
    world = g.world_size
    src = [t.contiguous() for t in (x_src, a_src) if t is not None]
    dtype = compute_dtype((x_src, a_src, dst, att, edge_attr, w_edge))
    dst_c, att_c, ea_c, w_c = _cast_all(dtype, dst, att, edge_attr, w_edge)
    grad_out = grad_out.to(out.dtype).contiguous()  # the kernels read it with the saved out
    ids = global_source_ids(g) if spec.dropout > 0 else None
    # With one rank the local block's gradients are taken as they come (no zero-filled
    # buffer and add); with several, GradReturner adds into the source buffers (float32 for
    # low-precision rows).
    grad_src: list[Optional[Tensor]] = (
        [torch.zeros_like(t, dtype=accumulate_dtype(t.dtype)) for t in src] if world > 1
        else [None] * len(src))
    grad_dst: Optional[Tensor] = None
    grad_att: Optional[Tensor] = None
    need_edge = edge_attr is not None and w_edge is not None
    wide = accumulate_dtype(dtype)
    grad_ea = (torch.zeros_like(edge_attr) if need_edge and ctx.needs_input_grad[5] else None)
    grad_w = (torch.zeros_like(w_edge, dtype=wide) if need_edge and ctx.needs_input_grad[6]
              else None)
    walk = BlockWalk(spec.view, src, spec.mode, spec.pipeline_depth, spec.wire)
    for step in walk.backward(grad_src, kept=kept):
        block, k = step.block, step.k
        if block.num_edges == 0:  # the local block (remote ones without edges are skipped)
            continue
        term = _edge_term(spec, ea_c, w_c, block)
        g_src, g_dst, g_term, g_att = _block_backward(spec, block, grad_out, out, m, l,
                                                      _rows(step.rows, dtype), dst_c, att_c,
                                                      term, ids, step.src_rank)
        grad_dst = _accumulate(grad_dst, g_dst)
        if att is not None:
            grad_att = _accumulate(grad_att, g_att)
        if term is not None:
            g_term = g_term.reshape(block.num_edges, -1)
            if grad_ea is not None:
                grad_ea[block.edge_slice] = g_term @ w_c
            if grad_w is not None:
                grad_w.add_(g_term.t() @ ea_c[block.edge_slice])
        if k == 0 and world == 1:
            grad_src[:] = g_src
        elif k == 0:
            for acc, got in zip(grad_src, g_src):
                acc.add_(got)
        else:
            walk.give_back(step, g_src)
    grad_src = [torch.zeros_like(t) if got is None else _grad_in(got, t)
                for t, got in zip(src, grad_src)]
    grad_dst = torch.zeros_like(dst) if grad_dst is None else _grad_in(grad_dst, dst)
    if att is not None:
        grad_att = torch.zeros_like(att) if grad_att is None else _grad_in(grad_att, att)
    grad_a_src = grad_src[1] if a_src is not None else None
    return (None, grad_src[0], grad_a_src, grad_dst, grad_att, grad_ea,
            _grad_in(grad_w, w_edge))


def _accumulate(total: Optional[Tensor], part: Tensor) -> Tensor:
    # The kernels return fresh tensors, so the first part can be kept and added to in place;
    # a low-precision part starts a float32 sum.
    if total is None:
        return part if not is_low_precision(part.dtype) else part.float()
    return total.add_(part)


def _ids(ids: Optional[list[Tensor]], g: DistGraph, s: int):
    if ids is None:
        return None, None
    return ids[s], destination_ids(g) if g.is_bipartite else ids[g.rank]


def destination_ids(graph: DistGraph) -> Tensor:
    """Dropout id of every local destination: ``node_ids`` (original ids), else the new ids.
    (For a homogeneous graph these are the local entry of :func:`global_source_ids`.)"""
    if graph.node_ids is not None:
        return graph.node_ids
    return graph.cached(("dropout_destination_ids",), lambda: graph.node_offsets[graph.rank]
                        + torch.arange(graph.num_nodes, device=graph.device))


def _block_forward(spec, block, rows, dst, att, term, m, l, acc, ids, s) -> None:
    src_ids, dst_ids = _ids(ids, spec.view.graph, s)
    if spec.kind == "gat":
        ops.gat_block_forward_(block.rowptr, block.col, rows[0], rows[1], dst, term, m, l, acc,
                               spec.negative_slope, spec.dropout, spec.seed, src_ids, dst_ids)
    else:
        ops.gatv2_block_forward_(block.rowptr, block.col, rows[0], dst, term, att, m, l, acc,
                                 spec.negative_slope, spec.dropout, spec.seed, src_ids, dst_ids)


def _block_backward(spec, block, grad_out, out, m, l, rows, dst, att, term, ids, s):
    """(grads of the block's source tensors, of dst, of the edge term, of att or None)."""
    src_ids, dst_ids = _ids(ids, spec.view.graph, s)
    if spec.kind == "gat":
        gx, gas, gad, gae = ops.gat_block_backward(grad_out, out, m, l, block.rowptr, block.col,
                                                   rows[0], rows[1], dst, term,
                                                   spec.negative_slope, spec.dropout, spec.seed,
                                                   src_ids, dst_ids, _transposed(spec, s))
        return [gx, gas], gad, gae, None
    gx, gxd, gxe, gatt = ops.gatv2_block_backward(grad_out, out, m, l, block.rowptr, block.col,
                                                  rows[0], dst, term, att, spec.negative_slope,
                                                  spec.dropout, spec.seed, src_ids, dst_ids,
                                                  _transposed(spec, s))
    return [gx], gxd, gxe, gatt


def fused_attention(spec: FusedAttention, x_src: Tensor, a_src: Optional[Tensor], dst: Tensor,
                    att: Optional[Tensor] = None, edge_attr: Optional[Tensor] = None,
                    w_edge: Optional[Tensor] = None) -> Tensor:
    """Run one fused GAT/GATv2 propagate over all blocks; returns ``[N, H, C]``.

    Differentiable in every tensor given (parameters enter as ``att`` and ``w_edge``).
    """
    return FusedAttentionFunction.apply(spec, x_src, a_src, dst, att, edge_attr, w_edge)
