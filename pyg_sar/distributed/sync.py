"""Gradient all-reduce and parameter broadcast over SAR's communicator (bucketed)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Optional, Union

import torch
from torch import Tensor

from pyg_sar.distributed.context import DistContext, get_context, init

ParamsLike = Union[torch.nn.Module, Iterable[torch.nn.Parameter]]


def _resolve(ctx: Optional[DistContext]) -> DistContext:
    return ctx if ctx is not None else (get_context() or init())


def _buckets(tensors: list[Tensor], bucket_bytes: int) -> list[list[int]]:
    """Indices of ``tensors`` grouped by (dtype, device), each group cut into buckets of at
    most ``bucket_bytes`` (a larger tensor gets a bucket of its own). Deterministic, so every
    rank builds the same buckets from the same parameter list."""
    groups: dict[tuple, list[list[int]]] = {}
    sizes: dict[tuple, int] = {}
    for i, t in enumerate(tensors):
        key = (t.dtype, t.device)
        nbytes = t.numel() * t.element_size()
        if key not in groups or sizes[key] + nbytes > bucket_bytes:
            groups.setdefault(key, []).append([])
            sizes[key] = 0
        groups[key][-1].append(i)
        sizes[key] += nbytes
    return [b for buckets in groups.values() for b in buckets if b]


def _bucketed(tensors: list[Tensor], bucket_size_mb: float, collective) -> None:
    """Apply ``collective`` (in place, on a flat tensor) to ``tensors`` through flat buckets."""
    if not bucket_size_mb > 0:
        raise ValueError(f"bucket_size_mb must be > 0 (got {bucket_size_mb!r})")
    for bucket in _buckets(tensors, int(bucket_size_mb * 2**20)):
        members = [tensors[i] for i in bucket]
        flat = torch.cat([t.detach().reshape(-1) for t in members])
        collective(flat)
        with torch.no_grad():
            for t, chunk in zip(members, flat.split([t.numel() for t in members])):
                t.copy_(chunk.view_as(t))


def all_reduce_gradients(model_or_params: ParamsLike, ctx: Optional[DistContext] = None,
                         bucket_size_mb: float = 25.0) -> None:
    """Sum every parameter's ``.grad`` over all ranks, in place (bucketed by dtype).

    After SAR's backward each rank holds the gradient of its own part of the loss; their sum
    is the single-process gradient. A parameter whose grad is ``None`` on some ranks only
    contributes zeros there (and gets a grad), so ranks never disagree on the buckets; one
    whose grad is ``None`` on every rank stays ``None``. No-op for world size 1.
    """
    ctx = _resolve(ctx)
    if isinstance(model_or_params, torch.nn.Module):
        params = list(model_or_params.parameters())
    else:
        params = list(model_or_params)
    params = [p for p in params if p.requires_grad]
    if ctx.world_size == 1 or not params:
        return
    for p in params:
        if p.grad is not None and p.grad.is_sparse:
            raise ValueError(f"all_reduce_gradients: sparse gradients are not supported "
                             f"(parameter of shape {tuple(p.shape)})")
    # Which parameters have a gradient on any rank (one small collective).
    has_grad = torch.tensor([p.grad is not None for p in params], dtype=torch.uint8,
                            device=ctx.device)
    ctx.comm.all_reduce(has_grad, op="max")
    grads = []
    for p, anywhere in zip(params, has_grad.tolist()):
        if anywhere:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            grads.append(p.grad)
    _bucketed(grads, bucket_size_mb, lambda flat: ctx.comm.all_reduce(flat, op="sum"))


def broadcast_parameters(model: torch.nn.Module, src: int = 0,
                         ctx: Optional[DistContext] = None, bucket_size_mb: float = 25.0) -> None:
    """Copy rank ``src``'s parameters and buffers into every rank's ``model`` (in place).
    No-op for world size 1."""
    ctx = _resolve(ctx)
    if ctx.world_size == 1:
        return
    if not 0 <= src < ctx.world_size:
        raise ValueError(f"broadcast_parameters: src must be a rank in [0, {ctx.world_size}) "
                         f"(got {src})")
    tensors = [p.data for p in model.parameters()] + [b for b in model.buffers()]
    _bucketed(tensors, bucket_size_mb, lambda flat: ctx.comm.broadcast(flat, src=src))
