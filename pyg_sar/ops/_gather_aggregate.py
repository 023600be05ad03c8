"""Autograd-aware wrapper of ``torch.ops.pyg_sar.gather_aggregate`` and its backward op.

Dtypes: the raw op ``torch.ops.pyg_sar.gather_aggregate`` returns ``out`` in the accumulator
dtype (float32 for bfloat16 / float16 rows, so that the engine can fold several blocks in
float32); :class:`GatherAggregate` returns that raw output, and the user-facing
:func:`gather_aggregate` casts it back to ``x_src``'s dtype, as a torch aggregation would return
it. Gradients come back in each input's dtype, computed in float32.
"""
from __future__ import annotations

from typing import Any, Optional

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from pyg_sar.ops._native import has_kernel, warn_fallback
from pyg_sar.ops.reference import gather_aggregate_reference


class GatherAggregate(torch.autograd.Function):
    """Forward: ``pyg_sar::gather_aggregate``; backward: ``pyg_sar::gather_aggregate_backward``.

    Saves only the CSR arrays, the weights and (for max/min) the winner positions; ``x_src`` is
    saved only when the weights need a gradient. Returns the raw op's output: in the accumulator
    dtype (float32 for bfloat16 / float16 ``x_src``).
    """

    @staticmethod
    def forward(ctx: Any, rowptr: Tensor, col: Tensor, x_src: Tensor, weight: Optional[Tensor],
                reduce: str) -> Tensor:
        out, arg = torch.ops.pyg_sar.gather_aggregate(rowptr, col, x_src, weight, reduce)
        weight_requires_grad = weight is not None and ctx.needs_input_grad[3]
        ctx.save_for_backward(rowptr, col, x_src if weight_requires_grad else None, weight, arg)
        ctx.reduce = reduce
        ctx.num_src = x_src.size(0)
        ctx.x_dtype = x_src.dtype
        ctx.weight_requires_grad = weight_requires_grad
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_out: Tensor) -> tuple[Optional[Tensor], ...]:
        rowptr, col, x_src, weight, arg = ctx.saved_tensors
        grad_x, grad_w = torch.ops.pyg_sar.gather_aggregate_backward(
            grad_out.contiguous(), rowptr, col, x_src, weight, arg, ctx.reduce, ctx.num_src,
            ctx.weight_requires_grad, ctx.x_dtype)
        return (None, None, grad_x if ctx.needs_input_grad[2] else None,
                grad_w if ctx.weight_requires_grad else None, None)


def gather_aggregate(rowptr: Tensor, col: Tensor, x_src: Tensor, weight: Optional[Tensor] = None,
                     reduce: str = "sum") -> Tensor:
    r"""Fused gather + aggregate over a CSR graph, without the E x F tensor of gathered rows.

    .. math::
        \mathbf{out}_i = \bigoplus_{e = \mathrm{rowptr}_i}^{\mathrm{rowptr}_{i+1} - 1}
        w_e \cdot \mathbf{x}_{\mathrm{col}_e}

    with :math:`\bigoplus` one of sum, mean (sum / in-degree), max or min; rows without edges
    give 0. Gradients flow to ``x_src`` and ``weight`` (max/min send each element's gradient to
    the first winning edge). Runs ``torch.ops.pyg_sar.gather_aggregate`` when the native library
    has a kernel for ``x_src``'s device, else the pure-torch reference (with a warning, or an error
    under ``PYG_SAR_REQUIRE_NATIVE=1``).

    Dtypes: float32, float64, bfloat16 or float16 rows; bfloat16 / float16 are summed (and
    weighted, compared) in float32 and the result is rounded once to ``x_src``'s dtype, which is
    the output dtype. (The raw op ``torch.ops.pyg_sar.gather_aggregate`` returns the float32
    accumulator instead.) Other dtypes raise a ``RuntimeError`` naming the supported set.

    Args:
        rowptr: ``int64 [N + 1]`` CSR row pointer over destinations.
        col: ``int64 [E]`` source row of each edge, in ``[0, x_src.size(0))``.
        x_src: ``[S, F]`` source rows (float32, float64, bfloat16 or float16).
        weight: optional ``[E]`` edge weights, of ``x_src``'s dtype or (for bfloat16 / float16
            rows) float32.
        reduce: ``"sum"``, ``"mean"``, ``"max"`` or ``"min"``.

    Shapes:
        output: ``[N, F]``, of ``x_src``'s dtype.
    """
    if has_kernel("gather_aggregate", x_src.device):
        out = GatherAggregate.apply(rowptr, col, x_src, weight, reduce)
        return out if out.dtype == x_src.dtype else out.to(x_src.dtype)
    warn_fallback("gather_aggregate", x_src.device.type)
    return gather_aggregate_reference(rowptr, col, x_src, weight, reduce)
