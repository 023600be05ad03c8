"""The engine's use of the fused gather-aggregate op (sum over a CSR block, no E x F tensor).

Falls back to an index_select + index_add pair when the native library is not built.

Precision: bfloat16 / float16 rows are summed in float32 and the block sums are returned in
float32 (the engine folds the blocks in float32 and casts the final result). The native op
takes them directly where the build supports the dtype (it then returns its float32
accumulator, :func:`native_accepts` asks once per dtype and device); otherwise the rows are
read in float32 (an exact cast) by the native float32 op or the pure-torch fallback. The
backward sums read a low-precision ``grad_out`` in float32 the same way.
"""
from __future__ import annotations

import math
from typing import Optional

import torch
from torch import Tensor

from pyg_sar.core.precision import accumulate_dtype, is_low_precision

_NATIVE_DTYPES = (torch.float32, torch.float64)
_accepts: dict[tuple[str, torch.dtype], bool] = {}


def _native() -> bool:
    try:
        from pyg_sar.ops import native_available
    except ImportError:  # pragma: no cover - ops package missing entirely
        return False
    return native_available()


def native_accepts(dtype: torch.dtype, device: torch.device) -> bool:
    """Whether the native ``gather_aggregate`` sums ``dtype`` rows on ``device``'s backend with
    the accumulator the engine needs (float32 output for bfloat16 / float16 input).

    float32 / float64 need only a built library. A low-precision dtype is tried once on a
    one-edge block and remembered: a build without it raises the op's documented dtype error
    (a ``RuntimeError``), and a result in any dtype other than float32 is not used either.
    """
    if not _native():
        return False
    if dtype in _NATIVE_DTYPES:
        return True
    if not is_low_precision(dtype):
        return False
    key = (torch.device(device).type, dtype)
    if key not in _accepts:
        rowptr = torch.tensor([0, 1], device=device)
        col = torch.zeros(1, dtype=torch.long, device=device)
        x = torch.ones((1, 1), dtype=dtype, device=device)
        try:
            out, _ = torch.ops.pyg_sar.gather_aggregate(rowptr, col, x, None, "sum")
            _accepts[key] = out.dtype == accumulate_dtype(dtype) and float(out[0, 0]) == 1.0
        except (RuntimeError, ValueError):  # the op's dtype error (either kind)
            _accepts[key] = False
    return _accepts[key]


def _flat(x: Tensor) -> Tensor:
    """``x`` as ``[rows, features]`` (also with no rows: a rank holding no node of a type)."""
    return x.reshape(x.shape[0], math.prod(x.shape[1:])).contiguous()


def block_sum(rowptr: Tensor, col: Tensor, x_src: Tensor, weight: Optional[Tensor]) -> Tensor:
    """``out[i] = sum_e w_e * x_src[col[e]]`` over the row's edges (``[num_dst, *x.shape[1:]]``),
    in ``accumulate_dtype(x_src.dtype)`` (float32 for bfloat16 / float16 rows)."""
    num_dst = rowptr.numel() - 1
    wide = accumulate_dtype(x_src.dtype)
    if wide != x_src.dtype and not native_accepts(x_src.dtype, x_src.device):
        # no native low-precision sum: read the rows (and weights) in float32, exactly
        x_src = x_src.to(wide)
    if native_accepts(x_src.dtype, x_src.device):
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
    is made. A low-precision ``grad_out`` is read in float32; the result is in
    ``accumulate_dtype(grad_out.dtype)``.
    """
    grad_out = grad_out.to(accumulate_dtype(grad_out.dtype))
    native = _native() and grad_out.dtype in _NATIVE_DTYPES
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
    g, x = _flat(grad_out), _flat(x_src)
    out = torch.empty(col.numel(), dtype=grad_out.dtype, device=grad_out.device)
    chunk = 1 << 16  # bound the transient E x F product
    for s in range(0, col.numel(), chunk):
        e = slice(s, s + chunk)
        out[e] = (g.index_select(0, row[e]) * x.index_select(0, col[e])).sum(-1)
    return out
