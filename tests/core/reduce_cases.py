"""Rank side of the cross-rank reduction tests (pyg_sar.core.reduce, pyg_sar.nn.adapters.laplacian):
each case computes a value on the rank's part and the same value on the whole graph."""
from __future__ import annotations

import torch

import pyg_sar
from pyg_sar.core.halo import with_halo
from pyg_sar.core.reduce import global_max, sum_to_owners
from pyg_sar.nn.adapters.laplacian import out_degree
from tests.core import engine_cases as ec


def _sum_all(ctx, value: float) -> float:
    t = torch.tensor([value], dtype=torch.float64)
    if ctx.world_size > 1:
        ctx.comm.all_reduce(t, op="sum")
    return float(t)


def reductions(ctx, parts: str) -> dict:
    data = ec.make_graph()
    part = pyg_sar.load_partition(parts, ctx.rank)
    graph, nid, eid = part.graph, part.node_ids, part.edge_ids
    out: dict = {}

    # sum_to_owners of ones: how many other ranks read each local node.
    halo_rows = sum(graph.recv_counts)
    readers = torch.zeros(graph.num_nodes, dtype=torch.float64)
    for idx in graph.send_idx:
        readers.index_add_(0, idx, torch.ones(idx.numel(), dtype=torch.float64))
    got = sum_to_owners(graph, torch.ones(halo_rows, 2, dtype=torch.float64))
    out["owners_count"] = float((got - readers.view(-1, 1)).abs().max()) if got.numel() else 0.0

    # adjoint of with_halo: sum over ranks of <with_halo(x)[n:], h> == <x, sum_to_owners(h)>,
    # and the backward of each is the other.
    gen = torch.Generator().manual_seed(10 + ctx.rank)
    x = torch.randn(graph.num_nodes, 3, generator=gen, dtype=torch.float64, requires_grad=True)
    h = torch.randn(halo_rows, 3, generator=gen, dtype=torch.float64, requires_grad=True)
    left = (with_halo(graph, x)[graph.num_nodes:] * h).sum()
    right = (x * sum_to_owners(graph, h)).sum()
    out["adjoint"] = abs(_sum_all(ctx, float(left.detach())) - _sum_all(ctx, float(right.detach())))
    (gx,) = torch.autograd.grad(right, [x], retain_graph=True)
    (gh,) = torch.autograd.grad(right, [h], allow_unused=True, materialize_grads=True)
    out["grad_h"] = float((gh - with_halo(graph, x.detach())[graph.num_nodes:]).abs().max()) \
        if halo_rows else 0.0
    out["grad_x"] = float((gx - sum_to_owners(graph, h.detach())).abs().max())

    # weighted out-degree (get_laplacian's scatter by edge_index[0]) and its gradient
    w_all = data.edge_weight.clone().requires_grad_()
    ref = torch.zeros(data.num_nodes, dtype=torch.float64).index_add(0, data.edge_index[0],
                                                                    w_all)
    c = torch.randn(data.num_nodes, generator=torch.Generator().manual_seed(4),
                    dtype=torch.float64)
    (ref * c).sum().backward()
    w = data.edge_weight[eid].clone().requires_grad_()
    deg = out_degree(graph, w)
    (deg * c[nid]).sum().backward()
    out["out_degree"] = float((deg.detach() - ref.detach()[nid]).abs().max())
    out["out_degree_grad"] = float((w.grad - w_all.grad[eid]).abs().max())

    # global_max with ties on several ranks (and an empty rank at P = 3): same value and
    # gradient as Tensor.max() of the concatenation, every rank's use of the maximum weighted
    # differently.
    pieces = [[1.0, 7.0, 3.0, 7.0], [7.0, 2.0], [], [5.0, 7.0, 7.0]]
    world = ctx.world_size
    chunks = [torch.tensor(v, dtype=torch.float64) for v in pieces[:world - 1]]
    chunks.append(torch.tensor(sum(pieces[world - 1:], []), dtype=torch.float64))
    weights = [2.0, -1.0, 0.5, 3.0][:world]
    whole = torch.cat(chunks).requires_grad_()
    (torch.stack([whole.max() * wt for wt in weights]).sum()).backward()
    mine = chunks[ctx.rank].clone().requires_grad_()
    peak = global_max(graph, mine)
    (peak * weights[ctx.rank]).backward()
    start = sum(ch.numel() for ch in chunks[:ctx.rank])
    want = whole.grad[start:start + mine.numel()]
    out["max_value"] = float(peak.detach()) - float(whole.detach().max())
    out["max_grad"] = float((mine.grad - want).abs().max()) if mine.numel() else 0.0
    return out
