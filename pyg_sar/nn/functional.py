"""Losses and metrics normalised by global counts, so P ranks see the single-process values."""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor

from pyg_sar.core.collectives import sum_over_ranks


def _comm(context):
    """The communicator of ``context`` (a DistContext or a DistGraph), or of the process's
    context when ``None`` (no communication when there is none, or one rank)."""
    from pyg_sar.distributed.context import resolve_context
    ctx = resolve_context(context, create=False)
    return ctx.comm if ctx is not None and ctx.world_size > 1 else None


def _select(out: Tensor, target: Tensor, mask: Optional[Tensor]) -> tuple[Tensor, Tensor]:
    if mask is None:
        return out, target
    if mask.dtype != torch.bool or mask.shape[0] != out.shape[0]:
        raise ValueError(f"expected a bool mask with {out.shape[0]} rows "
                         f"(got dtype {mask.dtype}, shape {tuple(mask.shape)})")
    return out[mask], target[mask]


def cross_entropy(out: Tensor, target: Tensor, mask: Optional[Tensor] = None, *,
                  context=None, **kwargs) -> Tensor:
    r"""Mean cross-entropy over the masked nodes of ALL ranks.

    The returned value is the global mean on every rank; its gradient is this rank's share
    (local sum / global count), so after :func:`pyg_sar.all_reduce_gradients` (a sum) the
    parameter gradients equal the single-process ones.

    Args:
        context: the ranks to average over: a :class:`~pyg_sar.distributed.DistContext` or
            the :class:`~pyg_sar.DistGraph` the model ran on (default: :func:`pyg_sar.init`'s
            context, if any).
        **kwargs: passed to :func:`torch.nn.functional.cross_entropy`.
    """
    comm = _comm(context)
    out, target = _select(out, target, mask)
    local = F.cross_entropy(out, target, reduction="sum", **kwargs)
    count = sum_over_ranks(torch.tensor(float(target.shape[0]), dtype=local.dtype,
                                        device=local.device), comm)
    if float(count) == 0:
        raise ValueError("cross_entropy: no node is selected by the mask on any rank")
    share = local / count
    return share + (sum_over_ranks(share, comm) - share).detach()


def accuracy(out: Tensor, target: Tensor, mask: Optional[Tensor] = None, *,
             context=None) -> float:
    """Fraction of correctly classified masked nodes over all ranks (of ``context``, as in
    :func:`cross_entropy`)."""
    comm = _comm(context)
    out, target = _select(out, target, mask)
    correct = (out.argmax(dim=-1) == target).sum().to(torch.float64)
    stats = sum_over_ranks(torch.stack([correct, torch.tensor(float(target.shape[0]),
                                                              dtype=torch.float64)]), comm)
    return float(stats[0] / stats[1]) if float(stats[1]) > 0 else float("nan")
