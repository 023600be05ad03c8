"""Bipartite DistGraphs built by hand (no partitioner): contiguous per-rank ranges of each node
set, new id = original id. Used by the hetero tests to check the engine on bipartite graphs
independently of :func:`pyg_sar.partition_graph`.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from pyg_sar.graph import Block, DistGraph


def even_offsets(num: int, world: int) -> list[int]:
    """``world + 1`` boundaries splitting ``num`` nodes into nearly equal contiguous ranges
    (the first ranks get the extra nodes)."""
    base, extra = divmod(num, world)
    out = [0]
    for r in range(world):
        out.append(out[-1] + base + (1 if r < extra else 0))
    return out


def _owner(ids: Tensor, offsets: list[int]) -> Tensor:
    return torch.bucketize(ids.contiguous(), torch.tensor(offsets[1:-1]), right=True)


def build_graph(edge_index: Tensor, src_offsets: list[int], dst_offsets: list[int], rank: int,
                bipartite: Optional[bool] = None) -> tuple[DistGraph, Tensor]:
    """Rank ``rank``'s DistGraph of the edges ``edge_index`` (``[2, E]``, global ids of the
    source and destination node sets) and the original edge id of every stored edge (so that
    an edge tensor ``t`` becomes ``t[ids]``)."""
    world = len(dst_offsets) - 1
    src, dst = edge_index
    src_owner, dst_owner = _owner(src, src_offsets), _owner(dst, dst_offsets)

    def recv_list(r: int, s: int) -> Tensor:
        """Local ids (on ``s``) of the sources that rank ``r``'s remote block from ``s`` reads."""
        sel = (dst_owner == r) & (src_owner == s)
        return torch.unique(src[sel]) - src_offsets[s]

    blocks, ids, start = [], [], 0
    mine = dst_owner == rank
    n_dst = dst_offsets[rank + 1] - dst_offsets[rank]
    for s in range(world):
        sel = (mine & (src_owner == s)).nonzero().view(-1)
        row = dst[sel] - dst_offsets[rank]
        local_src = src[sel] - src_offsets[s]
        if s == rank:
            col, num_src = local_src, src_offsets[s + 1] - src_offsets[s]
        else:
            recv = recv_list(rank, s)
            col, num_src = torch.searchsorted(recv, local_src), int(recv.numel())
        order = torch.argsort(row * (num_src + 1) + col, stable=True)
        row, col, sel = row[order], col[order], sel[order]
        rowptr = torch.zeros(n_dst + 1, dtype=torch.long)
        rowptr[1:] = torch.cumsum(torch.bincount(row, minlength=n_dst), 0)
        blocks.append(Block(s, rowptr, col, num_src, start, None))
        ids.append(sel)
        start += int(sel.numel())
    send_idx = [torch.zeros(0, dtype=torch.long) if q == rank else recv_list(q, rank)
                for q in range(world)]
    in_degree = torch.bincount(dst[mine] - dst_offsets[rank], minlength=n_dst)
    graph = DistGraph(rank, world, dst_offsets, blocks, send_idx, in_degree,
                      src_node_offsets=src_offsets, bipartite=bipartite)
    return graph, torch.cat(ids)
