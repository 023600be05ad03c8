"""Rank-side cases of test_bench_comm_stats.py (imported by path by the launcher)."""
from __future__ import annotations

import torch

import pyg_sar
from pyg_sar.core.exchange import RowFetcher
from pyg_sar.core.halo import with_halo


def counters(ctx, parts: str, feats: int) -> dict:
    """Traffic counted for one RowFetcher sweep and one halo fetch (forward + backward)."""
    part = pyg_sar.load_partition(parts, ctx.rank)
    g = part.graph
    x = torch.randn(part.num_nodes, feats)
    stats = ctx.comm.stats
    stats.reset()
    fetcher = RowFetcher(g, [x], depth=1).start()
    for k in range(1, g.world_size):
        fetcher.get(k)
    ring = stats.as_dict()
    stats.reset()
    xr = x.clone().requires_grad_()
    with_halo(g, xr).sum().backward()
    halo = stats.as_dict()
    peer = 1 - ctx.rank
    return {"ring": ring, "halo": halo, "send_rows": int(g.send_idx[peer].numel()),
            "recv_rows": int(g.blocks[peer].num_src)}
