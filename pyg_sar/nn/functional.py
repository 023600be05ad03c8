"""Losses and metrics normalised by global counts, so P ranks see the single-process values."""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor

from pyg_sar.core.collectives import world_comm


def _global_sum(value: Tensor) -> Tensor:
    comm = world_comm()
    out = value.detach().clone().contiguous()
    if comm is not None:
        comm.all_reduce(out, op="sum")
    return out


def _select(out: Tensor, target: Tensor, mask: Optional[Tensor]) -> tuple[Tensor, Tensor]:
    if mask is None:
        return out, target
    if mask.dtype != torch.bool or mask.shape[0] != out.shape[0]:
        raise ValueError(f"expected a bool mask with {out.shape[0]} rows "
                         f"(got dtype {mask.dtype}, shape {tuple(mask.shape)})")
    return out[mask], target[mask]


def cross_entropy(out: Tensor, target: Tensor, mask: Optional[Tensor] = None,
                  **kwargs) -> Tensor:
    r"""Mean cross-entropy over the masked nodes of ALL ranks.

    The returned value is the global mean on every rank; its gradient is this rank's share
    (local sum / global count), so after :func:`pyg_sar.all_reduce_gradients` (a sum) the
    parameter gradients equal the single-process ones.
    """
    out, target = _select(out, target, mask)
    local = F.cross_entropy(out, target, reduction="sum", **kwargs)
    count = _global_sum(torch.tensor(float(target.shape[0]), dtype=local.dtype,
                                     device=local.device))
    if float(count) == 0:
        raise ValueError("cross_entropy: no node is selected by the mask on any rank")
    share = local / count
    return share + (_global_sum(share) - share).detach()


def accuracy(out: Tensor, target: Tensor, mask: Optional[Tensor] = None) -> float:
    """Fraction of correctly classified masked nodes over all ranks."""
    out, target = _select(out, target, mask)
    correct = (out.argmax(dim=-1) == target).sum().to(torch.float64)
    stats = _global_sum(torch.stack([correct, torch.tensor(float(target.shape[0]),
                                                           dtype=torch.float64)]))
    return float(stats[0] / stats[1]) if float(stats[1]) > 0 else float("nan")
