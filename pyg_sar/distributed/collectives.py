"""Sums over ranks on the communicator they are given (nothing here looks up a process-wide
context): for the engine's helpers (batch norm, global losses, global attention, through
:mod:`pyg_sar.core.collectives`) and :func:`pyg_sar.global_sum`; and
:func:`refuse_together`, how a collective refuses one rank's bad input on every rank."""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor


def sum_over_ranks(t: Tensor, comm: Optional[object]) -> Tensor:
    """A new tensor: ``t`` summed over the ranks of ``comm`` (a copy of ``t`` when ``comm`` is
    ``None`` or has one rank). Not differentiable."""
    out = t.detach().clone().contiguous()
    if comm is not None and comm.world_size > 1:
        comm.all_reduce(out, op="sum")
    return out


class _SumOverRanks(torch.autograd.Function):
    """Forward: ``t`` summed over ranks. Backward: the gradient summed over ranks (every rank
    uses the sum, so the global loss's gradient w.r.t. one rank's partial is the sum of every
    rank's gradient w.r.t. the total)."""

    @staticmethod
    def forward(ctx, t: Tensor, comm) -> Tensor:
        ctx.comm = comm
        return sum_over_ranks(t, comm)

    @staticmethod
    def backward(ctx, grad: Tensor):
        return sum_over_ranks(grad.contiguous(), ctx.comm), None


def sum_over_ranks_grad(t: Tensor, comm: Optional[object]) -> Tensor:
    """``t`` summed over the ranks of ``comm`` (``None`` or one rank: ``t`` itself);
    differentiable, its backward sums the gradient over ranks. Collective: every rank must
    call it, in the same order, with the same shape."""
    if comm is None or comm.world_size == 1:
        return t
    return _SumOverRanks.apply(t, comm)


def refuse_together(comm: Optional[object], name: str, problem: Optional[str],
                    device: Optional[torch.device] = None) -> None:
    """Raise ``ValueError(problem)`` on this rank, and a ``ValueError`` on every other rank,
    when any rank found a problem with its input (one all-reduce of one number), so that no
    rank is left waiting in a collective that the failing rank never joins. Collective when
    ``comm`` has several ranks: every rank calls it at the same point."""
    if comm is not None and comm.world_size > 1:
        flag = sum_over_ranks(torch.tensor([0.0 if problem is None else 1.0],
                                           dtype=torch.float64, device=device), comm)
        if problem is None and float(flag[0]) > 0:
            raise ValueError(f"{name}: invalid input on another rank (that rank's error "
                             f"names the value)")
    if problem is not None:
        raise ValueError(problem)


__all__ = ["refuse_together", "sum_over_ranks", "sum_over_ranks_grad"]
