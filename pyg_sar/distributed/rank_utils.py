"""Small helpers for a training script that runs on every rank: print and log once, wait for
everyone, add a number up over ranks.

Each resolves the context as the global losses do (``context=None``: :func:`pyg_sar.init`'s,
made on first use). ``pyg_sar.print`` and ``pyg_sar.log`` are left out of ``from pyg_sar import
*`` so that they never shadow the builtin ``print``; call them by their full name.
"""
from __future__ import annotations

import builtins
from typing import Any, Union

import torch
from torch import Tensor

from pyg_sar.distributed.collectives import sum_over_ranks
from pyg_sar.distributed.context import resolve_context


def print(*args: Any, context: Any = None, **kwargs: Any) -> None:  # noqa: A001 - by design
    """The builtin :func:`print`, on rank 0 only (every rank when there is one process).

    Args:
        \\*args, \\*\\*kwargs: passed to :func:`print` (``sep``, ``end``, ``file``, ``flush``).
        context: the ranks whose rank 0 prints (a DistContext or a DistGraph).
    """
    if resolve_context(context).rank == 0:
        builtins.print(*args, **kwargs)


def log(**kwargs: Any) -> None:
    """PyG's :func:`torch_geometric.logging.log` on rank 0 only (``Epoch: 001, Loss: ...``,
    and to Weights & Biases when PyG's logging was initialised there)."""
    from torch_geometric.logging import log as pyg_log
    if resolve_context(None).rank == 0:
        pyg_log(**kwargs)


def barrier(context: Any = None) -> None:
    """Wait until every rank has arrived here (no-op on one process)."""
    ctx = resolve_context(context)
    if ctx.world_size > 1:
        ctx.comm.barrier()


def global_sum(tensor: Union[Tensor, float, int], context: Any = None) -> Tensor:
    """A new tensor: ``tensor`` summed elementwise over ranks (a number becomes a tensor).

    Not differentiable (the result is detached): for a loss, use :mod:`pyg_sar.nn.functional`
    (:func:`~pyg_sar.nn.functional.global_loss` for a reduction of your own).
    """
    ctx = resolve_context(context)
    if not isinstance(tensor, Tensor):
        tensor = torch.tensor(tensor, device=ctx.device)
    return sum_over_ranks(tensor, ctx.comm if ctx.world_size > 1 else None)
