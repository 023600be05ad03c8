"""The global reduction of a loss, owned by the engine, below :mod:`pyg_sar.nn.functional` and
:mod:`pyg_sar.link.metrics`, which both build their losses on it.

Each rank sums its per-element losses; the global loss is that sum over every rank divided by
the global number of selected elements (``"mean"``), or the plain sum (``"sum"``). The gradient
each rank gets is that of its own share (``local_sum / D``), and the backward pass is marked as
one through a global loss (:func:`~pyg_sar.distributed.backward.mark_global_loss`)."""
from __future__ import annotations

from typing import Any, Optional

import torch
from torch import Tensor

from pyg_sar.core.collectives import sum_over_ranks
from pyg_sar.core.precision import accumulate_dtype, is_low_precision
from pyg_sar.distributed.backward import mark_global_loss

REDUCTIONS = ("mean", "sum", "none")


def local_values(t: Any) -> Any:
    """This rank's values of ``t`` as a plain tensor when ``t`` is a tensor that reduces over
    the ranks by itself (:class:`pyg_sar.link.pair_ids.PairRows`, pairs' ids): the global losses and
    metrics reduce once, themselves. Anything else is returned as it is."""
    if isinstance(t, Tensor) and type(t) is not Tensor and hasattr(type(t), "_sar_graph"):
        return t.as_subclass(Tensor)
    return t


def check_reduction(reduction: str, name: str, allowed: tuple = REDUCTIONS) -> None:
    if reduction not in allowed:
        raise ValueError(f"{name}: reduction must be one of {allowed} (got {reduction!r})")


class RankShare(torch.autograd.Function):
    """Forward: the global value (computed by the caller). Backward: the gradient goes to this
    rank's share unchanged, and the backward pass is marked as one through a global loss."""

    @staticmethod
    def forward(ctx, share: Tensor, value: Tensor) -> Tensor:
        return value.to(dtype=share.dtype, device=share.device).reshape(share.shape).clone()

    @staticmethod
    def backward(ctx, grad: Tensor):
        mark_global_loss()
        return grad, None


def reduce_over_ranks(local_sum: Tensor, count: Any, reduction: str, comm, name: str,
                      dtype: Optional[torch.dtype] = None) -> Tensor:
    """The global loss from this rank's sum of per-element losses and its part ``count`` of
    the denominator (ignored for ``"sum"``); its gradient is ``local_sum / D``. ``dtype``:
    the dtype to return it in when ``local_sum`` is a float32 sum of low-precision losses."""
    loss = _reduce_wide(local_sum, count, reduction, comm, name)
    return loss if dtype is None else loss.to(dtype)


def reduce_elements(values: Tensor, reduction: str, comm, name: str) -> Tensor:
    """The mean (``"mean"``) or sum (``"sum"``) of every element of every rank's ``values``,
    as :func:`reduce_over_ranks` (low-precision values summed in float32 and the result
    returned in their dtype)."""
    dtype = values.dtype if is_low_precision(values.dtype) else None
    return reduce_over_ranks(values.sum(dtype=accumulate_dtype(values.dtype)), values.numel(),
                             reduction, comm, name, dtype)


def _reduce_wide(local_sum: Tensor, count: Any, reduction: str, comm, name: str) -> Tensor:
    if reduction == "sum":
        if comm is None:
            return local_sum
        total = sum_over_ranks(local_sum.detach().to(torch.float64), comm)
        return RankShare.apply(local_sum, total)
    count = torch.as_tensor(count, dtype=torch.float64, device=local_sum.device)
    stats = sum_over_ranks(torch.stack([local_sum.detach().to(torch.float64), count]), comm)
    denominator = float(stats[1])
    if denominator == 0:
        raise ValueError(f"{name}: no element is selected on any rank (the mean over zero "
                         f"elements is undefined); check the mask")
    share = local_sum / denominator
    if comm is None:
        return share
    return RankShare.apply(share, stats[0] / denominator)
