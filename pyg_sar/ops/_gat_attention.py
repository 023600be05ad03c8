"""Wrappers of the fused attention ops ``torch.ops.pyg_sar.gat*`` (GAT and GATv2).

The block ops update the online-softmax state ``(m, l, acc)`` of every (destination, head) in
place, so a caller can fold several CSR blocks (one per source rank) into one softmax; the
backward ops recompute the attention from the saved ``(m, l)`` and the final output. The
single-block autograd Functions :func:`gat_attention` / :func:`gatv2_attention` chain them.

Attention dropout is a counter-based hash of ``(seed, src_ids[j], dst_ids[i], head)``: the
same coefficient is dropped in forward, in the backward recomputation and, when the ids are
global node ids, for every number of ranks. Parallel edges with the same endpoints share their
mask. :func:`gat_dropout_mask` returns the multipliers (0 or ``1 / (1 - p)``) the kernels apply.

Dtypes: the inputs (``x_src``, ``a_src``, ``a_dst``, ``a_edge``; ``x_dst``, ``x_edge``, ``att``)
share one dtype, float32, float64, bfloat16 or float16; the state ``(m, l, acc)`` is in its
accumulator dtype (float32 for bfloat16 / float16: :func:`attention_state` allocates it so), in
which every score, exponential and sum is computed, and :func:`gat_finalize` returns ``out`` in
it. The backward ops take ``grad_out`` in either dtype and return each gradient in the inputs'
dtype. The autograd wrappers :func:`gat_attention` / :func:`gatv2_attention` return their output
in the inputs' dtype.
"""
from __future__ import annotations

from typing import Any, Optional

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from pyg_sar.ops._native import has_kernel
from pyg_sar.ops.reference import accumulate_dtype


def fused_attention_available(device: torch.device) -> bool:
    """Whether the fused attention kernels are built for ``device``'s backend."""
    return has_kernel("gat_block_forward_", device) and has_kernel("gatv2_block_forward_", device)


def attention_state(num_dst: int, heads: int, channels: int, like: Tensor
                    ) -> tuple[Tensor, Tensor, Tensor]:
    """Fresh ``(m, l, acc)``: ``-inf``, 0 and 0 of shapes ``[N, H]``, ``[N, H]``, ``[N, H, C]``,
    on ``like``'s device in its accumulator dtype (float32 for bfloat16 / float16 inputs)."""
    dtype = accumulate_dtype(like.dtype)
    m = like.new_full((num_dst, heads), float("-inf"), dtype=dtype)
    return (m, like.new_zeros((num_dst, heads), dtype=dtype),
            like.new_zeros((num_dst, heads, channels), dtype=dtype))


def gat_block_forward_(rowptr: Tensor, col: Tensor, x_src: Tensor, a_src: Tensor, a_dst: Tensor,
                       a_edge: Optional[Tensor], m: Tensor, l: Tensor, acc: Tensor,
                       negative_slope: float = 0.2, dropout: float = 0.0, seed: int = 0,
                       src_ids: Optional[Tensor] = None, dst_ids: Optional[Tensor] = None,
                       ) -> None:
    """Fold one block into ``(m, l, acc)`` in place, score ``leaky_relu(a_src[j] + a_dst[i]
    (+ a_edge[e]))``, value ``x_src[j]`` (``[S, H, C]``)."""
    torch.ops.pyg_sar.gat_block_forward_(rowptr, col, x_src, a_src, a_dst, a_edge, m, l, acc,
                                         negative_slope, dropout, seed, src_ids, dst_ids)


def gatv2_block_forward_(rowptr: Tensor, col: Tensor, x_src: Tensor, x_dst: Tensor,
                         x_edge: Optional[Tensor], att: Tensor, m: Tensor, l: Tensor, acc: Tensor,
                         negative_slope: float = 0.2, dropout: float = 0.0, seed: int = 0,
                         src_ids: Optional[Tensor] = None, dst_ids: Optional[Tensor] = None,
                         ) -> None:
    """Fold one block in place, score ``att . leaky_relu(x_src[j] + x_dst[i] (+ x_edge[e]))``."""
    torch.ops.pyg_sar.gatv2_block_forward_(rowptr, col, x_src, x_dst, x_edge, att, m, l, acc,
                                           negative_slope, dropout, seed, src_ids, dst_ids)


def gat_finalize(acc: Tensor, l: Tensor) -> Tensor:
    """``out = acc / l`` (0 for destinations without edges), in the state's dtype."""
    return torch.ops.pyg_sar.gat_finalize(acc, l)


def gat_block_backward(grad_out: Tensor, out: Tensor, m: Tensor, l: Tensor, rowptr: Tensor,
                       col: Tensor, x_src: Tensor, a_src: Tensor, a_dst: Tensor,
                       a_edge: Optional[Tensor], negative_slope: float = 0.2,
                       dropout: float = 0.0, seed: int = 0, src_ids: Optional[Tensor] = None,
                       dst_ids: Optional[Tensor] = None, transposed: Optional[Tensor] = None,
                       ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Gradients ``(x_src, a_src, a_dst, a_edge)`` of one block from the final ``out, m, l``.

    ``transposed``: :func:`gat_transpose` of the block (built once per graph and reused), or
    ``None`` to have the op build it on every call.
    """
    return torch.ops.pyg_sar.gat_block_backward(grad_out, out, m, l, rowptr, col, x_src, a_src,
                                                a_dst, a_edge, negative_slope, dropout, seed,
                                                src_ids, dst_ids, transposed)


def gatv2_block_backward(grad_out: Tensor, out: Tensor, m: Tensor, l: Tensor, rowptr: Tensor,
                         col: Tensor, x_src: Tensor, x_dst: Tensor, x_edge: Optional[Tensor],
                         att: Tensor, negative_slope: float = 0.2, dropout: float = 0.0,
                         seed: int = 0, src_ids: Optional[Tensor] = None,
                         dst_ids: Optional[Tensor] = None, transposed: Optional[Tensor] = None,
                         ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Gradients ``(x_src, x_dst, x_edge, att)`` of one block from the final ``out, m, l``
    (``transposed`` as in :func:`gat_block_backward`)."""
    return torch.ops.pyg_sar.gatv2_block_backward(grad_out, out, m, l, rowptr, col, x_src, x_dst,
                                                  x_edge, att, negative_slope, dropout, seed,
                                                  src_ids, dst_ids, transposed)


def gat_transpose(rowptr: Tensor, col: Tensor, num_src: int) -> Tensor:
    """The CSR block grouped by source row, for the backward ops: int64 ``[S + 1 + 2 E]``
    holding ``colptr [S + 1]``, ``perm [E]`` (edge ids grouped by source, ascending within a
    source) and the destination row of every ``perm`` entry ``[E]``.

    It depends on the graph only, so callers build it once per block and pass it to every
    backward call.
    """
    return torch.ops.pyg_sar.gat_transpose(rowptr, col, num_src)


def gat_dropout_mask(src_ids: Tensor, dst_ids: Tensor, heads: int, dropout: float, seed: int,
                     dtype: torch.dtype = torch.float64) -> Tensor:
    """``[E, heads]`` dropout multipliers of edges ``src_ids[e] -> dst_ids[e]`` (any of the
    kernels' dtypes; bfloat16 / float16 hold the float32 multiplier rounded once)."""
    return torch.ops.pyg_sar.gat_dropout_mask(src_ids, dst_ids, heads, dropout, seed, dtype)


def _opt(t: Optional[Tensor]) -> Optional[Tensor]:
    return None if t is None else t.contiguous()


class GATAttention(torch.autograd.Function):
    """One-block GAT attention through the native forward/finalize/backward ops."""

    @staticmethod
    def forward(ctx: Any, rowptr: Tensor, col: Tensor, x_src: Tensor, a_src: Tensor,
                a_dst: Tensor, a_edge: Optional[Tensor], negative_slope: float, dropout: float,
                seed: int, src_ids: Optional[Tensor], dst_ids: Optional[Tensor]) -> Tensor:
        x_src, a_src, a_dst, a_edge = (x_src.contiguous(), a_src.contiguous(),
                                       a_dst.contiguous(), _opt(a_edge))
        m, l, acc = attention_state(rowptr.numel() - 1, x_src.size(1), x_src.size(2), x_src)
        gat_block_forward_(rowptr, col, x_src, a_src, a_dst, a_edge, m, l, acc, negative_slope,
                           dropout, seed, src_ids, dst_ids)
        out = gat_finalize(acc, l)
        ctx.save_for_backward(rowptr, col, x_src, a_src, a_dst, a_edge, src_ids, dst_ids, out,
                              m, l)
        ctx.args = (negative_slope, dropout, seed)
        return out.to(x_src.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_out: Tensor):
        rowptr, col, x_src, a_src, a_dst, a_edge, src_ids, dst_ids, out, m, l = ctx.saved_tensors
        slope, dropout, seed = ctx.args
        gx, gas, gad, gae = gat_block_backward(grad_out.contiguous(), out, m, l, rowptr, col,
                                               x_src, a_src, a_dst, a_edge, slope, dropout, seed,
                                               src_ids, dst_ids)
        return (None, None, gx, gas, gad, gae if a_edge is not None else None, None, None, None,
                None, None)


class GATv2Attention(torch.autograd.Function):
    """One-block GATv2 attention through the native forward/finalize/backward ops."""

    @staticmethod
    def forward(ctx: Any, rowptr: Tensor, col: Tensor, x_src: Tensor, x_dst: Tensor,
                x_edge: Optional[Tensor], att: Tensor, negative_slope: float, dropout: float,
                seed: int, src_ids: Optional[Tensor], dst_ids: Optional[Tensor]) -> Tensor:
        x_src, x_dst, x_edge, att = (x_src.contiguous(), x_dst.contiguous(), _opt(x_edge),
                                     att.contiguous())
        m, l, acc = attention_state(rowptr.numel() - 1, x_src.size(1), x_src.size(2), x_src)
        gatv2_block_forward_(rowptr, col, x_src, x_dst, x_edge, att, m, l, acc, negative_slope,
                             dropout, seed, src_ids, dst_ids)
        out = gat_finalize(acc, l)
        ctx.save_for_backward(rowptr, col, x_src, x_dst, x_edge, att, src_ids, dst_ids, out, m,
                              l)
        ctx.args = (negative_slope, dropout, seed)
        return out.to(x_src.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_out: Tensor):
        rowptr, col, x_src, x_dst, x_edge, att, src_ids, dst_ids, out, m, l = ctx.saved_tensors
        slope, dropout, seed = ctx.args
        gx, gxd, gxe, gatt = gatv2_block_backward(grad_out.contiguous(), out, m, l, rowptr, col,
                                                  x_src, x_dst, x_edge, att, slope, dropout,
                                                  seed, src_ids, dst_ids)
        return (None, None, gx, gxd, gxe if x_edge is not None else None, gatt, None, None, None,
                None, None)


def gat_attention(rowptr: Tensor, col: Tensor, x_src: Tensor, a_src: Tensor, a_dst: Tensor,
                  a_edge: Optional[Tensor] = None, negative_slope: float = 0.2,
                  dropout: float = 0.0, seed: int = 0, src_ids: Optional[Tensor] = None,
                  dst_ids: Optional[Tensor] = None) -> Tensor:
    r"""GAT attention over a CSR graph without per-edge tensors, differentiable.

    .. math::
        \mathbf{out}_i = \sum_{e: j \to i} \delta_e\,\mathrm{softmax}_i(s)_e\,\mathbf{x}_j,
        \qquad s_e = \mathrm{LeakyReLU}(a^{src}_j + a^{dst}_i\,(+ a^{edge}_e))

    per head, with :math:`\delta_e` the attention-dropout multiplier (module docstring).

    Shapes:
        rowptr ``[N + 1]``, col ``[E]``, x_src ``[S, H, C]``, a_src ``[S, H]``, a_dst ``[N, H]``,
        a_edge ``[E, H]``; output ``[N, H, C]``.
    """
    return GATAttention.apply(rowptr, col, x_src, a_src, a_dst, a_edge, negative_slope, dropout,
                              seed, src_ids, dst_ids)


def gatv2_attention(rowptr: Tensor, col: Tensor, x_src: Tensor, x_dst: Tensor,
                    x_edge: Optional[Tensor], att: Tensor, negative_slope: float = 0.2,
                    dropout: float = 0.0, seed: int = 0, src_ids: Optional[Tensor] = None,
                    dst_ids: Optional[Tensor] = None) -> Tensor:
    r"""GATv2 attention, score :math:`s_e = \mathbf{a}_h \cdot \mathrm{LeakyReLU}(\mathbf{x}_j
    + \mathbf{x}_i (+ \mathbf{x}^{edge}_e))`, value :math:`\mathbf{x}_j`; differentiable.

    Shapes:
        x_src ``[S, H, C]``, x_dst ``[N, H, C]``, x_edge ``[E, H, C]``, att ``[H, C]``; output
        ``[N, H, C]``.
    """
    return GATv2Attention.apply(rowptr, col, x_src, x_dst, x_edge, att, negative_slope, dropout,
                                seed, src_ids, dst_ids)
