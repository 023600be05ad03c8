"""Pure-torch reference of ``gather_aggregate`` (index_select + scatter_reduce).

Used by the tests as the oracle and by :func:`pyg_sar.ops.gather_aggregate` when the native library
is not built. It materialises the E x F tensor of gathered rows, which the native kernel avoids.
The argument checks raise the same exception types with the same wording as the native op.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

REDUCES = ("sum", "mean", "max", "min")
#: The floating dtypes the native kernels take (bfloat16 / float16 computed in float32).
NATIVE_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)
SUPPORTED = "float32, float64, bfloat16, float16"


def accumulate_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype the kernels compute ``dtype`` in: float32 for bfloat16 / float16, else itself."""
    return torch.float32 if dtype in (torch.bfloat16, torch.float16) else dtype


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def check_gather_aggregate_args(rowptr: Tensor, col: Tensor, x_src: Tensor,
                                weight: Optional[Tensor], reduce: str) -> None:
    """Validates the arguments of ``gather_aggregate`` like the native op does.

    Raises:
        ValueError: unknown ``reduce``, a bad dtype of ``x_src``/``weight``, a malformed ``rowptr``
            or ``col`` values outside ``[0, x_src.size(0))``.
        RuntimeError: wrong dimensions, index dtypes or devices.
    """
    op = "gather_aggregate"
    if reduce not in REDUCES:
        raise ValueError(f"{op}: reduce must be one of 'sum', 'mean', 'max', 'min' "
                         f"(got '{reduce}')")
    for name, t, dim in (("rowptr", rowptr, 1), ("col", col, 1), ("x_src", x_src, 2)):
        if t.dim() != dim:
            raise RuntimeError(f"{op}: expected {dim}-dimensional tensor for argument '{name}' "
                               f"(got {t.dim()} dimensions)")
    for name, t in (("rowptr", rowptr), ("col", col)):
        if t.dtype != torch.int64:
            raise RuntimeError(f"{op}: expected tensor for argument '{name}' to have scalar type "
                               f"Long (got {t.dtype})")
    if x_src.dtype not in NATIVE_DTYPES:
        raise RuntimeError(f"{op}: x_src has dtype {_name(x_src.dtype)}, which the native kernels "
                           f"do not support (supported: {SUPPORTED})")
    for name, t in (("rowptr", rowptr), ("col", col)):
        if t.device != x_src.device:
            raise RuntimeError(f"{op}: {name} and x_src must be on the same device "
                               f"(got {t.device} and {x_src.device})")
    _check_csr(op, rowptr, col, x_src.size(0), "x_src.size(0)")
    if weight is not None:
        if weight.dim() != 1 or weight.numel() != col.numel():
            raise ValueError(f"{op}: weight must have shape [E] = [{col.numel()}] "
                             f"(got {list(weight.shape)})")
        acc = accumulate_dtype(x_src.dtype)
        if weight.dtype != x_src.dtype and (acc == x_src.dtype or weight.dtype != acc):
            if acc == x_src.dtype:
                raise ValueError(f"{op}: weight and x_src must have the same dtype "
                                 f"(got {_name(weight.dtype)} and {_name(x_src.dtype)})")
            raise ValueError(f"{op}: weight must have x_src's dtype {_name(x_src.dtype)} or its "
                             f"accumulator dtype {_name(acc)} (got {_name(weight.dtype)})")
        if weight.device != x_src.device:
            raise RuntimeError(f"{op}: weight and x_src must be on the same device "
                               f"(got {weight.device} and {x_src.device})")


def _check_csr(op: str, rowptr: Tensor, col: Tensor, num_src: int, num_src_name: str) -> None:
    if rowptr.numel() < 1:
        raise ValueError(f"{op}: rowptr must have N + 1 >= 1 entries (got 0)")
    num_edges, num_dst = col.numel(), rowptr.numel() - 1
    if int(rowptr[0]) != 0:
        raise ValueError(f"{op}: rowptr[0] must be 0 (got {int(rowptr[0])})")
    if int(rowptr[-1]) != num_edges:
        raise ValueError(f"{op}: rowptr[-1] must equal the number of edges col.numel() = "
                         f"{num_edges} (got {int(rowptr[-1])}; rowptr has {rowptr.numel()} "
                         f"entries, so N = {num_dst})")
    bad = (rowptr[1:] < rowptr[:-1]).nonzero()
    if bad.numel() > 0:
        i = int(bad[0, 0])
        raise ValueError(f"{op}: rowptr must be non-decreasing (got rowptr[{i}] = "
                         f"{int(rowptr[i])} > rowptr[{i + 1}] = {int(rowptr[i + 1])})")
    if num_edges > 0:
        lo, hi = int(col.min()), int(col.max())
        if lo < 0 or hi >= num_src:
            raise ValueError(f"{op}: col values must lie in [0, {num_src_name}) = [0, {num_src}) "
                             f"(got min {lo}, max {hi})")


def gather_aggregate_reference(rowptr: Tensor, col: Tensor, x_src: Tensor,
                               weight: Optional[Tensor] = None, reduce: str = "sum",
                               return_arg: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    r"""``out[i] = REDUCE_{e in rowptr[i]..rowptr[i+1]} weight[e] * x_src[col[e]]`` in plain torch.

    Differentiable through autograd. Rows without edges give 0. bfloat16 / float16 rows are
    computed in float32 and the result is rounded to ``x_src``'s dtype (as
    :func:`pyg_sar.ops.gather_aggregate`).

    Args:
        rowptr: ``int64 [N + 1]`` CSR row pointer over destinations.
        col: ``int64 [E]`` source row of each edge, in ``[0, x_src.size(0))``.
        x_src: ``[S, F]`` source rows (float32, float64, bfloat16 or float16).
        weight: optional ``[E]`` edge weights.
        reduce: ``"sum"``, ``"mean"`` (sum / in-degree), ``"max"`` or ``"min"``.
        return_arg: also return ``arg``: for max/min, ``int64 [N, F]`` edge position of the
            winner (the first one on ties, -1 on empty rows); an empty tensor for sum/mean.
    """
    check_gather_aggregate_args(rowptr, col, x_src, weight, reduce)
    acc = accumulate_dtype(x_src.dtype)
    if acc != x_src.dtype:
        w = None if weight is None else weight.to(acc)
        got = gather_aggregate_reference(rowptr, col, x_src.to(acc), w, reduce, return_arg)
        if return_arg:
            return got[0].to(x_src.dtype), got[1]
        return got.to(x_src.dtype)
    num_dst, num_feat = rowptr.numel() - 1, x_src.size(1)
    row = torch.repeat_interleave(torch.arange(num_dst, device=rowptr.device), rowptr.diff(),
                                  output_size=col.numel())
    msg = x_src.index_select(0, col)
    if weight is not None:
        msg = msg * weight.unsqueeze(-1)
    index = row.view(-1, 1).expand_as(msg)
    mode = {"sum": "sum", "mean": "mean", "max": "amax", "min": "amin"}[reduce]
    out = x_src.new_zeros(num_dst, num_feat).scatter_reduce(0, index, msg, reduce=mode,
                                                           include_self=False)
    if not return_arg:
        return out
    if reduce in ("sum", "mean"):
        return out, torch.empty(0, dtype=torch.int64, device=x_src.device)
    with torch.no_grad():
        num_edges = col.numel()
        best = out[row]
        wins = (msg == best) | (msg.isnan() & best.isnan())
        edge = torch.arange(num_edges, device=x_src.device).view(-1, 1).expand_as(msg)
        cand = torch.where(wins, edge, torch.full_like(edge, num_edges))
        arg = torch.full((num_dst, num_feat), num_edges, dtype=torch.int64, device=x_src.device)
        arg = arg.scatter_reduce(0, index, cand, reduce="amin", include_self=True)
        arg[arg == num_edges] = -1
    return out, arg
