"""``pyg_sar.clip_grad_norm_``: ``torch.nn.utils.clip_grad_norm_`` over the whole model of
every rank.

After a converted model's backward pass, the gradient of every shared parameter is the
single-process one on every rank (summed over ranks), but the gradient of a rank-local
parameter (a node table sharded by :func:`pyg_sar.shard_embedding`) holds only the rank's
rows. torch's ``clip_grad_norm_`` on one rank then sees a different total norm on every rank,
the ranks scale their gradients differently, and their parameters drift apart (pyg_sar's drift
check raises at the next backward pass). This version adds the rank-local part of the norm over
ranks, so every rank computes the single-process norm and the same scale.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Union

import torch
from torch import Tensor

from pyg_sar.distributed.sync import is_rank_local

Params = Union[Tensor, Iterable[Tensor]]


def clip_grad_norm_(parameters: Params, max_norm: float, norm_type: float = 2.0, *,
                    context: Any = None) -> Tensor:
    r"""Clip the gradients of ``parameters`` to a total norm of ``max_norm``, as
    ``torch.nn.utils.clip_grad_norm_`` does on the single-process model.

    The total norm is :math:`\|(\|g_1\|, \dots, \|g_k\|)\|_p` over every parameter's gradient,
    where a rank-local parameter's gradient is the concatenation of every rank's rows (its
    :math:`p`-th power summed over ranks; the maximum for ``inf``). Collective on more than
    one rank: every rank calls it with the same parameters. One process: torch's function.

    Example::

        loss.backward()
        pyg_sar.clip_grad_norm_(model.parameters(), 1.0)   # was torch.nn.utils.clip_grad_norm_
        optimizer.step()

    Args:
        parameters: the parameters (or one tensor) whose ``.grad`` is clipped in place.
        max_norm: the largest total norm allowed.
        norm_type: the ``p`` of the norm (``float("inf")`` for the largest entry).
        context: the ranks to compute over (default: :func:`pyg_sar.init`'s; one process
            when there is none).

    Returns:
        the total norm before clipping, a scalar tensor (equal on every rank).
    """
    from pyg_sar.distributed.context import resolve_context
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    ctx = resolve_context(context, create=False)
    if ctx is None or ctx.world_size == 1:
        return torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type)
    grads = [p.grad for p in params if p.grad is not None]
    local = [p.grad for p in params if p.grad is not None and is_rank_local(p)]
    shared = [p.grad for p in params if p.grad is not None and not is_rank_local(p)]
    p = float(norm_type)
    device = grads[0].device if grads else ctx.device
    norms = [torch.linalg.vector_norm(g.detach(), p).to(device, torch.float64) for g in shared]
    own = torch.stack([torch.linalg.vector_norm(g.detach(), p).to(device, torch.float64)
                       for g in local]) if local else torch.zeros(0, dtype=torch.float64,
                                                                   device=device)
    if p == float("inf"):
        part = own.max() if own.numel() else torch.zeros((), dtype=torch.float64, device=device)
        ctx.comm.all_reduce(part.reshape(1), op="max")
        total = torch.stack([*norms, part]).max() if norms else part
    else:
        part = own.pow(p).sum().reshape(1)
        ctx.comm.all_reduce(part, op="sum")
        total = (torch.stack(norms).pow(p).sum() if norms else 0.0) + part[0]
        total = total.pow(1.0 / p)
    coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    with torch.no_grad():
        for g in grads:
            g.mul_(coef.to(g.device, g.dtype))
    return total
