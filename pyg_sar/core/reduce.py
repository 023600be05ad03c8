"""Autograd-aware reductions across ranks that graph preprocessing needs.

* :func:`sum_to_owners` adds values computed for halo rows into their owners' rows: the adjoint
  of :func:`~pyg_sar.core.halo.with_halo` (its backward fetches the halo rows' gradients).
  With it a rank sums over the *sources* of its stored edges, e.g. the out-degree that
  ``get_laplacian`` scatters by ``edge_index[0]``.
* :func:`global_max` is ``t.max()`` over the union of every rank's ``t``; like ``Tensor.max()``
  its gradient is split evenly between all elements (on all ranks) that attain the maximum.

Both return their input unchanged in meaning for a single process. Low-precision (bfloat16 /
float16) values are summed in float32 (the owners' sums, the tie counts and the gradient sums
over ranks) and returned in their own dtype.
"""
from __future__ import annotations

import torch
from torch import Tensor

from pyg_sar.core.precision import accumulate_dtype
from pyg_sar.graph import DistGraph, halo_rows


def _to_owners(graph: DistGraph, halo: Tensor) -> Tensor:
    idx = graph.send_index()
    back = halo.new_empty((int(idx.numel()), *halo.shape[1:]))
    graph.context.comm.all_to_all_single(back, halo.contiguous(), graph.send_counts,
                                         graph.recv_counts)
    wide = accumulate_dtype(halo.dtype)
    total = halo.new_zeros((graph.num_nodes, *halo.shape[1:]), dtype=wide)
    return total.index_add_(0, idx, back.to(wide)).to(halo.dtype)


class _SumToOwners(torch.autograd.Function):
    """Forward: halo rows summed into their owners' rows. Backward: the owners' row gradients
    fetched back to the halo (what ``with_halo`` does forward)."""

    @staticmethod
    def forward(ctx, graph: DistGraph, halo: Tensor) -> Tensor:
        ctx.graph = graph
        return _to_owners(graph, halo)

    @staticmethod
    def backward(ctx, grad: Tensor):
        return None, halo_rows(ctx.graph, grad.contiguous())


def sum_to_owners(graph: DistGraph, halo: Tensor) -> Tensor:
    """``[num_nodes, ...]``: for every local node, the sum of the rows that other ranks computed
    for it as one of their halo rows (``halo``: ``[sum(graph.recv_counts), ...]`` in
    :func:`~pyg_sar.core.halo.halo_offsets` order). Collective; differentiable."""
    if tuple(halo.shape[:1]) != (sum(graph.recv_counts),):
        raise ValueError(f"sum_to_owners: expected {sum(graph.recv_counts)} halo rows "
                         f"(got {tuple(halo.shape)})")
    if graph.world_size == 1:
        return halo.new_zeros((graph.num_nodes, *halo.shape[1:]))
    return _SumToOwners.apply(graph, halo)


class _GlobalMax(torch.autograd.Function):
    """Forward: the maximum over all ranks. Backward: the gradient summed over ranks (every
    rank uses the maximum) and split evenly between all elements that attain it."""

    @staticmethod
    def forward(ctx, comm, t: Tensor) -> Tensor:
        local = t.max() if t.numel() else t.new_tensor(float("-inf"))
        peak = local.detach().clone().reshape(1)
        if comm is not None:
            comm.all_reduce(peak, op="max")
        winners = (t == peak).to(accumulate_dtype(t.dtype))  # a bf16 count stops at 256
        ties = winners.sum().reshape(1)
        if comm is not None:
            comm.all_reduce(ties, op="sum")
        ctx.comm = comm
        ctx.save_for_backward(winners, ties)
        return peak.reshape(())

    @staticmethod
    def backward(ctx, grad: Tensor):
        winners, ties = ctx.saved_tensors
        total = grad.detach().to(ties.dtype, copy=True).reshape(1)
        if ctx.comm is not None:
            ctx.comm.all_reduce(total, op="sum")
        return None, (winners * (total / ties)).to(grad.dtype)


def global_max(graph: DistGraph, t: Tensor) -> Tensor:
    """``t.max()`` over every rank's ``t`` (a 0-dim tensor, the same on every rank; ``-inf``
    when all are empty). Collective; differentiable like ``Tensor.max()``."""
    comm = graph.context.comm if graph.world_size > 1 else None
    return _GlobalMax.apply(comm, t)
