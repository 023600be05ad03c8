"""Rank side of the reversed-graph tests: build ``graph.flip([0])`` and describe it in original
node ids, so the test can compare it with ``edge_index.flip([0])`` of the whole graph."""
from __future__ import annotations

import torch

import pyg_sar
from pyg_sar.graph import DistGraph


def _source_ids(graph: DistGraph, node_ids: torch.Tensor) -> list[torch.Tensor]:
    """Original id of every source row of every block, fetched from the rows' owners through
    the graph's own send and receive lists (so the lists themselves are checked)."""
    out = [node_ids if s == graph.rank else None for s in range(graph.world_size)]
    if graph.world_size > 1:
        send = node_ids.index_select(0, torch.cat(graph.send_idx)).contiguous()
        recv = send.new_empty(sum(graph.recv_counts))
        graph.context.comm.all_to_all_single(recv, send, graph.recv_counts, graph.send_counts)
        at = 0
        for s, count in enumerate(graph.recv_counts):
            if s != graph.rank:
                out[s] = recv[at:at + count]
                at += count
    return out


def describe(graph: DistGraph, node_ids: torch.Tensor) -> dict:
    """Edges ``[src, dst]`` in original ids (stored order), in-degrees and source degrees."""
    src_ids = _source_ids(graph, node_ids)
    edges, src_deg, start = [], [], 0
    for s, b in enumerate(graph.blocks):
        assert b.src_rank == s and b.edge_start == start, (s, b.edge_start, start)
        assert int(b.rowptr[-1]) == b.num_edges and b.num_dst == graph.num_nodes
        assert b.num_src == int(src_ids[s].numel())
        start += b.num_edges
        # CSR by destination, each row ordered by source position
        key = b.row * max(b.num_src, 1) + b.col
        assert bool((key[1:] >= key[:-1]).all())
        src = src_ids[s][b.col]
        edges += torch.stack([src, node_ids[b.row]], 1).tolist()
        src_deg += torch.stack([src_ids[s], b.src_in_degree], 1).tolist()
    return {"edges": edges, "src_deg": src_deg,
            "in_degree": torch.stack([node_ids, graph.in_degree], 1).tolist(),
            "num_edges": graph.num_edges}


def reverse(ctx, parts: str) -> dict:
    part = pyg_sar.load_partition(parts, ctx.rank)
    graph = part.graph
    rev = graph.flip([0])
    same = rev is graph.flip([0]) and rev.flip([0]) is graph and graph.flip(0) is rev
    return {"reversed": describe(rev, part.node_ids), "original": describe(graph, part.node_ids),
            "cached": same}
