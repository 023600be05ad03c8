"""Autograd-aware collectives used by the engine's helpers (batch norm, global loss)."""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor


def world_comm():
    """The SAR communicator of the initialised context, or ``None`` for a single process."""
    from pyg_sar.distributed.context import get_context
    ctx = get_context()
    if ctx is None or ctx.world_size == 1:
        return None
    return ctx.comm


class _AllReduceSum(torch.autograd.Function):
    """Forward: sum over ranks. Backward: sum of the gradients over ranks (each rank's loss
    depends on the summed value)."""

    @staticmethod
    def forward(ctx, comm, x: Tensor) -> Tensor:
        ctx.comm = comm
        out = x.detach().clone().contiguous()
        comm.all_reduce(out, op="sum")
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        out = grad.detach().clone().contiguous()
        ctx.comm.all_reduce(out, op="sum")
        return None, out


def all_reduce_sum(x: Tensor, comm: Optional[object] = None) -> Tensor:
    """Differentiable sum of ``x`` over all ranks (identity for a single process)."""
    comm = comm if comm is not None else world_comm()
    if comm is None:
        return x
    return _AllReduceSum.apply(comm, x)
