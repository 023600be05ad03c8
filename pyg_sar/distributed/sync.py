"""Gradient all-reduce and parameter broadcast over SAR's communicator (bucketed)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Optional, Union

import torch
from torch import Tensor

from pyg_sar.distributed.context import DistContext, resolve_context

ParamsLike = Union[torch.nn.Module, Iterable[torch.nn.Parameter]]

# Set on a ``.grad`` tensor that holds the sum over ranks already (written by the automatic
# gradient synchronisation of converted models, :mod:`pyg_sar.nn.grad_sync`).
_SYNCED = "_pyg_sar_synchronised"


def mark_synchronised(grad: Tensor) -> None:
    """Record that ``grad`` (a parameter's ``.grad``) is summed over ranks already."""
    setattr(grad, _SYNCED, True)


def clear_synchronised(grad: Optional[Tensor]) -> None:
    """Forget :func:`mark_synchronised` (the gradient will accumulate unsynchronised parts)."""
    if grad is not None and hasattr(grad, _SYNCED):
        delattr(grad, _SYNCED)


def is_synchronised(grad: Optional[Tensor]) -> bool:
    """Whether ``grad`` holds the sum over ranks already (set by the automatic sync)."""
    return grad is not None and getattr(grad, _SYNCED, False)


def is_rank_local(param: Tensor) -> bool:
    """Whether ``param`` holds this rank's own rows (a sharded embedding table,
    :func:`pyg_sar.shard_embedding`): never summed, broadcast or compared across ranks."""
    return bool(getattr(param, "_sar_rank_local", False))


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

    Converted models synchronise their gradients after every backward pass by themselves
    (``SARConfig(sync_gradients=True)``, the default): gradients already summed that way are
    left as they are, so calling this function as well never doubles them.
    """
    ctx = resolve_context(ctx)
    if isinstance(model_or_params, torch.nn.Module):
        params = list(model_or_params.parameters())
    else:
        params = list(model_or_params)
    # Gradients the automatic sync summed already are the same set on every rank.
    params = [p for p in params if p.requires_grad and not is_synchronised(p.grad)
              and not is_rank_local(p)]
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
    ctx = resolve_context(ctx)
    if ctx.world_size == 1:
        return
    if not 0 <= src < ctx.world_size:
        raise ValueError(f"broadcast_parameters: src must be a rank in [0, {ctx.world_size}) "
                         f"(got {src})")
    tensors = [p.data for p in model.parameters() if not is_rank_local(p)] + [
        b for b in model.buffers()]
    _bucketed(tensors, bucket_size_mb, lambda flat: ctx.comm.broadcast(flat, src=src))


def _digest(t: Tensor) -> str:
    import hashlib
    data = t.detach().to("cpu").contiguous().reshape(-1)
    return hashlib.sha256(data.view(torch.uint8).numpy().tobytes()).hexdigest()[:16]


def _first_difference(name: str, per_rank: list, field: str) -> Optional[str]:
    values = [entry.get(name, {}).get(field) if entry is not None else None for entry in per_rank]
    if len(set(map(str, values))) <= 1:
        return None
    groups: dict[str, list[int]] = {}
    for r, v in enumerate(values):
        groups.setdefault(str(v) if v is not None else "(absent)", []).append(r)
    shown = "; ".join(f"ranks {ranks}: {v}" for v, ranks in groups.items())
    return f"'{name}' has a different {field} across ranks ({shown})"


def check_parameters_equal(model: torch.nn.Module, ctx: Optional[DistContext] = None,
                           values: bool = True) -> None:
    """Raise unless every rank holds the same parameters and buffers: names, shapes, dtypes
    and (with ``values``) bit-identical values.

    Call it once before training (after :func:`broadcast_parameters` or loading a
    checkpoint): ranks that start from different parameters train different models while the
    summed gradients still look plausible, and ranks with different dtypes or shapes
    mis-match the gradient buckets. One small all-gather of names and SHA-256 digests.

    Raises:
        RuntimeError: naming the first differing tensors and which ranks hold which value.
    """
    ctx = resolve_context(ctx)
    if ctx.world_size == 1:
        return
    mine = {}
    for kind, items in (("parameter", model.named_parameters()),
                        ("buffer", model.named_buffers())):
        for name, t in items:
            if is_rank_local(t):
                continue
            entry = {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")}
            if values:
                entry["values (SHA-256 prefix)"] = _digest(t)
            mine[f"{kind} {name}"] = entry
    every = ctx.comm.allgather_object(mine)
    names = sorted(set().union(*every), key=lambda n: (n not in mine, n))
    problems = []
    for name in names:
        for fld in ("shape", "dtype", "values (SHA-256 prefix)"):
            diff = _first_difference(name, every, fld)
            if diff is not None:
                problems.append(diff)
                break
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise RuntimeError(
            f"pyg_sar: model parameters differ across ranks at rank {ctx.rank}: "
            + "; ".join(problems[:3]) + more + ". Every rank must start from the same model: "
            "build it with the same seed and dtype and call pyg_sar.broadcast_parameters(model)")


def check_same_dtypes(tensors: dict[str, Optional[Tensor]],
                      ctx: Optional[DistContext] = None) -> None:
    """Raise unless every rank passes tensors of the same dtype and row shape under each
    name (e.g. ``{"x": part.x, "edge_attr": part.edge_attr}``); rows may differ.

    Raises:
        RuntimeError: naming the tensor and the dtype / trailing shape each rank holds.
    """
    ctx = resolve_context(ctx)
    if ctx.world_size == 1:
        return
    mine = {name: ({"dtype": str(t.dtype).replace("torch.", ""), "row shape": list(t.shape[1:])}
                   if t is not None else {"dtype": None, "row shape": None})
            for name, t in tensors.items()}
    every = ctx.comm.allgather_object(mine)
    problems = [d for name in tensors for fld in ("dtype", "row shape")
                if (d := _first_difference(name, every, fld)) is not None]
    if problems:
        raise RuntimeError(f"pyg_sar: inputs differ across ranks at rank {ctx.rank}: "
                           + "; ".join(problems) + ". Cast every rank's tensors to one dtype.")
