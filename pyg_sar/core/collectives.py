"""Sums over ranks for the engine's helpers (batch norm, global losses), on the communicator
they are given: nothing here looks up a process-wide context."""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor


def sum_over_ranks(t: Tensor, comm: Optional[object]) -> Tensor:
    """A new tensor: ``t`` summed over the ranks of ``comm`` (a copy of ``t`` when ``comm`` is
    ``None`` or has one rank). Not differentiable (see :func:`all_reduce_sum`)."""
    out = t.detach().clone().contiguous()
    if comm is not None and comm.world_size > 1:
        comm.all_reduce(out, op="sum")
    return out


class _AllReduceSum(torch.autograd.Function):
    """Forward: sum over ranks. Backward: sum of the gradients over ranks (each rank's loss
    depends on the summed value)."""

    @staticmethod
    def forward(ctx, comm, x: Tensor) -> Tensor:
        ctx.comm = comm
        return sum_over_ranks(x, comm)

    @staticmethod
    def backward(ctx, grad: Tensor):
        return None, sum_over_ranks(grad, ctx.comm)


def all_reduce_sum(x: Tensor, comm: Optional[object]) -> Tensor:
    """Differentiable sum of ``x`` over the ranks of ``comm`` (identity for ``None``)."""
    if comm is None or comm.world_size == 1:
        return x
    return _AllReduceSum.apply(comm, x)
