"""The engine's use of the fused gather-aggregate op (sum over a CSR block, no E x F tensor).

Falls back to an index_select + index_add pair when the native library is not built.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor


def _native() -> bool:
    try:
        from pyg_sar.ops import native_available
    except ImportError:  # pragma: no cover - ops package missing entirely
        return False
    return native_available()


def _flat(x: Tensor) -> Tensor:
    return x.reshape(x.shape[0], -1).contiguous()


def block_sum(rowptr: Tensor, col: Tensor, x_src: Tensor, weight: Optional[Tensor]) -> Tensor:
    """``out[i] = sum_e w_e * x_src[col[e]]`` over the row's edges (``[num_dst, *x.shape[1:]]``)."""
    num_dst = rowptr.numel() - 1
    if _native() and x_src.dtype in (torch.float32, torch.float64):
        w = None if weight is None else weight.to(x_src.dtype).contiguous()
        out, _ = torch.ops.pyg_sar.gather_aggregate(rowptr, col, _flat(x_src), w, "sum")
        return out.view(num_dst, *x_src.shape[1:])
    msgs = x_src.index_select(0, col)
    if weight is not None:
        msgs = msgs * weight.view(-1, *([1] * (msgs.dim() - 1))).to(msgs.dtype)
    counts = rowptr[1:] - rowptr[:-1]
    row = torch.repeat_interleave(torch.arange(num_dst, device=col.device), counts)
    return x_src.new_zeros((num_dst, *x_src.shape[1:])).index_add_(0, row, msgs)


def transpose_csr(rowptr: Tensor, col: Tensor, num_src: int) -> tuple[Tensor, Tensor, Tensor]:
    """The block grouped by source: ``(colptr [num_src + 1], row [E], perm [E])``.

    ``perm`` is a stable sort of the edges by ``col`` (edge positions ascend within a source,
    the order the native backward sums in) and ``row[k]`` is the destination of edge
    ``perm[k]``. Built once per block and cached by the caller: the native backward would
    otherwise rebuild it on every call.
    """
    counts = rowptr[1:] - rowptr[:-1]
    row = torch.repeat_interleave(torch.arange(rowptr.numel() - 1, device=col.device), counts)
    perm = torch.sort(col, stable=True).indices
    colptr = torch.zeros(num_src + 1, dtype=torch.long, device=col.device)
    colptr[1:] = torch.cumsum(torch.bincount(col, minlength=num_src), 0)
    return colptr, row.index_select(0, perm), perm


def block_sum_transpose(grad_out: Tensor, rowptr: Tensor, col: Tensor,
                        weight: Optional[Tensor], num_src: int,
                        transposed: Optional[tuple[Tensor, Tensor, Tensor]] = None,
                        row_scale: Optional[Tensor] = None) -> Tensor:
    """Gradient of :func:`block_sum` with respect to ``x_src``: ``block^T @ grad_out``.

    ``transposed`` (from :func:`transpose_csr`) lets the sum run as a forward gather over the
    cached transposed block, in the same summation order as the native backward.
    ``row_scale`` (``[num_dst]``) scales ``grad_out``'s rows first (a mean's ``1 / degree``);
    with ``transposed`` it is folded into the edge weights, so no scaled copy of ``grad_out``
    is made.
    """
    native = _native() and grad_out.dtype in (torch.float32, torch.float64)
    if native and transposed is not None:
        colptr, row_t, perm = transposed
        w = None if row_scale is None else row_scale.to(grad_out.dtype).index_select(0, row_t)
        if weight is not None:
            ww = weight.index_select(0, perm).to(grad_out.dtype)
            w = ww if w is None else w.mul_(ww)
        out, _ = torch.ops.pyg_sar.gather_aggregate(colptr, row_t, _flat(grad_out), w, "sum")
        return out.view(num_src, *grad_out.shape[1:])
    if row_scale is not None:
        grad_out = grad_out * row_scale.to(grad_out.dtype).view(-1, *([1] * (grad_out.dim() - 1)))
    if native:
        w = None if weight is None else weight.to(grad_out.dtype).contiguous()
        empty = torch.empty(0, dtype=torch.long, device=col.device)
        gx, _ = torch.ops.pyg_sar.gather_aggregate_backward(
            _flat(grad_out), rowptr, col, None, w, empty, "sum", num_src, False)
        return gx.view(num_src, *grad_out.shape[1:])
    counts = rowptr[1:] - rowptr[:-1]
    row = torch.repeat_interleave(torch.arange(rowptr.numel() - 1, device=col.device), counts)
    g = grad_out.index_select(0, row)
    if weight is not None:
        g = g * weight.view(-1, *([1] * (g.dim() - 1))).to(g.dtype)
    return grad_out.new_zeros((num_src, *grad_out.shape[1:])).index_add_(0, col, g)


def edge_weight_grad(grad_out: Tensor, row: Tensor, col: Tensor, x_src: Tensor) -> Tensor:
    """Gradient of :func:`block_sum` with respect to the edge weights: ``<g[row_e], x[col_e]>``."""
    g = grad_out.reshape(grad_out.shape[0], -1)
    x = x_src.reshape(x_src.shape[0], -1)
    out = torch.empty(col.numel(), dtype=grad_out.dtype, device=grad_out.device)
    chunk = 1 << 16  # bound the transient E x F product
    for s in range(0, col.numel(), chunk):
        e = slice(s, s + chunk)
        out[e] = (g.index_select(0, row[e]) * x.index_select(0, col[e])).sum(-1)
    return out
