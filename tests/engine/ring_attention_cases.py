"""Rank side (and P = 1 side) of the ring attention tests (:mod:`pyg_sar.core.global_attention`).

Every rank draws the whole graph's ``q, k, v`` (``[N, H, d]``, float64, the same seed on every
rank: the gathered inputs), computes dense softmax attention over all ``N`` nodes with autograd
as the reference, runs :func:`ring_attention` on its own rows (``node_offsets`` of the case,
possibly with a rank that owns no node) and reports the largest relative errors of its output
rows and of its q, k, v gradient rows, plus its traffic ledger for the case.
"""
from __future__ import annotations

from typing import Any, Optional

import torch
from torch import Tensor

from pyg_sar.core.exchange import Wire
from pyg_sar.core.global_attention import ring_attention
from pyg_sar.graph import Block, DistGraph

# name -> case. offsets: node ranges of the ranks (P = len - 1); mode; tile rows; heads; d; d_v
CASES3: dict[str, dict] = {
    "unequal/sar/tile4": dict(offsets=[0, 5, 17, 30], mode="sar", tile=4, heads=2, d=3, dv=4),
    "unequal/sa/tile4": dict(offsets=[0, 5, 17, 30], mode="sa", tile=4, heads=2, d=3, dv=4),
    "unequal/halo": dict(offsets=[0, 5, 17, 30], mode="halo", tile=None, heads=2, d=3, dv=4),
    "empty_rank/sar/tile_big": dict(offsets=[0, 11, 11, 26], mode="sar", tile=64, heads=3, d=2,
                                    dv=2),
    "empty_rank/sa/tile1": dict(offsets=[0, 11, 11, 26], mode="sa", tile=1, heads=1, d=4, dv=3),
    "empty_rank/halo": dict(offsets=[0, 11, 11, 26], mode="halo", tile=None, heads=3, d=2, dv=2),
    "empty_first/sar/default": dict(offsets=[0, 0, 9, 20], mode="sar", tile=None, heads=2, d=5,
                                    dv=5),
}


def bare_graph(rank: int, offsets: list[int], context=None) -> DistGraph:
    """A graph without edges over the node ranges ``offsets`` (attention reads no edge)."""
    world = len(offsets) - 1
    n = offsets[rank + 1] - offsets[rank]
    empty = torch.zeros(0, dtype=torch.long)
    blocks = [Block(s, torch.zeros(n + 1, dtype=torch.long), empty, n if s == rank else 0, 0,
                    None) for s in range(world)]
    return DistGraph(rank, world, offsets, blocks, [empty] * world,
                     torch.zeros(n, dtype=torch.long), context)


def inputs(case: dict, seed: int = 0) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The whole graph's q, k, v and the weights ``c`` of the loss ``sum(out * c)``."""
    g = torch.Generator().manual_seed(seed)
    n, h = case["offsets"][-1], case["heads"]
    q = torch.randn(n, h, case["d"], generator=g, dtype=torch.float64) * 1.5
    k = torch.randn(n, h, case["d"], generator=g, dtype=torch.float64)
    v = torch.randn(n, h, case["dv"], generator=g, dtype=torch.float64)
    c = torch.randn(n, h, case["dv"], generator=g, dtype=torch.float64)
    return q, k, v, c


def scale_of(case: dict) -> float:
    return case["d"] ** -0.5


def dense(q: Tensor, k: Tensor, v: Tensor, scale: float) -> Tensor:
    """``softmax(q k^T scale) v`` per head, the reference."""
    s = torch.einsum("qhd,khd->hqk", q, k) * scale
    return torch.einsum("hqk,khe->qhe", torch.softmax(s, dim=-1), v)


def _rel(a: Tensor, b: Tensor) -> float:
    if a.shape != b.shape:
        return float("inf")
    if a.numel() == 0:
        return 0.0
    return float((a - b).abs().max()) / max(float(b.abs().max()), 1e-300)


def run_case(case: dict, graph: DistGraph, label: Optional[str] = None) -> dict[str, Any]:
    """Relative errors of this rank's rows of the output and of the q, k, v gradients."""
    q, k, v, c = inputs(case)
    scale = scale_of(case)
    full = [t.clone().requires_grad_() for t in (q, k, v)]
    ref = dense(*full, scale)
    (ref * c).sum().backward()
    lo, hi = graph.node_offsets[graph.rank], graph.node_offsets[graph.rank + 1]
    mine = [t[lo:hi].clone().requires_grad_() for t in (q, k, v)]
    out = ring_attention(graph, *mine, scale=scale, mode=case["mode"], tile_rows=case["tile"],
                         wire=Wire(label=label))
    (out * c[lo:hi]).sum().backward()
    errors = {"out": _rel(out.detach(), ref.detach()[lo:hi])}
    for name, t, r in zip("qkv", mine, full):
        errors[name] = _rel(t.grad, r.grad[lo:hi])
    return {"errors": errors, "rows": hi - lo}


def ranks(ctx, cases: list[str]) -> dict[str, Any]:
    """Rank side of the P = 3 launch: ``{case: {"errors", "rows", "traffic"}}``."""
    comm = ctx.comm
    res: dict[str, Any] = {}
    for name in cases:
        case = CASES3[name]
        graph = bare_graph(ctx.rank, case["offsets"], ctx)
        comm.traffic.reset()
        # a failing case raises: the launch fails with this rank's traceback (the other
        # ranks would wait in the ring; the launch's timeout ends them)
        res[name] = run_case(case, graph, label=name)
        res[name]["traffic"] = comm.traffic.as_dict().get(name, {})
    return res
