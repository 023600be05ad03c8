"""Rank side (and P = 1 side) of the ring attention tests (:mod:`pyg_sar.core.global_attention`).

Every rank draws the whole graph's ``q, k, v`` (``[N, H, d]``, float64, the same seed on every
rank: the gathered inputs), computes dense softmax attention over all ``N`` nodes with autograd
as the reference, runs :func:`ring_attention` on its own rows (``node_offsets`` of the case,
possibly with a rank that owns no node) and reports the largest relative errors of its output
rows and of its q, k, v gradient rows, plus its traffic ledger for the case.

Cases with ``dropout`` give the nodes original ids (a fixed permutation, ``DistGraph.node_ids``)
and the reference applies the full ``[N, H, N]`` mask of the same counter-based draw to the
normalised weights, so it is the same reference at every P and tile size.
"""
from __future__ import annotations

from typing import Any, Optional

import torch
from torch import Tensor

from pyg_sar.core.exchange import Wire
from pyg_sar.core.global_attention import ring_attention
from pyg_sar.graph import Block, DistGraph
from tests.closeness import rel_error

# name -> case. offsets: node ranges of the ranks (P = len - 1); mode; tile rows; heads; d; d_v;
# depth (default: the transport's, 0 under mpiexec)
CASES3: dict[str, dict] = {
    "unequal/sar/tile4": dict(offsets=[0, 5, 17, 30], mode="sar", tile=4, heads=2, d=3, dv=4),
    "unequal/sa/tile4": dict(offsets=[0, 5, 17, 30], mode="sa", tile=4, heads=2, d=3, dv=4),
    # blocks fetched ahead (forward and sar's re-fetch): one, and more than the ring holds
    "unequal/sar/depth1": dict(offsets=[0, 5, 17, 30], mode="sar", tile=4, heads=2, d=3, dv=4,
                               depth=1),
    "empty_rank/sar/depth3": dict(offsets=[0, 11, 11, 26], mode="sar", tile=5, heads=2, d=3,
                                  dv=2, depth=3),
    "unequal/halo": dict(offsets=[0, 5, 17, 30], mode="halo", tile=None, heads=2, d=3, dv=4),
    "empty_rank/sar/tile_big": dict(offsets=[0, 11, 11, 26], mode="sar", tile=64, heads=3, d=2,
                                    dv=2),
    "empty_rank/sa/tile1": dict(offsets=[0, 11, 11, 26], mode="sa", tile=1, heads=1, d=4, dv=3),
    "empty_rank/halo": dict(offsets=[0, 11, 11, 26], mode="halo", tile=None, heads=3, d=2, dv=2),
    "empty_first/sar/default": dict(offsets=[0, 0, 9, 20], mode="sar", tile=None, heads=2, d=5,
                                    dv=5),
}
DROPOUT_CASES3: dict[str, dict] = {
    f"dropout/{mode}": dict(offsets=[0, 7, 7, 23], mode=mode, tile=3, heads=2, d=3, dv=2,
                            dropout=0.3)
    for mode in ("sar", "sa", "halo")}
SEED = 123456789


def original_ids(case: dict) -> Tensor:
    """Original id of every node (new id order): a fixed permutation."""
    return torch.randperm(case["offsets"][-1], generator=torch.Generator().manual_seed(5))


def bare_graph(rank: int, offsets: list[int], context=None,
               node_ids: Optional[Tensor] = None) -> DistGraph:
    """A graph without edges over the node ranges ``offsets`` (attention reads no edge);
    ``node_ids``: original ids of ALL nodes (this rank's slice is kept)."""
    world = len(offsets) - 1
    n = offsets[rank + 1] - offsets[rank]
    empty = torch.zeros(0, dtype=torch.long)
    blocks = [Block(s, torch.zeros(n + 1, dtype=torch.long), empty, n if s == rank else 0, 0,
                    None) for s in range(world)]
    mine = None if node_ids is None else node_ids[offsets[rank]:offsets[rank + 1]]
    return DistGraph(rank, world, offsets, blocks, [empty] * world,
                     torch.zeros(n, dtype=torch.long), context, mine)


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


def dense(q: Tensor, k: Tensor, v: Tensor, scale: float, drop: Optional[Tensor] = None) -> Tensor:
    """``(softmax(q k^T scale) * drop) v`` per head, the reference (``drop [N, H, N]``)."""
    a = torch.softmax(torch.einsum("qhd,khd->hqk", q, k) * scale, dim=-1)
    if drop is not None:
        a = a * drop.permute(1, 0, 2)
    return torch.einsum("hqk,khe->qhe", a, v)


def full_mask(case: dict) -> Tensor:
    """``[N, H, N]`` dropout multipliers of every (query, head, key) by original ids."""
    from pyg_sar.core.global_attention import dropout_tile
    ids = original_ids(case)
    return dropout_tile(ids, ids, case["heads"], case["dropout"], SEED, torch.float64)


def run_case(case: dict, graph: DistGraph, label: Optional[str] = None) -> dict[str, Any]:
    """Relative errors of this rank's rows of the output and of the q, k, v gradients."""
    q, k, v, c = inputs(case)
    scale = scale_of(case)
    dropout = case.get("dropout", 0.0)
    full = [t.clone().requires_grad_() for t in (q, k, v)]
    ref = dense(*full, scale, full_mask(case) if dropout else None)
    (ref * c).sum().backward()
    lo, hi = graph.node_offsets[graph.rank], graph.node_offsets[graph.rank + 1]
    mine = [t[lo:hi].clone().requires_grad_() for t in (q, k, v)]
    out = ring_attention(graph, *mine, scale=scale, mode=case["mode"], tile_rows=case["tile"],
                         wire=Wire(label=label), dropout=dropout, seed=SEED,
                         depth=case.get("depth"))
    (out * c[lo:hi]).sum().backward()
    errors = {"out": rel_error(out.detach(), ref.detach()[lo:hi])}
    for name, t, r in zip("qkv", mine, full):
        errors[name] = rel_error(t.grad, r.grad[lo:hi])
    return {"errors": errors, "rows": hi - lo}


def ranks(ctx, cases: list[str]) -> dict[str, Any]:
    """Rank side of the P = 3 launch: ``{case: {"errors", "rows", "traffic"}}``."""
    comm = ctx.comm
    res: dict[str, Any] = {}
    for name in cases:
        case = {**CASES3, **DROPOUT_CASES3}[name]
        ids = original_ids(case) if case.get("dropout") else None
        graph = bare_graph(ctx.rank, case["offsets"], ctx, ids)
        comm.traffic.reset()
        # a failing case raises: the launch fails with this rank's traceback (the other
        # ranks would wait in the ring; the launch's timeout ends them)
        res[name] = run_case(case, graph, label=name)
        res[name]["traffic"] = comm.traffic.as_dict().get(name, {})
    return res
