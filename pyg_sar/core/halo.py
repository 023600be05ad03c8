"""Halo mode: one autograd-aware all-to-all per tensor fetches every remote row a rank needs.

The vanilla domain-parallel baseline: the fetched halo stays in the autograd graph until
backward, so its memory does not fall with P on dense graphs.
"""
from __future__ import annotations

import time

import torch
from torch import Tensor

from pyg_sar.core.exchange import count
from pyg_sar.graph import DistGraph


def halo_offsets(graph: DistGraph) -> list[int]:
    """Row offset of every source rank's rows in ``[local rows; halo rows]`` (by source rank)."""
    offsets, at = [], graph.num_nodes
    for s, b in enumerate(graph.blocks):
        offsets.append(0 if s == graph.rank else at)
        if s != graph.rank:
            at += b.num_src
    return offsets


def _send_index(graph: DistGraph) -> Tensor:
    return graph.cached(("halo_send_index",), lambda: torch.cat(list(graph.send_idx)))


class _HaloFetch(torch.autograd.Function):
    @staticmethod
    def forward(ctx, graph: DistGraph, x: Tensor) -> Tensor:
        idx = _send_index(graph)
        send = x.index_select(0, idx).contiguous()
        out = x.new_empty((sum(graph.recv_counts), *x.shape[1:]))
        t = time.perf_counter()
        graph.context.comm.all_to_all_single(out, send, graph.recv_counts, graph.send_counts)
        count(graph.context.comm, send.numel() * send.element_size(),
              out.numel() * out.element_size(), graph.world_size - 1, time.perf_counter() - t)
        ctx.graph, ctx.num_rows = graph, x.shape[0]
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        graph: DistGraph = ctx.graph
        idx = _send_index(graph)
        back = grad.new_empty((int(idx.numel()), *grad.shape[1:]))
        t = time.perf_counter()
        graph.context.comm.all_to_all_single(back, grad.contiguous(), graph.send_counts,
                                             graph.recv_counts)
        count(graph.context.comm, grad.numel() * grad.element_size(),
              back.numel() * back.element_size(), graph.world_size - 1, time.perf_counter() - t)
        gx = grad.new_zeros((ctx.num_rows, *grad.shape[1:])).index_add_(0, idx, back)
        return None, gx


def with_halo(graph: DistGraph, x: Tensor) -> Tensor:
    """``[x; rows of x's remote sources]``; gradients of the halo rows return to their owners."""
    if graph.world_size == 1:
        return x
    return torch.cat([x, _HaloFetch.apply(graph, x)], dim=0)
